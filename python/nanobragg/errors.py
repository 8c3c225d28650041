"""Exceptions raised by nanobragg.

Every error of the simulator is a :class:`nanobragg.Error`, with a subclass per kind of the
crate's structured error. The ones that mean "a bad value" (usage, missing input, impossible
geometry, a limit exceeded) are also :class:`ValueError`, so ``except ValueError`` catches a bad
keyword argument; an input file that does not exist is a :class:`FileMissingError`, also a
:class:`FileNotFoundError`. When the configuration was written in Python (``Crystal``, ``Beam``,
``Detector``, keyword overrides), the message names the Python field (``Beam.wavelength_A:
expected a number > 0 ...``) where the crate's names the flag (``-lambda``); with
``Simulator.from_args`` it keeps the flag. Attributes locate the error where the crate knows it:

* ``kind``: the crate's error kind (``"usage"``, ``"input"``, ...)
* ``flag``: the command-line flag it concerns (``"-lambda"``), or ``None``
* ``field``: the typed configuration's field (``"Beam.wavelength_A"``), or ``None``
* ``file`` and ``line``: the input file (and 1-based line) it concerns, or ``None``
* ``key``: the header key or record it concerns, or ``None``
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
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
    "from_kind",
]


class Error(Exception):
    """Base class of every nanobragg error."""

    kind: str = "error"

    def __init__(
        self,
        message: str,
        *,
        flag: Optional[str] = None,
        file: Optional[str] = None,
        line: Optional[int] = None,
        key: Optional[str] = None,
        field: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.flag = flag
        self.file = file
        self.line = line
        self.key = key
        self.field = field


class UsageError(Error, ValueError):
    """A bad flag or value: unknown flag, missing or non-numeric value, out of range."""

    kind = "usage"


class MissingInputError(Error, ValueError):
    """A required input is missing (no structure factors, no cell)."""

    kind = "missing_input"


class InputError(Error):
    """An input file could not be read or parsed (``file``/``line`` say where)."""

    kind = "input"


class FileMissingError(InputError, FileNotFoundError):
    """An input file does not exist (also Python's :class:`FileNotFoundError`; ``file`` and
    ``filename`` name it)."""

    def __init__(self, message: str, **where: Any) -> None:
        super().__init__(message, **where)
        self.errno = 2  # ENOENT
        self.filename = self.file
        self.strerror = message

    def __str__(self) -> str:
        # the message, which names the file already (OSError's own form would add
        # "[Errno 2] " before it and the file name again after it)
        return str(self.args[0]) if self.args else ""


class GeometryError(Error, ValueError):
    """The configuration is physically impossible (zero wavelength, detector parallel to the beam)."""

    kind = "geometry"


class OutputError(Error):
    """Writing an output file failed."""

    kind = "output"


class CancelledError(Error):
    """The work was cancelled (Ctrl-C raises KeyboardInterrupt instead)."""

    kind = "cancelled"


class GpuError(Error, RuntimeError):
    """The GPU backend is unavailable or failed (``backend="gpu"`` has no CPU fallback)."""

    kind = "gpu"


class LimitError(Error, ValueError):
    """The request exceeds a documented limit (table sizes, detector pixels)."""

    kind = "limit"


_KINDS = {
    c.kind: c
    for c in (
        UsageError,
        MissingInputError,
        InputError,
        GeometryError,
        OutputError,
        CancelledError,
        GpuError,
        LimitError,
    )
}


def from_kind(
    kind: str,
    message: str,
    flag: Optional[str] = None,
    file: Optional[str] = None,
    line: Optional[int] = None,
    key: Optional[str] = None,
) -> Error:
    """The exception for an error of the crate (called by the compiled module with the
    locations of the crate's structured error). An input file that does not exist (the
    operating system's "os error 2", ENOENT on every platform) is a :class:`FileMissingError`."""
    cls = _KINDS.get(kind, Error)
    if cls is InputError and "(os error 2)" in message:
        cls = FileMissingError
    return cls(message, flag=flag, file=file, line=line, key=key)
