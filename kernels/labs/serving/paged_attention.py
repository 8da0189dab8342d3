"""Attention straight from the pages: one Triton kernel for packed (variable-length) prefill and
one for batched decode, both reading keys and values through the block table.

Why: s7 and s8 attend by first copying every sequence's pages into a dense tensor (decode) or by
calling SDPA once per sequence from a Python loop (prefill). At batch 256 and ~800 tokens of
context the decode copy alone moves the live KV cache three times per layer (read the pages,
write the dense copy, read it again in SDPA). These kernels read each live key and value once.

Both kernels compute position p's output over keys 0..p of its own sequence (causal), with an
online softmax (running max m, running sum l) so that no [T, S] score matrix is stored. The
cache is [slots, kv_heads, head_dim] for one layer, slot = table[i // BS] * BS + i % BS.
In FP32 the dot products use IEEE arithmetic (not TF32), so the engine's FP32 tokens can be
compared with snapshot 1's.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _dot(a, b, IEEE: tl.constexpr):
    if IEEE:
        return tl.dot(a, b, input_precision="ieee")
    return tl.dot(a, b)


@triton.jit
def _kv_tile(k_ptr, v_ptr, tables_ptr, seq, table_stride, idx, ctx, kvh,
             KV: tl.constexpr, D: tl.constexpr, BS: tl.constexpr):
    """Keys and values of positions idx (a tile) of sequence seq, looked up through its table."""
    d = tl.arange(0, D)
    valid = idx < ctx
    block = tl.load(tables_ptr + seq * table_stride + idx // BS, mask=valid, other=0).to(tl.int64)
    rows = ((block * BS + idx % BS) * KV + kvh)[:, None] * D + d[None, :]
    k = tl.load(k_ptr + rows, mask=valid[:, None], other=0.0)
    v = tl.load(v_ptr + rows, mask=valid[:, None], other=0.0)
    return k, v, valid


@triton.jit
def prefill_kernel(q_ptr, k_ptr, v_ptr, o_ptr, tables_ptr, table_stride, q_start_ptr, q_len_ptr,
                   ctx_ptr, tile_seq_ptr, tile_row_ptr, scale,
                   H: tl.constexpr, KV: tl.constexpr, D: tl.constexpr, BS: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, IEEE: tl.constexpr):
    """One program per (tile of BM new tokens of one sequence, query head). The sequence's new
    tokens are the last q_len of its ctx positions; earlier ones (a cached prefix, or chunks
    already computed) are read from the pages like the new ones."""
    tile, h = tl.program_id(0), tl.program_id(1)
    seq = tl.load(tile_seq_ptr + tile)
    row0 = tl.load(tile_row_ptr + tile)
    q_len, ctx = tl.load(q_len_ptr + seq), tl.load(ctx_ptr + seq)
    first = tl.load(q_start_ptr + seq).to(tl.int64)
    rows = row0 + tl.arange(0, BM)
    live = rows < q_len
    pos = ctx - q_len + rows  # absolute position of each query row
    d = tl.arange(0, D)
    q_off = ((first + rows) * H + h)[:, None] * D + d[None, :]
    q = tl.load(q_ptr + q_off, mask=live[:, None], other=0.0)
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    end = tl.minimum(ctx, ctx - q_len + row0 + BM)  # the last key any row of this tile sees
    for n0 in range(0, end, BN):
        idx = n0 + tl.arange(0, BN)
        k, v, valid = _kv_tile(k_ptr, v_ptr, tables_ptr, seq, table_stride, idx, ctx, h // (H // KV),
                               KV, D, BS)
        s = _dot(q, tl.trans(k), IEEE) * scale
        s = tl.where(valid[None, :] & (idx[None, :] <= pos[:, None]), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_new = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows past q_len see no key
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, IEEE)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    o = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(o_ptr + q_off, o.to(o_ptr.dtype.element_ty), mask=live[:, None])


@triton.jit
def decode_kernel(q_ptr, k_ptr, v_ptr, o_ptr, tables_ptr, table_stride, ctx_ptr, scale,
                  KV: tl.constexpr, G: tl.constexpr, GP: tl.constexpr, D: tl.constexpr,
                  BS: tl.constexpr, BN: tl.constexpr, IEEE: tl.constexpr):
    """One program per (sequence, kv head): its G query heads (padded to GP rows, the smallest
    tile a tensor-core dot takes) against BN positions per iteration, so each key and value of
    the sequence is read once for all G heads that share it."""
    b, kvh = tl.program_id(0), tl.program_id(1)
    ctx = tl.load(ctx_ptr + b)
    g = tl.arange(0, GP)
    d = tl.arange(0, D)
    q_off = ((b * KV + kvh) * G + g).to(tl.int64)[:, None] * D + d[None, :]  # q is [B, KV*G, D]
    q = tl.load(q_ptr + q_off, mask=(g < G)[:, None], other=0.0)
    m_i = tl.full([GP], float("-inf"), tl.float32)
    l_i = tl.zeros([GP], tl.float32)
    acc = tl.zeros([GP, D], tl.float32)
    for n0 in range(0, ctx, BN):
        idx = n0 + tl.arange(0, BN)
        k, v, valid = _kv_tile(k_ptr, v_ptr, tables_ptr, b, table_stride, idx, ctx, kvh, KV, D, BS)
        s = _dot(q, tl.trans(k), IEEE) * scale
        s = tl.where(valid[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, IEEE)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + q_off, o.to(o_ptr.dtype.element_ty), mask=(g < G)[:, None])


def prefill_tiles(q_lens, bm):
    """(sequence, first row) of every BM-row tile of the packed new tokens."""
    seqs, rows = [], []
    for i, n in enumerate(q_lens):
        for r in range(0, n, bm):
            seqs.append(i)
            rows.append(r)
    return seqs, rows


def paged_prefill(q, k_cache, v_cache, meta, block_size, bm=64, bn=64):
    """q [N, H, D] packed new tokens; meta holds int32 tensors on q's device: tables [S, W],
    q_start, q_len, ctx [S], tile_seq, tile_row [T]. Returns [N, H, D]."""
    N, H, D = q.shape
    q = q.contiguous()
    o = torch.empty_like(q)
    grid = (meta["tile_seq"].shape[0], H)
    prefill_kernel[grid](q, k_cache, v_cache, o, meta["tables"], meta["tables"].stride(0),
                         meta["q_start"], meta["q_len"], meta["ctx"], meta["tile_seq"],
                         meta["tile_row"], D ** -0.5, H=H, KV=k_cache.shape[1], D=D,
                         BS=block_size, BM=bm, BN=bn, IEEE=q.dtype == torch.float32,
                         num_warps=4)
    return o


def paged_decode(q, k_cache, v_cache, tables, ctx, block_size, cfg=None):
    """q [B, H, D] (one new token per sequence, already in the cache); tables [B, W] int32;
    ctx [B] int32: positions each sequence attends over; cfg: (BN, warps, stages) from
    tune_decode. Returns [B, H, D]."""
    bn, warps, stages = cfg or (64, 4, 2)
    B, H, D = q.shape
    KV = k_cache.shape[1]
    G = H // KV
    q = q.contiguous()
    o = torch.empty_like(q)
    decode_kernel[(B, KV)](q, k_cache, v_cache, o, tables, tables.stride(0), ctx, D ** -0.5,
                           KV=KV, G=G, GP=max(16, triton.next_power_of_2(G)), D=D, BS=block_size,
                           BN=bn, IEEE=q.dtype == torch.float32, num_warps=warps, num_stages=stages)
    return o


DECODE_CONFIGS = [(32, 4, 2), (64, 4, 2), (64, 4, 3), (64, 8, 3), (128, 4, 2), (128, 8, 2),
                  (128, 8, 3), (256, 8, 2)]  # (BN positions per iteration, warps, pipeline stages)


def tune_decode(cache_layer, block_size, batch, ctx, heads):
    """The fastest decode tile shape on this GPU for `batch` rows of `ctx` positions, timed on
    the engine's own (empty) KV pool: like Triton's autotune, but done once at start-up, since
    the decode graphs are captured over one position and would tune for that."""
    if cache_layer.device.type != "cuda" or cache_layer.dtype == torch.float32:
        return None
    per_seq = -(-ctx // block_size)
    blocks = cache_layer.shape[0] // block_size
    if batch * per_seq + 1 > blocks:
        return None
    dev, (KV, D) = cache_layer.device, cache_layer.shape[1:]
    tables = (1 + torch.arange(batch * per_seq, device=dev, dtype=torch.int32)).view(batch, per_seq)
    lens = torch.full((batch,), ctx, dtype=torch.int32, device=dev)
    cache_layer[:(batch * per_seq + 1) * block_size].normal_()  # not timed on zeros or garbage
    q = torch.randn(batch, heads, D, device=dev, dtype=cache_layer.dtype)
    best = None
    for cfg in DECODE_CONFIGS:
        run = lambda: paged_decode(q, cache_layer, cache_layer, tables, lens, block_size, cfg=cfg)  # noqa: E731
        ms = triton.testing.do_bench(run, warmup=5, rep=20, return_mode="median")
        if best is None or ms < best[0]:
            best = (ms, cfg)
    return best[1]
