#!/usr/bin/env bash
# Compile-speed benchmark against Triton (see bench/README.md, compile-bench).
# Builds the release `tessera`, sets up Triton in target/bench-venv and runs
# bench/compile/run.py with it; arguments go to run.py (--runs N,
# --kernels matmul,softmax, --targets sm_80,sm_90a, --stops ptx,cubin,
# --json FILE, --keep DIR, --tessera-from TEXT). With TESSERA=/path/to/tessera
# it measures that binary instead of building one from this checkout.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

scripts/setup.sh                      # LLVM 19 for the build, .venv/bin/ptxas
bench/compile/setup.sh                # target/bench-venv with triton
if [ -z "${TESSERA:-}" ]; then
    cargo build --release -q -p tessera-cli
    TESSERA=${CARGO_TARGET_DIR:-$root/target}/release/tessera
fi
exec target/bench-venv/bin/python bench/compile/run.py --tessera "$TESSERA" "$@"
