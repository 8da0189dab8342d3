"""RMSNorm as a Pallas kernel (GPU, Triton backend) against what XLA generates for jnp code.

One idea: Pallas lets you write the kernel XLA would otherwise generate for you, one block of
rows per program, in jnp-like code on references to blocks (x_ref[...]). For a memory-bound row
operation the bar is the same as for the book's CUDA kernel (rmsnorm_block_vec4): read each row
once, write it once, and get close to the speed of an elementwise op over the same bytes.

Shape as in the CUDA RMSNorm card: rows 32768 x cols 4096, FP32, eps 1e-6. Variants:
  xla          jax.jit of the jnp formula (XLA fuses it into its own kernels)
  pallas_r1    pallas_call, one row per program (grid of 32768)
  pallas_r4    pallas_call, four rows per program (grid of 8192)
  negate       jax.jit(lambda x: -x): reads and writes the same bytes, the bandwidth baseline
Each is checked against a float64 NumPy RMSNorm (rel_error <= 1e-5) before it is timed.
bytes = the fewest moved: read x, write y, read w once. On a CPU (HDLC_LAB_QUICK=1) the Pallas
kernels run in interpret mode, which checks the kernel's logic, not its speed.
"""

import functools
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import triton as plt  # noqa: E402

QUICK = labkit.QUICK
ROWS, COLS = (64, 256) if QUICK else (32768, 4096)
EPS = 1e-6
TOL = 1e-5  # FP32 sum of 4096 squares and rsqrt, vs float64: as the CUDA RMSNorm benchmark
ON_GPU = jax.default_backend() == "gpu"


def rmsnorm_xla(x, w):
    """The formula in jnp; XLA decides how to fuse it into kernels."""
    r = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)
    return x * r * w


# ANCHOR: kernel
def rmsnorm_kernel(x_ref, w_ref, o_ref):
    """One program: a [block_rows, cols] block of x in, the same block of y out."""
    x = x_ref[...].astype(jnp.float32)               # load the block (from HBM, once)
    r = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)   # one scalar per row
    o_ref[...] = (x * r * w_ref[...]).astype(o_ref.dtype)               # store it once


def rmsnorm_pallas(x, w, block_rows=1):
    rows, cols = x.shape
    return pl.pallas_call(
        rmsnorm_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows // block_rows,),                                   # program i: rows of block i
        in_specs=[pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),  # x block i
                  pl.BlockSpec((cols,), lambda i: (0,))],              # all of w, every program
        out_specs=pl.BlockSpec((block_rows, cols), lambda i: (i, 0)),
        compiler_params=plt.CompilerParams(num_warps=8 if cols >= 2048 else 4, num_stages=1),
        interpret=not ON_GPU,
    )(x, w)
# ANCHOR_END: kernel


def main():
    kx, kw = jax.random.split(jax.random.key(labkit.SEED))
    x = jax.random.uniform(kx, (ROWS, COLS), jnp.float32, -1.0, 1.0)
    w = jax.random.uniform(kw, (COLS,), jnp.float32, 0.5, 1.5)
    x64, w64 = np.asarray(x, np.float64), np.asarray(w, np.float64)
    ref = x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + EPS) * w64
    shape = {"rows": ROWS, "cols": COLS}
    nbytes = 2 * ROWS * COLS * 4 + COLS * 4
    flops = 4 * ROWS * COLS  # square, add, scale, weight: the book's convention for RMSNorm

    def timer(fn):
        return labkit.time_wall(lambda: fn().block_until_ready())

    variants = [
        ("xla", "XLA (jax.jit of jnp)", jax.jit(rmsnorm_xla), False),
        ("pallas_r1", "Pallas, 1 row / program", jax.jit(functools.partial(rmsnorm_pallas, block_rows=1)), False),
        ("pallas_r4", "Pallas, 4 rows / program", jax.jit(functools.partial(rmsnorm_pallas, block_rows=4)), False),
    ]
    for rung, (variant, label, f, _) in enumerate(variants):
        if not ON_GPU:
            label += " [interpret mode, CPU]" if variant.startswith("pallas") else " [CPU]"
        labkit.check_then_time(variant, label, shape, lambda f=f: f(x, w), ref, TOL,
                               flops=flops, bytes=nbytes, rung=rung, timer=timer)
    neg = jax.jit(lambda a: -a)
    labkit.check_then_time("negate", "XLA -x (read + write, bandwidth baseline)", shape,
                           lambda: neg(x), -x64, 0.0, bytes=2 * ROWS * COLS * 4,
                           rung=len(variants), baseline=True, timer=timer)


if __name__ == "__main__":
    main()
