"""Shared fixtures: where the repository's golden cases and the CLI binary are."""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "fixtures" / "golden"


@pytest.fixture(autouse=True)
def _in_a_scratch_folder(tmp_path, monkeypatch):
    """Every test runs in its own empty folder: no Fdump.bin of the checkout is read by
    accident (upstream reads ./Fdump.bin when no structure factors are given)."""
    monkeypatch.chdir(tmp_path)


def golden_cases():
    return sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and (p / "args.txt").exists())


def cli_path() -> pathlib.Path:
    """The CLI built by cargo (`NANOBRAGG_CLI`, else target/release/nanobragg)."""
    p = pathlib.Path(os.environ.get("NANOBRAGG_CLI", REPO / "target" / "release" / "nanobragg"))
    if not p.exists():
        pytest.fail(f"the nanobragg CLI is not built at {p} (cargo build --release, or set NANOBRAGG_CLI)")
    return p


def run_cli(args, cwd, program="nanobragg"):
    exe = cli_path()
    if program != "nanobragg":
        exe = exe.with_name(program)
    r = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{program} {' '.join(args)} failed ({r.returncode}):\n{r.stderr}"
    return r


def copy_case(case, dest):
    shutil.copytree(GOLDEN / case, dest, dirs_exist_ok=True)
    return dest


def f32_bits_equal(a, b):
    a = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    b = np.ascontiguousarray(b, dtype=np.float32).reshape(-1)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))
