"""The package as its users' tools see it: ``mypy --strict`` passes on the package's source and
on a user's script (tests/typing/user_script.py, whose ``assert_type`` lines state the return
types: images for ``render()``, image and tangents for ``render(gradients=...)``, a FitResult
for ``fit()``), and reports each mistake of tests/typing/user_mistakes.py (a keyword typo, a
``loss``/``precision``/``backend``/``shape`` outside its ``Literal``, a misspelt result field)
on its line. The typed keyword overrides (``Overrides``) list exactly what the simulator takes."""

import dataclasses
import pathlib
import re
import subprocess
import sys
import typing

import pytest

import nanobragg as nb
from nanobragg import config

HERE = pathlib.Path(__file__).resolve().parent
PYTHON_DIR = HERE.parent


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    # one cache for the module's runs (numpy's stubs analysed once)
    return tmp_path_factory.mktemp("mypy_cache")


def mypy(args, cwd, cache):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.fail("mypy is not installed in the test venv (scripts/setup.sh python installs it)")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
                       cwd=cwd, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def test_mypy_strict_passes_on_the_package(tmp_path, mypy_cache):
    # the source tree's package with the configuration of pyproject.toml ([tool.mypy] strict)
    code, out = mypy(["--config-file", str(PYTHON_DIR / "pyproject.toml"), str(PYTHON_DIR / "nanobragg")], tmp_path, mypy_cache)
    assert code == 0, out


def test_mypy_strict_on_a_users_script(tmp_path, mypy_cache):
    # the installed package (py.typed), as a user's project sees it: run from a scratch folder
    code, out = mypy(["--strict", "--no-warn-unused-configs", str(HERE / "typing" / "user_script.py"),
                      str(HERE / "typing" / "user_mistakes.py")], tmp_path, mypy_cache)
    errors = {}
    for line in out.splitlines():
        m = re.match(r"(.*?):(\d+): error: .*\[([\w-]+)\]$", line)
        if m:
            errors.setdefault((pathlib.Path(m.group(1)).name, int(m.group(2))), set()).add(m.group(3))
    assert not [k for k in errors if k[0] == "user_script.py"], out
    expected = {}
    for i, line in enumerate((HERE / "typing" / "user_mistakes.py").read_text().splitlines(), 1):
        m = re.search(r"# error: ([\w-]+)$", line)
        if m:
            expected[("user_mistakes.py", i)] = {m.group(1)}
    assert len(expected) >= 10
    assert errors == expected, out
    assert code == 1


def test_the_typed_overrides_are_the_keywords_the_simulator_takes():
    keys = set(typing.get_type_hints(nb.Overrides, globalns=vars(config)))
    assert keys == set(config._FIELDS) | {"precision", "backend"}
    assert nb.Overrides.__required_keys__ == frozenset()
    # a field two classes share is a keyword only with its class's prefix, in both
    assert "size_mm" not in keys and {"crystal_size_mm", "detector_size_mm"} <= keys


def test_the_literals_are_the_values_the_crate_takes():
    sim = nb.Simulator.from_args("-cell 50 50 50 90 90 90 -default_F 10 -N 3 -detpixels 16 -pixel 0.4")
    target = sim.render().astype("f8")
    for loss in typing.get_args(nb.Loss):
        assert sim.fit(target, ["scale"], loss=loss, max_iterations=2).iterations >= 1
    for bg in typing.get_args(nb.BackgroundModel):
        assert sim.fit(target, ["scale"], background=bg, max_iterations=2).iterations >= 1
    with pytest.raises(nb.UsageError, match="tukey"):
        sim.fit(target, ["scale"], loss="tukey")  # type: ignore[arg-type]
    assert set(typing.get_args(nb.Precision)) == {"f64", "f32"}
    for p in typing.get_args(nb.Precision):
        assert sim.render(precision=p).shape == (16, 16)
    for b in typing.get_args(nb.Backend):
        config._port_words("backend", b)  # accepted
    with pytest.raises(nb.UsageError, match="Simulator.backend"):
        config._port_words("backend", "cuda")
    shapes = typing.get_args(typing.get_args(typing.get_type_hints(nb.Crystal, globalns=vars(config))["shape"])[0])
    assert set(shapes) == set(config.SHAPES)


def test_fit_result_reads_as_attributes_and_as_the_dict_it_was():
    fields = {f.name for f in dataclasses.fields(nb.FitResult)}
    assert {"converged", "verdict", "values", "fitted", "history", "correlation", "correlation_ceiling"} <= fields
    sim = nb.Simulator.from_args("-cell 50 50 50 90 90 90 -default_F 10 -N 3 -detpixels 16 -pixel 0.4")
    fit = sim.fit(sim.render().astype("f8"), ["scale"], max_iterations=3)
    for name in fields:
        assert fit[name] is getattr(fit, name)
    assert set(dict(fit)) == fields and "values" in fit and "nope" not in fit
    with pytest.raises(KeyError):
        fit["convergd"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.converged = True  # type: ignore[misc]
