#!/usr/bin/env bash
# Python part of `npm test`: builds the wheel of `python/` with maturin (abi3, CPython >= 3.10),
# installs it into the virtual environment that scripts/setup.sh made (target/pyvenv), and runs
# the pytest suite (python/tests/) against the installed package and the CLI binaries, then the
# PyTorch bridge's test (python/tests_torch/) with Debian's python3-torch (target/pyvenv-torch), and
# builds the sdist and installs it into a fresh venv (the quickstart example runs there). pytest's
# exit status is this script's: no test collected (exit 5) fails like a failed test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/timing.sh
# the same (release) build profile as scripts/test-rust.sh: shared artefacts, no LTO
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
VENV=target/pyvenv
if [ ! -x "$VENV/bin/maturin" ] || ! "$VENV/bin/python" -c 'import pytest, numpy, h5py, ray, mypy, hypothesis' 2>/dev/null \
  || ! target/pyvenv-torch/bin/python -c 'import pytest, torch' 2>/dev/null; then
  bash scripts/setup.sh python
fi
# the tests compare with the CLI programs (nanobragg, nonbragg, noisify): built with the workspace's
# features as `cargo test --workspace --all-features` builds them (scripts/test-rust.sh), so after it
# this is a no-op and the Python tests compare with the very binaries the Rust tests ran; before the
# wheel, whose build would otherwise make cargo rebuild the library here
step "cargo build --release (the CLI programs the Python tests compare with)" \
  cargo build --workspace --release --all-features --bins
rm -rf target/wheels
step "maturin build --release (python/: the wheel)" \
  "$VENV/bin/maturin" build --release --manifest-path python/Cargo.toml --out target/wheels \
  --interpreter "$VENV/bin/python" --quiet
step "pip install the wheel into target/pyvenv" \
  "$VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps target/wheels/nanobragg-*.whl
# run from outside python/ so that `import nanobragg` is the installed wheel, not the source
step "pytest (python/tests/: the installed package)" \
  env NANOBRAGG_CLI="$PWD/target/release/nanobragg" "$VENV/bin/python" -m pytest python/tests \
  -p no:cacheprovider -q -rfE
# the PyTorch bridge (nanobragg.torch, gradcheck): the same wheel (abi3) in the venv over Debian's
# python3 and python3-torch
step "pip install the wheel into target/pyvenv-torch" \
  target/pyvenv-torch/bin/python -m pip install --quiet --force-reinstall --no-deps target/wheels/nanobragg-*.whl
step "pytest (python/tests_torch/: the PyTorch bridge, gradcheck in float64)" \
  env NANOBRAGG_CLI="$PWD/target/release/nanobragg" target/pyvenv-torch/bin/python -m pytest python/tests_torch \
  -p no:cacheprovider -q -rfE
# the sdist as an index serves it (issue 33): `maturin sdist`, then `pip install` of the tarball
# into a fresh venv (pip builds it with maturin from PyPI and the stable Rust toolchain, as on a
# machine without this checkout), then the quickstart example (python/examples/quickstart.py) run
# there from a scratch folder, and the README's Python example (scripts/readme_python.py).
# CARGO_TARGET_DIR: the dependencies' artefacts of target/ serve the
# build (the same release profile as above), so only the two workspace crates compile again.
rm -rf target/sdist target/sdist-venv target/sdist-run
step "maturin sdist (python/: the source distribution)" \
  "$VENV/bin/maturin" sdist --manifest-path python/Cargo.toml --out target/sdist
step "pip install the sdist into a fresh venv (builds the crate with stable Rust)" bash -c '
  "$1" -m venv target/sdist-venv &&
  RUSTUP_TOOLCHAIN=stable CARGO_TARGET_DIR="$PWD/target" target/sdist-venv/bin/python -m pip install --quiet target/sdist/nanobragg-*.tar.gz' \
  _ "$VENV/bin/python"
mkdir -p target/sdist-run
step "python/examples/quickstart.py with the package installed from the sdist" \
  bash -c 'cd target/sdist-run && ../sdist-venv/bin/python ../../python/examples/quickstart.py'
step "the README's Python example with the package installed from the sdist" \
  bash -c 'cd target/sdist-run && ../sdist-venv/bin/python ../../scripts/readme_python.py'
summary
