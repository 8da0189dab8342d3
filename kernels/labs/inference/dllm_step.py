"""One denoising step of a diffusion LM (dLLM) over its whole canvas, against autoregressive (AR)
decoding of the same number of tokens with a KV cache.

A masked-diffusion LM such as LLaDA generates a canvas of N tokens by running the *whole* model,
with bidirectional attention, over all N positions at every denoising step. An AR model runs the
model once per token, over one new position, reading the KV cache of the earlier ones. The two
costs are very different in kind: a canvas step is a big batched matrix product (N rows per
weight read), an AR step is a matrix-vector product (one row per weight read). This lab measures
both with the same random-weight layer stack and reports how many denoising steps a dLLM can run
before it has spent what AR spends on the same N tokens:

    breakeven_steps = N · ar_token_ms / step_ms

Models (seeded random weights, nothing downloaded): the book's lab shape `hdlc-lab` (d 512,
8 layers, 8 q heads, 2 kv heads, SwiGLU 1536, vocab 256) and a wider Llama-like stack
(d 2048, 8 layers, 16 q heads, 4 kv heads, SwiGLU 5632, vocab 32000). Both paths are checked
against a float64 forward written without SDPA (bidirectional for the canvas, causal for AR)
before they are timed. AR runs eagerly, one token at a time, so its time includes the kernel
launches a real engine would hide with CUDA graphs; the card says so.
"""

import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# name, d_model, layers, q heads, kv heads, ffn, vocab (d_head = d_model / q heads)
MODELS = [
    ("hdlc-lab", 512, 8, 8, 2, 1536, 256),
    ("llama-ish 2048", 2048, 8, 16, 4, 5632, 32000),
]
CANVASES = [128, 256, 512]
BATCHES = [1, 8]
# An eager AR run is n sequential steps of a few hundred kernel launches each, bound by Python's
# dispatch (seconds at n = 512); the check run is its warm-up and two timed runs keep the lab
# inside its time-out. Longer canvases would only lengthen the same straight line.
AR_REPS = 2
if labkit.QUICK:
    MODELS = [("tiny", 64, 2, 4, 2, 128, 64)]
    CANVASES = [16, 32]
    BATCHES = [1, 2]
    AR_REPS = 2

EPS = 1e-5
THETA = 10000.0


def make_weights(d, layers, heads, kv_heads, ffn, vocab, device, dtype):
    """Seeded random weights, each matrix scaled by 1/sqrt(fan_in) so activations stay O(1)."""
    g = torch.Generator().manual_seed(labkit.SEED)
    dh = d // heads

    def mat(n_in, n_out):
        return (torch.randn(n_in, n_out, generator=g) / math.sqrt(n_in)).to(device, dtype)

    w = {"embed": torch.randn(vocab, d, generator=g).to(device, dtype),
         "head": mat(d, vocab), "layers": []}
    for _ in range(layers):
        w["layers"].append({
            "wq": mat(d, heads * dh), "wk": mat(d, kv_heads * dh), "wv": mat(d, kv_heads * dh),
            "wo": mat(heads * dh, d), "gate": mat(d, ffn), "up": mat(d, ffn), "down": mat(ffn, d),
        })
    w["heads"], w["kv_heads"], w["dh"] = heads, kv_heads, dh
    return w


def rms_norm(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


def rope_table(n, dh, device, dtype):
    """cos and sin [n, dh] of the rotary embedding for positions 0..n-1 (rotate-half form)."""
    inv = THETA ** (-torch.arange(0, dh, 2, device=device, dtype=torch.float64) / dh)
    ang = torch.arange(n, device=device, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat([ang.cos()] * 2, -1).to(dtype), torch.cat([ang.sin()] * 2, -1).to(dtype)


def rope(x, cos, sin):
    """Rotate x [B, H, T, dh] by the table rows of its T positions."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


def mlp(lw, x):
    return (F.silu(x @ lw["gate"]) * (x @ lw["up"])) @ lw["down"]


def qkv(w, lw, x, cos, sin):
    """Project x [B, T, d] to q [B, H, T, dh] and k, v [B, Hkv, T, dh], RoPE applied."""
    b, t, _ = x.shape
    h = rms_norm(x)
    q = (h @ lw["wq"]).view(b, t, w["heads"], w["dh"]).transpose(1, 2)
    k = (h @ lw["wk"]).view(b, t, w["kv_heads"], w["dh"]).transpose(1, 2)
    v = (h @ lw["wv"]).view(b, t, w["kv_heads"], w["dh"]).transpose(1, 2)
    return rope(q, cos, sin), rope(k, cos, sin), v


# ANCHOR: canvas_step
def canvas_step(w, tokens):
    """One denoising step: every position attends to every other (no causal mask)."""
    b, n = tokens.shape
    cos, sin = rope_table(n, w["dh"], tokens.device, w["embed"].dtype)
    x = w["embed"][tokens]
    for lw in w["layers"]:
        q, k, v = qkv(w, lw, x, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=True)
        x = x + a.transpose(1, 2).reshape(b, n, -1) @ lw["wo"]
        x = x + mlp(lw, rms_norm(x))
    return rms_norm(x) @ w["head"]  # logits for all n positions
# ANCHOR_END: canvas_step


# ANCHOR: ar_decode
def ar_decode(w, tokens, k_cache, v_cache):
    """Decode n tokens one at a time; layer l's keys and values for positions < t stay in
    k_cache[l], v_cache[l] ([B, Hkv, n, dh], preallocated), so step t projects one new row."""
    b, n = tokens.shape
    cos, sin = rope_table(n, w["dh"], tokens.device, w["embed"].dtype)
    logits = []
    for t in range(n):
        x = w["embed"][tokens[:, t: t + 1]]
        for l, lw in enumerate(w["layers"]):
            q, k, v = qkv(w, lw, x, cos[t: t + 1], sin[t: t + 1])
            k_cache[l][:, :, t: t + 1] = k
            v_cache[l][:, :, t: t + 1] = v
            a = F.scaled_dot_product_attention(q, k_cache[l][:, :, : t + 1], v_cache[l][:, :, : t + 1],
                                               enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(b, 1, -1) @ lw["wo"]
            x = x + mlp(lw, rms_norm(x))
        logits.append(rms_norm(x) @ w["head"])
    return torch.cat(logits, 1)
# ANCHOR_END: ar_decode


def reference(w, tokens, causal):
    """The same network in plain float64 arithmetic: explicit scores, mask and softmax."""
    b, n = tokens.shape
    cos, sin = rope_table(n, w["dh"], tokens.device, torch.float64)
    rep = w["heads"] // w["kv_heads"]
    x = w["embed"][tokens]
    for lw in w["layers"]:
        q, k, v = qkv(w, lw, x, cos, sin)
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(w["dh"])
        if causal:
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), -math.inf)
        a = torch.softmax(s, -1) @ v
        x = x + a.transpose(1, 2).reshape(b, n, -1) @ lw["wo"]
        x = x + mlp(lw, rms_norm(x))
    return rms_norm(x) @ w["head"]


def counts(d, layers, heads, kv_heads, ffn, vocab, b, n, elem):
    """FLOPs and bytes for one canvas step and for AR over n tokens (matmuls only)."""
    dh = d // heads
    lin = d * (heads * dh) * 2 + d * (kv_heads * dh) * 2 + 3 * d * ffn  # q, o, k, v, mlp
    weight_bytes = (layers * lin + 2 * vocab * d) * elem  # whole embedding table counted: an upper bound
    # Canvas: every position meets every position (QK^T and PV: 2 · 2·n·n·dh per head).
    step_flops = 2 * b * n * (layers * lin + d * vocab) + layers * 4 * b * heads * n * n * dh
    # AR: position t meets t+1 positions; summed over t = n(n+1)/2.
    ar_flops = 2 * b * n * (layers * lin + d * vocab) + layers * 4 * b * heads * dh * n * (n + 1) // 2
    kv_read = layers * 2 * b * kv_heads * dh * elem * n * (n + 1) // 2
    return step_flops, weight_bytes, ar_flops, n * weight_bytes + kv_read


def verify_and_time(variant, label, params, rung, fn, ref_fn, tol, timer):
    """Check fn() against the float64 reference, then time it: (rel_error, timing), or None
    after emitting a failed record (a failed check is never timed)."""
    try:
        err = labkit.rel_error(fn(), ref_fn())
    except Exception as e:
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
        return None
    if not err <= tol:
        labkit.failed(variant, label, params, "verify",
                      f"rel_error {err:.3e} exceeds tolerance {tol:.1e}", rung=rung)
        return None
    return err, timer(fn)


def main():
    dev = labkit.torch_device()
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    # bf16 through 8 layers lands near 1.5e-2 (2^-8 rounding per op); a stale or misplaced
    # KV-cache row gives errors of order 1.
    tol = 5e-2 if dtype == torch.bfloat16 else 1e-4
    elem = torch.finfo(dtype).bits // 8
    labkit.log(f"dllm_step on {dev}, {dtype}")
    for rung, (name, d, layers, heads, kv_heads, ffn, vocab) in enumerate(MODELS):
        w = make_weights(d, layers, heads, kv_heads, ffn, vocab, dev, dtype)
        w64 = make_weights(d, layers, heads, kv_heads, ffn, vocab, dev, torch.float64)
        for b in BATCHES:
            for n in CANVASES:
                params = {"d_model": d, "batch": b, "canvas": n}
                g = torch.Generator().manual_seed(labkit.SEED + n + b)
                tokens = torch.randint(0, vocab, (b, n), generator=g).to(dev)
                step_flops, step_bytes, ar_flops, ar_bytes = counts(
                    d, layers, heads, kv_heads, ffn, vocab, b, n, elem)
                labkit.log(f"{name} batch {b} canvas {n}")

                # AR first: its per-token time feeds the canvas record's break-even metric.
                kc = [torch.zeros(b, kv_heads, n, d // heads, device=dev, dtype=dtype) for _ in range(layers)]
                vc = [torch.zeros_like(t) for t in kc]
                ar = verify_and_time(
                    "ar_decode", f"AR decode, {name}", params, 2 * rung + 1,
                    lambda: ar_decode(w, tokens, kc, vc), lambda: reference(w64, tokens, causal=True),
                    tol, lambda f: labkit.time_torch(f, warmup=0, reps=AR_REPS))  # the check was the warm-up
                ar_token_ms = None
                if ar is not None:
                    err, timing = ar
                    ar_token_ms = timing["median_ms"] / n
                    labkit.ok("ar_decode", f"AR decode, {name}", params, timing, rel_error=err,
                              tolerance=tol, flops=ar_flops, bytes=ar_bytes, rung=2 * rung + 1,
                              metrics={"ar_token_ms": ar_token_ms, "tokens": n * b})
                del kc, vc

                step = verify_and_time(
                    "canvas_step", f"canvas step, {name}", params, 2 * rung,
                    lambda: canvas_step(w, tokens), lambda: reference(w64, tokens, causal=False),
                    tol, labkit.time_torch)
                if step is None:
                    continue
                err, timing = step
                metrics = {"step_ms": timing["median_ms"], "tokens": n * b}
                if ar_token_ms is not None:
                    metrics["ar_token_ms"] = ar_token_ms
                    metrics["breakeven_steps"] = n * ar_token_ms / timing["median_ms"]
                labkit.ok("canvas_step", f"canvas step, {name}", params, timing, rel_error=err,
                          tolerance=tol, flops=step_flops, bytes=step_bytes, rung=2 * rung,
                          metrics=metrics)
        del w, w64
        if dev == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
