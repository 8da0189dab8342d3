"""Context parallelism: causal attention over a sequence split into n chunks, K/V passed round a ring.

Ring attention (Liu, Zaharia, Abbeel 2023): the sequence of S tokens is cut into n contiguous
chunks of c = S/n; rank r holds the queries, keys and values of chunk r. Attention needs every
key, so the K/V chunks travel round the ring: at step j rank r holds chunk (r − j) mod n, computes
its queries against it, and passes it on to rank r+1 while receiving the next from rank r−1.
After n steps every query has seen every key once, and the result is exact, not an approximation.

Merging the n partial results is the online softmax (Milakov & Gimelshein 2018) that
FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023) runs inside one GPU over tiles:
each block returns its output, normalised over its own keys, and its log-sum-exp
lse = m + log ℓ (m the row's largest score, ℓ = Σ exp(score − m)). Two partial results combine
with a new running max and rescaled sums (`merge`), so nothing of size S×S is ever stored.

Causal masking per block: chunk s lies wholly in the past of chunk r when s < r (a full block),
is the diagonal when s = r (causal inside the block), and wholly in the future when s > r, so
that block is skipped. With contiguous chunks rank r computes r + ½ blocks: the last rank sets
the pace (the per-rank table shows it); zigzag chunking, which the card explains, evens it out.

Overlap is the point: the transfer of the next chunk is posted (batch_isend_irecv) before the
current block is computed and waited for after it, with two receive buffers in turn (double
buffering) so a chunk still being read is never overwritten. NCCL runs the transfer on its own
stream; `wait()` makes the compute stream wait for it. The serial variant posts the same
transfer after the compute. The record shows whether the transfers were hidden: compute alone
(the same blocks, no transfers), transfers alone (the same rotations, no compute), and
hidden_pct = (compute + transfer − overlapped step) / transfer, 100 when the step costs no more
than its compute. Times are the slowest rank's (the ring ends when it does).

Per block, BF16 on a GPU: FlashAttention-2 through aten._scaled_dot_product_flash_attention, the
kernel behind SDPA's flash backend, which also returns the per-row LSE that the public SDPA call
drops (PyTorch's own context parallelism, torch/distributed/tensor/experimental/_context_parallel,
calls it the same way). FP32, or off the GPU: the block written out in float32.

Check (before any timing): every rank rebuilds the chunks it needs from seeds and computes its
query rows' causal attention over all earlier keys in float32, in slices of rows. FP32 ring
(small shape): only summation order differs (blockwise merge vs one softmax), ~1e-7 relative;
tolerance 1e-5. BF16 (timed shapes): same bf16 inputs, reference in float32; FlashAttention
rounds P to bf16 before P·V and each block output to bf16 (2^-8 relative each), giving a few
1e-3; tolerance 2e-2. The 1-GPU baseline (the whole sequence through the same kernel, causal,
timed on rank 0 while the others wait, params shards = 1) is checked the same way.
"""

import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import workers  # noqa: E402
from ranks import call_ms, max_over_ranks, sync  # noqa: E402


def configs(device):
    """(name, total tokens, heads, head dim, dtype, tolerance): an FP32 check, then BF16 at 8k,
    32k and 128k tokens with 32 heads of 128 on GPU (the card's 131,072-token length; K/V here
    have all 32 heads (MHA), so a transfer is 4× the bytes of the card's 8-KV-head GQA example)."""
    f32, bf16 = torch.float32, torch.bfloat16
    if labkit.QUICK:
        return [("fp32", 256, 2, 32, f32, 1e-5), ("bf16", 512, 2, 32, bf16, 2e-2)]
    if device.type != "cuda":
        return [("fp32", 1024, 4, 64, f32, 1e-5), ("bf16", 2048, 4, 64, bf16, 2e-2)]
    return [("fp32", 4096, 32, 128, f32, 1e-5)] + [
        ("bf16", s, 32, 128, bf16, 2e-2) for s in (8192, 32768, 131072)]


def chunk(i, which, c, H, D, dtype, device):
    """Chunk i of Q (which=0), K (1) or V (2), [1, H, c, D]: the same on every rank."""
    g = torch.Generator(device=device).manual_seed(labkit.SEED * 101 + 3 * i + which)
    return torch.randn((1, H, c, D), generator=g, device=device).to(dtype)


# ANCHOR: block
def block_attention(q, k, v, causal):
    """(out, lse) of one block pair: out = softmax(q·kᵀ/√d)·v over these keys, lse = the row's
    log Σ exp(q·kᵀ/√d) (float32). causal: the diagonal block, key j ≤ query i inside it."""
    if q.is_cuda and q.dtype != torch.float32:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)[:2]
        return out, lse
    s = (q.float() @ k.float().transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        s.masked_fill_(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return (torch.exp(s - lse[..., None]) @ v.float()).to(q.dtype), lse
# ANCHOR_END: block


# ANCHOR: merge
def merge(out, lse, block_out, block_lse):
    """Online softmax: fold one block's (output, lse) into the running (out, lse), in place.
    m is the new running max; a and b are the two parts' sums ℓ rescaled to it."""
    m = torch.maximum(lse, block_lse)
    a, b = torch.exp(lse - m), torch.exp(block_lse - m)  # exp(−inf) = 0 before the first block
    out.mul_(a.unsqueeze(-1)).add_(block_out * b.unsqueeze(-1)).div_((a + b).unsqueeze(-1))
    lse.copy_(m + torch.log(a + b))
# ANCHOR_END: merge


# ANCHOR: ring
def rotate(send, recv, rank, n):
    """Post one ring step: my current K/V chunk to rank+1, the next one from rank−1."""
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, send, (rank + 1) % n),
                                   dist.P2POp(dist.irecv, recv, (rank - 1) % n)])


def ring_attention(q, kv, rank, n, mode="overlap"):
    """Causal attention of this rank's query chunk q over the whole sequence. kv = stack(K, V)
    of this rank's chunk. mode: "overlap" posts the next transfer before computing on the
    current chunk, "serial" after it; "compute" skips transfers (reusing kv), "transfer" skips
    compute. Only "overlap" and "serial" give the right answer."""
    out = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    lse = torch.full(q.shape[:-1], float("-inf"), device=q.device)
    bufs = [torch.empty_like(kv), torch.empty_like(kv)]  # receive into these in turn
    cur = kv
    for step in range(n):
        src = (rank - step) % n  # whose chunk `cur` holds
        move = step < n - 1 and mode != "compute"
        works = rotate(cur, bufs[step % 2], rank, n) if move and mode != "serial" else []
        if src <= rank and mode != "transfer":  # src > rank: wholly in the future, skipped
            merge(out, lse, *block_attention(q, cur[0], cur[1], causal=src == rank))
        if move and mode == "serial":
            works = rotate(cur, bufs[step % 2], rank, n)
        for w in works:
            w.wait()
        if move:
            cur = bufs[step % 2]
    return out.to(q.dtype)
# ANCHOR_END: ring


def reference_rows(q, k, v, row0):
    """float32 causal attention of query rows [row0, row0 + c) over keys [0, len(k)), in slices
    of rows so that a slice's scores stay under 2 GiB."""
    q, k, v = q.float(), k.float(), v.float()
    c, L = q.shape[-2], k.shape[-2]
    rows = max(1, (1 << 29) // (q.shape[1] * L))
    keys = torch.arange(L, device=q.device)
    out = torch.empty_like(q)
    for i in range(0, c, rows):
        s = (q[..., i:i + rows, :] @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        pos = row0 + i + torch.arange(s.shape[-2], device=q.device)
        s.masked_fill_(keys[None, :] > pos[:, None], float("-inf"))
        out[..., i:i + rows, :] = torch.softmax(s, dim=-1) @ v
    return out


def time_ranks(fn, device):
    """(summary, per-rank medians): each repetition is the slowest rank's time for fn(); every
    rank runs the same number of repetitions (10 or more on GPU: the steps are long)."""
    cuda = device.type == "cuda"
    for _ in range(1 if labkit.QUICK else 2):
        fn()
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    est = max_over_ranks((time.perf_counter() - t0) * 1e3, device)
    reps = 3 if labkit.QUICK else max(10 if cuda else 5, labkit.rep_count(est))
    times = []
    for _ in range(reps):
        sync(device)
        times.append(call_ms(fn, device))
    mine = torch.tensor(times, dtype=torch.float64, device=device)
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    every = torch.stack(every)
    return labkit._summary(every.max(0).values.tolist()), every.median(1).values.tolist()


def time_alone(fn, rank, device):
    """rank 0 times fn() alone (no L2 flush, as time_ranks) while the others wait."""
    timing = labkit.time_torch(fn, flush=False) if rank == 0 else None
    sync(device)
    return timing


def check(out, ref, device):
    return max_over_ranks(labkit.rel_error(out, ref), device)


def run_config(cfg, rank, n, device):
    """Check, then time, the ring (overlapped and serial) and the 1-GPU baseline at one shape."""
    name, s_nominal, H, D, dtype, tol = cfg
    c = s_nominal // n
    S, elem, mine = c * n, torch.finfo(dtype).bits // 8, slice(rank * c, (rank + 1) * c)
    Q, K, V = (torch.cat([chunk(i, w, c, H, D, dtype, device) for i in range(n)], dim=2) for w in range(3))
    q = Q[:, :, mine].contiguous()
    kv = torch.stack([K[:, :, mine], V[:, :, mine]]).contiguous()
    ref = reference_rows(q, K[:, :, :(rank + 1) * c], V[:, :, :(rank + 1) * c], rank * c)
    errs = {m: check(ring_attention(q, kv, rank, n, m), ref, device) for m in ("overlap", "serial")}
    err_base = check(block_attention(Q, K, V, causal=True)[0][:, :, mine], ref, device)
    del ref
    params = {"world": n, "shards": n, "seq": S, "heads": H, "d_head": D, "elem_bytes": elem, "causal": 1}
    flops = 2.0 * H * D * S * S  # 4·S²·H·D/2: the causal half of Q·Kᵀ and P·V
    per_s = lambda ms: {"step_ms": ms, "tokens_per_s": S / ms * 1e3, "tflops": flops / ms / 1e9}  # noqa: E731
    base = time_alone(lambda: block_attention(Q, K, V, True), rank, device) if err_base <= tol else None
    timed = {m: time_ranks(lambda m=m: ring_attention(q, kv, rank, n, m), device)
             for m in ("overlap", "serial", "compute", "transfer") if errs.get(m, 0.0) <= tol}
    if rank != 0:
        return
    base_label, variants = f"1 GPU, whole sequence ({name})", [
        ("overlap", f"ring, next K/V sent during compute ({n} GPUs, {name})"),
        ("serial", f"ring, K/V sent after compute ({n} GPUs, {name})")]
    if base is None:
        labkit.failed(f"one_gpu_{name}", base_label, dict(params, shards=1), "verify",
                      f"rel_error {err_base:.3e} exceeds tolerance {tol:.0e}", baseline=True)
    else:
        labkit.ok(f"one_gpu_{name}", base_label, dict(params, shards=1), base, rel_error=err_base,
                  tolerance=tol, flops=flops, baseline=True, metrics=per_s(base["median_ms"]))
    for mode, label in variants:
        if mode not in timed:
            labkit.failed(f"ring_{mode}_{name}", label, params, "verify",
                          f"rel_error {errs[mode]:.3e} exceeds tolerance {tol:.0e}")
            continue
        ms = timed[mode][0]["median_ms"]
        metrics = per_s(ms)
        if base is not None:
            metrics.update(speedup_vs_1gpu=base["median_ms"] / ms,
                           scaling_eff_pct=100 * base["median_ms"] / ms / n)
        tables = None
        if mode == "overlap":
            comp, xfer = timed["compute"][0]["median_ms"], timed["transfer"][0]["median_ms"]
            ring_bytes = (n - 1) * kv.numel() * elem
            metrics.update(compute_ms=comp, transfer_ms=xfer, exposed_ms=max(0.0, ms - comp),
                           hidden_pct=min(100.0, max(0.0, 100 * (comp + xfer - ms) / xfer)),
                           ring_bytes_per_rank=ring_bytes, transfer_gbps=ring_bytes / xfer / 1e6)
            tables = {"per_rank": {"columns": ["rank", "blocks", "compute_ms"],
                                   "rows": [[r, r + 0.5, t] for r, t in enumerate(timed["compute"][1])]}}
        labkit.ok(f"ring_{mode}_{name}", label, params, timed[mode][0], rel_error=errs[mode],
                  tolerance=tol, flops=flops, metrics=metrics, tables=tables)


def main():
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    if not workers.under_torchrun():
        labkit.failed("ring_overlap_bf16", "ring attention", {"world": 1}, "unsupported",
                      "context parallelism needs 2+ ranks; run under torchrun --nproc-per-node=N")
        return
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = workers.init_group(rank, n, backend)
    torch.set_float32_matmul_precision("highest")  # FP32 reference and check without TF32
    try:
        for cfg in configs(device):
            run_config(cfg, rank, n, device)
            labkit.log(f"rank {rank}: {cfg[0]} S={cfg[1]} done")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
