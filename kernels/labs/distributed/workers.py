"""Starting the processes of a distributed lab, and the small model they train.

Why this file exists: `hdlc bench` starts a lab as one plain `python3 lab.py`, but a data-parallel
step needs several processes. Each lab therefore starts its own workers here, one process per
rank, on one machine: CPU processes talking through gloo (the correctness check that runs
anywhere), or one process per GPU talking through NCCL. The same worker function also runs
unchanged under `torchrun` (RANK, WORLD_SIZE, MASTER_ADDR/PORT set by the launcher).

Rank 0 sends its result back to the parent through a queue; only the parent writes records.
"""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def under_torchrun():
    """True when torchrun (or another launcher) started this process as one rank of a group."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_group(rank, world, backend, port=None):
    """Join the process group; a GPU rank uses the GPU of its local rank."""
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    if port is None:  # torchrun: address, port, rank and world come from the environment
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}",
                                rank=rank, world_size=world)
    return torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")


def _entry(rank, world, backend, port, fn, args, queue):
    try:
        device = init_group(rank, world, backend, port)
        result = fn(rank, world, device, *args)
        dist.barrier()
        if rank == 0:
            queue.put(("ok", result))
    except Exception as e:  # the parent turns this into a failed record
        if rank == 0:
            queue.put(("error", f"{type(e).__name__}: {e}"))
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def spawn(fn, world, backend, *args):
    """Run fn(rank, world, device, *args) in `world` new processes; return rank 0's result.

    Raises RuntimeError with rank 0's error when a worker fails.
    """
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    try:
        mp.start_processes(_entry, args=(world, backend, port, fn, args, queue), nprocs=world,
                           join=True, start_method="spawn")
    except Exception as e:
        if not queue.empty():
            status, msg = queue.get()
            if status == "error":
                raise RuntimeError(msg) from None
        raise RuntimeError(f"{type(e).__name__}: {str(e)[-500:]}") from None
    status, result = queue.get()
    if status != "ok":
        raise RuntimeError(result)
    return result


class Block(nn.Module):
    """x + W2·GELU(W1·x): the MLP half of a Transformer block, enough to give DDP and FSDP
    several layers of parameters to synchronise or shard."""

    def __init__(self, d, ffn):
        super().__init__()
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


class Net(nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d, 4 * d) for _ in range(layers))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def model_sizes(device_type):
    """(global batch, tokens per sequence, d_model, layers) of the labs' model: small on CPU
    processes, a GPU-sized step on CUDA, tiny under HDLC_LAB_QUICK=1 (labkit.QUICK)."""
    if os.environ.get("HDLC_LAB_QUICK") == "1":
        return 4, 16, 64, 2
    if device_type == "cuda":
        return 8, 256, 1024, 8
    return 4, 64, 256, 4


def make_model(d, layers, device, seed=1234):
    """The same seeded weights on every rank (DDP would broadcast rank 0's anyway)."""
    torch.manual_seed(seed)
    return Net(d, layers).to(device)


def make_batch(batch, tokens, d, device, seed=4321):
    """The global batch, identical on every rank: inputs and regression targets."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, tokens, d, generator=g)
    y = torch.randn(batch, tokens, d, generator=g)
    return x.to(device), y.to(device)


def loss_fn(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def flat_grads(model):
    return torch.cat([p.grad.detach().reshape(-1) for p in model.parameters()])
