"""Snapshot 6: a paged KV cache. The pool is cut into blocks of 16 positions; a block manager
hands blocks out as sequences grow and takes them back when they finish, and each sequence's
block table maps its logical block i to a physical block. Nothing is reserved for tokens that
do not exist yet, so the same pool holds more sequences at once. When the pool runs dry, the
newest running sequence is preempted (its blocks freed, recomputed later).
Changed from s5: BlockManager, PagedCache, prefill, decode, serve.
"""

import pathlib
import sys
from collections import deque

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import labkit  # noqa: E402,F401
from model import sdpa  # noqa: E402
from s3_static_batch import Sequence, Status  # noqa: E402


class BlockManager:
    """Free list of physical blocks; block 0 is never handed out (padding points at it)."""

    def __init__(self, num_blocks, block_size):
        self.num_blocks, self.block_size = num_blocks, block_size
        self.free = deque(range(1, num_blocks))

    def blocks_needed(self, n_tokens):
        return -(-n_tokens // self.block_size)

    def can_allocate(self, seq):
        return len(self.free) >= self.blocks_needed(len(seq.tokens))

    def allocate(self, seq):  # blocks for every token the prefill will write
        seq.block_table = [self.free.popleft() for _ in range(self.blocks_needed(len(seq.tokens)))]

    def can_append(self, seq):  # the decode step writes position len(tokens) - 1
        return len(seq.block_table) >= self.blocks_needed(len(seq.tokens)) or len(self.free) > 0

    def may_append(self, seq):
        if len(seq.block_table) < self.blocks_needed(len(seq.tokens)):
            seq.block_table.append(self.free.popleft())

    def deallocate(self, seq):
        self.free.extend(seq.block_table)
        seq.block_table = []


class PagedCache:
    """[layers, num_blocks * block_size, kv_heads, head_dim]: physical block p holds positions
    p*bs … p*bs+bs-1 of the flat axis. slot(seq, i) = table[i // bs] * bs + i % bs."""

    def __init__(self, model, num_blocks, block_size):
        c = model.cfg
        shape = (c.n_layers, num_blocks * block_size, c.n_kv_heads, c.head_dim)
        # Zeros, not torch.empty: a batched step reads positions it has not written (up to
        # the longest sequence) and masks them, and a masked position still multiplies its V
        # row by a zero weight; 0 x NaN is NaN, so stale NaN bits in a fresh allocation would
        # poison the whole row. The pool is zeroed once, before the clock starts.
        self.k = torch.zeros(shape, dtype=model.dtype, device=model.device)
        self.v = torch.zeros(shape, dtype=model.dtype, device=model.device)
        self.block_size = block_size

    def slots(self, seq, positions):
        bs = self.block_size
        return [seq.block_table[i // bs] * bs + i % bs for i in positions]


def prefill(model, cache, seqs, clock):
    dev = model.device
    lens = [len(s.tokens) for s in seqs]
    ids = torch.tensor([t for s in seqs for t in s.tokens], device=dev)
    pos = torch.cat([torch.arange(n, device=dev) for n in lens])
    slot_mapping = torch.tensor([x for s in seqs for x in cache.slots(s, range(len(s.tokens)))],
                                device=dev)

    def attend(layer, q, k, v):
        cache.k[layer, slot_mapping] = k  # scatter into the pages
        cache.v[layer, slot_mapping] = v
        out, off = [], 0
        for n in lens:
            out.append(sdpa(q[None, off:off + n], k[None, off:off + n], v[None, off:off + n],
                            causal=True)[0])
            off += n
        return torch.cat(out)

    h = model.forward(ids, pos, attend)
    last = torch.tensor(lens, device=dev).cumsum(0) - 1
    for s, t in zip(seqs, model.logits(h[last]).argmax(-1).tolist()):
        s.append(t, clock)


def decode(model, cache, seqs, clock):
    dev, bs = model.device, cache.block_size
    ids = torch.tensor([s.tokens[-1] for s in seqs], device=dev)
    pos = torch.tensor([len(s.tokens) - 1 for s in seqs], device=dev)
    slot_mapping = torch.tensor([cache.slots(s, [len(s.tokens) - 1])[0] for s in seqs], device=dev)
    n_blocks = max(len(s.block_table) for s in seqs)
    tables = torch.tensor([s.block_table + [0] * (n_blocks - len(s.block_table)) for s in seqs],
                          device=dev)  # [B, n_blocks], padded with the null block
    gather = (tables[:, :, None] * bs + torch.arange(bs, device=dev)).flatten(1)  # [B, n_blocks*bs]
    mask = torch.arange(n_blocks * bs, device=dev)[None, :] <= pos[:, None]

    def attend(layer, q, k, v):
        cache.k[layer, slot_mapping] = k
        cache.v[layer, slot_mapping] = v
        keys, values = cache.k[layer, gather], cache.v[layer, gather]  # pages → dense [B, S, KV, D]
        return sdpa(q[:, None], keys, values, mask=mask[:, None, :])[:, 0]

    h = model.forward(ids, pos, attend)
    for s, t in zip(seqs, model.logits(h).argmax(-1).tolist()):
        s.append(t, clock)


def preempt(seq, bm, waiting):
    """Give the blocks back; the sequence waits again and its prefill recomputes all its tokens."""
    seq.status = Status.WAITING
    bm.deallocate(seq)
    waiting.appendleft(seq)


def serve(model, requests, ecfg, clock):
    bs = ecfg.block_size
    num_blocks = ecfg.kv_budget_tokens // bs + 1  # the same pool as s5, plus the null block
    cache, bm = PagedCache(model, num_blocks, bs), BlockManager(num_blocks, bs)
    clock.start()
    waiting, running = deque(Sequence(r) for r in requests), deque()
    while waiting or running:
        admitted = []
        while (waiting and len(running) + len(admitted) < ecfg.max_num_seqs_paged
               and bm.can_allocate(waiting[0])):
            s = waiting.popleft()
            bm.allocate(s)
            s.status = Status.RUNNING
            admitted.append(s)
        if admitted:
            prefill(model, cache, admitted, clock)
            running.extend(admitted)
        else:
            kept = []
            while running:  # every running sequence needs room for one more token
                s = running.popleft()
                while not bm.can_append(s):
                    if running:
                        preempt(running.pop(), bm, waiting)  # the newest makes room
                    else:
                        preempt(s, bm, waiting)
                        break
                else:
                    bm.may_append(s)
                    kept.append(s)
            running.extend(kept)
            decode(model, cache, list(running), clock)
        for s in running:
            if s.status == Status.FINISHED:
                bm.deallocate(s)
        running = deque(s for s in running if s.status == Status.RUNNING)
        clock.kv(sum(len(s.tokens) for s in running), (num_blocks - 1 - len(bm.free)) * bs)


if __name__ == "__main__":
    import bench
    bench.run(6, "s6", "s6 paged KV cache", serve)
