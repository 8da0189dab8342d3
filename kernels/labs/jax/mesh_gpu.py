"""The shardings of mesh.py on a real mesh: one process driving every visible device.

One idea: mesh.py shows which collectives XLA's SPMD partitioner writes into a sharded program
on simulated CPU devices; here the same choices run on W real devices (GPUs over NVLink under
`hdlc bench`), as a whole training step, against the same step on one device in the same run.
JAX's model is one process that sees all W devices (jax.devices()), a Mesh over them, and a
NamedSharding per array ("Distributed arrays and automatic parallelization", JAX docs); jit
partitions the step and inserts the communication. The runner starts this file once per world
size W with only W devices visible (CUDA_VISIBLE_DEVICES, or XLA_FLAGS
--xla_force_host_platform_device_count=W on a CPU); by hand it uses every visible device.

Part 1, a training step (forward, mean-squared loss, jax.grad, SGD update) of a residual MLP
stack, x <- x + gelu(x W1) W2 per layer (a Transformer's FFN half; attention is left out so
that every layout divides evenly at any W), laid out four ways:
  single  the step on jax.devices()[:1] (shards = 1): the baseline;
  dp      batch split, weights replicated: one all-reduce of the gradients;
  fsdp    batch split and every weight split along its first dimension: weights all-gathered
          before use, gradients reduce-scattered (ZeRO-3; Rajbhandari et al. 2020);
  tp      Megatron: W1 by column, W2 by row, activations replicated: an all-reduce per layer
          forward and backward (Shoeybi et al. 2019, arXiv:1909.08053).
Strong scaling: every layout trains the same global batch, so speedup_vs_1gpu = single / ms.
Check before timing, FP32 with Precision.HIGHEST: the sharded step's loss and updated
parameters against the one-device step's, rel_error = the largest over loss and each weight
<= TOL = 1e-4. The check runs the same compiled step with lr = LR_CHECK, large enough that
lr*|g| > |w| (about 4x at the GPU shape, measured at batch 128), so the updated weights carry
the gradient at full size: a 1% error injected into the sharded gradient reads 1.0e-2 this way
and only 1.8e-6 at the training lr. A missing or doubled sum is off by O(1); reordered float32
sums by 2-3e-7 (CPU, 2 and 4 devices). Timing runs the BF16 step (FP32 master weights cast
inside, as train.py); its error against the FP32 one-device step is bf16_rel_error, held to
BF16_TOL = 5e-2 (BF16 keeps 8 bits, 3.9e-3 per rounding; 6e-3 measured on a CPU). The `single`
record's rel_error is that BF16 error; the sharded records' is the FP32 check.
Each record also lists the collectives in its compiled HLO (as mesh.py: instructions, not
executions) and, on a GPU, peak_mem_bytes: the peak of one device's program as XLA's buffer
assignment plans it (memory_analysis(): weights, batch, activations kept for the backward,
temporaries; the donated old weights reused for the new). JAX's device.memory_stats() keeps
only a process-lifetime peak with no reset, so it cannot tell the variants of one run apart.

Part 2, shard_map collectives: psum, all_gather, psum_scatter and ppermute over the mesh axis
(JAX docs, "Manual parallelism with shard_map"), checked exactly on integer-valued float32
(sums of a few integers in [-8, 8) are exact: tolerance 0) and timed as `inner` calls queued
back to back. Size S and bandwidths as nccl-tests (doc/PERFORMANCE.md) and collectives.py, so
they sit beside torch.distributed's records: algbw = S / time, busbw = algbw * 2(n-1)/n for
all-reduce, (n-1)/n for all-gather (S: the gathered output) and reduce-scatter (S: the whole
input), 1 for ppermute (a ring send/recv; S: one device's buffer).
"""

import functools
import os
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

ON_GPU = jax.default_backend() == "gpu"
# (batch rows = tokens, d, f, layers). GPU: 537 M parameters, 6 * 16384 * 537 M = 53 TFLOP a step
BATCH, D, F, LAYERS = ((64, 64, 256, 2) if labkit.QUICK else
                       (16384, 4096, 16384, 4) if ON_GPU else (256, 256, 1024, 2))
MIB = 1 << 20
SIZES = ([4096, 65536] if labkit.QUICK else [MIB << (2 * i) for i in range(5)] if ON_GPU
         else [65536, MIB, 4 * MIB])  # GPU: 1, 4, 16, 64, 256 MiB
REPS, WARMUP = (3, 1) if labkit.QUICK else (20, 3)
TOL, BF16_TOL = 1e-4, 5e-2
LR, LR_CHECK = 1e-3, 1e3
HLO_OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
TRAIN_LABELS = {"single": "1 device", "dp": "DP: batch split", "fsdp": "FSDP: batch + weights split",
                "tp": "TP: W1 by column, W2 by row"}
LABELS = {"psum": "psum (all-reduce)", "all_gather": "all_gather", "psum_scatter":
          "psum_scatter (reduce-scatter)", "ppermute": "ppermute (ring send/recv)"}
RUNGS = {name: i for i, name in enumerate([*TRAIN_LABELS, *LABELS])}  # figure order
shard_map = getattr(jax, "shard_map", None)
if shard_map is None:  # older JAX
    from jax.experimental.shard_map import shard_map


# ANCHOR: model
def init_params(key):
    """LAYERS x {w1 [D, F], w2 [F, D]}; w2 scaled down so that the residual stream stays O(1)."""
    keys = jax.random.split(key, 2 * LAYERS)
    return [{"w1": jax.random.normal(keys[2 * i], (D, F)) / np.sqrt(D),
             "w2": jax.random.normal(keys[2 * i + 1], (F, D)) / np.sqrt(2 * LAYERS * F)}
            for i in range(LAYERS)]


def loss_fn(params, x, y, dtype, pin):
    """Mean squared error of the MLP stack; `pin(name, a)` fixes where activations live."""
    prec = jax.lax.Precision.HIGHEST if dtype == jnp.float32 else None  # FP32 = no TF32
    x = pin("x", x.astype(dtype))
    for p in params:
        h = pin("h", jax.nn.gelu(jnp.dot(x, p["w1"].astype(dtype), precision=prec)))
        x = pin("x", x + jnp.dot(h, p["w2"].astype(dtype), precision=prec))
    return jnp.mean(jnp.square(x.astype(jnp.float32) - y))


def sgd_step(params, x, y, lr, dtype, pin):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, dtype, pin)
    return jax.tree.map(lambda w, g: w - lr * g, params, grads), loss
# ANCHOR_END: model


# ANCHOR: layouts
# name: (w1, w2, batch x and y, activations x [B, D] and h [B, F]) over the mesh axis "x"
LAYOUTS = {
    "dp": (P(), P(), P("x", None), {"x": P("x", None), "h": P("x", None)}),
    "fsdp": (P("x", None), P("x", None), P("x", None), {"x": P("x", None), "h": P("x", None)}),
    "tp": (P(None, "x"), P("x", None), P(), {"x": P(), "h": P(None, "x")}),
}


def compile_step(mesh, layout, dtype):
    """The step jitted for `layout` on `mesh`; the old weights are donated to the new ones."""
    w1, w2, data, acts = LAYOUTS[layout]
    named = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    pin = lambda name, a: jax.lax.with_sharding_constraint(a, named(acts[name]))  # noqa: E731
    weights = [{"w1": named(w1), "w2": named(w2)} for _ in range(LAYERS)]
    step = jax.jit(functools.partial(sgd_step, dtype=dtype, pin=pin),
                   in_shardings=(weights, named(data), named(data), named(P())),
                   out_shardings=(weights, named(P())), donate_argnums=0)
    init = jax.jit(init_params, out_shardings=weights)
    batch = jax.jit(lambda k: tuple(jax.random.normal(s, (BATCH, D)) for s in jax.random.split(k)),
                    out_shardings=(named(data), named(data)))
    return step, init, batch
# ANCHOR_END: layouts


# ANCHOR: hlo_collectives
def hlo_collectives(hlo_text):
    """{op: [count, result bytes]} over the compiled HLO. Shapes may be tuples (XLA combines the
    gradients' all-reduces into one); an async pair (-start/-done) counts once, sized by -done."""
    sizes = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "f64": 8, "pred": 1}
    found = {}
    line = r"^\s*(?:ROOT )?\S+ = (.*?) (" + "|".join(HLO_OPS) + r")(-start|-done)?\("
    for m in re.finditer(line, hlo_text, re.M):
        shape, op, part = m.groups()
        nbytes = sum(sizes.get(t, 4) * int(np.prod([int(n) for n in dims.split(",") if n]))
                     for t, dims in re.findall(r"(\w+)\[([\d,]*)\]", shape))
        entry = found.setdefault(op, [0, 0])
        entry[0] += part != "-done"
        entry[1] += nbytes if part != "-start" else 0
    return found
# ANCHOR_END: hlo_collectives


def rel_errors(new, loss, ref):
    """Largest ||a - b|| / ||b|| over the loss and every weight, b the one-device FP32 step's."""
    ref_new, ref_loss = ref
    errs = [abs(float(loss) - ref_loss) / abs(ref_loss)]
    for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(ref_new)):
        b = jax.device_put(b, a.sharding)
        errs.append(float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b)))
    return max(errs)


def train_variant(layout, mesh, world, ref, single_ms):
    """Check the FP32 step (the baseline's becomes `ref`), check and time the BF16 step, emit
    the record. Returns (ref, median ms or None)."""
    shards = mesh.devices.size
    params = {"batch": BATCH, "d": D, "f": F, "layers": LAYERS, "shards": shards, "world": world}
    variant = "single" if shards == 1 else layout
    key_p, key_x = jax.random.split(jax.random.key(labkit.SEED))
    step32, init, batch = compile_step(mesh, layout, jnp.float32)
    step16, _, _ = compile_step(mesh, layout, jnp.bfloat16)
    x, y = batch(key_x)
    lr, lr_check = jnp.float32(LR), jnp.float32(LR_CHECK)
    # Compiled once each: the BF16 program that is checked is the one timed and read as HLO.
    weights = init(key_p)
    step32 = step32.lower(weights, x, y, lr).compile()
    step16 = step16.lower(weights, x, y, lr).compile()
    new, loss = step32(weights, x, y, lr_check)  # donates `weights`
    if ref is None:
        ref = (new, float(loss))
    err = rel_errors(new, loss, ref)
    del new
    bf16_err = rel_errors(*step16(init(key_p), x, y, lr_check), ref)
    labkit.log(f"{variant} x{shards}: FP32 rel_error {err:.1e}, BF16 {bf16_err:.1e}")
    if not (err <= TOL and bf16_err <= BF16_TOL):
        labkit.failed(variant, TRAIN_LABELS[variant], params, "verify", f"FP32 rel_error {err:.3e} "
                      f"(tolerance {TOL}), BF16 {bf16_err:.3e} (tolerance {BF16_TOL})",
                      rung=RUNGS[variant], baseline=shards == 1)
        return ref, None
    state = [init(key_p)]

    def one_step():  # the new weights feed the next step, as in training
        state[0], loss = step16(state[0], x, y, lr)
        loss.block_until_ready()
    timing = labkit.time_wall(one_step, warmup=WARMUP, reps=REPS)
    ms = timing["median_ms"]
    found = hlo_collectives(step16.as_text())
    metrics = {"step_ms": ms, "tokens_per_s": BATCH / (ms * 1e-3), "bf16_rel_error": bf16_err,
               "collectives": sum(c for c, _ in found.values()),
               "collective_bytes": sum(b for _, b in found.values())}
    memory = step16.memory_analysis()  # XLA's plan for one device's share of the step
    if ON_GPU and memory is not None:
        metrics["peak_mem_bytes"] = memory.peak_memory_in_bytes
    if single_ms is not None:
        metrics.update(speedup_vs_1gpu=single_ms / ms, scaling_eff_pct=100 * single_ms / ms / shards)
    rows = [[variant, op, c, b] for op, (c, b) in sorted(found.items())] or [[variant, "none", 0, 0]]
    rel, tol = (bf16_err, BF16_TOL) if shards == 1 else (err, TOL)
    labkit.ok(variant, TRAIN_LABELS[variant], params, timing, rel_error=rel, tolerance=tol, metrics=metrics,
              flops=6 * BATCH * LAYERS * 2 * D * F, rung=RUNGS[variant], baseline=shards == 1,
              tables={"collectives": {"columns": ["sharding", "op", "count", "result_bytes"], "rows": rows}})
    return ref, ms


# ANCHOR: shard_map_collectives
def collective(op, n):
    """(per-device function, how many float32 each device holds, expected output from the
    input [n, c]): each device holds one row, the output has one row per device."""
    if op == "psum":  # all-reduce: every device ends with the sum of the n rows
        return (lambda r: jax.lax.psum(r, "x")), 1, lambda a: np.broadcast_to(a.sum(0), a.shape)
    if op == "all_gather":  # every device ends with all n rows, concatenated
        return ((lambda r: jax.lax.all_gather(r[0], "x", tiled=True)[None]), 1 / n,
                lambda a: np.broadcast_to(a.reshape(-1), (n, a.size)))
    if op == "psum_scatter":  # reduce-scatter: device i ends with chunk i of the sum
        return ((lambda r: jax.lax.psum_scatter(r[0], "x", tiled=True)[None]), 1,
                lambda a: a.sum(0).reshape(n, -1))
    perm = [(i, (i + 1) % n) for i in range(n)]  # ppermute: a ring, device i sends to i + 1
    return (lambda r: jax.lax.ppermute(r, "x", perm)), 1, lambda a: np.roll(a, 1, axis=0)


BUS_FACTOR = {"psum": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "psum_scatter": lambda n: (n - 1) / n, "ppermute": lambda n: 1.0}
# ANCHOR_END: shard_map_collectives


def measure_collective(op, mesh, n, nbytes, size_i):
    """Check one collective at one size exactly, time it, emit its record."""
    rung = RUNGS[op]
    per_device, share, expect = collective(op, n)
    c = max(n, nbytes // 4 // n * n)  # float32 elements of S, a multiple of n
    params = {"bytes": 4 * c, "world": n}
    rng = np.random.default_rng(labkit.SEED + 97 * size_i + rung)  # inputs differ per op and size
    a = rng.integers(-8, 8, size=(n, int(c * share)), dtype=np.int8).astype(np.float32)
    fn = jax.jit(shard_map(per_device, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None)))
    inp = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    out = np.asarray(fn(inp))
    want = expect(a)
    err = 0.0 if np.array_equal(out, want) else labkit.rel_error(out, want)
    del out, want, a
    if not err <= 0.0:
        labkit.failed(op, LABELS[op], params, "verify", f"rel_error {err:.3e}, must be exact", rung=rung)
        return
    inner = 20 if 4 * c < 16 * MIB else 5

    def run():  # queued back to back, waited for once: launch cost hides as in nccl-tests
        for _ in range(inner):
            out = fn(inp)
        out.block_until_ready()
    t = labkit.time_wall(run, warmup=WARMUP, reps=REPS)
    timing = {k: (v / inner if k.endswith("_ms") else v) for k, v in t.items()}
    algbw = 4 * c / (timing["median_ms"] * 1e6)
    tables = None
    if size_i == 0:  # what the op became in HLO, once per op
        found = hlo_collectives(fn.lower(inp).compile().as_text())
        tables = {"collectives": {"columns": ["sharding", "op", "count", "result_bytes"],
                                  "rows": [[op, k, v[0], v[1]] for k, v in sorted(found.items())]}}
    labkit.ok(op, LABELS[op], params, timing, rel_error=err, tolerance=0.0, bytes=4 * c, rung=rung,
              metrics={"algbw_gbps": algbw, "busbw_gbps": algbw * BUS_FACTOR[op](n)}, tables=tables)


def main():
    devices = jax.devices()
    world = int(os.environ.get("HDLC_LAB_WORLD", len(devices)))
    labkit.log(f"{len(devices)} {jax.default_backend()} device(s), world {world}")
    ref, single_ms, shape = None, None, {"batch": BATCH, "d": D, "f": F, "layers": LAYERS, "world": world}
    try:  # any layout on a mesh of one device is the plain one-device step
        ref, single_ms = train_variant("dp", Mesh(np.array(devices[:1]), ("x",)), world, None, None)
    except Exception as e:
        labkit.failed("single", TRAIN_LABELS["single"], {**shape, "shards": 1}, "launch",
                      f"{type(e).__name__}: {e}", rung=0, baseline=True)
    no_mesh = (f"HDLC_LAB_WORLD={world} but {len(devices)} device(s) visible" if len(devices) < world
               else "a mesh of one device shards nothing" if world < 2 else None)
    no_step = no_mesh or ("the one-device step, the reference, did not verify" if single_ms is None
                          else next((f"{k} = {v} is not a multiple of {world} devices" for k, v in
                                     (("batch", BATCH), ("d", D), ("f", F)) if v % world), None))
    mesh = Mesh(np.array(devices[:world]), ("x",)) if not no_mesh else None
    shape["shards"] = world
    for layout in LAYOUTS:
        try:
            if no_step:
                labkit.failed(layout, TRAIN_LABELS[layout], shape, "unsupported", no_step, rung=RUNGS[layout])
            else:
                train_variant(layout, mesh, world, ref, single_ms)
        except Exception as e:  # a layout that does not run is a result too
            labkit.failed(layout, TRAIN_LABELS[layout], shape, "launch", f"{type(e).__name__}: {e}",
                          rung=RUNGS[layout])
    for op in LABELS:
        for size_i, nbytes in enumerate(SIZES):
            try:
                if no_mesh:
                    labkit.failed(op, LABELS[op], {"bytes": nbytes, "world": world}, "unsupported",
                                  no_mesh, rung=RUNGS[op])
                else:
                    measure_collective(op, mesh, world, nbytes, size_i)
            except Exception as e:
                labkit.failed(op, LABELS[op], {"bytes": nbytes, "world": world}, "launch",
                              f"{type(e).__name__}: {e}", rung=RUNGS[op])


if __name__ == "__main__":
    main()
