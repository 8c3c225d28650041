"""nanobragg.dataset: the description is validated before any rendering, errors name the key;
per-image parameters derive from (master seed, index) alone."""

import numpy as np
import pytest

import nanobragg as nb
from nanobragg import dataset
from nanobragg.config import override_words
from nanobragg.dataset.spec import SpecError, parse_spec

BASE = """
[dataset]
n_images = 12
shard_size = 5
seed = 3
[base]
args = "-cell 100 100 100 90 90 90 -default_F 100 -N 5 -lambda 1 -distance 100 -detpixels 32 -pixel 0.1"
"""


# varied detector geometry is for npz datasets only (test_nxmx_refuses_a_varied_detector)
NPZ = BASE.replace("seed = 3", "seed = 3\nformat = \"npz\"")


def spec(extra="", base=BASE):
    return parse_spec(base + extra)


def line_of(text, snippet):
    """The line (from 1) where ``snippet`` first stands in ``text``."""
    return text[:text.index(snippet)].count("\n") + 1


def written_at(text, key):
    """Where these tests' simple descriptions write ``key`` or, failing that, the nearest key
    or table around it: the line of its table header or of "name =" at a line's start."""
    parts = key.split(".")
    for n in range(len(parts), 0, -1):
        if f"[{'.'.join(parts[:n])}]" in text:
            return line_of(text, f"[{'.'.join(parts[:n])}]")
        if f"\n{parts[n - 1]} =" in text:
            return line_of(text, f"\n{parts[n - 1]} =") + 1
    return None


def refused(text, key, *words, line=None):
    """The error of ``text``: for ``key``, with ``words``, at ``line`` (default: where the key
    is written, `written_at`)."""
    with pytest.raises(SpecError) as e:
        parse_spec(text)
    assert e.value.key == key, str(e.value)
    msg = str(e.value)
    line = line if line is not None else written_at(text, key)
    line = line or None  # (0: no line)
    assert e.value.line == line, (msg, line)
    assert msg.startswith(f"<spec> line {line}: {key}: " if line else f"<spec>: {key}: "), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_valid_spec_and_shards():
    s = spec('[vary]\norientation = "uniform"\n')
    assert (s.n_images, s.shard_size, s.n_shards) == (12, 5, 3)
    assert [list(s.shard_range(k)) for k in range(3)] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    with pytest.raises(IndexError):
        s.shard_range(3)


@pytest.mark.parametrize("extra,key,words", [
    ("[dataset2]\n", "dataset2", ["unknown key"]),
    ("[vary]\nwavelenght_A = { dist = 'uniform', low = 1, high = 2 }\n", "vary.wavelenght_A", ["unknown key"]),
    ("[vary]\nconvention = { dist = 'choice', values = ['xds'] }\n", "vary.convention", ["cannot be varied"]),
    ("[vary]\ndistance_mm = { dist = 'uniform', low = 110, high = 90 }\n", "vary.distance_mm.high", ["below low"]),
    ("[vary]\ndistance_mm = { dist = 'uniform', low = -5, high = 90 }\n", "vary.distance_mm.low", ["impossible"]),
    ("[vary]\nwavelength_A = { dist = 'normal', mean = 1.0, sd = 0.5 }\n", "vary.wavelength_A.sd", ["impossible values"]),
    ("[vary]\nmosaic_spread_deg = { dist = 'normal', mean = 0.2, sd = -0.1 }\n", "vary.mosaic_spread_deg.sd", ["negative"]),
    ("[vary]\ncell_A_deg = { dist = 'uniform', low = [1, 2, 3], high = [4, 5, 6] }\n", "vary.cell_A_deg.low", ["expected 6 numbers"]),
    ("[vary]\ncell_A_deg = { dist = 'grid', values = [[100, 100, 100, 90, 90, 190]] }\n", "vary.cell_A_deg.values", ["component 6"]),
    ("[vary]\nN = { dist = 'grid', values = [] }\n", "vary.N.values", ["non-empty"]),
    ("[vary]\nN = { dist = 'poisson', values = [1] }\n", "vary.N.dist", ["'uniform'"]),
    ("[vary]\nN = { dist = 'uniform', low = 1 }\n", "vary.N.high", ["missing"]),
    ("[vary]\nrotation = { start_deg = 0, width_deg = 1, count = 5 }\n", "vary.rotation.count", ["divide"]),
    ("[vary]\nmodel = { dist = 'choice', values = ['nope.pdb'] }\n", "vary.model.values", ["no such model file"]),
    ("[chain]\nbackground = '-stol water.stol'\n[vary]\ndistance_mm = { dist = 'uniform', low = 90, high = 110 }\n", "chain.background", ["vary.distance_mm"]),
    ("[base.detector]\npixel_mm = -1\n", "base.detector.pixel_mm", ["-pixel"]),
    ("[base.crystal]\ncolor = 'red'\n", "base.crystal.color", ["unknown key"]),
])
def test_refused_naming_the_key(extra, key, words):
    refused(BASE + extra, key, *words)


def test_compression_of_the_frames():
    assert spec().compression == "deflate" and not spec().compression_given
    # unsaid: bitshuffle + LZ4 for noisy NXmx frames, deflate without noise; said, it wins
    noisy = "[chain]\nnoise = '-readout_noise 2'\n"
    assert spec(noisy).compression == "bslz4" and not spec(noisy).compression_given
    given = parse_spec(BASE.replace("seed = 3", 'seed = 3\ncompression = "deflate"') + noisy)
    assert given.compression == "deflate" and given.compression_given
    assert parse_spec(NPZ + noisy).compression == "deflate"  # npz: no NXmx frames
    assert parse_spec(BASE.replace("seed = 3", 'seed = 3\ncompression = "bslz4"')).compression == "bslz4"
    refused(BASE.replace("seed = 3", 'seed = 3\ncompression = "lz4"'), "dataset.compression", "'deflate'", "'bslz4'", "'lz4'")
    refused(BASE.replace("seed = 3", "seed = 3\ncompression = 4"), "dataset.compression", "got 4")
    refused(NPZ.replace("seed = 3", 'seed = 3\ncompression = "bslz4"'), "dataset.compression", "NXmx frames only")
    refused(BASE.replace("seed = 3", 'seed = 3\ncompresion = "bslz4"'), "dataset.compresion", "did you mean 'compression'")


@pytest.mark.parametrize("key", ["distance_mm", "beam_center_mm", "twotheta_deg", "rotz_deg"])
def test_nxmx_refuses_a_varied_detector(key):
    """dxtbx reads one detector per NXmx file: a per-image detector geometry is npz only; a
    per-image λ is written per frame (test_dataset_dials.py)."""
    vary = f"[vary]\n{key} = {{ dist = 'uniform', low = 1, high = 2 }}\n"
    refused(BASE + vary, f"vary.{key}", "first frame", "npz")
    assert spec(vary, base=NPZ).varied_names == [key]
    assert spec("[vary]\nwavelength_A = { dist = 'uniform', low = 1, high = 2 }\n").varied_names == ["wavelength_A"]


def test_still_key():
    assert spec().still
    rot = "[vary]\nrotation = { start_deg = 0, width_deg = 1, count = 4 }\n"
    b = BASE.replace("n_images = 12", "n_images = 8")
    assert not spec(rot, base=b).still
    assert spec(rot, base=b.replace("seed = 3", "seed = 3\nstill = true")).still
    refused(BASE.replace("seed = 3", "seed = 3\nstill = false"), "dataset.still", "needs vary.rotation")
    refused(BASE.replace("seed = 3", "seed = 3\nstill = 1"), "dataset.still", "true or false")


def test_dataset_keys_and_bounds():
    refused("[dataset]\nn_images = 0\nseed = 1\n[base]\n", "dataset.n_images", "below")
    refused(BASE.replace("n_images = 12", "n_images = 100000000"), "dataset.n_images", "beyond the bound 10000000")
    refused(BASE.replace("seed = 3", "seed = -1"), "dataset.seed")
    refused(BASE.replace("seed = 3\n", ""), "dataset.seed", "missing")
    refused(BASE.replace("shard_size = 5", "shard_size = 50"), "dataset.shard_size", "beyond")
    refused(BASE + "[dataset.x]\n", "dataset.x", "unknown key")
    refused(BASE.replace("shard_size = 5", "shard_size = 5\nformat = 'tiff'"), "dataset.format", "'nxmx'")
    refused("[dataset]\nn_images = 1\nseed = 1\n", "base", "missing")
    refused(BASE.replace("n_images = 12", "n_images = 10\nnimages = 3"), "dataset.nimages", "did you mean 'n_images'")
    # the total bound: 4096² f32 pixels x 2·10⁶ images (122 TiB) is beyond 64 TiB
    big = BASE.replace("-detpixels 32", "-detpixels 4096").replace("n_images = 12", "n_images = 2000000").replace("shard_size = 5", "shard_size = 100")
    refused(big, "dataset.n_images", "TiB", "beyond the bound")
    refused(BASE.replace("-lambda 1", "-lambda x"), "base.args", "-lambda")
    refused(BASE + "[vary]\norientation = 'random'\n", "vary.orientation")
    refused("[dataset\n", "(toml)", line=1)
    bad = BASE + "[vary]\nN = @\n"
    refused(bad, "(toml)", f"(at line {line_of(bad, 'N = @')}, column 5)", line=line_of(bad, "N = @"))


def test_params_depend_on_seed_and_index_only():
    s = spec("""[vary]
orientation = "uniform"
distance_mm = { dist = "uniform", low = 90, high = 110 }
mosaic_spread_deg = { dist = "lognormal", mean = -2, sd = 0.3 }
cell_A_deg = { dist = "normal", mean = [100, 100, 100, 90, 90, 90], sd = [1, 1, 1, 0, 0, 0] }
N = { dist = "grid", values = [3, 5, 7] }
""", base=NPZ)
    a = [dataset.image_params(s, i) for i in range(12)]
    b = [dataset.image_params(s, i) for i in reversed(range(12))][::-1]
    for x, y in zip(a, b):
        assert np.array_equal(x["rotation"], y["rotation"]) and x["distance_mm"] == y["distance_mm"]
    # rotations are proper and differ; draws lie in their ranges; the grid cycles
    for p in a:
        r = p["rotation"]
        assert np.allclose(r @ r.T, np.eye(3)) and abs(np.linalg.det(r) - 1) < 1e-12
        assert 90 <= p["distance_mm"] <= 110 and p["mosaic_spread_deg"] > 0
        assert p["cell_A_deg"][3:] == (90.0, 90.0, 90.0)
    assert [p["N"] for p in a] == [3.0, 5.0, 7.0] * 4
    assert len({p["noise_seed"] for p in a}) == 12 and len({p["distance_mm"] for p in a}) == 12
    # another master seed: other draws
    s2 = parse_spec(str(s.text).replace("seed = 3", "seed = 4"))
    assert dataset.image_params(s2, 0)["distance_mm"] != a[0]["distance_mm"]


def test_uniform_orientations_cover_so3():
    s = parse_spec(BASE.replace("n_images = 12", "n_images = 4000").replace("shard_size = 5", "shard_size = 100") + "[vary]\norientation = 'uniform'\n")
    z = np.array([dataset.image_params(s, i)["rotation"][:, 2] for i in range(4000)])
    # a uniform rotation takes a fixed axis to a point uniform on the sphere: every
    # coordinate of it uniform on [-1, 1] (mean 0, variance 1/3)
    assert np.all(np.abs(z.mean(axis=0)) < 0.05), z.mean(axis=0)
    assert np.all(np.abs(z.var(axis=0) - 1 / 3) < 0.03), z.var(axis=0)
    hist, _ = np.histogram(z[:, 0], bins=10, range=(-1, 1))
    assert hist.min() > 300 and hist.max() < 500, hist


def test_rotation_series_one_crystal_per_series():
    s = spec("""[vary]
orientation = "uniform"
rotation = { start_deg = 10, width_deg = 0.5, count = 4 }
distance_mm = { dist = "uniform", low = 90, high = 110 }
""", base=NPZ.replace("n_images = 12", "n_images = 8").replace("shard_size = 5", "shard_size = 4"))
    p = [dataset.image_params(s, i) for i in range(8)]
    assert [x["phi_deg"] for x in p] == [10, 10.5, 11, 11.5] * 2
    assert all(np.array_equal(x["rotation"], p[0]["rotation"]) for x in p[:4])
    assert not np.array_equal(p[4]["rotation"], p[0]["rotation"])
    assert len({x["distance_mm"] for x in p}) == 2 and len({x["noise_seed"] for x in p}) == 8


def test_size_mm_names_one_field_per_class():
    """size_mm is a field of Crystal (-xtalsize) and of Detector (-detsize): in vary and in
    overrides each is named with its class's prefix, the bare name refused naming both; varying
    the crystal's size changes the images, and the labels hold the sizes drawn."""
    refused(BASE + "[vary]\nsize_mm = { dist = 'uniform', low = 0.001, high = 0.002 }\n", "vary.size_mm",
            "crystal_size_mm", "detector_size_mm")
    s = spec("[vary]\ncrystal_size_mm = { dist = 'grid', values = [0.0005, 0.002] }\n", base=NPZ)
    imgs, labels = dataset.render_shard(s, 0)
    sizes = [dataset.image_params(s, i)["crystal_size_mm"] for i in range(5)]
    assert sizes == [0.0005, 0.002] * 2 + [0.0005]
    assert list(labels["crystal_size_mm"]) == sizes
    # a crystal 4x larger: (4³)² = 4096x the peak (N from the size, the lattice factor ~ N²)
    assert imgs[1].max() > 100 * imgs[0].max()
    assert np.array_equal(imgs[0], imgs[2])
    r = dataset.Renderer(s)
    sim = r.simulator()
    assert np.array_equal(sim.render(**r.overrides(dataset.image_params(s, 1))), imgs[1])
    with pytest.raises(TypeError, match=r"'size_mm' is a field of Crystal and of Detector: say 'crystal_size_mm' or 'detector_size_mm'"):
        sim.render(size_mm=0.002)
    # each by its own name: the crystal's -xtalsize, the detector's -detsize
    assert override_words({"crystal_size_mm": 0.002}) == ["-xtalsize", "0.002"]
    assert override_words({"detector_size_mm": 1.6}) == ["-detsize", "1.6"]


@pytest.mark.parametrize("text,key,words", [
    # huge numbers: beyond the bounds, or beyond what TOML's integers hold
    (BASE.replace("n_images = 12", "n_images = 1000000000000000000"), "dataset.n_images", ["beyond the bound"]),
    (BASE.replace("seed = 3", "seed = 99999999999999999999999"), "dataset.seed", ["beyond the bound"]),
    (BASE + "[vary]\ndistance_mm = { dist = 'uniform', low = 1e308, high = 1e309 }\n", "vary.distance_mm.high", []),
    (BASE + "[vary]\ndistance_mm = { dist = 'normal', mean = 100, sd = 1e300 }\n", "vary.distance_mm.sd", []),
    # deep nesting
    (BASE + "[vary]\ncell_A_deg = { dist = 'grid', values = " + "[" * 5000 + "]" * 5000 + " }\n", "(toml)", ["nested too deeply"]),
    (BASE + "[vary]\nN = { dist = 'grid', values = [[[[1]]]] }\n", "vary.N.values", []),
    # typos in the chain and elsewhere
    (BASE + "[chain]\nnoize = '-readout_noise 2'\n", "chain.noize", ["unknown key"]),
    (BASE + "[chain]\nnoise = 42\n", "chain.noise", []),
    (BASE.replace("[base]", "[base]\nprecison = 'f32'"), "base.precison", ["unknown key"]),
])
def test_hostile_descriptions_are_refused_naming_the_key(text, key, words):
    refused(text, key, *words)


def test_hostile_files_name_the_file_and_write_nothing(tmp_path):
    """A description that is not UTF-8, or refused anywhere, is a SpecError naming the file and
    the key, and the run writes nothing (the output folder is not even made)."""
    import subprocess
    import sys

    bad = tmp_path / "latin1.toml"
    bad.write_bytes(BASE.replace("[base]", "# caf\xe9\n[base]").encode("latin-1"))
    with pytest.raises(SpecError) as e:
        dataset.load_spec(str(bad))
    assert str(e.value).startswith(f"{bad}: (file): not UTF-8 text: byte 0xe9"), str(e.value)
    late = tmp_path / "late.toml"
    # everything valid but the last key of the last table
    late.write_text(BASE.replace("seed = 3", 'seed = 3\noutput = "out"') + "[chain]\nnoise = '-readout_noise 2'\nbackgrond = 'x'\n")
    for p, key in [(bad, "(file)"), (late, "chain.backgrond")]:
        r = subprocess.run([sys.executable, "-m", "nanobragg.dataset", "run", str(p), "--workers", "1", "--no-progress"],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode != 0 and key in r.stderr and str(p) in r.stderr, r.stderr
        assert not (tmp_path / "out").exists(), "a refused description wrote output"


def test_errors_name_the_line_of_their_key():
    """The line comes from the text as written: past comments, multi-line strings that hold
    lines looking like keys, dotted and quoted keys, and inline tables (their table's line)."""
    text = BASE + '''# n_images = 5 (a comment, not the key)
[chain]
noise = """
-readout_noise 3
[vary]
"wavelength_A" = { dist = 'uniform', low = 1.2, high = 1.1 }
"""
[vary]
"wavelength_A" = { dist = 'uniform', low = 1.2, high = 1.1 }
'''
    refused(text, "vary.wavelength_A.high", "below low", line=text[:text.rindex('"wavelength_A" =')].count("\n") + 1)
    dotted = BASE + "[vary]\norientation = 'uniform'\n\nN.dist = 'grid'\nN.values = []\n"
    refused(dotted, "vary.N.values", "non-empty", line=line_of(dotted, "N.values"))
    # a required key that is missing: its table's header
    refused(BASE.replace("seed = 3\n", ""), "dataset.seed", "missing", line=line_of(BASE, "[dataset]"))
    # a table that is missing: no line
    refused("[dataset]\nn_images = 1\nseed = 1\n", "base", "missing", line=0)


def test_mutated_descriptions_are_spec_errors_with_lines_in_the_text():
    """A seeded mutation fuzz of a valid description (TOML fragments inserted, spans deleted or
    copied): every outcome is a Spec or a SpecError whose line is in the text, never another
    exception (a minutes-long run of the same loop found nothing; this keeps a short one)."""
    import random

    text = NPZ + "[vary]\norientation = 'uniform'\nN = { dist = 'grid', values = [5, 10] }\n" \
        "[chain]\nnoise = \"\"\"-readout_noise 3\"\"\"\n"
    parse_spec(text)
    frags = ["[", "]", "[[", "]]", '"', "'", '"""', "'''", "=", ".", "#", "\n", " ", "{", "}", ",", "vary",
             "dataset", "N", "seed", '"bslz4"', "1e400", "-1", "nan", "true", "[1,2]", "\\", "\r\n", "\u00e9"]
    rnd = random.Random(32)
    errors = 0
    for _ in range(3000):
        s = list(text)
        for _ in range(rnd.randint(1, 6)):
            i, op = rnd.randint(0, len(s)), rnd.random()
            if op < 0.5:
                s[i:i] = list(rnd.choice(frags))
            elif op < 0.8:
                del s[i:i + rnd.randint(1, 5)]
            else:
                j = rnd.randint(0, len(s))
                s[i:i] = s[j:j + rnd.randint(1, 30)]
        t = "".join(s)
        try:
            parse_spec(t)
        except SpecError as e:
            errors += 1
            assert e.line is None or 1 <= e.line <= len(t.splitlines()), (e.line, t)
            assert str(e).startswith(f"<spec> line {e.line}: " if e.line else "<spec>: "), str(e)
    assert errors > 1000, errors  # the mutations do break most descriptions


# the base's detector: 32x32 pixels of 0.1 mm at 100 mm
BG = "-stol water.stol -thick 0.1 -distance 100 -detpixels 32 -pixel 0.1"


@pytest.mark.parametrize("extra,key,words", [
    # the chain's words, files and detector are checked with the rest of the description
    ("[chain]\nnoise = '-readout_nois 3'\n", "chain.noise", ["unknown flag '-readout_nois'", "-readout_noise"]),
    ("[chain]\nnoise = '-readout_noise 3 -detpixels 64'\n", "chain.noise", ["its detector is 64x64 pixels, the images 32x32"]),
    ("[chain]\nnoise = '-readout_noise abc'\n", "chain.noise", ["-readout_noise: expected a number, found 'abc'"]),
    # the noisify command reads these as upstream does (with a warning); a description refuses them
    ("[chain]\nnoise = '-readout_noise -3'\n", "chain.noise", ["-readout_noise -3: expected a read-out noise >= 0"]),
    ("[chain]\nnoise = '-gain 0'\n", "chain.noise", ["-gain 0: expected a gain > 0"]),
    ("[chain]\nbackground = '-stol nonexist.stol -thick 0.1 -distance 100 -detpixels 32 -pixel 0.1'\n", "chain.background",
     ["cannot read file 'nonexist.stol'", "from the current folder"]),
    ("[chain]\nbackground = '-stol water.stol -thik 0.1'\n", "chain.background", ["unknown flag '-thik'"]),
    ("[chain]\nbackground = '-stol water.stol -thick 0.1 -distance 100 -detpixels 64 -pixel 0.1'\n", "chain.background",
     ["the background is 64x64 pixels, the detector 32x32"]),
])
def test_the_chain_is_checked_naming_its_key(extra, key, words):
    import pickle

    refused(BASE + extra, key, *words)
    with pytest.raises(SpecError) as e:
        parse_spec(BASE + extra)
    # as a pool's worker sends it to the caller
    again = pickle.loads(pickle.dumps(e.value))
    assert (str(again), again.key, again.line) == (str(e.value), e.value.key, e.value.line)


def test_a_valid_chain_is_accepted_and_its_background_rendered_once():
    from nanobragg.dataset import params

    s = spec(f"[chain]\nbackground = '{BG}'\nnoise = '-readout_noise 3'\n")
    bg = params._last_background[1]
    assert bg.shape == (32, 32) and bg.max() > 0
    assert dataset.Renderer(s).background() is bg  # the check's image serves the renders
    assert np.array_equal(bg, nb.chain.nonbragg(BG))


def test_every_model_is_checked_naming_vary_model(tmp_path):
    """A model of vary.model that the crate refuses is the model's error (its file, its line),
    not base.args', wherever it stands in the list."""
    import pathlib

    models = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "models"
    good = models / "hem_p1.pdb"
    bad = tmp_path / "badelem.pdb"
    bad.write_text("CRYST1  100.000  100.000  100.000  90.00  90.00  90.00 P 1\n"
                   "ATOM      1  CA  ALA A   1      1.000   2.000   3.000  1.00 20.00           Qz\n")
    base = BASE.replace("-default_F 100 ", "")
    for values in ([bad, good], [good, bad]):
        text = base + f"[vary]\nmodel = {{ dist = 'choice', values = [{', '.join(repr(str(v)) for v in values)}] }}\n"
        msg = refused(text, "vary.model.values", str(bad), "line 2", "Qz")
        assert "base.args" not in msg
    spec(f"[vary]\nmodel = {{ dist = 'choice', values = ['{good}', '{good}'] }}\n", base=base)


def test_image_indices_are_checked_alike_by_render_and_read(tmp_path):
    """render_image and read_image take an int in 0..n_images-1 (a NumPy integer too): a
    negative index or one past the end is an IndexError naming it (not one from the end, not a
    missing shard file), a non-integer a TypeError naming its type."""
    p = tmp_path / "spec.toml"
    p.write_text(BASE.replace("n_images = 12", "n_images = 4").replace("shard_size = 5", "shard_size = 2"))
    s = dataset.load_spec(str(p))
    dataset.run_local(s, workers=1, progress=False)
    for f in (dataset.render_image, dataset.read_image):
        for i in (-1, 4, 12):
            with pytest.raises(IndexError, match=rf"^image {i} is not in 0\.\.3$"):
                f(s, i)
        for i, name in (("3", "str"), (1.0, "float"), (True, "bool"), (None, "NoneType")):
            with pytest.raises(TypeError, match=rf"^image index must be an int, got {name}$"):
                f(s, i)
    assert np.array_equal(dataset.read_image(s, np.int64(3)), dataset.render_image(s, 3))


def refused_at(text, key, line, *words, path="x.toml"):
    """``text`` (as the file ``path``) refused for ``key`` at ``line``, the message naming
    the file, line and key first."""
    with pytest.raises(SpecError) as e:
        parse_spec(text, path=path)
    msg = str(e.value)
    assert (e.value.file, e.value.key, e.value.line) == (path, key, line), msg
    assert msg.startswith(f"{path} line {line}: {key}: "), msg
    for w in words:
        assert w in msg, msg
    return msg


# what the spec fuzz target (test_dataset_spec_fuzz.py) found: the lines of keys after TOML
# that the line scan misread
@pytest.mark.parametrize("before", [
    # a comment holding quotes that would open a multi-line string (the fuzz target's input:
    # docs/datasets.md's reference with '"""' typed into a comment)
    'n_images = 12   #""" required',
    "n_images = 12   # '''",
    'n_images = 12   # "',
    # a string holding '#' and quotes, then a comment
    'n_images = 12\noutput = "a # \\"\\"\\" b"  # """',
    # a multi-line string closed on its line, another opened and closed later
    'output = """a"""  # x\nn_images = 12',
    # a multi-line array whose lines start with '[' (not table headers) or hold '='
    'n_images = 12\noutput = "o"\n[vary]\nN = { dist = "grid", values = [[5, 5, 5], [6, 6, 6]] }\ncell_A_deg = { dist = "grid", values = [\n[100, 100, 100, 90, 90, 90],\n[90, 90, 90, 90, 90, 90], ] }',
    "n_images = 12\n[vary]\nmosaic_spread_deg = { dist = 'grid', values = [0.1, 0.2] }\nphi_deg = { dist = 'grid', values = [\n  0, # a = 1\n  1 ] }",
    # characters that str.splitlines ends a line at, TOML does not (\u2028, \x85)
    "n_images = 12  # a\u2028b\x85c",
    'n_images = 12\noutput = "x\u2028y"',
])
def test_the_line_of_a_key_after_quotes_comments_and_arrays(before):
    text = "[base]\nargs = \"-cell 100 100 100 90 90 90 -default_F 100 -detpixels 32\"\n[dataset]\nseed = 3\n" + before \
        + ("" if "[vary]" in before else "\n[vary]") + "\nrotation = { width_deg = 1, count = 5 }\n"
    line = text.split("\n").index("rotation = { width_deg = 1, count = 5 }") + 1
    refused_at(text, "vary.rotation.count", line, "5 frames do not divide")


@pytest.mark.parametrize("args,flag,what", [
    ("-cell 100 100 100 90 90 90 -default_F 100 -N", "-N", "n"),
    ("-cell 100 100 100 90 90 90 -N 5 -default_F", "-default_F", "F"),
    ("-default_F 100 -N 5 -cell", "-cell", "a b c α β γ"),
])
def test_args_ending_with_a_flag_short_of_its_values(args, flag, what):
    """base.args ending with a flag that lacks its value: said so, naming base.args and its
    line, not read with the words of the typed configuration that follow it (the crate then
    said "-N: expected an integer, found '-precision'", a word the description never wrote)."""
    text = f'[dataset]\nn_images = 2\nseed = 1\n[base]\nprecision = "f64"\nargs = "{args}"\n'
    msg = refused_at(text, "base.args", 6, f"ends with {flag}, which takes {what}")
    assert "-precision" not in msg
    # as a list of words too; a negative number after the flag is its value
    refused_at(text.replace(f'"{args}"', repr(args.split()).replace("'", '"')), "base.args", 6, f"ends with {flag}")
    parse_spec(text.replace(f'"{args}"', f'"{args} -1"' if flag == "-N" else f'"{args} 1"').replace("-N -1", "-N 1"),
               path="x.toml")


BIG = 10**400  # a TOML integer beyond double precision's range


@pytest.mark.parametrize("extra,key,words", [
    # what the fuzz target found: a lognormal whose logarithm's range passes exp()'s (the
    # check computed exp(mean + 6 sd): an OverflowError), and its input shrunk
    ("[vary]\ncell_A_deg = { dist = 'lognormal', mean = 0.0, sd = 120.0 }\n", "vary.cell_A_deg.sd", ["beyond the largest"]),
    ("[vary]\nmosaic_spread_deg = { dist = 'lognormal', mean = 710, sd = 0 }\n", "vary.mosaic_spread_deg.mean", ["beyond the largest"]),
    # its siblings: draws of inf (a distance, with no upper bound), of 0 (a wavelength > 0),
    # and an infinite uniform width or normal spread (NumPy would draw inf or nan)
    ("[vary]\ndistance_mm = { dist = 'lognormal', mean = 710, sd = 0 }\n", "vary.distance_mm.mean", ["beyond the largest"]),
    ("[vary]\nwavelength_A = { dist = 'lognormal', mean = -800, sd = 0 }\n", "vary.wavelength_A.mean", ["round to 0", "wavelength_A"]),
    ("[vary]\nwavelength_A = { dist = 'lognormal', mean = -700, sd = 10 }\n", "vary.wavelength_A.sd", ["round to 0"]),
    ("[vary]\nphi_deg = { dist = 'uniform', low = -1e308, high = 1e308 }\n", "vary.phi_deg.high", ["wider than the largest"]),
    ("[vary]\nbeam_center_mm = { dist = 'uniform', low = [-1e308, 0], high = [1e308, 1] }\n", "vary.beam_center_mm.high",
     ["component 1", "wider than the largest"]),
    ("[vary]\nphi_deg = { dist = 'normal', mean = 0, sd = 1e308 }\n", "vary.phi_deg.sd", ["beyond the largest"]),
    # integers beyond double precision (an OverflowError from float() or math.isfinite, in
    # the typed configuration and the validator), wherever they stand, each naming its key
    (f"[base.beam]\nwavelength_A = {BIG}\n", "base.beam.wavelength_A", ["an integer beyond the largest number"]),
    (f"[base.crystal]\ncell_A_deg = [50, 50, 50, 90, 90, {BIG}]\n", "base.crystal.cell_A_deg", ["beyond the largest"]),
    (f"[base.crystal]\nN = [1, 1, {BIG}]\n", "base.crystal.N", ["beyond the largest"]),
    (f"[base.crystal]\nmosaic_domains = {BIG}\n", "base.crystal.mosaic_domains", ["beyond the largest"]),
    (f"[base.crystal]\nrotation = [[1, 0, 0], [0, 1, 0], [0, 0, {BIG}]]\n", "base.crystal.rotation", ["beyond the largest"]),
    (f"[base.beam]\nsources = [[0, 0, 1, 1, {BIG}]]\n", "base.beam.sources", ["beyond the largest"]),
    (f"[vary]\ndistance_mm = {{ dist = 'uniform', low = 1, high = {BIG} }}\n", "vary.distance_mm.high", ["beyond the largest"]),
    (f"[vary]\nrotation = {{ width_deg = {BIG}, count = 1 }}\n", "vary.rotation.width_deg", ["beyond the largest"]),
    (f"[vary]\nN = {{ dist = 'grid', values = [[1, 2, {BIG}]] }}\n", "vary.N.values", ["beyond the largest"]),
    (f"[vary]\nN = 0x{'f' * 5000}\n", "vary.N", ["beyond the largest"]),  # (no str() of it: over 4300 digits)
    (f"[dataset]\nscale = 0x{'f' * 256}\n", "dataset.scale", ["beyond the largest"]),
    # a scalar parameter given a list: said so (was "expected 1 number, got 1")
    ("[vary]\nwater_um = { dist = 'grid', values = [[1]] }\n", "vary.water_um.values", ["expected a number, got a list of 1"]),
])
def test_numbers_beyond_double_precision_are_refused_naming_the_key(extra, key, words):
    text = NPZ + extra if not extra.startswith("[dataset]") else NPZ.replace("[dataset]", extra)
    refused_at(text, key, text.split("\n").index(extra.split("\n")[1]) + 1, *words)


@pytest.mark.parametrize("value", ['""', '"a\\u0000b"'])
def test_an_output_that_is_no_folder_is_refused(value):
    """dataset.output "" (no folder: the run wrote into the current folder, or the
    description's) or holding a NUL byte (the run's ValueError from deep inside): refused with
    the description."""
    text = NPZ.replace("seed = 3", f"seed = 3\noutput = {value}")
    refused_at(text, "dataset.output", line_of(text, "output ="), "expected a folder's path")


def test_an_integer_of_more_than_4300_digits_is_a_toml_error_at_its_line():
    """tomllib reads a decimal integer with int(), which refuses more than 4300 digits with a
    ValueError (not a TOMLDecodeError): the description's error, at the integer's line."""
    text = NPZ.replace("seed = 3", "seed = 3\nscale = " + "1" * 5000)
    refused_at(text, "(toml)", text.split("\n").index("scale = " + "1" * 5000) + 1, "more than 4300 digits")


def test_a_varied_phi_renders(tmp_path):
    """vary.phi_deg (without vary.rotation) renders each image at its drawn φ, as
    Simulator.render(phi_deg=...) does (the fuzz target's input: every image of such a
    description was a KeyError 'osc_deg', an oscillation only rotation series have)."""
    s = spec("[vary]\nphi_deg = { dist = 'grid', values = [0.0, 30.0] }\n", base=NPZ)
    imgs, labels = dataset.render_shard(s, 0)
    assert list(labels["phi_deg"]) == [0.0, 30.0, 0.0, 30.0, 0.0]
    sim = dataset.Renderer(s).simulator()
    for i in (0, 1):
        assert np.array_equal(imgs[i], sim.render(phi_deg=[0.0, 30.0][i], mosaic_seed=dataset.image_params(s, i)["mosaic_seed"]))
    assert not np.array_equal(imgs[0], imgs[1])
    assert np.array_equal(dataset.render_image(s, 2), imgs[2])
