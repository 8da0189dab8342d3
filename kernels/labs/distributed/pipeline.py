"""Pipeline parallelism with real send/recv: GPipe and 1F1B, their bubble and their memory.

The model is p·L MLP blocks (workers.Block: x + W2·GELU(W1·x), the MLP half of a Transformer
block); rank s of p holds blocks s·L … s·L+L−1, one stage per rank. A step pushes m micro-batches
through the stages: activations go forward from rank s to s+1, their gradients come back from
s+1 to s, through torch.distributed point-to-point ops. Two schedules, each a plain list of
actions per stage (what the `pipeline` calculator of the book simulates, in the same order):

* GPipe (Huang et al., NeurIPS 2019): all m forwards, then all m backwards.
* 1F1B, PipeDream-Flush (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN Training",
  ICML 2021; and "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM", SC 2021): stage s runs p−s−1 warm-up forwards, then one forward and one
  backward in turn, then the remaining backwards. Same bubble, but stage s holds at most p−s
  micro-batches' activations instead of m.

Sends and receives. After an action, its output's send is issued in one batch_isend_irecv
together with the receive the next action needs (Megatron-LM's send_forward_recv_backward in
megatron/core/pipeline_parallel/p2p_communication.py does the same), and the batch is waited
for before the next action. Issued one at a time instead, 1F1B deadlocks on NCCL: stage s would
send forward activation k while stage s+1 sends backward gradient j, each waiting for the other's
receive. A rendezvous simulation of both schedules (every op waits for its peer's) finds no
deadlock with this grouping for p ≤ 16, m ≤ 32, and finds one for 1F1B without it (p = m = 2).

Check (before anything is timed): every variant runs one FP32 step, and its loss and the
gradient of every stage's parameters must equal those of the whole model run on one process
over all m micro-batches at once (each rank builds that model from the same seed and compares
its own stage's slice; the largest error over ranks counts). Tolerance 1e-4 relative: the two
differ only in summation order (per micro-batch gradients accumulated vs one GEMM over the whole
batch), about 1e-6 in FP32; a schedule error (a micro-batch's gradient dropped, counted twice,
or paired with another micro-batch's activation) moves the gradient by order 1/m ≥ 1/16.
On a GPU the check runs at the timed d and depth but with few tokens per micro-batch (the
whole unsharded FP32 model, activations of all m micro-batches, on one GPU); the timed steps
then run the same code in BF16.

Measured per step: wall time (the slowest rank, all ranks starting after a barrier), and CUDA
events around each forward and backward on each stage (wall clock on gloo CPU processes). The
bubble of stage s is 1 − busy_s / wall; the record reports the mean over stages beside the
model's (p−1)/(m+p−1) (all stages alike, sends free). Time a stage spends waiting for a send or
receive counts as bubble here, as it is idle time for its GPU. Peak memory above the weights
and gradients, per stage (torch.cuda.max_memory_allocated), shows 1F1B's smaller footprint. The
timeline of the median step (start and end of every forward and backward on every stage) is the
record's table `timeline`, gathered to rank 0 with gather_object; `stages` holds each stage's
busy time, bubble, micro-batches held at once and peak memory.

Launch (one stage per process; any p ≥ 2):

    python3 -m torch.distributed.run --standalone --nproc-per-node=2 \
        kernels/labs/distributed/pipeline.py
"""

import copy
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import workers  # noqa: E402
from ranks import max_over_ranks, sync  # noqa: E402

TOL = 1e-4
MICROBATCHES = [1, 2, 4] if labkit.QUICK else [1, 2, 4, 8, 16]
WARMUP, REPS = (1, 3) if labkit.QUICK else (2, 10)


def sizes(device_type):
    """(tokens per micro-batch, d_model, blocks per stage, tokens per micro-batch in the check).

    GPU: one 2,048-token sequence per micro-batch at d = 4096 (a 7B-class width), 4 blocks per
    stage: a forward is 2·2048·(2·4096·16384)·4 ≈ 2.2 TFLOP, a few ms in BF16 on an H100, and an
    activation sent between stages is 2048·4096·2 B = 16 MiB."""
    if labkit.QUICK:
        return 16, 64, 2, 16
    if device_type == "cuda":
        return 2048, 4096, 4, 64
    return 128, 256, 2, 128


# ANCHOR: schedules
def gpipe(p, m, s):
    """GPipe: every forward, then every backward (each action: ("F" or "B", micro-batch))."""
    return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]


def one_f_one_b(p, m, s):
    """1F1B (PipeDream-Flush): p−s−1 warm-up forwards, then forward/backward in turn, then the
    backwards left. Stage s never holds more than p−s micro-batches."""
    warmup = min(p - s - 1, m)
    actions = [("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        actions += [("F", warmup + i), ("B", i)]
    return actions + [("B", i) for i in range(m - warmup, m)]
# ANCHOR_END: schedules


SCHEDULES = [("gpipe", "GPipe", gpipe), ("1f1b", "1F1B", one_f_one_b)]


def stamp(device):
    """A point in time on this stage: a CUDA event recorded on the current stream (read after
    the step), or the wall clock on a CPU process, where compute is synchronous."""
    if device.type == "cuda":
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev
    return time.perf_counter()


def elapsed_ms(a, b):
    return a.elapsed_time(b) if isinstance(a, torch.cuda.Event) else (b - a) * 1e3


# ANCHOR: run_step
def run_step(stage, actions, s, p, xs, ys, spans=None):
    """One step of this stage: each action of `actions` in order, with the sends and receives
    around it. Gradients accumulate in the stage's parameters. Returns (sum of the micro-batch
    losses on the last stage else 0, most micro-batches held at once)."""
    m = len(xs)
    shape, dtype = xs.shape[1:], next(stage.parameters()).dtype
    held, pending, loss_sum, most = {}, [], 0.0, 0
    for action in actions + [None]:
        kind, mb = action or (None, None)
        ops, got = pending, None  # the previous action's send goes out with this one's receive
        if (kind == "F" and s > 0) or (kind == "B" and s < p - 1):
            got = torch.empty(shape, dtype=dtype, device=xs.device)
            ops = ops + [dist.P2POp(dist.irecv, got, s - 1 if kind == "F" else s + 1)]
        if ops:
            for work in dist.batch_isend_irecv(ops):
                work.wait()
        pending = []
        if action is None:
            break
        start = stamp(xs.device)
        if kind == "F":
            x = xs[mb] if s == 0 else got.requires_grad_()
            out = stage(x)
            if s == p - 1:  # the mean loss over the whole batch is the mean of the m means
                out = F.mse_loss(out, ys[mb]) / m
                loss_sum = loss_sum + out.detach()
            else:
                pending = [dist.P2POp(dist.isend, out.detach(), s + 1)]
            held[mb] = (x, out)
            most = max(most, len(held))
        else:
            x, out = held.pop(mb)
            out.backward(None if s == p - 1 else got)
            if s > 0:
                pending = [dist.P2POp(dist.isend, x.grad, s - 1)]
        if spans is not None:
            spans.append((kind, mb, start, stamp(xs.device)))
    return loss_sum, most
# ANCHOR_END: run_step


def batch(m, tokens, d, device, dtype):
    """The m micro-batches (inputs, regression targets), the same on every rank for a given m."""
    g = torch.Generator(device=device).manual_seed(labkit.SEED + m)
    xs = torch.randn(m, tokens, d, generator=g, device=device)
    ys = torch.randn(m, tokens, d, generator=g, device=device)
    return xs.to(dtype), ys.to(dtype)


def flat_grad(module):
    return torch.cat([q.grad.reshape(-1) for q in module.parameters()])


def check_all(s, p, device):
    """Rel. error of every (schedule, m) against the unsharded FP32 model; and this rank's stage.

    Every rank builds the whole model (rank 0's seeded weights), keeps blocks s·L … s·L+L−1 as
    its stage, and computes the reference gradients of those blocks only (the others need none)."""
    _, d, layers, check_tokens = sizes(device.type)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(labkit.SEED)
    with torch.device(device):
        full = torch.nn.Sequential(*(workers.Block(d, 4 * d) for _ in range(p * layers)))
    for w in full.parameters():  # rank 0's weights everywhere, whatever each device's RNG does
        dist.broadcast(w.data, src=0)
    mine = slice(s * layers, (s + 1) * layers)
    stage = copy.deepcopy(full[mine])
    for i, block in enumerate(full):
        block.requires_grad_(mine.start <= i < mine.stop)
    errors = {}
    for m in MICROBATCHES:
        xs, ys = batch(m, check_tokens, d, device, torch.float32)
        full.zero_grad(set_to_none=True)
        ref_loss = F.mse_loss(full(xs.reshape(-1, d)), ys.reshape(-1, d))  # one pass, all tokens
        ref_loss.backward()
        ref_grad = flat_grad(full[mine])
        for name, _, schedule in SCHEDULES:
            stage.zero_grad(set_to_none=True)
            loss, _ = run_step(stage, schedule(p, m, s), s, p, xs, ys)
            err = labkit.rel_error(flat_grad(stage), ref_grad)
            if s == p - 1:
                err = max(err, abs(float(loss) - ref_loss.item()) / abs(ref_loss.item()))
            errors[(name, m)] = max_over_ranks(err, device)
    return errors, stage


def time_variant(stage, schedule, s, p, m, device):
    """WARMUP + REPS steps; this rank's per-step wall, busy time and spans (ms from the step's
    start), its peak memory above the step's start, and the most micro-batches it held."""
    tokens, d, _, _ = sizes(device.type)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    xs, ys = batch(m, tokens, d, device, dtype)
    actions = schedule(p, m, s)
    walls, busy, timelines, most = [], [], [], 0
    for rep in range(WARMUP + REPS):
        if rep == WARMUP and device.type == "cuda":
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()  # weights, gradients, inputs: not activations
            torch.cuda.reset_peak_memory_stats()
        stage.zero_grad(set_to_none=False)
        spans = []
        sync(device)
        t0 = stamp(device)
        _, most = run_step(stage, actions, s, p, xs, ys, spans)
        t1 = stamp(device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if rep >= WARMUP:
            rows = [(k, mb, elapsed_ms(t0, a), elapsed_ms(t0, b)) for k, mb, a, b in spans]
            walls.append(elapsed_ms(t0, t1))
            busy.append(sum(e - b for _, _, b, e in rows))
            timelines.append(rows)
    peak = torch.cuda.max_memory_allocated() - base if device.type == "cuda" else None
    return {"walls": walls, "busy": busy, "timelines": timelines, "peak": peak, "most": most}


# ANCHOR: bubble
def bubble(per_rank, p, m):
    """Per step: wall = the slowest rank's; bubble of stage s = 1 − busy_s / wall."""
    walls = [max(r["walls"][i] for r in per_rank) for i in range(REPS)]
    fractions = [[1 - r["busy"][i] / walls[i] for r in per_rank] for i in range(REPS)]
    model = (p - 1) / (m + p - 1)  # GPipe and 1F1B alike: the pipe fills and drains once
    return walls, fractions, model
# ANCHOR_END: bubble


def params_of(p, m, device):
    tokens, d, layers, _ = sizes(device.type)
    return {"world": p, "microbatches": m, "tokens": tokens, "d": d, "layers_per_stage": layers,
            "elem_bytes": 2 if device.type == "cuda" else 4}  # world = p: one stage per rank


def report(name, label, per_rank, p, m, device, err, rung):
    """One record: the step's wall time over REPS steps, the bubble (median over steps) beside
    the model, and the median step's per-stage numbers and timeline as tables."""
    prm = params_of(p, m, device)
    tokens, d, layers, elem = (prm[k] for k in ("tokens", "d", "layers_per_stage", "elem_bytes"))
    walls, fractions, model = bubble(per_rank, p, m)
    mid = sorted(range(REPS), key=lambda i: walls[i])[REPS // 2]  # the median step
    per_stage = [statistics.median(f[s] for f in fractions) for s in range(p)]
    timeline = [[s, mb, k, round(b, 4), round(e, 4)]
                for s, r in enumerate(per_rank) for k, mb, b, e in r["timelines"][mid]]
    metrics = {"bubble_pct": 100 * statistics.mean(per_stage), "bubble_model_pct": 100 * model,
               "busy_ms": statistics.mean(r["busy"][mid] for r in per_rank),
               "fwd_ms": statistics.median(e - b for _, _, k, b, e in timeline if k == "F"),
               "bwd_ms": statistics.median(e - b for _, _, k, b, e in timeline if k == "B"),
               "tokens_per_s": m * tokens / (walls[mid] * 1e-3),
               "inflight_microbatches": max(r["most"] for r in per_rank)}
    columns = ["stage", "busy_ms", "bubble_pct", "inflight_microbatches"]
    rows = [[s, r["busy"][mid], 100 * per_stage[s], r["most"]] for s, r in enumerate(per_rank)]
    if device.type == "cuda":  # no allocator statistics on CPU processes
        metrics["peak_act_bytes"] = max(r["peak"] for r in per_rank)
        columns.append("peak_act_bytes")
        rows = [row + [r["peak"]] for row, r in zip(rows, per_rank)]
    tables = {"timeline": {"columns": ["stage", "microbatch", "kind", "start_ms", "end_ms"],
                           "rows": timeline},
              "stages": {"columns": columns, "rows": rows}}
    flops = 3 * 16 * tokens * d * d * layers * m * p  # forward 16·T·d²·L a stage, backward 2×
    sent = 2 * (p - 1) * m * tokens * d * elem  # activations forward, gradients back
    labkit.ok(f"{name}_m{m}", f"{label}, m={m}", prm, labkit._summary(walls), rel_error=err,
              tolerance=TOL, flops=flops, bytes=sent, rung=rung, metrics=metrics, tables=tables)


def run_all(s, p, device):
    errors, stage = check_all(s, p, device)
    if device.type == "cuda":
        stage = stage.to(torch.bfloat16)  # timed in BF16, as the real systems train
        torch.cuda.empty_cache()
    for m in MICROBATCHES:
        for rung, (name, label, schedule) in enumerate(SCHEDULES, start=1):
            err = errors[(name, m)]
            if not err <= TOL:  # the same value on every rank: all skip together
                if s == 0:
                    labkit.failed(f"{name}_m{m}", f"{label}, m={m}", params_of(p, m, device),
                                  "verify", f"rel_error {err:.3e} exceeds tolerance {TOL:.0e}",
                                  rung=rung)
                continue
            mine = time_variant(stage, schedule, s, p, m, device)
            gathered = [None] * p if s == 0 else None
            dist.gather_object(mine, gathered, dst=0)
            if s == 0:
                report(name, label, gathered, p, m, device, err, rung)
            labkit.log(f"rank {s}: {name} m={m} done")


def main():
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if torch.cuda.is_available()
                                                      else "gloo")
    if not workers.under_torchrun() or int(os.environ["WORLD_SIZE"]) < 2:
        labkit.failed("gpipe_m1", "GPipe, m=1", {"world": 1}, "unsupported",
                      "a pipeline needs 2+ stages; run under torchrun with 2+ processes")
        return
    s, p = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = workers.init_group(s, p, backend)
    try:
        sync(device)  # the first collective: every rank, before any batched send/recv
        run_all(s, p, device)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
