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
#   scripts/gpu-check.sh run    there, from the repository root with
#                               target/gpu-check carried: unpacks them and
#                               runs, on the GPU,
#     1. the example references in each memory kind (device, managed,
#        pinned), the @deterministic kernel 20 times against the CPU's
#        bits, the fp8 conversions against the reference bit for bit, and
#        the hand-written kernels of tests/kernels against theirs;
#     2. the same references under compute-sanitizer: memcheck, racecheck,
#        synccheck and initcheck;
#     3. the stdlib's and examples' @test functions (`tessera test`), and
#        stdlib/linalg.tsr's (the GEMMs: TMA into swizzled rings, wgmma
#        reading them in place, a producer warpgroup and a persistent
#        grid for the aligned ones) under memcheck, racecheck and synccheck
#        (the consumers' named barrier);
#     4. the examples with a main(), and the swizzled shared-buffer test,
#        on the CPU and the GPU, their printed results compared;
#   and writes the log and a table of what passed to $OUT (else
#   target/gpu-check/out). Each command may take 4 minutes ($limit); the
#   exit status is 1 when a check fails.
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
    cp target/release/tessera "$work/bin/tessera"
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
    strip "$work"/bin/*
    # The libraries: glibc's apart, so that they are used only where the
    # other machine's own glibc is too old for these binaries.
    local lib libs
    libs=$(ldd "$work"/bin/*)
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

# The seconds one command may take.
limit=240

# check NAME COMMAND...: runs COMMAND (a program under `timeout`, or a
# function of this script, whose programs are), its output appended to
# the log, and records a row of the table.
check() {
    local name=$1
    shift
    echo "== $name: $*" >>"$log"
    local start=$SECONDS status
    if declare -F "$1" >/dev/null; then
        "$@" >>"$log" 2>&1 </dev/null
    else
        timeout "$limit" "$@" >>"$log" 2>&1 </dev/null
    fi
    status=$?
    local verdict=ok
    if [ "$status" -ne 0 ]; then
        verdict="FAILED (exit $status)"
        failed=1
    fi
    rows+=("$(printf '%-50s %-18s %4ss' "$name" "$verdict" $((SECONDS - start)))")
    echo "$name: $verdict" >&2
}

# same_output FILE: the printed results of FILE on the CPU and the GPU agree.
same_output() {
    local cpu gpu
    cpu=$(timeout "$limit" "${runner[@]}" "$bin/tessera" run "$1" --device cpu) || return 1
    gpu=$(timeout "$limit" "${runner[@]}" "$bin/tessera" run "$1" --device cuda) || return 1
    printf 'cpu:\n%s\ncuda:\n%s\n' "$cpu" "$gpu"
    [ "$cpu" = "$gpu" ]
}

run() {
    out=${OUT:-$work/out}
    mkdir -p "$out"
    log=$out/gpu-check.log
    : >"$log"
    tar -C "$work" -xJf "$work/bin.tar.xz" || exit 1
    bin=$work/bin
    # The binaries with this machine's glibc where they run with it, else
    # through the glibc they were built with, by its own loader.
    runner=()
    if LD_LIBRARY_PATH=$bin/lib "$bin/tessera" --version >>"$log" 2>&1; then
        export LD_LIBRARY_PATH=$bin/lib
        echo "the binaries run with this machine's glibc" >>"$log"
    else
        runner=("$bin/glibc/ld-linux-x86-64.so.2" --library-path "$bin/glibc:$bin/lib")
        echo "the binaries run with their own glibc" >>"$log"
    fi
    export TESSERA_REPO=$root TESSERA_TEST_DEVICE=cuda PATH=$PATH:/usr/local/cuda/bin
    check "nvidia-smi" nvidia-smi
    for memory in device managed pinned; do
        check "examples, $memory memory" env TESSERA_TEST_MEMORY=$memory "${runner[@]}" "$bin/device" examples:: --test-threads=1
    done
    check "determinism: cuda bits = cpu bits" "${runner[@]}" "$bin/device" determinism::
    check "fp8 conversions on the GPU = the reference, bit for bit" "${runner[@]}" "$bin/device" minifloat::
    check "random draws on the GPU = the runtime's streams, bit for bit" "${runner[@]}" "$bin/device" random::
    check "hand-written kernels (tests/kernels)" "${runner[@]}" "$bin/device" kernels:: --test-threads=1
    for tool in memcheck racecheck synccheck initcheck; do
        check "examples under compute-sanitizer $tool" \
            compute-sanitizer --tool "$tool" --error-exitcode 1 "${runner[@]}" "$bin/device" examples:: --test-threads=1
        check "hand-written kernels under compute-sanitizer $tool" \
            compute-sanitizer --tool "$tool" --error-exitcode 1 "${runner[@]}" "$bin/device" kernels:: --test-threads=1
    done
    check "tessera test stdlib examples" "${runner[@]}" "$bin/tessera" test stdlib examples --device cuda
    for tool in memcheck racecheck synccheck; do
        check "stdlib/linalg.tsr tests under compute-sanitizer $tool" \
            compute-sanitizer --tool "$tool" --error-exitcode 1 "${runner[@]}" "$bin/tessera" test stdlib/linalg.tsr --device cuda
    done
    for f in examples/saxpy.tsr examples/matmul.tsr tests/ui/runtime/swizzled_shared.tsr tests/ui/runtime/random_streams.tsr; do
        check "$f: cpu and cuda print the same" same_output "$f"
    done
    {
        echo
        echo "GPU check of $(git rev-parse --short HEAD 2>/dev/null || echo 'this tree')"
        printf '%s\n' "${rows[@]}"
    } | tee -a "$log"
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
