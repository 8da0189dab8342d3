"""What the eight snapshot labs share: verify against snapshot 1, then serve the timed workload.

Why one driver: every snapshot must be checked and measured the same way, or the ladder across
snapshots compares different things. The check is the book's correctness rule for the engine:
on the `verify` workload in FP32, every request's greedy output tokens must equal snapshot 1's
(snapshot 1 itself is checked against a float64 run of itself). Only then is the `bench`
workload served three times in BF16 after an untimed warm-up run of it, and the median run's
clock turned into metrics (the wall time's p10/p90 over the runs beside it):
output tokens per second, TTFT and TPOT percentiles over requests, KV memory used vs reserved.
"""

import sys
import time
from collections import defaultdict

import torch

import labkit
import model as M
import workload


class Clock:
    """Timestamps of every generated token per request, and KV usage samples per step.
    An engine calls start() when it is ready to take requests (after any start-up work),
    token() for each token it hands back, kv() once per step."""

    def __init__(self):
        self.t0 = None
        self.times = defaultdict(list)
        self.out = defaultdict(list)
        self.kv_samples = []  # (used tokens, reserved tokens) after each step
        self.extra = {}  # snapshot-specific metrics, e.g. prefix cache hits

    def start(self):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.t0 = time.perf_counter()

    def token(self, rid, tok):
        self.times[rid].append(time.perf_counter())
        self.out[rid].append(int(tok))

    def kv(self, used_tokens, reserved_tokens):
        self.kv_samples.append((used_tokens, reserved_tokens))


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(p * (len(v) - 1))))]


def metrics(clock, bytes_per_token):
    t_end = max(ts[-1] for ts in clock.times.values())
    n_out = sum(len(ts) for ts in clock.times.values())
    ttft = [(ts[0] - clock.t0) * 1e3 for ts in clock.times.values()]
    tpot = [(ts[-1] - ts[0]) * 1e3 / (len(ts) - 1) for ts in clock.times.values() if len(ts) > 1]
    m = {"tokens_per_s": n_out / (t_end - clock.t0),
         "ttft_p50_ms": pct(ttft, 0.5), "ttft_p99_ms": pct(ttft, 0.99),
         "tpot_p50_ms": pct(tpot, 0.5), "tpot_p99_ms": pct(tpot, 0.99)}
    if clock.kv_samples:
        m["kv_used_peak_bytes"] = max(u for u, _ in clock.kv_samples) * bytes_per_token
        m["kv_reserved_peak_bytes"] = max(r for _, r in clock.kv_samples) * bytes_per_token
        fracs = [u / r for u, r in clock.kv_samples if r > 0]
        m["kv_used_pct"] = 100.0 * sum(fracs) / max(1, len(fracs))
    m.update(clock.extra)
    return m, (t_end - clock.t0) * 1e3


def serve_collect(serve, model, reqs, ecfg):
    clock = Clock()
    serve(model, reqs, ecfg, clock)
    return clock


def first_mismatch(reqs, got, want):
    """None when every request's tokens agree, else a sentence naming the first that differs."""
    for r in reqs:
        a, b = got.out.get(r.rid, []), want.out.get(r.rid, [])
        if a != b:
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return (f"request {r.rid} differs from snapshot 1 at output token {i} "
                    f"(got {a[i:i + 4]}, want {b[i:i + 4]}; lengths {len(a)} vs {len(b)})")
    return None


def setup():
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return labkit.torch_device(), (M.TINY if labkit.QUICK else M.QWEN3_06B)


def verify(serve, rung, device, cfg):
    """Token equality with snapshot 1 on the verify workload in FP32; returns an error or None."""
    import s1_no_cache
    reqs, ecfg = workload.verify(cfg.vocab)
    m32 = M.Model(cfg, torch.float32, device)
    if rung == 1:  # the reference itself: FP32 against a float64 run of the same loop
        want = serve_collect(s1_no_cache.serve, M.Model(cfg, torch.float64, device), reqs, ecfg)
    else:
        want = serve_collect(s1_no_cache.serve, m32, reqs, ecfg)
    got = serve_collect(serve, m32, reqs, ecfg)
    engines = getattr(sys.modules.get("s7_model_runner"), "_engines", {})
    for key in [key for key in engines if key[0] == id(m32)]:
        del engines[key]  # the FP32 engines (KV pool, graphs) are not needed any more
    del m32
    return first_mismatch(reqs, got, want)


REPS = 3  # timed runs per snapshot; the record's median and p10/p90 are over these


def timed_runs(serve, device, cfg, reqs, ecfg, dtype=torch.bfloat16, model=None, reps=REPS,
               full_warmup=True):
    """Warm up, then serve the whole workload `reps` times. Returns the runs' clocks, the model
    and, with `full_warmup`, the warm-up run's clock (else None).

    Why the warm-up is the whole workload: two short requests leave most of an engine's
    one-time work (a CUDA graph per batch bucket, Triton's compilation per shape, the caching
    allocator's growth, cuBLAS's first call per shape) to the first timed run, which then ran
    up to several times slower than the next two and made p90 a start-up figure. The cold run
    is kept as its own metric. `full_warmup=False` (snapshots 1 and 2, which build no graphs
    and compile nothing, and whose runs take minutes) keeps the short warm-up."""
    model = model or M.Model(cfg, dtype, device)
    warm = reqs if full_warmup else [workload.Request(r.rid, r.prompt[:32], 4) for r in reqs[:2]]
    cold = Clock()
    serve(model, warm, ecfg, cold)
    clocks = []
    for _ in range(reps):
        clock = Clock()
        serve(model, reqs, ecfg, clock)
        clocks.append(clock)
    return clocks, model, (cold if full_warmup else None)


def timed_run(serve, device, cfg, reqs, ecfg, dtype=torch.bfloat16, model=None):
    """One warm timed run (the kernels lab times its variants this way). Returns the clock."""
    clocks, model, _ = timed_runs(serve, device, cfg, reqs, ecfg, dtype, model, reps=1,
                                  full_warmup=False)
    return clocks[0], model


def summarize(clocks, bytes_per_token):
    """The median run's metrics, and the wall time's median and p10/p90 over the runs."""
    runs = sorted((metrics(c, bytes_per_token) for c in clocks), key=lambda r: r[1])
    timing = labkit._summary([ms for _, ms in runs])
    return runs[len(runs) // 2][0], timing


def run(rung, variant, label, serve, gpu_only=False, full_warmup=True):
    """The whole lab for one snapshot: verify, then (on a GPU where it needs one) time."""
    device, cfg = setup()
    reqs, ecfg = workload.bench(cfg.vocab)
    params = {"requests": len(reqs), "output_tokens": sum(r.max_tokens for r in reqs),
              "max_num_seqs": ecfg.max_num_seqs, "kv_budget_tokens": ecfg.kv_budget_tokens}
    try:
        err = verify(serve, rung, device, cfg)
    except Exception as e:
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
        return
    if err:
        labkit.failed(variant, label, params, "verify", err, rung=rung)
        return
    labkit.log(f"{variant}: verified against snapshot 1 (token equality, FP32)")
    if gpu_only and device != "cuda":
        labkit.failed(variant, label, params, "unsupported",
                      "CUDA graphs need a CUDA GPU (the engine logic was verified eagerly)", rung=rung)
        return
    try:
        clocks, model, cold = timed_runs(serve, device, cfg, reqs, ecfg, full_warmup=full_warmup)
        m, timing = summarize(clocks, model.kv_bytes_per_token())
        if cold is not None:  # the warm-up run: start-up work included
            m["cold_run_ms"] = metrics(cold, 1)[1]
    except Exception as e:
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
        return
    labkit.ok(variant, label, params, timing, rel_error=0.0, tolerance=0.0, rung=rung,
              baseline=(rung == 1), metrics=m)
