"""The decode model's weights: a Llama-3-8B shape with seeded random values, in four formats.

Why seeded random weights: the decode step's time depends on the bytes it reads, not on what the
numbers mean, so an 8B-shaped model of random values times exactly like the real one and needs
no download. The shape is Llama 3 8B's (Meta's config.json for Meta-Llama-3-8B; "The Llama 3
Herd of Models", Dubey et al. 2024, Table 3): hidden 4096, 32 layers, 32 query heads and 8 KV
heads of 128, SwiGLU MLP 14336, vocabulary 128256, RMSNorm eps 1e-5, RoPE theta 500000.

Every BF16 matrix is drawn from its own generator (seed, layer, name), so each format quantizes
the very same values and the reference can draw them again instead of holding a second copy.
Q/K/V are one fused [6144, 4096] matrix and gate/up one [28672, 4096] (as vLLM fuses them);
the embedding and the LM head stay BF16 in every format, as GPTQ/AWQ/vLLM checkpoints keep them.

The formats (quantize.py's quantizers, FP32 scales, the layouts quant_gemv_mma.cu reads):
  int8  per output channel, codes reordered for qgemv_int8_mma;
  int4  g128 symmetric (codes ±7, stored +8 in a nibble), reordered for qgemv_int4_mma,
        scales [n][k/128];
  fp8   E4M3 per output channel, codes reordered for qgemv_fp8_mma.
"""

from dataclasses import dataclass

import torch

import quantize as qz


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    hq: int
    hkv: int
    head_dim: int
    inter: int
    vocab: int
    eps: float = 1e-5
    theta: float = 500000.0

    @property
    def qkv_rows(self):
        return (self.hq + 2 * self.hkv) * self.head_dim


LLAMA3_8B = Shape(hidden=4096, layers=32, hq=32, hkv=8, head_dim=128, inter=14336, vocab=128256)
# Quick mode on a CPU: the same structure, small enough for seconds (head_dim stays 128 and
# every K a multiple of 1024, as the kernels require).
TINY = Shape(hidden=1024, layers=2, hq=8, hkv=2, head_dim=128, inter=2048, vocab=512)

FORMATS = ("bf16", "int8", "int4", "fp8")
FMT = {"int8": qz.Fmt("int", 8), "int4": qz.Fmt("int", 4, group=128), "fp8": qz.Fmt("fp8")}
MATRICES = ("qkv", "o", "gate_up", "down")


def matrix_shape(s, name):
    """(n, k) of a layer's Linear weight: n outputs, k inputs."""
    return {"qkv": (s.qkv_rows, s.hidden), "o": (s.hidden, s.hq * s.head_dim),
            "gate_up": (2 * s.inter, s.hidden), "down": (s.hidden, s.inter)}[name]


def master(s, seed, layer, name, device):
    """The BF16 values of one matrix, drawn on `device` from its own seed (std 1/sqrt(k), so
    activations stay of order one through 32 random layers)."""
    n, k = matrix_shape(s, name) if name in MATRICES else (s.vocab, s.hidden)
    g = torch.Generator(device=device)
    # The runner's seeds use all 64 bits; a torch generator takes a signed 64-bit seed.
    g.manual_seed((seed * 1000003 + layer * 101 + (MATRICES + ("embed", "lm_head")).index(name)) % (1 << 63))
    w = torch.randn(n, k, generator=g, device=device, dtype=torch.float32)
    return (w * k ** -0.5).to(torch.bfloat16)


def quantize_matrix(w, fmt):
    """(codes as the format's numbers [n, k] FP32, scales): quantize.py's round-to-nearest."""
    codes, scale, _ = qz.quantize(w, FMT[fmt])
    n, k = w.shape
    return codes.reshape(n, k), scale.reshape(n, -1)


def dequantize(codes, scales):
    """codes × scales, FP32 [n, k] (a scale covers k / scales.shape[1] consecutive columns)."""
    n, k = codes.shape
    return (codes.reshape(n, scales.shape[1], -1) * scales[:, :, None]).reshape(n, k)


# ANCHOR: layouts
def repack_int4_mma(nibbles):
    """int4 stored codes (0..15) [n, k] → qgemv_int4_mma's bytes: the 1 KB block of 16-row tile
    T and group j at (T·k/128 + j)·1024; in it lane l = 4g + t's word for k-step s at
    (s/4)·512 + 16l + (s%4)·4, whose nibble i = 4c + 2b + h holds row 16T + g + 8h, column
    128j + 16s + 4t + 2b + c: one mma.m16n8k16 A fragment per word."""
    n, k = nibbles.shape
    x = nibbles.reshape(n // 16, 2, 8, k // 128, 2, 4, 4, 2, 2)  # T h g j sh sl t b c
    x = x.permute(0, 3, 4, 2, 6, 5, 8, 7, 1)  # T j sh g t sl c b h
    return (x[..., 0] | (x[..., 1] << 4)).contiguous().reshape(n, k // 2)


def repack_w8_mma(codes):
    """8-bit codes as bytes [n, k] → the 8-bit MMA entries' order: the 2 KB block of 16-row tile
    T and group j at (T·k/128 + j)·2048; in it lane l = 4g + t's 8 bytes for k-step s at
    (s/2)·512 + 16l + (s%2)·8, bytes 4h + e holding row 16T + g + 8h, column 128j + 16s + 4t + e:
    two words of one mma.m16n8k16 A fragment."""
    n, k = codes.shape
    x = codes.reshape(n // 16, 2, 8, k // 128, 4, 2, 4, 4)  # T h g j sh sl t e
    return x.permute(0, 3, 4, 2, 6, 5, 1, 7).contiguous().reshape(n, k)


def unpack_w8_mma(packed):
    """The inverse of repack_w8_mma: the row-major [n, k] codes (W8A8 prefill multiplies them
    with cuBLASLt, which reads rows)."""
    n, k = packed.shape
    x = packed.reshape(n // 16, k // 128, 4, 8, 4, 2, 2, 4)  # T j sh g t sl h e
    return x.permute(0, 6, 3, 1, 2, 5, 4, 7).contiguous().reshape(n, k)
# ANCHOR_END: layouts


def kernel_layout(codes, scales, fmt):
    """The (codes, scales) tensors the book's GEMV kernel of `fmt` reads."""
    if fmt == "int8":
        return repack_w8_mma(codes.to(torch.int8).view(torch.uint8)), scales.reshape(-1)
    if fmt == "int4":
        return repack_int4_mma((codes + 8).to(torch.uint8)), scales.contiguous()
    return repack_w8_mma(codes.to(torch.float8_e4m3fn).view(torch.uint8)), scales.reshape(-1)


def stored_bytes(t):
    return t.numel() * t.element_size()
