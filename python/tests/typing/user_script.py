"""A user's script, checked with ``mypy --strict`` by test_typing.py (never run by pytest): the
types a user's tools see for the public API. ``assert_type`` fails the check when a return type
is not the one stated."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import nanobragg as nb
from nanobragg.compat.simtbx import nanoBragg

crystal = nb.Crystal(cell_A_deg=(78, 78, 38, 90, 90, 90), N=5, default_F=100, misset_deg=(10, 20, 30))
beam = nb.Beam(wavelength_A=1.0, fluence_ph_per_m2=1e24)
detector = nb.Detector(distance_mm=100, pixels=64, pixel_mm=0.1, convention="mosflm")
sim = nb.Simulator(crystal, beam, detector, precision="f64", backend="cpu", threads=2)

image = sim.render(phi_deg=1.0, mosaic_seed=3, crystal_size_mm=0.01)
assert_type(image, npt.NDArray[np.float32])
both = sim.render(gradients=["rot_x", "distance"], wavelength_A=1.1)
assert_type(both, tuple[npt.NDArray[np.float64], npt.NDArray[np.floating[Any]]])
model, tangents = both
print(model.shape, tangents.shape, image.max())

fit = sim.fit(image, ["rot_x", "rot_y"], loss="cauchy", background="local", max_iterations=20)
assert_type(fit, nb.FitResult)
assert_type(fit.converged, bool)
assert_type(fit.values, dict[str, float])
assert_type(fit.history, list[float])
if not fit.converged:
    print("did not converge:", fit.verdict)
refit = sim.render(**fit.fitted)
assert_type(refit, npt.NDArray[np.float32])

batch = sim.render_many(overrides=[{"phi_deg": 0.0}, {"phi_deg": 0.5, "mosaic_seed": 2}])
assert_type(batch, npt.NDArray[np.float32])
grad = sim.vjp(np.ones(sim.shape), ["cell_a"])
assert_type(grad, npt.NDArray[np.float64])

try:
    nb.Simulator(crystal, nb.Beam(wavelength_A=-1), detector)
except nb.UsageError as e:
    assert_type(e.field, str | None)
    print(e.field, e.flag)
except FileNotFoundError as e:
    print(e.filename)

SIM = nanoBragg(detpixels_slowfast=(64, 64), pixel_size_mm=0.1)
SIM.wavelength_A = 1.0
SIM.xtal_shape = "gauss"
SIM.add_nanoBragg_spots()
assert_type(SIM.raw_pixels, npt.NDArray[np.float64])
