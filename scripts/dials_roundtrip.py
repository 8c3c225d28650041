#!/usr/bin/env python3
"""The DIALS round trip (issue 18 §5): a rotation series simulated with the CLI is read by DIALS
(Debian's `dials` package: dials.import, dials.find_spots, dials.index), which must find the
simulated detector, beam, goniometer, scan, cell and orientation.

  dials_roundtrip.py --run BINDIR [--keep DIR]

BINDIR holds the built `nanobragg` and `noisify`. In a temporary folder (or DIR) it renders
IMAGES images of a triclinic crystal (1° each, 5 φ steps per image) on a 512 x 512 detector of
0.1 mm pixels (no sensor thickness: with a 450 µm silicon sensor rendered by nanobragg's sensor
layers and stated in the header, DIALS' parallax correction leaves the cell 0.15 % small, see
docs/dials.md), adds Poisson noise with noisify, and writes

  * miniCBF files (noisify -cbffile, φ from nanobragg's SMV header),
  * one NXmx file of the whole series (nanobragg -nexus), when --nexus is given,

then imports each form, checks the imported models against the simulation, finds spots, indexes
and checks the cell and the orientation. Frames: nanoBragg's MOSFLM lab frame (beam +x, detector
fast +z, slow -y, spindle +z) maps to dxtbx's (beam -z, fast +x, slow -y, axis +x) by the proper
rotation M: (x, y, z) -> (z, y, -x) (docs/MODEL.md §3, `DIALS_ORIGIN`).

Tolerances (stated, checked): detector origin, fast and slow axes, beam direction, wavelength,
rotation axis and scan as imported: 1e-6 (mm, unit vectors, Å, degrees) where the file carries
them exactly (the miniCBF header rounds the beam position to 0.01 pixel and the distance to 1 µm:
the geometry here is chosen to be exact in those units); indexed fraction >= 90 %; every
refined cell length within 0.2 % and angle within 0.2° of the simulated cell (DIALS refines the
crystal only: the detector and beam, checked exact, are fixed); orientation (the rotation taking
the simulated A, mapped by M and turned by -step/2 about the spindle for nanoBragg's φ sampling,
to DIALS' A) within 0.02°.

Fails (exit 1) when DIALS is missing: this check must not be skipped silently.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    from dials.array_family import flex
except ImportError as e:
    sys.exit(
        f"dials_roundtrip.py: {e}: DIALS is needed (apt-get install dials; its Python is /usr/bin/python3)"
    )

CELL = (41.0, 47.0, 53.0, 95.0, 98.0, 103.0)
MISSET = (10, 20, 30)
IMAGES = 12
OSC = 1.0
PHISTEPS = 5  # per image
STEP = OSC / PHISTEPS
PIXELS, PIXEL_MM, DISTANCE_MM, LAMBDA = 512, 0.1, 80.0, 1.0
M = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], dtype=float)  # nanoBragg MOSFLM -> dxtbx

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd, cwd, log=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    if log:
        with open(os.path.join(cwd, log), "w") as f:
            f.write(r.stdout)
    return r.stdout


def sim_words(i):
    return [
        "-cell", *map(str, CELL), "-default_F", "100", "-N", "20",
        "-misset", *map(str, MISSET), "-lambda", str(LAMBDA), "-distance", str(DISTANCE_MM),
        "-detpixels", str(PIXELS), "-pixel", str(PIXEL_MM),
        "-phi", str(i * OSC), "-osc", str(OSC), "-phisteps", str(PHISTEPS), "-oversample", "1",
    ]


def simulate(bindir, work, nexus):
    """Renders the series; returns the real-space vectors (lab frame, φ = 0) and DIALS origin."""
    nb = os.path.join(bindir, "nanobragg")
    nz = os.path.join(bindir, "noisify")
    vectors, origin = None, None
    for i in range(IMAGES):
        n = f"{i + 1:03d}"
        out = run(
            [nb, *sim_words(i), "-floatfile", f"f_{n}.bin", "-intfile", f"h_{n}.img",
             "-nopgm", "-nonoise"],
            work,
        )
        if vectors is None:
            vectors = [
                [float(x) for x in line.split("=")[1].split()]
                for line in out.splitlines()
                if line.strip()[:4] in ("a = ", "b = ", "c = ")
            ]
            origin = [
                float(x)
                for x in next(l for l in out.splitlines() if "dials origin=" in l)
                .split("=")[1]
                .split()
            ]
        # spots of a few thousand photons at most: no pixel reaches the 16-bit limit
        run(
            [nz, "-floatfile", f"f_{n}.bin", "-header", f"h_{n}.img", "-scale", "0.01",
             "-seed", str(i + 1), "-nopgm",
             "-intfile", f"i_{n}.img", "-noisefile", f"n_{n}.img", "-cbffile", f"img_{n}.cbf"],
            work,
        )
    if nexus:
        words = sim_words(0)
        words[words.index("-phisteps") + 1] = str(PHISTEPS * IMAGES)
        words[words.index("-osc") + 1] = str(OSC * IMAGES)
        # noiseless int images, peaks well below the 16-bit limit
        run([nb, *words, "-scale", "0.01", "-nexus_images", str(IMAGES), "-nexus", "series.nxs",
             "-floatfile", "fn.bin", "-nopgm", "-nonoise"], work)
    return np.array(vectors), np.array(origin)


def imported_models(expt_file, what):
    e = json.load(open(expt_file))
    check(len(e["imageset"]) == 1 and len(e["scan"]) == 1, f"{what}: one sweep ({len(e['scan'])} scans)")
    panels = e["detector"][0]["panels"]
    check(len(panels) == 1, f"{what}: one panel")
    return e, panels[0]


def close(a, b, tol):
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float)))) <= tol


def check_geometry(e, p, origin, what):
    check(close(p["origin"], origin, 1e-6), f"{what}: detector origin {p['origin']} == {list(origin)} mm")
    check(close(p["fast_axis"], M @ [0, 0, 1], 1e-6), f"{what}: fast axis {p['fast_axis']}")
    check(close(p["slow_axis"], M @ [0, -1, 0], 1e-6), f"{what}: slow axis {p['slow_axis']}")
    check(close(p["pixel_size"], [PIXEL_MM, PIXEL_MM], 1e-9), f"{what}: pixel size {p['pixel_size']}")
    check(list(p["image_size"]) == [PIXELS, PIXELS], f"{what}: image size {p['image_size']}")
    # none simulated: the miniCBF states no sensor, the NXmx file 1 nm of Si (dxtbx needs > 0)
    check(p["thickness"] <= 1.01e-6, f"{what}: no sensor thickness (none simulated): {p['thickness']} mm")
    b = e["beam"][0]
    # dxtbx's beam direction points to the source
    check(close(b["direction"], -(M @ [1, 0, 0]), 1e-9), f"{what}: beam direction {b['direction']}")
    check(abs(b["wavelength"] - LAMBDA) < 1e-9, f"{what}: wavelength {b['wavelength']}")
    g = e["goniometer"][0]
    check(close(g["rotation_axis"], M @ [0, 0, 1], 1e-9), f"{what}: rotation axis {g['rotation_axis']}")
    s = e["scan"][0]
    check(list(s["image_range"]) == [1, IMAGES], f"{what}: image range {s['image_range']}")
    osc = s["oscillation"]
    check(close(osc, [0.0, OSC], 1e-6), f"{what}: oscillation start {osc[0]}°, width {osc[1]}°")


def orientation_error(A_sim, A_dials):
    """Degrees of the rotation taking A_sim (with DIALS' basis) to A_dials, and the basis change."""
    T = np.linalg.solve(A_sim, A_dials)  # A_dials = A_sim T: T integer, det +1 for the same hand
    Ti = np.round(T)
    B = A_sim @ Ti
    # best rotation R with R B ~ A_dials (polar decomposition)
    u, _, vt = np.linalg.svd(A_dials @ np.linalg.inv(B))
    R = u @ vt
    angle = np.degrees(np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)))
    return angle, Ti, float(np.max(np.abs(T - Ti)))


def index_and_check(work, expt, what, vectors):
    t0 = time.time()
    run(["dials.find_spots", expt, "nproc=2", f"output.reflections={what}_strong.refl",
         f"output.log={what}_find_spots.log"], work)
    # the detector and beam are checked exact above: refine the crystal only (over a 12° wedge a
    # free distance trades with the cell scale, ~0.3 %)
    run(["dials.index", expt, f"{what}_strong.refl", "detector.fix=all", "beam.fix=all",
         f"output.experiments={what}_indexed.expt",
         f"output.reflections={what}_indexed.refl", f"output.log={what}_index.log"], work)
    strong = flex.reflection_table.from_file(os.path.join(work, f"{what}_strong.refl"))
    indexed = flex.reflection_table.from_file(os.path.join(work, f"{what}_indexed.refl"))
    n_idx = int(indexed.get_flags(indexed.flags.indexed).count(True))
    frac = n_idx / len(strong)
    e = json.load(open(os.path.join(work, f"{what}_indexed.expt")))
    c = e["crystal"][0]
    real = np.array([c["real_space_a"], c["real_space_b"], c["real_space_c"]])
    a, b, cc = (np.linalg.norm(v) for v in real)
    ang = lambda u, v: np.degrees(np.arccos(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))
    cell = (a, b, cc, ang(real[1], real[2]), ang(real[0], real[2]), ang(real[0], real[1]))
    # reciprocal matrices (columns a*, b*, c*), the simulation's mapped to dxtbx's frame
    A_dials = np.linalg.inv(real)
    # nanoBragg samples φ at φ0 + j·osc/steps (j = 0 .. steps-1): an image's content is centred
    # half a step before the middle of its oscillation, where DIALS puts it. DIALS' crystal at
    # its φ = 0 is then the simulated one turned by -step/2 about the spindle (x in dxtbx).
    t = np.radians(-STEP / 2)
    Rx = np.array([[1, 0, 0], [0, np.cos(t), -np.sin(t)], [0, np.sin(t), np.cos(t)]])
    sim = (Rx @ M @ vectors.T).T
    A_sim = np.linalg.inv(sim)
    err, T, off = orientation_error(A_sim, A_dials)
    obs = indexed.select(indexed.get_flags(indexed.flags.used_in_refinement))
    dx, dy, dz = (np.array(x) for x in zip(*(obs["xyzcal.px"] - obs["xyzobs.px.value"])))
    rmsd = [float(np.sqrt(np.mean(v * v))) for v in (dx, dy, dz)]
    print(f"{what}: {IMAGES} images, {len(strong)} strong spots, {n_idx} indexed ({100 * frac:.1f} %), "
          f"cell {' '.join(f'{x:.3f}' for x in cell)}, orientation error {err:.4f}°, "
          f"RMSD {rmsd[0]:.3f} px, {rmsd[1]:.3f} px, {rmsd[2]:.3f} images "
          f"(find_spots + index {time.time() - t0:.1f} s)")
    check(frac >= 0.9, f"{what}: indexed fraction {100 * frac:.1f} % >= 90 %")
    for k in range(3):
        check(abs(cell[k] / CELL[k] - 1) <= 2e-3, f"{what}: cell length {cell[k]:.3f} vs {CELL[k]}")
        check(abs(cell[3 + k] - CELL[3 + k]) <= 0.2, f"{what}: cell angle {cell[3 + k]:.3f} vs {CELL[3 + k]}")
    check(off < 0.05 and round(np.linalg.det(T)) == 1,
          f"{what}: DIALS' basis is the simulation's up to an integer change of basis (det +1), found {T.astype(int).tolist()}")
    check(err <= 0.02, f"{what}: orientation error {err:.4f}° <= 0.02°")


def expt_round_trip(bindir, work):
    """-expt: DIALS' indexed experiment (panel, beam, axis, scan, crystal) rendered by nanobragg
    and written as NXmx; dials.import gives the same panel, and nanobragg's crystal is DIALS'."""
    nb = os.path.join(bindir, "nanobragg")
    out = run([nb, "-expt", "miniCBF_indexed.expt", "-default_F", "100", "-N", "5", "-oversample", "1",
               "-nexus", "from_expt.nxs", "-floatfile", "fe.bin", "-intfile", "fe.img", "-nopgm",
               "-nonoise"], work)
    run(["dials.import", "from_expt.nxs", "output.experiments=from_expt.expt",
         "output.log=from_expt_import.log"], work)
    src = json.load(open(os.path.join(work, "miniCBF_indexed.expt")))
    got = json.load(open(os.path.join(work, "from_expt.expt")))
    p0, p1 = src["detector"][0]["panels"][0], got["detector"][0]["panels"][0]
    for key in ("origin", "fast_axis", "slow_axis"):
        check(close(p0[key], p1[key], 1e-6), f"-expt -> NXmx -> dials.import: {key} {p1[key]} == {p0[key]}")
    check(list(p0["image_size"]) == list(p1["image_size"]) and close(p0["pixel_size"], p1["pixel_size"], 1e-9),
          "-expt -> NXmx -> dials.import: image and pixel size")
    check(close(src["beam"][0]["direction"], got["beam"][0]["direction"], 1e-6)
          and abs(src["beam"][0]["wavelength"] - got["beam"][0]["wavelength"]) < 1e-9,
          "-expt -> NXmx -> dials.import: beam")
    check(close(src["goniometer"][0]["rotation_axis"], got["goniometer"][0]["rotation_axis"], 1e-9),
          "-expt -> NXmx -> dials.import: rotation axis")
    check(close(src["scan"][0]["oscillation"], got["scan"][0]["oscillation"], 1e-6),
          f"-expt -> NXmx -> dials.import: oscillation {got['scan'][0]['oscillation']}")
    c = src["crystal"][0]
    want = [c["real_space_a"], c["real_space_b"], c["real_space_c"]]
    printed = [
        [float(x) for x in line.split("=")[1].split()]
        for line in out.splitlines()
        if line.strip()[:4] in ("a = ", "b = ", "c = ")
    ]
    sim = (M @ np.array(printed).T).T
    err = float(np.max(np.abs(sim - np.array(want))))
    check(err < 1e-3, f"-expt: nanobragg's real-space vectors are DIALS' (max difference {err:.1e} Å, 6 printed digits)")


def main():
    args = sys.argv[1:]
    if "--run" not in args:
        sys.exit(__doc__)
    bindir = os.path.abspath(args[args.index("--run") + 1])
    nexus = "--nexus" in args
    keep = args[args.index("--keep") + 1] if "--keep" in args else None
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        work = keep or tmp
        os.makedirs(work, exist_ok=True)
        vectors, origin = simulate(bindir, work, nexus)
        print(f"simulated {IMAGES} images in {time.time() - t0:.1f} s")
        run(["dials.import", *[f"img_{i + 1:03d}.cbf" for i in range(IMAGES)],
             "output.experiments=cbf.expt", "output.log=cbf_import.log"], work)
        e, p = imported_models(os.path.join(work, "cbf.expt"), "miniCBF")
        check_geometry(e, p, origin, "miniCBF")
        index_and_check(work, "cbf.expt", "miniCBF", vectors)
        if nexus:
            run(["dials.import", "series.nxs", "output.experiments=nexus.expt",
                 "output.log=nexus_import.log"], work)
            e, p = imported_models(os.path.join(work, "nexus.expt"), "NXmx")
            check_geometry(e, p, origin, "NXmx")
            index_and_check(work, "nexus.expt", "NXmx", vectors)
            expt_round_trip(bindir, work)
    print(f"DIALS round trip: {time.time() - t0:.1f} s")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
