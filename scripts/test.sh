#!/usr/bin/env bash
# Every test: set up what is missing, then build and run the whole suite
# (unit tests, UI tests, spec code blocks, property tests).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh
source scripts/env.sh
ptxas --version | tail -n 1
cargo test --locked --workspace
