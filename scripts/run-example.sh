#!/usr/bin/env bash
# The main job: set up what is missing, build the compiler and check every
# example (the examples are later built for GPU targets and run here too).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh
source scripts/env.sh
cargo build --locked --release -q -p tessera-cli
./target/release/tessera check examples/
