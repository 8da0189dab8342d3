"""Train the JAX twin of hdlc-lab on the book's own text: FP32 vs TF32 vs BF16, the JAX way.

One idea: in JAX a training step is a pure function (params, opt_state, key) -> (params,
opt_state, key, loss). jax.value_and_grad gives the loss and the gradient pytree, optax turns
the gradients into updates and returns its state explicitly, and jax.jit compiles the whole step
(batch sampling, forward, backward, clipping, AdamW) into one XLA program.

Everything that decides what is learned is the PyTorch training lab's (kernels/labs/pytorch/
train.py), so the two can share a page: the corpus (cards/**/*.md bytes in sorted path order,
90/10 split), batch 32 x seq 256, 400 steps, AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1
on matrices only), lr 3e-4 with 50 warm-up steps then cosine to 10%, clipping at 1.0, validation
every 50 steps on 8 fixed batches, the same loss bound. Batches are drawn with JAX's PRNG, so
they are other windows of the same corpus than PyTorch's.
Verification before any number is reported: gradients on the TINY config vs float64 (PyTorch
autograd on the same weights, or JAX in float64 without torch), and the final validation loss
below LOSS_BOUND = 0.6 * ln 256. Timing: labkit.time_wall around each step, which ends in
block_until_ready(); the first steps (compilation) are left out.
"""

import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import twin  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

QUICK = labkit.QUICK
ROOT = pathlib.Path(__file__).resolve().parents[3]
CFG = model.TINY if QUICK else model.HDLC_LAB
BATCH, SEQ = (4, 32) if QUICK else (32, 256)
STEPS = 30 if QUICK else 400
WARMUP = 5 if QUICK else 50
LR, MIN_LR_FRAC, CLIP, WD = 3e-4 if not QUICK else 1e-3, 0.1, 1.0, 0.1
EVAL_EVERY, EVAL_BATCHES = (10, 2) if QUICK else (50, 8)
TIMING_SKIP = 3 if QUICK else 20  # steps left out of the timing (the first one compiles)
LOSS_BOUND = (0.9 if QUICK else 0.6) * math.log(256)
ON_GPU = jax.default_backend() == "gpu"


def load_corpus():
    """All card files as one byte array on the device, split 90/10 into train and validation."""
    files = sorted(ROOT.glob("cards/**/*.md"))
    data = np.frombuffer(b"".join(f.read_bytes() for f in files), dtype=np.uint8)
    split = int(0.9 * len(data))
    return jnp.asarray(data[:split], jnp.int32), jnp.asarray(data[split:], jnp.int32)


# ANCHOR: sample_batch
def sample_batch(key, data):
    """BATCH random windows of SEQ + 1 bytes; the key is the only source of randomness."""
    starts = jax.random.randint(key, (BATCH,), 0, data.shape[0] - SEQ - 1)
    return jax.vmap(lambda s: jax.lax.dynamic_slice(data, (s,), (SEQ + 1,)))(starts)
# ANCHOR_END: sample_batch


# ANCHOR: optimizer
def lr_at(step):
    """Linear warm-up to LR over WARMUP steps, then cosine decay to MIN_LR_FRAC * LR."""
    warm = LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, STEPS - WARMUP)
    decay = LR * (MIN_LR_FRAC + (1 - MIN_LR_FRAC) * 0.5 * (1 + jnp.cos(jnp.pi * t)))
    return jnp.where(step < WARMUP, warm, decay)


def make_optimizer(params):
    """Clip the global gradient norm, then AdamW; weight decay on matrices only."""
    decay_mask = jax.tree.map(lambda p: p.ndim >= 2, params)
    return optax.chain(
        optax.clip_by_global_norm(CLIP),
        optax.adamw(lr_at, b1=0.9, b2=0.95, eps=1e-8, weight_decay=WD, mask=decay_mask))
# ANCHOR_END: optimizer


# ANCHOR: train_step
def loss_fn(params, tokens, compute_dtype):
    """FP32 master weights; the forward (and so the backward) runs in compute_dtype."""
    return model.next_token_loss(model.cast_params(params, compute_dtype), tokens, CFG)


def make_train_step(optimizer, data, compute_dtype):
    def train_step(params, opt_state, key):
        key, sub = jax.random.split(key)
        tokens = sample_batch(sub, data)
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, compute_dtype)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, key, loss
    # donate: the old params and optimizer state are dead after the step, so XLA may reuse them
    return jax.jit(train_step, donate_argnums=(0, 1))
# ANCHOR_END: train_step


def make_evaluate(val, compute_dtype):
    keys = jax.random.split(jax.random.key(labkit.SEED + 2), EVAL_BATCHES)  # the same batches

    @jax.jit
    def evaluate(params):
        return jnp.mean(jax.vmap(lambda k: loss_fn(params, sample_batch(k, val), compute_dtype))(keys))
    return evaluate


def grad_check(compute_dtype, precision, train):
    """Gradients of one TINY batch vs float64: ||g - g64|| / ||g64||, and what g64 came from."""
    tokens = np.array(sample_batch(jax.random.key(labkit.SEED + 1), train))[:, :model.TINY.context + 1]
    loss = lambda p, t: model.next_token_loss(model.cast_params(p, compute_dtype), t, model.TINY)  # noqa: E731
    if twin.torch_available():
        import torch
        pt = twin.build_pt(model.TINY, seed=1).double()
        t = torch.from_numpy(tokens).long()
        logits = pt(t[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1)).backward()
        params = model.from_torch_state_dict(pt.state_dict(), model.TINY)
        ref = model.from_torch_state_dict({n: p.grad for n, p in pt.named_parameters()}, model.TINY)
        ref_name = "PyTorch float64 autograd"
    else:
        params = model.init_params(jax.random.key(1), model.TINY)
        with jax.enable_x64(True):
            p64 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
            ref = jax.grad(lambda p, t: model.next_token_loss(p, t, model.TINY))(p64, jnp.asarray(tokens))
            ref = jax.tree.map(np.asarray, ref)
        ref_name = "JAX float64 (no torch)"
    with jax.default_matmul_precision(precision):
        grads = jax.jit(jax.grad(loss))(params, jnp.asarray(tokens))
    flat = lambda tree: np.concatenate([np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(tree)])  # noqa: E731
    return labkit.rel_error(flat(grads), flat(ref)), ref_name


def run_variant(variant, label, rung, compute_dtype, precision, tolerance, train, val, unigram):
    shape = {"batch": BATCH, "seq": SEQ, "steps": STEPS}
    err, ref_name = grad_check(compute_dtype, precision, train)
    labkit.log(f"{variant}: gradient rel_error {err:.2e} vs {ref_name}")
    if not err <= tolerance:
        labkit.failed(variant, label, shape, "verify",
                      f"gradient rel_error {err:.3e} vs {ref_name} exceeds {tolerance:.1e}", rung=rung)
        return
    with jax.default_matmul_precision(precision):
        params = model.init_params(jax.random.key(0), CFG)
        optimizer = make_optimizer(params)
        state = {"params": params, "opt": optimizer.init(params), "key": jax.random.key(labkit.SEED),
                 "step": 0, "losses": [], "val": []}
        step_fn = make_train_step(optimizer, train, compute_dtype)
        evaluate = make_evaluate(val, compute_dtype)

        def one_step():
            s = state
            s["params"], s["opt"], s["key"], loss = step_fn(s["params"], s["opt"], s["key"])
            jax.block_until_ready((s["params"], s["opt"], loss))
            s["step"] += 1
            s["losses"].append(loss)

        def eval_if_due():  # untimed: runs before the next timed step
            if state["step"] % EVAL_EVERY == 0 and state["step"] > 0 and \
                    (not state["val"] or state["val"][-1][0] != state["step"]):
                state["val"].append((state["step"], float(evaluate(state["params"]))))

        for _ in range(TIMING_SKIP):
            eval_if_due()
            one_step()
        timing = labkit.time_wall(one_step, warmup=0, reps=STEPS - TIMING_SKIP, before=eval_if_due)
        eval_if_due()
        if state["val"][-1][0] != STEPS:
            state["val"].append((STEPS, float(evaluate(state["params"]))))
    loss_curve = [(i + 1, float(v)) for i, v in enumerate(state["losses"])]
    final_val = state["val"][-1][1]
    labkit.log(f"{variant}: step {timing['median_ms']:.2f} ms, val loss {final_val:.3f}")
    if not math.isfinite(final_val) or final_val >= LOSS_BOUND:
        labkit.failed(variant, label, shape, "verify",
                      f"final validation loss {final_val:.3f} not below {LOSS_BOUND:.3f}", rung=rung)
        return
    flops = 3 * model.flops_per_token(CFG, SEQ) * BATCH * SEQ  # forward + backward (2x forward)
    metrics = {"tokens_per_s": BATCH * SEQ / (timing["median_ms"] * 1e-3),
               "step_ms": timing["median_ms"], "final_loss": final_val,
               "final_train_loss": sum(v for _, v in loss_curve[-20:]) / len(loss_curve[-20:]),
               "params_count": model.param_count(state["params"]),
               "unigram_entropy": unigram, "loss_bound": LOSS_BOUND}
    metrics.update(twin.mfu_metrics(flops, timing["median_ms"], jax.devices()[0].device_kind))
    labkit.ok(variant, label, shape, timing, rel_error=err, tolerance=tolerance, flops=flops,
              rung=rung, metrics=metrics, series={"loss": loss_curve, "val_loss": state["val"]})


def unigram_entropy(data):
    """Entropy (nats) of the byte frequencies: the best loss of a model that ignores context."""
    p = np.bincount(np.asarray(data), minlength=256) / data.shape[0]
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def main():
    train, val = load_corpus()
    unigram = unigram_entropy(train)
    labkit.log(f"corpus: {train.shape[0]} train / {val.shape[0]} val bytes, unigram {unigram:.3f}")
    # Gradient tolerances as in the PyTorch lab: FP32 ~1e-6 from float64; TF32 rounds matmul
    # inputs to 10 mantissa bits (~5e-4); BF16 to 7 bits (~4e-3), summed over many ops.
    for rung, (variant, label, dtype, precision, tol) in enumerate([
            ("fp32", "FP32", jnp.float32, "float32", 1e-4),
            ("tf32", "TF32", jnp.float32, "tensorfloat32", 1e-2),
            ("bf16", "BF16 (FP32 master weights)", jnp.bfloat16, "default", 5e-2)]):
        shape = {"batch": BATCH, "seq": SEQ, "steps": STEPS}
        if variant == "tf32" and not ON_GPU:
            labkit.failed(variant, label, shape, "unsupported", "TF32 needs an NVIDIA GPU", rung=rung)
            continue
        try:
            run_variant(variant, label, rung, dtype, precision, tol, train, val, unigram)
        except Exception as e:
            labkit.failed(variant, label, shape, "launch", f"{type(e).__name__}: {e}", rung=rung)


if __name__ == "__main__":
    main()
