"""What the torchrun labs do across their ranks in one way: line the ranks up, agree on a number,
time one call.

Why one module: every multi-GPU lab times a step as slow as its slowest rank, after all ranks
have lined up, and every rank must issue the same collectives in the same order; written once,
the labs cannot drift apart in how they do it.
"""

import time

import torch
import torch.distributed as dist


def sync(device):
    """Every rank here, and (on a GPU) its queued work done."""
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
        torch.cuda.synchronize()
    else:
        dist.barrier()


def max_over_ranks(x, device):
    """The largest of every rank's `x` (the same number on every rank)."""
    t = torch.tensor([float(x)], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def call_ms(fn, device):
    """Milliseconds of one call of fn(): CUDA events around the work it queues on a GPU, the wall
    clock on gloo CPU processes (where the call returns when its work is done)."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3
