"""Structure-factor tables: computed from an atomic model, or given as h, k, l, F."""

from __future__ import annotations

import numbers
import os
from typing import Mapping, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

__all__ = ["StructureFactors", "structure_factors"]


class StructureFactors:
    """An h, k, l, F table, usable as ``Crystal(F=...)``.

    ``hkl`` is an (n, 3) int array and ``F`` an (n,) float64 array. ``cell_A_deg`` is the
    model's cell when the table came from a model (``None`` otherwise)."""

    def __init__(self, hkl: npt.ArrayLike, F: npt.ArrayLike, cell_A_deg: Optional[Tuple[float, ...]] = None, description: str = "", _text: Optional[bytes] = None) -> None:
        h = np.asarray(hkl)
        f = np.asarray(F)
        if h.size == 0 and f.size == 0:
            h = h.reshape(0, 3)
        if h.ndim != 2 or h.shape[1] != 3:
            raise ValueError(f"StructureFactors: hkl must be an (n, 3) array of h, k, l rows, got shape {h.shape}")
        if f.ndim != 1 or len(f) != len(h):
            raise ValueError(f"StructureFactors: F must be an ({len(h)},) array, one value per hkl row, got shape {f.shape}")
        if h.dtype.kind not in "iub":
            try:
                hf = h.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"StructureFactors: hkl must hold integers, got {h.dtype}") from None
            bad = ~(np.isfinite(hf) & (hf == np.round(hf)))
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise ValueError(f"StructureFactors: hkl must hold integers (Miller indices), row {row} is {hf[row].tolist()}")
            if np.abs(hf).max(initial=0) > np.iinfo(np.int32).max:
                raise ValueError("StructureFactors: hkl indices beyond the 32-bit range")
        if f.dtype.kind not in "iufb":
            raise ValueError(f"StructureFactors: F must hold numbers, got {f.dtype}")
        self.hkl = h.astype(np.int64)
        self.F = f.astype(np.float64)
        self.cell_A_deg = cell_A_deg
        self.description = description
        self._text = _text

    @classmethod
    def from_dict(cls, table: Mapping[Tuple[int, int, int], float]) -> "StructureFactors":
        """A table from ``{(h, k, l): F}``."""
        keys = list(table.keys())
        for k in keys:
            if not isinstance(k, tuple) or len(k) != 3:
                raise ValueError(f"StructureFactors: a key must be an (h, k, l) tuple, got {k!r}")
            for x in k:
                if isinstance(x, bool) or not isinstance(x, numbers.Real) or not float(x).is_integer():
                    raise ValueError(f"StructureFactors: Miller indices must be integers, got {k!r}")
        values: list[float] = []
        for k in keys:
            v = table[k]
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise ValueError(f"StructureFactors: F at {k!r} must be a number, got {v!r}")
            values.append(float(v))
        return cls(np.array(keys, dtype=np.int64).reshape(-1, 3), np.array(values, dtype=np.float64))

    def _fault(self) -> Optional[str]:
        """Why the table cannot be a crystal's structure factors (``Crystal.F``), if it cannot."""
        if len(self.F) == 0:
            return "an empty table: expected at least one (h, k, l): F entry"
        bad = ~np.isfinite(self.F)
        if bad.any():
            i = int(np.argmax(bad))
            return f"F at {tuple(int(x) for x in self.hkl[i])} is {float(self.F[i])}: expected a finite number"
        return None

    def hkl_text(self) -> bytes:
        """The table as ``h k l F`` lines (the ``-hkl`` format; F written to read back exactly)."""
        if self._text is None:
            lines = [f"{h} {k} {l} {f!r}" for (h, k, l), f in zip(self.hkl.tolist(), self.F.tolist())]
            self._text = ("\n".join(lines) + "\n").encode()
        return self._text

    def as_dict(self) -> dict[Tuple[int, int, int], float]:
        return {(int(r[0]), int(r[1]), int(r[2])): f for r, f in zip(self.hkl.tolist(), self.F.tolist())}

    def __len__(self) -> int:
        return len(self.F)

    def __repr__(self) -> str:
        return f"StructureFactors({len(self)} reflections{', ' + self.description if self.description else ''})"


def structure_factors(model: Union[str, "os.PathLike[str]", bytes], dmin: float, *, name: Optional[str] = None) -> StructureFactors:
    """Structure factors of an atomic model (PDB or mmCIF; a path, or the file's bytes/text with
    ``name``) for every reflection with d ≥ ``dmin`` Å, as the CLI's ``-pdb`` computes them."""
    from . import _nanobragg

    if isinstance(model, bytes):
        data, nm = model, name or "model"
    elif isinstance(model, str) and ("\n" in model):
        data, nm = model.encode(), name or "model"
    else:
        nm = os.fsdecode(model)
        with open(nm, "rb") as f:
            data = f.read()
    text, cell, description = _nanobragg.structure_factors(nm, data, float(dmin))
    rows = np.loadtxt(text.decode().splitlines(), dtype=np.float64, ndmin=2) if text else np.zeros((0, 4))
    return StructureFactors(rows[:, :3].astype(np.int64), rows[:, 3], cell, description, _text=text)
