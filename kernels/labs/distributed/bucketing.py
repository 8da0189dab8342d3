"""Gradient bucketing, the launch-and-copy side: many small all-reduces vs a few large ones.

A model's gradient is hundreds of separate tensors. All-reducing each on its own pays the fixed
cost of a collective (the α of the α–β model: a launch, a synchronisation) once per tensor.
DDP instead copies gradients into flat buckets (25 MiB by default) and all-reduces each bucket
once, paying a copy in and a copy out instead. On one GPU (a group of one process) the network
side is absent, so what this lab times is exactly that other side: the per-call cost against the
copy cost. The network side (β: bytes over a link) needs several GPUs and comes later.

Check first: after each variant the tensors hold the all-reduced values (with one rank: the
original values, in the original order); a bucket that scrambled or dropped a slice fails.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import workers  # noqa: E402

KIB = 1024


def sizes():
    """(number of gradient tensors, floats per tensor): 64 MiB in all, 64 KiB each."""
    return (256, 256) if labkit.QUICK else (1024, 16 * KIB)


def per_tensor(grads):
    for g in grads:
        dist.all_reduce(g)  # one collective per tensor
    return 0


# ANCHOR: bucketed
def make_buckets(grads, bucket_bytes):
    """Group consecutive tensors until a bucket would exceed bucket_bytes (as DDP does)."""
    buckets, current, size = [], [], 0
    for g in grads:
        nbytes = g.numel() * g.element_size()
        if current and size + nbytes > bucket_bytes:
            buckets.append(current)
            current, size = [], 0
        current.append(g)
        size += nbytes
    if current:
        buckets.append(current)
    flats = [torch.empty(sum(g.numel() for g in b), dtype=b[0].dtype, device=b[0].device)
             for b in buckets]
    return buckets, flats


def bucketed(buckets, flats, collective=True):
    for bucket, flat in zip(buckets, flats):
        torch.cat([g.reshape(-1) for g in bucket], out=flat)  # copy in
        if collective:
            dist.all_reduce(flat)  # one collective per bucket
        torch._foreach_copy_(bucket, [v.view_as(g) for v, g in
                                      zip(flat.split([g.numel() for g in bucket]), bucket)])  # copy out
# ANCHOR_END: bucketed


def main():
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    backend = "nccl" if gpu else "gloo"
    if gpu:
        torch.cuda.set_device(0)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{workers.free_port()}",
                            rank=0, world_size=1)
    count, numel = sizes()
    g = torch.Generator().manual_seed(labkit.SEED)
    originals = [torch.randn(numel, generator=g).to(device) for _ in range(count)]
    grads = [t.clone() for t in originals]
    total = count * numel * 4
    timer = labkit.time_torch if gpu else labkit.time_wall
    ref = torch.cat(originals)
    base = {"tensors": count, "tensor_kib": numel * 4 // KIB}

    def check_and_time(variant, label, fn, calls, bucket_kib, baseline=False, copy_bytes=0):
        def run_and_read():
            fn()
            return torch.cat(grads)
        # Exact: with one rank an all-reduce returns its input; copies must not change a bit.
        labkit.check_then_time(variant, label, dict(base, bucket_kib=bucket_kib), run_and_read, ref,
                               0.0, timer=lambda _: timer(fn), bytes=copy_bytes, baseline=baseline,
                               metrics={"collective_calls": calls, "grad_bytes": total})

    check_and_time("per_tensor", f"{count} all-reduces, one per tensor", lambda: per_tensor(grads),
                   count, 0, baseline=True)
    bucket_sizes = [16 * KIB, 64 * KIB, 256 * KIB] if labkit.QUICK else \
        [1 << 20, 4 << 20, 25 << 20, 64 << 20]
    for b in bucket_sizes:
        buckets, flats = make_buckets(grads, b)
        mib = b / (1 << 20)
        name = f"{mib:g} MiB"
        check_and_time(f"bucket_{b // KIB}k", f"{len(buckets)} bucket(s) of {name}",
                       lambda: bucketed(buckets, flats), len(buckets), b // KIB, copy_bytes=4 * total)
        if b == 25 << 20 or (labkit.QUICK and b == bucket_sizes[-1]):
            check_and_time(f"copy_only_{b // KIB}k", f"copies only, buckets of {name} (no all-reduce)",
                           lambda: bucketed(buckets, flats, collective=False), 0, b // KIB,
                           copy_bytes=4 * total)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
