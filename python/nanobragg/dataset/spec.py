"""The dataset description: a TOML file, read with :mod:`tomllib` (``tomli`` before 3.11) and
validated completely before anything is rendered. Every error is a :class:`SpecError` (a
``ValueError``) whose message starts with the file and the dotted key it concerns.

See ``docs/datasets.md`` for the format; in short::

    [dataset]                 # required
    n_images = 1000           # 1 .. MAX_IMAGES
    shard_size = 100          # images per shard file
    seed = 42                 # master seed: every image's parameters and seeds derive from it
    format = "nxmx"           # "nxmx" (one NeXus/HDF5 file per shard + master.h5) or "npz"
    scale = 1.0               # nxmx only: counts = round(photons * scale), stored as int32
    output = "out"            # the dataset's folder (relative to the spec file)
    predict = false           # also store each image's predicted reflections (shards only)
    still = true              # nxmx: frames as stills (default unless vary.rotation: sweeps)
    compression = "bslz4"     # nxmx frames: "deflate" (shuffle + deflate) or "bslz4" (bitshuffle + LZ4);
                              # default: "bslz4" with chain.noise, else "deflate"

    [base]                    # the experiment: upstream flag words and/or the typed configuration
    args = "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -lambda 1 -distance 100 -detpixels 128"
    precision = "f32"         # "f32" | "f64"
    backend = "cpu"           # "cpu" | "gpu" | "auto"
    threads = 1               # CPU threads per worker
    [base.crystal]            # fields of nanobragg.Crystal (cell_A_deg, N, mosaic_spread_deg, ...)
    [base.beam]               # fields of nanobragg.Beam
    [base.detector]           # fields of nanobragg.Detector

    [vary]                    # what changes from image to image
    orientation = "uniform"   # uniform on SO(3) (or "fixed")
    rotation = { start_deg = 0, width_deg = 0.5, count = 90 }   # rotation series of `count` frames
    wavelength_A = { dist = "uniform", low = 0.97, high = 1.03 }   # nxmx: one λ per frame
    cell_A_deg = { dist = "normal", mean = [78, 78, 38, 90, 90, 90], sd = [0.5, 0.5, 0.3, 0, 0, 0] }
    N = { dist = "grid", values = [5, 10, 20] }
    model = { dist = "choice", values = ["a.pdb", "b.cif"] }

    [chain]                   # the realistic chain (optional)
    background = "-stol water.stol -thick 0.1 ..."   # nonBragg words: one background per dataset
    noise = "-readout_noise 3 -psf_fwhm 50"           # noisify words; a seed per image is added
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - CPython 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

from ..config import AMBIGUOUS, Beam, Crystal, Detector

__all__ = ["SpecError", "Spec", "Variation", "load_spec", "parse_spec", "MAX_IMAGES", "MAX_BYTES"]

MAX_IMAGES = 10_000_000
"""The largest dataset a description may ask for (images)."""
MAX_BYTES = 64 * 2**40
"""The largest uncompressed image data a description may ask for (64 TiB)."""
MAX_SHARD_BYTES = 16 * 2**30
"""The largest uncompressed shard (16 GiB): a worker holds one shard's images in memory."""

FORMATS = ("nxmx", "npz")
COMPRESSIONS = ("deflate", "bslz4")
"""NXmx frames' filters: shuffle + deflate (every HDF5 reader), bitshuffle + LZ4 (EIGER's; a
reader needs the bitshuffle plugin)."""
DETECTOR_GEOMETRY = ("distance_mm", "beam_center_mm", "twotheta_deg", "rotx_deg", "roty_deg", "rotz_deg")
"""Varied parameters that move the detector: npz only (NXmx readers take one detector per file)."""
DISTS = ("uniform", "normal", "lognormal", "choice", "grid")

_FIELDS = {f.name: (cls.__name__, f) for cls in (Crystal, Beam, Detector) for f in dataclasses.fields(cls)}

# varied parameters: the typed configuration's field -> (components, lower bound, upper bound,
# strict lower). A drawn value outside these bounds is impossible; distributions that could draw
# one are refused (normal: mean ± 6 sd inside the bounds).
VARIABLE = {
    "cell_A_deg": (6, [0, 0, 0, 0, 0, 0], [math.inf] * 3 + [180] * 3),
    "N": (None, 0, math.inf),
    "mosaic_spread_deg": (1, 0, 90),
    "mosaic_domains": (1, 1, math.inf),
    "distance_mm": (1, 0, math.inf),
    "beam_center_mm": (2, -math.inf, math.inf),
    "wavelength_A": (1, 0, math.inf),
    "energy_eV": (1, 0, math.inf),
    "fluence_ph_per_m2": (1, 0, math.inf),
    "flux_ph_per_s": (1, 0, math.inf),
    "exposure_s": (1, 0, math.inf),
    "dispersion_pct": (1, 0, 100),
    "divergence_mrad": (1, 0, math.inf),
    "crystal_size_mm": (1, 0, math.inf),
    "phi_deg": (1, -math.inf, math.inf),
    "twotheta_deg": (1, -180, 180),
    "rotx_deg": (1, -180, 180),
    "roty_deg": (1, -180, 180),
    "rotz_deg": (1, -180, 180),
    "water_um": (1, 0, math.inf),
    "polarization": (1, -1, 1),
}
# lower bounds that are themselves impossible (a zero distance, cell edge, wavelength...)
_OPEN_LOW = {"cell_A_deg", "N", "distance_mm", "wavelength_A", "energy_eV", "fluence_ph_per_m2",
             "flux_ph_per_s", "exposure_s", "crystal_size_mm"}
_INTEGER = {"mosaic_domains"}
# the logarithms of the largest and least positive (subnormal) double: a lognormal beyond
# them draws inf or 0
_LOG_MAX = math.log(1.7976931348623157e308)
_LOG_MIN = math.log(5e-324)
_MAX_INT = int(sys.float_info.max)


class SpecError(ValueError):
    """A dataset description that cannot be rendered; ``key`` is the dotted key, ``file`` the
    description, ``line`` the line (from 1) where the key is written, or for a key that is not
    (a missing one, one within an inline table) the nearest table or key around it; None when
    nothing of it is in the text (a missing table, the file itself)."""

    def __init__(self, file: str, key: str, why: str, line: Optional[int] = None):
        where = f"{file} line {line}" if line else file
        super().__init__(f"{where}: {key}: {why}")
        self.file = file
        self.key = key
        self.why = why
        self.line = line

    def __reduce__(self) -> Tuple[Any, ...]:
        # (a worker process's error reaches the pool's caller pickled)
        return (SpecError, (self.file, self.key, self.why, self.line))

    def located(self, text: str) -> "SpecError":
        """This error with the line of its key in the description ``text``."""
        if self.line is not None:
            return self
        return SpecError(self.file, self.key, self.why, key_line(text, self.key))


_BARE = r"[A-Za-z0-9_-]+"
_PART = rf"(?:{_BARE}|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
_DOTTED = re.compile(rf"^\s*({_PART}(?:\s*\.\s*{_PART})*)\s*")


def _dotted(m: "re.Match[str]") -> List[str]:
    return [p.strip().strip("\"'") for p in re.findall(_PART, m.group(1))]


def _value_end(line: str, i: int, depth: int) -> Tuple[Optional[str], int]:
    """Scans a TOML value from ``line[i:]`` to the line's end (strings, brackets, a comment):
    the multi-line string it leaves open (its quotes, or None), and the depth of the arrays
    and inline tables it leaves open (``depth``: those open before the line)."""
    n = len(line)
    while i < n:
        c = line[i]
        if c == "#":
            break
        if c in "\"'":
            q3 = c * 3
            if line.startswith(q3, i):
                end = _string_end(line, i + 3, q3)
                if end is None:
                    return q3, depth
                i = end
                continue
            end = _string_end(line, i + 1, c)
            i = end if end is not None else n
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1
    return None, depth


def _string_end(line: str, i: int, quote: str) -> Optional[int]:
    """Where the string whose body starts at ``line[i]`` ends (after its closing ``quote``,
    ``"`` and ``\"\"\"`` with backslash escapes), or None when it does not on this line."""
    escapes = quote[0] == '"'
    n = len(line)
    while i < n:
        if escapes and line[i] == "\\":
            i += 2
            continue
        if line.startswith(quote, i):
            i += len(quote)
            # a multi-line string may end with one or two quotes of its own before its closing three
            if len(quote) == 3:
                k = 0
                while k < 2 and i < n and line[i] == quote[0]:
                    i += 1
                    k += 1
            return i
        i += 1
    return None


def key_line(text: str, key: str) -> Optional[int]:
    """The line (from 1) of TOML ``text`` where the dotted ``key`` is written: its assignment
    or table header; for a key within an inline table or a missing key, the line of the nearest
    enclosing key or table that is written (tomllib gives no positions: a scan of the lines, as
    TOML's grammar puts every key or header at the start of a line, outside multi-line strings
    and arrays; lines are TOML's, ended by a newline alone)."""
    want = key.split(".")
    best, line = 0, None
    table: List[str] = []
    quote: Optional[str] = None  # a multi-line string open at the line's start
    depth = 0  # arrays and inline tables open at the line's start
    for n, raw in enumerate(text.split("\n"), 1):
        if quote is not None:
            # inside a multi-line string: until its closing quotes, then the rest of the value
            end = _string_end(raw, 0, quote)
            if end is None:
                continue
            quote, depth = _value_end(raw, end, depth)
            continue
        if depth:
            # inside a multi-line array
            quote, depth = _value_end(raw, 0, depth)
            continue
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("["):
            m = _DOTTED.match(s.lstrip("[").lstrip())
            if not m:
                continue
            table = path = _dotted(m)
        else:
            m = _DOTTED.match(s)
            if not m or not s[m.end():].startswith("="):
                continue
            path = table + _dotted(m)
            quote, depth = _value_end(s, m.end() + 1, 0)
        # how much of the key this line writes: the key itself (or a table inside it: its first
        # line), else a table or key that encloses it
        if path[:len(want)] == want:
            d = len(want)
        elif want[:len(path)] == path:
            d = len(path)
        else:
            continue
        if d > best:
            best, line = d, n
    return line


@dataclass(frozen=True)
class Variation:
    """One varied parameter: ``name`` (a Crystal/Beam/Detector field, or ``model``), its
    distribution and the distribution's numbers (per component for vectors)."""

    name: str
    dist: str
    n: Optional[int]  # components (None: a scalar)
    low: Any = None
    high: Any = None
    mean: Any = None
    sd: Any = None
    values: Tuple[Any, ...] = ()


@dataclass(frozen=True)
class Rotation:
    start_deg: float
    width_deg: float
    count: int


@dataclass(frozen=True)
class Spec:
    """A validated dataset description (see the module's docstring)."""

    path: str
    n_images: int
    shard_size: int
    seed: int
    format: str
    scale: float
    output: str
    args: Tuple[str, ...]
    crystal: Dict[str, Any]
    beam: Dict[str, Any]
    detector: Dict[str, Any]
    precision: str
    backend: str
    threads: Optional[int]
    orientation: str
    rotation: Optional[Rotation]
    variations: Tuple[Variation, ...]
    background: Optional[str]
    noise: Optional[str]
    predict: bool = False
    still: bool = True
    """NXmx frames written as stills (no rotation scan); false: each rotation series a sweep."""
    compression: str = "deflate"
    """NXmx frames' filters (``COMPRESSIONS``): "deflate" or "bslz4"; unsaid, "bslz4" with
    ``chain.noise`` and "deflate" without (:func:`default_compression`)."""
    compression_given: bool = True
    """``dataset.compression`` was in the description (False: :func:`default_compression`)."""
    text: str = field(repr=False, default="")
    """The description's text (stored in every shard and the manifest)."""

    @property
    def n_shards(self) -> int:
        return -(-self.n_images // self.shard_size)

    def shard_range(self, shard: int) -> range:
        if not 0 <= shard < self.n_shards:
            raise IndexError(f"shard {shard} is not in 0..{self.n_shards - 1}")
        return range(shard * self.shard_size, min(self.n_images, (shard + 1) * self.shard_size))

    @property
    def varied_names(self) -> List[str]:
        return [v.name for v in self.variations]


def load_spec(path: str, *, output: Optional[str] = None) -> Spec:
    """Reads and validates the description at ``path`` (``output`` overrides ``dataset.output``)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise SpecError(os.fspath(path), "(file)", f"cannot read: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(os.fspath(path), "(file)", f"not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}") from None
    return parse_spec(text, path=os.fspath(path), output=output)


def parse_spec(text: str, *, path: str = "<spec>", output: Optional[str] = None) -> Spec:
    """Validates a description given as TOML text; an error names the line of its key."""
    try:
        return _parse_spec(text, path, output)
    except SpecError as e:
        raise e.located(text) from None


def _parse_spec(text: str, path: str, output: Optional[str]) -> Spec:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        at = re.search(r"\(at line (\d+), column \d+\)", str(e))
        raise SpecError(path, "(toml)", str(e), int(at.group(1)) if at else None) from None
    except RecursionError:
        # tomllib reads nested arrays and inline tables recursively
        raise SpecError(path, "(toml)", "arrays or tables nested too deeply") from None
    except ValueError as e:
        # int() of a decimal integer beyond Python's 4300 digits (sys.get_int_max_str_digits)
        at = re.search(r"[0-9_]{4300,}", text)
        why = "an integer of more than 4300 digits" if at else str(e)
        raise SpecError(path, "(toml)", why, text.count("\n", 0, at.start()) + 1 if at else None) from None
    _check_magnitudes(path, doc, "")
    v = _Validator(path)
    v.keys(doc, "", {"dataset", "base", "vary", "chain"})
    ds = v.table(doc, "dataset", required=True)
    v.keys(ds, "dataset", {"n_images", "shard_size", "seed", "format", "scale", "output", "predict", "still", "compression"})
    n_images = v.integer(ds, "dataset.n_images", required=True, low=1, high=MAX_IMAGES)
    shard_size = v.integer(ds, "dataset.shard_size", default=min(n_images, 100), low=1, high=n_images)
    seed = v.integer(ds, "dataset.seed", required=True, low=0, high=2**63 - 1)
    fmt = v.choice(ds, "dataset.format", FORMATS, default="nxmx")
    compression = v.choice(ds, "dataset.compression", COMPRESSIONS, default=None)
    if "compression" in ds and fmt != "nxmx":
        raise SpecError(path, "dataset.compression", f"applies to NXmx frames only (dataset.format = {fmt!r})")
    scale = v.number(ds, "dataset.scale", default=1.0, low=0, open_low=True)
    out = output if output is not None else v.text(ds, "dataset.output", default="out")
    if output is None and (not out or "\0" in out):
        # (an empty path is no folder; a NUL byte cannot be in one: os.makedirs' ValueError)
        raise SpecError(path, "dataset.output", f"expected a folder's path, got {out!r}")
    predict = ds.get("predict", False)
    if not isinstance(predict, bool):
        raise SpecError(path, "dataset.predict", f"expected true or false, got {predict!r}")
    if not os.path.isabs(out) and path != "<spec>":
        out = os.path.join(os.path.dirname(os.path.abspath(path)), out)

    base = v.table(doc, "base", required=True)
    v.keys(base, "base", {"args", "crystal", "beam", "detector", "precision", "backend", "threads"})
    args = base.get("args", "")
    if isinstance(args, str):
        from .. import _nanobragg

        args = tuple(_nanobragg.split_args(args))
    elif isinstance(args, list) and all(isinstance(a, str) for a in args):
        args = tuple(args)
    else:
        raise SpecError(path, "base.args", "expected a string of flag words or a list of strings")
    _check_last_flag(path, args)
    parts = {}
    for name, cls in (("crystal", Crystal), ("beam", Beam), ("detector", Detector)):
        t = v.table(base, name, key_name=f"base.{name}")
        known = {f.name for f in dataclasses.fields(cls)}
        v.keys(t, f"base.{name}", known)
        parts[name] = dict(t)
    precision = v.choice(base, "base.precision", ("f32", "f64"), default="f32")
    backend = v.choice(base, "base.backend", ("cpu", "gpu", "auto"), default="cpu")
    threads = v.integer(base, "base.threads", default=None, low=1, high=4096)

    vary = v.table(doc, "vary")
    orientation = "fixed"
    rotation = None
    variations = []
    for key, val in vary.items():
        k = f"vary.{key}"
        if key == "orientation":
            if val not in ("uniform", "fixed"):
                raise SpecError(path, k, f"expected \"uniform\" (random on SO(3)) or \"fixed\", got {val!r}")
            orientation = val
        elif key == "rotation":
            t = v.table(vary, "rotation", key_name=k)
            v.keys(t, k, {"start_deg", "width_deg", "count"})
            rotation = Rotation(
                v.number(t, f"{k}.start_deg", default=0.0),
                v.number(t, f"{k}.width_deg", required=True, low=0, open_low=True, high=360),
                v.integer(t, f"{k}.count", required=True, low=1, high=n_images),
            )
            if n_images % rotation.count:
                raise SpecError(path, f"{k}.count", f"{rotation.count} frames do not divide dataset.n_images = {n_images} into whole series")
        elif key == "model" or key in VARIABLE:
            variations.append(v.variation(vary, key))
        elif key in AMBIGUOUS:
            raise SpecError(path, k, f"{key} names a field of more than one class: say {' or '.join(AMBIGUOUS[key])}")
        elif key in _FIELDS:
            raise SpecError(path, k, f"{_FIELDS[key][0]}.{key} cannot be varied (variable: orientation, rotation, model, {', '.join(sorted(VARIABLE))})")
        else:
            raise SpecError(path, k, f"unknown key (variable: orientation, rotation, model, {', '.join(sorted(VARIABLE))})")
    if rotation is not None and any(x.name == "phi_deg" for x in variations):
        raise SpecError(path, "vary.phi_deg", "cannot vary together with vary.rotation (which sets φ)")

    still = ds.get("still", rotation is None)
    if not isinstance(still, bool):
        raise SpecError(path, "dataset.still", f"expected true or false, got {still!r}")
    if not still and rotation is None:
        raise SpecError(path, "dataset.still", "false (a rotation sweep) needs vary.rotation")

    chain = v.table(doc, "chain")
    v.keys(chain, "chain", {"background", "noise"})
    background = v.text(chain, "chain.background", default=None)
    noise = v.text(chain, "chain.noise", default=None)
    if background is not None:
        geo = [x.name for x in variations if x.name in ("distance_mm", "beam_center_mm", "wavelength_A", "energy_eV", "rotx_deg", "roty_deg", "rotz_deg", "twotheta_deg")]
        if geo:
            raise SpecError(path, "chain.background", f"one background serves the whole dataset: it cannot be combined with a varied geometry (vary.{geo[0]})")

    if fmt == "nxmx":
        geo = [x.name for x in variations if x.name in DETECTOR_GEOMETRY]
        if geo:
            raise SpecError(path, f"vary.{geo[0]}", "a per-image detector geometry cannot be written to NXmx shards "
                            "(dxtbx reads the detector of the first frame only): keep it fixed, or use "
                            "dataset.format = \"npz\"")

    spec = Spec(path=path, n_images=n_images, shard_size=shard_size, seed=seed, format=fmt, scale=scale,
                output=out, args=args, crystal=parts["crystal"], beam=parts["beam"],
                detector=parts["detector"], precision=precision, backend=backend, threads=threads,
                orientation=orientation, rotation=rotation, variations=tuple(variations), background=background,
                noise=noise, predict=predict, still=still,
                compression=compression or default_compression(fmt, noise), compression_given=compression is not None,
                text=text)
    _check_base(spec)
    return spec


def _check_magnitudes(path: str, t: Any, key: str) -> None:
    """No integer of the description is beyond the largest floating-point number (1.8e308): no
    key takes one, and one cannot become a float (OverflowError) nor, beyond 4300 digits, be
    written in a message (ValueError). ``key``: the dotted key of ``t``. (A walk without
    recursion: arrays may nest as deep as tomllib reads them.)"""
    todo = [(key, t)]
    while todo:
        key, t = todo.pop()
        if isinstance(t, dict):
            todo += [(f"{key}.{k}" if key else k, v) for k, v in reversed(t.items())]
        elif isinstance(t, list):
            todo += [(key, v) for v in reversed(t)]
        elif isinstance(t, int) and not isinstance(t, bool) and abs(t) > _MAX_INT:
            raise SpecError(path, key, "an integer beyond the largest number a description takes (1.8e308)")


def default_compression(fmt: str, noise: Optional[str]) -> str:
    """The NXmx frames' filters when ``dataset.compression`` is unsaid: bitshuffle + LZ4 for
    noisy frames (6–13× less CPU to write than deflate, files about as small), shuffle + deflate
    without noise (mostly empty frames: about 3× smaller; every HDF5 reader, no plugin)."""
    return "bslz4" if fmt == "nxmx" and noise is not None else "deflate"


def _check_last_flag(path: str, args: Sequence[str]) -> None:
    """``base.args`` may not end with a flag short of its values: the words of the rest of
    [base] (the typed configuration, precision, backend, threads) follow them, and the crate
    would read those as its values (``-N: expected an integer, found '-precision'``)."""
    from .. import _nanobragg

    table: Dict[str, Dict[str, Any]] = {}
    for f in _nanobragg.flag_table():
        for name in [f["name"], *f["aliases"]]:
            table[name] = f
    for k in range(len(args) - 1, -1, -1):
        last = table.get(args[k])
        if last is not None:
            given = len(args) - 1 - k
            if given < last["min_values"]:
                raise SpecError(path, "base.args", f"ends with {args[k]}, which takes {last['values']}: give its "
                                f"value{'s' if last['min_values'] > 1 else ''}")
            return


def _crate_why(e: BaseException) -> str:
    """The crate's message of ``e`` (a :class:`nanobragg.Error`), without the OS's error code."""
    why = str(getattr(e, "message", None) or e)
    return re.sub(r" \(os error \d+\)", "", why)


def _check_base(spec: Spec) -> None:
    """Builds the base Simulator (no rendering), one per model of ``vary.model``, checks the
    size bounds and the realistic chain (:func:`_check_chain`)."""
    from .params import make_simulator
    from ..errors import Error

    models = [v.values for v in spec.variations if v.name == "model"]
    try:
        sim = make_simulator(spec, model=models[0][0] if models else None)
    except (Error, TypeError) as e:
        key = "base"
        fld = getattr(e, "field", None)
        if models and _is_model_error(e, models[0][0]):
            raise SpecError(spec.path, "vary.model.values", _model_why(models[0][0], e)) from None
        if fld and "." in fld:
            cls, name = fld.split(".", 1)
            if cls.lower() in ("crystal", "beam", "detector") and name in getattr(spec, cls.lower()):
                key = f"base.{cls.lower()}.{name}"
            else:
                key = "base.args"
        elif getattr(e, "flag", None):
            key = "base.args"
        raise SpecError(spec.path, key, str(e)) from None
    for m in models[0][1:] if models else ():
        _check_model(spec, m)
    slow, fast = sim.shape
    per_image = slow * fast * 4
    if per_image * spec.n_images > MAX_BYTES:
        raise SpecError(spec.path, "dataset.n_images", f"{spec.n_images} images of {fast}x{slow} pixels are {per_image * spec.n_images / 2**40:.1f} TiB, beyond the bound of {MAX_BYTES / 2**40:.0f} TiB")
    if per_image * spec.shard_size > MAX_SHARD_BYTES:
        raise SpecError(spec.path, "dataset.shard_size", f"{spec.shard_size} images of {fast}x{slow} pixels are {per_image * spec.shard_size / 2**30:.1f} GiB per shard, beyond the bound of {MAX_SHARD_BYTES / 2**30:.0f} GiB")
    _check_chain(spec, (slow, fast))


def _model_why(model: str, e: BaseException) -> str:
    why = _crate_why(e)
    return why if model in why else f"{model}: {why}"


def _is_model_error(e: BaseException, model: str) -> bool:
    """``e`` concerns the structure factors' file ``model`` (not the base set-up)."""
    return getattr(e, "file", None) == model or (getattr(e, "flag", None) == "-pdb" and getattr(e, "field", None) in (None, "Crystal.model"))


#: Checks already passed in this process (a worker loads the description for every shard):
#: keys of :func:`_files_key`, with the description's text.
_checked: Set[Tuple[Any, ...]] = set()


def _files_key(words: Sequence[str]) -> Tuple[Any, ...]:
    """What a check of ``words`` depends on besides them: the current folder, and the size and
    time of every word that names a file."""
    stats = []
    for w in words:
        try:
            st = os.stat(w)
        except (OSError, ValueError):
            continue
        stats.append((w, st.st_size, st.st_mtime_ns))
    return (tuple(words), os.getcwd(), tuple(stats))


def _check_model(spec: Spec, model: str) -> None:
    """A model of ``vary.model`` beyond the first (the base check builds that one): its
    Simulator is built, once per process and file version."""
    from .params import make_simulator
    from ..errors import Error

    key = ("model", spec.text, os.path.abspath(spec.path)) + _files_key([model])
    if key in _checked:
        return
    try:
        make_simulator(spec, model=model)
    except (Error, TypeError) as e:
        raise SpecError(spec.path, "vary.model.values", _model_why(model, e)) from None
    _checked.add(key)


def _check_chain(spec: Spec, shape: Tuple[int, int]) -> None:
    """``chain.background`` rendered (nonBragg's words, files and its detector's size against
    the images'; the image is kept for the renders, :func:`.params.background_image`) and
    ``chain.noise`` run once on an empty image of the detector's size: an error of either is
    the description's, before anything is written."""
    from .. import _nanobragg
    from ..errors import Error

    slow, fast = shape
    if spec.background is not None:
        from .params import background_image

        bg = background_image(spec)
        if bg.shape != (slow, fast):
            raise SpecError(spec.path, "chain.background", f"the background is {bg.shape[1]}x{bg.shape[0]} pixels, the "
                            f"detector {fast}x{slow}: give nonBragg the same detector (-detpixels, -detector)")
    if spec.noise is not None:
        try:
            words = list(_nanobragg.split_args(spec.noise)) + ["-seed", "1"]
        except (Error, ValueError) as e:
            raise SpecError(spec.path, "chain.noise", _crate_why(e)) from None
        key = ("noise", shape) + _files_key(words)
        if key in _checked:
            return
        import numpy as np

        try:
            _nanobragg.noisify_image(np.zeros(shape, np.float32), words)
        except Error as e:
            why = _crate_why(e)
            m = re.search(r"but the image is (\d+)x(\d+)", why)
            if why.startswith("<image>.bin") and m:
                why = (f"its detector is {m.group(1)}x{m.group(2)} pixels, the images {fast}x{slow}: give noisify the "
                       "same detector as [base] (-detpixels, -detector), or none")
            elif isinstance(e, FileNotFoundError):
                why += f" (a file of chain.noise is read from the current folder, {os.getcwd()})"
            raise SpecError(spec.path, "chain.noise", why) from None
        _checked.add(key)


class _Validator:
    def __init__(self, path: str):
        self.path = path

    def err(self, key: str, why: str) -> SpecError:
        return SpecError(self.path, key, why)

    def keys(self, t: Dict[str, Any], where: str, allowed: Set[str]) -> None:
        for k in t:
            if k not in allowed:
                import difflib

                near = difflib.get_close_matches(k, sorted(allowed), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else f" (allowed: {', '.join(sorted(allowed))})"
                raise self.err(f"{where}.{k}" if where else k, f"unknown key{hint}")

    def table(self, t: Dict[str, Any], key: str, required: bool = False, key_name: Optional[str] = None) -> Dict[str, Any]:
        name = key_name or key
        if key not in t:
            if required:
                raise self.err(name, "missing (required table)")
            return {}
        if not isinstance(t[key], dict):
            raise self.err(name, f"expected a table, got {t[key]!r}")
        out: Dict[str, Any] = t[key]
        return out

    def _get(self, t: Dict[str, Any], key: str, required: bool, default: Any) -> Tuple[bool, Any]:
        short = key.rsplit(".", 1)[-1]
        if short not in t:
            if required:
                raise self.err(key, "missing (required)")
            return False, default
        return True, t[short]

    def integer(self, t: Dict[str, Any], key: str, required: bool = False, default: Any = None, low: Optional[int] = None,
                high: Optional[int] = None) -> Any:
        has, x = self._get(t, key, required, default)
        if not has:
            return x
        if isinstance(x, bool) or not isinstance(x, int):
            raise self.err(key, f"expected a whole number, got {x!r}")
        if low is not None and x < low:
            raise self.err(key, f"{x} is below the least allowed value {low}")
        if high is not None and x > high:
            raise self.err(key, f"{x} is beyond the bound {high}")
        return x

    def number(self, t: Dict[str, Any], key: str, required: bool = False, default: Any = None, low: Optional[float] = None,
               high: Optional[float] = None, open_low: bool = False) -> Any:
        has, x = self._get(t, key, required, default)
        if not has:
            return x
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise self.err(key, f"expected a finite number, got {x!r}")
        if low is not None and (x < low or (open_low and x == low)):
            raise self.err(key, f"{x} must be {'above' if open_low else 'at least'} {low}")
        if high is not None and x > high:
            raise self.err(key, f"{x} is beyond the bound {high}")
        return float(x)

    def choice(self, t: Dict[str, Any], key: str, choices: Sequence[Any], default: Any = None) -> Any:
        has, x = self._get(t, key, False, default)
        if has and x not in choices:
            raise self.err(key, f"expected one of {', '.join(map(repr, choices))}, got {x!r}")
        return x

    def text(self, t: Dict[str, Any], key: str, default: Any = None) -> Any:
        has, x = self._get(t, key, False, default)
        if has and not isinstance(x, str):
            raise self.err(key, f"expected a string, got {x!r}")
        return x

    def variation(self, vary: Dict[str, Any], name: str) -> Variation:
        k = f"vary.{name}"
        t = vary[name]
        if not isinstance(t, dict):
            raise self.err(k, f"expected a table {{ dist = \"uniform\" | \"normal\" | \"lognormal\" | \"choice\" | \"grid\", ... }}, got {t!r}")
        dist = t.get("dist")
        if dist not in DISTS:
            raise self.err(f"{k}.dist", f"expected one of {', '.join(map(repr, DISTS))}, got {dist!r}")
        need = {"uniform": {"low", "high"}, "normal": {"mean", "sd"}, "lognormal": {"mean", "sd"},
                "choice": {"values"}, "grid": {"values"}}[dist]
        self.keys(t, k, need | {"dist"})
        for x in sorted(need):
            if x not in t:
                raise self.err(f"{k}.{x}", f"missing (a {dist} distribution needs {' and '.join(sorted(need))})")
        if name == "model":
            vals = t["values"] if dist in ("choice", "grid") else None
            if vals is None:
                raise self.err(f"{k}.dist", "models are drawn from a list: dist = \"choice\" or \"grid\"")
            if not vals or not all(isinstance(s, str) for s in vals):
                raise self.err(f"{k}.values", "expected a non-empty list of model paths")
            vals = tuple(os.path.join(os.path.dirname(os.path.abspath(self.path)), s) if self.path != "<spec>" else s for s in vals)
            for s in vals:
                if not os.path.isfile(s):
                    raise self.err(f"{k}.values", f"no such model file: {s}")
            return Variation(name, dist, None, values=vals)
        comps, lo, hi = VARIABLE[name]
        if name == "N":
            comps = None  # N: a number or (Na, Nb, Nc); take the shape of the values given
        strict = name in _OPEN_LOW

        def vec(x: Any, key: str, n: Optional[int]) -> Any:
            """x as a tuple of n numbers (or a float when n is None)."""
            if isinstance(x, list):
                if n is None and name == "N" and len(x) == 3:
                    n = 3
                if n is None:
                    raise self.err(key, f"expected a number{' or 3 (Na, Nb, Nc)' if name == 'N' else ''}, got a list of {len(x)}: {x!r}")
                if len(x) != n:
                    raise self.err(key, f"expected {n} numbers, got {len(x)}")
                out = []
                for item in x:
                    if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
                        raise self.err(key, f"expected finite numbers, got {item!r}")
                    out.append(float(item))
                return tuple(out)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                raise self.err(key, f"expected a finite number, got {x!r}")
            if n not in (None, 1):
                return tuple([float(x)] * n)
            return float(x)

        def bounds(i: int) -> Tuple[Any, Any]:
            lo_i = lo[i] if isinstance(lo, list) else lo
            hi_i = hi[i] if isinstance(hi, list) else hi
            return lo_i, hi_i

        def inside(key: str, vals: Any, what: str) -> None:
            seq = vals if isinstance(vals, tuple) else (vals,)
            for i, x in enumerate(seq):
                lo_i, hi_i = bounds(i)
                if x < lo_i or (strict and x == lo_i) or x > hi_i:
                    comp = f" (component {i + 1})" if len(seq) > 1 else ""
                    rng = f"{'(' if strict else '['}{lo_i}, {hi_i}]"
                    raise self.err(key, f"{what} {x}{comp} is impossible for {name}: allowed {rng}")

        n = comps if comps != 1 else None
        if dist in ("choice", "grid"):
            vals = t["values"]
            if not isinstance(vals, list) or not vals:
                raise self.err(f"{k}.values", "expected a non-empty list")
            out = tuple(vec(x, f"{k}.values", n) for x in vals)
            if name == "N" and len({isinstance(x, tuple) for x in out}) > 1:
                raise self.err(f"{k}.values", "mixes single numbers and (Na, Nb, Nc) triples")
            for x in out:
                inside(f"{k}.values", x, "value")
                if name in _INTEGER and any(float(c) != int(c) for c in (x if isinstance(x, tuple) else (x,))):
                    raise self.err(f"{k}.values", f"{name} takes whole numbers, got {x}")
            return Variation(name, dist, n if not (out and isinstance(out[0], tuple)) else len(out[0]), values=out)
        if dist == "uniform":
            low, high = vec(t["low"], f"{k}.low", n), vec(t["high"], f"{k}.high", n)
            if isinstance(low, tuple) != isinstance(high, tuple) or (isinstance(low, tuple) and len(low) != len(high)):
                raise self.err(f"{k}.high", "low and high have different lengths")
            for i, (a, b) in enumerate(zip(*[(x if isinstance(x, tuple) else (x,)) for x in (low, high)])):
                comp = f" (component {i + 1})" if isinstance(low, tuple) else ""
                if a > b:
                    raise self.err(f"{k}.high", f"uniform with high {b} below low {a}{comp}")
                if not math.isfinite(b - a):
                    # NumPy draws low + (high - low) u: an infinite width draws inf or nan
                    raise self.err(f"{k}.high", f"uniform from {a} to {b}{comp} is wider than the largest floating-point number "
                                   "(1.8e308): its draws would be infinite")
            inside(f"{k}.low", low, "low")
            inside(f"{k}.high", high, "high")
            if name in _INTEGER:
                raise self.err(f"{k}.dist", f"{name} takes whole numbers: use \"choice\" or \"grid\"")
            return Variation(name, dist, len(low) if isinstance(low, tuple) else None, low=low, high=high)
        # normal, lognormal
        mean, sd = vec(t["mean"], f"{k}.mean", n), vec(t["sd"], f"{k}.sd", n)
        if isinstance(mean, tuple) != isinstance(sd, tuple) or (isinstance(mean, tuple) and len(mean) != len(sd)):
            raise self.err(f"{k}.sd", "mean and sd have different lengths")
        for i, s in enumerate(sd if isinstance(sd, tuple) else (sd,)):
            if s < 0:
                raise self.err(f"{k}.sd", f"a standard deviation cannot be negative, got {s}")
        if name in _INTEGER:
            raise self.err(f"{k}.dist", f"{name} takes whole numbers: use \"choice\" or \"grid\"")
        ms = mean if isinstance(mean, tuple) else (mean,)
        ss = sd if isinstance(sd, tuple) else (sd,)
        if dist == "normal":
            inside(f"{k}.mean", mean, "mean")
            for i, (m, s) in enumerate(zip(ms, ss)):
                lo_i, hi_i = bounds(i)
                if s > 0 and (m - 6 * s < lo_i or (strict and m - 6 * s <= lo_i) or m + 6 * s > hi_i):
                    raise self.err(f"{k}.sd", f"normal({m}, {s}) can draw impossible values of {name} (mean ± 6 sd leaves [{lo_i}, {hi_i}]); use a smaller sd, lognormal or uniform")
                if not (math.isfinite(m - 6 * s) and math.isfinite(m + 6 * s)):
                    raise self.err(f"{k}.sd", f"normal({m}, {s}) can draw values beyond the largest floating-point number (1.8e308)")
        else:
            # lognormal: mean and sd of the logarithm; values are exp(mean ± 6 sd) at most
            # (compared as logarithms: exp overflows beyond 709.78)
            for i, (m, s) in enumerate(zip(ms, ss)):
                lo_i, hi_i = bounds(i)
                if m + 6 * s > _LOG_MAX:
                    raise self.err(f"{k}.sd" if s > 0 else f"{k}.mean", f"lognormal({m}, {s}) can draw values beyond the largest "
                                   f"floating-point number (exp({m} + 6 sd) > 1.8e308)")
                if math.isfinite(hi_i) and m + 6 * s > math.log(hi_i):
                    raise self.err(f"{k}.sd", f"lognormal({m}, {s}) can draw values of {name} beyond {hi_i}")
                if strict and lo_i == 0 and m - 6 * s < _LOG_MIN:
                    raise self.err(f"{k}.sd" if s > 0 else f"{k}.mean", f"lognormal({m}, {s}) can draw values that round to 0, "
                                   f"impossible for {name} (exp({m} - 6 sd) < 5e-324)")
        return Variation(name, dist, len(mean) if isinstance(mean, tuple) else None, mean=mean, sd=sd)
