"""SMV, miniCBF and float images: read what the CLI writes, write what it reads."""

import numpy as np
import pytest

import nanobragg as nb
from conftest import run_cli

ARGS = "-cell 50 60 70 90 90 90 -default_F 30 -N 4 -lambda 1 -distance 80 -detpixels 40 -pixel 0.2 -seed 3"


def test_cli_outputs_read_back(tmp_path):
    run_cli((ARGS + " -floatfile f.bin -intfile i.img -noisefile n.img -cbffile c.cbf -nopgm").split(), cwd=tmp_path)
    s = nb.Simulator.from_args(ARGS)
    img = s.render()
    f = nb.read_float(tmp_path / "f.bin", shape=s.shape)
    assert np.array_equal(f.view(np.uint32), img.view(np.uint32))
    assert s.int_image(img) == (tmp_path / "i.img").read_bytes()
    assert s.noise_image(img) == (tmp_path / "n.img").read_bytes()
    px, hdr = nb.read_smv(tmp_path / "i.img")
    assert px.shape == (40, 40) and px.dtype == np.uint16 and hdr["PIXEL_SIZE"] == "0.2"
    cbf, chdr = nb.read_cbf(tmp_path / "c.cbf")
    assert cbf.shape == (40, 40) and cbf.dtype == np.int32
    assert np.array_equal(cbf, px.astype(np.int32)), "-cbffile is a copy of the int image"
    assert "Wavelength" in chdr
    # the date line is the timestamp (it was read as a key "1970-01-01T00")
    assert chdr["timestamp"] == "1970-01-01T00:00:00.000" and not any(k[:1].isdigit() for k in chdr)


def test_noise_image_seeds(tmp_path):
    """``noise_image(seed=n)`` is the CLI's ``-seed n``; without a seed, the Simulator's
    ``-seed`` if it has one, else each call its own noise."""
    args = ARGS.replace(" -seed 3", "")
    run_cli((args + " -seed 7 -noisefile n7.img -nopgm").split(), cwd=tmp_path)
    s = nb.Simulator.from_args(args)
    img = s.render()
    assert s.noise_image(img, seed=7) == (tmp_path / "n7.img").read_bytes()
    assert s.noise_image(img, seed=7) != s.noise_image(img, seed=8)
    # no -seed: a new seed each call (the same header, other counts)
    a, b = s.noise_image(img), s.noise_image(img)
    assert len(a) == len(b) and a != b
    # the Simulator's own -seed: the same noise every call, the CLI's
    seeded = nb.Simulator.from_args(args + " -seed 7")
    assert seeded.noise_image(img) == seeded.noise_image(img) == (tmp_path / "n7.img").read_bytes()
    with pytest.raises(TypeError, match="seed must be an int"):
        s.noise_image(img, seed=1.5)  # type: ignore[arg-type]
    # a pixel that is not finite is refused (the CLI's scaling would write it as 65535)
    bad = img.copy()
    bad[3, 5] = np.nan
    bad[7, 1] = np.inf
    for write in (s.int_image, s.noise_image):
        with pytest.raises(ValueError, match=r"2 pixels that are NaN or infinite, the first at \(slow, fast\) = \(3, 5\)"):
            write(bad)


def test_writers_round_trip(tmp_path):
    a = (np.arange(12 * 10, dtype=np.uint32).reshape(12, 10) * 500 % 65536).astype(np.uint16)
    nb.write_smv(tmp_path / "a.img", a, {"DISTANCE": 100, "WAVELENGTH": 1.5})
    b, h = nb.read_smv(tmp_path / "a.img")
    assert np.array_equal(a, b) and h["DISTANCE"] == "100" and h["SIZE1"] == "10" and h["SIZE2"] == "12"
    c = np.array([[0, 5, -1], [70000, -40000, 1 << 30]], dtype=np.int32)
    nb.write_cbf(tmp_path / "c.cbf", c, pixel_mm=0.172, wavelength_A=1.0, distance_mm=200, beam_xy_px=(1.5, 1.0))
    d, hd = nb.read_cbf(tmp_path / "c.cbf")
    assert np.array_equal(c, d) and hd["Pixel_size"].startswith("172")
    f = np.random.default_rng(1).random((7, 9)).astype(np.float32)
    nb.write_float(tmp_path / "f.bin", f)
    assert np.array_equal(nb.read_float(tmp_path / "f.bin", (7, 9)), f)
    with pytest.raises(ValueError):
        nb.write_smv(tmp_path / "bad.img", np.array([[-1, 70000]]))
    with pytest.raises(nb.InputError):
        nb.read_cbf(tmp_path / "f.bin")


CBF_HEADER = dict(pixel_mm=0.172, wavelength_A=1.0, distance_mm=200, beam_xy_px=(1.5, 1.0))


@pytest.mark.parametrize(
    "pixels,why",
    [
        (np.array([[2**40, 7]]), "int32 range"),
        (np.array([[-(2**31) - 1, 7]]), "int32 range"),
        (np.array([[1.7, 2.9]]), "whole numbers"),
        (np.array([[np.nan, 1.0]]), "finite"),
        (np.array([[np.inf, 1.0]]), "finite"),
    ],
)
def test_write_cbf_refuses_what_int32_cannot_hold(tmp_path, pixels, why):
    p = tmp_path / "c.cbf"
    with pytest.raises(ValueError, match=why):
        nb.write_cbf(p, pixels, **CBF_HEADER)
    assert not p.exists()


@pytest.mark.parametrize(
    "name,value",
    [("pixel_mm", 0), ("pixel_mm", -1), ("wavelength_A", float("nan")), ("distance_mm", float("inf")),
     ("beam_xy_px", (float("nan"), 1.0)), ("exposure_s", -1.0), ("start_angle_deg", float("nan")), ("count_cutoff", -1)],
)
def test_write_cbf_refuses_bad_header_numbers(tmp_path, name, value):
    p = tmp_path / "c.cbf"
    with pytest.raises(ValueError, match=f"write_cbf: {name}"):
        nb.write_cbf(p, np.zeros((2, 2), np.int32), **{**CBF_HEADER, name: value})
    assert not p.exists()


def test_write_cbf_keeps_whole_values_of_any_dtype(tmp_path):
    a = np.array([[2**31 - 1, -1], [3.0, 0]])
    nb.write_cbf(tmp_path / "c.cbf", a, **CBF_HEADER)
    assert nb.read_cbf(tmp_path / "c.cbf")[0].tolist() == [[2**31 - 1, -1], [3, 0]]
