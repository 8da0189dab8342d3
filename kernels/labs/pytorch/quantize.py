"""Quantization formats and the three places a model meets them: weights, matmul inputs, KV.

Why a module of its own: the accuracy lab (quant_accuracy.py) applies every format to one
trained model, and a card teaching one format includes its piece from here by ANCHOR. Each
format is a round trip, quantize (codes + scales) then dequantize (codes × scales), and each
place swaps or hooks hdlc-lab's own modules on a copy of the model, so model.py runs unchanged:

  weight_only  the block projections' weights replaced by their dequantized values (W·A16);
  w8a8         the projections swapped for W8A8Linear: codes × codes in FP32, then the scales;
  smooth       SmoothQuant's per-channel scales folded into RMSNorm gains and the weights;
  kv_quant     forward hooks that quantize K after RoPE and V after its projection.

RoundTrip is the check: codes that the format's own quantizer maps to themselves, and a model
that reads exactly codes × scales.
"""

from dataclasses import dataclass

import labkit
import torch
import torch.nn.functional as F
from torch import nn

# The seven projections of a block; the embedding and the LM head are left in BF16.
BLOCK_LINEARS = ("attn.wq", "attn.wk", "attn.wv", "attn.wo", "mlp.w_gate", "mlp.w_up", "mlp.w_down")


# ANCHOR: quantizer
@dataclass(frozen=True)
class Fmt:
    """A number format with its scale granularity. `group`: -1 one scale per tensor, 0 one per
    row (an output channel of a weight, a token of an activation, a token·head of K/V), g > 0
    one per g consecutive values along the last dimension (the K axis of a weight)."""
    kind: str  # "int" or "fp8" (E4M3)
    bits: int = 8
    group: int = 0
    symmetric: bool = True
    scale_dtype: torch.dtype = torch.float32


FP8_MAX = 448.0  # largest finite float8_e4m3fn


def _rows(x, group):
    """x as a 2-D view whose rows each share one scale."""
    if group == -1:
        return x.reshape(1, -1)
    if group == 0:
        return x.reshape(-1, x.shape[-1])
    assert x.shape[-1] % group == 0, (x.shape, group)
    return x.reshape(-1, group)


def encode(v, scale, zero, f):
    """Codes of the rows v with given scales: what the format stores."""
    if f.kind == "fp8":  # saturate first: a cast of a value past 448 gives NaN
        return (v / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).float()
    if f.symmetric:  # INT-b in [-(2^(b-1) - 1), 2^(b-1) - 1]: zero is exact, one code unused
        qmax = 2 ** (f.bits - 1) - 1
        return (v / scale).round().clamp(-qmax, qmax)
    return ((v / scale).round() + zero).clamp(0, 2 ** f.bits - 1)  # unsigned codes, zero point


def quantize(x, f):
    """Rows of x → (codes, scale, zero point): absmax scales, or min/max with a zero point."""
    v = _rows(x.float(), f.group)
    if f.kind == "fp8" or f.symmetric:
        top = FP8_MAX if f.kind == "fp8" else 2 ** (f.bits - 1) - 1
        scale, zero = v.abs().amax(1, keepdim=True) / top, None
    else:  # the range always holds 0, so the zero point is a code in [0, 2^b - 1]
        lo, hi = v.amin(1, keepdim=True).clamp(max=0), v.amax(1, keepdim=True).clamp(min=0)
        scale = (hi - lo) / (2 ** f.bits - 1)
    scale = scale.to(f.scale_dtype).float()  # the scale as stored (FP16 for weight-only)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero row
    if not (f.kind == "fp8" or f.symmetric):
        zero = (-lo / scale).round().clamp(0, 2 ** f.bits - 1)
    return encode(v, scale, zero, f), scale, zero


def dequantize(codes, scale, zero, shape):
    return ((codes - zero if zero is not None else codes) * scale).reshape(shape)
# ANCHOR_END: quantizer


class RoundTrip:
    """The check of a quantized row, exact (0 means 0) for every tensor the format quantizes:
    1. the codes are the format's own: rounded by its quantizer again they come back unchanged
       (integers in range, values an E4M3 can hold), so the matmul's operand is an 8- or 4-bit one;
    2. where the model reads a dequantized tensor (weight-only weights as the matmul gets them in
       BF16, K and V as attention gets them), it equals codes × scales cast to that dtype: the
       model computes with values on the format's grid, and with no extra precision."""

    def __init__(self):
        self.active, self.count, self.err, self.exact_sums = False, 0, 0.0, True

    def check(self, codes, scale, zero, f, x_read=None):
        again = encode(codes - zero if zero is not None else codes, torch.ones_like(scale), zero, f)
        err = labkit.rel_error(again, codes)
        if x_read is not None:
            want = dequantize(codes, scale, zero, x_read.shape).to(x_read.dtype)
            err = max(err, labkit.rel_error(x_read, want))
        self.err, self.count = max(self.err, err), self.count + 1


def fake_quant(x, f, rt):
    """x → its dequantized value in x's dtype, checked when a checking pass is running."""
    codes, scale, zero = quantize(x, f)
    x_hat = dequantize(codes, scale, zero, x.shape).to(x.dtype)
    if rt.active:
        rt.check(codes, scale, zero, f, x_read=x_hat)
    return x_hat


def block_linears(m):
    return [blk.get_submodule(name) for blk in m.blocks for name in BLOCK_LINEARS]


def bits_per_value(f, values, scales):
    """Storage bits per value: the codes, plus each scale (and b-bit zero point) spread over its group."""
    scale_bits = torch.finfo(f.scale_dtype).bits
    zero_bits = 0 if f.kind == "fp8" or f.symmetric else f.bits
    return f.bits + scales * (scale_bits + zero_bits) / values


# ANCHOR: weight_only
def weight_only(m, f, rt):
    """W·A16: each projection's weight replaced by its dequantized value. Autocast hands the
    matmul a BF16 copy of it, as a W4A16 kernel dequantizes to BF16 before the MMA."""
    values = scales = 0
    for lin in block_linears(m):
        codes, scale, zero = quantize(lin.weight.data, f)
        lin.weight.data.copy_(dequantize(codes, scale, zero, lin.weight.shape))
        rt.check(codes, scale, zero, f, x_read=lin.weight.data.to(torch.bfloat16))  # as the matmul reads it
        values, scales = values + codes.numel(), scales + scale.numel()
    return bits_per_value(f, values, scales)
# ANCHOR_END: weight_only


# ANCHOR: w8a8
class W8A8Linear(nn.Module):
    """y = (codes_x · codes_wᵀ) · scale_x · scale_w: the sums an INT8/FP8 GEMM forms, in FP32."""

    def __init__(self, lin, w_fmt, a_fmt, rt):
        super().__init__()
        codes, scale, _ = quantize(lin.weight.data, w_fmt)
        self.register_buffer("codes_w", codes.reshape(lin.weight.shape))
        self.register_buffer("scale_w", scale.reshape(1, -1))  # [1, N] per channel, [1, 1] per tensor
        self.a_fmt, self.rt = a_fmt, rt
        self.in_features, self.out_features = lin.in_features, lin.out_features
        rt.check(codes, scale, None, w_fmt)  # the GEMM reads the codes themselves

    def forward(self, x):
        codes_x, scale_x, _ = quantize(x, self.a_fmt)  # scale_x: [tokens, 1] or [1, 1]
        codes_x = codes_x.reshape(x.shape)
        with torch.autocast(device_type=x.device.type, enabled=False):
            y = F.linear(codes_x, self.codes_w)  # integer / FP8 products, FP32 sums
            if self.rt.active:
                self.rt.check(_rows(codes_x, self.a_fmt.group), scale_x, None, self.a_fmt)
                if self.a_fmt.kind == "int":  # exact in FP32 while every partial sum < 2^24
                    bound = F.linear(codes_x.abs(), self.codes_w.abs()).max().item()
                    self.rt.exact_sums &= bound < 2 ** 24
        y = y.reshape(-1, y.shape[-1]) * scale_x * self.scale_w  # the GEMM epilogue
        return y.reshape(*x.shape[:-1], -1).to(torch.bfloat16)


def w8a8(m, w_fmt, a_fmt, rt):
    """Swap every block projection for a W8A8 one (weights quantized once, activations per call)."""
    for blk in m.blocks:
        for name in BLOCK_LINEARS:
            parent, leaf = name.split(".")
            lin = getattr(blk.get_submodule(parent), leaf)
            setattr(blk.get_submodule(parent), leaf, W8A8Linear(lin, w_fmt, a_fmt, rt))
    values = sum(mod.codes_w.numel() for mod in m.modules() if isinstance(mod, W8A8Linear))
    scales = sum(mod.scale_w.numel() for mod in m.modules() if isinstance(mod, W8A8Linear))
    return bits_per_value(w_fmt, values, scales)
# ANCHOR_END: w8a8


# ANCHOR: smoothquant
def calibrate(m, batches):
    """Per-channel max |x| of the RMSNorm outputs that feed Q/K/V and gate/up, over `batches`
    of calibration tokens run through the BF16 model."""
    amax, hooks = {}, []
    for name, norm in m.named_modules():
        if name.endswith(("attn_norm", "mlp_norm")):
            def hook(mod, inp, out, name=name):
                a = out.detach().float().abs().amax(dim=(0, 1))
                amax[name] = torch.maximum(amax[name], a) if name in amax else a
            hooks.append(norm.register_forward_hook(hook))
    device = next(m.parameters()).device.type
    with torch.no_grad(), torch.autocast(device_type=device, dtype=torch.bfloat16):
        for x in batches:
            m(x)
    for h in hooks:
        h.remove()
    return amax


def smooth(m, amax, alpha=0.5):
    """SmoothQuant: s_j = max|X_j|^α / max|W_:,j|^(1−α); X·diag(s)⁻¹ is folded into the RMSNorm
    gain and diag(s)·W into the projections, so the model computes the same function. Only the
    projections that read a norm are smoothed (Q/K/V, gate/up), as the paper's code does; returns
    the largest channel max ÷ median channel max before and after (how outlier-heavy X is)."""
    before, after = [], []
    for i, blk in enumerate(m.blocks):
        for name, lins in (("attn_norm", (blk.attn.wq, blk.attn.wk, blk.attn.wv)),
                           ("mlp_norm", (blk.mlp.w_gate, blk.mlp.w_up))):
            norm, a = getattr(blk, name), amax[f"blocks.{i}.{name}"]
            w = torch.cat([lin.weight.data for lin in lins]).abs().amax(0)  # per input channel
            # Both maxima clamped as SmoothQuant's smooth.py does: a channel no input or weight ever
            # used would otherwise give 0/0 or x/0.
            s = (a.clamp(min=1e-5).pow(alpha) / w.clamp(min=1e-5).pow(1 - alpha)).clamp(min=1e-5)
            norm.weight.data.div_(s)
            for lin in lins:
                lin.weight.data.mul_(s)  # column j of every W scaled by s_j
            before.append(float(a.max() / a.median()))
            after.append(float((a / s).max() / (a / s).median()))
    return max(before), max(after)
# ANCHOR_END: smoothquant


# ANCHOR: kv_cache
def kv_quant(m, f, rt):
    """Quantize K and V where attention reads them: K as RoPE returns it (the cached, rotated K),
    V as its projection writes it. Forward hooks on the model's own modules, so model.py runs
    unchanged: a hook's return value replaces the module's output."""
    c = m.cfg
    assert c.n_heads != c.n_kv_heads, "K is told from Q by its head count"

    def on_rope(mod, inp, out):  # Q [B, H, S, Dh] and K [B, Hkv, S, Dh] both pass through RoPE
        return fake_quant(out, f, rt) if out.shape[1] == c.n_kv_heads else out

    def on_wv(mod, inp, out):  # V [B, S, Hkv·Dh]: one scale per token and KV head
        B, S, _ = out.shape
        v = out.view(B, S, c.n_kv_heads, c.d_head)
        return fake_quant(v, f, rt).view(B, S, -1)

    for blk in m.blocks:
        blk.attn.rope.register_forward_hook(on_rope)
        blk.attn.wv.register_forward_hook(on_wv)
    return bits_per_value(f, c.d_head, 1)
# ANCHOR_END: kv_cache
