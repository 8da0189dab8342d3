"""Snapshot 4: prefill and decode as two different steps. Prefill packs the batch's prompts
back to back without padding ([total tokens]) and attends within each prompt; decode feeds one
token per running sequence and attends over that sequence's cache row, masked by its length.
A finished sequence drops out of the decode batch. Batches are still static.
Changed from s3: SlotCache, prefill, decode, serve.
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


class SlotCache:
    """max_num_seqs slots of max_model_len positions: [layers, slots, max_len, kv_heads, head_dim].
    A sequence owns one slot (seq.slot) from its prefill until it finishes."""

    def __init__(self, model, n_slots, max_len):
        c = model.cfg
        shape = (c.n_layers, n_slots, max_len, c.n_kv_heads, c.head_dim)
        # Zeros, not torch.empty: a batched step reads positions it has not written (up to
        # the longest sequence) and masks them, and a masked position still multiplies its V
        # row by a zero weight; 0 x NaN is NaN, so stale NaN bits in a fresh allocation would
        # poison the whole row. The pool is zeroed once, before the clock starts.
        self.k = torch.zeros(shape, dtype=model.dtype, device=model.device)
        self.v = torch.zeros(shape, dtype=model.dtype, device=model.device)


def prefill(model, cache, seqs, clock):
    """All prompts in one forward, packed: ids [sum of lengths], no padding."""
    dev = model.device
    lens = [len(s.tokens) for s in seqs]
    ids = torch.tensor([t for s in seqs for t in s.tokens], device=dev)
    pos = torch.cat([torch.arange(n, device=dev) for n in lens])

    def attend(layer, q, k, v):  # q [N, H, D]: the sequences one after another
        out, off = [], 0
        for s, n in zip(seqs, lens):
            cache.k[layer, s.slot, :n] = k[off:off + n]
            cache.v[layer, s.slot, :n] = v[off:off + n]
            out.append(sdpa(q[None, off:off + n], k[None, off:off + n], v[None, off:off + n],
                            causal=True)[0])
            off += n
        return torch.cat(out)

    h = model.forward(ids, pos, attend)
    last = torch.tensor(lens, device=dev).cumsum(0) - 1  # each prompt's last position
    for s, t in zip(seqs, model.logits(h[last]).argmax(-1).tolist()):
        s.append(t, clock)


def decode(model, cache, seqs, clock):
    """One new token per sequence: ids [B]; sequence b attends over its slot's first ctx[b] keys."""
    dev = model.device
    ids = torch.tensor([s.tokens[-1] for s in seqs], device=dev)
    pos = torch.tensor([len(s.tokens) - 1 for s in seqs], device=dev)
    slots = torch.tensor([s.slot for s in seqs], device=dev)
    ctx = pos + 1
    width = max(len(s.tokens) for s in seqs)
    mask = torch.arange(width, device=dev)[None, :] < ctx[:, None]  # [B, width]

    def attend(layer, q, k, v):  # q [B, H, D], k, v [B, KV, D]
        cache.k[layer, slots, pos] = k
        cache.v[layer, slots, pos] = v
        keys, values = cache.k[layer, slots, :width], cache.v[layer, slots, :width]
        return sdpa(q[:, None], keys, values, mask=mask[:, None, :])[:, 0]

    h = model.forward(ids, pos, attend)
    for s, t in zip(seqs, model.logits(h).argmax(-1).tolist()):
        s.append(t, clock)


def serve(model, requests, ecfg, clock):
    cache = SlotCache(model, ecfg.max_num_seqs, ecfg.max_model_len)
    clock.start()
    waiting = deque(Sequence(r) for r in requests)
    while waiting:
        batch = [waiting.popleft() for _ in range(min(ecfg.max_num_seqs, len(waiting)))]
        for slot, s in enumerate(batch):
            s.slot, s.status = slot, Status.RUNNING
        prefill(model, cache, batch, clock)
        running = [s for s in batch if s.status == Status.RUNNING]
        while running:
            clock.kv(sum(len(s.tokens) for s in running), len(batch) * ecfg.max_model_len)
            decode(model, cache, running, clock)
            running = [s for s in running if s.status == Status.RUNNING]


if __name__ == "__main__":
    import bench
    bench.run(4, "s4", "s4 prefill/decode split", serve)
