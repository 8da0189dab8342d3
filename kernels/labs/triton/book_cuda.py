"""The book's CUDA kernels (kernels/<area>/*.cu) inside a PyTorch lab.

First choice: torch.utils.cpp_extension.load_inline, the way the book teaches it (a launcher that
takes torch.Tensor). It needs the `ninja` build tool; when that (or the build) fails, the same
.cu file is compiled by nvcc into a shared library with a plain C launcher and called through
ctypes with raw device pointers on PyTorch's current stream. Either way the kernel source is the
file itself, read as is; the returned `how` says which route was taken so a record can say so.
"""

import ctypes
import hashlib
import pathlib
import subprocess
import tempfile

KERNELS = pathlib.Path(__file__).resolve().parents[2]
# The headers kernel files include by bare name (`#include "cluster_sync.cuh"`) live here.
COMMON = KERNELS / "common"

# Headers go first, ahead of the .cu file, so its macros (FULL_MASK, MAX_VEC, ...) cannot
# reach into them.
TORCH_HEADERS = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
"""


def load_inline_ext(name, cu_file, launcher, declaration, function):
    """Build `launcher` (C++ taking torch.Tensor) after the text of kernels/<cu_file>
    (`cu_file` names its area folder, e.g. "rowwise/rmsnorm.cu")."""
    from torch.utils.cpp_extension import load_inline
    source = (KERNELS / cu_file).read_text()
    ext = load_inline(name=name, cpp_sources=declaration,
                      cuda_sources=TORCH_HEADERS + source + launcher,
                      functions=[function], extra_cuda_cflags=["-O3"],
                      extra_include_paths=[str(COMMON)])
    return getattr(ext, function)


def nvcc_library(cu_file, c_launcher):
    """Compile kernels/<cu_file> + `c_launcher` (extern "C" functions) with nvcc; a ctypes CDLL."""
    import torch
    from torch.utils.cpp_extension import CUDA_HOME  # where PyTorch found the toolkit, if anywhere
    major, minor = torch.cuda.get_device_capability()
    source = "#include <cuda_runtime.h>\n" + (KERNELS / cu_file).read_text() + c_launcher
    # The headers join the key of the cached library: editing one rebuilds it.
    headers = "".join(h.read_text() for h in sorted(COMMON.glob("*.cuh")))
    key = hashlib.sha256(f"{major}{minor}\n{source}\n{headers}".encode()).hexdigest()[:16]
    out_dir = pathlib.Path(tempfile.gettempdir()) / "hdlc_lab_cuda"
    out_dir.mkdir(exist_ok=True)
    lib = out_dir / f"{pathlib.Path(cu_file).stem}_{key}.so"
    if not lib.exists():
        src = out_dir / f"{pathlib.Path(cu_file).stem}_{key}.cu"
        src.write_text(source)
        nvcc = str(pathlib.Path(CUDA_HOME) / "bin" / "nvcc") if CUDA_HOME else "nvcc"
        proc = subprocess.run([nvcc, "-O3", "-shared", "-Xcompiler", "-fPIC",
                               f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}",
                               "-I", str(COMMON), "-o", str(lib), str(src)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed: {proc.stderr[-1500:]}")
    return ctypes.CDLL(str(lib))


def check(status, what):
    """A C launcher returns cudaGetLastError() as an int: 0 is success."""
    if status != 0:
        raise RuntimeError(f"{what}: CUDA error {status}")


def stream():
    """PyTorch's current stream as a raw handle for a C launcher."""
    import torch
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
