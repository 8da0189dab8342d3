"""What the engines at scale share: arrival-aware serving, a decode step timed against its floor,
and the GPU idle fraction read from a profiler trace.

Why its own module: the throughput lab and the rate-sweep lab serve the same engines under
different arrivals, and both check each engine first exactly as the snapshot labs do (greedy
tokens equal snapshot 1's on the FP32 verify workload).
"""

import json
import os
import tempfile
import time
from collections import deque

import torch

import bench
import labkit
import s8_prefix_cache as s8
import s9_paged_attention as s9
import s10_chunked_prefill as s10
import s11_async_scheduling as s11
import workload
from s3_static_batch import Sequence

# variant -> (rung, label, engine class); s8 is the engine the scale work starts from
ENGINES = {
    "s8": (8, "s8 prefix caching (gather + SDPA)", s8.PrefixEngine),
    "s9": (9, "s9 paged attention kernels", s9.ScaleEngine),
    "s10": (10, "s10 chunked prefill, fused RMSNorm", s10.ChunkedEngine),
    "s11": (11, "s11 async scheduling", s11.AsyncEngine),
}


def engine_for(model, ecfg, engine_cls):
    """One engine per (model, config, class), built before any clock starts (s7's cache)."""
    import s7_model_runner as s7
    key = (id(model), ecfg, engine_cls)
    if key not in s7._engines:
        s7._engines[key] = engine_cls(model, ecfg)
    return s7._engines[key]


def drop_engines(model):
    """Free the engines built for this model (their KV pools and graphs)."""
    import s7_model_runner as s7
    for key in [k for k in s7._engines if k[0] == id(model)]:
        del s7._engines[key]
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def serve_arrivals(engine, requests, arrivals, clock, on_step=None, max_steps=None):
    """Serve requests that arrive at the given times (s from the clock's start): a request joins
    the scheduler only once it has arrived; an idle engine sleeps until the next arrival.
    `max_steps` stops early (the profiler needs only a window of steps)."""
    sch = engine.scheduler_cls(engine.ecfg, engine.new_block_manager())
    pending = deque(sorted(zip(arrivals, (r.rid for r in requests), requests)))
    clock.start()
    steps = 0
    while (pending or not sch.is_finished()) and (max_steps is None or steps < max_steps):
        steps += 1
        now = time.perf_counter() - clock.t0
        while pending and pending[0][0] <= now:
            sch.add(Sequence(pending.popleft()[2]))
        if sch.is_finished():
            time.sleep(max(0.0, pending[0][0] - now))
            continue
        seqs, kind = sch.schedule()
        tokens = engine.runner.run(seqs, kind)
        sch.postprocess(seqs, tokens, clock)
        if on_step:
            on_step()


def latency_metrics(clock, arrivals_by_rid):
    """Tokens/s over the run, TTFT from each request's arrival, TPOT over its later tokens."""
    t_end = max(ts[-1] for ts in clock.times.values())
    n_out = sum(len(ts) for ts in clock.times.values())
    ttft = [(ts[0] - clock.t0 - arrivals_by_rid[rid]) * 1e3 for rid, ts in clock.times.items()]
    tpot = [(ts[-1] - ts[0]) * 1e3 / (len(ts) - 1) for ts in clock.times.values() if len(ts) > 1]
    return {"tokens_per_s": n_out / (t_end - clock.t0), "output_tokens": n_out,
            "ttft_p50_ms": bench.pct(ttft, 0.5), "ttft_p99_ms": bench.pct(ttft, 0.99),
            "tpot_p50_ms": bench.pct(tpot, 0.5), "tpot_p99_ms": bench.pct(tpot, 0.99)}, \
        (t_end - clock.t0) * 1e3


def verified(variant, engine_cls, params, device, cfg):
    """The snapshot labs' check: FP32 tokens equal snapshot 1's. Emits a failed record if not."""
    import s7_model_runner as s7
    rung, label, _ = ENGINES[variant]
    try:
        err = bench.verify(lambda m, r, e, c: s7.serve(m, r, e, c, engine_cls=engine_cls),
                           rung, device, cfg)
    except Exception as e:
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
        return False
    if err:
        labkit.failed(variant, label, params, "verify", err, rung=rung)
        return False
    labkit.log(f"{variant}: verified against snapshot 1 (token equality, FP32)")
    return True


def weight_bytes(model):
    ts = [model.embed] + [t for layer in model.layers for t in layer.values()]
    return sum(t.numel() * t.element_size() for t in ts)


def copy_bandwidth():
    """Device-to-device copy of 1 GiB, bytes read plus written per second (the step's ceiling)."""
    n = 1 << 28
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    t = labkit.time_torch(lambda: dst.copy_(src), flush=False, reps=20)
    return 2 * n * 4 / (t["median_ms"] * 1e-3)


def decode_step_vs_floor(engine, ctx):
    """Replay the batch-256 decode graph with every row at ctx positions (distinct blocks), and
    compare with reading the weights plus the live KV once at the copy bandwidth."""
    r = engine.runner
    n, bs = r.batch_sizes[-1], r.bs
    per_seq = -(-ctx // bs)
    if n * per_seq + 1 > r.cache.k.shape[1] // bs or n not in r.graphs:
        return None
    r.cache.k[:, :(n * per_seq + 1) * bs].normal_()  # the pool holds stale or no data here
    r.cache.v[:, :(n * per_seq + 1) * bs].normal_()
    b = r.buf
    b["ids"][:n] = torch.randint(0, r.model.cfg.vocab, (n,), device="cuda")
    b["pos"][:n], b["ctx"][:n] = ctx - 1, ctx
    tables = 1 + torch.arange(n * per_seq, device="cuda", dtype=torch.int32).view(n, per_seq)
    b["tables"].zero_()
    b["tables"][:n, :per_seq] = tables
    b["slots"][:n] = tables[:, (ctx - 1) // bs].long() * bs + (ctx - 1) % bs
    g, _ = r.graphs[n]
    t = labkit.time_torch(g.replay, flush=False, reps=20)
    kv = n * ctx * r.model.kv_bytes_per_token()
    floor_ms = (weight_bytes(r.model) + kv) / copy_bandwidth() * 1e3
    return t, {"decode_step_ms": t["median_ms"], "floor_ms": floor_ms,
               "floor_ratio": t["median_ms"] / floor_ms, "kv_read_bytes": kv,
               "batch": n, "ctx": ctx}


def gpu_idle_pct(engine, reqs, skip_steps, active_steps=20):
    """Serve reqs under the profiler; over `active_steps` engine steps after `skip_steps`, the
    share of each step's wall time in which no kernel, copy or memset ran on the GPU."""
    from torch.profiler import ProfilerActivity, profile, schedule
    sched = schedule(wait=skip_steps, warmup=2, active=active_steps, repeat=1)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched) as prof:
        serve_arrivals(engine, reqs, [0.0] * len(reqs), bench.Clock(), on_step=prof.step,
                       max_steps=skip_steps + active_steps + 3)
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if str(e.get("name", "")).startswith("ProfilerStep#") and "dur" in e]
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                 if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e)
    span = busy = 0.0
    for a, b in steps:
        span += b - a
        busy += union_inside(gpu, a, b)
    return 100.0 * (1.0 - busy / span) if span > 0 else None


def union_inside(intervals, a, b):
    """Length of the union of sorted intervals, clipped to [a, b]."""
    total, end = 0.0, a
    for s, e in intervals:
        s, e = max(s, end), min(e, b)
        if e > s:
            total += e - s
            end = e
    return total

