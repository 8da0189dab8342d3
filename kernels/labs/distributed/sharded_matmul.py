"""Sharded matmul on n GPUs: all-gather → GEMM and GEMM → reduce-scatter, plain and overlapped.

The two collective matmuls of the Distributed Matmul path (collective_matmul.py has the code and
why it is correct): the up projection of a tensor-parallel MLP, all_gather(X[T/n, d])·W[d, f/n],
and the down projection, reduce_scatter(H[T, f/n]·W[f/n, d]). For each, six records:

* `single`: the unsharded GEMM on one GPU (rank 0 alone while the others wait; `shards: 1`);
* `gemm`: each rank's GEMM alone; `comm`: the collective alone (one NCCL call); `ring`: the n−1 ring
  steps alone (send/recv, plus the additions of the reduce-scatter);
* `plain`: the collective, then the GEMM (or the reverse); `overlap`: the ring collective matmul.
  These carry the pieces beside them: gemm_ms, comm_ms, ring_ms, their sum, the ideal
  max(comm, GEMM), the ring pipeline's model max(G, ring + G/n) (one block's GEMM cannot hide:
  the last one of the all-gather, the first of the reduce-scatter), and on `overlap` the speed-up
  over `plain` and the share of min(comm, GEMM) it hid.

Shapes: Llama 3 8B's MLP at 4,096 tokens (d 4,096, f 14,336: the cards' worked example) and Llama
3 70B's at 16,384 tokens (d 8,192, f 28,672: the path's largest). T and f are rounded down to
multiples of n (exact at n = 2, 4, 8). BF16 on GPUs, FP32 on gloo CPU processes.

Check, before timing: every rank rebuilds the full A and B in FP32 from the seed (values rounded
to the compute type first, so the reference starts from the very numbers the GPU multiplies) and
computes its own part of the unsharded FP32 product, with no communication; ‖out − ref‖ / ‖ref‖
is summed over all ranks. Work buffers are filled with NaN before the check, so a block read
before it arrived fails it. Tolerance u·√r + K·2⁻²⁴: each rounding of an output element to the
compute type costs at most u relative (2⁻⁸ in BF16, 2⁻²⁴ in FP32), and r roundings with random
signs add like √r: r = 2 for a GEMM (its output, and a BF16 split-K partial cuBLAS may write),
3n − 1 for a reduce-scatter (n partial GEMMs, n − 1 additions on the way). The FP32 accumulation
over K terms adds errors like a random walk, about √K·2⁻²⁴ relative; K·2⁻²⁴ (1.7e-3 at K =
28,672) covers it with room. A gathered copy must be exact. A reference costs 2·rows·K·N FP32
FLOPs (the largest here, the unsharded 70B MLP GEMM, about 7.7e12: well under a second); beyond
REF_FLOPS (larger shapes than these) every s-th row is compared, s a power of two, and
check_rows_pct says how many (100 at the shapes below).

Timing: after a barrier and an L2 flush, CUDA events around one call on every rank. A step is as
slow as its slowest rank, so each repetition's time is the maximum over ranks. `flops` is per
GPU (the derived TFLOP/s is per GPU); `bytes` of `comm` and `ring` is what each rank receives.
NCCL's streams run at high priority (TORCH_NCCL_HIGH_PRIORITY, PyTorch's ProcessGroupNCCL
environment variables) so that its kernels are scheduled ahead of a GEMM's waiting blocks.

Launch: python3 -m torch.distributed.run --standalone --nproc-per-node=N sharded_matmul.py
"""

import math
import os
import pathlib
import sys
from types import SimpleNamespace

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import collective_matmul as cm  # noqa: E402
import workers  # noqa: E402
from ranks import call_ms  # noqa: E402

REF_FLOPS = 3e14  # per reference: about 6 s of FP32 SGEMM on an H100 or H200
REPS = 3 if labkit.QUICK else 20
WARMUP = 1 if labkit.QUICK else 3


def shapes(device_type):
    """(tokens T, model width d, FFN width f)."""
    if labkit.QUICK:
        return [(96, 64, 128)]
    if device_type == "cuda":
        return [(4096, 4096, 14336), (16384, 8192, 28672)]
    return [(512, 256, 1024)]


def tolerance(k, roundings, dtype):
    u = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -24
    return u * math.sqrt(roundings) + k * 2.0 ** -24


def row_stride(rows, k, cols):
    """Compare every s-th row, s the smallest power of two that keeps the reference ≤ REF_FLOPS."""
    s = 1
    while 2 * (rows // s) * k * cols > REF_FLOPS:
        s *= 2
    return s


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
        dist.barrier(device_ids=[device.index])
        torch.cuda.synchronize()
    else:
        dist.barrier()


def rel_error_all(out, ref, device):
    """‖out − ref‖ / ‖ref‖ over every rank's part; inf when any rank holds a NaN or an inf."""
    o, r = out.double(), ref.double()
    sums = torch.tensor([float(((o - r) ** 2).sum()), float((r ** 2).sum()),
                         float(not bool(torch.isfinite(o).all()))], dtype=torch.float64, device=device)
    dist.all_reduce(sums)
    return math.inf if sums[2] > 0 else math.sqrt(sums[0]) / math.sqrt(sums[1])


def time_all(fn, ctx):
    """Per repetition, the slowest rank's milliseconds (the same list on every rank)."""
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPS):
        sync(ctx.device)
        if ctx.flush is not None:
            ctx.flush.zero_()
        times.append(call_ms(fn, ctx.device))
    t = torch.tensor(times, dtype=torch.float64, device=ctx.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return labkit._summary(t.tolist())


def measure(v, ctx, alone=False):
    """Check a variant on NaN-filled buffers, then time it if it passed: (rel_error, timing|None).
    `alone`: rank 0 by itself (the one-GPU baseline), no collectives."""
    for t in v.buf.values():
        t.fill_(float("nan"))
    out = v.fn()
    out = out if v.rows is None else out[v.rows]
    err = labkit.rel_error(out, v.ref) if alone else rel_error_all(out, v.ref, ctx.device)
    if not err <= v.tol:
        return err, None
    return err, (labkit.time_torch(v.fn) if alone else time_all(v.fn, ctx))


def inputs(t, k, cols, seed, ctx):
    """Full A [t, k] and B [k, cols] in FP32 holding values of the compute type: every rank
    draws the same ones, so each can compute any part of the reference by itself."""
    g = torch.Generator(device=ctx.device).manual_seed(seed)
    a = torch.randn(t, k, generator=g, device=ctx.device).to(ctx.dtype).float()
    b = (torch.randn(k, cols, generator=g, device=ctx.device) / math.sqrt(k)).to(ctx.dtype).float()
    return a, b


def variant(fn, buf, check, total_rows, ctx):
    """fn(buf) with its check (rows compared or None for all, reference, tolerance). Every
    buffer is marked as used by the comm stream (record_stream; see the module docstring)."""
    for t in buf.values():
        if ctx.comm is not None:
            t.record_stream(ctx.comm)
    rows, ref, tol = check
    return SimpleNamespace(fn=lambda: fn(buf), buf=buf, rows=rows, ref=ref, tol=tol,
                           rows_pct=100.0 * (total_rows if rows is None else len(rows)) / total_rows)


def ag_variants(a, b, ctx):
    """All-gather side: this rank holds token block r of A and column block r of B, and owns
    Y[:, block r]. Reference: A[rows]·B[:, block r] in FP32; the gathered copy must be exact."""
    r, n, dt = ctx.rank, ctx.n, ctx.dtype
    (t, k), cols = a.shape, b.shape[1] // n
    a_shard, a_all = a[r * t // n:(r + 1) * t // n].to(dt), a.to(dt)
    b_loc = b[:, r * cols:(r + 1) * cols].to(dt).contiguous()
    rows = torch.arange(0, t, row_stride(t, k, cols), device=ctx.device)
    close = (rows, a[rows] @ b[:, r * cols:(r + 1) * cols], tolerance(k, 2, dt))
    exact = (None, a_all, 0.0)

    def gathered(buf):
        dist.all_gather_into_tensor(buf["a_full"], a_shard)
        return buf["a_full"]
    table = {"gemm": (lambda buf: torch.mm(a_all, b_loc, out=buf["y"]), close),
             "comm": (gathered, exact),
             "ring": (lambda buf: cm.ag_overlap(a_shard, b_loc, buf, r, n, ctx.comm, multiply=False), exact),
             "plain": (lambda buf: cm.ag_plain(a_shard, b_loc, buf), close),
             "overlap": (lambda buf: cm.ag_overlap(a_shard, b_loc, buf, r, n, ctx.comm), close)}
    return {name: variant(fn, {"a_full": ctx.new(t, k), "y": ctx.new(t, cols)}, check, t, ctx)
            for name, (fn, check) in table.items()}


def rs_variants(a, b, ctx):
    """Reduce-scatter side: this rank holds column block r of A and row block r of B (the
    contracted dimension split), and owns Y[token block r, :]. Reference: A[block r]·B in FP32;
    the GEMM alone is checked against its own partial sum A[:, block r]·B[block r, :]."""
    r, n, dt = ctx.rank, ctx.n, ctx.dtype
    (t, k), cols = a.shape, b.shape[1]
    tb, kb = t // n, k // n
    a_loc, b_loc = a[:, r * kb:(r + 1) * kb].to(dt).contiguous(), b[r * kb:(r + 1) * kb].to(dt)
    rows = torch.arange(0, tb, row_stride(tb, k, cols), device=ctx.device)
    summed = (rows, a[r * tb + rows] @ b, tolerance(k, 3 * n - 1, dt))
    rows_p = torch.arange(0, t, row_stride(t, kb, cols), device=ctx.device)
    partial = (rows_p, a[rows_p, r * kb:(r + 1) * kb] @ b[r * kb:(r + 1) * kb], tolerance(kb, 2, dt))
    pre = torch.mm(a_loc, b_loc)  # the partial sums that the collective alone and the ring alone reduce
    if ctx.comm is not None:
        pre.record_stream(ctx.comm)  # the ring alone sends slices of it

    def scattered(buf):
        dist.reduce_scatter_tensor(buf["y"], pre)
        return buf["y"]
    table = {"gemm": (lambda buf: torch.mm(a_loc, b_loc, out=buf["part"]), partial),
             "comm": (scattered, summed),
             "ring": (lambda buf: cm.rs_overlap(a_loc, b_loc, buf, r, n, ctx.comm, partials=pre), summed),
             "plain": (lambda buf: cm.rs_plain(a_loc, b_loc, buf), summed),
             "overlap": (lambda buf: cm.rs_overlap(a_loc, b_loc, buf, r, n, ctx.comm), summed)}
    bufs = lambda: {"acc0": ctx.new(tb, cols), "acc1": ctx.new(tb, cols),  # noqa: E731
                    "part": ctx.new(t, cols), "y": ctx.new(tb, cols)}
    return {name: variant(fn, bufs(), check, t if name == "gemm" else tb, ctx)
            for name, (fn, check) in table.items()}


def single(a, b, ctx):
    """The unsharded product on rank 0's GPU alone, checked like the rest."""
    (t, k), cols = a.shape, b.shape[1]
    rows = torch.arange(0, t, row_stride(t, k, cols), device=ctx.device)
    a_dt, b_dt = a.to(ctx.dtype), b.to(ctx.dtype)
    v = variant(lambda buf: torch.mm(a_dt, b_dt, out=buf["y"]), {"y": ctx.new(t, cols)},
                (rows, a[rows] @ b, tolerance(k, 2, ctx.dtype)), t, ctx)
    return v, measure(v, ctx, alone=True)


COLLECTIVE = {"ag": "all-gather", "rs": "reduce-scatter"}
PATTERN = {"ag": "all-gather → GEMM", "rs": "GEMM → reduce-scatter"}
LABELS = {"single": "1 GPU, unsharded", "gemm": "GEMM alone", "comm": "{c} alone (one collective call)",
          "ring": "ring alone ({s} × send/recv)", "plain": "plain", "overlap": "overlapped (ring)"}
ORDER = ["single", "gemm", "comm", "ring", "plain", "overlap"]


def derived(name, med, n):
    """The pieces beside a plain or overlapped step: GEMM alone g, collective alone c, ring alone;
    ideal = max(c, g); the ring pipeline's model = max(g, ring + g/n), one block's GEMM exposed."""
    if name not in ("plain", "overlap") or not all(p in med for p in ("gemm", "comm", "ring")):
        return {}
    g, c, ring = med["gemm"], med["comm"], med["ring"]
    metrics = {"gemm_ms": g, "comm_ms": c, "ring_ms": ring, "serial_ms": g + c, "ideal_ms": max(g, c),
               "pipeline_model_ms": max(g, ring + g / n)}
    if name == "overlap" and "plain" in med:
        metrics["speedup_ratio"] = med["plain"] / med["overlap"]
        metrics["hidden_pct"] = 100.0 * (med["plain"] - med["overlap"]) / min(g, c)
    return metrics


def report(pattern, shape, n, results, elt):
    """Rank 0: one record per variant. `results`: name → (variant, (rel_error, timing|None))."""
    t, d, f = shape
    k, cols = (d, f) if pattern == "ag" else (f, d)
    med = {name: res[1][1]["median_ms"] for name, res in results.items() if res[1][1] is not None}
    link = (n - 1) * (t // n) * (k if pattern == "ag" else cols) * elt  # bytes each rank receives
    for rung, name in enumerate(ORDER, start=1):
        v, (err, timing) = results[name]
        params = {"tokens": t, "d": d, "f": f, "world": n, "shards": 1 if name == "single" else n}
        label = f"{PATTERN[pattern]}: " + LABELS[name].format(c=COLLECTIVE[pattern], s=n - 1)
        if timing is None:
            labkit.failed(f"{pattern}_{name}", label, params, "verify",
                          f"rel_error {err:.3e} exceeds tolerance {v.tol:.3e}", rung=rung)
            continue
        moves = name in ("comm", "ring")
        metrics = {"check_rows_pct": v.rows_pct, **derived(name, med, n)}
        if moves:  # nccl-tests' bus bandwidth of all-gather and reduce-scatter: received bytes / time
            metrics["busbw_gbps"] = link / (timing["median_ms"] * 1e6)
        labkit.ok(f"{pattern}_{name}", label, params, timing, rel_error=err, tolerance=v.tol, rung=rung,
                  flops=0.0 if moves else 2.0 * t * k * cols / params["shards"], bytes=link if moves else 0.0,
                  baseline=name == "plain", metrics=metrics)


def run_pattern(pattern, shape, ctx):
    t, d, f = shape
    k, cols = (d, f) if pattern == "ag" else (f, d)
    a, b = inputs(t, k, cols, labkit.SEED + (pattern == "rs"), ctx)
    results = {}
    if ctx.rank == 0:  # the one-GPU baseline first, while the other ranks wait
        results["single"] = single(a, b, ctx)
    sync(ctx.device)
    for name, v in (ag_variants if pattern == "ag" else rs_variants)(a, b, ctx).items():
        results[name] = (v, measure(v, ctx))
        labkit.log(f"rank {ctx.rank}: {pattern}_{name} {shape} done")
    return results


def make_ctx(rank, n, device):
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    return SimpleNamespace(
        rank=rank, n=n, device=device, dtype=dtype,
        new=lambda *shape: torch.empty(*shape, dtype=dtype, device=device),
        # The stream the ring's transfers are issued from: it orders them (waits, events); the
        # NCCL kernels themselves run on NCCL's own streams, whose priority TORCH_NCCL_HIGH_PRIORITY sets.
        comm=torch.cuda.Stream(device=device) if cuda else None,
        flush=torch.empty(labkit.L2_FLUSH_BYTES // 4, device=device) if cuda else None)


def main():
    if not workers.under_torchrun():
        labkit.failed("ag_overlap", "all-gather → GEMM: overlapped (ring)", {"world": 1}, "unsupported",
                      "one process has nothing to gather or scatter; run under torchrun with 2+ processes")
        return
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    os.environ.setdefault("TORCH_NCCL_HIGH_PRIORITY", "1")  # read when the NCCL group is made
    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = workers.init_group(rank, n, backend)
    torch.backends.cuda.matmul.allow_tf32 = False  # the FP32 reference stays FP32
    ctx = make_ctx(rank, n, device)
    try:
        for t, d, f in shapes(device.type):
            shape = (t // n * n, d, f // n * n)  # token and FFN blocks of equal size
            for pattern in ("ag", "rs"):
                results = run_pattern(pattern, shape, ctx)
                if rank == 0:
                    report(pattern, shape, n, results, torch.finfo(ctx.dtype).bits // 8)
                del results
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
