"""BF16 matrix multiplication in Triton, beside torch.matmul (cuBLAS) and torch.compile.

The idea of this lab: a tiled GEMM where each Triton program computes one BLOCK_M x BLOCK_N tile
of C by walking K in BLOCK_K steps and calling tl.dot on tiles in registers/shared memory. The
compiler picks the tensor-core instructions, stages the tiles through shared memory and
pipelines the loads; the programmer chooses the tile sizes (a small autotune list) and the
order in which programs visit tiles (grouped, so tiles that share rows of A and columns of B run
close together in time and find them in L2).

C = A @ B with A [M, K], B [K, N] in BF16, accumulated in FP32, written in BF16. Checked against
an FP32 PyTorch product of the same BF16 inputs before timing; flops = 2·M·N·K.
"""

import ctypes
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
# Triton's CPU interpreter multiplies BF16 tiles wrongly in tl.dot (it reads their bits as
# integers), so the smoke test off the GPU runs the same kernel on FP32 inputs.
DTYPE = torch.bfloat16 if GPU else torch.float32
TRITON_OK = GPU or os.environ.get("TRITON_INTERPRET") == "1"
# BF16 output rounding alone gives a relative error of about 2^-9 / sqrt(3) ≈ 1e-3.
TOLERANCE = 5e-3
SIZES = [96, 160] if labkit.QUICK else [4096, 8192]

# A small list of tile shapes for Hopper-class GPUs; the autotuner times each once per size
# (key: M, N, K) and keeps the fastest. One config off the GPU (nothing to tune in the
# interpreter).
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=4),
] if GPU else [
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 2}, num_stages=1, num_warps=4),
]


# One program computes one BLOCK_M x BLOCK_N tile of C.
@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    # Grouped launch order: program ids run down GROUP_M tile-rows before moving one
    # tile-column right, so programs that run at the same time share A rows and B columns.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)  # the last group may be shorter
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    # Row and column indices of this tile. Wrapping them modulo M and N keeps every load in
    # bounds without a mask; the rows and columns past the edge are dropped by the store mask.
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # masks only matter on the last step when K % BLOCK_K != 0
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)  # tensor cores: BF16 inputs, FP32 accumulator
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


def matmul_triton(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))
    return c


def matmul_torch(a, b):
    return torch.matmul(a, b)


# ---- The book's CUDA kernel, loaded into PyTorch ------------------------------------------
# tc_mma_pipeline from kernels/gemm/tc_gemm.cu (mma.sync m16n8k16, ldmatrix, a 3-stage cp.async
# pipeline), compiled with a launcher by load_inline (book_cuda.py falls back to nvcc + ctypes
# without ninja). As in the tc_gemm family it takes B
# transposed (Bt is N x K, row-major), writes C in FP32, and needs M, N divisible by 128 and K
# by 64; launch: one 128-thread block per 128 x 128 tile, 3 * 256 * 72 * 2 B of shared memory.
# (The family's fastest rung, tc_wgmma, needs TMA descriptors built on the host; it is measured
# by the tc_gemm family, not here.)

CUDA_LAUNCHER = r"""
torch::Tensor mma_pipeline_launch(torch::Tensor a, torch::Tensor bt) {
    TORCH_CHECK(a.is_cuda() && bt.is_cuda() && a.scalar_type() == torch::kBFloat16 &&
                bt.scalar_type() == torch::kBFloat16, "a and bt must be CUDA bfloat16");
    TORCH_CHECK(a.dim() == 2 && bt.dim() == 2 && a.size(1) == bt.size(1), "a [M, K], bt [N, K]");
    TORCH_CHECK(a.is_contiguous() && bt.is_contiguous(), "a and bt must be contiguous");
    const int M = a.size(0), K = a.size(1), N = bt.size(0);
    TORCH_CHECK(M % 128 == 0 && N % 128 == 0 && K % 64 == 0, "M, N % 128 == 0 and K % 64 == 0");
    auto c = torch::empty({M, N}, a.options().dtype(torch::kFloat32));
    const int smem = 3 * 256 * 72 * 2;
    C10_CUDA_CHECK(cudaFuncSetAttribute(tc_mma_pipeline,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    tc_mma_pipeline<<<(M / 128) * (N / 128), 128, smem, at::cuda::getCurrentCUDAStream()>>>(
        M, N, K, reinterpret_cast<const bf16_t*>(a.data_ptr()),
        reinterpret_cast<const bf16_t*>(bt.data_ptr()), c.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

# The same launch as a plain C function, for the nvcc + ctypes route (no ninja needed).
C_LAUNCHER = r"""
extern "C" int mma_pipeline_c(int M, int N, int K, const void* a, const void* bt, float* c,
                              cudaStream_t s) {
    const int smem = 3 * 256 * 72 * 2;
    cudaError_t e = cudaFuncSetAttribute(tc_mma_pipeline,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return (int)e;
    tc_mma_pipeline<<<(M / 128) * (N / 128), 128, smem, s>>>(
        M, N, K, (const bf16_t*)a, (const bf16_t*)bt, c);
    return (int)cudaGetLastError();
}
"""


def load_cuda_matmul():
    """tc_mma_pipeline as a function of (A, Bᵀ), and the route it was built by."""
    try:
        return book_cuda.load_inline_ext(
            "hdlc_lab_tc_mma_pipeline", "gemm/tc_gemm.cu", CUDA_LAUNCHER,
            "torch::Tensor mma_pipeline_launch(torch::Tensor a, torch::Tensor bt);",
            "mma_pipeline_launch"), "load_inline"
    except Exception as e:
        labkit.log(f"load_inline failed ({type(e).__name__}: {e}); trying nvcc + ctypes")
    lib = book_cuda.nvcc_library("gemm/tc_gemm.cu", C_LAUNCHER)
    lib.mma_pipeline_c.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]

    def run(a, bt):
        (M, K), (N, _) = a.shape, bt.shape
        assert a.dtype == bt.dtype == torch.bfloat16 and a.is_contiguous() and bt.is_contiguous()
        assert M % 128 == 0 and N % 128 == 0 and K % 64 == 0 and bt.shape[1] == K
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        book_cuda.check(lib.mma_pipeline_c(M, N, K, a.data_ptr(), bt.data_ptr(), c.data_ptr(),
                                           book_cuda.stream()), "tc_mma_pipeline")
        return c
    return run, "nvcc + ctypes"


def main():
    torch.manual_seed(labkit.SEED)
    compiled = torch.compile(matmul_torch, dynamic=False) if GPU else None
    cuda_fn, cuda_error, cuda_label = None, "needs a CUDA GPU and nvcc", "CUDA tc_mma_pipeline (FP32 C)"
    if GPU:
        try:
            cuda_fn, how = load_cuda_matmul()
            if how != "load_inline":
                cuda_label += f", {how}"
        except Exception as e:
            cuda_error = f"build failed: {type(e).__name__}: {e}"
    for size in SIZES:
        M = N = K = size
        params = {"m": M, "n": N, "k": K}
        labkit.log(f"matmul {M} x {N} x {K}")
        a = torch.randn(M, K, device=DEVICE).to(DTYPE)
        b = torch.randn(K, N, device=DEVICE).to(DTYPE)
        ref = a.float() @ b.float()  # FP32 product of the same BF16 inputs (TF32 is off by default)
        s = a.element_size()
        work = {"flops": 2.0 * M * N * K, "bytes": float(s * (M * K + K * N + M * N))}

        labkit.check_then_time("cublas", "torch.matmul (cuBLAS)", params, lambda: matmul_torch(a, b),
                               ref, TOLERANCE, baseline=True, **work)
        if compiled is not None:
            labkit.check_then_time("compiled", "torch.compile", params, lambda: compiled(a, b),
                                   ref, TOLERANCE, **work)
        else:
            labkit.failed("compiled", "torch.compile", params, "unsupported", "torch.compile is measured on the GPU only")
        if TRITON_OK:
            labkit.check_then_time("triton", "Triton tl.dot (autotuned)", params,
                                   lambda: matmul_triton(a, b), ref, TOLERANCE, **work)
        else:
            labkit.failed("triton", "Triton tl.dot (autotuned)", params, "unsupported",
                          "no GPU and TRITON_INTERPRET is not set")
        if cuda_fn is None:
            labkit.failed("cuda", cuda_label, params, "unsupported", cuda_error)
        elif M % 128 or N % 128 or K % 64:
            labkit.failed("cuda", cuda_label, params, "unsupported", "tc_mma_pipeline needs M, N % 128 == 0, K % 64 == 0")
        else:
            bt = b.t().contiguous()  # the kernel's operand layout, prepared outside the timing
            labkit.check_then_time("cuda", cuda_label, params, lambda: cuda_fn(a, bt), ref, TOLERANCE,
                                   flops=work["flops"], bytes=float(2 * (M * K + K * N) + 4 * M * N))
            del bt
        del a, b, ref


if __name__ == "__main__":
    main()
