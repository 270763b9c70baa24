# Environment for building and testing Tessera; sourced by the other scripts.
# llvm-sys 191 finds Debian's LLVM 19 here.
export LLVM_SYS_191_PREFIX=/usr/lib/llvm-19
export PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin:$PATH"
