"""What every lab shares: where its records go, how it times GPU work, how it checks a result.

A lab is a plain Python script. `hdlc bench` starts it as `python3 <lab>.py`, reads one JSON
record per line from its standard output and nothing else, and owns everything around that:
the results schema, the cache key, provenance, the merge into kernels/results/, time-outs.
This file keeps the labs honest in the same way as the Rust harness keeps the CUDA kernels:

* a variant is checked against a reference *before* it is timed, and one that fails the check
  is reported as failed, never as a number;
* timing is warm-up, then many repetitions each bracketed by CUDA events (the L2 cache flushed
  before each), reported as the median and the 10th/90th percentiles.

Anything else a lab (or a library it calls) prints goes to standard error, so stray output can
never be mistaken for a record. Run a lab by hand with `python3 kernels/labs/<path>.py`; set
HDLC_LAB_QUICK=1 to shrink its problem sizes for a smoke test on a CPU.
"""

import json
import math
import os
import sys
import time

# Keep the real stdout for records and send everything else (print, warnings, C libraries
# writing to file descriptor 1) to stderr.
_records = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

QUICK = os.environ.get("HDLC_LAB_QUICK") == "1"
SEED = int(os.environ.get("HDLC_LAB_SEED", "1234"))

# Bytes written between timed repetitions: five times an H100's 50 MB L2.
L2_FLUSH_BYTES = 256 << 20


def log(*args):
    """A progress line on stderr (the bench command shows the last one beside its progress bar)."""
    print(*args, file=sys.stderr, flush=True)


def rep_count(estimate_ms):
    """Same policy as the Rust harness: ~200 ms of timed runs or at least 20 runs, 5..300."""
    if not math.isfinite(estimate_ms) or estimate_ms <= 0:
        return 20
    for_time = math.ceil(200.0 / estimate_ms)
    reps = max(for_time, 20) if 20 * estimate_ms <= 1000 else for_time
    return min(max(reps, 5), 300)


def _summary(times_ms):
    times = sorted(times_ms)
    def pct(p):
        return times[min(len(times) - 1, max(0, round(p * (len(times) - 1))))]
    return {"reps": len(times), "median_ms": pct(0.5), "p10_ms": pct(0.1), "p90_ms": pct(0.9)}


def torch_device():
    """"cuda" when PyTorch sees a GPU, else "cpu" (a smoke test off the GPU machine)."""
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def time_torch(fn, warmup=3, flush=True, reps=None):
    """Time `fn()` (PyTorch work on the current CUDA stream) with CUDA events.

    Each repetition: flush the L2 by writing 256 MiB, record a start event, run, record an end
    event. Returns {reps, median_ms, p10_ms, p90_ms}. Off the GPU, wall-clock time instead.
    """
    import torch
    if not torch.cuda.is_available():
        return time_wall(fn, warmup=warmup, reps=reps)
    flush_buf = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda") if flush else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if reps is None:
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        reps = rep_count((time.perf_counter() - t0) * 1e3)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush_buf is not None:
            flush_buf.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return _summary([s.elapsed_time(e) for s, e in zip(starts, ends)])


def time_wall(fn, warmup=3, reps=None, before=None):
    """Wall-clock timing for work that blocks until it is done (JAX with block_until_ready, CPU
    code). `before()` runs untimed ahead of each repetition (e.g. an L2 flush)."""
    for _ in range(warmup):
        fn()
    if reps is None:
        t0 = time.perf_counter()
        fn()
        reps = rep_count((time.perf_counter() - t0) * 1e3)
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return _summary(times)


def rel_error(out, ref):
    """‖out − ref‖ / ‖ref‖ computed in float64 (inf when out has a NaN or an inf).

    Two torch tensors are compared where they live (on the GPU for GPU results): copying
    hundreds of MiB to numpy would cost more than the check itself."""
    if hasattr(out, "detach") and hasattr(ref, "detach"):
        return _rel_error_torch(out, ref)
    import numpy as np
    a = _to_numpy(out).astype(np.float64).ravel()
    b = _to_numpy(ref).astype(np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {a.shape} vs {b.shape}")
    if not np.all(np.isfinite(a)):
        return math.inf
    denom = float(np.linalg.norm(b))
    num = float(np.linalg.norm(a - b))
    return num / denom if denom > 0 else num


def _rel_error_torch(out, ref):
    import torch
    a = out.detach().to(torch.float64).reshape(-1)
    b = ref.detach().to(device=a.device, dtype=torch.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {tuple(a.shape)} vs {tuple(b.shape)}")
    if not bool(torch.isfinite(a).all()):
        return math.inf
    denom = float(torch.linalg.vector_norm(b))
    num = float(torch.linalg.vector_norm(a - b))
    return num / denom if denom > 0 else num


def _to_numpy(x):
    import numpy as np
    if hasattr(x, "detach"):  # a torch tensor
        import torch
        return x.detach().to(dtype=torch.float64, device="cpu").numpy()
    return np.asarray(x, dtype=np.float64)


def emit(record):
    """Write one record (a dict in the schema of kernels/labs/README.md) as one line."""
    _records.write(json.dumps(record, allow_nan=False) + "\n")
    _records.flush()


def ok(variant, label, params, timing, *, rel_error, tolerance, flops=0.0, bytes=0.0,
       rung=None, baseline=False, metrics=None, series=None, tables=None, workspace_bytes=None):
    """Emit a verified, timed variant. `timing` is what time_torch/time_wall returned."""
    rec = {"variant": variant, "label": label, "params": params, "status": "ok",
           "rel_error": float(rel_error), "tolerance": float(tolerance),
           "flops": float(flops), "bytes": float(bytes), "baseline": baseline}
    rec.update(timing)
    if rung is not None:
        rec["rung"] = rung
    if workspace_bytes is not None:
        rec["workspace_bytes"] = float(workspace_bytes)
    if metrics:
        rec["metrics"] = {k: float(v) for k, v in metrics.items()}
    if series:
        rec["series"] = {k: [[float(x), float(y)] for x, y in pts] for k, pts in series.items()}
    if tables:
        rec["tables"] = tables
    emit(rec)


def failed(variant, label, params, stage, error, *, rung=None, baseline=False):
    """Emit a variant that could not be measured: stage is verify, launch or unsupported."""
    rec = {"variant": variant, "label": label, "params": params, "status": "failed",
           "stage": stage, "error": str(error)[:2000], "baseline": baseline}
    if rung is not None:
        rec["rung"] = rung
    emit(rec)


def check_then_time(variant, label, params, fn, ref, tolerance, *, flops=0.0, bytes=0.0,
                    rung=None, baseline=False, timer=None, metrics=None, workspace_bytes=None):
    """Run `fn()` once, compare with `ref` (rel_error ≤ tolerance), and only then time it.

    Errors while running are reported as a failed launch, a wrong result as a failed check;
    neither is ever timed. Returns True when the variant was measured.
    """
    timer = timer or time_torch
    try:
        out = fn()
        err = rel_error(out, ref)
        del out  # large outputs: do not hold one through the timed runs
    except Exception as e:  # a kernel that does not run is a result too: a failed one
        failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung, baseline=baseline)
        return False
    if not err <= tolerance:
        failed(variant, label, params, "verify",
               f"rel_error {err:.3e} exceeds tolerance {tolerance:.1e}", rung=rung, baseline=baseline)
        return False
    try:
        timing = timer(fn)
    except Exception as e:
        failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung, baseline=baseline)
        return False
    ok(variant, label, params, timing, rel_error=err, tolerance=tolerance, flops=flops, bytes=bytes,
       rung=rung, baseline=baseline, metrics=metrics, workspace_bytes=workspace_bytes)
    return True
