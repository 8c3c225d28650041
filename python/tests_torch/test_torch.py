"""The PyTorch bridge (nanobragg.torch): torch.autograd.gradcheck in float64, and a loss's
gradient through .backward() against the crate's vector–Jacobian product. Run by
scripts/test-python.sh with Debian's python3-torch (a venv over the system site packages)."""

import numpy as np
import torch

import nanobragg as nb
from nanobragg.torch import SimulatorModule, render

# a small detector with large pixels: every pixel is an output of the Jacobian gradcheck builds.
# gradcheck: central differences with eps = 1e-6 (in each parameter's unit), |a - n| <= 1e-3 +
# 1e-4*|n|, with derivatives up to ~1e4 photons per unit: 1e-4 relative, and the floor for entries
# near 0 (where the difference's own truncation shows).
ARGS = "-default_F 100 -cell 70 80 90 75 85 95 -misset 15 25 35 -N 5 -lambda 1.2 -distance 120 -pixel 2.0 -detpixels 10"
NAMES = ["rot_x", "rot_z", "cell_a", "distance", "scale"]


def test_gradcheck_float64():
    sim = nb.Simulator.from_args(ARGS)
    assert (sim.render() > 0).sum() > 20
    theta = torch.tensor([0.002, -0.001, 0.05, 0.3, 0.1], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: render(sim, NAMES, t), (theta,), eps=1e-6, atol=1e-3, rtol=1e-4)


def test_backward_is_the_vjp():
    sim = nb.Simulator.from_args(ARGS)
    m = SimulatorModule(sim, NAMES)
    target = torch.from_numpy(sim.render().astype(np.float64)) * 1.1
    loss = ((m() - target) ** 2).sum()
    loss.backward()
    image, tangents = sim.render(gradients=NAMES)
    want = (2 * (image - target.numpy()) * tangents).sum(axis=(1, 2))
    np.testing.assert_allclose(m.theta.grad.numpy(), want, rtol=1e-10)
