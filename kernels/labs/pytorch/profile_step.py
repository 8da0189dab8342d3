"""torch.profiler on training steps of the hdlc-lab model: which GPU kernels take the time.

One idea: a profiler trace turns "a training step takes t ms" into a list of kernels with their
share of t. The matmuls (cuBLAS/CUTLASS GEMMs) should lead; what follows them — elementwise
kernels, reductions, the optimizer's foreach kernels, attention — is where fusion or a better
kernel can still win. The step is the BF16-autocast step of train.py at batch 32 × seq 256.

Records: one `ok` record whose `tables` hold `top_kernels` (kernel, calls, cuda_time_us, pct:
the 12 kernels with the most GPU time over the profiled steps, names shortened) and `top_ops`
(the aten operators the kernels were launched from, by self GPU time). Verification: the step's
loss on the first batch equals the loss of a float64 copy of the model (BF16 tolerance).
Timing: the step's median over repetitions with CUDA events, measured without the profiler.
"""

import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import torch  # noqa: E402
import train  # noqa: E402
from torch.profiler import ProfilerActivity, profile, schedule  # noqa: E402

TOP = 12
PROFILED_STEPS = 3


def shorten(name, limit=90):
    """A kernel's C++ signature made readable: no `void`, no argument list, nested template
    arguments folded to `…`. "void at::native::f<4, at::native::G<float>>(int, …)" becomes
    "at::native::f<4, at::native::G<…>>"."""
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for ch in name:
        if ch == "(" and depth == 0:
            break  # the argument list starts
        if ch == "<":
            depth += 1
            if depth == 2:
                out.append("<…")
            if depth >= 2:
                continue
        elif ch == ">":
            depth -= 1
            if depth >= 1 and out and out[-1] == "<…":
                out.append(">")
                continue
            if depth >= 1:
                continue
        elif depth >= 2:
            continue
        out.append(ch)
    s = "".join(out).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def dev_time(evt, self_only):
    """GPU time (µs) of a profiler row; the attribute was renamed from cuda_* to device_*."""
    names = ["self_device_time_total", "self_cuda_time_total"] if self_only else \
        ["device_time_total", "cuda_time_total"]
    for n in names:
        if hasattr(evt, n):
            return float(getattr(evt, n))
    return 0.0


def tables(prof):
    """top_kernels and top_ops from the profiler's averages."""
    rows = prof.key_averages()
    def is_gpu(e):
        """A GPU kernel row: on the device, and not a user annotation that spans the step
        (`ProfilerStep#3`, `Optimizer.step#AdamW.step`), which would count its kernels twice."""
        if not str(getattr(e, "device_type", "")).endswith("CUDA"):
            return False
        if getattr(e, "is_user_annotation", False):
            return False
        return not (e.key.startswith("ProfilerStep") or "#" in e.key)
    kernels = [(shorten(e.key), e.count, dev_time(e, True)) for e in rows if is_gpu(e)]
    merged = {}
    for k, n, t in kernels:  # different template instances may shorten to one name
        c, u = merged.get(k, (0, 0.0))
        merged[k] = (c + n, u + t)
    total = sum(t for _, t in merged.values()) or 1.0
    top_k = sorted(merged.items(), key=lambda kv: -kv[1][1])[:TOP]
    ops = [(e.key, e.count, dev_time(e, True), float(e.self_cpu_time_total))
           for e in rows if not is_gpu(e) and e.key.startswith("aten::")]
    ops_total = sum(t for _, _, t, _ in ops) or 1.0
    top_o = sorted(ops, key=lambda r: (-r[2], -r[3]))[:TOP]
    return {
        "top_kernels": {"columns": ["kernel", "calls", "cuda_time_us", "pct"],
                        "rows": [[k, n // PROFILED_STEPS, round(t / PROFILED_STEPS, 1),
                                  round(100 * t / total, 1)] for k, (n, t) in top_k]},
        "top_ops": {"columns": ["op", "calls", "cuda_time_us", "pct", "cpu_time_us"],
                    "rows": [[k, n // PROFILED_STEPS, round(t / PROFILED_STEPS, 1),
                              round(100 * t / ops_total, 1), round(c / PROFILED_STEPS, 1)]
                             for k, n, t, c in top_o]},
    }, total / PROFILED_STEPS


def main():
    dev = train.DEV
    params = {"batch": train.BATCH, "seq": train.SEQ}
    train_data, _ = train.load_corpus()
    gen = torch.Generator().manual_seed(labkit.SEED)
    batches = [train.get_batch(train_data, gen) for _ in range(8)]
    m = model.build(train.CFG, seed=0, device=dev)
    opt = train.make_optimizer(m)

    # Verify: the loss the step computes (BF16 autocast) against a float64 copy of the model.
    x, y = batches[0]
    with torch.no_grad():
        ref = train.next_token_loss(copy.deepcopy(m).double(), x, y, "fp32")
        got = train.next_token_loss(m, x, y, "bf16")
    err, tol = labkit.rel_error(got, ref), 2e-2
    if not err <= tol:
        labkit.failed("bf16_step", "BF16 training step", params, "verify", f"loss rel_error {err:.3e}")
        return

    step_no = [0]

    def step():
        xb, yb = batches[step_no[0] % len(batches)]
        train.train_step(m, opt, xb, yb, step_no[0], "bf16")
        step_no[0] += 1

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])
    with profile(activities=activities,
                 schedule=schedule(wait=1, warmup=2, active=PROFILED_STEPS)) as prof:
        for _ in range(1 + 2 + PROFILED_STEPS):
            step()
            prof.step()
    tabs, kernel_us = tables(prof)
    labkit.log("top ops:", tabs["top_ops"]["rows"][:3])
    if dev != "cuda":
        labkit.failed("bf16_step", "BF16 training step", params, "unsupported",
                      "a CUDA kernel trace needs a GPU")
        return
    if not tabs["top_kernels"]["rows"]:  # never show an empty table as if it were a result
        labkit.failed("bf16_step", "BF16 training step", params, "launch",
                      "the trace has no CUDA kernel events")
        return
    timing = labkit.time_torch(step, warmup=3, flush=False, reps=20)
    labkit.ok("bf16_step", "BF16 training step", params, timing, rel_error=err, tolerance=tol,
              flops=3 * model.forward_flops(train.CFG, train.BATCH, train.SEQ),
              metrics={"kernel_time_us": kernel_us}, tables=tabs)


if __name__ == "__main__":
    main()
