"""Triton kernels written for the GPU benchmark harness (`run.py`), as
anchors: a matmul, a fused attention forward pass (the structure of
Triton's fused-attention tutorial: FlashAttention's online softmax over
blocks of keys, causal blocks split into the unmasked ones left of the
diagonal and the masked diagonal ones), and softmax and layer norm row
kernels (one program per row, the whole row in registers).

Each launcher takes contiguous CUDA tensors and returns a new one."""

import math

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps): large tiles for the square
# products, small BLOCK_M for the skinny ones (M = 16).
MATMUL_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=s, num_warps=w)
    for bm, bn, bk, s, w in [
        (128, 256, 64, 3, 8),
        (256, 128, 64, 3, 8),
        (128, 128, 64, 4, 8),
        (128, 128, 64, 4, 4),
        (64, 256, 64, 4, 4),
        (128, 64, 64, 4, 4),
        (64, 128, 64, 4, 4),
        (16, 128, 128, 4, 4),
        (16, 64, 128, 4, 4),
        (16, 32, 256, 3, 2),
    ]
]


@triton.autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # C[M, N] = A[M, K] @ B[K, N], all row-major, accumulated in f32.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    # Consecutive programs walk GROUP_M block rows together, so that the
    # blocks of B they share stay in L2.
    per_group = GROUP_M * blocks_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    # Rows and columns past the edge wrap around (their results are not
    # stored), so the loads need masks only along K.
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], c, mask=(cm[:, None] < M) & (cn[None, :] < N))


def matmul(a, b):
    """a @ b for bf16 a [M, K] and b [K, N], f32 accumulation, a bf16 result
    (as torch.matmul's)."""
    (m, k), (_, n) = a.shape, b.shape
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
    _matmul_kernel[grid](a, b, c, m, n, k)
    return c


# (BLOCK_M, BLOCK_N, stages, warps); BLOCK_N divides BLOCK_M, which the
# causal split into off-diagonal and diagonal blocks relies on.
ATTENTION_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w)
    for bm, bn, s, w in [
        (128, 64, 3, 8),
        (128, 64, 4, 8),
        (128, 128, 3, 8),
        (128, 32, 4, 4),
        (64, 64, 4, 4),
    ]
]


@triton.jit
def _attention_block(acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, qk_scale,
                     HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    # One block of keys: scores, the running max and sum, and p @ v.
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k_t = tl.load(k_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])
    qk = tl.dot(q, k_t) * qk_scale
    if MASKED:
        qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1))
    p = tl.exp2(qk - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    v = tl.load(v_base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i * alpha + tl.sum(p, 1), m_new


@triton.autotune(configs=ATTENTION_CONFIGS, key=["S", "HEAD_DIM", "CAUSAL"])
@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, qk_scale,
                      HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One program per BLOCK_M queries of one (batch, head); q, k, v and o
    # are contiguous [B, H, S, HEAD_DIM] with S a multiple of BLOCK_M.
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64) * S * HEAD_DIM
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    # Keys every query of the block sees: all of them, or (causal) those
    # left of the block's diagonal.
    end = start_m if CAUSAL else S
    for start_n in range(0, end, BLOCK_N):
        acc, l_i, m_i = _attention_block(acc, l_i, m_i, q, k_ptr + head, v_ptr + head, start_n, offs_m, qk_scale,
                                         HEAD_DIM, BLOCK_N, False)
    if CAUSAL:
        for start_n in range(start_m, start_m + BLOCK_M, BLOCK_N):
            acc, l_i, m_i = _attention_block(acc, l_i, m_i, q, k_ptr + head, v_ptr + head, start_n, offs_m,
                                             qk_scale, HEAD_DIM, BLOCK_N, True)
    o = acc / l_i[:, None]
    tl.store(o_ptr + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], o.to(o_ptr.dtype.element_ty))


def attention(q, k, v, causal):
    """softmax(q kᵀ / √D) v over [B, H, S, D] bf16, optionally causal; S a
    multiple of 128."""
    batch, heads, seq, head_dim = q.shape
    if seq % 128:
        raise ValueError(f"the Triton attention anchor needs S % 128 == 0, not S = {seq}")
    o = torch.empty_like(q)
    qk_scale = 1.0 / math.sqrt(head_dim) * math.log2(math.e)
    grid = lambda meta: (seq // meta["BLOCK_M"], batch * heads)
    _attention_kernel[grid](q, k, v, o, seq, qk_scale, HEAD_DIM=head_dim, CAUSAL=causal)
    return o


def _row_warps(block):
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, C, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * C
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row + cols, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    """Softmax over the last axis of x [R, C], in f32, the result in x's dtype."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=_row_warps(block))
    return y


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * C
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
    centered = tl.where(mask, x - tl.sum(x, 0) / C, 0.0)
    rstd = tl.rsqrt(tl.sum(centered * centered, 0) / C + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row + cols, (centered * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def layernorm(x, weight, bias, eps):
    """Layer norm over the last axis of x [R, C] with weight and bias [C],
    in f32, the result in x's dtype."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _layernorm_kernel[(rows,)](x, weight, bias, y, cols, eps, BLOCK=block, num_warps=_row_warps(block))
    return y
