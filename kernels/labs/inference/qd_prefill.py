"""Prefill (time to first token) of one prompt: BF16 GEMMs against W8A8 FP8 GEMMs.

Why prefill too: decode is memory-bound and gains from fewer weight bytes, but a prompt of
thousands of tokens is compute-bound, and there only an FP8 GEMM (twice BF16's tensor-core
rate on Hopper) helps. W8A8 here: the weights are the FP8 E4M3 per-channel codes of the decode
model; each activation is quantized per token (row) to E4M3 on the fly, and the product is
torch._scaled_mm with row-wise scales (scale_a [T, 1], scale_b [1, N], FP32) and a BF16 output:
cuBLASLt's FP8 GEMM through PyTorch, not the book's own (that one lives in the Rust harness's
tc_gemm family). Attention is the same in both: SDPA with a causal mask (K/V expanded to the
query heads), BF16. TTFT = the forward pass of the whole prompt and the LM head on its last
token, eager (at this size launches are noise).
"""

import labkit
import torch
import torch.nn.functional as F

import qd_reference as ref
import qd_weights as qw
import quantize as qz

FP8 = qz.Fmt("fp8")


def w8a8_weights(model):
    """(codes [n, k] E4M3, scales [1, n]) of every projection of the FP8 decode model: its codes
    back in row order (the decode GEMV reads them in MMA-fragment order), a second copy."""
    unpack = qw.unpack_w8_mma
    return [{name: (unpack(lin.codes.reshape(lin.n, lin.k)).view(torch.float8_e4m3fn),
                    lin.scales.reshape(1, -1)) for name, lin in layer.items()}
            for layer in model.layers]


def _quantize_rows(x):
    """Per-token E4M3 codes and FP32 scales (absmax / 448), quantize.py's FP8 format."""
    xf = x.float()
    scale = xf.abs().amax(-1, keepdim=True).clamp_min(1e-12) / qz.FP8_MAX
    return (xf / scale).clamp(-qz.FP8_MAX, qz.FP8_MAX).to(torch.float8_e4m3fn), scale


_fused = None


def quantize_rows(x):
    """On the GPU one torch.compile'd (Triton) kernel per shape: eager, the five passes over a
    [T, 14336] FP32 copy of the activations would cost as much as the FP8 GEMM saves."""
    global _fused
    if not x.is_cuda:
        return _quantize_rows(x)
    if _fused is None:
        import torch._dynamo as dynamo
        dynamo.config.cache_size_limit = max(dynamo.config.cache_size_limit, 64)
        _fused = torch.compile(_quantize_rows, dynamic=False)
    return _fused(x)


def fp8_linear(x, w):
    """y = (q(x) · codesᵀ) · scale_x · scale_w with per-token E4M3 activations."""
    codes, scale_w = w
    xq, scale_x = quantize_rows(x)
    if not x.is_cuda:  # quick mode on a CPU: the same products in FP32, labelled as a stand-in
        return ((xq.float() * scale_x) @ (codes.float() * scale_w.t()).t()).to(torch.bfloat16)
    return torch._scaled_mm(xq, codes.t(), scale_a=scale_x, scale_b=scale_w,
                            out_dtype=torch.bfloat16)


def gemm_error(w8, s, seed, t, device):
    """The W8A8 check: the largest ‖y − ŷ‖/‖ŷ‖ over layer 0's four projections, y from
    fp8_linear on random BF16 activations [t, k], ŷ = FP32 products of the same per-token E4M3
    codes × scales and the dequantized weight. Per GEMM and not through the model: a whole-model
    reference quantizes its own (FP32) activations, and wherever BF16 rounding moved a value
    across an E4M3 rounding boundary it picks the neighbouring code, 12.5% apart; through even
    one random layer those flips move the logits by several percent, as much as a bug would."""
    g = torch.Generator(device=device)
    g.manual_seed(seed % (1 << 63))  # the runner's seeds use all 64 bits
    err = 0.0
    for name, w in w8[0].items():
        x = torch.randn(t, w[0].shape[1], generator=g, device=device).to(torch.bfloat16)
        x_hat = qz.dequantize(*qz.quantize(x.float(), FP8), x.shape)
        want = x_hat @ ref.weight(s, "fp8", seed, 0, name, device).t()
        err = max(err, labkit.rel_error(fp8_linear(x, w).float(), want))
    return err


def rope_table(t, s, device):
    """cos + i·sin of RoPE's frequencies at positions 0 .. T−1: [T, 1, 64]."""
    inv = s.theta ** (-torch.arange(0, s.head_dim, 2, dtype=torch.float64) / s.head_dim)
    ang = torch.arange(t, dtype=torch.float64)[:, None] * inv
    return torch.polar(torch.ones_like(ang), ang).to(torch.complex64).to(device)[:, None]


def rope_all(x, rot):
    """RoPE on [T, heads, 128] (complex products of pairs)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * rot).flatten(-2).to(torch.bfloat16)


# ANCHOR: prefill
def prefill(s, layers, linear, tokens, embed, lm_head):
    """Logits [1, vocab] of the last prompt token; `linear(x, w)` is the GEMM route."""
    t, dev = tokens.shape[0], tokens.device
    nq, nkv, g = s.hq * s.head_dim, s.hkv * s.head_dim, s.hq // s.hkv
    x, rot = embed[tokens], rope_table(t, s, dev)
    ones = torch.ones(s.hidden, device=dev, dtype=torch.bfloat16)
    for w in layers:
        qkv = linear(F.rms_norm(x, (s.hidden,), ones, s.eps), w["qkv"])
        q = rope_all(qkv[:, :nq].reshape(t, s.hq, -1), rot)
        k = rope_all(qkv[:, nq:nq + nkv].reshape(t, s.hkv, -1), rot)
        v = qkv[:, nq + nkv:].reshape(t, s.hkv, -1)
        k, v = (z.transpose(0, 1).repeat_interleave(g, dim=0)[None] for z in (k, v))
        o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k, v, is_causal=True)
        x = x + linear(o[0].transpose(0, 1).reshape(t, nq), w["o"])
        gate, up = linear(F.rms_norm(x, (s.hidden,), ones, s.eps), w["gate_up"]).chunk(2, -1)
        x = x + linear(F.silu(gate) * up, w["down"])
    return F.rms_norm(x[-1:], (s.hidden,), ones, s.eps) @ lm_head.t()
# ANCHOR_END: prefill


def reference(s, fmt, tokens, seed, embed, lm_head, n_layers):
    """FP32 last-token logits through the first `n_layers` layers, with the same weight values
    (BF16, or E4M3 codes × scales) and, for W8A8, the activations quantized per token and
    dequantized before each product."""
    t, dev = tokens.shape[0], tokens.device
    nq, nkv, g = s.hq * s.head_dim, s.hkv * s.head_dim, s.hq // s.hkv
    act = (lambda z: z) if fmt == "bf16" else (
        lambda z: qz.dequantize(*qz.quantize(z, FP8), z.shape))
    mask = torch.ones(t, t, dtype=torch.bool, device=dev).tril()
    x = embed[tokens].float()
    for l in range(n_layers):
        W = {n: ref.weight(s, fmt, seed, l, n, dev) for n in qw.MATRICES}
        qkv = act(ref.rms(x, s.eps)) @ W["qkv"].t()
        pos = torch.arange(t)
        q = ref.rotate(qkv[:, :nq].reshape(t, s.hq, -1), pos, s)
        k = ref.rotate(qkv[:, nq:nq + nkv].reshape(t, s.hkv, -1), pos, s).repeat_interleave(g, 1)
        v = qkv[:, nq + nkv:].reshape(t, s.hkv, -1).repeat_interleave(g, dim=1)
        sc = torch.einsum("qhd,khd->hqk", q, k) / s.head_dim ** 0.5
        p = torch.softmax(sc.masked_fill(~mask, float("-inf")), -1)
        x = x + act(torch.einsum("hqk,khd->qhd", p, v).reshape(t, nq)) @ W["o"].t()
        gate, up = (act(ref.rms(x, s.eps)) @ W["gate_up"].t()).chunk(2, -1)
        x = x + act(F.silu(gate) * up) @ W["down"].t()
    return ref.rms(x[-1:], s.eps) @ lm_head.float().t()
