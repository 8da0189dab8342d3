"""DDP: data parallelism gives the same gradients as one process on the whole batch.

Each of `world` ranks holds a full copy of the model and takes batch/world of the sequences.
DistributedDataParallel all-reduces the gradients during backward (in buckets, overlapped with
the rest of backward) and divides by world, so after `loss.backward()` every rank holds the mean
of the per-shard gradients — which is exactly the gradient of the mean loss over the whole batch.

Check first: every rank also computes the single-process gradient of the full batch on a copy of
the model, and DDP's gradient must match it (rel_error ≤ 1e-5 in FP32). Then time one step.

Variants: `single` (one process, no DDP: the baseline), `gloo_cpu_w2` (two CPU processes over
gloo: the check that runs on any machine), `nccl_wN` (one process per visible GPU over NCCL;
on one GPU this is DDP's own overhead, with nothing to exchange). Under torchrun the lab runs
one variant, `torchrun_wN`, on whatever group the launcher made.
"""

import copy
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import workers  # noqa: E402

TOL = 1e-5
REPS = 5 if labkit.QUICK else 20


# ANCHOR: ddp_step
def ddp_worker(rank, world, device, batch, tokens, d, layers):
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 everywhere: the check compares to 1e-5
    model = workers.make_model(d, layers, device)
    reference = copy.deepcopy(model)  # same weights, no DDP, whole batch
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    x, y = workers.make_batch(batch, tokens, d, device)
    shard = slice(rank * batch // world, (rank + 1) * batch // world)

    workers.loss_fn(reference, x, y).backward()  # gradient of the whole batch
    workers.loss_fn(ddp, x[shard], y[shard]).backward()  # all-reduce (mean) happens in here
    err = labkit.rel_error(workers.flat_grads(model), workers.flat_grads(reference))
# ANCHOR_END: ddp_step

    def step():
        ddp.zero_grad(set_to_none=False)
        workers.loss_fn(ddp, x[shard], y[shard]).backward()

    timer = labkit.time_torch if device.type == "cuda" else labkit.time_wall
    timing = timer(step, warmup=3, reps=REPS)  # a fixed count: every rank must call the collectives alike
    n_params = sum(p.numel() for p in model.parameters())
    return err, timing, n_params


def single(device, batch, tokens, d, layers):
    """The baseline: one process, whole batch, no DDP; checked against float64."""
    torch.backends.cuda.matmul.allow_tf32 = False
    model = workers.make_model(d, layers, device)
    ref = copy.deepcopy(model).double().cpu()
    x, y = workers.make_batch(batch, tokens, d, device)
    workers.loss_fn(model, x, y).backward()
    workers.loss_fn(ref, x.double().cpu(), y.double().cpu()).backward()
    err = labkit.rel_error(workers.flat_grads(model), workers.flat_grads(ref))

    def step():
        model.zero_grad(set_to_none=False)
        workers.loss_fn(model, x, y).backward()

    timer = labkit.time_torch if device.type == "cuda" else labkit.time_wall
    return err, timer(step, warmup=3, reps=REPS), sum(p.numel() for p in model.parameters())


def report(variant, label, world, shape, result, baseline=False):
    batch, tokens, d, layers = shape
    err, timing, n_params = result
    params = {"world": world, "batch": batch, "tokens": tokens, "d": d, "layers": layers}
    if not err <= TOL:
        labkit.failed(variant, label, params, "verify", f"rel_error {err:.3e} exceeds {TOL:.0e}",
                      baseline=baseline)
        return
    labkit.ok(variant, label, params, timing, rel_error=err, tolerance=TOL, baseline=baseline,
              flops=6.0 * n_params * batch * tokens,  # forward 2·P per token, backward 4·P
              metrics={"params_count": n_params, "grad_bytes": 4 * n_params})


def main():
    if workers.under_torchrun():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        device = workers.init_group(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), backend)
        world = int(os.environ["WORLD_SIZE"])
        shape = workers.model_sizes(device.type)
        result = ddp_worker(int(os.environ["RANK"]), world, device, *shape)
        if int(os.environ["RANK"]) == 0:
            report(f"torchrun_w{world}", f"DDP, torchrun, {world} × {backend}", world, shape, result)
        torch.distributed.destroy_process_group()
        return

    gpu = torch.cuda.is_available()
    shape = workers.model_sizes("cuda" if gpu else "cpu")
    label = "1 process, no DDP (" + ("GPU" if gpu else "CPU") + ")"
    try:
        report("single", label, 1, shape, single(torch.device("cuda" if gpu else "cpu"), *shape),
               baseline=True)
    except Exception as e:
        labkit.failed("single", label, {"world": 1}, "launch", f"{type(e).__name__}: {e}", baseline=True)

    cpu_shape = workers.model_sizes("cpu")
    try:
        report("gloo_cpu_w2", "DDP, gloo, 2 CPU processes", 2, cpu_shape,
               workers.spawn(ddp_worker, 2, "gloo", *cpu_shape))
    except Exception as e:
        labkit.failed("gloo_cpu_w2", "DDP, gloo, 2 CPU processes", {"world": 2}, "launch", e)

    n = torch.cuda.device_count() if gpu else 0
    if n == 0:
        labkit.failed("nccl_w1", "DDP, NCCL, 1 process per GPU", {"world": 1}, "unsupported",
                      "no CUDA GPU")
        return
    world = max(w for w in (1, 2, 4, 8) if w <= n and shape[0] % w == 0)
    label = f"DDP, NCCL, {world} GPU" + ("s" if world > 1 else "")
    try:
        report(f"nccl_w{world}", label, world, shape, workers.spawn(ddp_worker, world, "nccl", *shape))
    except Exception as e:
        labkit.failed(f"nccl_w{world}", label, {"world": world}, "launch", e)


if __name__ == "__main__":
    main()
