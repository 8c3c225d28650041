#!/usr/bin/env bash
# Prints the crate's import layers: one line per unit (a file or folder directly under
# crate/src), "layer unit -> imported units (their layers)", as crate/tests/layers.rs reads them
# against the layer table of docs/ARCHITECTURE.md (the test fails on an import that points up).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
cargo test -q --release -p nanobragg --test layers -- --nocapture --test-threads 1 imports_point_down 2>&1 \
  | grep -E '^[0-9] |points up|not in the layer|independent'
