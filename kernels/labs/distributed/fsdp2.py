"""FSDP2: each rank stores 1/world of every parameter, yet computes the same gradients.

`torch.distributed.fsdp.fully_shard` turns each parameter into a DTensor sharded along dim 0
over the ranks. Before a block's forward (and again in its backward) the shards are all-gathered
into the full weight, used, and freed; after backward the gradients are reduce-scattered, so a
rank ends with the mean gradient of its own shard only. Memory for weights, gradients and
optimizer state falls to about 1/world per rank (ZeRO stage 3); traffic is an all-gather per
block in forward, another in backward, and a reduce-scatter of the gradients.

Check first: (1) the shards reassemble (`full_tensor()`) to the unsharded model's parameters
exactly, (2) the reassembled gradients of one step on batch/world per rank equal the
single-process gradient of the whole batch (rel_error ≤ 1e-5, FP32). Then time one step.
Metrics: the parameter bytes each rank holds vs the whole model.
"""

import copy
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402

import workers  # noqa: E402

TOL = 1e-5
REPS = 5 if labkit.QUICK else 20


# ANCHOR: shard
def fsdp_worker(rank, world, device, batch, tokens, d, layers):
    torch.backends.cuda.matmul.allow_tf32 = False
    model = workers.make_model(d, layers, device)
    reference = copy.deepcopy(model)  # the whole model, on every rank, for the check
    mesh = init_device_mesh(device.type, (world,))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)  # one all-gather / reduce-scatter unit per block
    fully_shard(model, mesh=mesh)

    full = torch.cat([p.full_tensor().reshape(-1) for p in model.parameters()])
    err_params = labkit.rel_error(full, torch.cat([p.reshape(-1) for p in reference.parameters()]))
    local_bytes = sum(p.to_local().numel() * p.element_size() for p in model.parameters())
    full_bytes = sum(p.numel() * p.element_size() for p in reference.parameters())
# ANCHOR_END: shard

    x, y = workers.make_batch(batch, tokens, d, device)
    shard = slice(rank * batch // world, (rank + 1) * batch // world)
    workers.loss_fn(reference, x, y).backward()
    workers.loss_fn(model, x[shard], y[shard]).backward()  # reduce-scatter of gradients in here
    grads = torch.cat([p.grad.full_tensor().reshape(-1) for p in model.parameters()])
    err_grads = labkit.rel_error(grads, workers.flat_grads(reference))

    def step():
        model.zero_grad(set_to_none=False)
        workers.loss_fn(model, x[shard], y[shard]).backward()

    timer = labkit.time_torch if device.type == "cuda" else labkit.time_wall
    timing = timer(step, warmup=3, reps=REPS)  # fixed count: every rank calls the collectives alike
    n_params = sum(p.numel() for p in reference.parameters())
    return max(err_params, err_grads), timing, n_params, local_bytes, full_bytes


def report(variant, label, world, shape, result):
    batch, tokens, d, layers = shape
    err, timing, n_params, local_bytes, full_bytes = result
    params = {"world": world, "batch": batch, "tokens": tokens, "d": d, "layers": layers}
    if not err <= TOL:
        labkit.failed(variant, label, params, "verify", f"rel_error {err:.3e} exceeds {TOL:.0e}")
        return
    labkit.ok(variant, label, params, timing, rel_error=err, tolerance=TOL,
              flops=6.0 * n_params * batch * tokens,
              metrics={"params_count": n_params, "param_bytes_per_rank": local_bytes,
                       "param_bytes_full": full_bytes})


def main():
    if workers.under_torchrun():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        device = workers.init_group(rank, world, backend)
        shape = workers.model_sizes(device.type)
        result = fsdp_worker(rank, world, device, *shape)
        if rank == 0:
            report(f"torchrun_w{world}", f"FSDP2, torchrun, {world} × {backend}", world, shape, result)
        torch.distributed.destroy_process_group()
        return

    cpu_shape = workers.model_sizes("cpu")
    label = "FSDP2, gloo, 2 CPU processes"
    try:
        report("gloo_cpu_w2", label, 2, cpu_shape, workers.spawn(fsdp_worker, 2, "gloo", *cpu_shape))
    except Exception as e:
        labkit.failed("gloo_cpu_w2", label, {"world": 2}, "launch", e)

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n == 0:
        labkit.failed("nccl_w1", "FSDP2, NCCL, 1 process per GPU", {"world": 1}, "unsupported",
                      "no CUDA GPU")
        return
    shape = workers.model_sizes("cuda")
    world = max(w for w in (1, 2, 4, 8) if w <= n and shape[0] % w == 0)
    label = f"FSDP2, NCCL, {world} GPU" + ("s" if world > 1 else "")
    try:
        report(f"nccl_w{world}", label, world, shape, workers.spawn(fsdp_worker, world, "nccl", *shape))
    except Exception as e:
        labkit.failed(f"nccl_w{world}", label, {"world": world}, "launch", e)


if __name__ == "__main__":
    main()
