"""nanobragg in a dozen lines: render a still, then fit the crystal's orientation back to it.

    pip install nanobragg
    python quickstart.py
"""

import nanobragg as nb

crystal = nb.Crystal(cell_A_deg=(78, 78, 38, 90, 90, 90), N=10, default_F=100, misset_deg=(10, 20, 30))
sim = nb.Simulator(crystal, nb.Beam(wavelength_A=1.0), nb.Detector(distance_mm=100, pixels=128, pixel_mm=0.2))

image = sim.render()  # photons per pixel, float32 (slow, fast)
print(f"{image.shape[1]}x{image.shape[0]} pixels, brightest {image.max():.1f} photons")

# the same crystal turned by 0.1 degree: fit the three rotations back
target = sim.render(misset_deg=(10.1, 20, 30))
fit = sim.fit(target, ["rot_x", "rot_y", "rot_z"])
print("converged" if fit.converged else f"did not converge: {fit.verdict}")
print({name: f"{value * 57.29578:+.4f} deg" for name, value in fit.values.items()})
