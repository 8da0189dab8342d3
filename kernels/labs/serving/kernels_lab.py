"""nano-vLLM with swappable kernels: eager RMSNorm → fused Triton RMSNorm, then SDPA decode
(pages copied into a dense tensor first) → a Triton paged decode-attention kernel.

The engine is snapshot 8 (paged KV, prefix caching, CUDA graphs for decode). Each variant is
checked like the snapshots (greedy tokens equal snapshot 1's on the FP32 verify workload), then
serves the BF16 bench workload; its record carries TTFT, TPOT and throughput, and a profiler
table of one eager decode step (batch 16), so the reader sees where the step's time goes.
The variants share one process, so each serves the whole workload once untimed before its
timed run: all are measured warm (as the snapshot labs from s3 on are).
Family nano_vllm_kernels; the unchanged engine is the baseline.
"""

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench  # noqa: E402
import labkit  # noqa: E402
import model as M  # noqa: E402
import s7_model_runner as s7  # noqa: E402
import workload  # noqa: E402
from s3_static_batch import Sequence  # noqa: E402
from s8_prefix_cache import PrefixBlockManager, PrefixEngine, PrefixRunner  # noqa: E402


class PagedKernelRunner(PrefixRunner):
    def decode_metadata(self, n, w):  # no gather index, no mask: the kernel reads the pages
        b = self.buf
        return {"slots": b["slots"][:n], "tables": b["tables"][:n, :w], "ctx": b["pos"][:n] + 1}

    def attend_decode(self, layer, q, k, v):
        from triton_kernels import paged_decode_attention
        st = self.step
        self.cache.k[layer, st["slots"]] = k
        self.cache.v[layer, st["slots"]] = v
        return paged_decode_attention(q, self.cache.k[layer], self.cache.v[layer],
                                      st["tables"], st["ctx"], self.bs)


class PagedKernelEngine(PrefixEngine):
    runner_cls = PagedKernelRunner


def make_serve(engine_cls, norm):
    """A serve() for bench: this engine class, with this RMSNorm swapped into the model."""
    def serve(model, requests, ecfg, clock):
        saved, model.rmsnorm = model.rmsnorm, norm
        try:
            s7.serve(model, requests, ecfg, clock, engine_cls=engine_cls)
        finally:
            model.rmsnorm = saved
    return serve


def top_kernels(model, engine_cls, norm, reqs, ecfg, batch=16, k=12):
    """Profile one eager decode step (no graph) of `batch` sequences; the top kernels by time."""
    from torch.profiler import ProfilerActivity, profile
    runner = s7._engines[(id(model), ecfg, engine_cls)].runner  # built by the timed run
    bm = PrefixBlockManager(runner.cache.k.shape[1] // ecfg.block_size, ecfg.block_size)
    seqs = []
    for r in reqs[:batch]:
        s = Sequence(r)
        bm.allocate(s)
        s.tokens.append(0)  # as after prefill: one output token, whose k, v the step writes
        bm.may_append(s)
        seqs.append(s)
    saved, model.rmsnorm = model.rmsnorm, norm
    try:
        n, w = runner.prepare_decode(seqs)
        runner.decode_step(n, w)  # warm-up
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            runner.decode_step(n, w)
            torch.cuda.synchronize()
    finally:
        model.rmsnorm = saved
    rows = []
    for e in prof.key_averages():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        rows.append([e.key[:90], int(e.count), float(us)])
    total = sum(r[2] for r in rows) or 1.0
    rows.sort(key=lambda r: -r[2])
    return {"columns": ["kernel", "calls", "cuda_time_us", "pct"],
            "rows": [r + [100.0 * r[2] / total] for r in rows[:k]]}


def check_bf16(device, cfg):
    """The token check runs in FP32; the timed run is BF16. So the Triton kernels are also
    compared with their PyTorch counterparts in BF16 on random inputs (rel_error <= 1e-2).
    Returns an error sentence or None."""
    from triton_kernels import paged_decode_attention, rmsnorm_triton
    g = torch.Generator(device=device).manual_seed(labkit.SEED)
    bf = torch.bfloat16
    x = torch.randn(64, cfg.d_model, generator=g, device=device).to(bf)
    w = (torch.rand(cfg.d_model, generator=g, device=device) + 0.5).to(bf)
    err = labkit.rel_error(rmsnorm_triton(x, w, cfg.eps), M.rmsnorm_eager(x, w, cfg.eps))
    if not err <= 1e-2:
        return f"Triton RMSNorm in BF16: rel_error {err:.2e} > 1e-2"
    bs, n_blocks, B = 16, 32, 4
    kc = torch.randn(n_blocks * bs, cfg.n_kv_heads, cfg.head_dim, generator=g, device=device).to(bf)
    vc = torch.randn(n_blocks * bs, cfg.n_kv_heads, cfg.head_dim, generator=g, device=device).to(bf)
    q = torch.randn(B, cfg.n_heads, cfg.head_dim, generator=g, device=device).to(bf)
    tables = torch.randperm(n_blocks - 1, generator=g, device=device)[:B * 6].view(B, 6) + 1
    ctx = torch.tensor([1, 17, 50, 96], device=device)
    gather = (tables[:, :, None] * bs + torch.arange(bs, device=device)).flatten(1)
    mask = torch.arange(6 * bs, device=device)[None, :] < ctx[:, None]
    ref = M.sdpa(q[:, None], kc[gather], vc[gather], mask=mask[:, None, :])[:, 0]
    err = labkit.rel_error(paged_decode_attention(q, kc, vc, tables, ctx, bs), ref)
    if not err <= 1e-2:
        return f"paged Triton decode attention in BF16: rel_error {err:.2e} > 1e-2"
    return None


VARIANTS = [  # variant, label, engine, RMSNorm, needs Triton
    ("sdpa_eager_norm", "SDPA + eager RMSNorm", PrefixEngine, "eager", False),
    ("sdpa_triton_norm", "SDPA + Triton RMSNorm", PrefixEngine, "triton", True),
    ("paged_triton_norm", "paged Triton attention + Triton RMSNorm", PagedKernelEngine, "triton", True),
]


def main():
    device, cfg = bench.setup()
    reqs, ecfg = workload.bench(cfg.vocab)
    params = {"requests": len(reqs), "output_tokens": sum(r.max_tokens for r in reqs),
              "max_num_seqs": ecfg.max_num_seqs, "kv_budget_tokens": ecfg.kv_budget_tokens}
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    model16 = None
    for rung, (variant, label, engine_cls, norm_name, needs_triton) in enumerate(VARIANTS, 1):
        if needs_triton and device != "cuda" and not interpret:
            labkit.failed(variant, label, params, "unsupported", "Triton needs a CUDA GPU", rung=rung)
            continue
        try:
            if norm_name == "triton":
                from triton_kernels import rmsnorm_triton as norm
            else:
                norm = M.rmsnorm_eager
            # its own engine class per variant, so its CUDA graphs are captured with its kernels
            engine_cls = type(f"Engine_{variant}", (engine_cls,), {})
            serve = make_serve(engine_cls, norm)
            err = bench.verify(serve, rung + 1, device, cfg)  # rung > 1: compare with snapshot 1
            if not err and needs_triton and device == "cuda":
                err = check_bf16(device, cfg)
        except Exception as e:
            labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
            continue
        if err:
            labkit.failed(variant, label, params, "verify", err, rung=rung)
            continue
        labkit.log(f"{variant}: verified against snapshot 1 (token equality, FP32)")
        if device != "cuda":
            labkit.failed(variant, label, params, "unsupported",
                          "CUDA graphs and the profiler table need a CUDA GPU (verified eagerly)",
                          rung=rung)
            continue
        try:
            # untimed: the whole workload once, so every variant is timed warm. Otherwise the
            # first variant alone pays the first-time costs of the workload's prefill shapes
            # (kernel plans, allocator growth), which later variants in this process reuse.
            model16 = model16 or M.Model(cfg, torch.bfloat16, device)
            serve(model16, reqs, ecfg, bench.Clock())
            clock, model16 = bench.timed_run(serve, device, cfg, reqs, ecfg, model=model16)
            m, ms = bench.metrics(clock, model16.kv_bytes_per_token())
            table = top_kernels(model16, engine_cls, norm, reqs, ecfg)
        except Exception as e:
            labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
            continue
        timing = {"reps": 1, "median_ms": ms, "p10_ms": ms, "p90_ms": ms}
        labkit.ok(variant, label, params, timing, rel_error=0.0, tolerance=0.0, rung=rung,
                  baseline=(rung == 1), metrics=m, tables={"top_kernels": table})


if __name__ == "__main__":
    main()
