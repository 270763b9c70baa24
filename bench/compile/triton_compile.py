"""One cold Triton compile of one kernel, for the compile-speed benchmark.

Run by `bench/compile/run.py` in a fresh process for every measurement, with
TRITON_CACHE_DIR and TRITON_HOME pointing at new empty directories, so that
nothing is cached:

    python triton_compile.py KERNEL TARGET STOP OUT_DIR [--warm]

KERNEL is `matmul` or `softmax`, TARGET `sm_80` or `sm_90a`, STOP `ptx`
(Triton's pipeline up to PTX) or `cubin` (also ptxas). It compiles
ahead of time, without a GPU, for an explicit `GPUTarget`, writes what it
produced to OUT_DIR and prints one JSON line: seconds spent importing
triton, seconds inside `triton.compile(...)` and per stage.

With `--warm` it first compiles a small unrelated kernel for the same
target in the same process, untimed, so that the timed compile no longer
pays Triton's once-per-process costs (hashing its own 500 MB library for
the cache key, creating the MLIR context, first imports, finding ptxas):
that is Triton's marginal cost of one more kernel.

The kernels are the Triton equivalents of what `tessera build` makes of
`examples/matmul.tsr` and `bench/compile/softmax.tsr`: the same tile shapes,
threads per block, pipeline stages, grids and masking.
"""

import json
import os
import sys
import time

T_START = time.perf_counter()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402

T_IMPORTED = time.perf_counter()


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[M, N] (f32) = A[M, K] (bf16, row-major) @ B[K, N] (bf16, row-major).

    Tessera: `op.matmul(A, B, tile_shape=(128, 128, 64), accumulate=f32)`
    with `K % 64 == 0`: a 128x128 tile of C per block, grid
    (cdiv(M, 128), cdiv(N, 128)), K walked in steps of 64 without a mask.
    """
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def softmax(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    """y[r, :] = softmax(x[r, :]) for bf16 rows, f32 accumulation.

    Tessera: `op.softmax(x, axis=-1, accumulate=f32)` on `bf16[R, C]`: one
    block per row, a first walk over the row in steps of 1024 keeping the
    running max and the rescaled running sum, a second walk writing
    exp(x - max) / sum; lanes past the end of the row are masked.
    """
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(y_row + cols, y.to(tl.bfloat16), mask=cols < n_cols)


# What `tessera build` chooses for these kernels (`--emit schedule-ir`):
# 256 threads per block for both; the matmul's main loop pipelined in 3
# stages on sm_80 and 4 on sm_90a.
KERNELS = {
    "matmul": dict(
        fn=matmul,
        signature={"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                   "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
        constexprs={"BM": 128, "BN": 128, "BK": 64},
        # Pointers 16-byte aligned (as the JIT assumes for tensors), K % 16 == 0
        # (the source's `K % 64 == 0`).
        divisible_by_16=["a_ptr", "b_ptr", "c_ptr", "K"],
        num_warps=8,
        num_stages={"sm_80": 3, "sm_90a": 4},
    ),
    "softmax": dict(
        fn=softmax,
        signature={"x_ptr": "*bf16", "y_ptr": "*bf16", "n_cols": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
        divisible_by_16=["x_ptr", "y_ptr"],
        num_warps=8,
        num_stages={"sm_80": 1, "sm_90a": 1},
    ),
}

@triton.jit
def warmup(x_ptr, n):
    i = tl.program_id(0) * 128 + tl.arange(0, 128)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2.0, mask=i < n)


TARGETS = {"sm_80": GPUTarget("cuda", 80, 32), "sm_90a": GPUTarget("cuda", 90, 32)}


def stop_after_ptx():
    """Drop the ptxas stage from the CUDA pipeline and treat PTX as its binary."""
    init, add_stages = CUDABackend.__init__, CUDABackend.add_stages

    def patched_init(self, target):
        init(self, target)
        self.binary_ext = "ptx"

    def patched_add_stages(self, stages, options, language):
        add_stages(self, stages, options, language)
        del stages["cubin"]

    CUDABackend.__init__ = patched_init
    CUDABackend.add_stages = patched_add_stages


def main():
    kernel, target, stop, out_dir = sys.argv[1:5]
    warm = "--warm" in sys.argv[5:]
    if stop not in ("ptx", "cubin"):
        sys.exit(f"STOP must be ptx or cubin, not {stop}")
    spec = KERNELS[kernel]
    if stop == "ptx":
        stop_after_ptx()

    stages = []

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        stages.append(dict(cache_hit=cache_hit, ir_initialization=times.ir_initialization / 1e6,
                           **{name: us / 1e6 for name, us in times.lowering_stages}))

    if warm:
        warm_src = triton.compiler.ASTSource(fn=warmup, signature={"x_ptr": "*fp32", "n": "i32"})
        triton.compile(warm_src, target=TARGETS[target], options={"num_warps": 4})
    triton.knobs.compilation.listener = listener

    fn = spec["fn"]
    attrs = {(fn.arg_names.index(name), ): [["tt.divisibility", 16]] for name in spec["divisible_by_16"]}
    src = triton.compiler.ASTSource(fn=fn, signature=spec["signature"], constexprs=spec["constexprs"], attrs=attrs)
    options = {"num_warps": spec["num_warps"], "num_stages": spec["num_stages"][target]}

    t0 = time.perf_counter()
    compiled = triton.compile(src, target=TARGETS[target], options=options)
    t1 = time.perf_counter()

    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, f"{kernel}.{target}")
    ptx = compiled.asm["ptx"]
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    with open(base + ".ptx", "w") as f:
        f.write(ptx)
    if stop == "cubin":
        with open(base + ".cubin", "wb") as f:
            f.write(compiled.asm["cubin"])

    print(json.dumps(dict(
        kernel=kernel, target=target, stop=stop, warm=warm, triton_version=triton.__version__,
        import_s=T_IMPORTED - T_START, compile_s=t1 - t0,
        stages=stages[0] if stages else None,
        cache_hit=stages[0]["cache_hit"] if stages else None,
        ptx_bytes=len(ptx),
        cubin_bytes=len(compiled.asm["cubin"]) if stop == "cubin" else None,
        shared_bytes=compiled.metadata.shared,
    )))


if __name__ == "__main__":
    main()
