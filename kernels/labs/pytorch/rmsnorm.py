"""RMSNorm three ways at the CUDA card's shape: PyTorch eager, torch.compile, the book's kernel.

One idea: RMSNorm is memory-bound, so the question is only how close each version gets to a
plain copy of the same bytes. Eager PyTorch runs the formula as several kernels (square, mean,
rsqrt, two multiplies), each a trip through HBM; torch.compile fuses them into one generated
Triton kernel; the book's `rmsnorm_block_vec4` (kernels/rowwise/rmsnorm.cu, the CUDA RMSNorm card) is
loaded into PyTorch with torch.utils.cpp_extension.load_inline and reads each row once.

Shape: rows 32768 × cols 4096, FP32 (kernels' plan), eps 1e-6. Bytes = fewest moved (read x,
write y, read w). Baseline: a torch copy of the same x into y, measured in the same run.
Each variant is checked against a float64 RMSNorm (rel_error ≤ 1e-5, as the CUDA harness) first.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import torch  # noqa: E402

QUICK = labkit.QUICK
DEV = labkit.torch_device()
ROWS, COLS = (64, 256) if QUICK else (32768, 4096)
EPS = 1e-6
TOL = 1e-5
KERNELS = pathlib.Path(__file__).resolve().parents[2]
KERNEL_FILE = KERNELS / "rowwise/rmsnorm.cu"
# The shared headers the kernel file includes (cluster_sync.cuh) live here.
COMMON = KERNELS / "common"
CPP_DECL = "torch::Tensor rmsnorm_vec4(torch::Tensor x, torch::Tensor w, double eps);"

# ANCHOR: launcher
LAUNCHER = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

torch::Tensor rmsnorm_vec4(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "x and w must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "x and w must be float32");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 1 && w.size(0) == x.size(1), "x [rows, cols], w [cols]");
    TORCH_CHECK(x.is_contiguous() && w.is_contiguous(), "x and w must be contiguous");
    TORCH_CHECK(x.size(1) % 4 == 0 && x.size(1) <= 8192, "cols: a multiple of 4, at most 8192");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0 &&
                reinterpret_cast<uintptr_t>(w.data_ptr()) % 16 == 0, "16-byte aligned (float4)");
    auto y = torch::empty_like(x);
    const int rows = x.size(0), cols = x.size(1);
    if (rows == 0) return y;
    rmsnorm_block_vec4<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), rows, cols, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


def load_book_kernel():
    """Compile kernels/rowwise/rmsnorm.cu (read from the file, not copied) plus the launcher above."""
    from torch.utils.cpp_extension import load_inline
    src = KERNEL_FILE.read_text()  # the lab depends on "rowwise/rmsnorm.cu": its hash is in the key
    ext = load_inline(name="hdlc_rmsnorm_vec4", cpp_sources=CPP_DECL,
                      cuda_sources=src + LAUNCHER, functions=["rmsnorm_vec4"],
                      extra_cuda_cflags=["-O3"], extra_include_paths=[str(COMMON)],
                      verbose=False)
    return ext.rmsnorm_vec4
# ANCHOR_END: launcher

# Fallback when load_inline cannot build (it needs the `ninja` package): the same kernel file
# compiled by nvcc into a shared library with a plain C launcher, called through ctypes on
# PyTorch's current stream. Same kernel, same launch configuration; only the binding differs.
C_LAUNCHER = r"""
extern "C" int launch_rmsnorm_vec4(const float* x, const float* w, float* y, int rows, int cols,
                                   float eps, void* stream) {
    rmsnorm_block_vec4<<<rows, 256, 0, (cudaStream_t)stream>>>(x, w, y, rows, cols, eps);
    return (int)cudaGetLastError();
}
"""


def load_book_kernel_nvcc():
    import ctypes
    import subprocess
    import tempfile
    major, minor = torch.cuda.get_device_capability()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="hdlc_rmsnorm_"))
    (tmp / "k.cu").write_text(KERNEL_FILE.read_text() + C_LAUNCHER)
    from torch.utils.cpp_extension import CUDA_HOME  # where PyTorch found the toolkit, if anywhere
    nvcc = str(pathlib.Path(CUDA_HOME) / "bin" / "nvcc") if CUDA_HOME else "nvcc"
    proc = subprocess.run([nvcc, "-O3", "-shared", "-Xcompiler", "-fPIC",
                           f"-arch=sm_{major}{minor}", "-I", str(COMMON), "-o", str(tmp / "k.so"),
                           str(tmp / "k.cu")],
                          check=False, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"nvcc failed: {proc.stderr[-1500:]}")
    lib = ctypes.CDLL(str(tmp / "k.so"))
    lib.launch_rmsnorm_vec4.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 2 + \
        [ctypes.c_float, ctypes.c_void_p]

    def rmsnorm_vec4(x, w, eps):
        assert x.is_cuda and x.dtype == torch.float32 and x.is_contiguous() and x.shape[1] % 4 == 0
        y = torch.empty_like(x)
        rc = lib.launch_rmsnorm_vec4(x.data_ptr(), w.data_ptr(), y.data_ptr(), x.shape[0],
                                     x.shape[1], eps, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"kernel launch failed: cudaError {rc}")
        return y
    return rmsnorm_vec4


def main():
    g = torch.Generator().manual_seed(labkit.SEED)
    x = (torch.rand(ROWS, COLS, generator=g) * 2 - 1).to(DEV)  # [-1, 1), as the CUDA harness
    w = (torch.rand(COLS, generator=g) + 0.5).to(DEV)  # [0.5, 1.5)
    xd, wd = x.double(), w.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + EPS) * wd
    del xd, wd
    params = {"rows": ROWS, "cols": COLS}
    nbytes = 2 * ROWS * COLS * 4 + COLS * 4
    flops = 4 * ROWS * COLS  # square, add, scale, weight: the CUDA card's convention

    y = torch.empty_like(x)
    labkit.check_then_time("copy", "torch copy_ (baseline)", params, lambda: y.copy_(x), x, 0.0,
                           bytes=nbytes, rung=0, baseline=True)

    norm = model.RMSNorm(model.Config(d_model=COLS, eps=EPS)).to(DEV)
    with torch.no_grad():
        norm.weight.copy_(w)
    norm.requires_grad_(False)
    labkit.check_then_time("eager", "PyTorch eager (model.RMSNorm)", params, lambda: norm(x), ref,
                           TOL, flops=flops, bytes=nbytes, rung=1)

    if DEV != "cuda":  # on a CPU Inductor would build C++ instead of Triton (and take a minute)
        labkit.failed("compiled", "torch.compile", params, "unsupported", "GPU (Triton) only here",
                      rung=2)
    else:
        compiled = torch.compile(norm)
        labkit.check_then_time("compiled", "torch.compile", params, lambda: compiled(x), ref, TOL,
                               flops=flops, bytes=nbytes, rung=2)

    label = "book CUDA rmsnorm_block_vec4 (load_inline)"
    if DEV != "cuda":
        labkit.failed("cuda_vec4", label, params, "unsupported", "needs a CUDA GPU and nvcc", rung=3)
        return
    try:
        kernel = load_book_kernel()
    except Exception as e:  # e.g. no ninja: build the same file with nvcc instead, and say so
        labkit.log(f"load_inline failed ({type(e).__name__}: {e}); trying nvcc + ctypes")
        label = "book CUDA rmsnorm_block_vec4 (nvcc + ctypes)"
        try:
            kernel = load_book_kernel_nvcc()
        except Exception as e2:
            labkit.failed("cuda_vec4", label, params, "launch",
                          f"build: {type(e2).__name__}: {e2}", rung=3)
            return
    labkit.check_then_time("cuda_vec4", label, params, lambda: kernel(x, w, EPS), ref, TOL,
                           flops=flops, bytes=nbytes, rung=3)


if __name__ == "__main__":
    main()
