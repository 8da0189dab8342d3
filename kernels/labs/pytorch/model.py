"""The book's lab model `hdlc-lab`: a small decoder-only Transformer in plain PyTorch.

Why this file exists: the PyTorch paths build a language model piece by piece, and every piece a
card talks about is one small class here, included into the card by name. The other labs (forward
timing, training, profiling, CUDA graphs) import this module, so the code a reader sees is the
code that was measured. The JAX twin loads its weights from `build()` with the same seed.

Config `hdlc-lab` (byte-level): vocab 256, d_model 512, 8 layers, 8 query heads, 2 KV heads (GQA),
d_head 64, SwiGLU FFN 1536, RMSNorm eps 1e-5, RoPE theta 10000, untied LM head, context 256.
Every forward asserts the shapes it expects, so a wrong reshape fails loudly at the line it
happens instead of producing a plausible-looking wrong loss.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Config:
    vocab: int = 256
    d_model: int = 512
    n_layers: int = 8
    n_heads: int = 8
    n_kv_heads: int = 2
    d_head: int = 64
    ffn: int = 1536
    eps: float = 1e-5
    rope_theta: float = 10000.0
    context: int = 256
    attn: str = "sdpa"  # "sdpa" (F.scaled_dot_product_attention) or "manual" (matmul + softmax)


HDLC_LAB = Config()
# A tiny config with the same structure, for float64 gradient checks and CPU smoke tests.
TINY = Config(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_head=16, ffn=192, context=32)


class TokenEmbedding(nn.Module):
    """Byte id → row of a [vocab, d_model] table. A lookup, not a matmul: no FLOPs."""

    def __init__(self, cfg):
        super().__init__()
        self.table = nn.Parameter(torch.empty(cfg.vocab, cfg.d_model))

    def forward(self, tokens):
        assert tokens.dim() == 2 and tokens.dtype == torch.long, tokens.shape  # [B, S]
        return self.table[tokens]  # [B, S, d_model]


class RoPE(nn.Module):
    """Rotary position embedding: rotate each (x_i, x_{i+d/2}) pair of a head by angle p·θ_i.

    cos/sin are precomputed for every position up to the context length (buffers, not parameters).
    This is the "rotate half" layout used by Llama-style models: the pairs are (i, i + d_head/2).
    """

    def __init__(self, cfg):
        super().__init__()
        half = cfg.d_head // 2
        inv_freq = cfg.rope_theta ** (-torch.arange(half, dtype=torch.float64) / half)  # θ_i
        angles = torch.arange(cfg.context, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos", angles.cos().float(), persistent=False)  # [context, d_head/2]
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, x):
        B, H, S, D = x.shape
        assert S <= self.cos.shape[0] and D == 2 * self.cos.shape[1], x.shape
        cos = self.cos[:S].to(x.dtype)
        sin = self.sin[:S].to(x.dtype)
        x1, x2 = x[..., : D // 2], x[..., D // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # [B, H, S, D]


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) · w, computed in FP32 whatever the input dtype."""

    def __init__(self, cfg):
        super().__init__()
        self.eps = cfg.eps
        self.weight = nn.Parameter(torch.ones(cfg.d_model))

    def forward(self, x):
        assert x.shape[-1] == self.weight.shape[0], x.shape
        xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        r = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * r).to(x.dtype) * self.weight.to(x.dtype)


def causal_attention_manual(q, k, v):
    """softmax(Q·Kᵀ/√d + causal mask)·V written out: materializes the [B, H, S, S] scores."""
    S, D = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(D)  # [B, H, S, S]
    mask = torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return probs @ v  # [B, H, S, D]


class Attention(nn.Module):
    """Causal self-attention with grouped-query attention (GQA).

    n_heads query heads share n_kv_heads K/V heads: each K/V head serves n_heads / n_kv_heads
    query heads, so the K/V projections (and a KV cache) are that many times smaller.
    """

    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_heads % cfg.n_kv_heads == 0
        self.cfg = cfg
        self.wq = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_head, bias=False)
        self.wk = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.d_head, bias=False)
        self.wv = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.d_head, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.d_head, cfg.d_model, bias=False)
        self.rope = RoPE(cfg)

    def forward(self, x):
        c = self.cfg
        B, S, d = x.shape
        assert d == c.d_model, x.shape
        q = self.wq(x).view(B, S, c.n_heads, c.d_head).transpose(1, 2)  # [B, H, S, Dh]
        k = self.wk(x).view(B, S, c.n_kv_heads, c.d_head).transpose(1, 2)  # [B, Hkv, S, Dh]
        v = self.wv(x).view(B, S, c.n_kv_heads, c.d_head).transpose(1, 2)  # [B, Hkv, S, Dh]
        q, k = self.rope(q), self.rope(k)
        group = c.n_heads // c.n_kv_heads
        k = k.repeat_interleave(group, dim=1)  # [B, H, S, Dh]: query head h reads KV head h // group
        v = v.repeat_interleave(group, dim=1)
        if c.attn == "manual":
            o = causal_attention_manual(q, k, v)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert o.shape == (B, c.n_heads, S, c.d_head), o.shape
        return self.wo(o.transpose(1, 2).reshape(B, S, c.n_heads * c.d_head))  # [B, S, d]


class SwiGLU(nn.Module):
    """FFN(x) = W_down · (SiLU(W_gate · x) ⊙ W_up · x): three [d, ffn]-sized matrices."""

    def __init__(self, cfg):
        super().__init__()
        self.w_gate = nn.Linear(cfg.d_model, cfg.ffn, bias=False)
        self.w_up = nn.Linear(cfg.d_model, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, cfg.d_model, bias=False)

    def forward(self, x):
        h = F.silu(self.w_gate(x)) * self.w_up(x)  # [B, S, ffn]
        assert h.shape[-1] == self.w_gate.out_features, h.shape
        return self.w_down(h)  # [B, S, d]


class Block(nn.Module):
    """Pre-norm residual block: x + Attn(Norm(x)), then + MLP(Norm(x))."""

    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = RMSNorm(cfg)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg)
        self.mlp = SwiGLU(cfg)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        x = x + self.mlp(self.mlp_norm(x))
        return x


class Model(nn.Module):
    """Embedding → n_layers blocks → final RMSNorm → untied LM head: logits [B, S, vocab]."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = TokenEmbedding(cfg)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        self.final_norm = RMSNorm(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

    def forward(self, tokens):
        B, S = tokens.shape
        assert S <= self.cfg.context, f"sequence {S} longer than context {self.cfg.context}"
        x = self.embed(tokens)  # [B, S, d]
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.final_norm(x))
        assert logits.shape == (B, S, self.cfg.vocab), logits.shape
        return logits


def init_weights(model, seed=0):
    """Seeded init on the CPU (same numbers on every machine): N(0, 0.02) for matrices, the
    residual output projections (wo, w_down) scaled by 1/√(2·n_layers) as in GPT-2, norms = 1."""
    g = torch.Generator().manual_seed(seed)
    out_std = 0.02 / math.sqrt(2 * model.cfg.n_layers)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                std = out_std if name.endswith(("wo.weight", "w_down.weight")) else 0.02
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)
    return model


def build(cfg=HDLC_LAB, seed=0, device="cpu", dtype=torch.float32):
    """A model with seeded weights, moved to `device` and `dtype`."""
    return init_weights(Model(cfg), seed).to(device=device, dtype=dtype)


def param_count(cfg=HDLC_LAB):
    """Parameters by formula (the calculators' count): it must equal the module's own count."""
    d, hd = cfg.d_model, cfg.d_head
    attn = d * cfg.n_heads * hd * 2 + d * cfg.n_kv_heads * hd * 2  # wq, wo, wk, wv
    mlp = 3 * d * cfg.ffn
    norms = 2 * d
    return cfg.vocab * d + cfg.n_layers * (attn + mlp + norms) + d + d * cfg.vocab


def forward_flops(cfg, batch, seq):
    """Matmul FLOPs of one forward pass (2 per multiply-add). Attention's Q·Kᵀ and P·V are
    counted in full (S² per head), not halved for the causal mask, as MFU conventions do."""
    d, hd, H, Hk = cfg.d_model, cfg.d_head, cfg.n_heads, cfg.n_kv_heads
    tokens = batch * seq
    proj = 2 * tokens * d * (2 * H * hd + 2 * Hk * hd)  # Q, O and K, V projections
    scores = 2 * 2 * batch * H * seq * seq * hd  # Q·Kᵀ and P·V
    mlp = 2 * tokens * 3 * d * cfg.ffn
    head = 2 * tokens * d * cfg.vocab
    return cfg.n_layers * (proj + scores + mlp) + head


if __name__ == "__main__":
    m = build()
    n = sum(p.numel() for p in m.parameters())
    assert n == param_count(), (n, param_count())
    print(f"hdlc-lab parameters: {n:,}")
