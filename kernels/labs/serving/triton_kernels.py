"""Two Triton kernels the engine can swap in: a fused RMSNorm and a paged decode attention.

Why these two: in a decode step of the nano engine, eager RMSNorm is several small kernels per
call (square, mean, rsqrt, two multiplies, casts) and there are four calls per layer; and the
SDPA decode path first copies every sequence's pages into a dense [B, S, kv_heads, head_dim]
tensor before attending. The fused RMSNorm reads a row once and writes it once; the paged
kernel reads keys and values straight from the blocks the block table names, with no copy.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    y = (x * r).to(w.dtype) * w  # same roundings as the eager version: cast, then scale by w
    tl.store(y_ptr + row * n_cols + cols, y, mask=m)


def rmsnorm_triton(x, w, eps):
    """Drop-in for model.rmsnorm_eager: one program per row of the last dimension."""
    d = x.shape[-1]
    x2 = x.reshape(-1, d).contiguous()
    y = torch.empty_like(x2)
    rmsnorm_kernel[(x2.shape[0],)](x2, w, y, d, eps, BLOCK=triton.next_power_of_2(d))
    return y.view(x.shape)


@triton.jit
def paged_decode_kernel(q_ptr, k_ptr, v_ptr, tables_ptr, ctx_ptr, o_ptr, scale, table_stride,
                        KV: tl.constexpr, G: tl.constexpr, D: tl.constexpr, BS: tl.constexpr):
    """One program per (sequence, kv head): its G query heads against the sequence's pages,
    one block of BS positions per iteration, with an online softmax. The loop stops at the
    sequence's own length; positions past it in the last block are masked and load nothing."""
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    ctx = tl.load(ctx_ptr + b)
    g = tl.arange(0, G)
    d = tl.arange(0, D)
    t = tl.arange(0, BS)
    q_rows = (b * KV * G + kvh * G + g).to(tl.int64)  # q is [B, KV*G, D], head h uses kv h // G
    q = tl.load(q_ptr + q_rows[:, None] * D + d[None, :]).to(tl.float32)
    m_i = tl.full([G], float("-inf"), tl.float32)
    l_i = tl.zeros([G], tl.float32)
    acc = tl.zeros([G, D], tl.float32)
    for i in range(0, tl.cdiv(ctx, BS)):
        block = tl.load(tables_ptr + b * table_stride + i).to(tl.int64)
        kv_rows = (block * BS + t) * KV + kvh  # cache is [blocks * BS, KV, D]
        valid = i * BS + t < ctx  # [BS]
        k = tl.load(k_ptr + kv_rows[:, None] * D + d[None, :], mask=valid[:, None], other=0.0)
        s = tl.sum(q[:, None, :] * k.to(tl.float32)[None, :, :], axis=2) * scale  # [G, BS]
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        v = tl.load(v_ptr + kv_rows[:, None] * D + d[None, :], mask=valid[:, None], other=0.0)
        v = v.to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] * D + d[None, :], o.to(o_ptr.dtype.element_ty))


def paged_decode_attention(q, k_cache, v_cache, tables, ctx_lens, block_size):
    """q [B, H, D]; k_cache, v_cache [blocks * block_size, KV, D]; tables [B, >= blocks used];
    ctx_lens [B]: positions each sequence attends over. Returns [B, H, D]."""
    B, H, D = q.shape
    KV = k_cache.shape[1]
    q = q.contiguous()
    o = torch.empty_like(q)
    paged_decode_kernel[(B, KV)](q, k_cache, v_cache, tables, ctx_lens, o, D ** -0.5,
                                 tables.stride(0), KV=KV, G=H // KV, D=D, BS=block_size)
    return o
