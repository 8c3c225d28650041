#!/usr/bin/env bash
# Installs what the build and the tests need and is missing, on a Debian machine that has
# rustup/cargo, node/npm and root: Rust components and targets, wasm-bindgen-cli at the exact
# version in Cargo.lock, Debian's chromium (browser tests), Mesa's lavapipe (GPU tests on the
# CPU), python3-fabio (miniCBF read-back), dials (the DIALS round trip) and bitshuffle (its HDF5
# filter plugin, so that DIALS reads bitshuffle-LZ4 NXmx frames), slurm-wlm and munge (the
# dataset tool's Slurm test) and, for the Python
# package (`python/`), a virtual environment target/pyvenv with maturin, pytest, numpy, mypy and
# Hypothesis from PyPI, and Debian's python3-torch with a venv target/pyvenv-torch over it for the
# PyTorch bridge's test (`setup.sh python` does only those). Nothing is downloaded from outside the package
# registries.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
what="${1:-all}"

need_apt=()
if [ "$what" = all ] || [ "$what" = test ]; then
  [ -x /usr/bin/chromium ] || need_apt+=(chromium)
  ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need_apt+=(mesa-vulkan-drivers)
  # fabio reads back the miniCBF files (scripts/check_cbf.py)
  /usr/bin/python3 -c 'import fabio' 2>/dev/null || need_apt+=(python3-fabio)
  # DIALS reads our miniCBF and NXmx series back (scripts/dials_roundtrip.py)
  command -v dials.index >/dev/null 2>&1 || need_apt+=(dials)
  # the bitshuffle filter (HDF5 filter 32008) in the serial HDF5's plugin folder, where DIALS'
  # HDF5 finds it: NXmx frames written with compression "bslz4" (test_dataset_dials.py). Debian's
  # hdf5-filter-plugin holds only LZ4 and BZip2 and python3-hdf5plugin no filter at all
  dpkg -s bitshuffle >/dev/null 2>&1 || need_apt+=(bitshuffle)
  # a single-node Slurm for the dataset engine's test (scripts/slurm_local.sh)
  [ -x /usr/sbin/slurmctld ] || need_apt+=(slurm-wlm)
  [ -x /usr/sbin/munged ] || need_apt+=(munge)
fi
# the PyTorch bridge's test (python/tests_torch/): Debian's torch (PyPI's wheel pulls GBs of
# CUDA), for Debian's /usr/bin/python3
if [ "$what" = all ] || [ "$what" = test ] || [ "$what" = python ]; then
  /usr/bin/python3 -c 'import torch' 2>/dev/null || need_apt+=(python3-torch)
  # its venv (target/pyvenv-torch) is made by Debian's python3, whose venv module is a package
  /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The Python package's build and tests (scripts/test-python.sh): maturin builds the wheel, pytest
# runs python/tests/ against it installed here.
if [ "$what" = all ] || [ "$what" = test ] || [ "$what" = python ]; then
  VENV=target/pyvenv
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  if [ ! -x "$VENV/bin/maturin" ] || ! "$VENV/bin/python" -c 'import pytest, numpy' 2>/dev/null; then
    echo "== pip install maturin pytest numpy (into $VENV)"
    "$VENV/bin/python" -m pip install --quiet 'maturin>=1.5,<2' 'pytest>=7' 'numpy>=1.21'
  fi
  # the typing test (python/tests/test_typing.py): mypy --strict on the package and a user's script
  if ! "$VENV/bin/python" -c 'import mypy' 2>/dev/null; then
    echo "== pip install mypy (into $VENV)"
    "$VENV/bin/python" -m pip install --quiet 'mypy>=1.10'
  fi
  # the dataset description's fuzz target (python/tests/test_dataset_spec_fuzz.py): Hypothesis
  if ! "$VENV/bin/python" -c 'import hypothesis' 2>/dev/null; then
    echo "== pip install hypothesis (into $VENV)"
    "$VENV/bin/python" -m pip install --quiet 'hypothesis>=6.100'
  fi
  # datasets (python/nanobragg/dataset, the `hdf5` and `ray` extras): h5py adds labels to
  # the crate's NXmx shards and writes the master file, Ray is the distributed engine its tests run
  if ! "$VENV/bin/python" -c 'import h5py, ray' 2>/dev/null; then
    echo "== pip install h5py ray (into $VENV)"
    "$VENV/bin/python" -m pip install --quiet 'h5py>=3.8' 'ray>=2.9'
  fi
  # measured images (crate/tests/measured.rs runs scripts/make_measured.py): EIGER-style NeXus
  # with hdf5plugin's bitshuffle-LZ4 and LZ4 filters, miniCBF and SMV read back with fabio;
  # hdf5plugin also reads the dataset tool's bitshuffle-LZ4 shards back (test_dataset.py)
  if ! "$VENV/bin/python" -c 'import hdf5plugin, fabio' 2>/dev/null; then
    echo "== pip install hdf5plugin fabio (into $VENV)"
    "$VENV/bin/python" -m pip install --quiet 'hdf5plugin>=4' 'fabio>=2023'
  fi
  # the torch bridge's test: a venv over Debian's python3 and its site packages (torch, numpy),
  # with pytest
  TVENV=target/pyvenv-torch
  [ -x "$TVENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$TVENV"
  if ! "$TVENV/bin/python" -c 'import pytest, torch' 2>/dev/null; then
    echo "== pip install pytest (into $TVENV)"
    "$TVENV/bin/python" -m pip install --quiet 'pytest>=7'
  fi
fi
[ "$what" = python ] && exit 0

rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt
# The wasm32 target (clippy of the browser build in scripts/test-rust.sh, and the web build).
rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' || rustup target add wasm32-unknown-unknown
