"""FlashAttention forward in Triton, beside PyTorch's SDPA (flash and cuDNN backends).

The idea of this lab: the online-softmax loop of FlashAttention written as one Triton program
per (query block, batch·head). The program keeps its BLOCK_M queries, the running row max m,
the running sum l and the output accumulator in registers, and walks the keys and values in
BLOCK_N tiles: S = Q·Kᵀ on tensor cores (tl.dot), rescale what was accumulated so far by
exp(m_old − m_new), add P·V. Nothing of size N×N ever reaches device memory. Causal attention
skips the tiles above the diagonal and masks only the tiles on it.

BF16 Q, K, V of shape [B, H, N, d]; FP32 softmax statistics and accumulator; output BF16.
Checked against an FP32 PyTorch attention of the same inputs before timing.
flops = 4·B·H·N²·d (two products of 2·N²·d per head), half of it when causal.
"""

import ctypes
import math
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402
import torch  # noqa: E402

import book_cuda  # noqa: E402

GPU = torch.cuda.is_available()
if not GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # smoke test in Triton's interpreter
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
TRITON_OK = GPU or os.environ.get("TRITON_INTERPRET") == "1"
# Triton's CPU interpreter multiplies BF16 tiles wrongly in tl.dot (it reads their bits as
# integers), so the smoke test off the GPU runs the same kernel on FP32 inputs.
DTYPE = torch.bfloat16 if GPU else torch.float32
# P is rounded to BF16 before P·V and the output is BF16: a relative error of a few 1e-3.
TOLERANCE = 1e-2
N = 128 if labkit.QUICK else 4096
# (batch, heads, head dim): B·H·d kept equal so both head sizes move the same bytes.
SHAPES = [(1, 2, 64), (1, 1, 128)] if labkit.QUICK else [(4, 16, 128), (4, 32, 64)]

CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_stages=3, num_warps=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_stages=4, num_warps=4),
] if GPU else [
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_stages=1, num_warps=4),
]


# The inner loop over key/value tiles [lo, hi): the online softmax. Scores are kept in the
# base-2 domain (qk_scale includes log2 e) so that exp2, one hardware instruction, does the work.
# MASKED: this range holds the diagonal tiles of causal attention; key j > query i is -inf.
@triton.jit
def attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_d, qk_scale, lo, hi,
               BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kt = tl.load(k_base + offs_n[None, :] * stride_n + offs_d[:, None])  # Kᵀ tile [d, BLOCK_N]
        s = tl.dot(q, kt) * qk_scale  # [BLOCK_M, BLOCK_N], FP32
        if MASKED:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)  # how much the old max overstated: rescale the past
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + offs_n[:, None] * stride_n + offs_d[None, :])  # V tile [BLOCK_N, d]
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


# One program: BLOCK_M queries of one (batch, head). Q, K, V, O are [B·H, N, d], contiguous;
# N is a multiple of BLOCK_M and BLOCK_M of BLOCK_N (checked by the caller), so no tile needs
# a bounds mask.
@triton.autotune(configs=CONFIGS, key=["N", "HEAD_D", "CAUSAL"])
@triton.jit
def flash_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_bh, stride_n, N, qk_scale,
                           HEAD_D: tl.constexpr, CAUSAL: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    q_base, k_base = q_ptr + bh * stride_bh, k_ptr + bh * stride_bh
    v_base, o_base = v_ptr + bh * stride_bh, o_ptr + bh * stride_bh

    q = tl.load(q_base + offs_m[:, None] * stride_n + offs_d[None, :])  # stays in registers
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], tl.float32)

    if CAUSAL:
        # Tiles left of the diagonal need no mask; the diagonal ones do; the rest are skipped.
        diag = start_m * BLOCK_M
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_d,
                                   qk_scale, 0, diag, BLOCK_N, False)
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_d,
                                   qk_scale, diag, diag + BLOCK_M, BLOCK_N, True)
    else:
        acc, l_i, m_i = attn_inner(acc, l_i, m_i, q, k_base, v_base, stride_n, offs_m, offs_d,
                                   qk_scale, 0, N, BLOCK_N, False)

    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_n + offs_d[None, :], out.to(o_ptr.dtype.element_ty))


def attention_triton(q, k, v, causal):
    B, H, n, d = q.shape
    qf, kf, vf = (t.reshape(B * H, n, d) for t in (q, k, v))  # views of contiguous tensors
    o = torch.empty_like(qf)
    qk_scale = (1.0 / math.sqrt(d)) * math.log2(math.e)

    def grid(meta):
        assert n % meta["BLOCK_M"] == 0 and meta["BLOCK_M"] % meta["BLOCK_N"] == 0
        return (n // meta["BLOCK_M"], B * H)

    flash_attention_kernel[grid](qf, kf, vf, o, qf.stride(0), qf.stride(1), n, qk_scale,
                                 HEAD_D=d, CAUSAL=causal)
    return o.view(B, H, n, d)


def attention_sdpa(q, k, v, causal, backend):
    from torch.nn.attention import sdpa_kernel
    with sdpa_kernel(backend):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


# ---- The book's CUDA kernel, loaded into PyTorch ------------------------------------------
# flash_tc_d64 / flash_tc_d128 from kernels/attention/attention.cu (FlashAttention-2 style on mma.sync),
# compiled with a launcher by load_inline (book_cuda.py falls back to nvcc + ctypes without
# ninja). Q, K, V, O are [B·H, N, d] BF16 (passed as raw 16-bit
# patterns, bf16_t); launch: grid (N / 128, B·H), 256 threads, (128·d + 4·64·d)·2 B of shared
# memory; N divisible by 128.

CUDA_LAUNCHER = r"""
torch::Tensor flash_tc_launch(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal) {
    for (auto* t : {&q, &k, &v})
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kBFloat16 && t->is_contiguous() &&
                    t->dim() == 4, "q, k, v must be contiguous CUDA bfloat16 [B, H, N, d]");
    TORCH_CHECK(q.sizes() == k.sizes() && q.sizes() == v.sizes(), "q, k, v shapes differ");
    const int heads = q.size(0) * q.size(1), n = q.size(2), d = q.size(3);
    TORCH_CHECK(n % 128 == 0 && (d == 64 || d == 128), "flash_tc needs N % 128 == 0, d of 64 or 128");
    auto o = torch::empty_like(q);
    const int smem = (128 * d + 4 * 64 * d) * 2;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)d);
    auto kernel = d == 64 ? flash_tc_d64 : flash_tc_d128;
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<dim3(n / 128, heads), 256, smem, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const bf16_t*>(q.data_ptr()), reinterpret_cast<const bf16_t*>(k.data_ptr()),
        reinterpret_cast<const bf16_t*>(v.data_ptr()), reinterpret_cast<bf16_t*>(o.data_ptr()),
        n, scale_log2, causal ? 1 : 0);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return o;
}
"""

# The same launch as a plain C function, for the nvcc + ctypes route (no ninja needed).
C_LAUNCHER = r"""
extern "C" int flash_tc_c(const void* q, const void* k, const void* v, void* o, int heads, int n,
                          int d, int causal, cudaStream_t s) {
    const int smem = (128 * d + 4 * 64 * d) * 2;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)d);
    auto kernel = d == 64 ? flash_tc_d64 : flash_tc_d128;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return (int)e;
    kernel<<<dim3(n / 128, heads), 256, smem, s>>>((const bf16_t*)q, (const bf16_t*)k,
                                                  (const bf16_t*)v, (bf16_t*)o, n, scale_log2, causal);
    return (int)cudaGetLastError();
}
"""


def load_cuda_attention():
    """flash_tc as a function of (q, k, v, causal), and the route it was built by."""
    try:
        return book_cuda.load_inline_ext(
            "hdlc_lab_flash_tc", "attention/attention.cu", CUDA_LAUNCHER,
            "torch::Tensor flash_tc_launch(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal);",
            "flash_tc_launch"), "load_inline"
    except Exception as e:
        labkit.log(f"load_inline failed ({type(e).__name__}: {e}); trying nvcc + ctypes")
    lib = book_cuda.nvcc_library("attention/attention.cu", C_LAUNCHER)
    lib.flash_tc_c.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 4 + [ctypes.c_void_p]

    def run(q, k, v, causal):
        B, H, n, d = q.shape
        assert all(t.dtype == torch.bfloat16 and t.is_contiguous() and t.shape == q.shape for t in (q, k, v))
        assert n % 128 == 0 and d in (64, 128)
        o = torch.empty_like(q)
        book_cuda.check(lib.flash_tc_c(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), B * H, n,
                                       d, int(causal), book_cuda.stream()), "flash_tc")
        return o
    return run, "nvcc + ctypes"


def attention_reference(q, k, v, causal, heads_at_once=8):
    """FP32 attention, a few heads at a time so the N×N scores stay a few hundred MiB."""
    B, H, n, d = q.shape
    qf, kf, vf = (t.reshape(B * H, n, d).float() for t in (q, k, v))
    out = torch.empty_like(qf)
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril() if causal else None
    for i in range(0, B * H, heads_at_once):
        s = qf[i:i + heads_at_once] @ kf[i:i + heads_at_once].transpose(1, 2) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask, -float("inf"))
        out[i:i + heads_at_once] = torch.softmax(s, dim=-1) @ vf[i:i + heads_at_once]
    return out.view(B, H, n, d)


def main():
    from torch.nn.attention import SDPBackend
    torch.manual_seed(labkit.SEED)
    cuda_fn, cuda_error, cuda_label = None, "needs a CUDA GPU and nvcc", "CUDA flash_tc (mma.sync)"
    if GPU:
        try:
            cuda_fn, how = load_cuda_attention()
            if how != "load_inline":
                cuda_label += f", {how}"
        except Exception as e:
            cuda_error = f"build failed: {type(e).__name__}: {e}"
    for B, H, d in SHAPES:
        for causal in (False, True):
            params = {"b": B, "h": H, "n": N, "d": d, "causal": int(causal)}
            labkit.log(f"attention B={B} H={H} N={N} d={d} causal={causal}")
            q, k, v = (torch.randn(B, H, N, d, device=DEVICE).to(DTYPE) for _ in range(3))
            ref = attention_reference(q, k, v, causal)
            work = {"flops": (0.5 if causal else 1.0) * 4.0 * B * H * N * N * d,
                    "bytes": 4.0 * B * H * N * d * q.element_size()}  # Q, K, V read, O written

            for variant, label, backend, base in [
                ("sdpa_flash", "SDPA flash backend", SDPBackend.FLASH_ATTENTION, True),
                ("sdpa_cudnn", "SDPA cuDNN backend", SDPBackend.CUDNN_ATTENTION, False),
            ]:
                if GPU:
                    labkit.check_then_time(variant, label, params,
                                           lambda b=backend: attention_sdpa(q, k, v, causal, b),
                                           ref, TOLERANCE, baseline=base, **work)
                else:
                    labkit.failed(variant, label, params, "unsupported",
                                  "the SDPA flash and cuDNN backends need a CUDA GPU", baseline=base)
            if TRITON_OK:
                labkit.check_then_time("triton", "Triton FlashAttention", params,
                                       lambda: attention_triton(q, k, v, causal), ref, TOLERANCE, **work)
            else:
                labkit.failed("triton", "Triton FlashAttention", params, "unsupported",
                              "no GPU and TRITON_INTERPRET is not set")
            if cuda_fn is None:
                labkit.failed("cuda", cuda_label, params, "unsupported", cuda_error)
            else:
                labkit.check_then_time("cuda", cuda_label, params,
                                       lambda: cuda_fn(q, k, v, causal), ref, TOLERANCE, **work)
            del q, k, v, ref
            if GPU:
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
