#!/usr/bin/env python3
"""Detectors of many panels through DIALS (issue 18 §1): what nanobragg writes as NXmx for a
multi-panel detector, `dials.import` reads back panel for panel.

  dials_panels.py --run BINDIR [--keep DIR]

BINDIR holds the built `nanobragg`. In a temporary folder (or DIR):

1. `.expt` in: dxtbx itself builds a detector of four panels in a two-level hierarchy (a tilted,
   shifted group of 2 x 2 panels, one panel turned a quarter turn and leaning out of the plane)
   and writes it as an experiment list; `nanobragg -expt` renders it and writes NXmx
   (`-nexus`); `dials.import` of that file must give every panel's origin, fast and slow axes
   as dxtbx computed them for the source (global frame, the hierarchy applied) within 1e-6 mm,
   and each panel's pixels must be the int image's rows where nanobragg placed the panel.
2. `.geom` in: a CrystFEL geometry of two panels (one tilted along z) rendered with `-geom`;
   `dials.import` of the NXmx must put each panel where the CrystFEL file says, mapped from
   CrystFEL's lab frame (+z along the beam, +y up) to dxtbx's (+z towards the source, +y up):
   (x, y, z) -> (-x, y, -z), within 1e-6 mm. The `-geomout` file written beside it must hold
   the same panels (CrystFEL's frame, read here with a small independent parser).
3. a preset with module gaps (EIGER2 X 4M): 8 modules, as dials.import reads them, each module
   1028 x 512 pixels at its place (module pitch 1040 x 550 pixels of 0.075 mm).

Prints each figure (largest deviation) and fails (exit 1) on any check, or when DIALS is
missing: this check must not be skipped silently.
"""

import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from dxtbx.model import Detector
    from dxtbx.model.experiment_list import Experiment, ExperimentList, ExperimentListFactory
    from dxtbx.model import BeamFactory
except ImportError as e:
    sys.exit(f"dials_panels.py: {e}: DIALS is needed (apt-get install dials; its Python is /usr/bin/python3)")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def read_smv(path):
    with open(path, "rb") as f:
        raw = f.read()
    head = raw[:512].decode("latin-1")
    hb = int(head.split("HEADER_BYTES=")[1].split(";")[0])
    size1 = int(head.split("SIZE1=")[1].split(";")[0])
    size2 = int(head.split("SIZE2=")[1].split(";")[0])
    data = np.frombuffer(raw[hb:hb + 2 * size1 * size2], dtype="<u2")
    return data.reshape(size2, size1)


def imported(work, nxs, expt):
    run(["dials.import", nxs, f"output.experiments={expt}", f"output.log={expt}.log"], work)
    return ExperimentListFactory.from_json_file(os.path.join(work, expt), check_format=True)


def compare_panels(what, want, got):
    """want, got: lists of (origin, fast, slow) in dxtbx's frame (mm)."""
    check(len(want) == len(got), f"{what}: {len(got)} panels imported, {len(want)} written")
    worst = 0.0
    for (o, f, s), p in zip(want, got):
        worst = max(
            worst,
            float(np.max(np.abs(np.array(p.get_origin()) - o))),
            float(np.max(np.abs(np.array(p.get_fast_axis()) - f))),
            float(np.max(np.abs(np.array(p.get_slow_axis()) - s))),
        )
    check(worst <= 1e-6, f"{what}: every panel's origin, fast and slow axes within 1e-6 (largest deviation {worst:.2e} mm)")
    return worst


def expt_case(nb, work):
    det = Detector()
    root = det.hierarchy()
    root.set_frame((1, 0, 0), (0, -1, 0), (-30.0, 31.0, -120.0))
    group = root.add_group()
    # the group: tilted 10 degrees about the lab y axis, shifted
    c, s = np.cos(np.radians(10)), np.sin(np.radians(10))
    group.set_local_frame((c, 0.0, s), (0.0, 1.0, 0.0), (1.5, -2.0, 3.0))
    size, px = (96, 80), 0.1
    for j in range(2):
        for i in range(2):
            p = group.add_panel()
            p.set_name(f"asic_{i}{j}")
            p.set_image_size(size)
            p.set_pixel_size((px, px))
            p.set_trusted_range((-1, 65535))
            if (i, j) == (1, 1):
                # a quarter turn in the plane, leaning 5 degrees out of it
                t = np.radians(5)
                p.set_local_frame((0.0, np.cos(t), np.sin(t)), (-1.0, 0.0, 0.0), (i * 11.0 + 9.6, j * 10.0, 0.4))
            else:
                p.set_local_frame((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (i * 11.0, j * 10.0, 0.0))
    beam = BeamFactory.simple(1.0)
    el = ExperimentList([Experiment(beam=beam, detector=det)])
    el.as_file(os.path.join(work, "panels.expt"))
    want = [(np.array(p.get_origin()), np.array(p.get_fast_axis()), np.array(p.get_slow_axis())) for p in det]
    run([nb, "-expt", "panels.expt", "-cell", "60", "70", "80", "90", "90", "90", "-misset", "5", "10", "15",
         "-default_F", "100", "-N", "10", "-oversample", "1", "-nexus", "panels.nxs",
         "-intfile", "panels.img", "-floatfile", "panels.bin", "-nopgm", "-nonoise"], work)
    got = imported(work, "panels.nxs", "panels_import.expt")
    worst = compare_panels(".expt (4 panels, 2-level hierarchy) -> -nexus -> dials.import", want, list(got[0].detector))
    # each panel's pixels: the int image's rows where nanobragg stacked the panel
    img = read_smv(os.path.join(work, "panels.img")).astype(np.int64)
    raw = got[0].imageset.get_raw_data(0)
    same = True
    for k, data in enumerate(raw):
        a = data.as_numpy_array().astype(np.int64)
        b = img[k * size[1]:(k + 1) * size[1], :size[0]]
        same &= a.shape == b.shape and bool(np.array_equal(a, b))
    check(same and img.max() > 0, f".expt: dials reads each panel's pixels from where nanobragg put them (max {img.max()} counts)")
    return worst


def write_geom(path):
    text = """\
photon_energy = 12398.42 eV
res = 10000
clen = 0.1 m
q0/min_fs = 0
q0/max_fs = 99
q0/min_ss = 0
q0/max_ss = 49
q0/fs = -1.0x
q0/ss = -1.0y
q0/corner_x = 52.5
q0/corner_y = 57.25
q1/min_fs = 0
q1/max_fs = 99
q1/min_ss = 50
q1/max_ss = 99
q1/fs = -0.9950371902x +0.0995037190z
q1/ss = +0.0x -1.0y
q1/corner_x = 47.5
q1/corner_y = -3.0
q1/coffset = 0.005 m
bad_a/min_fs = 10
bad_a/max_fs = 19
bad_a/min_ss = 60
bad_a/max_ss = 69
bad_a/panel = q1
"""
    with open(path, "w") as f:
        f.write(text)


def parse_geom(path):
    """A small CrystFEL reader (panel keys only), independent of nanobragg's."""
    glob, panels = {}, {}
    for line in open(path):
        line = line.split(";")[0].strip()
        if not line or "=" not in line:
            continue
        k, v = (x.strip() for x in line.split("=", 1))
        if "/" in k:
            p, key = k.split("/", 1)
            if p.startswith("bad"):
                continue
            panels.setdefault(p, dict(glob))[key] = v
        else:
            glob[k] = v

    def num(v):
        w = v.split()
        return float(w[0]) * (1e-3 if len(w) > 1 and w[1] == "mm" else 1.0)

    def vec(v):
        out = np.zeros(3)
        for term in v.replace("+", " +").replace("-", " -").split():
            out["xyz".index(term[-1])] = float(term[:-1] or "1") if term[:-1] not in "+-" else float(term[:-1] + "1")
        return out

    res = {}
    for name, p in panels.items():
        r = num(p["res"])
        z = num(p.get("clen", "0")) + num(p.get("coffset", "0"))
        corner = np.array([num(p["corner_x"]) / r, num(p["corner_y"]) / r, z])
        res[name] = (corner, unit(vec(p["fs"])), unit(vec(p["ss"])),
                     (int(p["min_fs"]), int(p["max_fs"]), int(p["min_ss"]), int(p["max_ss"])))
    return res


def crystfel_to_dxtbx(v):
    return np.array([-v[0], v[1], -v[2]])


def geom_case(nb, work):
    write_geom(os.path.join(work, "two.geom"))
    run([nb, "-geom", "two.geom", "-cell", "60", "70", "80", "90", "90", "90", "-misset", "5", "10", "15",
         "-default_F", "100", "-N", "10", "-oversample", "1", "-nexus", "geom.nxs", "-geomout", "back.geom",
         "-intfile", "geom.img", "-floatfile", "geom.bin", "-nopgm", "-nonoise"], work)
    src = parse_geom(os.path.join(work, "two.geom"))
    want = [(crystfel_to_dxtbx(c) * 1000.0, crystfel_to_dxtbx(f), crystfel_to_dxtbx(s))
            for c, f, s, _ in src.values()]
    got = imported(work, "geom.nxs", "geom_import.expt")
    worst = compare_panels(".geom (2 panels, one tilted) -> -nexus -> dials.import", want, list(got[0].detector))
    back = parse_geom(os.path.join(work, "back.geom"))
    dev = 0.0
    for name, (c, f, s, r) in src.items():
        c2, f2, s2, r2 = back[name]
        dev = max(dev, float(np.max(np.abs(c2 - c))), float(np.max(np.abs(f2 - f))), float(np.max(np.abs(s2 - s))))
        check(r == r2, f"-geomout: panel {name} keeps its fs/ss ranges {r2}")
    check(dev < 1e-9, f"-geomout: the written .geom holds the read panels (largest deviation {dev:.1e} m or unit)")
    # the bad region is masked (-1 in NXmx? no: 0 counts and the pixel mask) in DIALS' mask
    mask = got[0].imageset.get_mask(0)
    m1 = mask[1].as_numpy_array()
    check(not m1[10:20, 10:20].any() and m1[30:40, 30:40].all(),
          ".geom: the bad region (q1 fs 10-19, ss 60-69) is masked in what DIALS reads")
    return worst


def preset_case(nb, work):
    run([nb, "-detector", "eiger2-4m", "-cell", "60", "70", "80", "90", "90", "90", "-default_F", "100",
         "-N", "5", "-distance", "150", "-roi", "1000", "1060", "500", "600", "-oversample", "1",
         "-nexus", "eiger.nxs", "-intfile", "eiger.img", "-floatfile", "eiger.bin", "-nopgm", "-nonoise"], work)
    got = imported(work, "eiger.nxs", "eiger_import.expt")
    det = list(got[0].detector)
    check(len(det) == 8, f"EIGER2 X 4M preset: {len(det)} modules imported (8 expected)")
    pitch_f, pitch_s = 1040 * 0.075, 550 * 0.075
    o0 = np.array(det[0].get_origin())
    f0, s0 = np.array(det[0].get_fast_axis()), np.array(det[0].get_slow_axis())
    worst = 0.0
    for k, p in enumerate(det):
        i, j = k % 2, k // 2
        want = o0 + i * pitch_f * f0 + j * pitch_s * s0
        worst = max(worst, float(np.max(np.abs(np.array(p.get_origin()) - want))))
        check(p.get_image_size() == (1028, 512), f"EIGER2 X 4M module {k}: 1028 x 512 pixels")
    check(worst <= 1e-6, f"EIGER2 X 4M: modules at the preset's pitch (largest deviation {worst:.2e} mm)")
    return worst


def main():
    args = sys.argv[1:]
    if "--run" not in args:
        sys.exit(__doc__)
    nb = os.path.join(os.path.abspath(args[args.index("--run") + 1]), "nanobragg")
    keep = args[args.index("--keep") + 1] if "--keep" in args else None
    with tempfile.TemporaryDirectory() as tmp:
        work = keep or tmp
        os.makedirs(work, exist_ok=True)
        expt_case(nb, work)
        geom_case(nb, work)
        preset_case(nb, work)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
