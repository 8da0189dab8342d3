"""Collectives through torch.distributed: what each one costs, from 8 B to 1 GiB.

All-reduce, all-gather, reduce-scatter, all-to-all, broadcast and send/recv, each checked
exactly and then timed at message sizes from 8 B to 1 GiB. Every rank takes part; rank 0 prints
one record per (collective, size) and one α–β fit per collective.

Launch: one process per GPU (NCCL), or per CPU process (gloo), through torchrun:

    python3 -m torch.distributed.run --standalone --nproc-per-node=2 kernels/labs/distributed/collectives.py

`hdlc bench` starts it that way at each world size of its manifest entry that the machine has
GPUs for. Started without torchrun it is a world of one, where there is nothing to exchange (see
`main`).

Sizes and bandwidths follow nccl-tests (NVIDIA/nccl-tests, doc/PERFORMANCE.md): the size S of a
collective is the buffer of all-reduce and broadcast, the *whole* gathered output of all-gather,
the *whole* input of reduce-scatter, one rank's buffer of all-to-all and of send/recv. Algorithm
bandwidth is S / time; bus bandwidth multiplies it by the factor that makes it comparable with
the link's speed: 2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all,
1 for broadcast and send/recv.

Check: the inputs are fresh random integers in [−8, 8) stored as float32, drawn from a seed per
(collective, size, rank), so every rank can rebuild any other rank's input and compute the exact
expected output; sums of a few such integers are exact in float32, so the tolerance is 0. The
largest error over all ranks is what rank 0 reports.

Timing: after a barrier, `inner` back-to-back calls bracketed by CUDA events (wall clock on gloo
CPU processes), divided by `inner`, averaged over the ranks as nccl-tests does; median and
p10–p90 over the repetitions. No L2 flush: nccl-tests does none, and from a few MiB on the
buffers exceed the L2 anyway.
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
from ranks import max_over_ranks, sync  # noqa: E402

TOL = 0.0  # integer-valued float32 inputs: every correct result is exact
MAX_BYTES = (1 << 15) if labkit.QUICK else (1 << 30)
# 8 B, then ×4 steps up to half of MAX_BYTES, then MAX_BYTES itself.
SIZES = [8 << (2 * i) for i in range(20) if (8 << (2 * i)) < MAX_BYTES] + [MAX_BYTES]
WARMUP = 1 if labkit.QUICK else 3


# ANCHOR: busbw
def bus_factor(op, n):
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): what fraction of S each rank's
    link must carry, so that busbw can be compared with the link's speed at any rank count."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0  # broadcast, send_recv
# ANCHOR_END: busbw


def gen(op_i, size_i, rank, numel, device):
    """Rank `rank`'s input for one (collective, size): integers in [−8, 8) as float32."""
    g = torch.Generator(device=device)
    g.manual_seed(labkit.SEED * 1_000_003 + op_i * 7919 + size_i * 104_729 + rank)
    return torch.randint(-8, 8, (numel,), generator=g, device=device, dtype=torch.float32)


def count_for(op, nbytes, n):
    """Elements per buffer: float32, a multiple of n where the buffer is split into n chunks."""
    c = max(1, nbytes // 4)
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        c = max(n, c // n * n)
    return c


# ANCHOR: collectives
def setup(op, op_i, size_i, c, rank, n, device):
    """(run, expected, out): `run()` issues the collective once; `out` holds its result, which
    must equal `expected` after the first call."""
    mine = gen(op_i, size_i, rank, c, device)
    other = lambda q, numel=c: gen(op_i, size_i, q, numel, device)  # noqa: E731
    chunk = slice(rank * (c // n), (rank + 1) * (c // n))
    if op == "all_reduce":
        expected = sum(other(q) for q in range(n))
        return (lambda: dist.all_reduce(mine)), expected, mine
    if op == "all_gather":  # c: the gathered size; each rank contributes c/n
        mine = gen(op_i, size_i, rank, c // n, device)
        out = torch.empty(c, device=device)
        expected = torch.cat([other(q, c // n) for q in range(n)])
        return (lambda: dist.all_gather_into_tensor(out, mine)), expected, out
    if op == "reduce_scatter":  # c: each rank's whole input; each keeps the sum of one chunk
        out = torch.empty(c // n, device=device)
        expected = sum(other(q)[chunk] for q in range(n))
        return (lambda: dist.reduce_scatter_tensor(out, mine)), expected, out
    if op == "all_to_all":  # chunk j of rank q goes to rank j
        out = torch.empty(c, device=device)
        expected = torch.cat([other(q)[chunk] for q in range(n)])
        return (lambda: dist.all_to_all_single(out, mine)), expected, out
    if op == "broadcast":
        expected = other(0)
        return (lambda: dist.broadcast(mine, src=0)), expected, mine
    if op == "send_recv":  # a ring, as nccl-tests' sendrecv: send to rank+1, receive from rank−1
        out = torch.empty(c, device=device)
        expected = other((rank - 1) % n)

        def run():
            ops = [dist.P2POp(dist.isend, mine, (rank + 1) % n),
                   dist.P2POp(dist.irecv, out, (rank - 1) % n)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
        return run, expected, out
    raise ValueError(op)
# ANCHOR_END: collectives


OPS = [("all_reduce", "all-reduce"), ("all_gather", "all-gather"),
       ("reduce_scatter", "reduce-scatter"), ("all_to_all", "all-to-all"),
       ("broadcast", "broadcast"), ("send_recv", "send/recv (ring)")]


def time_op(run, nbytes, device, n):
    """Per-repetition milliseconds of one call, averaged over the ranks (the same list on all)."""
    inner = 20 if nbytes < (1 << 20) else 5 if nbytes < (64 << 20) else 1
    reps = 3 if labkit.QUICK else 20 if nbytes <= (256 << 20) else 10
    for _ in range(WARMUP):
        run()
    times = []
    for _ in range(reps):
        sync(device)
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / inner)
        else:
            t0 = time.perf_counter()
            for _ in range(inner):
                run()
            times.append((time.perf_counter() - t0) * 1e3 / inner)
    t = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(t)  # the mean over ranks, as nccl-tests reports it
    return (t / n).tolist()


def measure(op, op_i, rank, n, device):
    """[(bytes, rel_error, times_ms)] over SIZES; stops at the first size that fails its check
    (every rank sees the same error, so all stop together)."""
    points = []
    for size_i, nominal in enumerate(SIZES):
        c = count_for(op, nominal, n)
        run, expected, out = setup(op, op_i, size_i, c, rank, n, device)
        run()
        err = max_over_ranks(labkit.rel_error(out, expected), device)
        del expected
        if not err <= TOL:
            points.append((4 * c, err, None))
            break
        points.append((4 * c, err, time_op(run, 4 * c, device, n)))
        labkit.log(f"rank {rank}: {op} {4 * c} B done")
    return points


# ANCHOR: alpha_beta
def fit_alpha_beta(points):
    """Least squares of time = α + bytes·β over the sizes (times in ms, bytes in B).

    Plain least squares weighs the large messages most (their times are largest), which is
    what β is about; α comes out as the intercept, so it is only as good as the small sizes'
    share of the fit — the fit record reports its relative RMS error so a reader can judge."""
    xs = [float(b) for b, _ in points]
    ys = [float(t) for _, t in points]
    k = len(xs)
    mx, my = sum(xs) / k, sum(ys) / k
    sxx = sum((x - mx) ** 2 for x in xs)
    beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    alpha = my - beta * mx
    rel = [((alpha + beta * x) - y) / y for x, y in zip(xs, ys)]
    rms = (sum(r * r for r in rel) / k) ** 0.5
    return alpha, beta, rms
# ANCHOR_END: alpha_beta


def report(op, label, n, points, rung):
    """One record per size, then the α–β fit of the sizes that passed."""
    timed = []
    for nbytes, err, times in points:
        params = {"bytes": nbytes, "world": n}
        if times is None:
            labkit.failed(op, label, params, "verify", f"rel_error {err:.3e} exceeds {TOL}", rung=rung)
            continue
        timing = labkit._summary(times)
        algbw = nbytes / (timing["median_ms"] * 1e6)  # GB/s
        labkit.ok(op, label, params, timing, rel_error=err, tolerance=TOL, bytes=nbytes, rung=rung,
                  metrics={"algbw_gbps": algbw, "busbw_gbps": algbw * bus_factor(op, n)})
        timed.append((nbytes, err, timing))
    fit_label = f"{label}: α–β fit"
    if len(timed) < 3:
        labkit.failed(f"{op}_fit", fit_label, {"world": n}, "verify",
                      f"only {len(timed)} verified size(s); a fit needs 3")
        return
    alpha, beta, rms = fit_alpha_beta([(b, t["median_ms"]) for b, _, t in timed])
    largest, worst = timed[-1], max(e for _, e, _ in timed)
    metrics = {"alpha_us": alpha * 1e3, "beta_ps_per_byte": beta * 1e9, "fit_rms_rel_pct": 100 * rms,
               "fit_points": len(timed)}
    if beta > 0:
        metrics["fit_gbps"] = 1e-6 / beta  # bytes per ms → GB/s
    # The fit's timing fields are those of its largest message, the point that fixes β.
    labkit.ok(f"{op}_fit", fit_label, {"world": n}, largest[2], rel_error=worst, tolerance=TOL,
              bytes=largest[0], rung=rung, metrics=metrics)


def run_all(rank, n, device):
    results = []
    for op_i, (op, label) in enumerate(OPS):
        points = measure(op, op_i, rank, n, device)
        results.append((op, label, points))
    return results


def main():
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    if workers.under_torchrun():
        rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        device = workers.init_group(rank, n, backend)
    else:
        rank, n = 0, 1
        device = workers.init_group(0, 1, backend, workers.free_port())
    try:
        if n == 1:
            # World 1: all-reduce, all-gather and the rest copy a buffer onto itself, bus
            # bandwidth is 0 by definition (factor (n−1)/n) and send/recv has no peer. Nothing
            # here would teach what a collective costs, so the lab says so instead of timing it.
            labkit.failed("all_reduce", "all-reduce", {"world": 1}, "unsupported",
                          "a world of one process exchanges nothing; run under torchrun with 2+ processes")
            return
        results = run_all(rank, n, device)
        if rank == 0:
            for rung, (op, label, points) in enumerate(results, start=1):
                report(op, label, n, points, rung)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
