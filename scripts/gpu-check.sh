#!/usr/bin/env bash
# Checks Tessera on an NVIDIA GPU, in two halves, because the GPU machine
# has no Rust toolchain:
#
#   scripts/gpu-check.sh pack   here: builds the release `tessera` and the
#                               `device` test binary (compiler/exec/tests/
#                               device: every example against its float64
#                               reference, the @deterministic bits, the fp8
#                               conversions), and packs them with the
#                               shared libraries they load and this
#                               machine's glibc into
#                               target/gpu-check/bin.tar.xz (about 34 MB:
#                               each binary links LLVM statically, and the
#                               device tool carries 64 MiB with the tree)
#                               with the sm_90a cubins of the GEMMs and
#                               attention
#   scripts/gpu-check.sh run    there, from the repository root with
#                               target/gpu-check carried: unpacks them and
#                               runs, on the GPU, most telling first,
#     1. the example references (device memory), the @deterministic
#        kernel 20 times against the CPU's bits, the fp8 conversions and
#        the random streams against the reference bit for bit, the
#        hand-written kernels of tests/kernels against theirs;
#     2. the SASS of the GEMMs and attention: HGMMA, no local memory;
#        then the `@autotune` functions $GPU_CHECK_TUNE names are tuned
#        (their cache, $OUT/tune.json, serves the steps below);
#     3. the stdlib's and examples' @test functions (`tessera test`);
#     4. bench/gpu/run.py --quick (one shape per family against torch and
#        Triton), when python3 has torch, $GPU_CHECK_NCU's cases under
#        Nsight Compute, and $GPU_CHECK_BENCH's longer table;
#     5. the examples with a main(), and the swizzled shared-buffer test,
#        on the CPU and the GPU, their printed results compared (matmul's
#        f32 sums checked against its reference instead);
#     6. the references under compute-sanitizer's memcheck, racecheck,
#        synccheck and initcheck, and stdlib/linalg.tsr's (TMA rings,
#        wgmma, the producer warpgroup's named barrier) and nn.tsr's
#        (attention; the row kernels' shuffles and barriers) tests under
#        the first three;
#     7. the example references in managed and pinned memory;
#   and writes the log, the benchmark's tables and a table of what passed
#   to $OUT (else target/gpu-check/out); $GPU_CHECK_NCU, when set, is a
#   second benchmark run's options whose kernels also run under Nsight
#   Compute (a report per case in $OUT/ncu), and $GPU_CHECK_BENCH a third
#   one's, both after the quick table. One command may take 4 minutes
#   ($limit), all of them $GPU_CHECK_BUDGET seconds (what is left is
#   skipped); checks whose names match the regular expression
#   $GPU_CHECK_SKIP are skipped too (say `managed|pinned|initcheck` where
#   an earlier run of the same code passed them), and $GPU_CHECK_FILTER
#   narrows the stdlib tests run under the sanitizers (`tessera test
#   --filter`). The exit status is 1 when a check fails.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
work=target/gpu-check
tests=(device)

pack() {
    set -e
    source scripts/env.sh
    cargo build --locked --release -q -p tessera-cli
    local listing binaries=()
    listing=$(cargo test --locked --release -p tessera-exec --no-run --message-format=json \
        $(printf -- '--test %s ' "${tests[@]}"))
    # A run that stopped half-way leaves bin/ behind: start afresh.
    rm -rf "$work/bin"
    mkdir -p "$work/bin"
    cp target/release/tessera "$work/bin/tessera-bin"
    # The GEMMs' and attention's cubins for sm_90a, whose SASS the run
    # reads for HGMMA (ptxas from scripts/setup.sh's .venv).
    mkdir -p "$work/bin/sass"
    for f in stdlib/linalg.tsr stdlib/nn.tsr examples/gemm_tc.tsr examples/flash_attention.tsr; do
        PATH=$root/.venv/bin:$PATH target/release/tessera build "$f" --target sm_90a --emit cubin -o "$work/bin/sass"
    done
    for t in "${tests[@]}"; do
        local exe
        exe=$(python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$t" <<<"$listing")
        cp "$exe" "$work/bin/$t"
    done
    strip "$work"/bin/tessera-bin "$work"/bin/device
    # The libraries: glibc's apart, so that they are used only where the
    # other machine's own glibc is too old for these binaries.
    local lib libs
    libs=$(ldd "$work"/bin/tessera-bin "$work"/bin/device)
    mkdir -p "$work/bin/lib" "$work/bin/glibc"
    for lib in $(echo "$libs" | awk '$3 ~ /^\// {print $3}' | sort -u); do
        case $(basename "$lib") in
            libc.so.* | libm.so.* | libgcc_s.so.*) cp -L "$lib" "$work/bin/glibc/" ;;
            *) cp -L "$lib" "$work/bin/lib/" ;;
        esac
    done
    for lib in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/{libdl.so.2,libpthread.so.0,librt.so.1}; do
        cp -L "$lib" "$work/bin/glibc/"
    done
    strip --strip-unneeded "$work"/bin/lib/* "$work"/bin/glibc/*
    tar -C "$work" -cf - bin | xz -T0 -6 >"$work/bin.tar.xz"
    rm -r "$work/bin"
    ls -l "$work/bin.tar.xz"
}

declare -a rows=()
failed=0

# The seconds one command may take, and the seconds the whole run may
# take ($GPU_CHECK_BUDGET, default an hour): the checks run in the order
# of what they prove, and one that would start with under 20 seconds
# left is recorded as skipped, so that a short lease gets the important
# half and its table.
limit=${GPU_CHECK_LIMIT:-240}
budget=${GPU_CHECK_BUDGET:-3600}

# skipped NAME WHY: records a row of the table for a check not run.
skipped() {
    rows+=("$(printf '%-58s %-18s' "$1" "skipped ($2)")")
}

# check NAME COMMAND...: runs COMMAND (a program, or a function of this
# script whose programs run under `timeout "$left"`), its output appended
# to the log, and records a row of the table.
check() {
    local name=$1
    shift
    if [ -n "${GPU_CHECK_SKIP:-}" ] && [[ $name =~ $GPU_CHECK_SKIP ]]; then
        skipped "$name" asked
        return
    fi
    left=$((budget - SECONDS - 5))
    [ "$left" -gt "$limit" ] && left=$limit
    if [ "$left" -lt 20 ]; then
        skipped "$name" time
        return
    fi
    echo "== $name: $*" >>"$log"
    local start=$SECONDS status
    if declare -F "$1" >/dev/null; then
        "$@" >>"$log" 2>&1 </dev/null
    else
        timeout "$left" "$@" >>"$log" 2>&1 </dev/null
    fi
    status=$?
    local verdict=ok
    if [ "$status" -ne 0 ]; then
        verdict="FAILED (exit $status)"
        [ "$status" -eq 124 ] && verdict="TIMED OUT (${left}s)"
        failed=1
    fi
    rows+=("$(printf '%-58s %-18s %4ss' "$name" "$verdict" $((SECONDS - start)))")
    echo "$name: $verdict" >&2
}

# same_output FILE: the printed results of FILE on the CPU and the GPU agree.
same_output() {
    local cpu gpu
    cpu=$(timeout "$left" "$tessera" run "$1" --device cpu) || return 1
    gpu=$(timeout "$left" "$tessera" run "$1" --device cuda) || return 1
    printf 'cpu:\n%s\ncuda:\n%s\n' "$cpu" "$gpu"
    [ "$cpu" = "$gpu" ]
}

# hgmma: the SASS of the sm_90a GEMMs and attention kernels built here
# (bin/sass/*.cubin) holds HGMMA (QGMMA for fp8) and no local memory.
hgmma() {
    local cubin sass bad=0
    for cubin in "$bin"/sass/*.cubin; do
        sass=$(timeout "$left" cuobjdump --dump-sass "$cubin") || return 1
        echo "$sass" >"$bin/sass/$(basename "$cubin" .cubin).sass"
        echo "$sass" | awk -v file="$(basename "$cubin")" '
            /Function :/ { name = $3 }
            /[HQ]GMMA/ { mma[name]++ }
            /LDL|STL/ { local_[name]++ }
            END { for (n in mma) printf "%s %s: %d GMMA, %d local-memory instructions\n", file, n, mma[n], local_[n] + 0 }'
        grep -q 'GMMA' <<<"$sass" || bad=1
    done
    return $bad
}

# bench DIR ARGS...: the harness with ARGS against torch and Triton,
# when this machine's python3 has torch; its table and JSON in DIR, a
# relative DIR under $out (the device tool brings back 8 files).
bench() {
    local dir=$1
    shift
    [[ $dir = /* ]] || dir=$out/$dir
    python3 -c 'import torch' || return 1
    PYTHONUNBUFFERED=1 timeout "$left" python3 bench/gpu/run.py "$@" --tessera "$tessera" \
        --out "$dir" --repeat 10 --warmup 2
}

run() {
    out=${OUT:-$work/out}
    mkdir -p "$out"
    log=$out/gpu-check.log
    : >"$log"
    tar -C "$work" -xJf "$work/bin.tar.xz" || exit 1
    bin=$(cd "$work/bin" && pwd)
    # The binaries with this machine's glibc where they run with it, else
    # through the glibc they were built with, by its own loader; `tessera`
    # is a script that runs it either way (the harness calls it).
    local runner=()
    if LD_LIBRARY_PATH=$bin/lib "$bin/tessera-bin" --version >>"$log" 2>&1; then
        export LD_LIBRARY_PATH=$bin/lib
        echo "the binaries run with this machine's glibc" >>"$log"
    else
        runner=("$bin/glibc/ld-linux-x86-64.so.2" --library-path "$bin/glibc:$bin/lib")
        echo "the binaries run with their own glibc" >>"$log"
    fi
    printf '#!/bin/sh\nexec %s "$@"\n' "${runner[*]} $bin/tessera-bin" >"$bin/tessera"
    chmod +x "$bin/tessera"
    tessera=$bin/tessera
    device=("${runner[@]}" "$bin/device")
    export TESSERA_REPO=$root TESSERA_TEST_DEVICE=cuda PATH=$PATH:/usr/local/cuda/bin TESSERA_CACHE_DIR=$out
    check "nvidia-smi" nvidia-smi
    check "examples, device memory" "${device[@]}" examples:: --test-threads=1
    check "determinism: cuda bits = cpu bits" "${device[@]}" determinism::
    check "fp8 conversions on the GPU = the reference, bit for bit" "${device[@]}" minifloat::
    check "random draws on the GPU = the runtime's streams, bit for bit" "${device[@]}" random::
    check "hand-written kernels (tests/kernels)" "${device[@]}" kernels:: --test-threads=1
    check "SASS of the sm_90a GEMMs and attention: HGMMA" hgmma
    # $GPU_CHECK_TUNE: `FILE:ENTRY:DIM=SIZE,…` entries, `;` between them,
    # each an `@autotune` function tuned at those dims; the cache
    # ($out/tune.json) then serves the tests and benchmarks below.
    local tuning
    IFS=';' read -ra tuning <<<"${GPU_CHECK_TUNE:-}"
    for t in "${tuning[@]}"; do
        IFS=':' read -r file entry dims <<<"$t"
        # shellcheck disable=SC2046
        check "tessera tune $file --entry $entry at $dims" "$tessera" tune "$file" --entry "$entry" \
            --device cuda $(printf -- '--dim %s ' ${dims//,/ })
    done
    check "tessera test stdlib examples" "$tessera" test stdlib examples --device cuda
    check "bench/gpu/run.py --quick" bench quick --quick
    # $GPU_CHECK_NCU: the harness's options for cases to run once more
    # under Nsight Compute (say `--quick --only gemm`), a report each in
    # $out/ncu, that run's own table left out of $out (the device tool
    # brings back 8 files).
    if [ -n "${GPU_CHECK_NCU:-}" ]; then
        # shellcheck disable=SC2086
        check "Nsight Compute: $GPU_CHECK_NCU" bench "$root/$work/ncu-table" $GPU_CHECK_NCU --ncu "$out/ncu"
    fi
    # $GPU_CHECK_BENCH: the harness's options for a longer table (say
    # `--only softmax,layernorm`).
    if [ -n "${GPU_CHECK_BENCH:-}" ]; then
        # shellcheck disable=SC2086
        check "bench/gpu/run.py $GPU_CHECK_BENCH" bench more $GPU_CHECK_BENCH
    fi
    # matmul.tsr's f32 sums are not @deterministic (the CPU and the GPU add
    # in different orders): it checks itself against its float64 reference.
    check "examples/matmul.tsr on cuda matches its reference" "$tessera" run examples/matmul.tsr --device cuda
    for f in examples/saxpy.tsr tests/ui/runtime/swizzled_shared.tsr tests/ui/runtime/random_streams.tsr; do
        check "$f: cpu and cuda print the same" same_output "$f"
    done
    for tool in memcheck racecheck synccheck initcheck; do
        check "examples under compute-sanitizer $tool" \
            compute-sanitizer --tool "$tool" --error-exitcode 1 "${device[@]}" examples:: --test-threads=1
        check "hand-written kernels under compute-sanitizer $tool" \
            compute-sanitizer --tool "$tool" --error-exitcode 1 "${device[@]}" kernels:: --test-threads=1
    done
    for tool in memcheck racecheck synccheck; do
        for f in stdlib/linalg.tsr stdlib/nn.tsr; do
            check "$f tests under compute-sanitizer $tool" \
                compute-sanitizer --tool "$tool" --error-exitcode 1 "$tessera" test "$f" --device cuda \
                ${GPU_CHECK_FILTER:+--filter "$GPU_CHECK_FILTER"}
        done
    done
    for memory in managed pinned; do
        check "examples, $memory memory" env TESSERA_TEST_MEMORY=$memory "${device[@]}" examples:: --test-threads=1
    done
    {
        echo
        echo "GPU check of $(git rev-parse --short HEAD 2>/dev/null || echo 'this tree')"
        printf '%s\n' "${rows[@]}"
    } | tee -a "$log" "$out/table.txt"
    exit "$failed"
}

case "${1:-}" in
    pack) pack ;;
    run) run ;;
    *)
        echo "usage: scripts/gpu-check.sh pack|run" >&2
        exit 2
        ;;
esac
