"""Image files: SMV (``.img``), miniCBF (``.cbf``) and the raw float image (``.bin``).

Readers return ``(pixels, header)``: a NumPy array (slow, fast) and a dict of the header's
``KEY=value`` entries (SMV) or ``# key value`` lines (miniCBF). Writers write atomically: a file
is either complete or absent.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Mapping, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _nanobragg

__all__ = ["read_smv", "write_smv", "read_cbf", "write_cbf", "read_float", "write_float"]

PathLike = Union[str, "os.PathLike[str]"]


def _read(path: PathLike) -> Tuple[str, bytes]:
    name = os.fsdecode(path)
    try:
        with open(name, "rb") as f:
            return name, f.read()
    except OSError as e:
        from .errors import FileMissingError, InputError

        cls = FileMissingError if isinstance(e, FileNotFoundError) else InputError
        raise cls(f"cannot read file '{name}': {e.strerror}", file=name) from None


def _smv_header_dict(text: str) -> dict[str, str]:
    out = {}
    for item in text.replace("\n", "").strip("{}\x0c ").split(";"):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def read_smv(path: PathLike) -> Tuple[npt.NDArray[np.uint16], dict[str, str]]:
    """An SMV image: uint16 pixels (slow, fast) and the header's entries as strings."""
    name, data = _read(path)
    text, pixels = _nanobragg.read_smv(name, data)
    return pixels, _smv_header_dict(text)


_OWN_KEYS = {"HEADER_BYTES", "DIM", "BYTE_ORDER", "TYPE", "SIZE1", "SIZE2", "DETECTOR_SN", "BEAMLINE"}


def write_smv(path: PathLike, pixels: np.ndarray, header: Optional[Mapping[str, object]] = None) -> None:
    """Writes uint16 ``pixels`` (slow, fast) as an SMV file with ``header`` entries (``KEY:
    value``; the size, type and byte-order lines are written from the array)."""
    a = np.asarray(pixels)
    if a.ndim != 2:
        raise ValueError(f"write_smv: pixels must be 2-D (slow, fast), got shape {a.shape}")
    if a.dtype != np.uint16:
        if a.size and (a.min() < 0 or a.max() > 65535 or not np.all(np.asarray(a) == np.floor(a))):
            raise ValueError("write_smv: pixels must be whole numbers 0..65535 (uint16)")
        a = a.astype(np.uint16)
    body = ""
    for k, v in (header or {}).items():
        k = str(k)
        if k in _OWN_KEYS:
            continue
        if any(c in k + str(v) for c in ";={}\n\x0c"):
            raise ValueError(f"write_smv: header entry {k!r}={v!r} has a character SMV reserves (; = {{ }} newline)")
        body += f"{k}={v};\n"
    data = _nanobragg.smv_bytes(body, np.ascontiguousarray(a))
    _nanobragg.write_file_atomic(os.fsdecode(path), data)


def read_cbf(path: PathLike) -> Tuple[npt.NDArray[np.int32], dict[str, str]]:
    """A miniCBF image (byte-offset): int32 pixels (slow, fast) and its ``# key value`` lines
    (the date line, ``# 2026-11-30T12:00:00.000``, under ``timestamp``, as dxtbx reads it)."""
    name, data = _read(path)
    text, pixels = _nanobragg.read_cbf(name, data)
    header = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("# ") and line[2:3].isdigit():
            header["timestamp"] = line[2:].strip()
            continue
        if line.startswith("# "):
            parts = line[2:].replace(":", " ", 1).split(None, 1) if ":" in line[2:].split(" ", 1)[0] else line[2:].split(None, 1)
            if parts:
                header[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return pixels, header


def write_cbf(
    path: PathLike,
    pixels: np.ndarray,
    *,
    pixel_mm: float,
    wavelength_A: float,
    distance_mm: float,
    beam_xy_px: Tuple[float, float],
    exposure_s: float = 1.0,
    detector: str = "nanoBragg simulation",
    start_angle_deg: float = 0.0,
    angle_increment_deg: float = 0.0,
    count_cutoff: int = 1048576,
) -> None:
    """Writes int32 ``pixels`` (slow, fast) as a miniCBF file with PILATUS header lines (the
    CLI's ``-cbffile`` writer; DIALS and fabio read it)."""
    a = np.asarray(pixels)
    if a.ndim != 2:
        raise ValueError(f"write_cbf: pixels must be 2-D (slow, fast), got shape {a.shape}")
    a = _int32_pixels(a)
    pixel = _header_number("pixel_mm", pixel_mm, positive=True)
    wavelength = _header_number("wavelength_A", wavelength_A, positive=True)
    distance = _header_number("distance_mm", distance_mm, positive=True)
    try:
        bx, by = beam_xy_px
    except (TypeError, ValueError):
        raise ValueError(f"write_cbf: beam_xy_px must be (x, y) pixels, got {beam_xy_px!r}") from None
    beam = (_header_number("beam_xy_px", bx), _header_number("beam_xy_px", by))
    exposure = _header_number("exposure_s", exposure_s, nonnegative=True)
    start = _header_number("start_angle_deg", start_angle_deg)
    increment = _header_number("angle_increment_deg", angle_increment_deg)
    if isinstance(count_cutoff, bool) or not isinstance(count_cutoff, numbers.Integral) or count_cutoff < 0:
        raise ValueError(f"write_cbf: count_cutoff must be a whole number >= 0, got {count_cutoff!r}")
    if any(c in str(detector) for c in "\r\n"):
        raise ValueError(f"write_cbf: detector must be one line, got {detector!r}")
    data = _nanobragg.cbf_bytes(
        np.ascontiguousarray(a),
        pixel * 1e-3,
        wavelength,
        distance * 1e-3,
        beam,
        exposure,
        str(detector),
        start,
        increment,
        int(count_cutoff),
    )
    _nanobragg.write_file_atomic(os.fsdecode(path), data)


def _int32_pixels(a: np.ndarray) -> npt.NDArray[np.int32]:
    """``a`` as int32 counts, refusing (rather than wrapping or truncating) what int32 cannot
    hold: values beyond its range, non-whole and non-finite numbers."""
    if a.dtype == np.int32:
        return a
    if a.dtype.kind not in "iufb":
        raise ValueError(f"write_cbf: pixels must be numbers, got dtype {a.dtype}")
    if a.size == 0 or a.dtype.kind == "b":
        return a.astype(np.int32)
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    if a.dtype.kind == "f":
        if not np.isfinite(a).all():
            i = np.unravel_index(int(np.argmax(~np.isfinite(a))), a.shape)
            raise ValueError(f"write_cbf: pixels must be finite, pixel (slow, fast) {tuple(map(int, i))} is {a[i].item()!r}")
        whole = a == np.floor(a)
        if not whole.all():
            i = np.unravel_index(int(np.argmax(~whole)), a.shape)
            raise ValueError(f"write_cbf: pixels must be whole numbers (int32 counts), pixel (slow, fast) {tuple(map(int, i))} is {a[i].item()!r}")
    mn, mx = a.min(), a.max()
    if mn < lo or mx > hi:
        raise ValueError(f"write_cbf: pixels must lie in the int32 range {lo}..{hi}, got {mn.item()!r}..{mx.item()!r}")
    return a.astype(np.int32)


def _header_number(name: str, v: object, positive: bool = False, nonnegative: bool = False) -> float:
    """A header value of ``write_cbf``: a finite number (``> 0`` with ``positive``, ``>= 0`` with
    ``nonnegative``), else a ValueError naming the argument."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"write_cbf: {name} must be a number, got {v!r}")
    x = float(v)
    if not math.isfinite(x) or (positive and not x > 0) or (nonnegative and not x >= 0):
        want = "a finite number > 0" if positive else "a finite number >= 0" if nonnegative else "a finite number"
        raise ValueError(f"write_cbf: {name} must be {want}, got {v!r}")
    return x


def read_float(path: PathLike, shape: Optional[Tuple[int, int]] = None) -> np.ndarray:
    """The raw float image (``-floatfile``: little-endian float32): (slow, fast) with ``shape``,
    else flat."""
    name, data = _read(path)
    if len(data) % 4:
        from .errors import InputError

        raise InputError(f"{name}: {len(data)} bytes is not a whole number of 4-byte floats", file=name)
    a = np.frombuffer(data, dtype="<f4").astype(np.float32)
    if shape is not None:
        if a.size != shape[0] * shape[1]:
            from .errors import InputError

            raise InputError(f"{name}: {a.size} floats, not {shape[0]}x{shape[1]}", file=name)
        a = a.reshape(shape)
    return a


def write_float(path: PathLike, image: np.ndarray) -> None:
    """Writes ``image`` as the raw float image (little-endian float32, row-major)."""
    a = np.ascontiguousarray(image, dtype="<f4")
    _nanobragg.write_file_atomic(os.fsdecode(path), a.tobytes())
