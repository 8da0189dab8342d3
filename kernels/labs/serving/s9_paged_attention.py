"""Snapshot 9: attention read straight from the pages, and a runner built for large batches.

s8 spends its time outside the matrix products. Decode copies every sequence's pages into a dense
tensor at every layer of every step and attends over it with a mask; prefill calls SDPA once per
sequence from a Python loop; a step's inputs are built from nested Python lists; and the graphs
exist only for a few (batch, cache width) buckets. This snapshot changes the runner only:

- decode and prefill attend through two Triton kernels that follow the block table
  (`paged_attention.py`): no gather, one launch per layer for all sequences;
- a prefill step packs at most `max_num_batched_tokens` new tokens, so the first tokens of early
  requests come out while later prompts are still waiting;
- the decode graph has one shape per batch bucket (1, 2, 4, 8, then every 16): the kernel reads
  each sequence's length at run time, so no cache-width buckets are needed;
- step inputs are written into pinned host buffers through NumPy and copied in one go, and the
  KV accounting keeps a running count of shared blocks instead of walking every block table;
- the decode kernel's tile shape is chosen once, at start-up, by timing a few on this GPU.

Changed from s8: RefCounts, ScaleScheduler, PagedRunner, ScaleEngine, serve.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import labkit  # noqa: E402,F401
from paged_attention import paged_decode, paged_prefill, prefill_tiles, tune_decode  # noqa: E402
from s3_static_batch import Status  # noqa: E402
from s6_paged_kv import PagedCache  # noqa: E402
from s8_prefix_cache import PrefixEngine, PrefixScheduler  # noqa: E402
from s7_model_runner import serve as serve_s7  # noqa: E402

PREFILL_BM = 64  # query rows per prefill tile


class RefCounts(list):
    """The block manager's reference counts, keeping `shared`: how many holds beyond the first
    the blocks have in total (a block three sequences share adds two)."""

    def __init__(self, counts):
        super().__init__(counts)
        self.shared = sum(max(0, c - 1) for c in counts)

    def __setitem__(self, i, v):
        self.shared += max(0, v - 1) - max(0, self[i] - 1)
        super().__setitem__(i, v)


class ScaleScheduler(PrefixScheduler):
    """s8's scheduler with a token budget on prefill steps, and KV accounting in O(batch)."""

    def kv_used_tokens(self):
        """s8's count (each physical block once) without visiting the blocks: shared blocks are
        full prompt blocks, so each extra hold on one counted bs tokens twice."""
        return sum(len(s.tokens) for s in self.running) - self.bm.block_size * self.bm.ref.shared

    def schedule(self):
        admitted, tokens = [], 0
        while (self.waiting and len(self.running) + len(admitted) < self.ecfg.max_num_seqs_paged
               and self.bm.can_allocate(self.waiting[0])):
            n = len(self.waiting[0].tokens)
            if admitted and tokens + n > self.ecfg.max_num_batched_tokens:
                break
            s = self.waiting.popleft()
            self.bm.allocate(s)
            s.status = Status.RUNNING
            admitted.append(s)
            tokens += n - s.num_cached
        if admitted:
            self.running.extend(admitted)
            return admitted, True
        return super().schedule()  # nothing admitted: s7's decode step (and preemption)


def decode_buckets(limit):
    """1, 2, 4, 8, then every multiple of 16 up to limit (and limit itself)."""
    out = [b for b in (1, 2, 4, 8) if b < limit] + list(range(16, limit, 16))
    return out + [limit]


class PagedRunner:
    """Sequences in, token ids out; attention reads the pages through the Triton kernels."""

    def __init__(self, model, ecfg, num_blocks, use_graphs):
        self.model, self.bs = model, ecfg.block_size
        self.cache = PagedCache(model, num_blocks, self.bs)
        self.max_blocks = -(-ecfg.max_model_len // self.bs)
        self.batch_sizes = decode_buckets(ecfg.max_num_seqs_paged)
        n, dev = self.batch_sizes[-1], model.device
        shapes = {"ids": ((n,), torch.long), "pos": ((n,), torch.long),
                  "slots": ((n,), torch.long), "ctx": ((n,), torch.int32),
                  "tables": ((n, self.max_blocks), torch.int32)}
        self.buf = {k: torch.zeros(s, dtype=t, device=dev) for k, (s, t) in shapes.items()}
        pin = dev.type == "cuda"
        self.host = {k: torch.zeros(s, dtype=t, pin_memory=pin) for k, (s, t) in shapes.items()}
        self.graphs = {}
        self.decode_cfg = None
        if use_graphs:
            self.decode_cfg = tune_decode(self.cache.k[0], self.bs, n, min(1024, ecfg.max_model_len),
                                          model.cfg.n_heads)
            self.capture()

    def tables(self, seqs, width):
        t = np.zeros((len(seqs), width), dtype=np.int32)
        for i, s in enumerate(seqs):
            t[i, :len(s.block_table)] = s.block_table
        return t

    # ---- prefill: the new tokens of several sequences packed into one forward pass ----
    def prefill_metadata(self, seqs, starts, lens):
        dev = self.model.device
        q_len = [n - a for a, n in zip(starts, lens)]
        tile_seq, tile_row = prefill_tiles(q_len, PREFILL_BM)
        width = max(len(s.block_table) for s in seqs)
        as_int = lambda x: torch.tensor(x, dtype=torch.int32, device=dev)  # noqa: E731
        return {"tables": torch.from_numpy(self.tables(seqs, width)).to(dev),
                "q_start": as_int(np.cumsum([0] + q_len[:-1]).tolist()), "q_len": as_int(q_len),
                "ctx": as_int(lens), "tile_seq": as_int(tile_seq), "tile_row": as_int(tile_row)}

    def slot_list(self, seq, a, n):
        bs, table = self.bs, np.asarray(seq.block_table, dtype=np.int64)
        pos = np.arange(a, n)
        return table[pos // bs] * bs + pos % bs

    def run_prefill(self, seqs):
        dev, model, cache = self.model.device, self.model, self.cache
        starts, lens = [s.num_cached for s in seqs], [len(s.tokens) for s in seqs]
        ids = torch.tensor([t for s, a in zip(seqs, starts) for t in s.tokens[a:]], device=dev)
        pos = torch.from_numpy(np.concatenate([np.arange(a, n) for a, n in zip(starts, lens)])).to(dev)
        slot_mapping = torch.from_numpy(np.concatenate(
            [self.slot_list(s, a, n) for s, a, n in zip(seqs, starts, lens)])).to(dev)
        meta = self.prefill_metadata(seqs, starts, lens)

        def attend(layer, q, k, v):
            cache.k[layer, slot_mapping] = k
            cache.v[layer, slot_mapping] = v
            return paged_prefill(q, cache.k[layer], cache.v[layer], meta, self.bs, bm=PREFILL_BM)

        h = model.forward(ids, pos, attend)
        last = meta["q_len"].long().cumsum(0) - 1
        return model.logits(h[last]).argmax(-1).tolist()

    # ---- decode: one graph per batch bucket ----
    def attend_decode(self, layer, q, k, v):
        n = q.shape[0]
        self.cache.k[layer, self.buf["slots"][:n]] = k
        self.cache.v[layer, self.buf["slots"][:n]] = v
        return paged_decode(q, self.cache.k[layer], self.cache.v[layer], self.buf["tables"][:n],
                            self.buf["ctx"][:n], self.bs, cfg=self.decode_cfg)

    def decode_step(self, n):
        h = self.model.forward(self.buf["ids"][:n], self.buf["pos"][:n], self.attend_decode)
        return self.model.logits(h).argmax(-1)

    def capture(self):
        pool = None
        self.buf["ctx"].fill_(1)  # capture over one position per row (the null block)
        for n in reversed(self.batch_sizes):
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up (and Triton's compilation) outside the capture
                self.decode_step(n)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                out = self.decode_step(n)
            pool = pool or g.pool()
            self.graphs[n] = (g, out)
        torch.cuda.synchronize()

    def prepare_decode(self, seqs):
        """Fill the pinned host buffers, copy them to the device; returns the batch bucket."""
        b, bs = len(seqs), self.bs
        n = next(x for x in self.batch_sizes if x >= b)
        h = {k: v.numpy() for k, v in self.host.items()}
        lens = np.fromiter((len(s.tokens) for s in seqs), dtype=np.int64, count=b)
        h["ids"][:b] = [s.tokens[-1] for s in seqs]
        h["pos"][:b] = lens - 1
        h["slots"][:b] = [s.block_table[(m - 1) // bs] * bs + (m - 1) % bs for s, m in zip(seqs, lens)]
        h["ctx"][:b] = lens
        h["ids"][b:n], h["pos"][b:n], h["slots"][b:n], h["ctx"][b:n] = 0, 0, 0, 1  # padding rows
        h["tables"][:n] = 0
        for i, s in enumerate(seqs):
            row = s.__dict__.get("np_table")
            # the same list (a re-admitted sequence gets a new one), grown by one block per bs tokens
            if s.__dict__.get("np_src") is not s.block_table or len(row) != len(s.block_table):
                s.np_src, row = s.block_table, np.asarray(s.block_table, dtype=np.int32)
                s.np_table = row
            h["tables"][i, :len(row)] = row
        for key in self.buf:
            self.buf[key][:n].copy_(self.host[key][:n], non_blocking=True)
        return n

    def run_decode(self, seqs):
        n = self.prepare_decode(seqs)
        if n in self.graphs:
            g, out = self.graphs[n]
            g.replay()
        else:
            out = self.decode_step(n)
        return out[:len(seqs)].tolist()

    def run(self, seqs, is_prefill):
        return self.run_prefill(seqs) if is_prefill else self.run_decode(seqs)


class ScaleEngine(PrefixEngine):
    scheduler_cls, runner_cls = ScaleScheduler, PagedRunner

    def new_block_manager(self):
        bm = super().new_block_manager()
        bm.ref = RefCounts(bm.ref)
        return bm


def serve(model, requests, ecfg, clock):
    serve_s7(model, requests, ecfg, clock, engine_cls=ScaleEngine)


if __name__ == "__main__":
    import bench
    bench.run(9, "s9", "s9 paged attention kernels", serve, gpu_only=True)
