"""Fuzz target of the dataset description's reader (``nanobragg.dataset.parse_spec``), with
Hypothesis: (a) structured descriptions, valid TOML built from the description's real tables
and keys with good and hostile values (wrong types, NaN/inf, negatives, huge integers, empty
strings, unknown and missing keys, tables where numbers belong, mixed arrays, unicode), and (b)
byte-level mutations of the repository's example descriptions (docs/datasets.md, the dataset
tests' texts).

The property: ``parse_spec(text, path="x.toml")`` returns a Spec or raises a ``SpecError``
whose message names the file, and the key with its line where the key is written in the text;
any other exception is a defect. A description that parses must prepare its first image (its
parameters, the Simulator with that image's overrides, and on a small detector its render)
without any exception but a ``SpecError`` or a :class:`nanobragg.Error`.

Bounded and deterministic in the test suite (``derandomize=True``, fixed ``max_examples``);
``NANOBRAGG_SPEC_FUZZ_EXAMPLES=20000`` runs it longer (that many structured descriptions, four
times as many mutations; fuzz/README.md, "Runs so far")."""

import dataclasses
import os
import pathlib
import re

import pytest
from hypothesis import HealthCheck, given, settings  # scripts/setup.sh installs it (the `test` extra)
from hypothesis import strategies as st

import nanobragg as nb
from nanobragg.config import Beam, Crystal, Detector
from nanobragg.dataset import Renderer, Spec, image_params, load_spec, parse_spec
from nanobragg.dataset.spec import DISTS, VARIABLE, SpecError

REPO = pathlib.Path(__file__).resolve().parents[2]
MODELS = REPO / "tests" / "fixtures" / "models"
PATH = "x.toml"

#: structured examples in the suite (each a parse, some a tiny render; about 10 s on 2 cores),
#: and four times as many mutations (cheaper: most are refused early)
EXAMPLES = int(os.environ.get("NANOBRAGG_SPEC_FUZZ_EXAMPLES", "500"))


def fuzz(n):
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


# ---------------------------------------------------------------------------------------------
# the property


def check(text, path=PATH):
    """``text`` parsed: a Spec, or a SpecError that names ``path``, its key, and the key's line
    when the key (or a table around it) is written in the text. Returns the Spec or None."""
    try:
        spec = parse_spec(text, path=path)
    except SpecError as e:
        check_error(e, text, path)
        return None
    assert isinstance(spec, Spec)
    prepare_first_image(spec)
    return spec


def check_error(e, text, path):
    msg = str(e)
    assert e.file == path, msg
    assert msg.startswith(f"{path} line {e.line}: {e.key}: " if e.line else f"{path}: {e.key}: "), msg
    assert e.why and "Traceback" not in msg and "please report" not in msg, msg
    lines = text.split("\n")  # TOML's lines (str.splitlines also ends them at \x0c, \u2028, ...)
    if e.line is not None:
        assert 1 <= e.line <= max(1, len(lines)), (e.line, msg)
    if e.key in ("(toml)", "(file)"):
        return
    parts = e.key.split(".")
    assert parts[0], msg
    # a key written in the text has its line (or the line of the table around it, when it is
    # inside an inline table or missing), and that line names a part of the key
    written = any(re.match(rf"\s*\[*\s*[\"']?{re.escape(parts[0])}[\"']?\s*[\].=]", ln) for ln in lines)
    if written:
        assert e.line is not None, (msg, text)
    if e.line is not None:
        at = lines[e.line - 1]
        assert any(p in at for p in parts), (msg, at)


def prepare_first_image(spec):
    """What a worker does first for image 0: its parameters, the Simulator of its model, the
    overrides resolved (``predict`` resolves the set-up with them without rendering), and on a
    small detector the image itself; only SpecError or nanobragg.Error may come out."""
    spec = dataclasses.replace(spec, threads=1, backend="cpu")
    try:
        p = image_params(spec, 0)
        r = Renderer(spec)
        sim = r.simulator(p.get("model"))
        slow, fast = sim.shape
        info = sim._s.info()
        work = slow * fast * int(info.get("oversample", 1)) ** 2 * int(info.get("sources", 1)) * int(info.get("orientations", 1))
        if work <= 20_000 and not _steps(sim.args()):
            r.image(0, p)
        else:
            sim.predict(**r.overrides(p))
    except (SpecError, nb.Error):
        pass


def _steps(words):
    """The set-up has stepped loops (φ, thickness, dispersion, divergence) beyond a few steps:
    a render too slow for the suite."""
    n = 1
    for flag in ("-phisteps", "-thicksteps", "-dispsteps", "-divsteps", "-hdivsteps", "-vdivsteps", "-mosaic_dom"):
        if flag in words:
            try:
                n *= max(1, int(float(words[words.index(flag) + 1])))
            except (ValueError, IndexError, OverflowError):
                return True
    return n > 8


# ---------------------------------------------------------------------------------------------
# TOML text of a document (tables of scalars, arrays and inline tables)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(k):
    return k if _BARE_KEY.match(k) else toml_str(k)


def toml_str(s):
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def toml_doc(doc, sub_headers):
    """``doc`` ({table: {key: value}}, a table's value a dict; or a non-dict where a table
    belongs) as TOML; tables named in ``sub_headers`` (e.g. "base.crystal") are written as
    headers of their own, the others' dict values as inline tables."""
    lines = []
    for name, t in doc.items():
        if not isinstance(t, dict):
            lines.insert(0, f"{toml_key(name)} = {toml_value(t)}")
            continue
        lines.append(f"[{toml_key(name)}]")
        subs = []
        for k, v in t.items():
            if isinstance(v, dict) and f"{name}.{k}" in sub_headers:
                subs.append((k, v))
            else:
                lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in subs:
            lines.append(f"[{toml_key(name)}.{toml_key(k)}]")
            lines += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# values: good ones for each key, and hostile ones for any

HUGE_INTS = st.sampled_from([2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30, -(10**30), 10**400, -(10**400)])
FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1e300, 1.7976931348623157e308, -1.0, 0.5, 1e15, 1e16]))
TEXT = st.one_of(st.sampled_from(["", " ", "nan", "1", "-1", "uniform", "a.pdb", "\u00e9", "\u2603", "\U0001f600",
                                  "-detpixels", "'", '"', "\\", "\n", "x" * 300]),
                 st.text(max_size=12))
SCALAR = st.one_of(st.booleans(), st.integers(-10, 1000), HUGE_INTS, FLOATS, TEXT)
HOSTILE = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=7), st.dictionaries(st.sampled_from(["dist", "low", "high", "mean", "sd", "values", "x", ""]), inner, max_size=4)),
    max_leaves=12)


def chance(p):
    """True with probability ``p`` (Hypothesis' own floats and booleans lean to their ends)."""
    k = round(p * 100)
    return st.sampled_from([False] * (100 - k) + [True] * k)


def maybe(good, p_bad):
    """``good``, or with probability ``p_bad`` a hostile value."""
    return chance(p_bad).flatmap(lambda bad: HOSTILE if bad else good)


SMALL_ARGS = [
    "-cell 50 50 50 90 90 90 -default_F 100 -N 2 -lambda 1 -distance 100 -detpixels 8 -pixel 0.1",
    "-cell 40 50 60 90 100 90 -default_F 10 -N 3 -lambda 1.2 -distance 50 -detpixels 12 -pixel 0.2 -oversample 1",
    "-cell 50 50 50 90 90 90 -default_F 100 -N 2 -lambda 1 -distance 100 -detpixels 8 -pixel 0.1 -mosaic 0.5 -mosaic_domains 2",
    "-cell 78 78 38 90 90 90 -default_F 100 -N 2 -lambda 1 -distance 100 -detsize 1 -pixel 0.1 -phisteps 2 -osc 0.1",
    "-default_F 100 -N 2 -detpixels 8",
    "-cell 50 50 50 90 90 90 -detpixels 8",
    "",
]
ARGS = st.one_of(st.sampled_from(SMALL_ARGS), st.sampled_from(SMALL_ARGS).map(str.split),
                 st.lists(st.sampled_from(["-cell", "50", "-N", "2", "-detpixels", "8", "-default_F", "1e400", "nan",
                                           "-lambda", "-1", "-pdb", "x.pdb", "'", '"', "\\", "-mosaic_domains", "0"]), max_size=12).map(" ".join))

MODEL_FILES = sorted(str(p) for p in MODELS.iterdir() if p.suffix in (".pdb", ".cif"))[:3] if MODELS.is_dir() else []


def field_value(name):
    """A plausible value of a Crystal/Beam/Detector field (kept small: these render)."""
    vec3 = st.lists(st.floats(-2, 2, allow_nan=False), min_size=3, max_size=3)
    table = {
        "cell_A_deg": st.sampled_from([[50, 50, 50, 90, 90, 90], [40.0, 50, 60, 90, 95, 100], [1, 1, 1, 90, 90, 90], [50, 50, 50, 0, 0, 0]]),
        "N": st.one_of(st.integers(1, 4), st.lists(st.integers(0, 4), min_size=3, max_size=3)),
        "misset_deg": st.one_of(vec3, st.just("random")),
        "rotation": st.just([[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
        "model": st.sampled_from(MODEL_FILES + ["missing.pdb"]),
        "F": st.just({"hkl": [[0, 0, 1]], "F": [1.0]}),
        "sources": st.just([[0, 0, 1, 1, 1]]),
        "shape": st.sampled_from(["square", "round", "gauss", "tophat", "cube"]),
        "convention": st.sampled_from(["MOSFLM", "XDS", "DIALS", "ADXV", "CUSTOM", "mosflm"]),
        "pivot": st.sampled_from(["beam", "sample", "BEAM"]),
        "preset": st.sampled_from(["eiger2-4m", "pilatus-6m", "nope"]),
        "pixels": st.one_of(st.integers(1, 12), st.lists(st.integers(0, 12), min_size=2, max_size=2)),
        "beam_center_mm": st.lists(st.floats(-1, 2, allow_nan=False), min_size=2, max_size=2),
        "close_center_mm": st.lists(st.floats(-1, 2, allow_nan=False), min_size=2, max_size=2),
        "org_px": st.lists(st.floats(-1, 12, allow_nan=False), min_size=2, max_size=2),
        "roi": st.lists(st.integers(-1, 12), min_size=4, max_size=4),
        "mat_file": st.just("missing.mat"), "mask_file": st.just("missing.img"), "img_file": st.just("missing.img"),
        "fdump_file": st.just("missing.bin"),
    }
    if name in table:
        return table[name]
    if name.endswith(("_vector", "_axis")):
        return vec3
    if name in ("interpolate", "round_div", "nopolar", "curved", "point_pixel", "oversample_thick", "oversample_polar", "oversample_omega"):
        return st.booleans()
    if name.endswith(("steps", "_domains", "_seed")) or name == "oversample":
        return st.integers(0, 3)
    return st.one_of(st.floats(0, 200, allow_nan=False), st.integers(-1, 200), st.sampled_from([0.001, 0.05, 1e-6]))


def fields_table(cls, bad):
    names = [f.name for f in dataclasses.fields(cls)]
    return st.lists(st.sampled_from(names), max_size=3, unique=True).flatmap(
        lambda ks: st.fixed_dictionaries({k: maybe(field_value(k), bad) for k in ks}))


def comps(name):
    n = VARIABLE[name][0]
    return 3 if name == "N" else (n or 1)


def number_of(name):
    """A value of the varied parameter ``name``: in its domain, at its ends, or beyond."""
    lo, hi = VARIABLE[name][1], VARIABLE[name][2]
    lo = lo[0] if isinstance(lo, list) else lo
    hi = hi[-1] if isinstance(hi, list) else hi
    lo = max(lo, -1e3)
    hi = min(hi, 1e3)
    return st.one_of(st.floats(lo, hi, allow_nan=False), st.integers(int(lo), int(hi)), EXTREME, EXTREME)


#: numbers at the ends of what a double holds, and of exp()'s range (lognormal's logarithms)
EXTREME = st.sampled_from([0, -1, 1, 1e-9, 5e-324, 1e15, 1e300, 1.7976931348623157e308, -1.7976931348623157e308, 700.0,
                           709.0, 710.0, -745.0, -800.0, 180, 360, 1e18, 2**63])


def vec_of(name):
    n = comps(name)
    one = number_of(name)
    return st.one_of(one, st.lists(one, min_size=n, max_size=n), st.lists(one, max_size=n + 1))


def distribution(name, bad):
    if name == "model":
        return st.fixed_dictionaries({"dist": maybe(st.sampled_from(["choice", "grid", "uniform"]), bad),
                                      "values": maybe(st.lists(st.sampled_from(MODEL_FILES + ["missing.pdb", ""]), max_size=2), bad)})

    def params(d):
        need = {"uniform": ("low", "high"), "normal": ("mean", "sd"), "lognormal": ("mean", "sd"),
                "choice": ("values",), "grid": ("values",)}[d]
        t = {"dist": st.just(d)}
        sd = st.one_of(st.floats(0, 5, allow_nan=False), st.sampled_from([0, 1e-300, 100.0, 120.0, 1e300, 1e308]))
        for k in need:
            if k == "values":
                t[k] = maybe(st.lists(vec_of(name), min_size=1, max_size=3), bad)
            elif k == "sd":
                t[k] = maybe(st.one_of(sd, st.lists(sd, min_size=comps(name), max_size=comps(name))), bad)
            else:
                t[k] = maybe(vec_of(name), bad)
        # a key too many or too few
        return st.fixed_dictionaries(t).flatmap(lambda x: chance(bad / 3).flatmap(
            lambda odd: st.just(x) if not odd else st.sampled_from(["low", "sd", "values", "dist", "x"]).map(
                lambda y: {k: v for k, v in x.items() if k != y} if y in x else {**x, y: 1})))

    return st.sampled_from(DISTS).flatmap(params)


VARY_NAMES = sorted(VARIABLE) + ["model"]


@st.composite
def structured(draw):
    """A description as TOML text: the real tables and keys, each value good or, with this
    example's hostility ``bad`` (none for half of the examples), hostile."""
    bad = draw(st.sampled_from([0.0, 0.0, 0.0, 0.0, 0.02, 0.05, 0.15, 0.4]))

    def some(p):
        return draw(chance(p))

    n_images = draw(maybe(st.integers(1, 24), bad))
    n = n_images if isinstance(n_images, int) and not isinstance(n_images, bool) and n_images >= 1 else 12
    ds = {"n_images": n_images, "seed": draw(maybe(st.integers(0, 2**63 - 1), bad))}
    for k in ("n_images", "seed"):
        if some(bad / 2):
            del ds[k]
    for k, v in [("shard_size", st.integers(1, max(1, min(30, n)))), ("format", st.sampled_from(["nxmx", "npz"])),
                 ("scale", st.one_of(st.floats(1e-3, 1e3), st.just(1))), ("output", st.sampled_from(["out", "sub/out", "out", "sub/out", "", "a\0b", "\u00e9"])),
                 ("predict", st.booleans()), ("still", st.booleans()), ("compression", st.sampled_from(["deflate", "bslz4"]))]:
        if some(0.3):
            ds[k] = draw(maybe(v, bad))
    base = {}
    if not some(0.1):
        base["args"] = draw(maybe(ARGS, bad))
    for k, v in [("precision", st.sampled_from(["f32", "f64"])), ("backend", st.sampled_from(["cpu", "gpu", "auto"])),
                 ("threads", st.integers(1, 2))]:
        if some(0.25):
            base[k] = draw(maybe(v, bad))
    for name, cls in (("crystal", Crystal), ("beam", Beam), ("detector", Detector)):
        if some(0.3):
            base[name] = draw(maybe(fields_table(cls, bad), bad))
    vary = {}
    if some(0.4):
        vary["orientation"] = draw(maybe(st.sampled_from(["uniform", "fixed"]), bad))
    if some(0.2):
        count = draw(st.sampled_from([1, 2, 3, 4]).filter(lambda c: n % c == 0) if not some(bad) else st.sampled_from([5, 0, -1]))
        vary["rotation"] = draw(maybe(st.fixed_dictionaries(
            {"width_deg": maybe(st.floats(0.01, 5), bad), "count": st.just(count)},
            optional={"start_deg": maybe(st.floats(-360, 360), bad)}), bad))
    for name in draw(st.lists(st.sampled_from(VARY_NAMES), max_size=3, unique=True)):
        vary[name] = draw(maybe(distribution(name, bad), bad))
    if some(bad / 4):
        vary[draw(st.sampled_from(["size_mm", "pixel_mm", "unknown", "", "rotation.count"]))] = draw(HOSTILE)
    chain = {}
    if some(0.15):
        chain["noise"] = draw(maybe(st.sampled_from(["-readout_noise 3", "-readout_noise 3 -detpixels 8", "-adc 0", "-gain 0",
                                                     "-psf_fwhm 50 -seed"]), bad))
    if some(0.05):
        chain["background"] = draw(maybe(st.sampled_from(["-stol missing.stol -thick 0.1 -detpixels 8", "-thick 0.1"]), bad))
    tables = {"dataset": ds, "base": base, "vary": vary, "chain": chain}
    doc = {}
    for t in draw(st.permutations(["dataset", "base", "vary", "chain"])):
        if some(bad / 4 if t in ("dataset", "base") else 0.0 if tables[t] else 0.5):
            continue  # a table missing
        doc[t] = tables[t] if not some(bad / 4) else draw(HOSTILE)
    if some(bad / 4):
        doc[draw(st.sampled_from(["datasets", "extra", "x y", "\u00e9"]))] = draw(st.one_of(HOSTILE, st.just({"a": 1})))
    for t in ("dataset", "base", "chain"):
        if some(bad / 4) and isinstance(doc.get(t), dict):
            doc[t][draw(st.sampled_from(["n_image", "sedd", "arg", "unknown", "", "\u00e9"]))] = draw(HOSTILE)
    headers = {f"base.{n}" for n in ("crystal", "beam", "detector") if draw(st.booleans())}
    return toml_doc(doc, headers)


@fuzz(EXAMPLES)
@given(structured())
def test_structured_descriptions(text):
    check(text)


# ---------------------------------------------------------------------------------------------
# byte-level mutations of the repository's descriptions


def example_descriptions():
    """Every description written in the repository: docs' TOML blocks and the dataset tests'
    texts (with a [dataset] table)."""
    out = []
    for md in sorted((REPO / "docs").glob("*.md")):
        for block in re.findall(r"```toml\n(.*?)```", md.read_text(), re.S):
            if "[dataset]" in block:
                out.append(block)
    for py in sorted((REPO / "python" / "tests").glob("test_dataset*.py")):
        for block in re.findall(r'"""(\n\[dataset\].*?)"""', py.read_text(), re.S):
            out.append(block)
    return out


EXAMPLES_TEXT = example_descriptions()
FRAGMENTS = [b"[", b"]", b"[[", b"]]", b'"', b"'", b'"""', b"'''", b"=", b".", b"#", b"\n", b" ", b"{", b"}", b",", b"vary",
             b"dataset", b"base", b"chain", b"N", b"seed", b"n_images", b'"bslz4"', b"1e400", b"-1", b"nan", b"inf", b"-inf",
             b"true", b"[1,2]", b"{}", b"[]", b"\\", b"\r\n", "\u00e9".encode(), b"\xff", b"\x00", b"0x7fffffffffffffff",
             b"99999999999999999999", b"dist", b"values", b"'grid'", b"'uniform'", b"low", b"high", b"sd", b"mean",
             "\u2028".encode(), "\x85".encode(), b"\x0c", b"\x1e", b'#"""', b"#'''", b" = [\n", b"\n]",
             b"9" * 4400, b"0x" + b"f" * 300, b"1" + b"0" * 400, b"1e308", b"-1e308"]


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(EXAMPLES_TEXT)).encode())
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4, 8]))):
        i = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from([0, 0, 0, 1, 1, 2, 2, 3, 4]))
        if op == 0:
            data[i:i] = draw(st.sampled_from(FRAGMENTS))
        elif op == 1:
            del data[i:i + draw(st.integers(1, 12))]
        elif op == 2:
            j = draw(st.integers(0, len(data)))
            data[i:i] = data[j:j + draw(st.integers(1, 40))]
        elif op == 3 and i < len(data):
            data[i] = draw(st.one_of(st.integers(0x20, 0x7E), st.integers(0, 255)))
        else:
            data[i:i] = draw(st.one_of(st.binary(max_size=4), st.text(max_size=3).map(str.encode)))
    return bytes(data)


def test_the_examples_are_found_and_valid(tmp_path):
    assert len(EXAMPLES_TEXT) >= 3, EXAMPLES_TEXT
    assert any(check(t) is not None for t in EXAMPLES_TEXT)


@fuzz(4 * EXAMPLES)
@given(mutated())
def test_mutated_examples(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # not UTF-8: the file's reader says so (load_spec), naming the file
        p = pathlib.Path("bad.toml")
        p.write_bytes(data)
        with pytest.raises(SpecError) as e:
            load_spec(str(p))
        check_error(e.value, "", str(p))
        return
    check(text)


def test_the_toml_writer_round_trips():
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    doc = {"a": {"b": [1, 2.5, "x\u00e9\"\\\n\x7f", True, {"c": float("inf")}], "d e": -(2**70)}}
    assert tomllib.loads(toml_doc(doc, set()))["a"]["b"][:4] == [1, 2.5, "x\u00e9\"\\\n\x7f", True]
