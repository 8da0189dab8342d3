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

import torch
import torch.nn.functional as F

import qd_reference as ref
import qd_weights as qw
import quantize as qz

FP8 = qz.Fmt("fp8")


def w8a8_weights(model):
    """(codes [n, k] E4M3, scales [1, n]) of every projection of the FP8 decode model."""
    return [{name: (lin.codes.view(torch.float8_e4m3fn).reshape(lin.n, lin.k),
                    lin.scales.reshape(1, -1)) for name, lin in layer.items()}
            for layer in model.layers]


def fp8_linear(x, w):
    """y = (q(x) · codesᵀ) · scale_x · scale_w with per-token E4M3 activations."""
    codes, scale_w = w
    amax = x.float().abs().amax(-1, keepdim=True).clamp_min(1e-12)
    scale_x = amax / qz.FP8_MAX
    xq = (x.float() / scale_x).clamp(-qz.FP8_MAX, qz.FP8_MAX).to(torch.float8_e4m3fn)
    if not x.is_cuda:  # quick mode on a CPU: the same products in FP32, labelled as a stand-in
        return ((xq.float() * scale_x) @ (codes.float() * scale_w.t()).t()).to(torch.bfloat16)
    return torch._scaled_mm(xq, codes.t(), scale_a=scale_x, scale_b=scale_w,
                            out_dtype=torch.bfloat16)


def rope_all(x, t, s, device):
    """RoPE on [T, heads, 128] at positions 0 .. T−1 (complex products of pairs)."""
    inv = s.theta ** (-torch.arange(0, s.head_dim, 2, dtype=torch.float64) / s.head_dim)
    ang = torch.arange(t, dtype=torch.float64)[:, None] * inv
    rot = torch.polar(torch.ones_like(ang), ang).to(torch.complex64).to(device)[:, None]
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * rot).flatten(-2).to(torch.bfloat16)


# ANCHOR: prefill
def prefill(s, layers, linear, tokens, embed, lm_head):
    """Logits [1, vocab] of the last prompt token; `linear(x, w)` is the GEMM route."""
    t, dev = tokens.shape[0], tokens.device
    nq, nkv, g = s.hq * s.head_dim, s.hkv * s.head_dim, s.hq // s.hkv
    x = embed[tokens]
    ones = torch.ones(s.hidden, device=dev, dtype=torch.bfloat16)
    for w in layers:
        qkv = linear(F.rms_norm(x, (s.hidden,), ones, s.eps), w["qkv"])
        q = rope_all(qkv[:, :nq].reshape(t, s.hq, -1), t, s, dev)
        k = rope_all(qkv[:, nq:nq + nkv].reshape(t, s.hkv, -1), t, s, dev)
        v = qkv[:, nq + nkv:].reshape(t, s.hkv, -1)
        k, v = (z.transpose(0, 1).repeat_interleave(g, dim=0)[None] for z in (k, v))
        o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k, v, is_causal=True)
        x = x + linear(o[0].transpose(0, 1).reshape(t, nq), w["o"])
        gate, up = linear(F.rms_norm(x, (s.hidden,), ones, s.eps), w["gate_up"]).chunk(2, -1)
        x = x + linear(F.silu(gate) * up, w["down"])
    return F.rms_norm(x[-1:], (s.hidden,), ones, s.eps) @ lm_head.t()
# ANCHOR_END: prefill


def reference(s, fmt, tokens, seed, embed, lm_head):
    """FP32 last-token logits with the same weight values (BF16, or E4M3 codes × scales) and,
    for W8A8, the activations quantized per token and dequantized before each product."""
    t, dev = tokens.shape[0], tokens.device
    nq, nkv, g = s.hq * s.head_dim, s.hkv * s.head_dim, s.hq // s.hkv
    act = (lambda z: z) if fmt == "bf16" else (
        lambda z: qz.dequantize(*qz.quantize(z, FP8), z.shape))
    mask = torch.ones(t, t, dtype=torch.bool, device=dev).tril()
    x = embed[tokens].float()
    for l in range(s.layers):
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
