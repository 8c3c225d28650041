"""Typed configuration: :class:`Crystal`, :class:`Beam` and :class:`Detector`.

Each field carries its unit in its name (``wavelength_A``, ``distance_mm``, ``mosaic_spread_deg``)
and maps to one of the simulator's flags (the field's ``flag`` metadata). The simulator
validates the values with the same rules as the command line: a bad value raises
:class:`nanobragg.UsageError` (a ``ValueError``) with the CLI's text, naming the field
(``Beam.wavelength_A: expected a number > 0 ...`` where the CLI says ``-lambda: ...``). ``None``
means "the simulator's default". No physics happens here: fields become the crate's input words.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, Union

from . import _nanobragg
from .errors import Error, UsageError

__all__ = ["Crystal", "Beam", "Detector", "Overrides", "Precision", "Backend", "CONVENTIONS", "SHAPES", "field_of_flag", "override_words"]

CONVENTIONS = ("mosflm", "xds", "adxv", "denzo", "dials")
SHAPES = ("square", "round", "gauss", "tophat")
_SHAPE_FLAGS = {"square": "-square_xtal", "round": "-round_xtal", "gauss": "-gauss_xtal", "tophat": "-tophat_spots"}

Vec3 = Tuple[float, float, float]
PathLike = Union[str, "os.PathLike[str]"]
#: ``Crystal.shape``.
Shape = Literal["square", "round", "gauss", "tophat"]
#: ``Detector.convention``.
Convention = Literal["mosflm", "xds", "adxv", "denzo", "dials"]
Pivot = Literal["sample", "beam"]
#: ``precision=``: ``"f64"`` (bit-identical with upstream) or ``"f32"`` (fast).
Precision = Literal["f64", "f32"]
#: ``backend=``: ``"auto"``, ``"cpu"`` or ``"gpu"``.
Backend = Literal["auto", "cpu", "gpu"]
# in-memory input files (name -> bytes) that the words name
Files = dict[str, bytes]
# a special field's words: (owner, name, value, files) -> words
WordsFn = Callable[[str, str, Any, Optional[Files]], list[str]]


def _f(flag: str, kind: str = "float", n: int = 1, **more: Any) -> Any:
    """A field of flag `flag`; kind: float, int, vec (n numbers), switch, choice, file, text,
    special; ``also``: the further flags it writes. The fields below are generated from the
    crate's table (``crate/src/args/fields.rs``)."""
    return field(default=None, metadata={"flag": flag, "kind": kind, "n": n, **more})


class _Config:
    """Shared behaviour of the three configuration classes."""

    def words(self, files: Optional[Files] = None) -> list[str]:
        """The flag words of the fields that are set (``files`` collects in-memory inputs)."""
        out: list[str] = []
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None:
                continue
            out += _field_words(type(self).__name__, f, v, files)
        return out


def _num(owner: str, name: str, v: Any, integer: bool = False) -> str:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise _bad(owner, name, f"expected a number, got {_show(v)}")
    if integer:
        if isinstance(v, numbers.Integral):
            _float(owner, name, v)  # (beyond double precision: refused, and no str() of 4300 digits)
            return str(int(v))
        if _float(owner, name, v).is_integer():
            return str(int(float(v)))
        raise _bad(owner, name, f"expected a whole number, got {_show(v)}")
    x = _float(owner, name, v)
    # repr round-trips: the crate reads back the same f64
    return "nan" if math.isnan(x) else repr(x)


def _show(v: Any) -> str:
    """``repr(v)`` for a message; a value holding an integer of more than 4300 digits, which
    Python will not write in decimal (ValueError), is said so."""
    try:
        return repr(v)
    except ValueError:
        return "an integer of more than 4300 digits" if isinstance(v, int) else "a value holding an integer of more than 4300 digits"


def _float(owner: str, name: str, v: Any) -> float:
    """``v`` (a real number) as a float; an integer beyond double precision's range (309
    digits or more) is refused naming the field, not an OverflowError."""
    try:
        return float(v)
    except OverflowError:
        raise _bad(owner, name, "expected a number, got an integer beyond the largest floating-point number "
                   "(1.8e308)") from None


def _bad(owner: str, name: str, why: str) -> UsageError:
    return UsageError(f"{owner}.{name}: {why}", field=f"{owner}.{name}")


def _seq(owner: str, name: str, v: Any, n: int) -> list[str]:
    try:
        items = list(v)
    except TypeError:
        raise _bad(owner, name, f"expected {n} numbers, got {_show(v)}") from None
    if len(items) != n:
        raise _bad(owner, name, f"expected {n} numbers, got {len(items)}")
    return [_num(owner, name, x) for x in items]


def _field_words(owner: str, f: "dataclasses.Field[Any]", v: Any, files: Optional[Files]) -> list[str]:
    m = f.metadata
    flag, kind = m["flag"], m["kind"]
    name = f.name
    if kind == "float":
        return [flag, _num(owner, name, v)]
    if kind == "int":
        if flag in _COUNTS:
            _at_least_one(owner, name, v, _COUNTS[flag])
        return [flag, _num(owner, name, v, integer=True)]
    if kind == "vec":
        words = _seq(owner, name, v, m["n"])
        if flag == "-cell":
            _check_cell(owner, name, words)
        return [flag] + words
    if kind == "switch":
        if not isinstance(v, bool):
            raise _bad(owner, name, f"expected True or False, got {_show(v)}")
        off = m.get("off")
        if v:
            return [flag]
        return [off] if off else []
    if kind == "choice":
        choices = m["choices"]
        if v not in choices:
            raise _bad(owner, name, f"expected one of {', '.join(map(repr, choices))}, got {_show(v)}")
        mapped = m.get("map", {}).get(v)
        if mapped is not None:
            return [mapped]
        return [flag, v] if flag else ["-" + v]
    if kind == "file":
        if not isinstance(v, (str, bytes)) and not hasattr(v, "__fspath__"):
            raise _bad(owner, name, f"expected a path, got {_show(v)}")
        return [flag, os.fsdecode(v)]
    if kind == "text":
        return [flag, str(v)]
    if kind == "special":
        fn: WordsFn = m["words"]
        return fn(owner, name, v, files)
    raise AssertionError(kind)


def _check_cell(owner: str, name: str, words: list[str]) -> None:
    """Refuse a cell entry that the command line refuses (a <= 0, an angle of 180 degrees or
    more) or reads as another with only a warning (b, c <= 0 as a; an angle <= 0 as 90
    degrees): the crate's one cell rule (``args::check_cell``), its error re-worded to name the
    field and the entry (``Crystal.cell_A_deg: b = 0.0: expected a length > 0 (Å) …``)."""
    try:
        _nanobragg.check_cell(words)
    except Error as e:
        raise _bad(owner, name, e.message.removeprefix("-cell: ")) from None


def _at_least_one(owner: str, name: str, v: Any, what: str) -> None:
    """Refuse a count below 1 that the crate, as upstream, would read as 1 or as "not given"
    with only a warning (the CLI keeps upstream's image)."""
    # (compared as it is: float() of an integer beyond double precision overflows)
    if isinstance(v, numbers.Real) and not isinstance(v, bool) and not v >= 1:  # type: ignore[operator]
        raise _bad(owner, name, f"expected {what} >= 1, got {_show(v)}")


#: Integer fields whose counts below 1 the crate reads as "not given" (as upstream, with a
#: warning on the command line); the typed configuration refuses them.
_COUNTS = {"-mosaic_dom": "a number of mosaic domains"}


def _n_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        _at_least_one(owner, name, v, "a number of unit cells")
        return ["-N", _num(owner, name, v)]
    a, b, c = _seq(owner, name, v, 3)
    for x in v:
        _at_least_one(owner, name, x, "numbers of unit cells")
    return ["-Na", a, "-Nb", b, "-Nc", c]


def _misset_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    if isinstance(v, str):
        if v != "random":
            raise _bad(owner, name, f"expected 3 angles or 'random', got {_show(v)}")
        return ["-misset", "random"]
    return ["-misset"] + _seq(owner, name, v, 3)


#: Largest entry of |UᵀU - I| that ``Crystal.rotation`` accepts.
_ROTATION_TOL = 1e-6


def _rotation_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    try:
        u = [[float(x) for x in row] for row in v]
    except (TypeError, ValueError, OverflowError):
        raise _bad(owner, name, f"expected a 3x3 rotation matrix, got {_show(v)}") from None
    if len(u) != 3 or any(len(r) != 3 for r in u) or not all(math.isfinite(x) for r in u for x in r):
        raise _bad(owner, name, "expected a 3x3 rotation matrix of finite numbers")
    # a rotation: orthonormal (|UᵀU - I| <= tol) with determinant +1
    off = max(abs(sum(u[k][i] * u[k][j] for k in range(3)) - (1.0 if i == j else 0.0)) for i in range(3) for j in range(3))
    if off > _ROTATION_TOL:
        raise _bad(owner, name, f"not a rotation matrix: its columns are not orthonormal (largest |UᵀU - I| entry {off:.3g}, more than {_ROTATION_TOL:g})")
    det = (u[0][0] * (u[1][1] * u[2][2] - u[1][2] * u[2][1]) - u[0][1] * (u[1][0] * u[2][2] - u[1][2] * u[2][0])
           + u[0][2] * (u[1][0] * u[2][1] - u[1][1] * u[2][0]))
    if det < 0:
        raise _bad(owner, name, f"not a rotation matrix: its determinant is {det:.6g} (a reflection), expected +1")
    from . import _nanobragg

    return ["-misset"] + [repr(float(a)) for a in _nanobragg.misset_from_rotation(u)]


def _pixels_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    def count(x: Any) -> str:
        # the crate reads -detpixels 0 as "not given" (its default detector): refuse it here
        if isinstance(x, numbers.Real) and not isinstance(x, bool) and x < 1:
            raise _bad(owner, name, f"expected a pixel count >= 1, got {_show(x)}")
        return _num(owner, name, x, integer=True)

    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return ["-detpixels", count(v)]
    try:
        fast, slow = v
    except (TypeError, ValueError):
        raise _bad(owner, name, f"expected n or (fast, slow), got {_show(v)}") from None
    return ["-detpixels_f", count(fast), "-detpixels_s", count(slow)]


def _pair_words(flag_x: str, flag_y: str) -> WordsFn:
    def words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
        x, y = _seq(owner, name, v, 2)
        return [flag_x, x, flag_y, y]

    return words


def _roi_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    try:
        items = list(v)
    except TypeError:
        raise _bad(owner, name, f"expected (xmin, xmax, ymin, ymax), got {_show(v)}") from None
    if len(items) != 4:
        raise _bad(owner, name, f"expected 4 numbers, got {len(items)}")
    return ["-roi"] + [_num(owner, name, x, integer=True) for x in items]


def _f_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    """Structure factors: a StructureFactors table, a {(h, k, l): F} mapping, or an -hkl path."""
    from .sf import StructureFactors

    if isinstance(v, Mapping):
        try:
            v = StructureFactors.from_dict(v)
        except ValueError as e:
            raise _bad(owner, name, str(e)) from None
    if isinstance(v, StructureFactors):
        why = v._fault()
        if why is not None:
            raise _bad(owner, name, why)
        if files is None:
            raise _bad(owner, name, "a table needs the Simulator (it passes it in memory)")
        key = f"<table {id(v):x}>.hkl"
        files[key] = v.hkl_text()
        return ["-hkl", key]
    if isinstance(v, (str, bytes)) or hasattr(v, "__fspath__"):
        return ["-hkl", os.fsdecode(v)]
    raise _bad(owner, name, f"expected a StructureFactors, a dict {{(h, k, l): F}} or an -hkl path, got {type(v).__name__}")


#: The names of the in-memory files the typed configuration passes to the crate (``Crystal.F``'s
#: table, ``Beam.sources``' rows: ``_f_words``, ``_sources_words``), as the crate's messages
#: say them.
_MEM_FILE = re.compile(r"(?:cannot read file )?'?<(table [0-9a-f]+>\.hkl|sources \d+>\.txt)'?(: )?")


def _mem_field(key: str) -> str:
    return "Crystal.F" if key.startswith("table ") else "Beam.sources"


def field_of_file(name: Optional[str]) -> Optional[str]:
    """The configuration field whose value the crate read as the in-memory file ``name``
    (``"<table 7f…>.hkl"`` → ``"Crystal.F"``), if it is one."""
    m = _MEM_FILE.fullmatch(name) if name else None
    return _mem_field(m.group(1)) if m else None


def mem_field_in(message: str) -> Optional[str]:
    """The field of the first in-memory file ``message`` names, if any."""
    m = _MEM_FILE.search(message)
    return _mem_field(m.group(1)) if m else None


def name_mem_files(message: str) -> str:
    """``message`` with the in-memory files of the typed configuration said as their fields:
    ``<table 7f…>.hkl: Miller indices span …`` → ``Crystal.F: Miller indices span …``, and
    ``cannot read file '<table 7f…>.hkl': N bytes, more than …`` → ``Crystal.F: as text, N
    bytes, more than …``."""
    def field(m: "re.Match[str]") -> str:
        f = _mem_field(m.group(1))
        if m.group(0).startswith("cannot read file "):
            return f"{f}: as text, " if m.group(2) else f
        return f + (m.group(2) or "")

    return _MEM_FILE.sub(field, message)


def _sources_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    """Sources: an -sourcefile path, or rows (x, y, z, weight, lambda_m)."""
    if isinstance(v, (str, bytes)) or hasattr(v, "__fspath__"):
        return ["-sourcefile", os.fsdecode(v)]
    if files is None:
        raise _bad(owner, name, "a source list needs the Simulator (it passes it in memory)")
    lines = []
    try:
        rows = list(v)
    except TypeError:
        raise _bad(owner, name, f"expected a path or rows (x, y, z, weight, lambda_m), got {_show(v)}") from None
    if not rows:
        raise _bad(owner, name, "no sources: expected at least one row (x, y, z, weight, lambda_m)")
    for i, row in enumerate(rows):
        words = _seq(owner, name, row, 5)
        if not all(math.isfinite(float(x)) for x in words):
            raise _bad(owner, name, f"row {i} {[float(x) for x in words]}: expected finite numbers")
        lines.append(" ".join(words))
    key = f"<sources {len(files)}>.txt"
    files[key] = ("\n".join(lines) + "\n").encode()
    return ["-sourcefile", key]


def _shape_words(owner: str, name: str, v: Any, files: Optional[Files]) -> list[str]:
    if v not in SHAPES:
        raise _bad(owner, name, f"expected one of {', '.join(map(repr, SHAPES))}, got {_show(v)}")
    return [_SHAPE_FLAGS[v]]


# ---- generated by crate/tests/generated.rs from the crate's field table (crate/src/args/fields.rs).
# ---- Do not edit: change the table and run `UPDATE_GENERATED=1 cargo test --release --test generated`.


@dataclass
class Crystal(_Config):
    """The crystal: cell or orientation matrix, misset, size, shape, mosaicity, goniometer and
    structure factors."""

    cell_A_deg: Optional[Sequence[float]] = _f("-cell", "vec", 6)
    """a, b, c (Å, > 0), α, β, γ (degrees, between 0 and 180)."""
    mat_file: Optional[PathLike] = _f("-mat", "file")
    """MOSFLM orientation matrix file (A = UB, λ-scaled Å⁻¹)."""
    misset_deg: Optional[Union[Vec3, str]] = _f("-misset", "special", words=_misset_words)
    """Rotation about x, then y, then z (degrees), or ``"random"``."""
    rotation: Optional[Sequence[Sequence[float]]] = _f("-misset", "special", words=_rotation_words)
    """Orientation as a rotation matrix U (row-major, U = Rz·Ry·Rx): the misset angles of U."""
    misset_seed: Optional[int] = _f("-misset_seed", "int")
    N: Optional[Union[float, Vec3]] = _f("-N", "special", words=_n_words, also=("-Na", "-Nb", "-Nc"))
    """Unit cells along each axis (one number) or along a, b, c."""
    size_mm: Optional[float] = _f("-xtalsize")
    thick_mm: Optional[float] = _f("-xtal_thick")
    width_mm: Optional[float] = _f("-xtal_width")
    height_mm: Optional[float] = _f("-xtal_height")
    shape: Optional[Shape] = _f("", "special", words=_shape_words, also=("-square_xtal", "-round_xtal", "-gauss_xtal", "-tophat_spots"))
    """``"square"`` (default), ``"round"``, ``"gauss"`` or ``"tophat"``."""
    fudge: Optional[float] = _f("-fudge")
    mosaic_spread_deg: Optional[float] = _f("-mosaic")
    mosaic_domains: Optional[int] = _f("-mosaic_dom", "int")
    mosaic_seed: Optional[int] = _f("-mosaic_seed", "int")
    phi_deg: Optional[float] = _f("-phi")
    osc_deg: Optional[float] = _f("-osc")
    phistep_deg: Optional[float] = _f("-phistep")
    phisteps: Optional[int] = _f("-phisteps", "int")
    spindle_axis: Optional[Vec3] = _f("-spindle_axis", "vec", 3)
    F: Any = _f("-hkl", "special", words=_f_words)
    """Structure factors: :class:`nanobragg.StructureFactors`, ``{(h, k, l): F}`` or an -hkl path."""
    model: Optional[PathLike] = _f("-pdb", "file")
    """Atomic model (PDB/mmCIF path): structure factors to the detector's reach (or ``dmin_A``)."""
    default_F: Optional[float] = _f("-default_F")
    fdump_file: Optional[PathLike] = _f("-dump", "file")
    """Upstream's structure-factor cache (``-dump``), read when no F or model is given. The
    typed configuration reads none unless it is named here (the CLI reads ``./Fdump.bin``)."""
    interpolate: Optional[bool] = _f("-interpolate", "switch", off="-nointerpolate")


@dataclass
class Beam(_Config):
    """The beam: wavelength, spectrum, divergence, polarisation, fluence, sources."""

    wavelength_A: Optional[float] = _f("-lambda")
    energy_eV: Optional[float] = _f("-energy")
    dispersion_pct: Optional[float] = _f("-dispersion")
    dispsteps: Optional[int] = _f("-dispsteps", "int")
    divergence_mrad: Optional[float] = _f("-divergence")
    hdivrange_mrad: Optional[float] = _f("-hdivrange")
    vdivrange_mrad: Optional[float] = _f("-vdivrange")
    hdivstep_mrad: Optional[float] = _f("-hdivstep")
    vdivstep_mrad: Optional[float] = _f("-vdivstep")
    divsteps: Optional[int] = _f("-divsteps", "int")
    hdivsteps: Optional[int] = _f("-hdivsteps", "int")
    vdivsteps: Optional[int] = _f("-vdivsteps", "int")
    round_div: Optional[bool] = _f("-round_div", "switch", off="-square_div")
    sources: Any = _f("-sourcefile", "special", words=_sources_words)
    """An -sourcefile path, or rows (x, y, z, weight, λ in m)."""
    beam_vector: Optional[Vec3] = _f("-beam_vector", "vec", 3)
    polar_vector: Optional[Vec3] = _f("-polar_vector", "vec", 3)
    polarization: Optional[float] = _f("-polar")
    """Kahn polarisation factor K, -1 to 1."""
    nopolar: Optional[bool] = _f("-nopolar", "switch")
    fluence_ph_per_m2: Optional[float] = _f("-fluence")
    flux_ph_per_s: Optional[float] = _f("-flux")
    exposure_s: Optional[float] = _f("-exposure")
    beamsize_mm: Optional[float] = _f("-beamsize")
    water_um: Optional[float] = _f("-water")


@dataclass
class Detector(_Config):
    """The detector: convention, preset, distance, beam centre, pixels, tilts, sensor."""

    convention: Optional[Convention] = _f("", "choice", choices=CONVENTIONS, also=("-mosflm", "-xds", "-adxv", "-denzo", "-dials"))
    preset: Optional[str] = _f("-detector", "text")
    """A real detector: ``"pilatus6m"``, ``"eiger2-16m"``, ``"eiger2-4m"``, ``"mx300"``."""
    pixel_mm: Optional[float] = _f("-pixel")
    pixels: Optional[Union[int, Tuple[int, int]]] = _f("-detpixels", "special", words=_pixels_words, also=("-detpixels_f", "-detpixels_s"))
    """Pixels per side, or (fast, slow)."""
    size_mm: Optional[float] = _f("-detsize")
    distance_mm: Optional[float] = _f("-distance")
    close_distance_mm: Optional[float] = _f("-close_distance")
    beam_center_mm: Optional[Tuple[float, float]] = _f("-Xbeam", "special", words=_pair_words("-Xbeam", "-Ybeam"), also=("-Ybeam",))
    """(Xbeam, Ybeam) in the convention's axes."""
    close_center_mm: Optional[Tuple[float, float]] = _f("-Xclose", "special", words=_pair_words("-Xclose", "-Yclose"), also=("-Yclose",))
    org_px: Optional[Tuple[float, float]] = _f("-ORGX", "special", words=_pair_words("-ORGX", "-ORGY"), also=("-ORGY",))
    pivot: Optional[Pivot] = _f("-pivot", "choice", choices=("sample", "beam"))
    fdet_vector: Optional[Vec3] = _f("-fdet_vector", "vec", 3)
    sdet_vector: Optional[Vec3] = _f("-sdet_vector", "vec", 3)
    odet_vector: Optional[Vec3] = _f("-odet_vector", "vec", 3)
    twotheta_axis: Optional[Vec3] = _f("-twotheta_axis", "vec", 3)
    twotheta_deg: Optional[float] = _f("-twotheta")
    rotx_deg: Optional[float] = _f("-detector_rotx")
    roty_deg: Optional[float] = _f("-detector_roty")
    rotz_deg: Optional[float] = _f("-detector_rotz")
    curved: Optional[bool] = _f("-curved_det", "switch")
    point_pixel: Optional[bool] = _f("-point_pixel", "switch")
    absorption_depth_um: Optional[float] = _f("-detector_abs")
    thickness_um: Optional[float] = _f("-detector_thick")
    thicksteps: Optional[int] = _f("-detector_thicksteps", "int")
    oversample: Optional[int] = _f("-oversample", "int")
    oversample_thick: Optional[bool] = _f("-oversample_thick", "switch")
    oversample_polar: Optional[bool] = _f("-oversample_polar", "switch")
    oversample_omega: Optional[bool] = _f("-oversample_omega", "switch")
    roi: Optional[Tuple[int, int, int, int]] = _f("-roi", "special", words=_roi_words)
    dmin_A: Optional[float] = _f("-dmin")
    mask_file: Optional[PathLike] = _f("-mask", "file")
    img_file: Optional[PathLike] = _f("-img", "file")


class Overrides(TypedDict, total=False):
    """The keyword overrides of :meth:`Simulator.render` (and ``vjp``, ``fit``, ``predict``,
    ``render_many``): the fields of :class:`Crystal`, :class:`Beam` and :class:`Detector` by
    name (a name two classes share with its class's prefix: ``crystal_size_mm``,
    ``detector_size_mm``), and ``precision``/``backend``. A type checker (mypy, pyright) refuses
    a misspelt keyword; at run time an unknown name is a ``TypeError`` naming the nearest."""

    cell_A_deg: Optional[Sequence[float]]
    mat_file: Optional[PathLike]
    misset_deg: Optional[Union[Vec3, str]]
    rotation: Optional[Sequence[Sequence[float]]]
    misset_seed: Optional[int]
    N: Optional[Union[float, Vec3]]
    crystal_size_mm: Optional[float]
    thick_mm: Optional[float]
    width_mm: Optional[float]
    height_mm: Optional[float]
    shape: Optional[Shape]
    fudge: Optional[float]
    mosaic_spread_deg: Optional[float]
    mosaic_domains: Optional[int]
    mosaic_seed: Optional[int]
    phi_deg: Optional[float]
    osc_deg: Optional[float]
    phistep_deg: Optional[float]
    phisteps: Optional[int]
    spindle_axis: Optional[Vec3]
    F: Optional[Any]
    model: Optional[PathLike]
    default_F: Optional[float]
    fdump_file: Optional[PathLike]
    interpolate: Optional[bool]
    wavelength_A: Optional[float]
    energy_eV: Optional[float]
    dispersion_pct: Optional[float]
    dispsteps: Optional[int]
    divergence_mrad: Optional[float]
    hdivrange_mrad: Optional[float]
    vdivrange_mrad: Optional[float]
    hdivstep_mrad: Optional[float]
    vdivstep_mrad: Optional[float]
    divsteps: Optional[int]
    hdivsteps: Optional[int]
    vdivsteps: Optional[int]
    round_div: Optional[bool]
    sources: Optional[Any]
    beam_vector: Optional[Vec3]
    polar_vector: Optional[Vec3]
    polarization: Optional[float]
    nopolar: Optional[bool]
    fluence_ph_per_m2: Optional[float]
    flux_ph_per_s: Optional[float]
    exposure_s: Optional[float]
    beamsize_mm: Optional[float]
    water_um: Optional[float]
    convention: Optional[Convention]
    preset: Optional[str]
    pixel_mm: Optional[float]
    pixels: Optional[Union[int, Tuple[int, int]]]
    detector_size_mm: Optional[float]
    distance_mm: Optional[float]
    close_distance_mm: Optional[float]
    beam_center_mm: Optional[Tuple[float, float]]
    close_center_mm: Optional[Tuple[float, float]]
    org_px: Optional[Tuple[float, float]]
    pivot: Optional[Pivot]
    fdet_vector: Optional[Vec3]
    sdet_vector: Optional[Vec3]
    odet_vector: Optional[Vec3]
    twotheta_axis: Optional[Vec3]
    twotheta_deg: Optional[float]
    rotx_deg: Optional[float]
    roty_deg: Optional[float]
    rotz_deg: Optional[float]
    curved: Optional[bool]
    point_pixel: Optional[bool]
    absorption_depth_um: Optional[float]
    thickness_um: Optional[float]
    thicksteps: Optional[int]
    oversample: Optional[int]
    oversample_thick: Optional[bool]
    oversample_polar: Optional[bool]
    oversample_omega: Optional[bool]
    roi: Optional[Tuple[int, int, int, int]]
    dmin_A: Optional[float]
    mask_file: Optional[PathLike]
    img_file: Optional[PathLike]
    precision: Precision
    backend: Backend
# ---- end of the generated fields


_CLASSES: tuple[type, ...] = (Crystal, Beam, Detector)
# A keyword names one field: a name that two classes share (``size_mm``: the crystal's and the
# detector's) is taken only with its class's prefix (``crystal_size_mm``, ``detector_size_mm``).
_OWNERS: dict[str, list[tuple[type, "dataclasses.Field[Any]"]]] = {}
for _cls in _CLASSES:
    for _fld in dataclasses.fields(_cls):
        _OWNERS.setdefault(_fld.name, []).append((_cls, _fld))
# field names of more than one class -> the keywords that name each
AMBIGUOUS = {n: [f"{c.__name__.lower()}_{n}" for c, _ in o] for n, o in _OWNERS.items() if len(o) > 1}
_FIELDS: dict[str, tuple[type, "dataclasses.Field[Any]"]] = {}
for _n, _o in _OWNERS.items():
    for _cls, _fld in _o:
        _FIELDS[f"{_cls.__name__.lower()}_{_n}" if _n in AMBIGUOUS else _n] = (_cls, _fld)
# flag -> the field that writes it (errors name the field): each field's flag, its switch-off
# flag, its mapped choices and the further flags it writes (``also``: the table's)
_FLAG_FIELD: dict[str, str] = {}
for _cls in _CLASSES:
    for _fld in dataclasses.fields(_cls):
        for _fl in [_fld.metadata["flag"], _fld.metadata.get("off"), *_fld.metadata.get("map", {}).values(),
                    *_fld.metadata.get("also", ())]:
            if _fl:
                _FLAG_FIELD.setdefault(_fl, f"{_cls.__name__}.{_fld.name}")


def field_of_flag(flag: Optional[str]) -> Optional[str]:
    """The configuration field (``"Beam.wavelength_A"``) that writes ``flag``, if any."""
    return _FLAG_FIELD.get(flag) if flag else None


def override_words(overrides: Mapping[str, Any], files: Optional[Files] = None, where: str = "render") -> list[str]:
    """Words for keyword overrides named like the fields of Crystal, Beam and Detector
    (``misset_deg=(1, 2, 3)``, ``phi_deg=10``, ``fluence_ph_per_m2=1e24``...), and
    ``precision``/``backend``."""
    out: list[str] = []
    for name, v in overrides.items():
        if name in ("precision", "backend"):
            out += _port_words(name, v)
            continue
        if name in AMBIGUOUS:
            raise TypeError(f"{where}(): {name!r} is a field of {' and of '.join(c.__name__ for c, _ in _OWNERS[name])}: "
                            f"say {' or '.join(map(repr, AMBIGUOUS[name]))}")
        if name not in _FIELDS:
            near = difflib.get_close_matches(name, [*_FIELDS, "precision", "backend"], n=2)
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r} (not a field of Crystal, Beam or Detector){hint}")
        cls, f = _FIELDS[name]
        if v is None:
            continue
        out += _field_words(cls.__name__, f, v, files)
    return out


def _port_words(name: str, v: Any) -> list[str]:
    choices = {"precision": ("f64", "f32"), "backend": ("auto", "cpu", "gpu")}[name]
    if v not in choices:
        raise _bad("Simulator", name, f"expected one of {', '.join(map(repr, choices))}, got {_show(v)}")
    return ["-" + name, v]
