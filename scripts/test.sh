#!/usr/bin/env bash
# `npm test`: every test. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
bash scripts/test-rust.sh
