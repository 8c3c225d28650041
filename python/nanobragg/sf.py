"""Structure-factor tables: computed from an atomic model, or given as h, k, l, F."""

from __future__ import annotations

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
        self.hkl = np.asarray(hkl, dtype=np.int64).reshape(-1, 3)
        self.F = np.asarray(F, dtype=np.float64).reshape(-1)
        if len(self.hkl) != len(self.F):
            raise ValueError(f"StructureFactors: {len(self.hkl)} h,k,l rows but {len(self.F)} F values")
        self.cell_A_deg = cell_A_deg
        self.description = description
        self._text = _text

    @classmethod
    def from_dict(cls, table: Mapping[Tuple[int, int, int], float]) -> "StructureFactors":
        """A table from ``{(h, k, l): F}``."""
        keys = list(table.keys())
        return cls(np.array(keys, dtype=np.int64).reshape(-1, 3), np.array([table[k] for k in keys], dtype=np.float64))

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
