"""RMSNorm forward in Triton, beside eager PyTorch, torch.compile and the book's CUDA kernel.

y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c]: one reduction per row (the sum of
squares) and one element-wise pass, the same shape of work as softmax. The Triton program owns
one row; when the row fits in its registers it reads the row once (like `rmsnorm_block_vec4` in
kernels/rowwise/rmsnorm.cu), and for long rows a two-pass variant sums the squares chunk by chunk and
then reads the row again to scale it.

Every variant is checked against a float64 PyTorch RMSNorm before it is timed. The `baseline`
record is a plain torch copy of the same matrix.
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
EPS = 1e-6  # as the CUDA rmsnorm family
TOLERANCE = 1e-5  # ‖y − y_f64‖ / ‖y_f64‖ for FP32 math (the CUDA family uses the same)
WIDTHS = [1000, 4096, 20000] if labkit.QUICK else [1024, 2048, 4096, 8192, 16384, 32768, 65536]
INPUT_BYTES = 64 * 1024 if labkit.QUICK else 256 << 20  # each input at least this large
MAX_FUSED = 16384  # widest row one program keeps in registers
CHUNK = 4096  # part of the row the two-pass kernel loads at a time


# One program per row; the row is loaded once into registers. Masked-off columns read as 0,
# which adds nothing to the sum of squares; the mean divides by the true width `cols`.
@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # 64-bit: row * cols can pass 2^31 elements
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * cols + offs, x * r * w, mask=mask)


# One program per row, for rows too long for registers: pass 1 sums the squares chunk by
# chunk (each lane keeps its own partial sum, merged once at the end), pass 2 reads the row
# again and writes x * r * w.
@triton.jit
def rmsnorm_two_pass_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=0.0)
        acc += x * x
    r = tl.rsqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        tl.store(y_row + offs, x * r * w, mask=mask)


def fused_warps(block):
    """About 8 elements per thread: 4 warps for 1k columns, up to 32 warps (the maximum)."""
    return min(32, max(4, block // 256))


def rmsnorm_triton(x, w):
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    rmsnorm_kernel[(rows,)](x, w, y, cols, EPS, BLOCK=block, num_warps=fused_warps(block))
    return y


def rmsnorm_triton_two_pass(x, w):
    rows, cols = x.shape
    y = torch.empty_like(x)
    rmsnorm_two_pass_kernel[(rows,)](x, w, y, cols, EPS, BLOCK=CHUNK, num_warps=8)
    return y


# The formula as a model usually writes it: four kernels in eager mode (square, mean, rsqrt
# and the two multiplies are separate passes over memory unless something fuses them).
def rmsnorm_eager(x, w):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def rmsnorm_functional(x, w):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)


# ---- The book's CUDA kernel, loaded into PyTorch ------------------------------------------
# rmsnorm_block_vec4 from kernels/rowwise/rmsnorm.cu, compiled with its launcher by load_inline
# (book_cuda.py falls back to nvcc + ctypes without ninja). The kernel assumes 256 threads, cols
# divisible by 4 and at most 4 * 8 * 256 = 8192.

CUDA_LAUNCHER = r"""
torch::Tensor rmsnorm_launch(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "x and w must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "x and w must be float32");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 1 && w.size(0) == x.size(1), "x [rows, cols], w [cols]");
    TORCH_CHECK(x.is_contiguous() && w.is_contiguous(), "x and w must be contiguous");
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols % 4 == 0 && cols <= 8192, "rmsnorm_block_vec4 needs cols % 4 == 0, <= 8192");
    auto y = torch::empty_like(x);
    rmsnorm_block_vec4<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), rows, cols, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

# The same launch as a plain C function, for the nvcc + ctypes route (no ninja needed).
C_LAUNCHER = r"""
extern "C" int rmsnorm_c(const float* x, const float* w, float* y, int rows, int cols, float eps,
                         cudaStream_t s) {
    rmsnorm_block_vec4<<<rows, 256, 0, s>>>(x, w, y, rows, cols, eps);
    return (int)cudaGetLastError();
}
"""


def load_cuda_rmsnorm():
    """rmsnorm_block_vec4 as a function of tensors, and the route it was built by."""
    try:
        return book_cuda.load_inline_ext(
            "hdlc_lab_rmsnorm_block_vec4", "rowwise/rmsnorm.cu", CUDA_LAUNCHER,
            "torch::Tensor rmsnorm_launch(torch::Tensor x, torch::Tensor w, double eps);",
            "rmsnorm_launch"), "load_inline"
    except Exception as e:
        labkit.log(f"load_inline failed ({type(e).__name__}: {e}); trying nvcc + ctypes")
    lib = book_cuda.nvcc_library("rowwise/rmsnorm.cu", C_LAUNCHER)
    lib.rmsnorm_c.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                              ctypes.c_int, ctypes.c_float, ctypes.c_void_p]

    def run(x, w, eps):
        rows, cols = x.shape
        assert x.is_cuda and x.dtype == w.dtype == torch.float32 and x.is_contiguous()
        assert w.shape == (cols,) and cols % 4 == 0 and cols <= 8192
        y = torch.empty_like(x)
        book_cuda.check(lib.rmsnorm_c(x.data_ptr(), w.data_ptr(), y.data_ptr(), rows, cols, eps,
                                      book_cuda.stream()), "rmsnorm_block_vec4")
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
        compiled = torch.compile(rmsnorm_eager, dynamic=False)
    cuda_fn, cuda_error, cuda_label = None, "needs a CUDA GPU and nvcc", "CUDA rmsnorm_block_vec4"
    if GPU:
        try:
            cuda_fn, how = load_cuda_rmsnorm()
            if how != "load_inline":
                cuda_label += f" ({how})"
        except Exception as e:
            cuda_error = f"build failed: {type(e).__name__}: {e}"

    for cols in WIDTHS:
        rows = max(1, -(-INPUT_BYTES // (4 * cols)))
        params = {"rows": rows, "cols": cols}
        labkit.log(f"rmsnorm {rows} x {cols}")
        x = torch.randn(rows, cols, device=DEVICE)
        w = torch.rand(cols, device=DEVICE) + 0.5  # weights in [0.5, 1.5)
        xd = x.double()
        ref = xd * torch.rsqrt(xd.pow(2).mean(dim=-1, keepdim=True) + EPS) * w.double()
        n = rows * cols
        # 4 ops/element (book convention); read x, write y, read w once.
        work = {"flops": 4.0 * n, "bytes": 8.0 * n + 4.0 * cols}

        labkit.check_then_time("copy", "torch copy (same bytes)", params, lambda: x.clone(), xd, TOLERANCE,
                flops=0.0, bytes=8.0 * n, baseline=True)
        del xd
        labkit.check_then_time("eager", "PyTorch eager (formula)", params, lambda: rmsnorm_eager(x, w), ref, TOLERANCE, **work)
        if hasattr(torch.nn.functional, "rms_norm"):
            labkit.check_then_time("functional", "F.rms_norm", params, lambda: rmsnorm_functional(x, w), ref, TOLERANCE, **work)
        if compiled is not None:
            labkit.check_then_time("compiled", "torch.compile", params, lambda: compiled(x, w), ref, TOLERANCE, **work)
        else:
            labkit.failed("compiled", "torch.compile", params, "unsupported", "torch.compile is measured on the GPU only")
        if not TRITON_OK:
            for v, lbl in [("triton", "Triton (row in registers)"), ("triton_two_pass", "Triton (2 passes)")]:
                labkit.failed(v, lbl, params, "unsupported", "no GPU and TRITON_INTERPRET is not set")
        else:
            if cols <= MAX_FUSED:
                labkit.check_then_time("triton", "Triton (row in registers)", params, lambda: rmsnorm_triton(x, w), ref, TOLERANCE, **work)
            else:
                labkit.failed("triton", "Triton (row in registers)", params, "unsupported",
                              f"a row of {cols} columns does not fit one program's registers (limit {MAX_FUSED})")
            labkit.check_then_time("triton_two_pass", "Triton (2 passes)", params, lambda: rmsnorm_triton_two_pass(x, w), ref, TOLERANCE, **work)
        if cuda_fn is None:
            labkit.failed("cuda", cuda_label, params, "unsupported", cuda_error)
        elif cols % 4 != 0 or cols > 8192:
            labkit.failed("cuda", cuda_label, params, "unsupported",
                          "rmsnorm_block_vec4 keeps the row in registers: cols % 4 == 0 and cols <= 8192")
        else:
            labkit.check_then_time("cuda", cuda_label, params, lambda: cuda_fn(x, w, EPS), ref, TOLERANCE, **work)
        del x, w, ref
        if GPU:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
