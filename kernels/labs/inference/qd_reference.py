"""The check of a decode step: the same step in plain FP32 torch, written independently.

It draws each weight again from its seed and quantizes it with the same quantizer, then
multiplies codes × scales in FP32 (so the reference sees exactly the values the kernels
dequantize in registers); it reads K/V as codes × scales, quantizes the new token's K/V the same
way (quantize, then dequantize), rotates pairs with cos/sin in real arithmetic (the step uses
complex products), expands the KV heads to the query heads and applies softmax explicitly.
Layer by layer, so no FP32 copy of the whole 8B model is ever held.
"""

import math

import torch

import qd_model
import qd_weights as qw
import quantize as qz


def weight(s, fmt, seed, l, name, device):
    """The FP32 values the format's kernel multiplies: the BF16 master, or codes × scales."""
    w = qw.master(s, seed, l, name, device)
    if fmt == "bf16":
        return w.float()
    return qw.dequantize(*qw.quantize_matrix(w, fmt))


def fake_quant(x, kv_fmt):
    """The new K/V as the cache will hold them: BF16-rounded, or quantized and dequantized."""
    if kv_fmt == "bf16":
        return x.to(torch.bfloat16).float()
    codes, scale, zero = qz.quantize(x, qd_model.KV_FMT[kv_fmt])
    return qz.dequantize(codes, scale, zero, x.shape)


def rms(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rotate(x, pos, s):
    """RoPE on [b, heads, 128] by pairs (2i, 2i+1) at position pos (an int, or one per row)."""
    inv = s.theta ** (-torch.arange(0, s.head_dim, 2, dtype=torch.float64) / s.head_dim)
    ang = torch.as_tensor(pos, dtype=torch.float64).reshape(-1, 1, 1) * inv
    cos, sin = torch.cos(ang).float().to(x.device), torch.sin(ang).float().to(x.device)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)


def attention(q, k, v, s):
    """q [b, hq, d]; k, v [b, hkv, ctx, d] → [b, hq·d]."""
    g = s.hq // s.hkv
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    scores = torch.einsum("bhd,bhtd->bht", q, k) / math.sqrt(s.head_dim)
    return torch.einsum("bht,bhtd->bhd", torch.softmax(scores, -1), v).reshape(q.shape[0], -1)


def reference_step(s, fmt, kv, tokens, seed, embed, lm_head):
    """FP32 logits of one decode step, reading positions 0 .. ctx−2 from `kv` (unchanged by
    the step under test, which writes only position ctx − 1)."""
    dev, b, pos = tokens.device, tokens.shape[0], kv.ctx - 1
    nq, nkv = s.hq * s.head_dim, s.hkv * s.head_dim
    x = embed[tokens].float()
    for l in range(s.layers):
        W = {name: weight(s, fmt, seed, l, name, dev) for name in qw.MATRICES}
        qkv = rms(x, s.eps) @ W["qkv"].t()
        q = rotate(qkv[:, :nq].reshape(b, s.hq, -1), pos, s)
        k_new = rotate(qkv[:, nq:nq + nkv].reshape(b, s.hkv, -1), pos, s)
        v_new = qkv[:, nq + nkv:].reshape(b, s.hkv, -1)
        k, v = kv.dequantized(l)
        k = torch.cat([k[:, :, :pos], fake_quant(k_new, kv.fmt)[:, :, None]], dim=2)
        v = torch.cat([v[:, :, :pos], fake_quant(v_new, kv.fmt)[:, :, None]], dim=2)
        x = x + attention(q, k, v, s) @ W["o"].t()
        gate, up = (rms(x, s.eps) @ W["gate_up"].t()).chunk(2, dim=-1)
        x = x + (torch.nn.functional.silu(gate) * up) @ W["down"].t()
    return rms(x, s.eps) @ lm_head.float().t()
