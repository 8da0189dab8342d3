"""Sharding an MLP over a device mesh, and the collectives XLA's partitioner inserts for it.

One idea: in JAX you say where each array lives (a Mesh of devices, and for each array a
NamedSharding = mesh + PartitionSpec naming which mesh axis splits which array dimension), and
jit's SPMD partitioner writes the per-device program, inserting the communication the choice
implies. Reading the compiled HLO shows that communication: no collective for pure data
parallelism, one all-reduce for Megatron-style tensor parallelism, all-gathers of the weights
when they are sharded FSDP-style. Whether keeping the output split turns the all-reduce into a
reduce-scatter is up to the backend's passes: the table records what it actually did.

Runs on 8 simulated CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=8, set here
before jax is imported), so the sharding semantics are real on any machine; the times are CPU
threads standing in for devices, not GPU timings. Each choice is first checked: the sharded
result must equal the unsharded one (rel_error <= 1e-5, float32 sums in another order).
`python3 mesh.py --check` only runs those checks and exits non-zero on a mismatch (CI).
"""

import os
import pathlib
import re
import sys

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

BATCH, D, F = (64, 128, 512) if labkit.QUICK else (256, 512, 2048)
TOL = 1e-5
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


# ANCHOR: mlp
def mlp(x, w1, w2):
    """y = gelu(x @ w1) @ w2 with x [batch, d], w1 [d, f], w2 [f, d]."""
    return jax.nn.gelu(x @ w1) @ w2
# ANCHOR_END: mlp


# ANCHOR: choices
def choices(devices):
    """(variant, label, mesh, specs of x/w1/w2, spec of y): each a way to lay the MLP out."""
    m1 = Mesh(np.array(devices), ("x",))                        # 8 devices in a row
    m2 = Mesh(np.array(devices).reshape(2, 4), ("data", "model"))  # 2 x 4
    return [
        ("replicated", "replicated", m1, (P(), P(), P()), P()),
        ("data_parallel", "DP: batch split", m1, (P("x", None), P(), P()), P("x", None)),
        ("tensor_parallel", "TP: w1 by column, w2 by row", m1,
         (P(), P(None, "x"), P("x", None)), P()),
        ("tp_sharded_out", "TP, output kept split by batch", m1,
         (P(), P(None, "x"), P("x", None)), P("x", None)),
        ("fsdp", "FSDP: batch and weights split", m1,
         (P("x", None), P("x", None), P("x", None)), P("x", None)),
        ("dp_tp_2d", "2D: batch over data, weights over model", m2,
         (P("data", None), P(None, "model"), P("model", None)), P("data", None)),
    ]
# ANCHOR_END: choices


# ANCHOR: shard_map
def tp_mlp_shard_map(mesh):
    """The TP layout written per device with shard_map: the all-reduce is ours (psum)."""
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:  # older JAX
        from jax.experimental.shard_map import shard_map

    def per_device(x, w1_cols, w2_rows):  # x [B, d], w1_cols [d, f/8], w2_rows [f/8, d]
        partial = jax.nn.gelu(x @ w1_cols) @ w2_rows   # this device's share of y
        return jax.lax.psum(partial, "x")             # sum the 8 shares: all-reduce
    return shard_map(per_device, mesh=mesh, in_specs=(P(), P(None, "x"), P("x", None)),
                     out_specs=P())
# ANCHOR_END: shard_map


def collectives(hlo_text):
    """{op: (count, bytes)} of the collectives in compiled HLO text; bytes = result shape size."""
    sizes = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "f64": 8}
    found = {}
    for m in re.finditer(r"=\s*(\w+)\[([\d,]*)\][^ ]*\s+(" + "|".join(COLLECTIVES) + r")(-start)?\(",
                         hlo_text):
        dtype, dims, op = m.group(1), m.group(2), m.group(3)
        n = int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
        count, nbytes = found.get(op, (0, 0))
        found[op] = (count + 1, nbytes + n * sizes.get(dtype, 4))
    return found


def main(check_only=False):
    devices = jax.devices()
    assert len(devices) == 8, f"expected 8 simulated CPU devices, got {devices}"
    k1, k2, k3 = jax.random.split(jax.random.key(labkit.SEED), 3)
    x = jax.random.normal(k1, (BATCH, D), jnp.float32)
    w1 = jax.random.normal(k2, (D, F), jnp.float32) / np.sqrt(D)
    w2 = jax.random.normal(k3, (F, D), jnp.float32) / np.sqrt(F)
    ref = np.asarray(jax.jit(mlp)(x, w1, w2))  # unsharded: one device
    shape = {"batch": BATCH, "d": D, "f": F, "devices": 8}
    flops = 2 * BATCH * D * F * 2
    runs = [(v, label, m, specs, out, jax.jit(
        mlp, in_shardings=tuple(NamedSharding(m, s) for s in specs),
        out_shardings=NamedSharding(m, out))) for v, label, m, specs, out in choices(devices)]
    m1 = runs[0][2]
    runs.append(("shard_map_tp", "TP by hand: shard_map + psum", m1,
                 (P(), P(None, "x"), P("x", None)), P(), jax.jit(tp_mlp_shard_map(m1))))
    bad = 0
    for rung, (variant, label, mesh, specs, out_spec, f) in enumerate(runs):
        args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, w1, w2), specs)]
        err = labkit.rel_error(np.asarray(f(*args)), ref)
        labkit.log(f"{variant}: rel_error {err:.1e} vs unsharded")
        if not err <= TOL:
            bad += 1
            labkit.failed(variant, label, shape, "verify",
                          f"sharded rel_error {err:.3e} vs unsharded exceeds {TOL:.0e}", rung=rung)
            continue
        if check_only:
            continue
        hlo = f.lower(*args).compile().as_text()
        spec_text = " ".join(str(s) for s in specs) + " -> " + str(out_spec)
        found = collectives(hlo)
        rows = [[variant, op, c, b] for op, (c, b) in sorted(found.items())] or [[variant, "none", 0, 0]]
        timing = labkit.time_wall(lambda: f(*args).block_until_ready())
        labkit.ok(variant, f"{label}  [{spec_text}]", shape, timing, rel_error=err, tolerance=TOL,
                  flops=flops, rung=rung,
                  metrics={"collectives": sum(c for c, _ in found.values()),
                           "collective_bytes": sum(b for _, b in found.values())},
                  tables={"collectives": {"columns": ["sharding", "op", "count", "result_bytes"],
                                          "rows": rows}})
    return bad


if __name__ == "__main__":
    check = "--check" in sys.argv
    n_bad = main(check_only=check)
    if check:
        labkit.log("mesh check: " + ("all sharded results equal the unsharded one" if n_bad == 0
                                     else f"{n_bad} sharding choice(s) disagree"))
    sys.exit(1 if n_bad else 0)
