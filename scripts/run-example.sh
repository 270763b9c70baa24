#!/usr/bin/env bash
# The main job: set up what is missing, build the compiler, check every
# example, build the tensor-core matmul example for sm_90a (PTX, assembled
# by ptxas) and gfx942 (a linked code object), printing what each kernel
# needs from its manifest, then run it — on the GPU when one is present,
# else on the CPU — and check its result against a float64 reference.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh
source scripts/env.sh
cargo build --locked --release -q -p tessera-cli
tessera=./target/release/tessera
$tessera check examples/
out=build/example
for spec in "sm_90a ptx,cubin" "gfx942 hsaco,asm"; do
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
device=cpu
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then device=cuda; fi
echo "running examples/matmul.tsr on the $device (main() checks C against a float64 reference):"
if ! $tessera run examples/matmul.tsr --device "$device" && [ "$device" != cpu ]; then
    echo "the run on the $device failed (above); running on the CPU instead:"
    $tessera run examples/matmul.tsr --device cpu
fi
