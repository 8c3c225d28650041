"""nanobragg.dataset: shards (pure, atomic, resumable), NXmx/npz contents, the engines (local
pool, Ray), a worker killed mid-shard, I/O errors, the Slurm script's array entry point."""

import errno
import hashlib
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

import nanobragg as nb
from nanobragg import dataset
from nanobragg.dataset import shards as shards_mod

SPEC = """
[dataset]
n_images = {n}
shard_size = {k}
seed = 11
format = "{fmt}"
output = "out"
[base]
args = "-cell 78 78 38 90 90 90 -default_F 3000 -N 6 -lambda 1.0 -distance 80 -detpixels 48 -pixel 0.2 -mosaic 0.1 -mosaic_dom 3"
threads = 1
[vary]
orientation = "uniform"
wavelength_A = {{ dist = "uniform", low = 0.9, high = 1.1 }}
fluence_ph_per_m2 = {{ dist = "lognormal", mean = 55.3, sd = 0.5 }}
N = {{ dist = "grid", values = [4, 6] }}
"""


def write_spec(folder, n=6, k=2, fmt="nxmx", extra=""):
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "spec.toml"
    p.write_text(SPEC.format(n=n, k=k, fmt=fmt) + extra)
    return dataset.load_spec(str(p))


def digests(spec):
    return {e["file"]: e["sha256"] for e in dataset.check_manifest(spec)}


def run_cli(*args, env=None, check=True):
    r = subprocess.run([sys.executable, "-m", "nanobragg.dataset", *args], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **(env or {})})
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_images_labels_and_geometry(tmp_path):
    spec = write_spec(tmp_path)
    dataset.run_local(spec, workers=1, progress=False)
    master = dataset.finalize(spec)
    with h5py.File(tmp_path / "out" / "shard-00001.h5") as f:
        data = f["/entry/data/data"]
        assert data.shape == (2, 48, 48) and data.dtype == np.int32 and data.chunks == (1, 48, 48)
        assert data.compression == "gzip" and data.shuffle
        lab = f["/entry/labels"]
        assert list(lab["index"][:]) == [2, 3]
        for j, i in enumerate((2, 3)):
            p = dataset.image_params(spec, i)
            assert np.array_equal(lab["rotation"][j], p["rotation"])
            assert lab["wavelength_A"][j] == p["wavelength_A"] and lab["N"][j] == p["N"]
            assert lab["noise_seed"][j] == p["noise_seed"] and lab["mosaic_seed"][j] == p["mosaic_seed"]
            # the image is the Python API's render with the labels' values
            sim = nb.Simulator.from_args(list(spec.args) + ["-precision", "f32", "-backend", "cpu", "-threads", "1"])
            img = sim.render(rotation=p["rotation"].tolist(), wavelength_A=p["wavelength_A"], N=p["N"],
                             fluence_ph_per_m2=p["fluence_ph_per_m2"], mosaic_seed=p["mosaic_seed"])
            assert np.array_equal(data[j], np.rint(img.astype(np.float64)).astype(np.int32))
            assert data[j].max() > 0
        assert f["/entry/dataset/spec"][()].decode() == spec.text
        assert f["/entry/definition"][()] == b"NXmx"
        # the varied λ: one per frame (the labels'), not the base's 1.0
        assert list(f["/entry/instrument/beam/incident_wavelength"][()]) == list(lab["wavelength_A"][:])
        assert "depends_on" not in f["/entry/sample"]  # stills
        o = f["/entry/instrument/detector/transformations/detector_origin"]
        # MOSFLM's default beam centre (9.6 + 0.2)/2 = 4.9 mm, plus half a pixel: the first
        # pixel's outer corner is at (5.0, 5.0, 80) mm in McStas
        assert np.allclose(o[0] * o.attrs["vector"], [5.0, 5.0, 80.0], atol=1e-9)
    # the master joins the shards: virtual datasets
    with h5py.File(master) as f:
        d = f["/entry/data/data"]
        assert d.is_virtual and d.shape == (6, 48, 48)
        for i in range(6):
            assert np.array_equal(d[i], dataset.read_image(spec, i))
        assert list(f["/entry/labels/index"][:]) == list(range(6))
        assert f["/entry/labels/rotation"].shape == (6, 3, 3)
        lam = [dataset.image_params(spec, i)["wavelength_A"] for i in range(6)]
        assert list(f["/entry/instrument/beam/incident_wavelength"][()]) == lam


def test_bslz4_shards_hold_the_deflate_shards_frames(tmp_path):
    """`dataset.compression = "bslz4"`: the frames as bitshuffle + LZ4 chunks (HDF5 filter
    32008, EIGER's client values), read back by h5py with hdf5plugin's filter: the same frames
    as the default (shuffle + deflate) dataset's, the rest of the shard alike; `verify` reads them."""
    import hdf5plugin  # noqa: F401  (registers the bitshuffle filter)

    specs = {}
    for comp in ("deflate", "bslz4"):
        text = SPEC.format(n=5, k=3, fmt="nxmx").replace('format = "nxmx"', f'format = "nxmx"\ncompression = "{comp}"')
        (tmp_path / comp).mkdir()
        (tmp_path / comp / "spec.toml").write_text(text)
        specs[comp] = spec = dataset.load_spec(str(tmp_path / comp / "spec.toml"))
        assert spec.compression == comp
        dataset.run_local(spec, workers=1, progress=False)
        dataset.finalize(spec)
    assert dataset.verify(specs["bslz4"], rerender=2, seed=1)["rerendered"]
    for shard in ("shard-00000.h5", "shard-00001.h5"):
        with h5py.File(tmp_path / "deflate" / "out" / shard) as d, h5py.File(tmp_path / "bslz4" / "out" / shard) as b:
            dd, bd = d["/entry/data/data"], b["/entry/data/data"]
            assert bd.chunks == dd.chunks == (1, 48, 48) and bd.dtype == np.int32
            dcpl = bd.id.get_create_plist()
            assert dcpl.get_nfilters() == 1
            fid, _, cd, _ = dcpl.get_filter(0)
            assert (fid, tuple(cd)) == (32008, (0, 2, 4, 0, 2))
            assert bd[...].max() > 0 and np.array_equal(bd[...], dd[...])
            for k in ("index", "rotation", "wavelength_A"):
                assert np.array_equal(b["/entry/labels"][k][...], d["/entry/labels"][k][...])
    with h5py.File(tmp_path / "bslz4" / "out" / "master.h5") as f:
        for i in range(5):
            assert np.array_equal(f["/entry/data/data"][i], dataset.read_image(specs["deflate"], i))


def test_pure_shards_any_workers_any_order_and_alone(tmp_path):
    a = write_spec(tmp_path / "a")
    dataset.run_local(a, workers=1, progress=False)
    b = write_spec(tmp_path / "b")
    # other order, and a process pool of 2
    dataset.run_local(b, workers=1, shards=[2, 0], progress=False)
    dataset.run_local(b, workers=2, progress=False)
    assert digests(a) == digests(b)
    for name in digests(a):
        assert (tmp_path / "a/out" / name).read_bytes() == (tmp_path / "b/out" / name).read_bytes()
    # any image re-rendered alone is bit-identical
    for i in (0, 3, 5):
        assert np.array_equal(dataset.render_image(a, i), dataset.read_image(a, i))
    assert dataset.verify(a, rerender=2, seed=1)["shards"] == 3


def test_a_description_given_as_text_runs_like_its_file(tmp_path, monkeypatch):
    """A description made by parse_spec (no file: its path is "<spec>") runs on one worker and
    on a pool (whose forkserver started in another folder: its workers work in the caller's,
    where the relative output is), and writes the bytes that load_spec of the same text in a
    file writes (shards, manifest, spec.toml, master.h5)."""
    ref = write_spec(tmp_path / "file", n=6, k=2)
    monkeypatch.chdir(tmp_path / "file")
    dataset.run_local(ref, workers=2, progress=False)  # (the forkserver, when it starts here)
    dataset.finalize(ref)
    for workers in (1, 2):
        monkeypatch.chdir(tmp_path)
        mem = dataset.parse_spec(ref.text)
        assert mem.path == "<spec>" and mem.output == "out"
        (tmp_path / f"cwd{workers}").mkdir()  # (an empty folder of its own for each)
        monkeypatch.chdir(tmp_path / f"cwd{workers}")
        res = dataset.run_local(mem, workers=workers, progress=False)
        assert res["shards"] == 3
        dataset.finalize(mem)
        out = tmp_path / f"cwd{workers}" / "out"
        assert digests(mem) == digests(ref)
        for name in [*digests(ref), "spec.toml", "master.h5"]:
            assert (out / name).read_bytes() == (tmp_path / "file" / "out" / name).read_bytes(), name
        for i in (0, 5):
            assert np.array_equal(dataset.read_image(mem, i), dataset.read_image(ref, i))


def test_the_slurm_script_needs_the_descriptions_file(tmp_path):
    """The Slurm array's tasks read the description from its file: a description without one
    (parse_spec), or whose file changed since, is refused, naming it, and nothing is written."""
    spec = write_spec(tmp_path, n=4, k=2)
    mem = dataset.parse_spec(spec.text, output=str(tmp_path / "mem"))
    with pytest.raises(dataset.DatasetError, match=r"^slurm_script: the description has no file \('<spec>'"):
        dataset.slurm_script(mem, pixels=100)
    (tmp_path / "spec.toml").write_text(spec.text.replace("seed = 11", "seed = 12"))
    with pytest.raises(dataset.DatasetError, match=rf"^slurm_script: {tmp_path}/spec.toml is no longer the description"):
        dataset.slurm_script(spec, pixels=100)
    assert not (tmp_path / "mem").exists() and not (tmp_path / "out").exists()


def test_pool_workers_see_the_callers_environment_now(tmp_path):
    """The local pool's workers are forks of a forkserver started by an earlier run: they
    still get the caller's environment as it is at this run (here the fault-injection
    variable, set after the server started: the worker of shard 1 kills itself)."""
    first = write_spec(tmp_path / "first", n=4, k=2)
    dataset.run_local(first, workers=2, progress=False)
    spec = write_spec(tmp_path / "second", n=4, k=2)
    marker = tmp_path / "killed"
    os.environ["NANOBRAGG_DATASET_KILL"] = f"1:1:{marker}"
    try:
        with pytest.raises(dataset.DatasetError, match="a worker process died"):
            dataset.run_local(spec, workers=2, progress=False)
    finally:
        del os.environ["NANOBRAGG_DATASET_KILL"]
    assert marker.exists()
    dataset.run_local(spec, workers=2, progress=False)  # resumed: the same bytes
    assert digests(spec) == digests(first)


def test_resume_skips_complete_shards(tmp_path):
    spec = write_spec(tmp_path)
    r1 = dataset.run_local(spec, workers=1, shards=[1], progress=False)
    assert r1["shards"] == 1
    before = (tmp_path / "out/shard-00001.h5").stat().st_mtime_ns
    r2 = dataset.run_local(spec, workers=1, progress=False)
    assert (r2["shards"], r2["skipped"], r2["images"]) == (2, 1, 4)
    assert (tmp_path / "out/shard-00001.h5").stat().st_mtime_ns == before
    # a shard file that lost its tail is not complete: rendered again
    p = tmp_path / "out/shard-00002.h5"
    p.write_bytes(p.read_bytes()[:-10])
    with pytest.raises(dataset.DatasetError, match="shard-00002.h5 has"):
        dataset.check_manifest(spec)
    assert dataset.run_local(spec, workers=1, progress=False)["shards"] == 1
    dataset.check_manifest(spec)
    # another description in the same folder is refused
    (tmp_path / "spec.toml").write_text(spec.text.replace("seed = 11", "seed = 12"))
    other = dataset.load_spec(str(tmp_path / "spec.toml"))
    with pytest.raises(dataset.DatasetError, match="holds another dataset"):
        dataset.run_local(other, workers=1, progress=False)


def test_a_folder_left_by_a_refused_run_says_how_to_start_over(tmp_path):
    """A run of another description (or an older version) that stopped before finishing a
    shard left spec.toml (and noise.json): the corrected description is refused with the folder,
    "no finished shard" and the command that starts over (--restart), which removes only what
    such a run leaves, and refuses a folder with a finished shard or a file being written."""
    spec = write_spec(tmp_path, n=4, k=2)
    out = tmp_path / "out"
    (out / "manifest").mkdir(parents=True)
    (out / "spec.toml").write_text(spec.text.replace("seed = 11", "seed = 10"))
    (out / "notes.txt").write_text("the user's")
    r = run_cli("run", spec.path, "--workers", "1", "--no-progress", check=False)
    assert r.returncode == 2, r.stderr
    assert f"{out} holds no finished shard" in r.stderr and "--restart" in r.stderr, r.stderr
    assert f"nanobragg-dataset run {spec.path} --output {out} --restart" in r.stderr, r.stderr
    assert (out / "spec.toml").read_text() != spec.text  # nothing touched
    # a file being written (a run in progress): --restart refuses, nothing removed
    tmp = out / ".shard-00000.h5.tmp-12345"
    tmp.write_bytes(b"x")
    r = run_cli("run", spec.path, "--workers", "1", "--no-progress", "--restart", check=False)
    assert r.returncode == 2 and "a run may be writing into it" in r.stderr and str(tmp) in r.stderr, r.stderr
    assert (out / "spec.toml").read_text() != spec.text
    tmp.unlink()
    res = json.loads(run_cli("run", spec.path, "--workers", "1", "--no-progress", "--restart").stdout)
    assert res["shards"] == 2 and (out / "spec.toml").read_text() == spec.text
    assert (out / "notes.txt").read_text() == "the user's" and (out / "master.h5").exists()
    # finished shards: --restart refuses and removes nothing; without it, "another dataset"
    other = tmp_path / "other.toml"
    other.write_text(spec.text.replace("seed = 11", "seed = 12"))
    r = run_cli("run", str(other), "--output", str(out), "--workers", "1", "--no-progress", "--restart", check=False)
    assert r.returncode == 2 and "holds 2 finished shards" in r.stderr and "nothing removed" in r.stderr, r.stderr
    assert (out / "spec.toml").read_text() == spec.text and len(digests(spec)) == 2
    with pytest.raises(dataset.DatasetError, match="holds another dataset .*2 finished shards"):
        dataset.run_local(dataset.load_spec(str(other), output=str(out)), workers=1, progress=False)


def test_an_entry_of_another_description_is_not_complete(tmp_path):
    """A run of another description still rendering when the folder was started over
    (--restart) writes its shard and entry there: the entry's spec_sha256 is not this
    description's, so the shard is rendered again (not skipped until finalize refuses it)."""
    spec = write_spec(tmp_path, n=4, k=2)
    dataset.run_local(spec, workers=1, shards=[0], progress=False)
    assert shards_mod.is_complete(spec, 0)
    p = tmp_path / "out/manifest/shard-00000.json"
    mine = json.loads(p.read_text())
    theirs = dict(mine, spec_sha256=hashlib.sha256(b"another description").hexdigest())
    p.write_text(json.dumps(theirs))
    assert not shards_mod.is_complete(spec, 0)
    assert shards_mod.pending(spec) == [0, 1]
    res = dataset.run_local(spec, workers=1, progress=False)
    assert (res["shards"], res["skipped"]) == (2, 0)
    assert json.loads(p.read_text())["spec_sha256"] == mine["spec_sha256"]
    dataset.check_manifest(spec)


def test_start_over_hints_name_the_sub_command_and_the_api(tmp_path):
    """The hint names the sub-command used (slurm's --restart, not run's, which would render
    here), restart_output(spec) for a description given as text (no file to name), and
    --restart on this description's finished shards says to resume without it."""
    spec = write_spec(tmp_path, n=4, k=2)
    out = tmp_path / "out"
    (out / "manifest").mkdir(parents=True)
    (out / "spec.toml").write_text(spec.text.replace("seed = 11", "seed = 10"))
    r = run_cli("slurm", spec.path, check=False)
    assert r.returncode == 2, r.stderr
    assert f"run `nanobragg-dataset slurm {spec.path} --output {out} --restart`" in r.stderr, r.stderr
    assert not (out / "slurm").exists()
    text = dataset.parse_spec(spec.text, output=str(out))
    with pytest.raises(dataset.DatasetError, match=r"holds no finished shard.*restart_output\(spec\)") as e:
        dataset.run_local(text, workers=1, progress=False)
    assert "<spec>" not in str(e.value) and "nanobragg-dataset" not in str(e.value)
    assert len(shards_mod.restart_output(text)) == 1
    shards_mod.prepare_output(text)
    for shard in range(text.n_shards):
        dataset.write_shard(text, shard)
    # finished shards of this same description: --restart removes nothing and says to resume
    for cmd in ("run", "slurm"):
        r = run_cli(cmd, spec.path, "--no-progress", "--restart", check=False) if cmd == "run" else \
            run_cli(cmd, spec.path, "--restart", check=False)
        assert r.returncode == 2, r.stderr
        assert "holds 2 finished shards of this description" in r.stderr and "nothing removed" in r.stderr, r.stderr
        assert f"run `nanobragg-dataset {cmd} {spec.path} --output {out}` without --restart to resume it" in r.stderr, r.stderr
    with pytest.raises(dataset.DatasetError, match="run it again without restart_output"):
        shards_mod.restart_output(text)
    assert len(digests(spec)) == 2 and (out / "spec.toml").read_text() == spec.text


def test_a_noise_record_of_another_version_without_a_finished_shard_says_restart(tmp_path):
    spec = write_spec(tmp_path, n=2, k=2, extra='[chain]\nnoise = "-readout_noise 2 -adc 10"\n')
    out = tmp_path / "out"
    (out / "manifest").mkdir(parents=True)
    old = nb._nanobragg.COUNTER_SEQUENCE - 1
    (out / "noise.json").write_text(json.dumps({"counter_sequence": old, "nanobragg_version": "0.0.9"}))
    with pytest.raises(dataset.DatasetError, match=rf"noise sequence {old};.*it holds no finished shard: to start over .*--restart") as e:
        dataset.run_local(spec, workers=1, progress=False)
    assert e.value.file == str(out / "noise.json")
    res = json.loads(run_cli("run", spec.path, "--workers", "1", "--no-progress", "--restart").stdout)
    assert res["shards"] == 1
    assert json.loads((out / "noise.json").read_text())["counter_sequence"] == nb._nanobragg.COUNTER_SEQUENCE


def test_sigkill_mid_shard_then_resume_is_bit_identical(tmp_path):
    ref = write_spec(tmp_path / "ref", n=8, k=2)
    dataset.run_local(ref, workers=1, progress=False)
    dataset.finalize(ref)
    spec = write_spec(tmp_path / "run", n=8, k=2)
    marker = tmp_path / "killed"
    # the worker rendering shard 2 SIGKILLs itself after one of its two images
    r = run_cli("run", spec.path, "--workers", "2", "--no-progress", env={"NANOBRAGG_DATASET_KILL": f"2:1:{marker}"}, check=False)
    assert marker.exists() and r.returncode == 2
    assert "a worker process died while rendering" in r.stderr and "run again to resume" in r.stderr, r.stderr
    entries = shards_mod.manifest_entries(spec)
    assert 2 not in entries and len(entries) >= 1  # at most the killed shard (and those queued behind it) lost
    assert not (tmp_path / "run/out/shard-00002.h5").exists()
    for e in entries.values():  # what the manifest lists is whole
        assert hashlib.sha256((tmp_path / "run/out" / e["file"]).read_bytes()).hexdigest() == e["sha256"]
    r = run_cli("run", spec.path, "--workers", "2", "--no-progress")
    res = json.loads(r.stdout)
    assert res["skipped"] == len(entries) and res["shards"] == 4 - len(entries)
    assert digests(spec) == digests(ref)
    for name in digests(ref):
        assert (tmp_path / "run/out" / name).read_bytes() == (tmp_path / "ref/out" / name).read_bytes()
    assert (tmp_path / "run/out/master.h5").read_bytes() == (tmp_path / "ref/out/master.h5").read_bytes()
    with h5py.File(tmp_path / "run/out/master.h5") as f, h5py.File(tmp_path / "ref/out/master.h5") as g:
        assert np.array_equal(f["/entry/data/data"][:], g["/entry/data/data"][:])
    leftovers = [p.name for p in (tmp_path / "run/out").iterdir() if ".tmp-" in p.name]
    # a killed worker can leave its temporary file, and so can a worker the broken pool stopped
    # beside it: only shards the first run did not list (never a listed shard); nothing else
    lost = [i for i in range(4) if i not in entries]
    assert all(any(n.startswith(f".shard-{i:05d}.h5.tmp-") for i in lost) for n in leftovers), leftovers


@pytest.mark.parametrize("err,word", [(errno.ENOSPC, "No space left on device"), (errno.EACCES, "Permission denied")])
def test_io_error_names_the_file_and_lists_nothing(tmp_path, monkeypatch, err, word):
    spec = write_spec(tmp_path)
    dataset.run_local(spec, workers=1, shards=[0], progress=False)
    real_open = open

    class Failing:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def write(self, b):
            self.f.write(b[: len(b) // 2])  # half of it reaches the disk, then the error
            raise OSError(err, os.strerror(err))

        def flush(self):
            pass

        def fileno(self):
            return self.f.fileno()

    def fake_open(path, mode="r", *a, **k):
        f = real_open(path, mode, *a, **k)
        return Failing(f) if "w" in mode and "shard-00001.h5" in str(path) else f

    monkeypatch.setattr(shards_mod, "open", fake_open, raising=False)
    with pytest.raises(dataset.DatasetError) as e:
        dataset.run_local(spec, workers=1, progress=False)
    target = str(tmp_path / "out" / "shard-00001.h5")
    assert e.value.file == target and target in str(e.value) and word in str(e.value)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["manifest", "shard-00000.h5", "spec.toml"], names
    assert sorted(shards_mod.manifest_entries(spec)) == [0]
    # the CLI says it in one line naming the file, exit status 2
    monkeypatch.undo()
    os.chmod(tmp_path / "out", 0o555)
    try:
        if os.access(tmp_path / "out", os.W_OK):  # root ignores the mode: not a test of it
            return
        r = run_cli("run", spec.path, "--no-progress", check=False)
        assert r.returncode == 2 and "shard-00001.h5" in r.stderr and "Permission denied" in r.stderr
    finally:
        os.chmod(tmp_path / "out", 0o755)


def test_npz_output(tmp_path):
    spec = write_spec(tmp_path, fmt="npz", n=4, k=3)
    r = run_cli("run", spec.path, "--workers", "1", "--no-progress")
    assert json.loads(r.stdout)["master"].endswith("index.json")
    with np.load(tmp_path / "out/shard-00001.npz") as z:
        assert z["images"].shape == (1, 48, 48) and z["images"].dtype == np.float32
        assert list(z["labels.index"]) == [3]
        meta = json.loads(bytes(z["meta"]))
        assert meta["first_image"] == 3 and meta["spec"] == spec.text
        sim = nb.Simulator.from_args(list(spec.args) + ["-precision", "f32", "-backend", "cpu", "-threads", "1"])
        p = dataset.image_params(spec, 3)
        img = sim.render(rotation=p["rotation"].tolist(), wavelength_A=p["wavelength_A"], N=p["N"],
                         fluence_ph_per_m2=p["fluence_ph_per_m2"], mosaic_seed=p["mosaic_seed"])
        assert np.array_equal(z["images"][0], img)
    first = (tmp_path / "out/shard-00000.npz").read_bytes()
    dataset.write_shard(spec, 0, force=True)
    assert (tmp_path / "out/shard-00000.npz").read_bytes() == first


def test_noise_chain_is_seeded_per_image(tmp_path):
    spec = write_spec(tmp_path, n=2, k=2, extra='[chain]\nnoise = "-readout_noise 2 -adc 10"\n')
    imgs, labels = dataset.render_shard(spec, 0)
    assert imgs.dtype == np.int32
    again = dataset.render_image(spec, 1)
    assert np.array_equal(again, imgs[1])
    p = dataset.image_params(spec, 1)
    sim = dataset.Renderer(spec).simulator()
    clean = sim.render(**dataset.Renderer(spec).overrides(p))
    want = nb.noisify(clean, ["-readout_noise", "2", "-adc", "10", "-seed", str(p["noise_seed"])]).noise_image
    assert np.array_equal(imgs[1], want.astype(np.int32))


def test_a_noisy_dataset_resumes_only_with_its_noise_sequence(tmp_path):
    spec = write_spec(tmp_path, n=4, k=2, extra='[chain]\nnoise = "-readout_noise 2 -adc 10"\n')
    dataset.run_local(spec, workers=1, shards=[0], progress=False)
    rec = tmp_path / "out/noise.json"
    assert json.loads(rec.read_text()) == {"counter_sequence": nb._nanobragg.COUNTER_SEQUENCE,
                                           "nanobragg_version": nb.__version__, "compression": "bslz4"}
    # the same version resumes it
    assert dataset.run_local(spec, workers=1, progress=False)["skipped"] == 1
    # begun by a version whose counts differ: refused, nothing written
    rec.write_text(json.dumps({"counter_sequence": nb._nanobragg.COUNTER_SEQUENCE - 1, "nanobragg_version": "0.0.9"}))
    (tmp_path / "out/manifest/shard-00001.json").unlink()
    old = nb._nanobragg.COUNTER_SEQUENCE - 1
    with pytest.raises(dataset.DatasetError, match=rf"begun by nanobragg 0\.0\.9, noise sequence {old};.*another output folder"):
        dataset.run_local(spec, workers=1, progress=False)
    assert not (tmp_path / "out/manifest/shard-00001.json").exists()
    # begun before the sequence was recorded (a shard, no noise.json): refused too
    rec.unlink()
    with pytest.raises(dataset.DatasetError, match=r"begun by an earlier nanobragg \(no noise\.json\)"):
        dataset.run_local(spec, workers=1, progress=False)
    # begun with deflate frames by a version that recorded no compression (its default with
    # noise): not continued with bslz4 frames (this version's default), nothing written
    rec.write_text(json.dumps({"counter_sequence": nb._nanobragg.COUNTER_SEQUENCE, "nanobragg_version": "0.0.9"}))
    with pytest.raises(dataset.DatasetError, match=r"begun by nanobragg 0\.0\.9 with deflate frames; this nanobragg writes bslz4"):
        dataset.run_local(spec, workers=1, progress=False)
    assert not (tmp_path / "out/manifest/shard-00001.json").exists()
    # the record without a compression, the description saying bslz4: that version wrote bslz4
    (tmp_path / "told").mkdir()
    (tmp_path / "told/spec.toml").write_text(SPEC.format(n=4, k=2, fmt="nxmx").replace('output = "out"', 'output = "out"\ncompression = "bslz4"')
                                             + '[chain]\nnoise = "-readout_noise 2 -adc 10"\n')
    told = dataset.load_spec(str(tmp_path / "told/spec.toml"))
    dataset.run_local(told, workers=1, shards=[0], progress=False)
    (tmp_path / "told/out/noise.json").write_text(json.dumps({"counter_sequence": nb._nanobragg.COUNTER_SEQUENCE,
                                                             "nanobragg_version": "0.0.9"}))
    assert dataset.run_local(told, workers=1, progress=False)["shards"] == 1
    # a noiseless dataset records nothing
    quiet = write_spec(tmp_path / "quiet", n=2, k=2)
    dataset.run_local(quiet, workers=1, progress=False)
    assert not (tmp_path / "quiet/out/noise.json").exists()


def test_noisy_frames_default_to_bslz4_and_the_run_says_so(tmp_path):
    """`chain.noise` without `dataset.compression`: the frames are bitshuffle + LZ4 (filter
    32008), the run's summary names the choice, and the frames read back as rendered."""
    spec = write_spec(tmp_path, n=2, k=2, extra='[chain]\nnoise = "-readout_noise 2 -adc 10"\n')
    r = run_cli("run", spec.path, "--workers", "1", "--no-progress")
    assert "frames as bslz4 (bitshuffle + LZ4), the default with chain.noise" in r.stderr, r.stderr
    assert json.loads(r.stdout)["compression"] == "bslz4"
    with h5py.File(tmp_path / "out/shard-00000.h5") as f:
        assert "32008" in f["/entry/data/data"]._filters
    assert np.array_equal(dataset.read_image(spec, 1), dataset.render_image(spec, 1))
    # without noise: deflate, and nothing said
    quiet = write_spec(tmp_path / "quiet", n=2, k=2)
    r = run_cli("run", quiet.path, "--workers", "1", "--no-progress")
    assert "bslz4" not in r.stderr and json.loads(r.stdout)["compression"] == "deflate"


def test_slurm_script_and_its_array_entry_point(tmp_path):
    spec = write_spec(tmp_path, n=6, k=2)
    r = run_cli("slurm", spec.path, "--shards-per-task", "2", "--cpus-per-task", "1")
    script = (tmp_path / "out/slurm/job.sh").read_text()
    assert "#SBATCH --array=0-1\n" in script and "#SBATCH --requeue" in script
    # --mem from the shard a worker holds (2 images of 48x48 here: the 1 GiB base, rounded up)
    mem = int(re.search(r"^#SBATCH --mem=(\d+)M$", script, re.M).group(1))
    assert mem % 256 == 0 and 1024 + (2 * 48 * 48 * 4 * 3) / 2**20 <= mem <= 2048, mem
    # the printed finalize hint: this interpreter and absolute paths, runnable from anywhere
    hint = r.stdout.strip().split(", then ", 1)[1]
    assert hint.startswith(shlex.quote(sys.executable) + " -m nanobragg.dataset finalize " + shlex.quote(os.path.abspath(spec.path)))
    assert f"# then: {hint}\n" in script
    # run the script's body for array tasks 1 then 0 (what sbatch does on each node)
    for t in (1, 0):
        body = subprocess.run(["bash", str(tmp_path / "out/slurm/job.sh")], env={**os.environ, "SLURM_ARRAY_TASK_ID": str(t)},
                              capture_output=True, text=True, timeout=600)
        assert body.returncode == 0, body.stderr
        done = sorted(shards_mod.manifest_entries(spec))
        assert done == ([2] if t == 1 else [0, 1, 2])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fin = subprocess.run(hint, shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=600)
    assert fin.returncode == 0 and fin.stdout.strip() == str(tmp_path / "out" / "master.h5"), fin.stderr
    ref = write_spec(tmp_path / "ref", n=6, k=2)
    dataset.run_local(ref, workers=1, progress=False)
    assert digests(spec) == digests(ref)
    r = run_cli("verify", spec.path, "--rerender", "2")
    assert json.loads(r.stdout)["shards"] == 3


def test_finalize_refuses_an_incomplete_dataset(tmp_path):
    spec = write_spec(tmp_path)
    dataset.run_local(spec, workers=1, shards=[0, 2], progress=False)
    r = run_cli("finalize", spec.path, check=False)
    assert r.returncode == 2 and "1 of 3 shards are not complete (shards 1)" in r.stderr
    r = run_cli("run", str(tmp_path / "nope.toml"), check=False)
    assert r.returncode == 2 and "nope.toml: (file): cannot read" in r.stderr
    # the console script (pyproject's [project.scripts]) is the same program
    exe = pathlib.Path(sys.executable).with_name("nanobragg-dataset")
    r = subprocess.run([str(exe), "finalize", spec.path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "1 of 3 shards are not complete (shards 1)" in r.stderr, r.stderr


def test_ray_engine_matches_local_and_retries_a_killed_task(tmp_path):
    import ray  # scripts/setup.sh installs it into target/pyvenv (the `ray` extra)

    ref = write_spec(tmp_path / "ref", n=6, k=2)
    dataset.run_local(ref, workers=1, progress=False)
    spec = write_spec(tmp_path / "ray", n=6, k=2)
    marker = tmp_path / "killed"
    os.environ["NANOBRAGG_DATASET_KILL"] = f"1:1:{marker}"
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"NANOBRAGG_DATASET_KILL": f"1:1:{marker}"}})
        res = dataset.run_ray(spec, progress=False, retries=2)
        # a description without a file (parse_spec): its text travels with the tasks
        mem = dataset.parse_spec(ref.text, output=str(tmp_path / "mem"))
        assert dataset.run_ray(mem, progress=False)["shards"] == 3
    finally:
        del os.environ["NANOBRAGG_DATASET_KILL"]
        ray.shutdown()
    assert marker.exists()  # the task of shard 1 died once; Ray ran it again
    assert res["shards"] == 3
    assert digests(spec) == digests(ref) == digests(mem)
    for name in digests(ref):
        assert (tmp_path / "mem" / name).read_bytes() == (tmp_path / "ref" / "out" / name).read_bytes()


def test_gpu_adapter_picked_by_environment(tmp_path):
    """NANOBRAGG_GPU_ADAPTER (what the Ray engine sets from the GPU Ray assigned) picks the
    wgpu adapter by name part, index or PCI bus id; one that matches nothing is an error
    listing the adapters (here Mesa's lavapipe, the CI's Vulkan device)."""
    code = """
import nanobragg as nb
s = nb.Simulator(nb.Crystal(cell_A_deg=(100, 100, 100, 90, 90, 90), N=5, default_F=100), nb.Beam(wavelength_A=1),
                 nb.Detector(distance_mm=100, pixels=32, pixel_mm=0.1), precision="f32", backend="gpu")
try:
    s.render()
    print("ok", s.engine, s.info()["gpu_adapter"])
except nb.GpuError as e:
    print("GpuError", e)
"""
    def run(value):
        r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NANOBRAGG_GPU_ADAPTER": value},
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert run("llvmpipe").startswith("ok gpu llvmpipe")
    assert run("0").startswith("ok gpu ")
    for bad in ("no-such-gpu", "pci:0000:99:00.0", "7"):
        out = run(bad)
        assert out.startswith(f"GpuError NANOBRAGG_GPU_ADAPTER={bad}: no GPU adapter matches (adapters: 0: llvmpipe"), out
    # the Ray task's lookup: no CUDA device assigned, nothing set
    from nanobragg.dataset.engines import gpu_adapter_env

    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "NANOBRAGG_GPU_ADAPTER")}
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        assert gpu_adapter_env() == {}
        os.environ["NANOBRAGG_GPU_ADAPTER"] = "1"
        assert gpu_adapter_env() == {}  # the user's choice is kept
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_progress_line_reports_rate_and_eta():
    import io

    from nanobragg.dataset.engines import Progress

    s = io.StringIO()
    p = Progress(10, done=2, stream=s)
    p.t0 -= 4.0  # 4 s ago
    p.add(4)
    line = s.getvalue().split("\r")[-1]
    # 4 images in 4 s: 1.00 images/s, 4 left: 0:04
    assert line.startswith("[##################............] 6/10 images  1.0") and "images/s  ETA 0:0" in line, line
    p.close()
    assert s.getvalue().endswith("\n")


@pytest.mark.parametrize("fmt", ["nxmx", "npz"])
def test_predicted_reflections_in_the_shards(tmp_path, fmt):
    spec = write_spec(tmp_path, n=3, k=3, fmt=fmt, extra="")
    text = spec.text.replace('output = "out"', 'output = "out"\npredict = true')
    (tmp_path / "spec.toml").write_text(text)
    spec = dataset.load_spec(str(tmp_path / "spec.toml"))
    dataset.run_local(spec, workers=1, progress=False)
    p = dataset.image_params(spec, 1)
    want = dataset.Renderer(spec).simulator().predict(**dataset.Renderer(spec).overrides(p))
    assert len(want) > 0
    if fmt == "nxmx":
        with h5py.File(tmp_path / "out/shard-00000.h5") as f:
            cols = {k: f["/entry/reflections"][k][:] for k in f["/entry/reflections"]}
    else:
        with np.load(tmp_path / "out/shard-00000.npz") as z:
            cols = {k.split(".", 1)[1]: z[k] for k in z.files if k.startswith("reflections.")}
    assert sorted(set(cols["image"])) == [0, 1, 2]
    sel = cols["image"] == 1
    for name in ("h", "k", "l", "fast", "slow", "intensity"):
        assert np.array_equal(cols[name][sel], want[name])
    with pytest.raises(dataset.SpecError, match="dataset.predict: expected true or false"):
        dataset.parse_spec(text.replace("predict = true", "predict = 1"))


def test_noiseless_counts_are_numpys_rounding(tmp_path):
    """Without noise the stored count is NumPy's rint(photons · scale).clip(0, 2^31 - 1) as
    int32 (NaN: int32's minimum, as the x86 cast), computed by the crate (`render_counts`):
    ties to even, negatives, the clip, infinities, NaN, through the background it adds."""
    # a faint crystal: the sums are the background's values, bar a few spots' photons
    sim = nb.Simulator.from_args(["-cell", "78", "78", "38", "90", "90", "90", "-default_F", "1", "-N", "2", "-fluence", "1e12",
                                  "-lambda", "1", "-distance", "80", "-detpixels", "8", "-precision", "f32", "-threads", "1"])
    img = sim.render()
    vals = [0.0, 0.5, 1.5, 2.5, -0.5, -0.3, 0.49999997, 7.5, 1e9 + 0.5, 2147483520.0, 2147483648.0, 3e9,
            np.inf, -np.inf, np.nan, 1e-30, 123456.5, 4.4, 4.6, -7.0, 65535.5, 1.0000001]
    bg = np.zeros((8, 8), np.float32)
    bg.flat[:len(vals)] = vals
    bg.flat[len(vals):] = np.linspace(-3, 40, 64 - len(vals))
    for scale in (1.0, 2.5, 0.3):
        out = np.empty((8, 8), np.int32)
        sim._s.render_counts([], out, bg, None, scale)
        x = (img + bg).astype(np.float64) * scale  # the crate adds the background in f32 too
        want = np.where(np.isnan(x), np.iinfo(np.int32).min, np.rint(np.nan_to_num(x, nan=0.0)).clip(0, 2**31 - 1)).astype(np.int32)
        assert np.array_equal(out, want), (scale, out.ravel()[:len(vals)], want.ravel()[:len(vals)])


def test_a_renderers_shards_share_one_array(tmp_path):
    """`Renderer.shard_array`: one int32 array for a worker's shards (a shorter last shard is
    a view of it), a new one for another image size or after `release_shard_array`; the
    shards written through it are those rendered alone (an uneven last shard here)."""
    spec = write_spec(tmp_path, n=5, k=3)
    r = dataset.Renderer(spec)
    a = r.shard_array((3, 48, 48))
    assert a.dtype == np.int32 and r.shard_array((2, 48, 48)).base is a.base
    assert r.shard_array((3, 48, 48)).base is a.base
    assert r.shard_array((3, 32, 32)).shape == (3, 32, 32) and r.shard_array((3, 48, 48)).base is not a.base
    r.release_shard_array()
    assert r._shard_array is None
    dataset.run_local(spec, workers=1, progress=False)
    for i in range(5):
        assert np.array_equal(dataset.read_image(spec, i), dataset.render_image(spec, i))


def test_list_of_models(tmp_path):
    models = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "models"
    spec = write_spec(tmp_path, n=2, k=2, extra=f"""model = {{ dist = "grid", values = ["{models / 'hem_p1.pdb'}", "{models / '4hhh_frag.pdb'}"] }}
""")
    spec = dataset.load_spec(spec.path)
    imgs, labels = dataset.render_shard(spec, 0)
    assert list(labels["model"]) == [0, 1]
    for i, name in enumerate(("hem_p1.pdb", "4hhh_frag.pdb")):
        p = dataset.image_params(spec, i)
        sim = nb.Simulator.from_args(list(spec.args) + ["-pdb", str(models / name), "-precision", "f32", "-backend", "cpu", "-threads", "1"])
        img = sim.render(rotation=p["rotation"].tolist(), wavelength_A=p["wavelength_A"], N=p["N"],
                         fluence_ph_per_m2=p["fluence_ph_per_m2"], mosaic_seed=p["mosaic_seed"])
        assert np.array_equal(imgs[i], np.rint(img.astype(np.float64)).astype(np.int32))


def test_ctrl_c_stops_a_local_run_within_seconds_and_resume_is_bit_identical(tmp_path):
    """Ctrl-C (SIGINT to the run's process group, as a terminal sends it) stops a local run with
    queued shards within ~2 s, not after them; complete shards are kept, no temporary file is
    left, and running again renders the rest: the same bytes as an uninterrupted run."""
    # 16 shards of ~0.5 s each on one thread: most of them still queued at the first one's end
    slow = SPEC.replace("-detpixels 48", "-detpixels 192").replace("-mosaic_dom 3", "-mosaic_dom 30 -oversample 2")
    for name in ("ref", "run"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "spec.toml").write_text(slow.format(n=32, k=2, fmt="nxmx"))
    spec = dataset.load_spec(str(tmp_path / "run/spec.toml"))
    proc = subprocess.Popen([sys.executable, "-m", "nanobragg.dataset", "run", spec.path, "--workers", "2", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not shards_mod.manifest_entries(spec) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        stopped = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    print(f"Ctrl-C: stopped in {stopped:.2f} s")
    assert proc.returncode == 130 and "interrupted (complete shards are kept; run again to resume)" in err, err
    assert stopped < 3.0, stopped
    entries = shards_mod.manifest_entries(spec)
    assert 1 <= len(entries) < 12, entries  # stopped with shards still queued
    for e in entries.values():
        assert hashlib.sha256((tmp_path / "run/out" / e["file"]).read_bytes()).hexdigest() == e["sha256"]
    assert not [p.name for p in (tmp_path / "run/out").iterdir() if ".tmp-" in p.name]
    res = json.loads(run_cli("run", spec.path, "--workers", "2", "--no-progress").stdout)
    assert res["skipped"] == len(entries) and res["shards"] == 16 - len(entries)
    ref = dataset.load_spec(str(tmp_path / "ref/spec.toml"))
    dataset.run_local(ref, workers=1, progress=False)
    dataset.finalize(ref)
    assert digests(spec) == digests(ref)
    for name in [*digests(ref), "master.h5"]:
        assert (tmp_path / "run/out" / name).read_bytes() == (tmp_path / "ref/out" / name).read_bytes(), name


def test_slurm_memory_grows_with_the_shard_and_can_be_given(tmp_path):
    spec = write_spec(tmp_path, n=400, k=100)
    eiger4m = 2068 * 2162
    mem = dataset.slurm_memory_mb(spec, eiger4m)
    held = 100 * eiger4m * 4 * 3 / 2**20  # a shard of int32 frames: images, file bytes, writer buffers
    assert held + 1024 <= mem <= 1.6 * (held + 1024) and mem % 256 == 0, (mem, held)
    assert dataset.slurm_memory_mb(spec, eiger4m // 4) < mem
    run_cli("slurm", spec.path, "--mem", "5000")
    assert "#SBATCH --mem=5000M\n" in (tmp_path / "out/slurm/job.sh").read_text()


def test_an_automatic_oversample_is_said_in_the_run_output(tmp_path):
    """A 1 µm crystal: the crate picks upstream's oversample ceil(3·size / (λ·distance/pixel)),
    which the run says (and reports in its JSON); given in the description, nothing is said."""
    text = SPEC.format(n=2, k=1, fmt="npz").replace(
        "-N 6 -lambda 1.0 -distance 80 -detpixels 48", "-xtalsize 0.001 -lambda 1.0 -distance 80 -detpixels 12")
    text = text.replace('N = {{ dist = "grid", values = [4, 6] }}', "").replace('N = { dist = "grid", values = [4, 6] }', "")
    (tmp_path / "spec.toml").write_text(text)
    spec = dataset.load_spec(str(tmp_path / "spec.toml"))
    sim = nb.Simulator.from_args("-cell 78 78 38 90 90 90 -xtalsize 0.001 -lambda 1.0 -distance 80 -detpixels 12 -pixel 0.2 -default_F 1")
    na, nb_, nc = sim.info()["N"]
    size_m = max(78 * na, 78 * nb_, 38 * nc) * 1e-10
    expected = int(np.ceil(3 * size_m / (1e-10 * 0.080 / 0.0002)))
    assert expected > 50
    r = run_cli("run", spec.path, "--workers", "1", "--no-progress")
    assert f"nanobragg-dataset: oversample {expected}: chosen automatically" in r.stderr, r.stderr
    assert "[base.detector]" in r.stderr and json.loads(r.stdout)["oversample"] == expected
    (tmp_path / "given").mkdir()
    (tmp_path / "given/spec.toml").write_text(text + "\n[base.detector]\noversample = 2\n")
    r = run_cli("run", str(tmp_path / "given/spec.toml"), "--workers", "1", "--no-progress")
    assert "oversample" not in r.stderr and json.loads(r.stdout)["oversample"] == 2


@pytest.mark.parametrize("bad,good", [
    ('noise = "-readout_nois 3"', 'noise = "-readout_noise 3"'),
    ('background = "-stol nonexist.stol -thick 0.1 -distance 80 -detpixels 48 -pixel 0.2"',
     'background = "-stol water.stol -thick 0.1 -distance 80 -detpixels 48 -pixel 0.2"'),
])
def test_a_refused_chain_writes_nothing_and_the_corrected_one_runs(tmp_path, bad, good):
    """A typo in [chain] is refused naming the file, line and key before the output folder is
    made (a folder left behind would then refuse the corrected description as another
    dataset's); the corrected description runs, and its images re-render alone."""
    write_spec(tmp_path, n=2, k=2)
    p = tmp_path / "spec.toml"
    # (one background serves the dataset: a fixed wavelength)
    text = re.sub(r"wavelength_A = .*\n", "", p.read_text()) + "[chain]\n"
    p.write_text(text + bad + "\n")
    r = run_cli("run", str(p), "--workers", "1", "--no-progress", check=False)
    line = len(text.splitlines()) + 1
    key = "chain." + bad.split(" ")[0]
    assert r.returncode == 2 and f"nanobragg-dataset: {p} line {line}: {key}: " in r.stderr, r.stderr
    assert ("unknown flag '-readout_nois'" if "nois " in bad else "cannot read file 'nonexist.stol'") in r.stderr, r.stderr
    assert not (tmp_path / "out").exists(), "a refused description wrote output"
    p.write_text(text + good + "\n")
    run_cli("run", str(p), "--workers", "1", "--no-progress")
    r = run_cli("verify", str(p), "--rerender", "2")
    assert json.loads(r.stdout)["rerendered"] == [0, 1]


@pytest.mark.parametrize("args,words", [
    (["verify", "--rerender", "-1"], "argument --rerender: expected a whole number >= 0, got -1"),
    (["verify", "--seed", "-1"], "argument --seed: expected a whole number >= 0, got -1"),
    (["slurm", "--shards-per-task", "0"], "argument --shards-per-task: expected a whole number >= 1, got 0"),
    (["slurm", "--mem", "0"], "argument --mem: expected a whole number >= 1, got 0"),
    (["slurm", "--cpus-per-task", "x"], "argument --cpus-per-task: expected a whole number, got 'x'"),
    (["run", "--workers", "0"], "argument --workers: expected a whole number >= 1, got 0"),
    (["run", "--workers", "-3"], "argument --workers: expected a whole number >= 1, got -3"),
    (["run", "--threads", "0"], "argument --threads: expected a whole number >= 1, got 0"),
    (["run", "--retries", "-1"], "argument --retries: expected a whole number >= 0, got -1"),
    (["run", "--shards", "2-1"], "argument --shards: 2-1 is a reversed range: say 1-2"),
    (["run", "--shards", "1;2"], "argument --shards: expected N, N-M or a comma list of them, got '1;2'"),
    (["run", "--shards", "0,1-7"], "argument --shards: 1-7 is not within the dataset's shards 0-2"),
])
def test_bad_arguments_are_usage_errors_naming_the_flag(tmp_path, args, words):
    """A bad command-line value is refused by the argument parser: exit status 2, one line
    naming the flag (never a traceback), nothing written."""
    spec = write_spec(tmp_path)
    r = run_cli(args[0], spec.path, *args[1:], check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"nanobragg-dataset {args[0]}: error: {words}", r.stderr
    assert not (tmp_path / "out").exists()


def test_the_api_refuses_bad_workers_and_shards_per_task(tmp_path):
    spec = write_spec(tmp_path)
    for w in (0, -3, 1.5):
        with pytest.raises(ValueError, match="run_local: workers must be a whole number >= 1"):
            dataset.run_local(spec, workers=w)
    with pytest.raises(ValueError, match="slurm_script: shards_per_task must be a whole number >= 1, got 0"):
        dataset.slurm_script(spec, shards_per_task=0)
    assert not (tmp_path / "out").exists()


def test_an_interrupted_run_ends_its_progress_line(tmp_path, monkeypatch, capsys):
    """Ctrl-C in a run of one worker: the progress line is ended, so that the CLI's
    "interrupted" starts a line of its own; a bar that wrote nothing writes no newline."""
    from nanobragg.dataset import engines

    spec = write_spec(tmp_path)

    def interrupted(*args, progress=None, **kw):
        progress(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(engines, "run_shard", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dataset.run_local(spec, workers=1)
    err = capsys.readouterr().err
    assert err.startswith("\r[") and "1/6 images" in err and err.endswith("\n"), repr(err)
    with pytest.raises(KeyboardInterrupt):
        dataset.run_local(spec, workers=1, progress=False)
    assert capsys.readouterr().err == ""
