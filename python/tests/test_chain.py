"""The realistic chain from Python (spots from a model, nonBragg water and air, noisify) equals
the CLI chain (nanobragg -pdb, nonbragg, noisify) pixel for pixel, and structure factors equal
the CLI's -hklout table."""

import shutil

import numpy as np
import pytest

import nanobragg as nb
from conftest import REPO, f32_bits_equal, run_cli

MODEL = REPO / "tests" / "fixtures" / "models" / "1pfe.cif"
SPOTS = ("-lambda 1.3 -distance 40 -detpixels 96 -pixel 0.2 -Xbeam 9.65 -Ybeam 9.55 -xtalsize 0.004 -mosaic 0.3 "
         "-mosaic_dom 4 -misset 10 20 30 -flux 1e12 -exposure 0.1 -beamsize 0.01 -oversample 1")
FRAME_NONBRAGG = "-lambda 1.3 -distance 40 -detpixels 96 -pixel 0.2 -Xbeam 9.6 -Ybeam 9.7"
BEAM = "-flux 1e12 -exposure 0.1 -beamsize 0.01 -oversample 1"
WATER = "-stol water.stol -thickness 0.01"
AIR = "-stol air.stol -thickness 10 -MW 29 -density 0.0012"
NOISIFY = "-detpixels 96 -pixel 0.2 -distance 40 -lambda 1.3 -readout_noise 2 -psf gauss -psf_fwhm 60 -adc 40 -gain 1 -seed 7"


def test_python_chain_equals_the_cli_chain(tmp_path, monkeypatch):
    shutil.copy(MODEL, tmp_path / "1pfe.cif")
    for t in ("water.stol", "air.stol"):
        shutil.copy(REPO / "crate" / "data" / "stol" / t, tmp_path / t)
    # the CLI chain
    run_cli(f"-pdb 1pfe.cif {SPOTS} -floatfile spots.bin -nonoise -nopgm".split(), cwd=tmp_path)
    for m, out in ((WATER, "water.bin"), (AIR, "air.bin")):
        run_cli(f"{m} {FRAME_NONBRAGG} {BEAM} -floatfile {out} -nonoise -nopgm".split(), cwd=tmp_path, program="nonbragg")
    cli = {n: np.fromfile(tmp_path / f"{n}.bin", dtype="<f4") for n in ("spots", "water", "air")}
    (cli["spots"] + cli["water"] + cli["air"]).astype("<f4").tofile(tmp_path / "sum.bin")
    run_cli(f"-floatfile sum.bin {NOISIFY} -noisefile noise.img -intfile int.img -nopgm".split(), cwd=tmp_path, program="noisify")
    run_cli(f"-floatfile sum.bin {NOISIFY} -rng counter -noisefile counter.img -nopgm".split(), cwd=tmp_path, program="noisify")

    # the Python chain (the bundled .stol tables: no files needed)
    py = tmp_path / "py"
    py.mkdir()
    shutil.copy(MODEL, py / "1pfe.cif")
    monkeypatch.chdir(py)
    spots = nb.Simulator.from_args(f"-pdb 1pfe.cif {SPOTS}").render()
    water = nb.nonbragg(f"{WATER} {FRAME_NONBRAGG} {BEAM}")
    air = nb.nonbragg(f"{AIR} {FRAME_NONBRAGG} {BEAM}")
    assert spots.max() > 0 and water.min() > 0 and air.min() > 0
    assert f32_bits_equal(spots, cli["spots"])
    assert f32_bits_equal(water, cli["water"])
    assert f32_bits_equal(air, cli["air"])
    # Python's noisify draws from the counter generator (all threads) unless told -rng upstream
    # (the noisify program's default: upstream's sequence)
    r = nb.noisify(spots + water + air, NOISIFY)
    assert r.smv(noise=True) == (tmp_path / "counter.img").read_bytes()
    assert r.smv(noise=True) != (tmp_path / "noise.img").read_bytes()
    assert r.smv(noise=False) == (tmp_path / "int.img").read_bytes()
    r = nb.noisify(spots + water + air, NOISIFY + " -rng upstream")
    assert r.smv(noise=True) == (tmp_path / "noise.img").read_bytes()
    assert r.smv(noise=False) == (tmp_path / "int.img").read_bytes()
    pixels, header = nb.read_smv(tmp_path / "noise.img")
    assert pixels.shape == (96, 96) and header["SIZE1"] == "96"
    assert np.array_equal(pixels, np.minimum(r.noise_image, 65535).astype(np.uint16))


def test_structure_factors_equal_the_cli_table(tmp_path):
    shutil.copy(MODEL, tmp_path / "1pfe.cif")
    sf = nb.structure_factors(MODEL, dmin=4.0)
    assert len(sf) > 100 and sf.cell_A_deg is not None
    run_cli(f"-pdb 1pfe.cif -dmin 4 -hklout cli.hkl -lambda 1 -distance 100 -detpixels 8 -floatfile f.bin -nonoise -nopgm".split(), cwd=tmp_path)
    rows = np.loadtxt(tmp_path / "cli.hkl", ndmin=2)
    cli = {tuple(int(x) for x in r[:3]): r[3] for r in rows}
    ours = sf.as_dict()
    common = set(cli) & set(ours)
    assert len(common) > 100
    assert max(abs(cli[k] - ours[k]) for k in common) <= 1e-9 * max(abs(v) for v in cli.values())
    # as the crystal's F: the same image as -hkl of the written table
    (tmp_path / "py.hkl").write_bytes(sf.hkl_text())
    c = dict(cell_A_deg=sf.cell_A_deg, N=3)
    b, d = nb.Beam(wavelength_A=1.0), nb.Detector(distance_mm=60, pixels=48, pixel_mm=0.3)
    a1 = nb.Simulator(nb.Crystal(F=sf, **c), b, d).render()
    a2 = nb.Simulator(nb.Crystal(F=str(tmp_path / "py.hkl"), **c), b, d).render()
    assert a1.max() > 0 and f32_bits_equal(a1, a2)


def test_renders_reuse_freed_images_zeroed_where_nothing_is_rendered():
    # a render's image takes the memory of a freed one (here noisify's count images, ADU >= 40
    # everywhere) when there is one: the pixels outside the ROI are 0 all the same, the others
    # a fresh render's, and an image still alive is never taken
    sim = nb.Simulator.from_args("-cell 100 100 100 90 90 90 -lambda 6.2 -N 5 -default_F 100 -distance 100 "
                                 "-detpixels_x 61 -detpixels_y 53 -roi 10 40 5 30 -precision f32 -backend cpu")
    fresh = sim.render()
    kept = fresh.copy()
    assert kept.shape == (53, 61) and kept.max() > 0
    assert kept[:5].max() == 0 and kept[31:].max() == 0 and kept[:, :10].max() == 0 and kept[:, 41:].max() == 0
    freed = set()
    for s in range(4):
        r = nb.noisify(np.full((53, 61), 5, np.float32), f"-adc 40 -readout_noise 1 -seed {s + 1}")
        assert r.noise_image.min() >= 30 and r.int_image.min() == 45
        freed |= {r.noise_image.ctypes.data, r.int_image.ctypes.data}
        del r
    again = [sim.render() for _ in range(8)]
    assert freed & {a.ctypes.data for a in again}, "no render took a freed image's memory"
    for a in again:
        assert f32_bits_equal(a, kept)
    assert f32_bits_equal(fresh, kept)
    again[0][:] = 7  # each render's image is its own
    assert all(f32_bits_equal(a, kept) for a in again[1:]) and f32_bits_equal(fresh, kept)


def test_noisify_images_are_their_own_after_the_next_calls():
    # noisify's count images reuse the memory of freed ones (never of a live one), are written
    # whole, and are writable arrays; a strided input gives the contiguous one's images
    rng = np.random.default_rng(3)
    img = (rng.random((70, 45)) * 30).astype(np.float32)  # means of inversion and of PTRS
    words = "-readout_noise 2 -adc 10 -seed 5"
    first = nb.noisify(img, words)
    kept = (first.int_image.copy(), first.noise_image.copy())
    for s in range(6, 12):  # freed right away: their memory serves the next calls
        assert not np.array_equal(nb.noisify(img, f"-readout_noise 2 -adc 10 -seed {s}").noise_image, kept[1])
    assert np.array_equal(first.int_image, kept[0]) and np.array_equal(first.noise_image, kept[1])
    first.noise_image[0, 0] += 1
    first.int_image[:] = 0
    again = nb.noisify(img, words)
    assert np.array_equal(again.int_image, kept[0]) and np.array_equal(again.noise_image, kept[1])
    del first
    wide = np.zeros((70, 90), np.float32)
    wide[:, ::2] = img
    strided = nb.noisify(wide[:, ::2], words)
    assert np.array_equal(strided.noise_image, kept[1]) and np.array_equal(strided.int_image, kept[0])


def test_noisify_of_an_empty_image_names_the_image():
    for shape in ((0, 0), (0, 5), (4, 0)):
        with pytest.raises(ValueError, match=rf"^noisify: image must have at least one pixel, got shape \({shape[0]}, {shape[1]}\)$"):
            nb.noisify(np.zeros(shape, np.float32))


@pytest.mark.parametrize("args,flags,why", [
    ("-readout_noise -3", {}, r"^-readout_noise -3: expected a read-out noise >= 0 \(the noisify command reads it as upstream does: "
                              r"a negative read-out noise is read as 0"),
    ("-gain 0", {}, r"^-gain 0: expected a gain > 0 \(.*a gain of 0 leaves no signal"),
    (None, {"readout_noise": -3}, r"^readout_noise=-3: expected a read-out noise >= 0"),
    (None, {"gain": 0.0}, r"^gain=0: expected a gain > 0"),
    (None, {"gain": -2}, r"^gain=-2: expected a gain > 0 \(.*a negative gain"),
    # a keyword given as None or False is not given: the value came from the words
    ("-readout_noise -3", {"readout_noise": None}, r"^-readout_noise -3: expected a read-out noise >= 0"),
    ("-gain -2", {"gain": False}, r"^-gain -2: expected a gain > 0"),
])
def test_noisify_refuses_what_the_command_reads_as_upstream_does(args, flags, why):
    with pytest.raises(nb.UsageError, match=why) as e:
        nb.noisify(np.ones((8, 8), np.float32), args, **flags)
    assert isinstance(e.value, ValueError)
    name = next((k for k, v in flags.items() if v is not None and v is not False), None)
    assert e.value.field == name and e.value.flag == ("-" + (name or args.split()[0][1:]))
    # the values the command takes as they are: accepted
    nb.noisify(np.ones((8, 8), np.float32), "-readout_noise 0 -gain 0.5")
