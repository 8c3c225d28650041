"""A user's script with mistakes that ``mypy --strict`` must report, each on the line marked
``# error: <code>`` (test_typing.py checks that exactly these lines are reported). Never run."""

from __future__ import annotations

import nanobragg as nb
from nanobragg.compat.simtbx import nanoBragg

sim = nb.Simulator(nb.Crystal(cell_A_deg=(78, 78, 38, 90, 90, 90), N=5, default_F=100), nb.Beam(wavelength_A=1.0))
sim.render(wavelenght_A=1.0)  # error: call-overload
sim.render(phi_deg="ten")  # error: call-overload
sim.fit(sim.render(), ["rot_x"], loss="tukey")  # error: arg-type
nb.Simulator(precision="f16")  # error: arg-type
nb.Simulator(backend="cuda")  # error: arg-type
nb.Crystal(shape="cube")  # error: arg-type
image, tangents = sim.render(gradients=["rot_x"])
tangents.converged  # error: attr-defined
sim.fit(sim.render(), ["rot_x"]).convergd  # error: attr-defined
SIM = nanoBragg()
SIM.xtal_shape = "cube"  # error: assignment
SIM.wavelenght_A = 1.0  # error: attr-defined
