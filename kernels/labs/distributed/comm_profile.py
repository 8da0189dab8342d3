"""Profiling communication: which collectives a DDP or FSDP2 step issues, how many, how long.

`torch.profiler` records every collective the process group runs (`nccl:all_reduce`,
`gloo:all_gather`, …) next to the compute, and on a GPU also the NCCL kernels themselves. The
table this lab writes per variant is the profiler's own aggregation over a few steps: for DDP,
one all-reduce per gradient bucket; for FSDP2, an all-gather per sharded block in forward and
again in backward, and a reduce-scatter per block for the gradients.

Check first: the step's gradients equal the single-process gradients of the whole batch
(rel_error ≤ 1e-5, FP32), as in ddp.py and fsdp2.py. Then time the step (unprofiled), then
profile PROFILED_STEPS more steps.
"""

import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import workers  # noqa: E402

TOL = 1e-5
REPS = 5 if labkit.QUICK else 20
PROFILED_STEPS = 3
COMM_WORDS = ("all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
              "reducescatter", "broadcast", "nccl", "gloo")


def wrap(kind, model, device, world):
    if kind == "ddp":
        return DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    mesh = init_device_mesh(device.type, (world,))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    return fully_shard(model, mesh=mesh)


def full_grads(model):
    return torch.cat([(p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad).reshape(-1)
                      for p in model.parameters()])


# ANCHOR: profile
def collective_table(prof, on_gpu):
    """The profiler's per-name totals for every event whose name looks like communication."""
    rows = []
    for e in prof.key_averages():
        if e.key.startswith("aten::") or not any(w in e.key.lower() for w in COMM_WORDS):
            continue
        device_us = getattr(e, "self_device_time_total", None)
        if device_us is None:
            device_us = getattr(e, "self_cuda_time_total", 0)
        rows.append([e.key, e.count, round(e.cpu_time_total / 1e3, 4),
                     round(device_us / 1e3, 4) if on_gpu else 0.0])
    rows.sort(key=lambda r: -(r[3] or r[2]))
    return {"columns": ["event", "calls", "cpu_ms_total", "device_ms_total"], "rows": rows[:20]}
# ANCHOR_END: profile


def worker(rank, world, device, kind, batch, tokens, d, layers):
    torch.backends.cuda.matmul.allow_tf32 = False
    model = workers.make_model(d, layers, device)
    reference = copy.deepcopy(model)
    model = wrap(kind, model, device, world)
    x, y = workers.make_batch(batch, tokens, d, device)
    shard = slice(rank * batch // world, (rank + 1) * batch // world)
    workers.loss_fn(reference, x, y).backward()
    workers.loss_fn(model, x[shard], y[shard]).backward()
    err = labkit.rel_error(full_grads(model), workers.flat_grads(reference))

    def step():
        model.zero_grad(set_to_none=False)
        workers.loss_fn(model, x[shard], y[shard]).backward()

    timer = labkit.time_torch if device.type == "cuda" else labkit.time_wall
    timing = timer(step, warmup=3, reps=REPS)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(PROFILED_STEPS):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    return err, timing, collective_table(prof, device.type == "cuda")


def run(kind, backend, world, shape):
    name = "DDP" if kind == "ddp" else "FSDP2"
    variant = f"{kind}_{backend}_w{world}"
    where = "CPU processes" if backend == "gloo" else ("GPUs" if world > 1 else "GPU")
    label = f"{name}, {backend}, {world} {where}"
    batch, tokens, d, layers = shape
    params = {"world": world, "batch": batch, "tokens": tokens, "d": d, "layers": layers,
              "profiled_steps": PROFILED_STEPS}
    try:
        err, timing, table = workers.spawn(worker, world, backend, kind, *shape)
    except Exception as e:
        labkit.failed(variant, label, params, "launch", e)
        return
    if not err <= TOL:
        labkit.failed(variant, label, params, "verify", f"rel_error {err:.3e} exceeds {TOL:.0e}")
        return
    labkit.ok(variant, label, params, timing, rel_error=err, tolerance=TOL,
              metrics={"collective_events": sum(r[1] for r in table["rows"])},
              tables={"collectives": table})


def main():
    for kind in ("ddp", "fsdp"):
        run(kind, "gloo", 2, workers.model_sizes("cpu"))
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n == 0:
        for kind in ("ddp", "fsdp"):
            labkit.failed(f"{kind}_nccl_w1", f"{'DDP' if kind == 'ddp' else 'FSDP2'}, nccl, 1 GPU", {"world": 1}, "unsupported",
                          "no CUDA GPU")
        return
    shape = workers.model_sizes("cuda")
    world = max(w for w in (1, 2, 4, 8) if w <= n and shape[0] % w == 0)
    for kind in ("ddp", "fsdp"):
        run(kind, "nccl", world, shape)


if __name__ == "__main__":
    main()
