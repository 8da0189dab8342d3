"""How much of the gradient all-reduce a GPU trace shows hidden under compute.

DDP launches one all-reduce per gradient bucket as soon as the bucket's gradients are ready,
on NCCL's own CUDA stream, while backward goes on computing earlier layers on the compute
stream (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data Parallel
Training", VLDB, §3.2.3). Whether that overlap happens is a fact of the GPU timeline, so it is
read from one: a torch.profiler trace (CUDA activity, exported as Chrome trace JSON), where
every GPU kernel is an event with `cat: "kernel"`, a start `ts`, a duration `dur` (both in µs)
and its stream in `args.stream`.

Method (interval intersection):
  1. comm: every NCCL kernel (name contains "nccl"). Inside the profiled DDP steps the only
     collectives are the gradient buckets' all-reduces (scaling.py broadcasts no buffers), so
     all of them are all-reduces. The name is not asked for more: NCCL's maintainers say a
     kernel's name only hints at the first operation it runs, and since NCCL 2.2 any of its
     kernels may run any collective (NVIDIA/nccl issues #739 and #2196);
  2. compute: every other kernel on a stream that carries no NCCL kernel, merged into a union
     of disjoint intervals (two compute kernels that overlap each other count once);
  3. hidden = Σ over comm kernels of |kernel ∩ union(compute)|; comm_hidden_pct =
     100 · hidden / Σ |comm kernel|; exposed = the rest: time in which the GPU only
     communicated, the most that the all-reduce can add to a step.

What this does not say: an NCCL kernel starts when it is launched and spins until its peers
arrive, so its duration includes waiting for the slowest rank, not only moving bytes; and
"hidden" means the two ran at the same time, not that either ran at full speed (NCCL's
kernels take SMs and memory bandwidth from the compute kernels beside them). Off the GPU
(gloo on CPU processes) a trace has no kernels and `summary` returns None.

`python3 trace_overlap.py` checks the interval arithmetic on a hand-made trace.
"""

import json
import os
import tempfile


def is_nccl(name):
    return "nccl" in name.lower()


def kernels(trace_path):
    """[(name, stream, start_us, end_us)] of every GPU kernel in a Chrome trace file."""
    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            stream = e.get("args", {}).get("stream", e.get("tid"))
            out.append((e["name"], stream, float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    return out


# ANCHOR: overlap
def union(intervals):
    """Sorted, disjoint intervals covering the same time as `intervals`."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def hidden_time(comm, merged):
    """Σ over `comm` intervals of the length that lies inside `merged` (sorted, disjoint).
    One sweep: both lists in time order, so a trace of thousands of kernels takes milliseconds."""
    total, j = 0.0, 0
    for start, end in sorted(comm):
        while j < len(merged) and merged[j][1] <= start:
            j += 1  # ends before this kernel starts, and before every later one
        k = j
        while k < len(merged) and merged[k][0] < end:
            total += min(end, merged[k][1]) - max(start, merged[k][0])
            k += 1
    return total


def summary(ks, steps):
    """Per-step comm, hidden and exposed all-reduce time (ms) from a trace's kernels; None
    when the trace holds no NCCL kernel (a CPU run)."""
    comm = [(s, e) for name, _, s, e in ks if is_nccl(name)]
    if not comm:
        return None
    comm_streams = {st for name, st, _, _ in ks if is_nccl(name)}
    compute = union([(s, e) for name, st, s, e in ks
                     if not is_nccl(name) and st not in comm_streams])
    total = sum(e - s for s, e in comm)
    hidden = hidden_time(comm, compute)
    return {"comm_ms": total / steps / 1e3, "exposed_comm_ms": (total - hidden) / steps / 1e3,
            "comm_hidden_pct": 100.0 * hidden / total, "comm_kernels": len(comm) / steps,
            "compute_busy_ms": sum(e - s for s, e in compute) / steps / 1e3}
# ANCHOR_END: overlap


def from_profiler(prof, steps):
    """summary() of a finished torch.profiler.profile run, through its Chrome trace."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        return summary(kernels(path), steps)


def _self_check():
    """Compute on stream 7 (0–10 and 8–20 µs: union 0–20) and stream 8 (30–32 µs); all-reduces
    on stream 9: 15–25 (5 µs hidden) and 28–40 (2 µs hidden): 7 of 22 µs hidden."""
    ks = [("gemm", 7, 0.0, 10.0), ("gemm", 7, 8.0, 20.0), ("copy", 8, 30.0, 32.0),
          ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 9, 15.0, 25.0),
          ("ncclKernel_AllReduce_RING_LL_Sum_float", 9, 28.0, 40.0)]
    s = summary(ks, steps=1)
    assert abs(s["comm_hidden_pct"] - 700.0 / 22.0) < 1e-9, s
    assert abs(s["exposed_comm_ms"] - 0.015) < 1e-12, s
    assert abs(s["compute_busy_ms"] - 0.022) < 1e-12, s
    assert summary([("gemm", 7, 0.0, 1.0)], steps=1) is None
    print("trace_overlap: interval arithmetic ok")


if __name__ == "__main__":
    _self_check()
