"""Forward time of each module of the hdlc-lab model, and of the whole model, in BF16.

One idea: a Transformer's forward pass is a handful of module kinds, and a stopwatch on each
shows where the time goes — the matmul-heavy modules (attention projections, MLP, LM head) near
the tensor-core peak, the memory-bound ones (embedding lookup, RMSNorm) far below it.
Batch 32 × seq 256 (the training shape). Each module is first checked against a float64 copy
of itself on the same input (relative error ≤ a BF16 tolerance), then timed with CUDA events.
Metrics: params_count, achieved TFLOP/s (FLOPs from the formulas below) and mfu_pct against the
GPU's datasheet BF16 dense peak (peaks.py) when the GPU is in that table.
"""

import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import peaks  # noqa: E402
import torch  # noqa: E402

QUICK = labkit.QUICK
DEV = labkit.torch_device()
CFG = model.TINY if QUICK else model.HDLC_LAB
B, S = (2, 32) if QUICK else (32, 256)
# BF16 keeps 8 significant bits (relative rounding 2^-9 ≈ 2e-3 per value); errors from rounding
# inputs, weights and every intermediate add up over a few ops to ~1e-2. 3e-2 for one module,
# 5e-2 for the whole 8-layer model.
TOL_MODULE, TOL_MODEL = 3e-2, 5e-2


def module_flops(name):
    """Matmul FLOPs (2 per multiply-add) of one forward of each module at [B, S]."""
    c, T = CFG, B * S
    attn = 2 * T * c.d_model * (2 * c.n_heads + 2 * c.n_kv_heads) * c.d_head \
        + 4 * B * c.n_heads * S * S * c.d_head
    mlp = 2 * T * 3 * c.d_model * c.ffn
    return {"embedding": 0, "rmsnorm": 0, "attention": attn, "mlp": mlp,
            "lm_head": 2 * T * c.d_model * c.vocab, "block": attn + mlp,
            "model": model.forward_flops(c, B, S)}[name]


def module_bytes(name):
    """Fewest bytes moved for the memory-bound modules (BF16: 2 B per value)."""
    act = B * S * CFG.d_model * 2
    return {"embedding": 2 * act, "rmsnorm": 2 * act + CFG.d_model * 2}.get(name, 0)


def cases(full):
    """(name, label, module, input) for each module, taken from one seeded BF16 model."""
    g = torch.Generator().manual_seed(labkit.SEED)
    tokens = torch.randint(0, CFG.vocab, (B, S), generator=g).to(DEV)
    x = torch.randn(B, S, CFG.d_model, generator=g).to(DEV, torch.bfloat16)
    blk = full.blocks[0]
    return [
        ("embedding", "token embedding", full.embed, tokens),
        ("rmsnorm", "RMSNorm", blk.attn_norm, x),
        ("attention", "attention (GQA, SDPA)", blk.attn, x),
        ("mlp", "SwiGLU MLP", blk.mlp, x),
        ("lm_head", "LM head", full.lm_head, x),
        ("block", "block", blk, x),
        ("model", "whole model", full, tokens),
    ]


def main():
    full = model.build(CFG, seed=0, device=DEV, dtype=torch.bfloat16).eval()
    params = {"batch": B, "seq": S}
    for rung, (name, label, mod, inp) in enumerate(cases(full)):
        ref_mod = copy.deepcopy(mod).double()
        ref_in = inp if inp.dtype == torch.long else inp.double()
        with torch.no_grad():
            ref = ref_mod(ref_in)
        del ref_mod
        n_params = sum(p.numel() for p in mod.parameters())
        flops = module_flops(name)

        def run(mod=mod, inp=inp):
            with torch.no_grad():
                return mod(inp)

        tol = TOL_MODEL if name == "model" else TOL_MODULE
        try:
            out = run()
            err = labkit.rel_error(out, ref)
        except Exception as e:
            labkit.failed(name, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
            continue
        if not err <= tol:
            labkit.failed(name, label, params, "verify", f"rel_error {err:.3e} > {tol:.1e}", rung=rung)
            continue
        timing = labkit.time_torch(run)
        metrics = {"params_count": n_params}
        if flops:
            metrics.update(peaks.mfu_metrics(flops, timing["median_ms"], "bf16"))
        labkit.ok(name, label, params, timing, rel_error=err, tolerance=tol, flops=flops,
                  bytes=module_bytes(name), rung=rung, metrics=metrics)
        labkit.log(f"{name}: {timing['median_ms']:.3f} ms, rel_error {err:.2e}")


if __name__ == "__main__":
    main()
