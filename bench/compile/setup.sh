#!/usr/bin/env bash
# Creates the compile benchmark's own Python environment, target/bench-venv,
# with Triton from PyPI (its wheel bundles ptxas; no torch, no GPU needed).
# Kept apart from the test environment .venv: CI never installs Triton.
# Safe to run repeatedly; a second run takes well under a second.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

# The Triton release the figures in bench/README.md were measured with.
triton_version=3.9.0

venv="$root/target/bench-venv"
stamp="$venv/.triton-version"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$triton_version" ]; then
    printf 'compile-bench setup: installing triton %s into target/bench-venv\n' "$triton_version" >&2
    mkdir -p "$root/target"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "triton==$triton_version"
    echo "$triton_version" > "$stamp"
fi
