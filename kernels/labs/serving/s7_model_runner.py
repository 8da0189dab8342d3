"""Snapshot 7: the model runner split from the scheduler, and CUDA graphs for decode.

The scheduler (CPU only: queues, block manager, preemption) decides what runs; the model runner
(owns the model, the KV pool, the input buffers) turns a list of sequences into tensors, runs
the forward pass and returns token ids. The only things crossing between them are sequences
going in and token ids coming out, which is the contract vLLM keeps between its engine core
and its GPU workers. With that boundary in place, decode can be captured: for a few batch sizes
and cache widths the runner records one decode step as a CUDA graph and later replays it with
new inputs copied into fixed buffers, one launch instead of ~1,000 kernel launches from Python.
Changed from s6: Scheduler, ModelRunner, LLMEngine, serve.
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
from s6_paged_kv import BlockManager, PagedCache, preempt  # noqa: E402


class Scheduler:
    """Which sequences run next, and whether as a prefill or a decode step (s6's loop body)."""

    def __init__(self, ecfg, bm):
        self.ecfg, self.bm = ecfg, bm
        self.waiting, self.running = deque(), deque()

    def add(self, seq):
        self.waiting.append(seq)

    def is_finished(self):
        return not self.waiting and not self.running

    def schedule(self):
        admitted = []
        while (self.waiting and len(self.running) + len(admitted) < self.ecfg.max_num_seqs_paged
               and self.bm.can_allocate(self.waiting[0])):
            s = self.waiting.popleft()
            self.bm.allocate(s)
            s.status = Status.RUNNING
            admitted.append(s)
        if admitted:
            self.running.extend(admitted)
            return admitted, True
        kept = []
        while self.running:
            s = self.running.popleft()
            while not self.bm.can_append(s):
                if self.running:
                    preempt(self.running.pop(), self.bm, self.waiting)
                else:
                    preempt(s, self.bm, self.waiting)
                    break
            else:
                self.bm.may_append(s)
                kept.append(s)
        self.running.extend(kept)
        return kept, False

    def postprocess(self, seqs, tokens, clock):
        for s, t in zip(seqs, tokens):
            s.append(t, clock)
            if s.status == Status.FINISHED:
                self.bm.deallocate(s)
        self.running = deque(s for s in self.running if s.status == Status.RUNNING)
        reserved = (self.bm.num_blocks - 1 - len(self.bm.free)) * self.bm.block_size
        clock.kv(self.kv_used_tokens(), reserved)

    def kv_used_tokens(self):
        """Token positions the running sequences occupy (no block is shared before s8)."""
        return sum(len(s.tokens) for s in self.running)


def buckets(limit, start=1):
    """start, 2*start, 4*start, … below limit, then limit itself."""
    out, b = [], start
    while b < limit:
        out.append(b)
        b *= 2
    return out + [limit]


class ModelRunner:
    """Sequences in, token ids out. Owns the model, the KV pool and the decode graphs."""

    def __init__(self, model, ecfg, num_blocks, use_graphs):
        self.model, self.bs = model, ecfg.block_size
        self.cache = PagedCache(model, num_blocks, self.bs)
        self.max_blocks = -(-ecfg.max_model_len // self.bs)
        self.batch_sizes = buckets(ecfg.max_num_seqs_paged)
        self.widths = sorted({-(-self.max_blocks // 4), -(-self.max_blocks // 2), self.max_blocks})
        n, dev = self.batch_sizes[-1], model.device
        self.buf = {"ids": torch.zeros(n, dtype=torch.long, device=dev),
                    "pos": torch.zeros(n, dtype=torch.long, device=dev),
                    "slots": torch.zeros(n, dtype=torch.long, device=dev),
                    "tables": torch.zeros(n, self.max_blocks, dtype=torch.long, device=dev)}
        self.graphs = {}
        if use_graphs:
            self.capture()

    # ---- prefill: eager, variable length (as in s6, but returning token ids) ----
    def run_prefill(self, seqs):
        dev, model = self.model.device, self.model
        lens = [len(s.tokens) for s in seqs]
        ids = torch.tensor([t for s in seqs for t in s.tokens], device=dev)
        pos = torch.cat([torch.arange(n, device=dev) for n in lens])
        slot_mapping = torch.tensor(
            [x for s in seqs for x in self.cache.slots(s, range(len(s.tokens)))], device=dev)

        def attend(layer, q, k, v):
            self.cache.k[layer, slot_mapping] = k
            self.cache.v[layer, slot_mapping] = v
            out, off = [], 0
            for n in lens:
                out.append(sdpa(q[None, off:off + n], k[None, off:off + n], v[None, off:off + n],
                                causal=True)[0])
                off += n
            return torch.cat(out)

        h = model.forward(ids, pos, attend)
        last = torch.tensor(lens, device=dev).cumsum(0) - 1
        return model.logits(h[last]).argmax(-1).tolist()

    # ---- decode: fixed shapes (batch bucket n, width bucket w blocks), so it can be a graph ----
    def attend_decode(self, layer, q, k, v):
        st = self.step
        self.cache.k[layer, st["slots"]] = k
        self.cache.v[layer, st["slots"]] = v
        keys, values = self.cache.k[layer, st["gather"]], self.cache.v[layer, st["gather"]]
        return sdpa(q[:, None], keys, values, mask=st["mask"][:, None, :])[:, 0]

    def decode_metadata(self, n, w):
        """What attend_decode reads at every layer, built once per step from the buffers."""
        b = self.buf
        pos, tables = b["pos"][:n], b["tables"][:n, :w]
        offsets = torch.arange(self.bs, device=pos.device)
        return {"slots": b["slots"][:n], "tables": tables, "pos": pos,
                "gather": (tables[:, :, None] * self.bs + offsets).flatten(1),
                "mask": torch.arange(w * self.bs, device=pos.device)[None, :] <= pos[:, None]}

    def decode_step(self, n, w):
        """The decode forward on the first n rows of the buffers, over w blocks per sequence."""
        self.step = self.decode_metadata(n, w)
        h = self.model.forward(self.buf["ids"][:n], self.buf["pos"][:n], self.attend_decode)
        return self.model.logits(h).argmax(-1)

    def capture(self):
        pool = None
        for w in reversed(self.widths):
            for n in reversed(self.batch_sizes):
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):  # warm-up outside the capture
                    self.decode_step(n, w)
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=pool):
                    out = self.decode_step(n, w)
                pool = pool or g.pool()
                self.graphs[(n, w)] = (g, out)
        torch.cuda.synchronize()

    def prepare_decode(self, seqs):
        """Copy the step's inputs into the fixed buffers; returns the (batch, width) bucket."""
        b = len(seqs)
        n = next(x for x in self.batch_sizes if x >= b)
        need = max(len(s.block_table) for s in seqs)
        w = next(x for x in self.widths if x >= need)
        ids, pos, slots = [0] * n, [0] * n, [0] * n  # padding rows write to the null block 0
        tables = [[0] * self.max_blocks for _ in range(n)]
        for i, s in enumerate(seqs):
            ids[i], pos[i] = s.tokens[-1], len(s.tokens) - 1
            slots[i] = self.cache.slots(s, [pos[i]])[0]
            tables[i][:len(s.block_table)] = s.block_table
        for key, val in (("ids", ids), ("pos", pos), ("slots", slots), ("tables", tables)):
            self.buf[key][:n].copy_(torch.tensor(val))
        return n, w

    def run_decode(self, seqs):
        n, w = self.prepare_decode(seqs)
        if (n, w) in self.graphs:
            g, out = self.graphs[(n, w)]
            g.replay()
        else:
            out = self.decode_step(n, w)
        return out[:len(seqs)].tolist()

    def run(self, seqs, is_prefill):
        return self.run_prefill(seqs) if is_prefill else self.run_decode(seqs)


class LLMEngine:
    """Start-up (KV pool, graphs) happens once; generate() then serves requests."""

    scheduler_cls, runner_cls, block_manager_cls = Scheduler, ModelRunner, BlockManager

    def __init__(self, model, ecfg):
        num_blocks = ecfg.kv_budget_tokens // ecfg.block_size + 1
        self.ecfg, self.num_blocks = ecfg, num_blocks
        self.runner = self.runner_cls(model, ecfg, num_blocks, use_graphs=model.device.type == "cuda")

    def new_block_manager(self):
        return self.block_manager_cls(self.num_blocks, self.ecfg.block_size)

    def generate(self, requests, clock):
        scheduler = self.scheduler_cls(self.ecfg, self.new_block_manager())
        for r in requests:
            scheduler.add(Sequence(r))
        clock.start()
        while not scheduler.is_finished():
            seqs, is_prefill = scheduler.schedule()
            tokens = self.runner.run(seqs, is_prefill)
            scheduler.postprocess(seqs, tokens, clock)


_engines = {}  # one engine per (model, config): built before the clock starts, like a server


def serve(model, requests, ecfg, clock, engine_cls=LLMEngine):
    key = (id(model), ecfg, engine_cls)
    if key not in _engines:
        _engines[key] = engine_cls(model, ecfg)
    _engines[key].generate(requests, clock)


if __name__ == "__main__":
    import bench
    bench.run(7, "s7", "s7 runner + CUDA graphs", serve, gpu_only=True)
