"""The realistic-image chain's other programs: nonBragg (amorphous background) and noisify
(detector effects), as the CLI runs them (``nonbragg ...``, ``noisify ...``) and the page does.

Both take the programs' own flag words (a string or a list), plus keyword flags: ``name=value``
becomes ``-name value`` (``True`` a bare switch, a tuple several values).
"""

from __future__ import annotations

import os
import re
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from . import _nanobragg
from .errors import Error

__all__ = ["nonbragg", "noisify", "NoisifyResult"]

Words = Union[str, Sequence[str], None]


def _words(args: Words, flags: Mapping[str, Any]) -> list[str]:
    out = list(_nanobragg.split_args(args) if isinstance(args, str) else (args or []))
    for k, v in flags.items():
        if v is None or v is False:
            continue
        out.append("-" + k)
        if v is True:
            continue
        if isinstance(v, (tuple, list)):
            out += [repr(float(x)) if isinstance(x, float) else str(x) for x in v]
        else:
            out.append(repr(float(v)) if isinstance(v, float) else os.fsdecode(v) if hasattr(v, "__fspath__") else str(v))
    return out


def nonbragg(args: Words = None, *, files: Optional[Mapping[str, bytes]] = None, **flags: Any) -> npt.NDArray[np.float32]:
    """nonBragg's background image (photons/pixel, float32 (slow, fast)) for its flags, e.g.
    ``nonbragg("-stol water.stol -thick 0.1 -distance 100 -detpixels 256")``. The
    ``water.stol``, ``air.stol`` and ``ice.stol`` tables are bundled: a missing file of that
    name is the bundled one. The solid angle is ``nonbragg.last_solid_angle_sr``, the warnings
    ``nonbragg.last_warnings``."""
    words = _words(args, flags)
    mem = dict(files or {})
    for i, w in enumerate(words[:-1]):
        if w in ("-stol", "-4stol", "-Q") and not os.path.exists(words[i + 1]) and words[i + 1] not in mem:
            b = _nanobragg.bundled_stol(os.path.basename(words[i + 1]))
            if b is not None:
                mem[words[i + 1]] = b
    image, omega, warnings = _nanobragg.nonbragg_render(words, mem)
    nonbragg.last_solid_angle_sr = omega  # type: ignore[attr-defined]
    nonbragg.last_warnings = warnings  # type: ignore[attr-defined]
    return image


nonbragg.last_solid_angle_sr = None  # type: ignore[attr-defined]
nonbragg.last_warnings = []  # type: ignore[attr-defined]


class NoisifyResult:
    """What noisify makes: ``int_image`` (noiseless ADU), ``noise_image`` (with noise, or
    ``None`` with ``-nonoise``), both uint32 (slow, fast) before the 16-bit clip of the SMV file
    (:meth:`smv` gives the file bytes), the SMV ``header`` bytes, and the ``log`` lines."""

    def __init__(
        self,
        int_image: npt.NDArray[np.uint32],
        noise_image: Optional[npt.NDArray[np.uint32]],
        header: bytes,
        log: list[str],
    ) -> None:
        self.int_image = int_image
        self.noise_image = noise_image
        self.header = header
        self.log = log

    def smv(self, noise: bool = True) -> bytes:
        """The SMV file noisify writes (``-noisefile`` when ``noise``, else ``-intfile``),
        16-bit pixels."""
        a = self.noise_image if noise and self.noise_image is not None else self.int_image
        body: bytes = np.minimum(a, 65535).astype("<u2").tobytes()
        return self.header + body


def noisify(image: npt.ArrayLike, args: Words = None, *, files: Optional[Mapping[str, bytes]] = None, **flags: Any) -> NoisifyResult:
    """noisify's detector effects (photon scale, Poisson noise, PSF, read-out noise,
    calibration, gain, ADC) on ``image`` (photons/pixel, (slow, fast)), with noisify's flags,
    e.g. ``noisify(img, "-seed 1 -readout_noise 3 -psf_fwhm 50", pixel=0.1)``."""
    a = np.ascontiguousarray(image, dtype=np.float32)
    if a.ndim != 2:
        raise ValueError(f"noisify: image must be 2-D (slow, fast), got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"noisify: image must have at least one pixel, got shape {a.shape}")
    try:
        adu, noise, header, log = _nanobragg.noisify_image(a, _words(args, flags), dict(files or {}))
    except Error as e:
        raise _keyword_named(e, flags) from None
    return NoisifyResult(adu, noise, header, log)


def _keyword_named(e: Error, flags: Mapping[str, Any]) -> Error:
    """``e`` naming the keyword flag (``readout_noise=-3``) where it names a flag given as one
    (``-readout_noise -3``): its ``field`` is the keyword."""
    flag = e.flag or ""
    name = flag[1:]
    # a keyword given as None or False is not given (`_words` skips it; `is`, not `in`: a
    # keyword of 0 is given)
    v = flags.get(name)
    if not name or v is None or v is False:
        return e
    e.field = name
    message = e.message
    if message.startswith(f"{flag} "):
        message = f"{name}=" + message[len(flag) + 1:]
    else:
        message = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", name, message)
    e.message = message
    e.args = (message,)
    return e
