"""Row softmax in Triton, beside eager PyTorch, torch.compile and the book's CUDA kernel.

The idea of this lab: a row-wise, memory-bound operation written as a Triton program that owns
one row. When the row fits in one program's registers (BLOCK = next power of two of the width),
the matrix crosses device memory once each way, like the CUDA `softmax_fused` of
kernels/rowwise/softmax.cu. Longer rows do not fit; the online variant walks the row in chunks twice
(pass 1: running max and sum, pass 2: normalize and write), so 64k columns work at the price of
a second read.

Every variant is checked against a float64 PyTorch softmax before it is timed. The `baseline`
record is a plain torch copy of the same matrix: the bytes a softmax cannot avoid moving.
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
    # Off the GPU, Triton kernels run in its interpreter (numpy): fine for a smoke test.
    os.environ.setdefault("TRITON_INTERPRET", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cuda" if GPU else "cpu"
TRITON_OK = GPU or os.environ.get("TRITON_INTERPRET") == "1"
TOLERANCE = 1e-5  # ‖y − y_f64‖ / ‖y_f64‖ for FP32 math (the CUDA family uses the same)
WIDTHS = [1000, 4096, 20000] if labkit.QUICK else [1024, 2048, 4096, 8192, 16384, 32768, 65536]
INPUT_BYTES = 64 * 1024 if labkit.QUICK else 256 << 20  # each input at least this large
MAX_FUSED = 16384  # widest row one program keeps in registers
ONLINE_BLOCK = 4096  # chunk of the row the online kernel loads at a time


# One program per row; the whole row is loaded once into registers. Columns past the end
# of the row are masked off and read as -inf, so they change neither the max nor the sum.
@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # 64-bit: row * cols can pass 2^31 elements
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    tl.store(y_ptr + row * cols + offs, e / s, mask=mask)


# One program per row, for rows too long for registers. Pass 1 keeps, per lane, a running
# max m and a sum s relative to it (the online softmax): when a larger value arrives, s is
# rescaled by exp(m_old - m_new). The lanes are then merged into one (max, sum) for the row.
# Pass 2 reads the row again and writes exp(x - max) / sum.
@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        # A lane that has only seen masked columns keeps m = -inf; keep its sum at 0
        # instead of computing exp(-inf - (-inf)) = NaN.
        seen = m_new > -float("inf")
        s = tl.where(seen, s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    inv = 1.0 / row_sum
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        tl.store(y_row + offs, tl.exp(x - row_max) * inv, mask=mask)


def fused_warps(block):
    """About 8 elements per thread: 4 warps for 1k columns, up to 32 warps (the maximum)."""
    return min(32, max(4, block // 256))


def softmax_triton(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=fused_warps(block))
    return y


def softmax_triton_online(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    softmax_online_kernel[(rows,)](x, y, cols, BLOCK=ONLINE_BLOCK, num_warps=8)
    return y


def softmax_eager(x):
    return torch.softmax(x, dim=-1)


# ---- The book's CUDA kernel, loaded into PyTorch ------------------------------------------
# softmax_fused from kernels/rowwise/softmax.cu, compiled with its launcher by load_inline (book_cuda.py
# falls back to nvcc + ctypes without ninja). The kernel assumes 256 threads, cols divisible by
# 4 and at most 4 * 8 * 256 = 8192 (a row in registers).

CUDA_LAUNCHER = r"""
torch::Tensor softmax_fused_launch(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be CUDA float32");
    TORCH_CHECK(x.dim() == 2 && x.is_contiguous(), "x must be a contiguous [rows, cols]");
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols % 4 == 0 && cols <= 8192, "softmax_fused needs cols % 4 == 0, cols <= 8192");
    auto y = torch::empty_like(x);
    softmax_fused<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

# The same launch as a plain C function, for the nvcc + ctypes route (no ninja needed).
C_LAUNCHER = r"""
extern "C" int softmax_fused_c(const float* x, float* y, int rows, int cols, cudaStream_t s) {
    softmax_fused<<<rows, 256, 0, s>>>(x, y, cols);
    return (int)cudaGetLastError();
}
"""


def load_cuda_softmax():
    """softmax_fused as a function of a tensor, and the route it was built by."""
    try:
        return book_cuda.load_inline_ext(
            "hdlc_lab_softmax_fused", "rowwise/softmax.cu", CUDA_LAUNCHER,
            "torch::Tensor softmax_fused_launch(torch::Tensor x);", "softmax_fused_launch"), "load_inline"
    except Exception as e:
        labkit.log(f"load_inline failed ({type(e).__name__}: {e}); trying nvcc + ctypes")
    lib = book_cuda.nvcc_library("rowwise/softmax.cu", C_LAUNCHER)
    lib.softmax_fused_c.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                    ctypes.c_void_p]

    def run(x):
        rows, cols = x.shape
        assert x.is_cuda and x.dtype == torch.float32 and x.is_contiguous()
        assert cols % 4 == 0 and cols <= 8192
        y = torch.empty_like(x)
        book_cuda.check(lib.softmax_fused_c(x.data_ptr(), y.data_ptr(), rows, cols, book_cuda.stream()),
                        "softmax_fused")
        return y
    return run, "nvcc + ctypes"


def main():
    torch.manual_seed(labkit.SEED)
    compiled = None
    if GPU:
        import torch._dynamo as dynamo
        for knob in ("recompile_limit", "cache_size_limit"):  # one specialised graph per width
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 64)
        compiled = torch.compile(softmax_eager, dynamic=False)
    cuda_fn, cuda_error, cuda_label = None, "needs a CUDA GPU and nvcc", "CUDA softmax_fused"
    if GPU:
        try:
            cuda_fn, how = load_cuda_softmax()
            if how != "load_inline":
                cuda_label += f" ({how})"
        except Exception as e:
            cuda_error = f"build failed: {type(e).__name__}: {e}"

    for cols in WIDTHS:
        rows = max(1, -(-INPUT_BYTES // (4 * cols)))
        params = {"rows": rows, "cols": cols}
        labkit.log(f"softmax {rows} x {cols}")
        x = torch.randn(rows, cols, device=DEVICE)
        ref = torch.softmax(x.double(), dim=-1)
        n = rows * cols
        work = {"flops": 5.0 * n, "bytes": 8.0 * n}  # 5 ops/element (book convention); read + write

        labkit.check_then_time("copy", "torch copy (same bytes)", params, lambda: x.clone(), x.double(), TOLERANCE,
                flops=0.0, bytes=8.0 * n, baseline=True)
        labkit.check_then_time("eager", "PyTorch eager", params, lambda: softmax_eager(x), ref, TOLERANCE, **work)
        if compiled is not None:
            labkit.check_then_time("compiled", "torch.compile", params, lambda: compiled(x), ref, TOLERANCE, **work)
        else:
            labkit.failed("compiled", "torch.compile", params, "unsupported", "torch.compile is measured on the GPU only")
        if not TRITON_OK:
            for v, lbl in [("triton", "Triton (row in registers)"), ("triton_online", "Triton (online, 2 passes)")]:
                labkit.failed(v, lbl, params, "unsupported", "no GPU and TRITON_INTERPRET is not set")
        else:
            if cols <= MAX_FUSED:
                labkit.check_then_time("triton", "Triton (row in registers)", params, lambda: softmax_triton(x), ref, TOLERANCE, **work)
            else:
                labkit.failed("triton", "Triton (row in registers)", params, "unsupported",
                              f"a row of {cols} columns does not fit one program's registers (limit {MAX_FUSED})")
            labkit.check_then_time("triton_online", "Triton (online, 2 passes)", params, lambda: softmax_triton_online(x), ref, TOLERANCE, **work)
        if cuda_fn is None:
            labkit.failed("cuda", cuda_label, params, "unsupported", cuda_error)
        elif cols % 4 != 0 or cols > 8192:
            labkit.failed("cuda", cuda_label, params, "unsupported",
                          "softmax_fused keeps the row in registers: cols % 4 == 0 and cols <= 8192")
        else:
            labkit.check_then_time("cuda", cuda_label, params, lambda: cuda_fn(x), ref, TOLERANCE, **work)
        del x, ref
        if GPU:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
