#!/usr/bin/env bash
# `npm test`: every test. Installs what is missing first.
#   (a) Rust: fmt, clippy, cargo test (scripts/test-rust.sh)
#   (b) unit tests of the front end's pure modules (tests/unit/, node's test runner)
#   (c) the wasm build of the web app (both modules) and its TypeScript
#   (d) browser tests: node's test runner + playwright-core on Debian chromium (tests/browser/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
bash scripts/test-rust.sh
echo "== front-end unit tests (npm run test:unit)"
[ -d node_modules/esbuild ] && [ -d node_modules/@preact/signals-core ] && [ -d node_modules/three ] || npm install --no-audit --no-fund
node scripts/test-unit.mjs
echo "== web build (npm run build)"
[ -d node_modules/playwright-core ] && [ -d node_modules/esbuild ] || npm install --no-audit --no-fund
node scripts/build.mjs
echo "== typecheck (tsc)"
npx tsc -p www --noEmit
echo "== browser tests (node --test tests/browser/)"
node --test --test-concurrency=1 tests/browser/
