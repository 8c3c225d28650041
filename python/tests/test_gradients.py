"""Derivatives from Python (MODEL §10): render(gradients=...), vjp, against finite differences
of the image at offsets and against the CLI's -gradfile images."""

import os
import subprocess
import sys

import numpy as np
import pytest

import nanobragg as nb

from conftest import run_cli

ARGS = "-default_F 100 -cell 70 80 90 75 85 95 -misset 15 25 35 -N 5 -lambda 1.2 -distance 120 -pixel 0.4 -detpixels 48 -Xbeam 12.5 -Ybeam 14.0"
NAMES = ["rot_x", "cell_a", "distance", "n_cells", "scale"]
STEPS = {"rot_x": 1e-7, "cell_a": 1e-4, "distance": 1e-5, "n_cells": 1e-7, "scale": 1e-4}


def test_render_with_gradients_is_the_image_and_its_derivatives():
    sim = nb.Simulator.from_args(ARGS)
    image, tangents = sim.render(gradients=NAMES)
    assert image.dtype == np.float64 and tangents.dtype == np.float64
    assert tangents.shape == (len(NAMES), 48, 48)
    # the float32 rounding of the image is the plain render, bit for bit
    assert np.array_equal(image.astype(np.float32), sim.render())
    signal = image >= 1e-3 * image.max()
    assert signal.sum() > 50
    for i, name in enumerate(NAMES):
        h = STEPS[name]
        fd = (sim._at([name], [h]) - sim._at([name], [-h])) / (2 * h)
        t = tangents[i]
        err = np.abs(fd - t) / (np.abs(t) + 1e-3 * np.abs(t).max())
        assert err[signal].max() <= 1e-4, (name, err[signal].max())


def test_vjp_is_the_weighted_sum_of_the_tangents():
    sim = nb.Simulator.from_args(ARGS)
    _, tangents = sim.render(gradients=NAMES)
    w = np.random.default_rng(3).normal(size=(48, 48))
    got = sim.vjp(w, gradients=NAMES)
    want = (tangents * w).sum(axis=(1, 2))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(tangents * w).sum())
    with pytest.raises(nb.UsageError, match=r"vjp: weights must be a 2-D array of the image's shape \(48, 48\) \(slow, fast\), got shape \(10, 48\)"):
        sim.vjp(w[:10], gradients=NAMES)


def test_unknown_parameter_names_the_nearest():
    sim = nb.Simulator.from_args(ARGS)
    with pytest.raises(nb.UsageError, match=r"gradients: unknown parameter 'rotx' \(did you mean rot_x\?\)"):
        sim.render(gradients=["rotx"])
    assert "mosaic" in nb.GRADIENT_PARAMETERS


def test_gradients_and_weights_of_another_type_or_shape_are_named():
    sim = nb.Simulator.from_args(ARGS)
    with pytest.raises(TypeError, match=r"^render: gradients must be a parameter name or a sequence of names .*got int$"):
        sim.render(gradients=5)
    with pytest.raises(TypeError, match=r"^render: gradients must be .*got an item of type int$"):
        sim.render(gradients=["rot_x", 1])
    with pytest.raises(nb.UsageError, match=r"^vjp: weights must be a 2-D array of the image's shape \(48, 48\) \(slow, fast\), got shape \(2304,\)$"):
        sim.vjp(np.ones(48 * 48), ["rot_x"])
    with pytest.raises(nb.UsageError, match=r"^vjp: weights must be .*got shape \(48, 47\)$"):
        sim.vjp(np.ones((48, 47)), ["rot_x"])
    with pytest.raises(TypeError, match=r"^vjp: gradients must be .*got float$"):
        sim.vjp(np.ones((48, 48)), 1.5)
    with pytest.raises(nb.UsageError, match=r"^vjp_structure_factors: weights must be .*got shape \(48,\)$"):
        sim.vjp_structure_factors(np.ones(48))


def test_matches_the_cli_gradfile(tmp_path):
    sim = nb.Simulator.from_args(ARGS)
    _, tangents = sim.render(gradients=["rot_x", "distance"])
    run_cli([*ARGS.split(), "-gradients", "rot_x,distance", "-gradfile", "g", "-nonoise", "-nopgm", "-floatfile", "f.bin", "-intfile", "i.img"], cwd=tmp_path)
    for i, name in enumerate(["rot_x", "distance"]):
        f = np.fromfile(tmp_path / f"g_{name}.bin", dtype="<f4").reshape(48, 48)
        assert np.array_equal(f, tangents[i].astype(np.float32)), name


def test_f32_precision_gives_the_f32_tangents(tmp_path):
    """precision "f32": the f32 tangent kernel (MODEL §10.5), float32 planes within 5e-6 of the
    largest f64 tangent on the pixels with signal; its VJP is its tangents' weighted sum (to
    the planes' float32 rounding); the CLI's -precision f32 -gradfile writes the same tangents."""
    i64, t64 = nb.Simulator.from_args(ARGS).render(gradients=NAMES)
    sim = nb.Simulator.from_args(ARGS + " -precision f32")
    i32, t32 = sim.render(gradients=NAMES)
    assert i32.dtype == np.float64 and t32.dtype == np.float32
    assert np.abs(i32 - i64).max() <= 2e-6 * i64.max()
    signal = i64 >= 1e-3 * i64.max()
    for i, name in enumerate(NAMES):
        err = np.abs(t32[i] - t64[i])[signal].max() / np.abs(t64[i]).max()
        assert err <= 5e-6, (name, err)
    assert not np.array_equal(t32, t64)
    w = np.random.default_rng(4).normal(size=(48, 48))
    v, tw = sim.vjp(w, gradients=NAMES), t32.astype(np.float64) * w
    assert (np.abs(v - tw.sum(axis=(1, 2))) <= 6e-8 * np.abs(tw).sum(axis=(1, 2))).all()
    run_cli([*ARGS.split(), "-precision", "f32", "-backend", "cpu", "-gradients", "rot_x,distance", "-gradfile", "g", "-nonoise", "-nopgm", "-floatfile", "f.bin", "-intfile", "i.img"], cwd=tmp_path)
    for name in ["rot_x", "distance"]:
        f = np.fromfile(tmp_path / f"g_{name}.bin", dtype="<f4").reshape(48, 48)
        assert np.array_equal(f, t32[NAMES.index(name)].astype(np.float32)), name


def test_gradients_and_vjp_follow_the_backend():
    """The simulator's backend decides where render(gradients=...) and vjp run, as for the
    image: the CPU by default (engine "cpu"); backend "gpu" the GPU's tangent kernel (MODEL
    §10.6, engine "gpu"): its image is the GPU render's (within 1e-6 of the peak), its f32 tangents within 1e-4 of the
    largest f64 CPU tangent on the pixels with signal, its VJP within 1e-4 of the CPU's. Without
    an adapter this fails, as the crate's GPU tests do, unless NANOBRAGG_NO_GPU=1 (then
    skipped, with the reason)."""
    cpu = nb.Simulator.from_args(ARGS)
    i64, t64 = cpu.render(gradients=NAMES)
    assert cpu.engine == "cpu"
    w = np.random.default_rng(5).normal(size=(48, 48))
    v64 = cpu.vjp(w, gradients=NAMES)
    assert cpu.engine == "cpu"
    sim = nb.Simulator.from_args(ARGS + " -precision f32 -backend gpu")
    try:
        image, tangents = sim.render(gradients=NAMES)
    except nb.GpuError as e:
        if os.environ.get("NANOBRAGG_NO_GPU") == "1":
            pytest.skip(f"no GPU adapter (NANOBRAGG_NO_GPU=1): {e}")
        raise
    assert sim.engine == "gpu" and sim.notices == []
    assert tangents.shape == (len(NAMES), 48, 48) and tangents.dtype == np.float32
    # the GPU render's image: within 1e-6 of the peak (two shader modules a driver may contract
    # to fma differently, as NVIDIA's does; bit for bit on lavapipe), as gpu_tangent.rs checks
    plain = sim.render()
    assert sim.engine == "gpu"
    assert np.abs(image.astype(np.float32) - plain).max() <= 1e-6 * plain.max()
    signal = i64 >= 1e-3 * i64.max()
    assert signal.sum() > 50
    assert np.abs(image - i64)[signal].max() <= 1e-4 * i64.max()
    for i, name in enumerate(NAMES):
        err = np.abs(tangents[i] - t64[i])[signal].max() / np.abs(t64[i]).max()
        assert err <= 1e-4, (name, err)
    assert not np.array_equal(tangents, t64)
    v = sim.vjp(w, gradients=NAMES)
    assert sim.engine == "gpu"
    scale = np.abs(t64 * w).sum(axis=(1, 2))
    assert (np.abs(v - v64) / scale).max() <= 1e-4, (v, v64)


def test_no_adapter_is_the_image_renders_error_or_a_cpu_fallback(tmp_path):
    """With no adapter to open (NANOBRAGG_GPU_ADAPTER naming none, in a subprocess): backend
    "gpu" makes render(gradients=...) and vjp raise the GpuError the image render raises;
    "auto" with f32 computes them on the CPU with the notice the image render gives."""
    code = f"""
import numpy as np, nanobragg as nb
A = {ARGS!r}
def err(f):
    try:
        f()
    except nb.GpuError as e:
        return str(e)
    return "no error"
print(err(lambda: nb.Simulator.from_args(A + " -precision f32 -backend gpu").render()))
print(err(lambda: nb.Simulator.from_args(A + " -precision f32 -backend gpu").render(gradients=["rot_x"])))
print(err(lambda: nb.Simulator.from_args(A + " -precision f32 -backend gpu").vjp(np.ones((48, 48)), gradients=["rot_x"])))
s = nb.Simulator.from_args(A + " -precision f32 -backend auto")
_, t = s.render(gradients=["rot_x"])
print(s.engine, s.notices, t.shape)
v = s.vjp(np.ones((48, 48)), gradients=["rot_x"])
print(s.engine, s.notices, v.shape)
"""
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NANOBRAGG_GPU_ADAPTER": "no-such-gpu"},
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    image_err, grad_err, vjp_err, auto_grad, auto_vjp = r.stdout.strip().splitlines()
    assert image_err.startswith("NANOBRAGG_GPU_ADAPTER=no-such-gpu: no GPU adapter matches"), image_err
    assert grad_err == image_err and vjp_err == image_err
    assert auto_grad.startswith("cpu ['GPU backend unavailable (NANOBRAGG_GPU_ADAPTER=no-such-gpu: no GPU adapter matches"), auto_grad
    assert auto_grad.endswith("(1, 48, 48)")
    assert auto_vjp == auto_grad.replace("(1, 48, 48)", "(1,)"), (auto_vjp, auto_grad)


def test_structure_factor_gradient_against_central_differences():
    """vjp_structure_factors: the gradient of (w * image).sum() with respect to each table
    entry, against central differences of that entry (exact up to rounding: the image is
    quadratic in F); an error naming -interpolate with tricubic interpolation."""
    table = {(h, k, l): 10.0 + h + 2 * k + 3 * l for h in range(-3, 4) for k in range(-3, 4) for l in range(-3, 4)}
    c = dict(cell_A_deg=(30, 30, 30, 90, 90, 90), N=3, misset_deg=(3, 5, 7))
    b, d = nb.Beam(wavelength_A=1.0), nb.Detector(distance_mm=50, pixels=32, pixel_mm=0.5)
    sim = nb.Simulator(nb.Crystal(F=table, **c), b, d, precision="f64")
    w = np.random.default_rng(5).normal(size=(32, 32))
    g = sim.vjp_structure_factors(w)
    assert g["hkl"].shape == (len(g["F"]), 3) and len(g["F"]) >= 3
    for i in np.argsort(-np.abs(g["grad"]))[:3]:
        key = tuple(int(x) for x in g["hkl"][i])
        assert g["F"][i] == table[key]
        h = 1e-3 * table[key]
        loss = []
        for s in (h, -h):
            moved = dict(table)
            moved[key] += s
            img = nb.Simulator(nb.Crystal(F=moved, **c), b, d, precision="f64").render()
            loss.append(float((w * img.astype(np.float64)).sum()))
        fd = (loss[0] - loss[1]) / (2 * h)
        # the renders are float32 images: their rounding, not the gradient, sets the tolerance
        assert abs(fd - g["grad"][i]) <= 1e-4 * abs(g["grad"][i]), (key, fd, g["grad"][i])
    with pytest.raises(nb.UsageError) as e:
        sim.vjp_structure_factors(w, interpolate=True)
    # the keyword the user wrote, not the flag (which e.flag keeps)
    assert str(e.value).startswith("Crystal.interpolate: ") and e.value.flag == "-interpolate"
