"""nanobragg.dataset: the description is validated before any rendering, errors name the key;
per-image parameters derive from (master seed, index) alone."""

import numpy as np
import pytest

from nanobragg import dataset
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


def refused(text, key, *words):
    with pytest.raises(SpecError) as e:
        parse_spec(text)
    assert e.value.key == key, str(e.value)
    msg = str(e.value)
    assert msg.startswith(f"<spec>: {key}: "), msg
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
    refused("[dataset\n", "(toml)")


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
