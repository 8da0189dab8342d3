"""Latency against throughput: the engines under Poisson arrivals at several request rates.

Why: the throughput lab sends every request at time zero, which tells how many tokens per second
an engine can produce but not what a user waits. A server sees requests arrive over time. Here
128 requests of nano-vllm's shape arrive with exponential gaps at a rate set as a share of the
engine's own saturation rate (requests per second when all arrive at once, measured first in
the same run), so the sweep means the same thing on any GPU. Each point reports the throughput
achieved and TTFT and TPOT at p50 and p99, the way vLLM's serving benchmark reports them.
One run per point: a point's spread is the spread over its requests (p50 against p99).
Each engine is checked twice before it is timed: all requests at once, and requests arriving
apart (the loop the sweep times).
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench  # noqa: E402
import labkit  # noqa: E402
import model as M  # noqa: E402
import scale  # noqa: E402
import workload  # noqa: E402

LOADS_PCT = (25, 50, 75, 100)  # offered request rate, % of the engine's saturation rate
ENGINES = ("s9", "s10", "s11")


def one_point(engine, reqs, arrivals):
    clock = bench.Clock()
    scale.serve_arrivals(engine, reqs, arrivals, clock)
    return scale.latency_metrics(clock, {r.rid: a for r, a in zip(reqs, arrivals)})


def arrivals_verified(variant, cls, params, device, cfg):
    """The snapshot check once more, with requests arriving apart (some while the engine is idle,
    some mid-step): FP32 tokens equal snapshot 1's. This is the loop the sweep times, where
    admission, idling and — for s11 — a step still in flight meet."""
    rung, label, _ = scale.ENGINES[variant]
    gaps = [0.0, 0.0, 0.3, 0.31, 0.6, 0.9, 0.95, 1.4]

    def serve(m, reqs, ecfg, clock):
        scale.serve_arrivals(scale.engine_for(m, ecfg, cls), reqs, (gaps * 2)[:len(reqs)], clock)
    try:
        err = bench.verify(serve, rung, device, cfg)
    except Exception as e:
        err = f"{type(e).__name__}: {e}"
    if err:
        labkit.failed(variant, label, params, "verify", f"with arrivals apart: {err}", rung=rung)
    return err is None


def sweep(variant, model, reqs, ecfg, device, cfg):
    rung, label, cls = scale.ENGINES[variant]
    base = {"requests": len(reqs), "output_tokens": sum(r.max_tokens for r in reqs)}
    if not scale.verified(variant, cls, dict(base, load_pct=100), device, cfg):
        return
    if not arrivals_verified(variant, cls, dict(base, load_pct=100), device, cfg):
        return
    if device != "cuda":
        labkit.failed(variant, label, dict(base, load_pct=100), "unsupported",
                      "the timed runs need a CUDA GPU (the engine logic was verified eagerly)", rung=rung)
        return
    try:
        engine = scale.engine_for(model, ecfg, cls)
        one_point(engine, reqs[:8], [0.0] * 8)  # warm-up
        _, burst_ms = one_point(engine, reqs, [0.0] * len(reqs))
        saturation = len(reqs) / (burst_ms / 1e3)  # requests per second, all sent at once
        for load in LOADS_PCT:
            rate = saturation * load / 100
            arrivals = workload.poisson_arrivals(len(reqs), rate, workload.WORKLOAD_SEED + load)
            m, ms = one_point(engine, reqs, arrivals)
            m.update({"request_rate": rate, "saturation_rate": saturation})
            labkit.log(f"{variant} load {load}%: {m['tokens_per_s']:.0f} tok/s, "
                       f"TTFT p99 {m['ttft_p99_ms']:.0f} ms, TPOT p99 {m['tpot_p99_ms']:.1f} ms")
            labkit.ok(variant, label, dict(base, load_pct=load),
                      {"reps": 1, "median_ms": ms, "p10_ms": ms, "p90_ms": ms},
                      rel_error=0.0, tolerance=0.0, rung=rung, metrics=m)
    except Exception as e:
        labkit.failed(variant, label, dict(base, load_pct=100), "launch",
                      f"{type(e).__name__}: {e}", rung=rung)
    finally:
        scale.drop_engines(model)


def main():
    device, cfg = bench.setup()
    reqs, ecfg = workload.throughput(cfg.vocab)
    reqs = reqs[:len(reqs) // 2]
    model = M.Model(cfg, torch.bfloat16, device)
    for variant in ENGINES:
        sweep(variant, model, reqs, ecfg, device, cfg)


if __name__ == "__main__":
    main()
