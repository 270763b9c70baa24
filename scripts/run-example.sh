#!/usr/bin/env bash
# The main job: set up what is missing, build the compiler, check every
# example, and build the tensor-core matmul example for sm_90a (PTX,
# assembled by ptxas), gfx942 (a linked code object) and the host CPU,
# printing what each kernel needs from its manifest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh
source scripts/env.sh
cargo build --locked --release -q -p tessera-cli
tessera=./target/release/tessera
$tessera check examples/
out=build/example
for spec in "sm_90a ptx,cubin" "gfx942 hsaco,asm" "cpu obj,asm"; do
    set -- $spec
    $tessera build examples/matmul.tsr --target "$1" --emit "$2" -o "$out"
    python3 - "$out/matmul.$1.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for k in m["kernels"]:
    regs = k.get("registers")
    print(f'{m["target"]:>7}: kernel {k["name"]}: block {k["block"]}, shared {k["shared_bytes"]} B'
          + (f', {regs} registers, {k["spill_bytes"]} B spilled (ptxas)' if regs is not None else ''))
PY
done
grep -c 'wgmma.mma_async' "$out/matmul.sm_90a.ptx" | sed 's/^/ sm_90a: wgmma.mma_async instructions in the PTX: /'
grep -c 'v_mfma\|v_fma' "$out/matmul.gfx942.s" | sed 's/^/ gfx942: multiply-add instructions: /'
ls -l "$out"
