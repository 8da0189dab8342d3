"""The book's own kernels as the decode step calls them: quantized GEMV and decode attention.

Loaded by triton/book_cuda.py's nvcc + ctypes route (the .cu files read as they are, each with a
small extern "C" launcher below; one shared library per file, cached in /tmp, compiled in
parallel). Every wrapper asserts the contract its kernel's source states (dtypes, contiguity,
divisibility) before it launches on PyTorch's current stream, so a CUDA-graph capture records it.

Which rung of each family, and why:
  GEMV  int8 → qgemv_int8_mma_t*, int4 g128 → qgemv_int4_mma_t*, fp8 → qgemv_fp8_mma_t*: the
        tensor-core rungs of quant_gemv_mma.cu (the CUDA-core 8-bit rungs of quant_gemv.cu do
        an FP32 FMA per weight and token, so from batch 8 on they were several times slower
        than BF16 cuBLAS); X and Y are FP32. The token tile MT is 16, 4 or 1, the largest that
        divides the batch (as the quant_gemv family picks it): batch 8 runs two passes of t4,
        batch 32 two of t16.
  attention  BF16 cache → decode_v2_bf16_g4 (decode_attention_v2.cu: tensor cores, bulk copies,
        one launch); INT8 / FP8 caches → decode_split_{int8,fp8}_g4 + decode_combine
        (decode_attention.cu's Flash-Decoding rung; v2 has no quantized cache).
Off the GPU (quick mode) `Kernels(None)` runs plain torch in their place, labelled so.
"""

import concurrent.futures
import ctypes
import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "triton"))
import book_cuda  # noqa: E402

P, I32, F32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_float

MMA_C = r"""
extern "C" int qd_gemv_mma(int fmt, int mt, const void* W, const float* s, const float* X,
                           float* Y, int M, int n, int k, cudaStream_t st) {
    // fmt 0: int4 g128, 1: int8, 2: fp8 (per-row scales)
    typedef void (*K)(const uint4*, const float*, const float*, float*, int, int, int);
    K f = fmt == 0 ? (mt == 16 ? qgemv_int4_mma_t16 : mt == 4 ? qgemv_int4_mma_t4 : qgemv_int4_mma_t1)
        : fmt == 1 ? (mt == 16 ? qgemv_int8_mma_t16 : mt == 4 ? qgemv_int8_mma_t4 : qgemv_int8_mma_t1)
                   : (mt == 16 ? qgemv_fp8_mma_t16 : mt == 4 ? qgemv_fp8_mma_t4 : qgemv_fp8_mma_t1);
    f<<<n / (16 * MMA_TW), 32 * MMA_S, 0, st>>>((const uint4*)W, s, X, Y, M, n, k);
    return (int)cudaGetLastError();
}
"""
SPLIT_C = r"""
extern "C" int qd_decode_split(int kv, const void* q, const void* k, const void* v,
                               const float* ks, const float* vs, void* o, float* pacc, float* pml,
                               int b, int hq, int hkv, int ctx, int splits, float scale_log2,
                               cudaStream_t st) {
    // G = 4 only (Llama 3 8B: 32 query heads over 8 KV heads)
    typedef void (*K)(const bf16_t*, const void*, const void*, const float*, const float*,
                      const int*, bf16_t*, float*, float*, int, int, int, int, float);
    K f = kv == 1 ? decode_split_int8_g4 : kv == 2 ? decode_split_fp8_g4 : decode_split_bf16_g4;
    int smem = (TILE * (D + 1) + TILE * D + 4 * D + 4 * TILE) * 4;
    dim3 grid(splits, hkv, b);
    f<<<grid, THREADS, smem, st>>>((const bf16_t*)q, k, v, ks, vs, 0, (bf16_t*)o,
                                   splits > 1 ? pacc : 0, splits > 1 ? pml : 0,
                                   hq, hkv, ctx, ctx / splits, scale_log2);
    if (splits > 1)
        decode_combine<<<b * hq, 128, 0, st>>>(pacc, pml, (bf16_t*)o, splits);
    return (int)cudaGetLastError();
}
"""
V2_C = r"""
extern "C" int qd_v2_init(void) {
    return (int)cudaFuncSetAttribute(decode_v2_bf16_g4, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     V2_WARPS * V2_STAGES * 8192);
}
extern "C" int qd_decode_v2(const void* q, const void* k, const void* v, void* o, float* pacc,
                            float* pml, int* tickets, int b, int hq, int hkv, int ctx, int splits,
                            float scale_log2, cudaStream_t st) {
    dim3 grid(splits, hkv, b);
    decode_v2_bf16_g4<<<grid, 32 * V2_WARPS, V2_WARPS * V2_STAGES * 8192, st>>>(
        (const bf16_t*)q, (const bf16_t*)k, (const bf16_t*)v, 0, (bf16_t*)o, pacc, pml, tickets,
        hq, hkv, ctx, scale_log2);
    return (int)cudaGetLastError();
}
"""
LIBS = {"mma": ("inference/quant_gemv_mma.cu", MMA_C),
        "split": ("inference/decode_attention.cu", SPLIT_C),
        "v2": ("inference/decode_attention_v2.cu", V2_C)}
ARGTYPES = {"qd_gemv_mma": [I32, I32, P, P, P, P, I32, I32, I32, P],
            "qd_decode_split": [I32] + [P] * 8 + [I32] * 5 + [F32, P],
            "qd_decode_v2": [P] * 7 + [I32] * 5 + [F32, P], "qd_v2_init": []}
ROUTE = "nvcc + ctypes (triton/book_cuda.py)"
CPU_ROUTE = "torch reference in place of the book's kernels (no GPU)"


def token_tile(m):
    """The kernels' MT: the largest of 16, 4, 1 that divides the batch."""
    return 16 if m % 16 == 0 else 4 if m % 4 == 0 else 1


def splits_v1(b, hkv, ctx, sms):
    """decode_attention's choose_splits: fill 4 CTAs per SM, keep ≥ 256 keys per split."""
    s = 1
    while b * hkv * s < 4 * sms and ctx // (s * 2) >= 256:
        s *= 2
    return s


def splits_v2(b, hkv, ctx, sms):
    """choose_splits_v2: about one CTA per SM, ≥ 8 warps × 16 keys per split, ≤ 64 splits."""
    s = 1
    while b * hkv * s * 16 < sms * 15 and ctx // (s * 2) >= 16 * 8 and s * 2 <= 64:
        s *= 2
    return s


class Kernels:
    """The launch side of the book's kernels (or, with `libs` None, torch stand-ins)."""

    def __init__(self, libs):
        self.libs, self.sms = libs, 0
        self.route = ROUTE if libs else CPU_ROUTE
        if libs:
            self.sms = torch.cuda.get_device_properties(0).multi_processor_count
            book_cuda.check(libs["v2"].qd_v2_init(), "cudaFuncSetAttribute(decode_v2_bf16_g4)")

    def gemv(self, fmt, codes, scales, x, n, k, deq=None):
        """Y[M, n] = X[M, k] · Wᵀ in FP32 for the quantized W (codes in the kernel's layout)."""
        m = x.shape[0]
        if not self.libs:
            return x @ deq.t()
        assert x.dtype == torch.float32 and x.is_contiguous() and x.shape[1] == k
        assert scales.dtype == torch.float32 and scales.is_contiguous() and codes.is_contiguous()
        assert k % 1024 == 0 and n % 16 == 0, (n, k)  # 8 warps split k in groups of 128
        if fmt == "int4":
            assert codes.numel() == n * k // 2 and scales.numel() == n * k // 128
        else:
            assert codes.numel() == n * k and scales.numel() == n
        y = torch.empty(m, n, device=x.device, dtype=torch.float32)
        mt = token_tile(m)
        ptrs = (codes.data_ptr(), scales.data_ptr(), x.data_ptr(), y.data_ptr())
        code = {"int4": 0, "int8": 1, "fp8": 2}[fmt]
        err = self.libs["mma"].qd_gemv_mma(code, mt, *ptrs, m, n, k, book_cuda.stream())
        book_cuda.check(err, f"qgemv {fmt}_mma t{mt}")
        return y

    def workspace(self, b, hq, hkv, ctx, kv_fmt, device):
        """Split count and partial buffers of one attention call (allocated before capture)."""
        if not self.libs:
            return None
        s = (splits_v2 if kv_fmt == "bf16" else splits_v1)(b, hkv, ctx, self.sms)
        return {"splits": s,
                "acc": torch.empty(b * hq * s * 128, device=device, dtype=torch.float32),
                "ml": torch.empty(b * hq * s * 2, device=device, dtype=torch.float32),
                "tickets": torch.zeros(b * hkv, device=device, dtype=torch.int32)}

    def attend(self, kv_fmt, q, k, v, ks, vs, ctx, ws):
        """o [b, hq·128] BF16 = softmax(q·Kᵀ/√128)·V over the first `ctx` keys of each
        sequence; k, v [b, hkv, ctx, 128] (codes), ks, vs [b, hkv, ctx] FP32 (quantized caches)."""
        b, hq = q.shape[0], q.shape[1]
        hkv = k.shape[1]
        if not self.libs:
            return torch_attention(q, k, v, ks, vs)
        assert q.dtype == torch.bfloat16 and q.is_contiguous() and q.shape[2] == 128
        assert k.is_contiguous() and v.is_contiguous() and k.shape == (b, hkv, ctx, 128)
        assert hq == 4 * hkv and ctx % 256 == 0
        o = torch.empty(b, hq * 128, device=q.device, dtype=torch.bfloat16)
        scale_log2 = math.log2(math.e) / math.sqrt(128)
        s = ws["splits"]
        if kv_fmt == "bf16":
            assert k.dtype == torch.bfloat16 and s <= 64 and s * 16 * 8 <= ctx
            err = self.libs["v2"].qd_decode_v2(
                q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), ws["acc"].data_ptr(),
                ws["ml"].data_ptr(), ws["tickets"].data_ptr(), b, hq, hkv, ctx, s, scale_log2,
                book_cuda.stream())
        else:
            assert k.element_size() == 1 and ks.dtype == torch.float32 and ks.is_contiguous()
            assert ks.shape == (b, hkv, ctx) and (ctx // s) % 32 == 0
            err = self.libs["split"].qd_decode_split(
                1 if kv_fmt == "int8" else 2, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                ks.data_ptr(), vs.data_ptr(), o.data_ptr(), ws["acc"].data_ptr(),
                ws["ml"].data_ptr(), b, hq, hkv, ctx, s, scale_log2, book_cuda.stream())
        book_cuda.check(err, f"decode attention ({kv_fmt} cache)")
        return o


def torch_attention(q, k, v, ks, vs):
    """The stand-in off the GPU: dequantize, then softmax attention per KV-head group."""
    b, hq, d = q.shape
    hkv = k.shape[1]
    kf, vf = k.float(), v.float()
    if ks is not None:
        kf, vf = kf * ks[..., None], vf * vs[..., None]
    qg = q.float().reshape(b, hkv, hq // hkv, d)
    p = torch.softmax(qg @ kf.transpose(-1, -2) / math.sqrt(d), dim=-1)
    return (p @ vf).reshape(b, hq * d).to(torch.bfloat16)


def load():
    """Compile the four libraries in parallel (nvcc runs in threads) and set their signatures."""
    with concurrent.futures.ThreadPoolExecutor(len(LIBS)) as pool:
        futs = {key: pool.submit(book_cuda.nvcc_library, f, c) for key, (f, c) in LIBS.items()}
        libs = {key: f.result() for key, f in futs.items()}
    for lib in libs.values():
        for name, args in ARGTYPES.items():
            if hasattr(lib, name):
                getattr(lib, name).argtypes = args
                getattr(lib, name).restype = ctypes.c_int
    return libs
