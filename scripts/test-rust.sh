#!/usr/bin/env bash
# Rust part of `npm test`: formatting, lints (native with all features, native without the GPU,
# and the browser build's wasm32 target), unit and integration tests (golden images, CLI, GPU,
# fuzz smoke runs). GPU tests run on whatever adapter wgpu finds (Mesa lavapipe in CI; see
# scripts/setup.sh); without any adapter they fail, unless NANOBRAGG_NO_GPU=1 (then SKIPPED).
# Each step prints its duration; a summary follows at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/timing.sh

# Clippy and the tests use the same (release) profile, so that build scripts and proc-macros are
# compiled once for both. The tests' release build skips LTO and uses parallel codegen units:
# linking a dozen test binaries with LTO on two cores costs minutes and changes no result (the
# golden images are bit-identical either way). Benchmarks use the real release profile
# (`npm run bench`).
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16

step "cargo fmt --check" cargo fmt --all -- --check
# --workspace: the crate and the Python binding (python/, the pyo3 crate nanobragg-python)
step "clippy (native, all features: nanobragg and nanobragg-python)" \
  cargo clippy --release --workspace --all-targets --all-features -- -D warnings
step "clippy (native, no default features: no GPU)" \
  cargo clippy --release -p nanobragg --all-targets --no-default-features -- -D warnings
step "clippy (wasm32, features wasm,gpu: the browser build)" \
  cargo clippy --release -p nanobragg --lib --target wasm32-unknown-unknown --features wasm,gpu -- -D warnings
step "cargo test (release)" cargo test --workspace --release --all-features
summary
