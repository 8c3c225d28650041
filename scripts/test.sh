#!/usr/bin/env bash
# `npm test`: every test. Installs what is missing first.
#   (a) Rust: fmt, clippy (native, no-GPU and wasm32), cargo test (scripts/test-rust.sh); miniCBF read back by fabio;
#       the DIALS round trip (miniCBF and NXmx series through dials.import/find_spots/index)
#   (a') Python: the wheel built with maturin, installed into a venv, pytest (scripts/test-python.sh),
#       the dataset tool among them (local pool, Ray, a single-node Slurm it starts, dials.import)
#   (b) unit tests of the front end's pure modules (tests/unit/: npm run test:unit, seconds)
#   (c) the wasm build of the web app (both modules) and its TypeScript
#   (d) browser tests: node's test runner + playwright-core on Debian chromium (tests/browser/)
# Each step prints its duration, and a summary of all steps ends the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/timing.sh
step "setup (install what is missing)" bash scripts/setup.sh test
bash scripts/test-rust.sh
step "miniCBF files read back by fabio (scripts/check_cbf.py)" /usr/bin/python3 scripts/check_cbf.py --run target/release
step "DIALS round trip: import, find spots, index (scripts/dials_roundtrip.py)" /usr/bin/python3 scripts/dials_roundtrip.py --run target/release --nexus
step "DIALS reads multi-panel NXmx panel for panel (scripts/dials_panels.py)" /usr/bin/python3 scripts/dials_panels.py --run target/release
bash scripts/test-python.sh
# npm packages: install when any listed in package.json is missing (npm ls fails then)
if ! npm ls --depth=0 >/dev/null 2>&1; then
  step "npm install" npm install --no-audit --no-fund
fi
step "unit tests (npm run test:unit: tests/unit/)" node scripts/test-unit.mjs
step "web build (npm run build: wasm modules, TypeScript bundles)" node scripts/build.mjs
step "typecheck (tsc)" npx tsc -p www --noEmit
step "browser tests (node --test tests/browser/)" node --test --test-concurrency=1 tests/browser/
summary
