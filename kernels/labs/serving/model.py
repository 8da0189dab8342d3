"""A Qwen3-0.6B-shaped decoder with seeded random weights: the model every serving snapshot runs.

Why its own module: the eight engine snapshots change only how tokens are scheduled and where
keys and values live, never the model. So the model exposes one explicit seam for the KV cache:
`forward(ids, pos, attend)` computes every layer, and at each layer hands the rotated q, k, v to
`attend(layer, q, k, v)`, which the engine supplies. An engine without a cache attends over the
k, v it was given; an engine with a cache writes k, v into it and attends over what it holds.

Random weights, chosen so that greedy decoding is a robust test: layer weights have unit gain
(std 1/sqrt(fan_in)), so what attention brings from the context dominates the hidden state; the
tied embedding is small (std 0.02), so a token does not simply predict itself through the tied
head; and the final norm's gain is set so that logits have a standard deviation near 10, so the
top-1 token wins by a wide margin. Two correct engines that differ only
in rounding then pick the same tokens, and a wrong cache picks different ones.
"""

import dataclasses
import math

import torch
import torch.nn.functional as F


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn: int
    eps: float
    rope_theta: float
    max_pos: int = 4096


# qwen3-0.6b: vocab 151936, d 1024, 28 layers, 16 q heads, 8 kv heads, head_dim 128, ffn 3072,
# RMSNorm 1e-6 with q/k norm, RoPE theta 1e6, tied embeddings.
QWEN3_06B = Config(151936, 1024, 28, 16, 8, 128, 3072, 1e-6, 1e6)
# A tiny model of the same structure for smoke tests on a CPU (HDLC_LAB_QUICK=1).
TINY = Config(512, 64, 2, 4, 2, 16, 128, 1e-6, 1e6, max_pos=512)


def rmsnorm_eager(x, w, eps):
    """RMSNorm as PyTorch ops: square, mean, rsqrt, two multiplies (several kernels)."""
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return x32.to(x.dtype) * w


def apply_rope(x, cos, sin):
    """Rotate-half RoPE on [..., T, heads, head_dim]; cos/sin are [..., T, 1, head_dim/2]."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model:
    """Weights as plain tensors and a forward pass; no nn.Module, nothing hidden."""

    def __init__(self, cfg, dtype, device, seed=1234):
        self.cfg, self.dtype, self.device = cfg, dtype, torch.device(device)
        self.rmsnorm = rmsnorm_eager  # swappable: the kernels lab puts a fused Triton kernel here
        g = torch.Generator(device=self.device).manual_seed(seed)

        def rand(*shape, std):
            t = torch.randn(*shape, generator=g, device=self.device, dtype=torch.float32)
            return (t * std).to(dtype)

        d, hd = cfg.d_model, cfg.head_dim
        qkv_out = (cfg.n_heads + 2 * cfg.n_kv_heads) * hd
        self.embed = rand(cfg.vocab, d, std=0.02)  # tied: also the LM head
        self.layers = []
        for _ in range(cfg.n_layers):
            self.layers.append({
                "ln1": torch.ones(d, dtype=dtype, device=self.device),
                "wqkv": rand(qkv_out, d, std=1 / math.sqrt(d)),
                "q_norm": torch.ones(hd, dtype=dtype, device=self.device),
                "k_norm": torch.ones(hd, dtype=dtype, device=self.device),
                "wo": rand(d, cfg.n_heads * hd, std=1 / math.sqrt(cfg.n_heads * hd)),
                "ln2": torch.ones(d, dtype=dtype, device=self.device),
                "w_gate_up": rand(2 * cfg.ffn, d, std=1 / math.sqrt(d)),
                "w_down": rand(d, cfg.ffn, std=1 / math.sqrt(cfg.ffn)),
            })
        # gain 10 / (0.02 * sqrt(d)): a unit-RMS hidden state gives logits of standard deviation ~10
        self.final_norm = torch.full((d,), 10.0 / (0.02 * math.sqrt(d)), dtype=dtype, device=self.device)
        inv_freq = 1.0 / cfg.rope_theta ** (torch.arange(0, hd, 2, device=self.device).double() / hd)
        angles = torch.arange(cfg.max_pos, device=self.device).double()[:, None] * inv_freq[None, :]
        self.cos, self.sin = angles.cos().to(dtype), angles.sin().to(dtype)

    def kv_bytes_per_token(self):
        """Bytes one token's keys and values take in the cache, over all layers."""
        c = self.cfg
        return c.n_layers * 2 * c.n_kv_heads * c.head_dim * torch.finfo(self.dtype).bits // 8

    def forward(self, ids, pos, attend):
        """ids, pos: integer tensors of the same shape [..., T]. Returns final-normed hidden states
        [..., T, d]. At layer l, attend(l, q, k, v) gets q [..., T, H, D] and k, v [..., T, KV, D]
        (RoPE applied) and must return the attention output [..., T, H, D]."""
        c = self.cfg
        x = self.embed[ids]
        cos, sin = self.cos[pos].unsqueeze(-2), self.sin[pos].unsqueeze(-2)
        for l, w in enumerate(self.layers):
            h = self.rmsnorm(x, w["ln1"], c.eps)
            qkv = h @ w["wqkv"].t()
            q, k, v = qkv.split([c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim,
                                 c.n_kv_heads * c.head_dim], dim=-1)
            q = q.unflatten(-1, (c.n_heads, c.head_dim))
            k = k.unflatten(-1, (c.n_kv_heads, c.head_dim))
            v = v.unflatten(-1, (c.n_kv_heads, c.head_dim))
            q = apply_rope(self.rmsnorm(q, w["q_norm"], c.eps), cos, sin)
            k = apply_rope(self.rmsnorm(k, w["k_norm"], c.eps), cos, sin)
            o = attend(l, q, k, v)
            x = x + o.flatten(-2) @ w["wo"].t()
            h = self.rmsnorm(x, w["ln2"], c.eps)
            gate, up = (h @ w["w_gate_up"].t()).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ w["w_down"].t()
        return self.rmsnorm(x, self.final_norm, c.eps)

    def logits(self, h):
        """LM head (tied to the embedding), computed only for the rows the caller samples from."""
        return (h @ self.embed.t()).float()


def sdpa(q, k, v, mask=None, causal=False):
    """Attention on [B, T, H, D] / [B, S, KV, D] layouts through PyTorch SDPA (GQA aware).
    mask: bool [B, T, S] (True = may attend) or None."""
    o = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
        attn_mask=None if mask is None else mask[:, None], is_causal=causal, enable_gqa=True)
    return o.transpose(1, 2)
