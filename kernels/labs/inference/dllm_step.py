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
before they are timed.

AR is measured the way a serving engine runs decode: the per-token step is captured once in a
CUDA graph over static buffers (a full-length KV cache per layer, the token, the position as an
int64 tensor on the GPU), and a run of n tokens is n graph replays. Attention then reads the whole
preallocated cache with a mask of the positions not yet written, n keys at every step where a
paged decode kernel reads t + 1: that makes the measured AR slower than a real engine's, so the
break-even step count it gives leans towards the dLLM (for the wide model the extra cache reads
are a few per cent of the weight bytes). The canvas step is captured the same way, so both sides
pay the same (small) launch cost. Run eagerly, the AR loop is bound by Python's dispatch of a few
hundred small operations per token (seconds per run at n = 512, past the lab's time-out), so the
eager variants (`ar_decode_eager`, `canvas_step_eager`) are kept only for the small model at
canvas 128, as the measure of what the graph removes.
"""

import math
import pathlib
import sys
import time

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
EAGER = ("hdlc-lab", 128)  # the one (model, canvas) also measured without graphs, every batch
if labkit.QUICK:
    MODELS = [("tiny", 64, 2, 4, 2, 128, 64)]
    CANVASES = [16, 32]
    BATCHES = [1, 2]
    EAGER = ("tiny", 16)

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
    x = F.embedding(tokens, w["embed"])
    for lw in w["layers"]:
        q, k, v = qkv(w, lw, x, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=True)
        x = x + a.transpose(1, 2).reshape(b, n, -1) @ lw["wo"]
        x = x + mlp(lw, rms_norm(x))
    return rms_norm(x) @ w["head"]  # logits for all n positions
# ANCHOR_END: canvas_step


# ANCHOR: ar_decode
def cached_attention(q, k_cache, v_cache, future):
    """q [B, H, 1, dh] against the whole preallocated cache [B, Hkv, n, dh]; `future` [n] masks
    the rows not written yet. Every shape is fixed, so the step can live in a CUDA graph."""
    b, kv_heads, n, dh = k_cache.shape
    q = q.reshape(b, kv_heads, -1, dh)  # the q heads that share one kv head, as rows
    s = (q @ k_cache.transpose(-1, -2)) / math.sqrt(dh)  # [B, Hkv, H/Hkv, n]
    p = torch.softmax(s.float().masked_fill(future, -math.inf), -1).to(v_cache.dtype)
    return (p @ v_cache).reshape(b, 1, -1)  # head h = kv head h // (H/Hkv), as in the canvas


def decode_step(w, tok, pos, k_cache, v_cache, cos, sin, out):
    """One AR step over static buffers: token tok [B, 1] at position pos (a one-element int64
    tensor on the GPU). Writes the new K, V row of every layer at pos and the logits at out[:, pos];
    reads no Python number that changes, so one CUDA graph capture serves every position."""
    future = torch.arange(k_cache[0].shape[2], device=pos.device) > pos
    cos_t, sin_t = cos.index_select(0, pos), sin.index_select(0, pos)
    x = F.embedding(tok, w["embed"])  # [B, 1, d]
    for l, lw in enumerate(w["layers"]):
        q, k, v = qkv(w, lw, x, cos_t, sin_t)
        k_cache[l].index_copy_(2, pos, k)
        v_cache[l].index_copy_(2, pos, v)
        x = x + cached_attention(q, k_cache[l], v_cache[l], future) @ lw["wo"]
        x = x + mlp(lw, rms_norm(x))
    out.index_copy_(1, pos, rms_norm(x) @ w["head"])


def ar_decode(step, tokens, tok, pos, out):
    """Decode all n tokens: copy token t and position t into the static inputs (device-side
    copies, no host sync), then run the step (a graph replay, or the eager step)."""
    positions = torch.arange(tokens.shape[1], device=tokens.device)
    for t in range(tokens.shape[1]):
        tok.copy_(tokens[:, t: t + 1])
        pos.copy_(positions[t: t + 1])
        step()
    return out  # logits of all n positions, [B, n, vocab]
# ANCHOR_END: ar_decode


def capture(fn):
    """Capture fn() in a CUDA graph and return a function that replays it and returns what the
    captured call returned. Two warm-up calls on a side stream first, as PyTorch asks (cuBLAS
    workspaces, lazy allocations)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = fn()

    def replay():
        graph.replay()
        return result

    # The graph reads and writes the tensors fn closes over at fixed addresses: keep fn (and
    # so them) alive as long as the replay. Freed, their memory goes to other tensors, and the
    # graph's cache writes would corrupt those (positions, tokens) behind PyTorch's back.
    replay.keep_alive = fn
    return replay


def ar_runner(w, tokens, vocab, graphed):
    """The static buffers of one AR run (a full-length KV cache per layer, token, position,
    logits) and a function that decodes `tokens` [B, n] with them, one graph replay per token."""
    (b, n), dev = tokens.shape, tokens.device
    dtype, kv_heads, dh = w["embed"].dtype, w["kv_heads"], w["dh"]
    cos, sin = rope_table(n, dh, dev, dtype)
    kc = [torch.zeros(b, kv_heads, n, dh, device=dev, dtype=dtype) for _ in w["layers"]]
    vc = [torch.zeros_like(t) for t in kc]
    tok = torch.zeros(b, 1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    out = torch.zeros(b, n, vocab, device=dev, dtype=dtype)

    def step():
        decode_step(w, tok, pos, kc, vc, cos, sin, out)

    run_step = capture(step) if graphed else step
    return lambda: ar_decode(run_step, tokens, tok, pos, out)


def canvas_runner(w, tokens, graphed):
    """canvas_step on fixed tokens: eager, or captured once and replayed (its logits then live in
    the graph's memory pool and every replay rewrites them)."""
    step = lambda: canvas_step(w, tokens)  # noqa: E731
    return capture(step) if graphed else step


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
    # AR: position t meets t+1 positions; summed over t = n(n+1)/2. Its cache reads are counted
    # as run: the padded cache is read in full (n rows) at every one of the n steps.
    ar_flops = 2 * b * n * (layers * lin + d * vocab) + layers * 4 * b * heads * dh * n * (n + 1) // 2
    kv_read = layers * 2 * b * kv_heads * dh * elem * n * n
    return step_flops, weight_bytes, ar_flops, n * weight_bytes + kv_read


def verify_and_time(variant, label, params, rung, make, ref, tol, timer):
    """Build the runner (make() may capture a graph), check its output against the float64
    reference, then time it: (rel_error, timing), or None after emitting a failed record (a
    failed check is never timed)."""
    try:
        fn = make()
        err = labkit.rel_error(fn(), ref)
    except Exception as e:
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
        return None
    if not err <= tol:
        labkit.failed(variant, label, params, "verify",
                      f"rel_error {err:.3e} exceeds tolerance {tol:.1e}", rung=rung)
        return None
    try:
        return err, timer(fn)
    except Exception as e:
        labkit.failed(variant, label, params, "launch", f"{type(e).__name__}: {e}", rung=rung)
        return None


def main():
    t_start = time.perf_counter()
    dev = labkit.torch_device()
    graphs = dev == "cuda"  # off the GPU (a QUICK smoke test) every variant runs eagerly
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    # bf16 through 8 layers lands near 1.5e-2 (2^-8 rounding per op); a stale or misplaced
    # KV-cache row gives errors of order 1.
    tol = 5e-2 if dtype == torch.bfloat16 else 1e-4
    elem = torch.finfo(dtype).bits // 8
    labkit.log(f"dllm_step on {dev}, {dtype}, CUDA graphs: {graphs}")
    eager_rung = 2 * len(MODELS)
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
                labkit.log(f"{name} batch {b} canvas {n} ({time.perf_counter() - t_start:.1f} s)")
                # (graphed, variant suffix, rung of the AR record): the eager pair only for EAGER.
                kinds = [(True, "", 2 * rung)]
                if (name, n) == EAGER:
                    kinds.append((False, "_eager", eager_rung))

                # AR first: its per-token time feeds the canvas record's break-even metric.
                ref = reference(w64, tokens, causal=True)
                ar_token_ms = {}
                for graphed, suffix, r in kinds:
                    how = "CUDA graph" if graphed and graphs else "eager"
                    label = f"AR decode ({how}), {name}"
                    ar = verify_and_time(
                        "ar_decode" + suffix, label, params, r + 1,
                        lambda: ar_runner(w, tokens, vocab, graphed and graphs),
                        ref, tol,  # the check run was the warm-up
                        lambda run: labkit.time_torch(run, warmup=0))
                    if ar is None:
                        continue
                    err, timing = ar
                    ar_token_ms[suffix] = timing["median_ms"] / n
                    labkit.ok("ar_decode" + suffix, label, params, timing, rel_error=err,
                              tolerance=tol, flops=ar_flops, bytes=ar_bytes, rung=r + 1,
                              metrics={"ar_token_ms": ar_token_ms[suffix], "tokens": n * b})

                ref = reference(w64, tokens, causal=False)
                for graphed, suffix, r in kinds:
                    how = "CUDA graph" if graphed and graphs else "eager"
                    label = f"canvas step ({how}), {name}"
                    step = verify_and_time(
                        "canvas_step" + suffix, label, params, r,
                        lambda: canvas_runner(w, tokens, graphed and graphs), ref, tol,
                        labkit.time_torch)
                    if step is None:
                        continue
                    err, timing = step
                    metrics = {"step_ms": timing["median_ms"], "tokens": n * b}
                    if suffix in ar_token_ms:
                        metrics["ar_token_ms"] = ar_token_ms[suffix]
                        metrics["breakeven_steps"] = n * ar_token_ms[suffix] / timing["median_ms"]
                    labkit.ok("canvas_step" + suffix, label, params, timing, rel_error=err,
                              tolerance=tol, flops=step_flops, bytes=step_bytes, rung=r,
                              metrics=metrics)
                del ref
        del w, w64
        if dev == "cuda":
            torch.cuda.empty_cache()
    labkit.log(f"dllm_step done in {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
