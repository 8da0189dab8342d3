"""The JAX twin of the lab model gives the PyTorch model's logits, then its forward is timed.

One idea: a model written as pure functions over a pytree is the same model as the nn.Module
one, and that is checked, not assumed. The PyTorch lab model (kernels/labs/pytorch/model.py) is
built with seed 0; its state_dict is converted to the JAX pytree (linear weights transposed);
both run the same tokens. The reference is the PyTorch model in float64; the JAX forward is
checked in float32 (matmul precision "highest", so no TF32) and in bf16, each against it, and
only then timed at batch 32 x seq 256 with labkit.time_wall around block_until_ready().
The PyTorch reference runs on the CPU, so torch never initializes CUDA in this process.
Without torch the reference is a float64 NumPy forward of the same pytree (the label says so).
"""

import os
import pathlib
import sys

# Leave GPU memory to whoever else needs it (the runner's probe does the same).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import twin  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

QUICK = labkit.QUICK
CFG = model.TINY if QUICK else model.HDLC_LAB
B, S = (2, 32) if QUICK else (32, 256)
# float32 at "highest" matmul precision vs float64: rounding of 2^-24 per op, summed over
# 8 layers of d=512 dot products, stays near 1e-6; 1e-4 leaves room for XLA's reordering.
# bf16 keeps 8 significant bits (2^-9 per rounding); over a whole 8-layer model 5e-2, the
# same bound the PyTorch forward lab uses for its whole model.
TOL_F32, TOL_BF16 = 1e-4, 5e-2


# ANCHOR: numpy_reference
def numpy_forward(params, tokens, cfg):
    """float64 NumPy forward of the same pytree: the fallback reference when torch is absent."""
    p64 = jax.tree.map(lambda a: np.asarray(a, np.float64), params)

    def norm(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + cfg.eps) * w

    s, half = tokens.shape[1], cfg.d_head // 2
    ang = np.arange(s)[:, None] * cfg.rope_theta ** (-np.arange(half) / half)[None, :]
    cos, sin = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]

    def rope(x):
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    x = p64["embed"][tokens]
    b, g = tokens.shape[0], cfg.n_heads // cfg.n_kv_heads
    mask = np.triu(np.full((s, s), -np.inf), 1)
    for p in p64["layers"]:
        h = norm(x, p["attn_norm"])
        q = rope((h @ p["wq"]).reshape(b, s, cfg.n_heads, cfg.d_head))
        k = np.repeat(rope((h @ p["wk"]).reshape(b, s, cfg.n_kv_heads, cfg.d_head)), g, axis=2)
        v = np.repeat((h @ p["wv"]).reshape(b, s, cfg.n_kv_heads, cfg.d_head), g, axis=2)
        sc = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(cfg.d_head) + mask
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        x = x + np.einsum("bhqk,bkhd->bqhd", pr, v).reshape(b, s, -1) @ p["wo"]
        h = norm(x, p["mlp_norm"])
        gate = h @ p["w_gate"]
        x = x + (gate / (1 + np.exp(-gate)) * (h @ p["w_up"])) @ p["w_down"]
    return norm(x, p64["final_norm"]) @ p64["lm_head"]
# ANCHOR_END: numpy_reference


def reference(tokens_np):
    """(JAX params, float64 reference logits, what the reference is) for the seeded model."""
    if twin.torch_available():
        import torch
        pt = twin.build_pt(CFG, seed=0)
        params = model.from_torch_state_dict(pt.state_dict(), CFG)
        # float64 on the CPU (a few seconds at 32 x 256): torch never touches the GPU, so
        # the two frameworks' CUDA libraries and allocators cannot get in each other's way.
        with torch.no_grad():
            ref = pt.double()(torch.from_numpy(tokens_np).long()).numpy()
        return params, ref, "PyTorch float64"
    params = model.init_params(jax.random.key(0), CFG)
    return params, numpy_forward(params, tokens_np, CFG), "NumPy float64 (no torch)"


def main():
    rng = np.random.default_rng(labkit.SEED)
    tokens_np = rng.integers(0, CFG.vocab, size=(B, S), dtype=np.int32)
    params, ref, ref_name = reference(tokens_np)
    tokens = jnp.asarray(tokens_np)
    fwd = jax.jit(model.forward, static_argnums=2)
    flops = model.flops_per_token(CFG, S) * B * S
    kind = jax.devices()[0].device_kind
    shape = {"batch": B, "seq": S}
    metrics = {"params_count": model.param_count(params)}

    for rung, (variant, dtype, tol, precision) in enumerate([
            ("f32", jnp.float32, TOL_F32, "highest"),
            ("bf16", jnp.bfloat16, TOL_BF16, "default")]):
        p = model.cast_params(params, dtype)

        def run(p=p, precision=precision):
            with jax.default_matmul_precision(precision):
                return fwd(p, tokens, CFG).block_until_ready()

        label = f"JAX {variant} forward vs {ref_name}"
        try:
            err = labkit.rel_error(np.asarray(run(), np.float64), ref)
        except Exception as e:
            labkit.failed(variant, label, shape, "launch", f"{type(e).__name__}: {e}", rung=rung)
            continue
        labkit.log(f"{variant}: rel_error {err:.2e} vs {ref_name} (tolerance {tol:.0e})")
        if not err <= tol:
            labkit.failed(variant, label, shape, "verify",
                          f"rel_error {err:.3e} exceeds tolerance {tol:.1e}", rung=rung)
            continue
        timing = labkit.time_wall(run)
        m = dict(metrics)
        if dtype == jnp.bfloat16:
            m.update(twin.mfu_metrics(flops, timing["median_ms"], kind))
        labkit.ok(variant, label, shape, timing, rel_error=err, tolerance=tol, flops=flops,
                  rung=rung, metrics=m)


if __name__ == "__main__":
    main()
