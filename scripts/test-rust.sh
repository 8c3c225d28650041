#!/usr/bin/env bash
# Rust part of `npm test`: formatting, lints, unit and integration tests (golden images, CLI).
# GPU tests run on whatever adapter wgpu finds (Mesa lavapipe in CI; see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy (native, all features)"
cargo clippy --workspace --all-targets --all-features -- -D warnings
echo "== cargo test (release)"
cargo test --workspace --release --all-features
