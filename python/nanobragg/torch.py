"""PyTorch bridge (optional: needs ``torch``): the simulator as a differentiable function.

    >>> import torch, nanobragg as nb
    >>> from nanobragg.torch import render, SimulatorModule
    >>> sim = nb.Simulator.from_args("-cell 100 100 100 90 90 90 -default_F 100 -N 5 -detpixels 64")
    >>> theta = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    >>> image = render(sim, ["rot_x", "rot_y", "distance"], theta)   # (slow, fast) float64
    >>> loss = ((image - target) ** 2).sum(); loss.backward()          # theta.grad: (3,)

``theta`` holds offsets from the simulator's own values, one per parameter, in the parameter's
unit (rad for ``rot_*``, Å for cell lengths and ``lambda``, degrees for cell angles, ``mosaic``
and ``det_rot*``, mm for ``distance`` and ``beam_*``, cells for ``n_*``, relative for
``scale``; see :data:`nanobragg.GRADIENT_PARAMETERS`); crystal rotations compose as
R_z·R_y·R_x. The forward pass renders the image there; the backward pass is the crate's
vector–Jacobian product there (no tangent image is kept); both on the simulator's backend and
precision, as ``sim.render(gradients=...)`` (the CPU in f64 by default, what ``gradcheck``
needs; ``backend="gpu"``: the GPU's tangent kernel, f32 tangents). The image is float64 (its
float32 rounding is ``sim.render()`` at the same values).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .simulator import Simulator

__all__ = ["render", "SimulatorModule", "RenderFunction"]


class RenderFunction(torch.autograd.Function):  # type: ignore[misc]
    """``RenderFunction.apply(theta, sim, names)``: the image at offsets ``theta`` (1-D)."""

    @staticmethod
    def forward(ctx: Any, theta: torch.Tensor, sim: Simulator, names: Sequence[str]) -> torch.Tensor:
        values = theta.detach().cpu().to(torch.float64).numpy()
        ctx.sim, ctx.names, ctx.values = sim, list(names), values
        image = sim._at(ctx.names, values)
        return torch.from_numpy(np.ascontiguousarray(image)).to(dtype=theta.dtype, device=theta.device)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        w = grad_output.detach().cpu().to(torch.float64).numpy()
        g = ctx.sim._at(ctx.names, ctx.values, weights=w)
        return torch.from_numpy(np.asarray(g)).to(dtype=grad_output.dtype, device=grad_output.device), None, None


def render(sim: Simulator, names: Sequence[str], theta: torch.Tensor) -> torch.Tensor:
    """The image (slow, fast) of ``sim`` with the parameters ``names`` moved by ``theta``."""
    names = list(names)
    if theta.ndim != 1 or theta.shape[0] != len(names):
        raise ValueError(f"theta must be a 1-D tensor of {len(names)} offsets (one per name), got shape {tuple(theta.shape)}")
    out: torch.Tensor = RenderFunction.apply(theta, sim, names)
    return out


class SimulatorModule(torch.nn.Module):  # type: ignore[misc]
    """A ``torch.nn.Module`` whose parameter ``theta`` (offsets, zeros at the start) moves the
    named parameters of ``sim``; ``forward()`` returns the image."""

    def __init__(self, sim: Simulator, names: Sequence[str], dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.sim = sim
        self.names = list(names)
        self.theta = torch.nn.Parameter(torch.zeros(len(self.names), dtype=dtype))

    def forward(self) -> torch.Tensor:
        return render(self.sim, self.names, self.theta)
