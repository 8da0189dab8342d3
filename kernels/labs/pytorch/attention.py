"""Attention forward five ways in PyTorch: written out (matmul + softmax) and SDPA per backend.

One idea: `F.scaled_dot_product_attention` is one function with several kernels behind it.
The math backend runs the same matmul → softmax → matmul as the manual version and writes the
N×N score matrix to HBM; the flash, memory-efficient and cuDNN backends are fused, tiled kernels
that never store it. Forcing each backend with torch.nn.attention.sdpa_kernel shows what the
dispatch chooses between.

Shape: BF16, d = 128, N = 4096, non-causal, B = 4, H = 16 (Q, K, V 64 MiB each): the shape of
the book's FlashAttention CUDA benchmark. FLOPs = 4·B·H·N²·d (Q·Kᵀ and P·V, 2 per multiply-add).
Each variant is checked against a float64 reference (rel_error ≤ 2e-2, BF16) before timing.
The SDPA flash backend is marked as the baseline: the FlashAttention-2 kernel PyTorch ships.
"""

import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

QUICK = labkit.QUICK
DEV = labkit.torch_device()
B, H, N, D = (1, 2, 256, 128) if QUICK else (4, 16, 4096, 128)
TOL = 2e-2


# ANCHOR: manual
def attention_manual(q, k, v):
    """softmax(Q·Kᵀ/√d)·V as three PyTorch ops: the [B, H, N, N] scores go through HBM."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # [B, H, N, N]
    probs = torch.softmax(scores, dim=-1)
    return probs @ v  # [B, H, N, d]
# ANCHOR_END: manual


# ANCHOR: sdpa
def attention_sdpa(q, k, v, backend):
    """The same attention through SDPA, with only `backend` allowed (an error if it cannot run)."""
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v)
# ANCHOR_END: sdpa


def reference(q, k, v):
    """float64 attention, one batch element at a time to bound the memory of the scores."""
    outs = []
    for b in range(q.shape[0]):
        qd, kd, vd = q[b].double(), k[b].double(), v[b].double()
        p = torch.softmax(qd @ kd.transpose(-2, -1) / math.sqrt(qd.shape[-1]), dim=-1)
        outs.append((p @ vd).float())
    return torch.stack(outs)


def main():
    g = torch.Generator().manual_seed(labkit.SEED)
    q, k, v = (torch.randn(B, H, N, D, generator=g).to(DEV, torch.bfloat16) for _ in range(3))
    ref = reference(q, k, v)
    params = {"batch": B, "heads": H, "seq": N, "d_head": D}
    flops = 4 * B * H * N * N * D
    io_bytes = 4 * B * H * N * D * 2  # read Q, K, V, write O (BF16)
    variants = [
        ("manual", "manual matmul + softmax", None),
        ("sdpa_math", "SDPA math", SDPBackend.MATH),
        ("sdpa_flash", "SDPA flash (FlashAttention-2)", SDPBackend.FLASH_ATTENTION),
        ("sdpa_efficient", "SDPA memory-efficient", SDPBackend.EFFICIENT_ATTENTION),
        ("sdpa_cudnn", "SDPA cuDNN", SDPBackend.CUDNN_ATTENTION),
    ]
    for rung, (name, label, backend) in enumerate(variants):
        baseline = name == "sdpa_flash"
        if backend not in (None, SDPBackend.MATH) and DEV != "cuda":
            labkit.failed(name, label, params, "unsupported", "a CUDA-only SDPA backend",
                          rung=rung, baseline=baseline)
            continue
        if backend is None:
            fn = lambda: attention_manual(q, k, v)  # noqa: E731
        else:
            fn = lambda backend=backend: attention_sdpa(q, k, v, backend)  # noqa: E731
        labkit.check_then_time(name, label, params, fn, ref, TOL, flops=flops, bytes=io_bytes,
                               rung=rung, baseline=baseline)
        if DEV == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
