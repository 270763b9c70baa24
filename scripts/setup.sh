#!/usr/bin/env bash
# Installs what Tessera's build and tests need, skipping what is already there:
#   - Debian packages: LLVM 19 (llvm-sys 191 links against it), lld-19, and
#     the libraries LLVM's static libraries link with;
#   - a Python virtual environment in .venv with ptxas (from PyPI's
#     nvidia-cuda-nvcc-cu12) and the test clients listed in
#     scripts/requirements-test.txt.
# Safe to run repeatedly; a second run takes well under a second.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { printf 'setup: %s\n' "$*" >&2; }

apt_packages=(llvm-19-dev libpolly-19-dev lld-19 zlib1g-dev libzstd-dev libffi-dev libxml2-dev)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { say "need root to install: ${missing[*]}"; exit 1; }
        sudo="sudo"
    fi
    say "installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
    say "cargo is not on PATH; install the Rust toolchain first"
    exit 1
fi
command -v npm >/dev/null || say "npm is not on PATH: the VS Code extension's packaging test (lsp/tests/vscode.rs) needs node and npm"

venv="$root/.venv"
requirements="$root/scripts/requirements-test.txt"
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "creating the Python environment in .venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
fi

# ptxas ships inside the wheel; expose it as .venv/bin/ptxas.
if [ ! -x "$venv/bin/ptxas" ]; then
    ptxas=$(find "$venv" -path '*/nvidia/cuda_nvcc/bin/ptxas' -type f | head -n 1)
    [ -n "$ptxas" ] || { say "ptxas not found in the nvidia-cuda-nvcc-cu12 wheel"; exit 1; }
    chmod +x "$ptxas"
    ln -sf "$ptxas" "$venv/bin/ptxas"
fi
