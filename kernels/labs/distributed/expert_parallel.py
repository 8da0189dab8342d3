"""Expert parallelism: an MoE layer whose experts live on different ranks, fed by all-to-all.

The layer is Mixtral's (Jiang et al. 2024): E SwiGLU experts, a router that picks the top 2
per token, gates = softmax over the two chosen logits, y = Σ gate · expert(x). With n ranks each
rank holds E/n experts (E = n·⌈8/n⌉: Mixtral's 8 at n = 2, 4, 8, and any n works) and its own
T tokens. One step follows the dispatch pattern of GShard (Lepikhin et al. 2020: dispatch and
combine as all-to-alls between the devices that hold the experts) and Switch Transformer
(Fedus, Zoph, Shazeer 2021, §2.2):

1. route locally; sort the k·T (token, expert) assignments by expert. Experts sit on ranks in
   contiguous blocks, so this also sorts them by destination rank;
2. exchange the counts first (all_to_all_single of E integers): now every rank knows how many
   rows it sends to and receives from each rank, i.e. the splits of the next call;
3. dispatch: all_to_all_single of the sorted rows with those splits;
4. regroup the received rows by local expert, run each expert on its rows;
5. combine: the reverse all_to_all_single sends every row back to the rank it came from, where
   it is weighted by its gate and added to its token (index_add).

Capacity. GShard and Switch give each expert a fixed capacity C = cf·k·T/E (cf, the capacity
factor, e.g. 1.25) so the all-to-all buffers have one static shape, and drop the assignments
that overflow (the token keeps only its residual). This layer is dropless instead, as
MegaBlocks (Gale et al. 2023) and Megatron-LM's all-to-all token dispatcher
(megatron/core/transformer/moe/token_dispatcher.py) are: step 2 makes
the splits known, so buffers are sized exactly and nothing is dropped. The price is a tiny
extra all-to-all and one host sync (the splits are Python lists). The record reports what share
of the assignments a capacity of cf = 1.25 would have dropped for the routing it measured.

Check (before any timing): every rank rebuilds all E experts and its own tokens from seeds and
computes the definition in float32 (expert by expert, y += gate · expert(x)) with the same
routing decisions (route() of the same rows), so the check is about dispatch, expert compute
and combine, and stays away from top-k near-ties, where a 1-ulp change in a logit swaps experts.
FP32 (small shape): only summation order differs (which rows share a GEMM), errors ~1e-6;
tolerance 1e-5. BF16 (timed shape): tokens and weights are bf16 values, the reference uses the
same values in float32; the layer rounds the SwiGLU activation and the expert output to bf16
(relative 2^-8 each), giving a few 1e-3; tolerance 2e-2. The 1-GPU baseline is checked the same
way, each rank checking the rows of its own tokens. The largest error over ranks is reported.

Timing: after a barrier, each rank brackets one call with CUDA events (wall clock on gloo);
a repetition takes the slowest rank's time, because the all-to-alls tie the ranks together.
The two all-to-alls are then timed alone with the same splits and buffers, and the experts
alone on the same received rows. No L2 flush: a step moves hundreds of MiB, far past the L2.
The 1-GPU baseline (params shards = 1) is rank 0 running the unsharded layer on all n·T tokens
while the others wait at a barrier, so one run gives speed-up and scaling from 1 to n GPUs.
"""

import math
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import workers  # noqa: E402
from ranks import call_ms, sync  # noqa: E402

TOPK = 2
CF = 1.25  # the capacity factor whose drops the record reports (Switch Transformer's 1.25)


def configs(device):
    """(name, d, ffn, tokens per rank, dtype, tolerance): an FP32 check, then BF16 at Mixtral's
    d = 4096, ffn = 14336 with 4k and 16k tokens per rank on GPU; small shapes on CPU."""
    f32, bf16 = torch.float32, torch.bfloat16
    if labkit.QUICK:
        return [("fp32", 64, 128, 128, f32, 1e-5), ("bf16", 64, 128, 256, bf16, 2e-2)]
    if device.type != "cuda":
        return [("fp32", 256, 512, 512, f32, 1e-5), ("bf16", 256, 512, 1024, bf16, 2e-2)]
    return [("fp32", 1024, 2048, 2048, f32, 1e-5), ("bf16", 4096, 14336, 4096, bf16, 2e-2),
            ("bf16", 4096, 14336, 16384, bf16, 2e-2)]


def seeded(shape, seed, device, scale=1.0):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=g, device=device) * scale


def expert_weights(e, d, f, dtype, device):
    """Expert e's (w1 gate, w3 up, w2 down), the same on every rank that builds it."""
    s = labkit.SEED * 1009 + 17 * e
    shapes = [(d, f), (d, f), (f, d)]
    return tuple(seeded(sh, s + i, device, sh[0] ** -0.5).to(dtype) for i, sh in enumerate(shapes))


def rank_tokens(r, T, d, dtype, device):
    return seeded((T, d), labkit.SEED * 7 + 100_003 * (r + 1), device).to(dtype)


def route(x, w_router):
    """Top-k experts per token and their gates, in float32 as Switch Transformer keeps the
    router (§2.4, "selective precision"); gates = softmax over the k chosen logits (Mixtral)."""
    top, idx = (x.float() @ w_router).topk(TOPK, dim=-1)
    return idx, torch.softmax(top, dim=-1)


def expert_ffn(x, w):
    w1, w3, w2 = w
    return (F.silu(x @ w1) * (x @ w3)) @ w2


def moe_reference(x, idx, gates, experts32):
    """The definition in float32: y_t = Σ_j gate_tj · expert_{idx_tj}(x_t), expert by expert."""
    x = x.float()
    y = torch.zeros_like(x)
    for e, w in enumerate(experts32):
        tok, slot = (idx == e).nonzero(as_tuple=True)
        y.index_add_(0, tok, gates[tok, slot, None] * expert_ffn(x[tok], w))
    return y


# ANCHOR: local
def sort_by_expert(x, idx, gates, n_experts):
    """The k·T assignments as rows sorted by expert, their token and gate, and rows per expert."""
    flat = idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    tok = order // TOPK
    return x[tok], tok, gates.reshape(-1)[order], torch.bincount(flat, minlength=n_experts)


def run_experts(rows, counts, experts):
    """rows grouped by expert (counts[i] rows for experts[i], in order) → outputs, same order."""
    out = torch.empty_like(rows)
    start = 0
    for c, w in zip(counts, experts):
        out[start:start + c] = expert_ffn(rows[start:start + c], w)
        start += c
    return out


def combine(y_rows, tok, gates, T):
    """Weighted sum back into token order, accumulated in float32."""
    out = torch.zeros(T, y_rows.shape[1], dtype=torch.float32, device=y_rows.device)
    out.index_add_(0, tok, y_rows.float() * gates[:, None])
    return out.to(y_rows.dtype)


def moe_local(x, w_router, experts):
    """The unsharded layer: every expert on this one device."""
    idx, gates = route(x, w_router)
    rows, tok, g, counts = sort_by_expert(x, idx, gates, len(experts))
    return combine(run_experts(rows, counts.tolist(), experts), tok, g, x.shape[0])
# ANCHOR_END: local


# ANCHOR: expert_parallel
def moe_expert_parallel(x, w_router, local_experts, n, keep=None):
    """The layer with experts split over n ranks (this rank holds `local_experts`, a block of E/n
    consecutive experts). `keep`, a dict, receives the buffers and splits for timing parts."""
    epr = len(local_experts)
    idx, gates = route(x, w_router)
    rows, tok, g, counts = sort_by_expert(x, idx, gates, n * epr)  # sorted by destination rank
    # Counts first: recv_counts[s, j] = rows rank s sends for my local expert j.
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts)
    recv_counts = recv_counts.view(n, epr)
    host = torch.cat([counts.view(n, epr).sum(1), recv_counts.sum(1), recv_counts.sum(0)]).tolist()
    in_splits, out_splits, per_expert = host[:n], host[n:2 * n], host[2 * n:]
    # Dispatch: what arrives is ordered by source rank, then by local expert.
    recv = rows.new_empty(sum(out_splits), rows.shape[1])
    dist.all_to_all_single(recv, rows, out_splits, in_splits)
    local_e = torch.arange(epr, device=x.device).repeat(n).repeat_interleave(
        recv_counts.reshape(-1), output_size=recv.shape[0])
    order = torch.argsort(local_e, stable=True)  # group by local expert
    y = torch.empty_like(recv)
    y[order] = run_experts(recv[order], per_expert, local_experts)
    # Combine: every row goes back to the rank (and position) it came from.
    back = torch.empty_like(rows)
    dist.all_to_all_single(back, y, in_splits, out_splits)
    if keep is not None:
        keep.update(rows=rows, recv=recv, y=y, back=back, in_splits=in_splits,
                    out_splits=out_splits, grouped=recv[order], per_expert=per_expert, counts=counts)
    return combine(back, tok, g, x.shape[0])
# ANCHOR_END: expert_parallel


def over_ranks(x, device, op=dist.ReduceOp.MAX):
    t = torch.tensor([float(x)], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=op)
    return float(t.item())


def time_ranks(fn, device):
    """Median/p10/p90 over repetitions of the slowest rank's time for fn() (same reps on all)."""
    warmup = 1 if labkit.QUICK else 3
    for _ in range(warmup):
        fn()
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    reps = 3 if labkit.QUICK else labkit.rep_count(over_ranks((time.perf_counter() - t0) * 1e3, device))
    times = []
    for _ in range(reps):
        sync(device)
        times.append(call_ms(fn, device))
    t = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return labkit._summary(t.tolist())


def time_alone(fn, rank, device):
    """rank 0 times fn() alone (labkit.time_torch, no flush as in time_ranks) while the others
    wait at the barrier."""
    timing = labkit.time_torch(fn, flush=False) if rank == 0 else None
    sync(device)
    return timing


def routing_stats(keep, rank, n, T, d, elem, device):
    """Dispatched bytes (rows sent to other ranks), receive imbalance, capacity drops."""
    ins, outs = keep["in_splits"], keep["out_splits"]
    off = (sum(ins) - ins[rank]) * d * elem
    recv_rows = sum(outs)
    cap = math.ceil(CF * TOPK * T / keep["counts"].numel())  # per expert, per rank's group
    dropped = float((keep["counts"] - cap).clamp(min=0).sum())
    return {"dispatch_bytes_per_rank": over_ranks(off, device, dist.ReduceOp.SUM) / n,
            "recv_rows_max_over_mean": over_ranks(recv_rows, device) / (T * TOPK),
            "cf125_drop_pct": 100 * over_ranks(dropped, device, dist.ReduceOp.SUM) / (n * T * TOPK)}


def a2a_pair(k):
    """The step's two all-to-alls alone, with its splits and buffers."""
    dist.all_to_all_single(k["recv"], k["rows"], k["out_splits"], k["in_splits"])
    dist.all_to_all_single(k["back"], k["y"], k["in_splits"], k["out_splits"])


def check(out, ref, device):
    return over_ranks(labkit.rel_error(out, ref), device)


def run_config(cfg, rank, n, device):
    """Check, then time, the expert-parallel layer and the 1-GPU baseline at one shape."""
    name, d, f, T, dtype, tol = cfg
    epr = max(1, math.ceil(8 / n))
    E, elem = n * epr, torch.finfo(dtype).bits // 8
    w_router = seeded((d, E), labkit.SEED * 31 + 5, device, d ** -0.5)
    experts = [expert_weights(e, d, f, dtype, device) for e in range(E)]
    local = experts[rank * epr:(rank + 1) * epr]
    x = rank_tokens(rank, T, d, dtype, device)
    x_all = torch.cat([rank_tokens(r, T, d, dtype, device) for r in range(n)])
    mine = slice(rank * T, (rank + 1) * T)
    experts32 = [tuple(w.float() for w in ew) for ew in experts]
    idx, gates = route(x, w_router)
    ref = moe_reference(x, idx, gates, experts32)
    keep = {}
    err = check(moe_expert_parallel(x, w_router, local, n, keep), ref, device)
    idx_all, gates_all = route(x_all, w_router)
    if not (torch.equal(idx_all[mine], idx) and torch.equal(gates_all[mine], gates)):
        ref = moe_reference(x, idx_all[mine], gates_all[mine], experts32)
    err_base = check(moe_local(x_all, w_router, experts)[mine], ref, device)
    del experts32, ref
    params = {"world": n, "shards": n, "tokens": n * T, "tokens_per_rank": T, "d": d, "f": f,
              "experts": E, "topk": TOPK, "elem_bytes": elem}
    base_params = dict(params, shards=1)
    flops = 2.0 * n * T * (TOPK * 3 * d * f + d * E)
    label = f"EP all-to-all: {E} experts over {n} GPUs ({name})"
    base_label = f"1 GPU, all {E} experts ({name})"
    base = None
    if err_base <= tol:
        base = time_alone(lambda: moe_local(x_all, w_router, experts), rank, device)
    if err <= tol:
        step = time_ranks(lambda: moe_expert_parallel(x, w_router, local, n), device)
        a2a = time_ranks(lambda: a2a_pair(keep), device)
        exp = time_ranks(lambda: run_experts(keep["grouped"], keep["per_expert"], local), device)
        metrics = routing_stats(keep, rank, n, T, d, elem, device)
        ms = step["median_ms"]
        metrics.update(tokens_per_s=n * T / ms * 1e3, step_ms=ms, a2a_ms=a2a["median_ms"],
                       a2a_share_pct=100 * a2a["median_ms"] / ms, expert_ms=exp["median_ms"],
                       expert_share_pct=100 * exp["median_ms"] / ms,
                       a2a_gbps=2 * metrics["dispatch_bytes_per_rank"] / (a2a["median_ms"] * 1e6))
        if base is not None:
            metrics.update(speedup_vs_1gpu=base["median_ms"] / ms,
                           scaling_eff_pct=100 * base["median_ms"] / ms / n)
    if rank != 0:
        return
    if base is None:
        labkit.failed(f"one_gpu_{name}", base_label, base_params, "verify",
                      f"rel_error {err_base:.3e} exceeds tolerance {tol:.0e}", baseline=True)
    else:
        labkit.ok(f"one_gpu_{name}", base_label, base_params, base, rel_error=err_base,
                  tolerance=tol, flops=flops, baseline=True,
                  metrics={"tokens_per_s": n * T / base["median_ms"] * 1e3, "step_ms": base["median_ms"]})
    if err <= tol:
        labkit.ok(f"ep_{name}", label, params, step, rel_error=err, tolerance=tol, flops=flops,
                  metrics=metrics)
    else:
        labkit.failed(f"ep_{name}", label, params, "verify",
                      f"rel_error {err:.3e} exceeds tolerance {tol:.0e}")


def main():
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    if not workers.under_torchrun():
        labkit.failed("ep_bf16", "EP all-to-all", {"world": 1}, "unsupported",
                      "expert parallelism needs 2+ ranks; run under torchrun --nproc-per-node=N")
        return
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = workers.init_group(rank, n, backend)
    torch.set_float32_matmul_precision("highest")  # FP32 reference and check without TF32
    try:
        for cfg in configs(device):
            run_config(cfg, rank, n, device)
            labkit.log(f"rank {rank}: {cfg[0]} T={cfg[3]} done")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
