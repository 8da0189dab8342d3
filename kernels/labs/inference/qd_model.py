"""A decode-only model runner: one token per sequence through 32 Llama-3 layers and the LM head.

Why decode only: TPOT is one decode step, and a decode step reads every weight once and the
whole KV cache once, whatever the batch: at batch 1 to 32 that makes it memory-bound, so fewer
bytes per weight (or per cached token) should show up almost one for one in the time.

The step is written for CUDA-graph capture: every buffer it writes in place (the cache, the
attention workspaces) exists before capture, and the position is fixed, so a replay repeats the
same step. It runs at context `ctx`: the cache holds ctx − 1 earlier tokens, the new token's K/V
(quantized per token and KV head for INT8/FP8, with quantize.py's quantizer) are written at
position ctx − 1, and attention reads all ctx. Replays rewrite that same slot, so every timed
step does identical work.

Activations: the BF16 route (torch.matmul = cuBLAS) keeps them in BF16 like a BF16 checkpoint;
the quantized routes keep them in FP32, because the book's GEMV kernels take FP32 X and write
FP32 Y. Attention takes Q in BF16 and writes O in BF16 (the kernels' contract) in both routes.
"""

import torch
import torch.nn.functional as F

import qd_weights as qw
import quantize as qz

KV_FMT = {"int8": qz.Fmt("int", 8), "fp8": qz.Fmt("fp8")}
KV_DTYPE = {"bf16": torch.bfloat16, "int8": torch.int8, "fp8": torch.float8_e4m3fn}


class Linear:
    """One projection in one format: BF16 weight for cuBLAS, or codes + scales for the book's
    kernel (and, off the GPU, the dequantized FP32 weight its torch stand-in multiplies)."""

    def __init__(self, w_bf16, fmt, kernels):
        self.fmt, self.kernels = fmt, kernels
        self.n, self.k = w_bf16.shape
        self.w = self.codes = self.scales = self.deq = None
        if fmt == "bf16":
            self.w = w_bf16
            return
        codes, scales = qw.quantize_matrix(w_bf16, fmt)
        self.codes, self.scales = qw.kernel_layout(codes, scales, fmt)
        if not kernels.libs:  # the torch stand-in multiplies the dequantized values
            self.deq = qw.dequantize(codes, scales)

    def __call__(self, x):
        if self.fmt == "bf16":
            return x @ self.w.t()
        return self.kernels.gemv(self.fmt, self.codes, self.scales, x, self.n, self.k, self.deq)

    def bytes(self):
        if self.fmt == "bf16":
            return qw.stored_bytes(self.w)
        codes = self.n * self.k // (2 if self.fmt == "int4" else 1)
        return codes + qw.stored_bytes(self.scales)


class Model:
    """All layers of one weight format, the BF16 embedding, LM head and norms."""

    def __init__(self, s, fmt, seed, device, kernels, shared):
        self.s, self.fmt, self.kernels = s, fmt, kernels
        self.act = torch.bfloat16 if fmt == "bf16" else torch.float32
        self.embed, self.lm_head = shared["embed"], shared["lm_head"]
        self.layers = [{name: Linear(qw.master(s, seed, l, name, device), fmt, kernels)
                        for name in qw.MATRICES} for l in range(s.layers)]
        # RMSNorm gains: ones (Llama's initialisation), in the route's activation dtype.
        self.norm = torch.ones(s.hidden, device=device, dtype=self.act)

    def weight_bytes(self, batch):
        """Bytes one step reads: every projection, the LM head, the norm gains, `batch` rows of
        the embedding."""
        s = self.s
        lin = sum(m.bytes() for layer in self.layers for m in layer.values())
        norms = (2 * s.layers + 1) * qw.stored_bytes(self.norm)
        return lin + qw.stored_bytes(self.lm_head) + norms + batch * s.hidden * 2


class KvCache:
    """K and V of every layer in one tensor [L, 2, b, hkv, ctx, 128] (codes) and, for INT8/FP8,
    one FP32 scale per (layer, K|V, sequence, KV head, token): the layout the kernels read."""

    def __init__(self, s, fmt, b, ctx, seed, device):
        self.s, self.fmt, self.b, self.ctx = s, fmt, b, ctx
        shape = (s.layers, 2, b, s.hkv, ctx, s.head_dim)
        self.codes = torch.empty(shape, device=device, dtype=KV_DTYPE[fmt])
        self.scales = None if fmt == "bf16" else torch.empty(shape[:-1], device=device)
        g = torch.Generator(device=device)
        g.manual_seed(seed % (1 << 63))  # the runner's seeds use all 64 bits
        for l in range(s.layers):  # the earlier tokens: N(0, 1) values, quantized per token
            kv = torch.randn(shape[1:], generator=g, device=device, dtype=torch.bfloat16)
            self.store(l, kv, slice(None))

    def store(self, l, kv, pos):
        """Write kv [2, b, hkv, (t,) 128] at token position(s) `pos` of layer l."""
        if self.fmt == "bf16":
            self.codes[l, :, :, :, pos] = kv
            return
        codes, scale, _ = qz.quantize(kv, KV_FMT[self.fmt])
        self.codes[l, :, :, :, pos] = codes.reshape(kv.shape)
        self.scales[l, :, :, :, pos] = scale.reshape(kv.shape[:-1])

    def layer(self, l):
        """(k, v, k_scale, v_scale) of layer l as the attention kernels take them."""
        ks = vs = None
        if self.scales is not None:
            ks, vs = self.scales[l, 0], self.scales[l, 1]
        return self.codes[l, 0], self.codes[l, 1], ks, vs

    def dequantized(self, l):
        """FP32 K and V [b, hkv, ctx, 128] of layer l: codes × scales."""
        kv = self.codes[l].float()
        if self.scales is not None:
            kv = kv * self.scales[l][..., None]
        return kv[0], kv[1]

    def bytes_read(self):
        """What one step's attention reads: all ctx tokens of K and V (and their scales)."""
        n = self.codes.numel() * self.codes.element_size()
        return n + (0 if self.scales is None else self.scales.numel() * 4)


def rope_table(s, pos, device):
    """cos + i·sin of RoPE's 64 frequencies at position `pos` (theta 500000)."""
    inv = s.theta ** (-torch.arange(0, s.head_dim, 2, dtype=torch.float64) / s.head_dim)
    ang = pos * inv
    return torch.polar(torch.ones_like(ang), ang).to(torch.complex64).to(device)


# ANCHOR: decode_step
def decode_step(m, kv, tokens, rope, ws):
    """One decode step for the batch: tokens [b] → logits [b, vocab] (BF16), K/V appended."""
    s, b, pos = m.s, tokens.shape[0], kv.ctx - 1
    nq, nkv = s.hq * s.head_dim, s.hkv * s.head_dim
    x = m.embed[tokens].to(m.act)
    for l, w in enumerate(m.layers):
        h = F.rms_norm(x, (s.hidden,), m.norm, s.eps)
        qkv = w["qkv"](h)
        # RoPE on Q and K as complex products of pairs (Meta's apply_rotary_emb)
        qk = torch.view_as_complex(qkv[:, :nq + nkv].float().reshape(b, -1, s.head_dim // 2, 2))
        qk = torch.view_as_real(qk * rope).reshape(b, -1, s.head_dim)
        k_new, v_new = qk[:, s.hq:], qkv[:, nq + nkv:].reshape(b, s.hkv, s.head_dim)
        kv.store(l, torch.stack([k_new, v_new.float()]), pos)
        q = qk[:, :s.hq].to(torch.bfloat16).contiguous()
        o = m.kernels.attend(kv.fmt, q, *kv.layer(l), kv.ctx, ws)
        x = x + w["o"](o.to(m.act))
        h = F.rms_norm(x, (s.hidden,), m.norm, s.eps)
        gate, up = w["gate_up"](h).chunk(2, dim=-1)
        x = x + w["down"](F.silu(gate) * up)
    h = F.rms_norm(x, (s.hidden,), m.norm, s.eps).to(torch.bfloat16)
    return h @ m.lm_head.t()
# ANCHOR_END: decode_step
