"""Collective matmul: a sharded GEMM whose collective is cut into ring steps that hide behind it.

The two sharded matmuls of a tensor-parallel MLP (cards/parallelism/sharded-matmul-patterns.md),
Y = A·B with A [T, K] and B [K, N] over n ranks, rank r holding block r:

* all-gather → GEMM (column-parallel): A split by rows (tokens), B by columns. Rank r needs all
  of A: Y[:, r] = all_gather(A)·B[:, r].
* GEMM → reduce-scatter (row-parallel): A split by columns and B by rows, both along the
  contracted K. Rank r computes the partial sum A[:, r]·B[r, :] of shape [T, N]; the
  reduce-scatter adds the n partials and leaves rank r its token block Y[r, :].

`*_plain` runs the whole collective, then the GEMM (or the reverse). `*_overlap` cuts the
collective into n−1 ring steps of one token block each (send to rank r+1, receive from rank r−1)
and multiplies a block that is already here while the next one travels: the "collective matmul"
of S. Wang et al., "Overlap Communication with Dependent Computation via Decomposition in Large
Deep Learning Models", ASPLOS 2023. The JAX shard_map tutorial ("Manual parallelism with
shard_map", examples "all-gather on one side" and "psum_scatter the result") writes the same
decomposition with ppermute; this is our own PyTorch version of it, for any n ≥ 2.

Streams (CUDA): the transfers are issued from a second stream `comm`, and every dependency is
written out. The comm stream waits for the compute stream (wait_stream, or an event) before it
sends what the compute stream wrote or overwrites what it reads; the compute stream waits for an
event recorded on the comm stream once a block has arrived. NCCL runs the send/recv on a stream
of its own, which waits for the comm stream when they are issued; Work.wait() makes the comm
stream wait for NCCL in turn. On CPU processes (gloo) `comm` is None, wait() blocks until the
transfer is done, and the same code runs in order. PyTorch no longer record_streams NCCL's
tensors (it holds them until wait(); pytorch/pytorch#148590), so a buffer the comm side touches
must be marked with record_stream(comm) by its owner: freed while a transfer is still queued, its
memory could otherwise go to a new tensor that the transfer then overwrites.
"""

import torch
import torch.distributed as dist


def event_on(stream):
    """An event recorded on `stream` now; None on CPU, where gloo's wait() already blocked."""
    if stream is None:
        return None
    event = torch.cuda.Event()
    event.record(stream)
    return event


def stream_waits(event):
    """The current stream waits for `event` (nothing to do on CPU)."""
    if event is not None:
        torch.cuda.current_stream().wait_event(event)


def ring_shift(send, recv, rank, n):
    """One ring step: send `send` to rank+1 and receive `recv` from rank−1, as one NCCL group."""
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, send, (rank + 1) % n),
                                   dist.P2POp(dist.irecv, recv, (rank - 1) % n)])


# ANCHOR: ag_overlap
def ag_overlap(a_shard, b, buf, rank, n, comm, multiply=True):
    """all_gather(A)·B as n−1 ring steps. At step s this rank holds the token block of rank r−s;
    it multiplies that block while passing it on to rank r+1. buf: a_full [T, K], y [T, N/n].
    multiply=False: the ring alone, the transfers that the GEMMs hide."""
    a_full, y = buf["a_full"], buf["y"]
    rows = a_shard.shape[0]
    blk = lambda q: slice(q * rows, (q + 1) * rows)  # noqa: E731
    a_full[blk(rank)].copy_(a_shard)
    if comm is not None:  # the copy, and the previous call's GEMMs reading a_full, come first
        comm.wait_stream(torch.cuda.current_stream())
    arrived = {}
    with torch.cuda.stream(comm):  # nothing happens here on CPU (comm is None)
        for s in range(n - 1):
            have, get = (rank - s) % n, (rank - s - 1) % n
            for work in ring_shift(a_full[blk(have)], a_full[blk(get)], rank, n):
                work.wait()  # the comm stream waits for NCCL's
            arrived[get] = event_on(comm)
    for s in range(n):
        q = (rank - s) % n
        if q != rank:
            stream_waits(arrived[q])  # block q is here
        if multiply:
            torch.mm(a_full[blk(q)], b, out=y[blk(q)])
    return y if multiply else a_full
# ANCHOR_END: ag_overlap


# ANCHOR: rs_overlap
def rs_overlap(a, b, buf, rank, n, comm, partials=None):
    """reduce_scatter(A·B) as n−1 ring steps. The running sum of token block q starts at rank q+1
    and travels to rank q, each rank on the way adding its partial product. The GEMM of the next
    block needs nothing from the wire, so it runs while the sum travels.
    buf: acc0, acc1 [T/n, N] (the sum arriving and the one leaving), part [≥ T/n, N], y [T/n, N].
    partials (A·B computed beforehand): the ring alone, transfers and additions without GEMMs."""
    y = buf["y"]
    rows = y.shape[0]
    acc, part = [buf["acc0"], buf["acc1"]], buf["part"][:rows]
    blk = lambda q: slice(q * rows, (q + 1) * rows)  # noqa: E731

    def partial(q, out):  # this rank's share of block q's sum
        return partials[blk(q)] if partials is not None else torch.mm(a[blk(q)], b, out=out)

    send = partial((rank - 1) % n, acc[0])  # this rank starts the sum of block r−1
    for s in range(n - 1):
        ready = event_on(torch.cuda.current_stream() if comm is not None else None)
        with torch.cuda.stream(comm):
            stream_waits(ready)  # the sum to send is written (and the buffer to fill is free)
            for work in ring_shift(send, acc[(s + 1) % 2], rank, n):
                work.wait()
            arrived = event_on(comm)
        mine = partial((rank - s - 2) % n, part)  # runs while the sum travels
        stream_waits(arrived)
        send = acc[(s + 1) % 2]
        if s == n - 2:  # block r has passed every rank: this rank's result
            return torch.add(send, mine, out=y)
        send.add_(mine)
    raise ValueError("a ring needs n ≥ 2")
# ANCHOR_END: rs_overlap


# ANCHOR: plain
def ag_plain(a_shard, b, buf):
    dist.all_gather_into_tensor(buf["a_full"], a_shard)
    return torch.mm(buf["a_full"], b, out=buf["y"])


def rs_plain(a, b, buf):
    torch.mm(a, b, out=buf["part"])
    dist.reduce_scatter_tensor(buf["y"], buf["part"])
    return buf["y"]
# ANCHOR_END: plain
