"""Bad input raises a nanobragg.Error subclass (ValueError for bad values) with the CLI's text,
naming the flag and the field; it never crashes the interpreter."""

import random

import numpy as np
import pytest

import nanobragg as nb

GOOD = "-cell 50 50 50 90 90 90 -default_F 10 -N 3 -lambda 1 -distance 100 -detpixels 32 -pixel 0.2"


def cli_message(words, tmp_path):
    """The CLI's error text for `words` (its stderr)."""
    import subprocess

    from conftest import cli_path

    r = subprocess.run([str(cli_path()), *words, "-floatfile", "x.bin", "-nonoise", "-nopgm", "-intfile", "x.img"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0
    return r.stderr


def test_usage_error_is_a_value_error_with_the_cli_text(tmp_path):
    with pytest.raises(nb.UsageError) as e:
        nb.Simulator.from_args(GOOD + " -lambda abc")
    assert isinstance(e.value, ValueError) and isinstance(e.value, nb.Error)
    assert e.value.flag == "-lambda"
    assert e.value.field == "Beam.wavelength_A"
    assert e.value.kind == "usage"
    assert str(e.value) in cli_message(nb._nanobragg.split_args(GOOD + " -lambda abc"), tmp_path)


def test_typed_field_errors_name_the_field():
    with pytest.raises(ValueError) as e:
        nb.Simulator(nb.Crystal(cell_A_deg=(50, 50, 50, 90, 90, 90), default_F=10),
                     nb.Beam(wavelength_A=-1), nb.Detector(distance_mm=100, pixels=16))
    assert isinstance(e.value, nb.Error)
    assert e.value.field == "Beam.wavelength_A", (e.value.field, str(e.value))
    with pytest.raises(nb.UsageError) as e:
        nb.Crystal(cell_A_deg=(1, 2)).words()
    assert e.value.field == "Crystal.cell_A_deg" and "expected 6 numbers" in str(e.value)
    with pytest.raises(nb.UsageError):
        nb.Detector(convention="foo").words()
    with pytest.raises(TypeError):
        nb.Simulator.from_args(GOOD).render(not_a_field=1)


@pytest.mark.parametrize("part,field", [
    (lambda big: nb.Beam(wavelength_A=big), "Beam.wavelength_A"),
    (lambda big: nb.Crystal(cell_A_deg=(50, 50, 50, 90, 90, big)), "Crystal.cell_A_deg"),
    (lambda big: nb.Crystal(N=(1, 1, big)), "Crystal.N"),
    (lambda big: nb.Crystal(mosaic_domains=big), "Crystal.mosaic_domains"),
    (lambda big: nb.Crystal(rotation=[[1, 0, 0], [0, 1, 0], [0, 0, big]]), "Crystal.rotation"),
])
def test_an_integer_beyond_double_precision_names_its_field(part, field):
    """An int beyond 1.8e308 (float() of it overflows) is a UsageError naming the field, not an
    OverflowError (the dataset spec's fuzz target found it through a TOML description)."""
    for big in (10**400, -(10**5000)):
        with pytest.raises(nb.UsageError) as e:
            part(big).words({})
        assert e.value.field == field and str(e.value).startswith(field), str(e.value)


def test_a_keyword_typo_is_refused_with_the_nearest_names():
    sim = nb.Simulator.from_args(GOOD)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'wavelenght_A'.*did you mean 'wavelength_A'\?"):
        sim.render(wavelenght_A=1.0)
    with pytest.raises(TypeError, match=r"'zzz' \(not an argument of render\(\) nor a field of Crystal, Beam or Detector\)$"):
        sim.render(zzz=1)
    # a typo of the method's own argument suggests it
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'gradient'.*did you mean 'gradients'"):
        sim.render(gradient=["rot_x"])


@pytest.mark.parametrize("watched", [True, False])
def test_a_panic_in_a_helper_thread_is_a_runtime_error_not_keyboard_interrupt(watched):
    """A panic of the crate (a bug) on the helper thread that runs the work: a RuntimeError
    with the panic's message (a script that catches Ctrl-C must not take it for the user
    quitting), on the watched path (renders, fits) and on the short one (small noisify)."""
    with pytest.raises(RuntimeError, match=r"helper thread panicked: boom 42 \(please report the inputs\)") as e:
        nb._nanobragg._helper_panic("boom 42", watched)
    assert not isinstance(e.value, KeyboardInterrupt)


def test_a_pixel_count_below_one_is_refused_not_the_default_detector():
    for bad in (0, -3, (0, 32), (32, 0)):
        with pytest.raises(nb.UsageError, match=r"Detector\.pixels: expected a pixel count >= 1"):
            nb.Simulator(nb.Crystal(cell_A_deg=(50, 50, 50, 90, 90, 90), default_F=10, N=3),
                         nb.Beam(wavelength_A=1), nb.Detector(distance_mm=100, pixels=bad, pixel_mm=0.2)).render()
    sim = nb.Simulator.from_args(GOOD)
    with pytest.raises(nb.UsageError, match=r"pixels: expected a pixel count >= 1"):
        sim.render(pixels=0)


def test_missing_input_error():
    with pytest.raises(nb.MissingInputError) as e:
        nb.Simulator.from_args("-lambda 1 -distance 100 -detpixels 16 -dump /nonexistent/Fdump.bin")
    assert isinstance(e.value, ValueError)


def test_input_error_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.hkl"
    bad.write_text("1 2 3 4\n1 2 x 5\n")
    with pytest.raises(nb.InputError) as e:
        nb.Simulator.from_args(GOOD + f" -hkl {bad}")
    assert "bad.hkl" in str(e.value) and "line 2" in str(e.value)
    assert e.value.file.endswith("bad.hkl") and e.value.line == 2, (e.value.file, e.value.line)
    with pytest.raises(nb.InputError) as e:
        nb.Simulator.from_args(GOOD + f" -hkl {tmp_path / 'missing.hkl'}")
    assert e.value.file.endswith("missing.hkl"), (str(e.value), e.value.file)
    with pytest.raises(nb.InputError):
        nb.read_smv(tmp_path / "missing.img")


def test_geometry_error():
    with pytest.raises(nb.GeometryError) as e:
        nb.Simulator.from_args(GOOD + " -beam_vector 0 0 1 -fdet_vector 0 0 1 -sdet_vector 0 1 0 -odet_vector 1 0 0")
    assert isinstance(e.value, ValueError)


def test_limit_error(tmp_path):
    with pytest.raises(nb.LimitError) as e:
        nb.Simulator.from_args(GOOD + " -xtalsize 1000")
    assert isinstance(e.value, ValueError)
    assert str(e.value) in cli_message(nb._nanobragg.split_args(GOOD + " -xtalsize 1000"), tmp_path)


def test_output_error(tmp_path):
    with pytest.raises(nb.OutputError):
        nb.write_float(tmp_path / "no" / "such" / "dir" / "x.bin", np.zeros((2, 2), np.float32))


def test_gpu_error_or_gpu_render():
    """backend="gpu" has no CPU fallback: it renders on a GPU or raises GpuError."""
    s = nb.Simulator.from_args(GOOD + " -precision f32 -backend gpu")
    try:
        img = s.render()
    except nb.GpuError as e:
        assert isinstance(e, RuntimeError) and str(e)
    else:
        assert s.engine == "gpu" and img.max() > 0


def test_cancelled_error_class():
    e = nb.errors.from_kind("cancelled", "render cancelled")
    assert isinstance(e, nb.CancelledError) and isinstance(e, nb.Error)


def test_every_kind_of_the_crate_has_a_class():
    kinds = nb._nanobragg.error_kinds()
    assert len(kinds) == 8
    for kind in kinds:
        e = nb.errors.from_kind(kind, "x")
        assert e.kind == kind and type(e) is not nb.Error


FUZZ_FIELDS = {
    "misset_deg": lambda r: tuple(r.uniform(-1e4, 1e4) for _ in range(3)),
    "phi_deg": lambda r: r.choice([r.uniform(-1e9, 1e9), float("nan"), float("inf"), -0.0]),
    "mosaic_spread_deg": lambda r: r.uniform(-10, 10),
    "mosaic_domains": lambda r: r.randint(-5, 5),
    "wavelength_A": lambda r: r.choice([r.uniform(-1, 5), 0.0, float("nan"), 1e300]),
    "distance_mm": lambda r: r.choice([r.uniform(-200, 200), 0.0, float("inf")]),
    "fluence_ph_per_m2": lambda r: r.choice([r.uniform(-1e30, 1e30), 1e300, float("nan")]),
    "N": lambda r: r.choice([r.uniform(-3, 8), (r.randint(-2, 5), 1, 1), "x"]),
    "pixels": lambda r: r.choice([r.randint(-5, 40), (r.randint(0, 30), r.randint(0, 30)), 2.5]),
    "oversample": lambda r: r.randint(-2, 3),
    "dispersion_pct": lambda r: r.uniform(-5, 50),
    "twotheta_deg": lambda r: r.uniform(-400, 400),
    "beam_vector": lambda r: tuple(r.uniform(-1, 1) for _ in range(3)),
    "roi": lambda r: tuple(r.randint(-40, 40) for _ in range(4)),
    "shape": lambda r: r.choice(["square", "round", "gauss", "tophat", "cube"]),
    "interpolate": lambda r: r.choice([True, False, 1]),
    "precision": lambda r: r.choice(["f64", "f32", "f16"]),
}


def test_fuzz_random_keyword_values_only_raise():
    """Random keyword values: every render returns an image or raises nanobragg.Error /
    TypeError; nothing else, and the interpreter survives."""
    rng = random.Random(17)
    base = nb.Simulator.from_args(GOOD + " -backend cpu -detpixels 16")
    outcomes = {"image": 0, "error": 0}
    for _ in range(150):
        kw = {k: f(rng) for k, f in rng.sample(sorted(FUZZ_FIELDS.items()), rng.randint(1, 4))}
        try:
            img = base.render(**kw)
        except (nb.Error, TypeError) as e:
            assert str(e), kw
            outcomes["error"] += 1
        else:
            assert img.dtype == np.float32 and img.ndim == 2 and np.isfinite(img).all(), kw
            outcomes["image"] += 1
    assert outcomes["image"] > 10 and outcomes["error"] > 10, outcomes


@pytest.mark.parametrize("field_kw, flag_words", [
    ({"beam": nb.Beam(wavelength_A=-1.0)}, ["-lambda", "-1.0"]),
    ({"crystal": nb.Crystal(cell_A_deg=(50, 50, 50, 90, 90, 90), default_F=10, mosaic_spread_deg=-1.0)}, ["-mosaic", "-1.0"]),
    ({"detector": nb.Detector(pixels=16, distance_mm=0.0)}, ["-distance", "0.0"]),
    ({"detector": nb.Detector(pixels=16, pixel_mm=-0.1)}, ["-pixel", "-0.1"]),
    ({"beam": nb.Beam(wavelength_A=1.0, dispersion_pct=-5.0)}, ["-dispersion", "-5.0"]),
])
def test_errors_name_the_python_field_where_the_user_wrote_python(field_kw, flag_words):
    """The same bad value, written as flags and as a typed field: the crate's message, with the
    flag (from_args) or the Python field (typed configuration, and a render's keyword override)
    where it names the parameter, and nothing else changed."""
    base = {"crystal": nb.Crystal(cell_A_deg=(50, 50, 50, 90, 90, 90), default_F=10),
            "beam": nb.Beam(wavelength_A=1.0), "detector": nb.Detector(pixels=16)}
    base.update(field_kw)
    with pytest.raises(nb.UsageError) as typed:
        nb.Simulator(base["crystal"], base["beam"], base["detector"])
    with pytest.raises(nb.UsageError) as flags:
        nb.Simulator.from_args(GOOD.split() + flag_words)
    flag = flag_words[0]
    assert typed.value.flag == flags.value.flag == flag
    field = typed.value.field
    assert field is not None and field == flags.value.field
    assert str(flags.value).startswith(flag + ":"), str(flags.value)
    assert str(typed.value) == str(flags.value).replace(flag, field, 1), (str(typed.value), str(flags.value))
    assert flag not in str(typed.value)
    # an override is Python too, on a Simulator made from flags
    good = nb.Simulator.from_args(GOOD)
    keyword = field.split(".")[1]
    value = field_kw[next(iter(field_kw))].__dict__[keyword]
    with pytest.raises(nb.UsageError) as over:
        good.render(**{keyword: value})
    assert str(over.value) == str(typed.value)


def test_a_missing_input_file_is_a_file_not_found_error(tmp_path):
    missing = str(tmp_path / "absent.mat")
    with pytest.raises(FileNotFoundError) as e:
        nb.Simulator(nb.Crystal(mat_file=missing, default_F=10), nb.Beam(wavelength_A=1.0), nb.Detector(pixels=16))
    assert isinstance(e.value, nb.InputError) and isinstance(e.value, nb.FileMissingError)
    assert e.value.filename == missing and e.value.errno == 2 and missing in str(e.value)
    # the file named once, in the crate's words (not OSError's "[Errno 2] ...: 'path'" around them)
    assert str(e.value).count(missing) == 1 and not str(e.value).startswith("[Errno"), str(e.value)
    for read in (nb.read_smv, nb.read_cbf, nb.read_float):
        with pytest.raises(FileNotFoundError) as e:
            read(tmp_path / "absent.img")
        assert isinstance(e.value, nb.InputError) and e.value.filename == str(tmp_path / "absent.img")
    # a file that exists but cannot be parsed stays an InputError, not a FileNotFoundError
    (tmp_path / "bad.mat").write_text("not a matrix\n")
    with pytest.raises(nb.InputError) as e:
        nb.Simulator(nb.Crystal(mat_file=str(tmp_path / "bad.mat"), default_F=10), nb.Beam(wavelength_A=1.0), nb.Detector(pixels=16))
    assert not isinstance(e.value, FileNotFoundError)


def test_every_keyword_taking_method_refuses_a_typo_naming_itself():
    sim = nb.Simulator.from_args(GOOD)
    image = sim.render()
    calls = {
        "render": lambda: sim.render(mosaic_sead=1),
        "vjp": lambda: sim.vjp(image, ["rot_x"], mosaic_sead=1),
        "fit": lambda: sim.fit(image, ["rot_x"], mosaic_sead=1),
        "predict": lambda: sim.predict(mosaic_sead=1),
        "render_many": lambda: sim.render_many(overrides=[{"mosaic_sead": 1}]),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'mosaic_sead'.*did you mean 'mosaic_seed'"):
            call()
