"""The Slurm engine against a real single-node Slurm (Debian's slurm-wlm + munge, started here by
scripts/slurm_local.sh): the job array renders the shards, a task killed mid-shard loses only
its shard, resubmitting the same script resumes, finalize checks the manifest."""

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from nanobragg import dataset
from nanobragg.dataset import shards as shards_mod

from test_dataset import write_spec

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def slurm():
    for exe in ("munged", "slurmctld", "slurmd", "sbatch", "squeue"):
        if not shutil.which(exe) and not os.path.exists(f"/usr/sbin/{exe}"):
            pytest.fail(f"{exe} is not installed (scripts/setup.sh test installs slurm-wlm and munge)")
    if os.geteuid() != 0:
        pytest.fail("slurmd needs root to start jobs as their user; run the Slurm test as root")
    d = tempfile.mkdtemp(prefix="nbslurm")  # short: munge's socket path must fit sun_path
    env = {**os.environ, "SLURM_CONF": f"{d}/slurm.conf"}
    r = subprocess.run(["bash", str(REPO / "scripts/slurm_local.sh"), "start", d], env=env, capture_output=True, text=True, timeout=120)
    try:
        assert r.returncode == 0, r.stderr + "".join(p.read_text() for p in pathlib.Path(d, "log").glob("*.log"))
        yield env
    finally:
        subprocess.run(["bash", str(REPO / "scripts/slurm_local.sh"), "stop", d], env=env, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def submit_and_wait(script, env, timeout=300):
    r = subprocess.run(["sbatch", "--parsable", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip().split(";")[0]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        q = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True, timeout=60)
        if q.returncode == 0 and not q.stdout.strip():
            return job
        time.sleep(0.5)
    raise AssertionError(f"job {job} still queued or running after {timeout} s")


def test_job_array_kill_and_resume_on_real_slurm(tmp_path, slurm):
    ref = write_spec(tmp_path / "ref", n=6, k=2)
    dataset.run_local(ref, workers=1, progress=False)
    spec = write_spec(tmp_path / "run", n=6, k=2)
    r = subprocess.run([sys.executable, "-m", "nanobragg.dataset", "slurm", spec.path, "--cpus-per-task", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    script = tmp_path / "run/out/slurm/job.sh"
    marker = tmp_path / "killed"
    # array task 1 (shard 1) SIGKILLs itself after one image; sbatch exports the environment
    submit_and_wait(script, {**slurm, "NANOBRAGG_DATASET_KILL": f"1:1:{marker}"})
    assert marker.exists()
    assert sorted(shards_mod.manifest_entries(spec)) == [0, 2]
    logs = sorted((tmp_path / "run/out/slurm").glob("*.log"))
    assert len(logs) == 3, logs
    # the same script again: shard 1 only
    submit_and_wait(script, slurm)
    assert sorted(shards_mod.manifest_entries(spec)) == [0, 1, 2]
    r = subprocess.run([sys.executable, "-m", "nanobragg.dataset", "finalize", spec.path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for e in dataset.check_manifest(ref):
        a = (tmp_path / "run/out" / e["file"]).read_bytes()
        assert hashlib.sha256(a).hexdigest() == e["sha256"] and a == (tmp_path / "ref/out" / e["file"]).read_bytes()
