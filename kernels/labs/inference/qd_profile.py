"""Where one decode step's GPU time goes: weight GEMVs, attention, and everything else.

One idea: TPOT above the byte floor is time the GPU spends on something other than streaming
weights and KV. A profiler trace of one step splits it by kernel: the weight products (the
book's quant_gemv kernels, or cuBLAS for BF16, and the BF16 LM head), the decode attention
kernels, and the rest — RMSNorm, RoPE, the KV append and its quantization, SiLU·mul, residual
adds, casts — small kernels, each far shorter than a weight read but 32 layers × many of them.
The step runs eagerly under torch.profiler (a CUDA graph removes launch gaps, not kernel time,
so the kernels' own durations are what a replay pays); the shares are of summed kernel time.

Record `profile_w_<format>` (batch 1, the smallest context, BF16 KV), timed eagerly: metrics
gemv_us, attention_us, other_us (summed kernel time per class), other_kernels (how many
kernels), and table `kernels` (class, kernels, total µs, share). On CPU (quick mode) the rows
are the CPU operators, which exercises the same code.
"""

import labkit
import torch

# cuBLAS 13 names its GEMM kernels nvjet_*, and its split-K reductions splitKreduce_*.
WEIGHT_NAMES = ("qgemv", "gemm", "gemv", "nvjet", "splitk", "cutlass", "xmma", "cublas", "aten::mm",
                "aten::addmm", "aten::matmul", "aten::linear")
ATTENTION_NAMES = ("decode_", "attention", "sdpa")


def kind(name):
    """'weights', 'attention' or 'other' for a kernel (or CPU operator) name."""
    low = name.lower()
    if any(k in low for k in WEIGHT_NAMES):
        return "weights"
    if any(k in low for k in ATTENTION_NAMES):
        return "attention"
    return "other"


def device_us(evt, on_gpu):
    """A row's own time in µs: its device time on the GPU (the attribute was renamed from
    cuda_* to device_*), its CPU time off it."""
    names = ("self_device_time_total", "self_cuda_time_total") if on_gpu else ("self_cpu_time_total",)
    for n in names:
        if hasattr(evt, n):
            return float(getattr(evt, n))
    return 0.0


def is_kernel(evt, on_gpu):
    """A kernel row (on the GPU: a device row that is not a user annotation spanning others);
    off the GPU every operator row counts."""
    if not on_gpu:
        return evt.key.startswith("aten::")
    if not str(getattr(evt, "device_type", "")).endswith("CUDA"):
        return False
    return not getattr(evt, "is_user_annotation", False) and "#" not in evt.key


def breakdown(step):
    """{class: (kernels, µs)} of one profiled step (after one warm-up step)."""
    on_gpu = torch.cuda.is_available()
    step()
    acts = [torch.profiler.ProfilerActivity.CPU]
    if on_gpu:
        torch.cuda.synchronize()
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        step()
        if on_gpu:
            torch.cuda.synchronize()
    out = {"weights": [0, 0.0], "attention": [0, 0.0], "other": [0, 0.0]}
    for e in prof.key_averages():
        if is_kernel(e, on_gpu):
            c = out[kind(e.key)]
            c[0] += int(e.count)
            c[1] += device_us(e, on_gpu)
    return out


def record(w, label, step, params, rel_error, tolerance):
    """Emit profile_w_<w>: the step timed eagerly, with its kernel time split by class."""
    variant, label = f"profile_w_{w}", f"{label}: kernel time by class (eager step, torch.profiler)"
    try:
        parts = breakdown(step)
    except Exception as e:  # a profiler that does not run is a result: a failed record
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}")
        return
    total = sum(us for _, us in parts.values()) or 1.0
    rows = [[k, n, us, 100.0 * us / total] for k, (n, us) in parts.items()]
    timing = labkit.time_torch(step, warmup=1, reps=3) if labkit.QUICK else labkit.time_torch(step)
    metrics = {"gemv_us": parts["weights"][1], "attention_us": parts["attention"][1],
               "other_us": parts["other"][1], "other_kernels": parts["other"][0],
               "kernel_us": total}
    labkit.ok(variant, label, params, timing, rel_error=rel_error, tolerance=tolerance, metrics=metrics,
              tables={"kernels": {"columns": ["class", "kernels", "total_us", "share_pct"],
                                  "rows": rows}})
    labkit.log(f"profile {w}: " + ", ".join(f"{k} {n} kernels {us:.0f} us" for k, (n, us)
                                            in parts.items()))
