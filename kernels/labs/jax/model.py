"""The book's lab model `hdlc-lab`, written the JAX way: pure functions over a parameter pytree.

This is the twin of kernels/labs/pytorch/model.py. Where PyTorch keeps weights inside
nn.Module objects and draws random numbers from a hidden global generator, here

* the parameters are a plain pytree (nested dicts and lists of arrays) that is passed in and
  returned explicitly, so jax.jit, jax.grad and optax can all see and transform it;
* randomness comes only from PRNG keys that the caller splits and hands down, so the same key
  always gives the same weights, on any device;
* every function is pure: same inputs, same outputs, no state changed on the side.

Weights of linear layers are stored as [in, out] so that a layer is `x @ w`; PyTorch's
nn.Linear stores [out, in], and `from_torch_state_dict` transposes when it converts.
"""

import dataclasses
import math

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Config:
    """`hdlc-lab`: byte-level decoder, the same numbers as the PyTorch lab model."""
    vocab: int = 256
    d_model: int = 512
    n_layers: int = 8
    n_heads: int = 8
    n_kv_heads: int = 2          # grouped-query attention: 4 query heads share one K/V head
    d_head: int = 64
    ffn: int = 1536              # SwiGLU hidden width
    eps: float = 1e-5            # RMSNorm
    rope_theta: float = 10000.0
    context: int = 256


HDLC_LAB = Config()
# Same structure, small enough for float64 gradient checks and CPU smoke tests (as the PyTorch TINY).
TINY = Config(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_head=16, ffn=192, context=32)


# ANCHOR: init
def init_layer(key, cfg):
    """One block's weights from one key: split it, one sub-key per matrix."""
    kq, kk, kv, ko, kg, ku, kd = jax.random.split(key, 7)
    d, hq, hkv, f = cfg.d_model, cfg.n_heads * cfg.d_head, cfg.n_kv_heads * cfg.d_head, cfg.ffn

    out_std = 0.02 / math.sqrt(2 * cfg.n_layers)   # residual outputs scaled down, as in GPT-2

    def dense(k, fan_in, fan_out, std=0.02):
        return jax.random.normal(k, (fan_in, fan_out), jnp.float32) * std

    return {
        "attn_norm": jnp.ones((d,), jnp.float32),
        "wq": dense(kq, d, hq), "wk": dense(kk, d, hkv), "wv": dense(kv, d, hkv),
        "wo": dense(ko, hq, d, out_std),
        "mlp_norm": jnp.ones((d,), jnp.float32),
        "w_gate": dense(kg, d, f), "w_up": dense(ku, d, f), "w_down": dense(kd, f, d, out_std),
    }


def init_params(key, cfg):
    """The whole parameter pytree. No global seed anywhere: the key is the only randomness."""
    k_emb, k_head, *k_layers = jax.random.split(key, 2 + cfg.n_layers)
    return {
        "embed": jax.random.normal(k_emb, (cfg.vocab, cfg.d_model), jnp.float32) * 0.02,
        "layers": [init_layer(k, cfg) for k in k_layers],
        "final_norm": jnp.ones((cfg.d_model,), jnp.float32),
        "lm_head": jax.random.normal(k_head, (cfg.d_model, cfg.vocab), jnp.float32) * 0.02,
    }
# ANCHOR_END: init


def param_count(params):
    """Number of scalars in the pytree (leaves are arrays)."""
    return sum(int(x.size) for x in jax.tree.leaves(params))


def cast_params(params, dtype):
    """Every leaf converted to `dtype` (e.g. bfloat16 for a BF16 forward)."""
    return jax.tree.map(lambda x: x.astype(dtype), params)


def rms_norm(x, w, eps):
    """y = x / sqrt(mean(x^2) + eps) * w, the statistic computed in float32."""
    x32 = x.astype(jnp.float32)
    r = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (x32 * r).astype(x.dtype) * w


def rope_tables(seq, d_head, theta):
    """cos and sin of shape [seq, d_head/2]: angle = position * theta^(-2i/d_head)."""
    inv_freq = theta ** (-jnp.arange(0, d_head, 2, dtype=jnp.float32) / d_head)
    angles = jnp.arange(seq, dtype=jnp.float32)[:, None] * inv_freq[None, :]
    return jnp.cos(angles), jnp.sin(angles)


def apply_rope(x, cos, sin):
    """Rotate pairs (x[i], x[i + d/2]) of x [batch, seq, heads, d_head] by the position's angle."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].astype(jnp.float32), x[..., half:].astype(jnp.float32)
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return jnp.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1).astype(x.dtype)


def attention(p, x, cos, sin, cfg):
    """Causal grouped-query self-attention. x: [B, S, d_model] -> [B, S, d_model]."""
    b, s, _ = x.shape
    q = (x @ p["wq"]).reshape(b, s, cfg.n_heads, cfg.d_head)
    k = (x @ p["wk"]).reshape(b, s, cfg.n_kv_heads, cfg.d_head)
    v = (x @ p["wv"]).reshape(b, s, cfg.n_kv_heads, cfg.d_head)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    group = cfg.n_heads // cfg.n_kv_heads
    k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)   # [B, S, H, d_head]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / math.sqrt(cfg.d_head)
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    scores = jnp.where(causal, scores, -jnp.inf)
    probs = jax.nn.softmax(scores, axis=-1).astype(x.dtype)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, cfg.n_heads * cfg.d_head)
    return out @ p["wo"]


def swiglu_mlp(p, x):
    """down(silu(x @ w_gate) * (x @ w_up))."""
    return (jax.nn.silu(x @ p["w_gate"]) * (x @ p["w_up"])) @ p["w_down"]


def block(p, x, cos, sin, cfg):
    """Pre-norm block: x + attention(norm(x)), then + mlp(norm(.))."""
    x = x + attention(p, rms_norm(x, p["attn_norm"], cfg.eps), cos, sin, cfg)
    return x + swiglu_mlp(p, rms_norm(x, p["mlp_norm"], cfg.eps))


def forward(params, tokens, cfg):
    """tokens [B, S] int32 -> logits [B, S, vocab] (in the parameters' dtype)."""
    _, s = tokens.shape
    cos, sin = rope_tables(s, cfg.d_head, cfg.rope_theta)
    x = params["embed"][tokens]
    for p in params["layers"]:
        x = block(p, x, cos, sin, cfg)
    return rms_norm(x, params["final_norm"], cfg.eps) @ params["lm_head"]


def next_token_loss(params, tokens, cfg):
    """Mean cross-entropy of predicting tokens[:, 1:] from tokens[:, :-1], in float32 (nats)."""
    logits = forward(params, tokens[:, :-1], cfg).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    target = tokens[:, 1:]
    return -jnp.mean(jnp.take_along_axis(logp, target[..., None], axis=-1))


def flops_per_token(cfg, seq):
    """Forward FLOPs per token: 2 per weight of every matmul, plus attention's QK^T and PV.

    Matmul weights per layer: d*(hq + 2*hkv) + hq*d + 3*d*f, plus the LM head d*vocab. The
    embedding is a lookup (no FLOPs). Attention scores and PV cost 2*2*seq*hq per token if every
    key is counted (the usual convention, causal masking ignored). Training is 3x this. Times
    batch*seq tokens this is exactly forward_flops of the PyTorch lab model.
    """
    d, hq, hkv = cfg.d_model, cfg.n_heads * cfg.d_head, cfg.n_kv_heads * cfg.d_head
    per_layer = d * (hq + 2 * hkv) + hq * d + 3 * d * cfg.ffn
    matmul_weights = cfg.n_layers * per_layer + d * cfg.vocab
    return 2 * matmul_weights + cfg.n_layers * 4 * seq * hq


def from_torch_state_dict(sd, cfg):
    """Convert the PyTorch lab model's state_dict (tensors or numpy arrays) to this pytree.

    nn.Linear keeps weight as [out, in]; here a layer is x @ w with w [in, out], so every linear
    weight is transposed. Names follow kernels/labs/pytorch/model.py.
    """
    import numpy as np

    def arr(name, transpose=False):
        t = sd[name]
        a = t.detach().float().cpu().numpy() if hasattr(t, "detach") else np.asarray(t, np.float32)
        return jnp.asarray(a.T if transpose else a)

    layers = []
    for i in range(cfg.n_layers):
        pre = f"blocks.{i}."
        layers.append({
            "attn_norm": arr(pre + "attn_norm.weight"),
            "wq": arr(pre + "attn.wq.weight", True), "wk": arr(pre + "attn.wk.weight", True),
            "wv": arr(pre + "attn.wv.weight", True), "wo": arr(pre + "attn.wo.weight", True),
            "mlp_norm": arr(pre + "mlp_norm.weight"),
            "w_gate": arr(pre + "mlp.w_gate.weight", True), "w_up": arr(pre + "mlp.w_up.weight", True),
            "w_down": arr(pre + "mlp.w_down.weight", True),
        })
    return {"embed": arr("embed.table"), "layers": layers,
            "final_norm": arr("final_norm.weight"), "lm_head": arr("lm_head.weight", True)}
