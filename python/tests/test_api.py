"""The typed API: configuration, overrides, batches, the GIL and Ctrl-C, predict, import cost."""

import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import nanobragg as nb
from conftest import REPO, f32_bits_equal, run_cli

BASE = dict(
    crystal=nb.Crystal(cell_A_deg=(70, 80, 90, 90, 95, 90), N=6, default_F=100, misset_deg=(5, 10, 15),
                       mosaic_spread_deg=0.5, mosaic_domains=3, mosaic_seed=4),
    beam=nb.Beam(wavelength_A=1.2, fluence_ph_per_m2=1e24, divergence_mrad=0.5, divsteps=2),
    detector=nb.Detector(distance_mm=80, pixels=(72, 64), pixel_mm=0.2, beam_center_mm=(6.4, 7.2)),
)


def sim(**kw):
    args = dict(BASE)
    args.update(kw)
    return nb.Simulator(args["crystal"], args["beam"], args["detector"], precision=kw.get("precision", "f64"), backend="cpu")


def test_typed_config_equals_from_args():
    s = sim()
    words = s.args()
    assert "-cell" in words and "-lambda" in words and "-Xbeam" in words
    t = nb.Simulator.from_args(" ".join(words))
    a, b = s.render(), t.render()
    assert a.shape == (64, 72) and a.dtype == np.float32
    assert a.max() > 0
    assert f32_bits_equal(a, b)
    assert t.args() == words


def test_typed_config_equals_the_cli(tmp_path):
    s = sim()
    run_cli(s.args() + ["-floatfile", "f.bin", "-nonoise", "-nopgm"], cwd=tmp_path)
    assert f32_bits_equal(s.render(), np.fromfile(tmp_path / "f.bin", dtype="<f4"))


@pytest.mark.parametrize(
    "override,field_change",
    [
        (dict(misset_deg=(20, -30, 40)), ("crystal", "misset_deg", (20, -30, 40))),
        (dict(phi_deg=7.5), ("crystal", "phi_deg", 7.5)),
        (dict(mosaic_seed=99), ("crystal", "mosaic_seed", 99)),
        (dict(fluence_ph_per_m2=3e23), ("beam", "fluence_ph_per_m2", 3e23)),
        (dict(wavelength_A=1.1), ("beam", "wavelength_A", 1.1)),
        (dict(distance_mm=90.0), ("detector", "distance_mm", 90.0)),
    ],
)
def test_override_equals_a_fresh_simulator(override, field_change):
    import dataclasses

    warm = sim()
    base = warm.render()
    got = warm.render(**override)
    part, name, value = field_change
    fresh = sim(**{part: dataclasses.replace(BASE[part], **{name: value})}).render()
    assert f32_bits_equal(got, fresh)
    assert not f32_bits_equal(got, base), "the override changed nothing"
    assert f32_bits_equal(warm.render(), base), "an override leaked into the base"


def test_rotation_matrix_equals_its_misset():
    import math

    rx, ry, rz = (math.radians(a) for a in (12, -7, 33))
    Rx = np.array([[1, 0, 0], [0, math.cos(rx), -math.sin(rx)], [0, math.sin(rx), math.cos(rx)]])
    Ry = np.array([[math.cos(ry), 0, math.sin(ry)], [0, 1, 0], [-math.sin(ry), 0, math.cos(ry)]])
    Rz = np.array([[math.cos(rz), -math.sin(rz), 0], [math.sin(rz), math.cos(rz), 0], [0, 0, 1]])
    s = sim()
    a = s.render(rotation=Rz @ Ry @ Rx)
    b = s.render(misset_deg=(12, -7, 33))
    assert np.allclose(a, b, rtol=1e-5, atol=1e-6 * b.max())


def test_render_many_equals_single_renders():
    s = sim()
    orients = np.array([[0, 0, 0], [10, 20, 30], [45, 0, 5]], dtype=float)
    many = s.render_many(orients)
    assert many.shape == (3, 64, 72) and many.dtype == np.float32
    for i, o in enumerate(orients):
        assert f32_bits_equal(many[i], s.render(misset_deg=tuple(o)))
    by_overrides = s.render_many(overrides=[{"phi_deg": 1.0}, {"phi_deg": 2.0}])
    assert f32_bits_equal(by_overrides[1], s.render(phi_deg=2.0))


def test_render_many_overrides_of_another_type_are_named():
    s = sim()
    with pytest.raises(TypeError, match=r"^render_many: overrides must be a sequence of mappings .*item 0 is str$"):
        s.render_many(overrides=["x"])
    with pytest.raises(TypeError, match=r"^render_many: overrides must be a sequence of mappings .*got dict$"):
        s.render_many(overrides={"phi_deg": 1.0})
    with pytest.raises(TypeError, match=r"^render_many: overrides must be .*got int$"):
        s.render_many(overrides=3)


def test_a_pickled_simulator_renders_the_same_image():
    """A Simulator pickles as what it was made from (words and in-memory files): unpickled, it
    renders the same image bit for bit, overrides and the structure-factor table included."""
    import pickle

    c = dict(cell_A_deg=(40, 45, 50, 90, 90, 90), N=4, misset_deg=(1, 2, 3), mosaic_spread_deg=0.4, mosaic_domains=4)
    table = {(h, k, l): 10.0 + h + 2 * k + 3 * l for h in range(-4, 5) for k in range(-4, 5) for l in range(-4, 5)}
    for s in (
        sim(),
        nb.Simulator(nb.Crystal(F=table, **c), nb.Beam(wavelength_A=1.0), nb.Detector(pixels=48, pixel_mm=0.3, distance_mm=60)),
        nb.Simulator.from_args("-cell 50 50 50 90 90 90 -default_F 10 -N 3 -lambda 1 -distance 100 -detpixels 32 -pixel 0.2 -mosaic 0.5 -mosaic_domains 3"),
    ):
        again = pickle.loads(pickle.dumps(s))
        assert type(again) is nb.Simulator and again.args() == s.args() and again._typed == s._typed
        assert f32_bits_equal(again.render(), s.render())
        assert f32_bits_equal(again.render(phi_deg=2.0), s.render(phi_deg=2.0))


def test_f32_is_close_to_f64():
    a = sim().render()
    b = sim(precision="f32").render()
    assert np.corrcoef(a.ravel(), b.ravel())[0, 1] > 0.9999


def test_the_gil_is_released_while_rendering():
    s = nb.Simulator.from_args("-cell 100 100 100 90 90 90 -default_F 100 -N 20 -lambda 1 -distance 100 "
                               "-detpixels 512 -pixel 0.1 -oversample 3 -backend cpu")
    ticks = []
    done = threading.Event()

    def counter():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    t = threading.Thread(target=counter)
    t.start()
    t0 = time.perf_counter()
    s.render()
    t1 = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if t0 < x < t1]
    assert t1 - t0 > 0.05, "the render is too short to tell"
    assert len(during) >= 3, f"{len(during)} ticks of another thread during a {t1 - t0:.3f} s render"


def test_ctrl_c_cancels_a_long_render():
    s = nb.Simulator.from_args("-cell 100 100 100 90 90 90 -default_F 100 -N 20 -lambda 1 -distance 100 "
                               "-detpixels 2048 -pixel 0.05 -oversample 4 -backend cpu")
    timer = threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        s.render()
    took = time.perf_counter() - t0
    timer.cancel()
    assert took < 5.0, f"the render took {took:.1f} s to stop"


def test_import_is_cheap_and_opens_no_device():
    code = ("import time, sys; t=time.perf_counter(); import nanobragg; "
            "print(time.perf_counter()-t); print('wgpu' in ' '.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert float(out[0]) < 1.0, f"import took {out[0]} s"


def test_predict_is_the_cli_table(tmp_path):
    s = sim()
    p = s.predict()
    assert p.dtype.names[:5] == ("h", "k", "l", "fast", "slow")
    assert len(p) > 10
    run_cli(s.args() + ["-predict", "pred.txt", "-floatfile", "f.bin", "-nonoise", "-nopgm"], cwd=tmp_path)
    rows = [l.split() for l in (tmp_path / "pred.txt").read_text().splitlines() if l.strip() and not l.startswith("#")]
    head = [r for r in rows if not r[0].lstrip("-").isdigit()]
    data = [r for r in rows if r[0].lstrip("-").isdigit()]
    assert len(data) == len(p), (len(data), len(p), head[:2])
    hkl = np.array([[int(x) for x in r[:3]] for r in data])
    assert np.array_equal(hkl, np.stack([p["h"], p["k"], p["l"]], axis=1))
    cols = np.array([[float(x) for x in r[3:7]] for r in data])
    assert np.allclose(cols[:, 0], p["fast"], atol=6e-4) and np.allclose(cols[:, 1], p["slow"], atol=6e-4)
    assert np.allclose(cols[:, 2], p["d_A"], rtol=1e-5) and np.allclose(cols[:, 3], p["two_theta_deg"], atol=6e-5)
    every = s.predict(all_reflections=True)
    assert len(every) > len(p) and not every["on_detector"].all()


def test_info_and_warnings():
    s = sim()
    i = s.info()
    assert i["fast_pixels"] == 72 and i["slow_pixels"] == 64 and i["precision"] == "f64"
    assert isinstance(s.warnings, list)
    assert repr(s) == "<nanobragg.Simulator 72x64 pixels>"


def test_structure_factor_table_and_dict_equal_an_hkl_file(tmp_path):
    table = {(h, k, l): 10.0 + h + 2 * k + 3 * l for h in range(-3, 4) for k in range(-3, 4) for l in range(-3, 4)}
    (tmp_path / "t.hkl").write_text("".join(f"{h} {k} {l} {f!r}\n" for (h, k, l), f in table.items()))
    c = dict(cell_A_deg=(30, 30, 30, 90, 90, 90), N=3)
    b, d = nb.Beam(wavelength_A=1.0), nb.Detector(distance_mm=50, pixels=48, pixel_mm=0.5)
    from_dict = nb.Simulator(nb.Crystal(F=table, **c), b, d).render()
    from_file = nb.Simulator(nb.Crystal(F=str(tmp_path / "t.hkl"), **c), b, d).render()
    from_obj = nb.Simulator(nb.Crystal(F=nb.StructureFactors.from_dict(table), **c), b, d).render()
    assert from_dict.max() > 0
    assert f32_bits_equal(from_dict, from_file) and f32_bits_equal(from_obj, from_file)


MODEL = REPO / "tests" / "fixtures" / "models" / "1pfe.cif"


@pytest.mark.parametrize("source", ["hkl", "pdb"])
@pytest.mark.parametrize(
    "override",
    [dict(misset_deg=(3, -40, 12)), dict(phi_deg=4.0, osc_deg=0.5, phisteps=2), dict(mosaic_spread_deg=0.8, mosaic_domains=4, mosaic_seed=9),
     dict(N=(2, 3, 2)), dict(fluence_ph_per_m2=2e24, precision="f32"), dict(wavelength_A=1.25), dict(interpolate=False)],
)
def test_table_keeping_overrides_equal_a_fresh_simulator(source, override, tmp_path):
    """Overrides that keep the structure-factor table reuse it (no -hkl re-read, no -pdb
    recomputation); others re-resolve everything. Either way: a fresh Simulator's image."""
    import dataclasses
    import shutil

    override = dict(override)
    if source == "hkl":
        table = {(h, k, l): 5.0 + abs(h) + 2 * abs(k) + 0.5 * l * l for h in range(-6, 7) for k in range(-6, 7) for l in range(-6, 7)}
        (tmp_path / "t.hkl").write_text("".join(f"{h} {k} {l} {f!r}\n" for (h, k, l), f in table.items()))
        crystal = nb.Crystal(cell_A_deg=(40, 45, 50, 90, 90, 90), N=4, F=str(tmp_path / "t.hkl"), misset_deg=(1, 2, 3))
    else:
        shutil.copy(MODEL, tmp_path / "m.cif")
        crystal = nb.Crystal(model=str(tmp_path / "m.cif"), N=3, misset_deg=(1, 2, 3))
    beam = nb.Beam(wavelength_A=1.3, fluence_ph_per_m2=1e24)
    det = nb.Detector(distance_mm=60, pixels=48, pixel_mm=0.4)
    warm = nb.Simulator(crystal, beam, det, backend="cpu")
    base = warm.render()
    got = warm.render(**override)
    parts = {"crystal": crystal, "beam": beam, "detector": det}
    precision = override.pop("precision", "f64")
    for name, value in override.items():
        for key, part in parts.items():
            if name in {f.name for f in dataclasses.fields(part)}:
                parts[key] = dataclasses.replace(part, **{name: value})
    fresh = nb.Simulator(parts["crystal"], parts["beam"], parts["detector"], precision=precision, backend="cpu").render()
    assert base.max() > 0
    assert f32_bits_equal(got, fresh)


def test_renders_over_the_cost_budget_are_refused_unless_forced():
    """The CLI's budget (10¹² terms) holds in Python too, before the render starts; the typed
    Simulator says how to insist in Python's words, ``from_args`` in the flag's."""
    crystal = nb.Crystal(cell_A_deg=(70, 80, 90, 90, 90, 90), default_F=100, N=5, mosaic_spread_deg=0.1,
                         mosaic_domains=1_000_000)
    det = nb.Detector(pixels=2048, distance_mm=100)
    sim = nb.Simulator(crystal, nb.Beam(wavelength_A=1), det, precision="f32", backend="cpu")
    with pytest.raises(nb.LimitError, match=r"pass Simulator\(\.\.\., force=True\) to render it anyway"):
        sim.render()
    with pytest.raises(nb.LimitError, match="more than the budget"):
        sim.render(gradients=["distance"])
    # an override within the budget renders
    assert sim.render(mosaic_domains=2, pixels=16).shape == (16, 16)
    words = "-cell 70 80 90 90 90 90 -default_F 100 -N 5 -mosaic 0.1 -mosaic_domains 1000000 -lambda 1 " \
            "-distance 100 -detpixels 2048 -precision f32 -backend cpu"
    with pytest.raises(nb.LimitError, match="give -force to render it anyway"):
        nb.Simulator.from_args(words).render()
    forced = nb.Simulator(crystal, nb.Beam(wavelength_A=1), det, precision="f32", backend="cpu", force=True)
    assert "-force" in forced.args()


@pytest.mark.parametrize(
    "u,why",
    [
        (np.zeros((3, 3)), "not orthonormal"),
        (2 * np.eye(3), "not orthonormal"),
        ([[1, 0, 0], [0, 1, 0], [0, 0, 1e-9]], "not orthonormal"),
        (np.diag([1.0, 1, -1]), "determinant"),
        ([[0, 1, 0], [1, 0, 0], [0, 0, 1]], "determinant"),
    ],
)
def test_rotation_must_be_a_proper_rotation(u, why):
    s = sim()
    with pytest.raises(nb.UsageError, match=why) as e:
        s.render(rotation=u)
    assert e.value.field == "Crystal.rotation" and "Crystal.rotation" in str(e.value)
    with pytest.raises(nb.UsageError, match="Crystal.rotation"):
        nb.Simulator(nb.Crystal(cell_A_deg=(70, 80, 90, 90, 95, 90), default_F=1, rotation=u), BASE["beam"], BASE["detector"])
    # a rotation within the tolerance is still accepted
    s.render(rotation=np.eye(3) + 1e-9)


@pytest.mark.parametrize(
    "override,field",
    [
        (dict(N=-5), "Crystal.N"),
        (dict(N=0), "Crystal.N"),
        (dict(N=0.5), "Crystal.N"),
        (dict(N=(5, -3, 5)), "Crystal.N"),
        (dict(mosaic_domains=-3), "Crystal.mosaic_domains"),
        (dict(mosaic_domains=0), "Crystal.mosaic_domains"),
    ],
)
def test_counts_below_one_are_refused(override, field):
    s = sim()
    with pytest.raises(nb.UsageError, match=">= 1") as e:
        s.render(**override)
    assert e.value.field == field and str(e.value).startswith(field)


def test_clamped_values_of_from_args_are_warned():
    # from_args speaks the CLI: upstream's image, with the CLI's warning
    s = nb.Simulator.from_args("-cell 78 78 38 90 90 90 -default_F 100 -N -5 -lambda 1 -distance 100 -detpixels 16")
    assert any("-N -5: fewer than 1 unit cell" in w for w in s.warnings)
    s = nb.Simulator.from_args("-cell 78 78 38 90 90 90 -default_F 100 -N 2 -lambda 1 -distance 100 -detpixels 16 -oversample 2")
    img = s.render(oversample_thick=True)
    assert img.max() == 0
    assert any("-oversample_thick without a sensor thickness" in n for n in s.notices), s.notices


@pytest.mark.parametrize(
    "fast,slow,why",
    [((0, 0, 1), (0, 0, 1), "not perpendicular"), ((0, 0, 1), (0, 0.1, 1), "not perpendicular"), ((0, 1, 0), (0, -1, 0), "not perpendicular")],
)
def test_detector_axes_must_be_perpendicular(fast, slow, why):
    s = sim()
    with pytest.raises(nb.UsageError, match=why) as e:
        s.render(fdet_vector=fast, sdet_vector=slow)
    assert e.value.field == "Detector.fdet_vector"
    assert "Detector.fdet_vector and Detector.sdet_vector" in str(e.value)


def test_geom_with_parallel_axes_names_file_panel_and_line(tmp_path):
    g = tmp_path / "parallel.geom"
    g.write_text("res = 5000\nclen = 0.1 m\np/min_fs = 0\np/max_fs = 23\np/min_ss = 0\np/max_ss = 19\n"
                 "p/fs = x\np/ss = x\np/corner_x = -10\np/corner_y = -10\n")
    with pytest.raises(nb.InputError, match="p/fs, p/ss: fast axis not perpendicular") as e:
        nb.Simulator.from_args(f"-cell 78 78 38 90 90 90 -default_F 100 -lambda 1 -geom {g}")
    assert e.value.file == str(g) and e.value.line == 8


@pytest.mark.parametrize(
    "F,why",
    [({}, "empty table"), ({(0, 0, 1): float("nan")}, r"F at \(0, 0, 1\) is nan"), ({(1.9, 0, 0): 5.0}, "integers")],
)
def test_bad_structure_factors_name_crystal_F(F, why):
    with pytest.raises(nb.UsageError, match=why) as e:
        sim(crystal=nb.Crystal(cell_A_deg=(70, 80, 90, 90, 95, 90), N=3, F=F))
    assert e.value.field == "Crystal.F" and str(e.value).startswith("Crystal.F:")
    assert "<table" not in str(e.value)


def test_structure_factor_table_over_the_size_limit_names_crystal_F():
    # two reflections at opposite corners of a box just past the limit (2^26 values, about
    # +-200 in h, k and l): the crate's message named its in-memory file "<table 7f...>.hkl"
    F = {(-203, -203, -203): 1.0, (203, 203, 203): 2.0}
    with pytest.raises(nb.LimitError, match=r"^Crystal\.F: Miller indices span h -203\.\.203.*more than the limit") as e:
        sim(crystal=nb.Crystal(cell_A_deg=(70, 80, 90, 90, 95, 90), N=3, F=F))
    assert isinstance(e.value, ValueError)
    assert e.value.field == "Crystal.F" and e.value.file is None
    assert "<table" not in str(e.value)


def test_errors_of_in_memory_files_are_sorted_by_the_crates_kind_not_by_their_words():
    # the Python face sorts a field's errors by the crate's kind: a limit error stays a
    # LimitError, an input error (a bad value of the field) is a UsageError, whatever words
    # its message holds
    from nanobragg.simulator import _name_field

    bad = _name_field(nb.InputError("<table 7fab12>.hkl line 2: an index beyond the limit of the file's format",
                                    file="<table 7fab12>.hkl", line=2), python=True)
    assert type(bad) is nb.UsageError and bad.field == "Crystal.F" and bad.file is None
    big = _name_field(nb.errors.from_kind("limit", "<table 7fab12>.hkl: a table of 2e8 values, too large",
                                          None, "<table 7fab12>.hkl", None, None), python=True)
    assert type(big) is nb.LimitError and big.field == "Crystal.F" and big.file is None


def test_a_table_is_said_as_crystal_F_in_info():
    s = sim(crystal=nb.Crystal(cell_A_deg=(70, 80, 90, 90, 95, 90), N=3, F={(1, 2, 3): 5.0}))
    assert s.info()["hkl_source"].startswith("Crystal.F ("), s.info()["hkl_source"]


def test_in_memory_file_names_in_crate_messages_are_said_as_fields():
    from nanobragg.config import field_of_file, name_mem_files

    assert name_mem_files("cannot read file '<table 7fab12>.hkl': 12 bytes, more than the limit") == \
        "Crystal.F: as text, 12 bytes, more than the limit"
    assert name_mem_files("<sources 3>.txt: 1000001 sources, more than the limit of 1000000") == \
        "Beam.sources: 1000001 sources, more than the limit of 1000000"
    assert field_of_file("<table 7fab12>.hkl") == "Crystal.F" and field_of_file("table.hkl") is None


def test_structure_factor_tables_are_not_reshaped():
    with pytest.raises(ValueError, match="integers"):
        nb.StructureFactors.from_dict({(1.9, 0, 0): 5.0, (-0.5, 2, 0): 3.0})
    with pytest.raises(ValueError, match="integers"):
        nb.StructureFactors([[1.5, 0, 0]], [1.0])
    with pytest.raises(ValueError, match=r"\(n, 3\)"):
        nb.StructureFactors([[1, 0], [0, 2], [0, 0]], [10.0, 20.0])
    with pytest.raises(ValueError, match=r"one value per hkl row"):
        nb.StructureFactors([[1, 0, 0], [0, 2, 0]], [10.0])
    t = nb.StructureFactors([[1.0, 0, 0], [0, 2, 0]], [10.0, 20.0])
    assert t.hkl.tolist() == [[1, 0, 0], [0, 2, 0]] and t.as_dict() == {(1, 0, 0): 10.0, (0, 2, 0): 20.0}


@pytest.mark.parametrize("sources,why", [([], "no sources"), ([(-1, 0, 0, 1, float("nan"))], "finite"),
                                         # refused by the crate, whose message named "<sources 0>.txt"
                                         ([(0, 0, 0, 1, 1e-10)], "at the sample"),
                                         ([(-10, 0, 0, 1, -1e-10)], "wavelength must be positive")])
def test_bad_sources_name_beam_sources(sources, why):
    with pytest.raises(nb.UsageError, match=why) as e:
        sim(beam=nb.Beam(wavelength_A=1.2, sources=sources))
    assert e.value.field == "Beam.sources" and "<sources" not in str(e.value)
    assert str(e.value).startswith("Beam.sources: ") and e.value.file is None


@pytest.mark.parametrize("cell,why", [
    ((0, 80, 90, 90, 90, 90), "a = 0.0: expected a number > 0"),
    ((70, 0, 90, 90, 90, 90), r"b = 0.0: expected a length > 0 \(Å\) \(the command line reads it as a = 70 Å, as upstream does\)$"),
    ((70, 80, -5, 90, 90, 90), "c = -5.0: expected a length > 0 .*as a = 70 Å"),
    ((70, 80, 90, 0, 90, 90), "alpha = 0.0: expected an angle between 0 and 180 degrees .*reads it as 90 degrees"),
    ((70, 80, 90, 90, -90, 90), "beta = -90.0: expected an angle .*reads it as 90 degrees"),
    ((70, 80, 90, 90, 90, 180), "gamma = 180.0: expected an angle below 180 degrees$"),
    ((70, 80, float("nan"), 90, 90, 90), "c = nan: expected a finite number$"),
])
def test_cell_entries_the_command_line_reads_as_others_are_refused(cell, why):
    # the command line reads b, c <= 0 as a and an angle <= 0 as 90 degrees (with a warning):
    # the crate's one cell rule (`args::check_cell`) refuses it, and says what it is read as
    with pytest.raises(ValueError, match=rf"^Crystal\.cell_A_deg: {why}") as e:
        sim(crystal=nb.Crystal(cell_A_deg=cell, N=3, default_F=10))
    assert isinstance(e.value, nb.UsageError) and e.value.field == "Crystal.cell_A_deg"
    with pytest.raises(nb.UsageError, match=rf"^Crystal\.cell_A_deg: {why}"):
        sim().render(cell_A_deg=cell)


def test_cell_angles_that_make_no_cell_name_cell_A_deg():
    with pytest.raises(nb.GeometryError, match=r"^Crystal\.cell_A_deg: the angles 60 60 150 do not make a cell") as e:
        sim(crystal=nb.Crystal(cell_A_deg=(70, 80, 90, 60, 60, 150), N=3, default_F=10))
    assert e.value.field == "Crystal.cell_A_deg"


def test_the_command_lines_cell_rule_is_kept_and_warned_of():
    words = "-N 3 -default_F 10 -lambda 1 -distance 100 -detpixels 24"
    s = nb.Simulator.from_args(f"-cell 70 0 0 90 0 90 {words}")
    assert any("-cell: b = 0 is not positive: read as a = 70" in w for w in s.warnings), s.warnings
    assert any("-cell: beta = 0 degrees is not positive: read as 90 degrees" in w for w in s.warnings), s.warnings
    cubic = nb.Simulator.from_args(f"-cell 70 70 70 90 90 90 {words}")
    assert not any("-cell" in w for w in cubic.warnings)
    assert np.array_equal(s.render(), cubic.render())
