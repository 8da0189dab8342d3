"""Tensor parallelism of one Transformer block, measured: Megatron TP and sequence parallelism
against the unsharded block on one GPU, in one torchrun job of any n ≥ 2 ranks.

The block and its conjugate operators are in tp_block.py (Shoeybi et al. 2019, Megatron-LM,
arXiv:1909.08053; Korthikanti et al. 2022, sequence parallelism, arXiv:2205.05198). Three
records per shape: `single`, the block on rank 0 alone while the others wait (the 1-GPU
baseline, `tp: 1` with the job's `world`, so a figure draws 1 → n from one run), `tp` and `sp`.

Check, before anything is timed. From the same seeded FP32 weights and inputs, rank 0 computes
the unsharded block's output, input gradient and weight gradients; `tp` and `sp` compute theirs
sharded, all-gather the shards (weight gradients along their split dimension) and compare:
‖a − b‖/‖b‖, the largest over all tensors, must be ≤ 1e-4. The sharded block does the same FP32
arithmetic with its sums split differently (a row-parallel GEMM adds n partial products; cuBLAS
tiles other shapes otherwise), which moves results by a few roundings, ~1e-6 relative; a
sharding mistake (a wrong head slice, a missing all-reduce that drops (n−1)/n of a sum) is off
by 1e-1 to 1. TF32 is switched off so that FP32 means FP32. The timed BF16 step is checked too:
its output against the FP32 reference within 3e-2 (BF16's unit roundoff is 3.9e-3 and a block
chains a few dozen roundings; a wrong result is off by order 1). The `single` record reports
that BF16 check, `tp` and `sp` the FP32 one (their BF16 error is the metric bf16_rel_error).

Timing, in BF16 (weights, activations, gradients, collectives): one forward + backward of the
block per step, CUDA events, L2 flushed before each repetition, the per-repetition maximum over
ranks (a step ends when its slowest rank does), median and p10–p90. Communication share: the
step's collectives alone — the same calls on buffers of the same shapes, back to back as the
step issues them on one stream, where none hides under compute — timed the same way:
comm_pct = comm_ms / step ms. Bytes per rank per step are counted from the shapes at the ring's
cost (all-reduce 2(n−1)/n·S, all-gather and reduce-scatter (n−1)/n·S of the whole buffer S),
the model of the tensor-parallelism card and the `parallel-explorer` calculator: 4 all-reduces
of s·b·h 16-bit values per block; SP moves the same bytes (plus the two h-value norm gradients).

Shapes on a GPU: one layer of Llama 3 8B (d 4096, 32 heads, 8 KV heads, FFN 14336, 2 × 4096
tokens) and of Llama 3 70B (d 8192, 64 heads, 8 KV heads, FFN 28672, 1 × 4096 tokens: the card's
worked example), at any n that divides the heads, the KV heads, the FFN width and the sequence.

Launch: python3 -m torch.distributed.run --standalone --nproc-per-node=2 tensor_parallel.py
"""

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import workers  # noqa: E402
from ranks import call_ms, sync  # noqa: E402
from tp_block import prepare, whole, gather  # noqa: E402

TOL = 1e-4  # FP32, sharded vs unsharded (see the module docstring)
BF16_TOL = 3e-2  # the BF16 step's output vs the FP32 reference
REPS, WARMUP = (3, 1) if labkit.QUICK else (20, 3)
# (d_model, query heads, KV heads, FFN width, batch, sequence)
SHAPES = ([(128, 16, 8, 256, 2, 32)] if labkit.QUICK else
          [(4096, 32, 8, 14336, 2, 4096), (8192, 64, 8, 28672, 1, 4096)])
LABELS = {"single": "1 GPU (unsharded)", "tp": "TP (all-reduce)",
          "sp": "TP + SP (all-gather / reduce-scatter)"}


def from_rank0(x, device):
    """Rank 0's number on every rank, so that every rank takes the same branch after a check."""
    t = torch.tensor([x], dtype=torch.float64, device=device)
    dist.broadcast(t, src=0)
    return float(t.item())


def check_fp32(shape, rank, n, device):
    """({"tp": error, "sp": error}, the same on every rank; the reference output on rank 0)."""
    ref = None
    if rank == 0:
        run, w, x = prepare("single", shape, 0, 1, device, torch.float32, labkit.SEED)
        ref = whole("single", run(), w, x, shape, 1)
        del run, w, x
    sync(device)
    errs = {}
    for mode in ("tp", "sp"):
        run, w, x = prepare(mode, shape, rank, n, device, torch.float32, labkit.SEED)
        out, dx, grads = whole(mode, run(), w, x, shape, n)
        err = 0.0
        if rank == 0:
            err = max([labkit.rel_error(out, ref[0]), labkit.rel_error(dx, ref[1])] +
                      [labkit.rel_error(grads[k], ref[2][k]) for k in grads])
        errs[mode] = from_rank0(err, device)
        del run, w, x, out, dx, grads
    return errs, (ref[0].cpu() if rank == 0 else None)


def time_steps(fn, device, alone=False, flush=True):
    """labkit.time_torch's timing (CUDA events, L2 flushed; wall clock on CPU processes) with a
    fixed repetition count, as every rank must issue the same collectives; unless `alone`,
    the per-repetition maximum over ranks."""
    buf = torch.empty(labkit.L2_FLUSH_BYTES // 4, device=device) if flush and device.type == "cuda" else None
    for _ in range(WARMUP):
        fn()
    if not alone:
        sync(device)
    times = []
    for _ in range(REPS):
        if buf is not None:
            buf.zero_()
        times.append(call_ms(fn, device))
    t = torch.tensor(times, dtype=torch.float64, device=device)
    if not alone:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return labkit._summary(t.tolist())


# ANCHOR: comm_alone
def comm_alone(mode, shape, n, device):
    """(run, bytes): the collectives of one step alone, on BF16 buffers of the step's shapes,
    and the bytes each rank sends for them at the ring's cost."""
    d, _, _, _, b, s = shape
    whole_seq = torch.zeros(s, b, d, device=device, dtype=torch.bfloat16)
    part = torch.zeros(s // n, b, d, device=device, dtype=torch.bfloat16)
    norm = torch.zeros(d, device=device, dtype=torch.bfloat16)
    S, ring = whole_seq.numel() * 2, (n - 1) / n
    if mode == "tp":  # g twice forward, f twice backward
        return (lambda: [dist.all_reduce(whole_seq) for _ in range(4)]), 4 * 2 * ring * S

    def run():  # per half of the block: gather and scatter forward, scatter and gather backward
        for _ in range(4):
            dist.all_gather_into_tensor(whole_seq, part)
            dist.reduce_scatter_tensor(part, whole_seq)
        for _ in range(2):  # the two norm-weight gradients
            dist.all_reduce(norm)
    return run, 8 * ring * S + 2 * 2 * ring * 2 * d
# ANCHOR_END: comm_alone


def step_flops(shape):
    """FLOPs of one forward + backward of the whole block (backward = 2 × forward): the GEMMs,
    2·tokens·weights, and causal attention, 2·b·H·s²·hd forward (QKᵀ and PV, half the scores)."""
    d, hq, hkv, f, b, s = shape
    hd = d // hq
    weights = d * (hq + 2 * hkv) * hd + hq * hd * d + 3 * d * f
    return 3 * (2 * b * s * weights + 2 * b * hq * s * s * hd)


def peak_bytes(run, w, x, device):
    """Peak memory allocated on this GPU through one step, from its weights and input on
    (gradients dropped first): what the block's step needs on this rank."""
    if device.type != "cuda":
        return {}
    for t in [*w.values(), x]:
        t.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    run()
    torch.cuda.synchronize()
    return {"peak_mem_bytes": torch.cuda.max_memory_allocated()}


def measure(mode, shape, rank, n, device, ref_out, fp32_err, single_ms):
    """Check the BF16 step of `mode` against the FP32 output, time it, and (rank 0) emit its
    record; returns the median step time (None when not measured). `single` runs on rank 0."""
    tp = 1 if mode == "single" else n
    params, label, rung = params_of(shape, n, tp), LABELS[mode], list(LABELS).index(mode) + 1
    run, w, x = prepare(mode, shape, rank, n, device, torch.bfloat16, labkit.SEED)
    out = run()
    out = gather(out, 0, n) if mode == "sp" else out
    err = labkit.rel_error(out, ref_out) if rank == 0 else 0.0
    err = err if mode == "single" else from_rank0(err, device)
    del out
    if not err <= BF16_TOL:
        if rank == 0:
            labkit.failed(mode, label, params, "verify", f"BF16 rel_error {err:.3e} exceeds {BF16_TOL:.0e}",
                          rung=rung, baseline=mode == "single")
        return None
    timing = time_steps(run, device, alone=mode == "single")
    ms = timing["median_ms"]
    metrics = {"tokens_per_s": shape[4] * shape[5] / (ms * 1e-3),
               "tflops_per_gpu": step_flops(shape) / tp / (ms * 1e9), "bf16_rel_error": err,
               "param_bytes_per_rank": sum(t.numel() * t.element_size() for t in w.values()),
               **peak_bytes(run, w, x, device)}
    del run, w, x
    nbytes = 0.0
    if mode != "single":
        comm, nbytes = comm_alone(mode, shape, n, device)
        comm_ms = time_steps(comm, device, flush=False)["median_ms"]
        metrics.update(comm_ms=comm_ms, comm_pct=100 * comm_ms / ms, comm_bytes=nbytes,
                       comm_busbw_gbps=nbytes / (comm_ms * 1e6))
        if single_ms is not None:
            metrics.update(speedup_vs_1gpu=single_ms / ms, scaling_eff_pct=100 * single_ms / ms / n)
    if rank == 0:
        rel, tol = (err, BF16_TOL) if mode == "single" else (fp32_err, TOL)
        labkit.ok(mode, label, params, timing, rel_error=rel, tolerance=tol, flops=step_flops(shape),
                  bytes=nbytes, rung=rung, baseline=mode == "single", metrics=metrics)
    return ms


def params_of(shape, n, tp):
    d, hq, hkv, f, b, s = shape
    return {"d_model": d, "hq": hq, "hkv": hkv, "f": f, "batch": b, "seq": s, "tokens": b * s,
            "tp": tp, "world": n}


def run_shape(shape, rank, n, device):
    """The FP32 check, then the 1-GPU baseline on rank 0, then TP and SP on every rank."""
    errs, ref_out = check_fp32(shape, rank, n, device)
    single_ms = measure("single", shape, 0, n, device, ref_out, 0.0, None) if rank == 0 else None
    sync(device)
    for mode in ("tp", "sp"):
        if errs[mode] <= TOL:
            measure(mode, shape, rank, n, device, ref_out, errs[mode], single_ms)
        elif rank == 0:
            labkit.failed(mode, LABELS[mode], params_of(shape, n, n), "verify",
                          f"FP32 rel_error {errs[mode]:.3e} exceeds {TOL:.0e}",
                          rung=list(LABELS).index(mode) + 1)
        labkit.log(f"rank {rank}: {mode} at d_model {shape[0]} done")
        sync(device)


def main():
    backend = os.environ.get("HDLC_LAB_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
    n = int(os.environ.get("WORLD_SIZE", "1"))
    if not workers.under_torchrun() or n < 2:
        labkit.failed("tp", LABELS["tp"], {"world": n}, "unsupported",
                      "tensor parallelism needs 2+ processes: run it under torchrun")
        return
    rank = int(os.environ["RANK"])
    device = workers.init_group(rank, n, backend)
    torch.backends.cuda.matmul.allow_tf32 = False  # the FP32 check must be FP32
    torch.backends.cudnn.allow_tf32 = False
    try:
        for shape in SHAPES:
            d, hq, hkv, f, _, s = shape
            bad = [f"{k} {v}" for k, v in (("heads", hq), ("KV heads", hkv), ("FFN", f), ("seq", s)) if v % n]
            if bad and rank == 0:
                labkit.failed("tp", LABELS["tp"], params_of(shape, n, n), "unsupported",
                              f"{n} ranks do not divide {', '.join(bad)}")
            if not bad:
                run_shape(shape, rank, n, device)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
