"""nanoBragg: X-ray diffraction from a small crystal onto a pixel detector, from Python.

    >>> import nanobragg as nb
    >>> sim = nb.Simulator(nb.Crystal(cell_A_deg=(100, 100, 100, 90, 90, 90), N=5, default_F=100),
    ...                    nb.Beam(wavelength_A=1.0), nb.Detector(distance_mm=100, pixels=64, pixel_mm=0.1))
    >>> sim.render().shape
    (64, 64)

Importing is cheap: no device is opened and no table is built until a Simulator needs it.
"""

from ._nanobragg import __version__, flag_table
from .config import Beam, Crystal, Detector
from .errors import (
    CancelledError,
    Error,
    FileMissingError,
    GeometryError,
    GpuError,
    InputError,
    LimitError,
    MissingInputError,
    OutputError,
    UsageError,
)
from .images import read_cbf, read_float, read_smv, write_cbf, write_float, write_smv
from .chain import noisify, nonbragg
from .sf import StructureFactors, structure_factors
from .config import Backend, Overrides, Precision
from .simulator import GRADIENT_PARAMETERS, BackgroundModel, FitResult, Loss, Simulator

__all__ = [
    "Simulator",
    "GRADIENT_PARAMETERS",
    "FitResult",
    "Overrides",
    "Precision",
    "Backend",
    "Loss",
    "BackgroundModel",
    "Crystal",
    "Beam",
    "Detector",
    "StructureFactors",
    "structure_factors",
    "nonbragg",
    "noisify",
    "read_smv",
    "write_smv",
    "read_cbf",
    "write_cbf",
    "read_float",
    "write_float",
    "flag_table",
    "Error",
    "UsageError",
    "MissingInputError",
    "InputError",
    "FileMissingError",
    "GeometryError",
    "OutputError",
    "CancelledError",
    "GpuError",
    "LimitError",
    "__version__",
]
