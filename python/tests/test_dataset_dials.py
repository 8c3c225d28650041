"""DIALS (Debian's `dials` package, its own /usr/bin/python3) reads dataset shards: a rotation
series as one sweep, random orientations as stills, and the master file through its virtual
datasets; geometry and pixels as written."""

import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from nanobragg import dataset

SPEC = """
[dataset]
n_images = 6
shard_size = {k}
seed = 5
output = "out"
[base]
args = "-cell 78 78 38 90 90 90 -default_F 3000 -N 8 -lambda 1.2 -distance 90 -detpixels_f 96 -detpixels_s 80 -pixel 0.2 -Xbeam 9 -Ybeam 8"
threads = 1
[vary]
orientation = "uniform"
"""

READ = r"""
import json, sys
from dxtbx.model.experiment_list import ExperimentListFactory
el = ExperimentListFactory.from_json_file(sys.argv[1], check_format=True)
out = []
for e in el:
    iset, d, b, s = e.imageset, e.detector[0], e.beam, e.scan
    idx = iset.indices()[0] if hasattr(iset, "indices") else 0
    raw = iset.get_raw_data(0)[0]
    out.append({"n": len(iset), "scan": None if s is None else [s.get_num_images(), list(s.get_oscillation())],
                "distance": d.get_distance(), "pixel": list(d.get_pixel_size()), "size": list(d.get_image_size()),
                "beam_centre": list(d.get_beam_centre(b.get_s0())), "wavelength": b.get_wavelength(),
                "first": [int(raw[i]) for i in range(0, len(raw), 37)]})
print(json.dumps(out))
"""


def dials(tmp, *args):
    r = subprocess.run(list(args), cwd=tmp, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def read_back(tmp, expt):
    (tmp / "read.py").write_text(READ)
    return json.loads(dials(tmp, "/usr/bin/python3", "read.py", expt))


def written(tmp_path, text):
    """The dataset of description ``text`` rendered and finalized in ``tmp_path``: (its spec,
    its output folder)."""
    if not shutil.which("dials.import"):
        pytest.fail("dials.import is not installed (scripts/setup.sh test installs Debian's dials)")
    (tmp_path / "spec.toml").write_text(text)
    spec = dataset.load_spec(str(tmp_path / "spec.toml"))
    dataset.run_local(spec, workers=1, progress=False)
    dataset.finalize(spec)
    return spec, tmp_path / "out"


@pytest.mark.parametrize("series", [True, False])
def test_dials_imports_shards_and_master(tmp_path, series):
    text = SPEC.format(k=6 if series else 3)
    if series:
        text += "rotation = { start_deg = 10, width_deg = 0.25, count = 6 }\n"
    spec, out = written(tmp_path, text)
    for name in ("shard-00000.h5", "master.h5"):
        log = dials(out, "dials.import", name, f"output.experiments={name}.expt")
        got = read_back(out, f"{name}.expt")
        if series:
            assert "sweep:    1" in log and len(got) == 1
            assert got[0]["scan"] == [6, [10.0, 0.25]]
        else:
            assert "num stills: " + ("3" if name.startswith("shard") else "6") in log, log
            assert all(g["scan"] is None for g in got)
        g = got[0]
        assert g["distance"] == pytest.approx(90.0, abs=1e-9)
        assert g["pixel"] == pytest.approx([0.2, 0.2]) and g["size"] == [96, 80]
        assert g["wavelength"] == pytest.approx(1.2)
        # MOSFLM: Xbeam runs along slow, Ybeam along fast, to the pixel's centre; dxtbx
        # counts from the first pixel's corner: (fast, slow) = (Ybeam, Xbeam) + half a pixel
        assert g["beam_centre"] == pytest.approx([8.1, 9.1], abs=1e-9)
        # the pixels DIALS reads are the shard's
        first = dataset.read_image(spec, 0).ravel()
        assert g["first"] == [int(x) for x in first[::37]]
        assert first.max() > 0


def test_dials_reads_stills_of_a_series_and_per_frame_wavelengths(tmp_path):
    """`dataset.still = true` writes a rotation series as stills (no scan); a varied λ is one
    `incident_wavelength` per frame, which DIALS gives each still (shard and master)."""
    text = SPEC.format(k=3).replace("seed = 5", "seed = 5\nstill = true")
    text += "rotation = { start_deg = 10, width_deg = 0.25, count = 3 }\n"
    text += 'wavelength_A = { dist = "uniform", low = 1.0, high = 1.4 }\n'
    spec, out = written(tmp_path, text)
    assert spec.still and spec.rotation is not None
    lam = [dataset.image_params(spec, i)["wavelength_A"] for i in range(6)]
    # one crystal (and λ) per rotation series: the master's six frames have two wavelengths
    assert lam[:3] == [lam[0]] * 3 and lam[3:] == [lam[3]] * 3 and lam[0] != lam[3]
    for name, want in (("shard-00001.h5", lam[3:]), ("master.h5", lam)):
        log = dials(out, "dials.import", name, f"output.experiments={name}.expt")
        assert f"num stills: {len(want)}" in log, log
        got = read_back(out, f"{name}.expt")
        assert all(g["scan"] is None for g in got)
        assert [g["wavelength"] for g in got] == pytest.approx(want, rel=1e-12)


def test_dials_reads_bitshuffle_lz4_shards(tmp_path):
    """`dataset.compression = "bslz4"`: DIALS' HDF5 decodes the frames with the bitshuffle plugin
    (Debian's `bitshuffle`), in a shard and through the master's virtual dataset, and finds
    spots on them."""
    # Poisson noise (noisify's, ADC offset 40) for DIALS' spot finder: the base's noiseless
    # default_F 3000 frames are all "strong" to it
    text = SPEC.format(k=3).replace("seed = 5", 'seed = 5\ncompression = "bslz4"').replace("-default_F 3000", "-default_F 100")
    text += '[chain]\nnoise = "-readout_noise 0"\n'
    spec, out = written(tmp_path, text)
    for name, first_image in (("shard-00001.h5", 3), ("master.h5", 0)):
        log = dials(out, "dials.import", name, f"output.experiments={name}.expt")
        assert "num stills: " + ("3" if name.startswith("shard") else "6") in log, log
        g = read_back(out, f"{name}.expt")[0]
        first = dataset.read_image(spec, first_image).ravel()
        assert first.max() > 0 and g["first"] == [int(x) for x in first[::37]]
    dials(out, "dials.find_spots", "shard-00001.h5.expt", "nproc=1", "output.reflections=bs.refl")
    (out / "count.py").write_text("import sys\nfrom dials.array_family import flex\n"
                                  "print(len(flex.reflection_table.from_file(sys.argv[1])))\n")
    assert int(dials(out, "/usr/bin/python3", "count.py", "bs.refl")) >= 30  # about 200 on the three frames here
