"""Snapshot 8: prefix caching. Every full prompt block gets a hash of its tokens chained with the
hash of the block before it, so equal hashes mean equal prefixes. A new sequence whose leading
blocks hash to blocks already in the pool shares them (reference counts say how many sequences
hold a block) and its prefill computes only the tokens after them. A freed block keeps its hash
and contents until the block is handed out again, so a later request can still hit it.
Changed from s7: PrefixBlockManager, PrefixScheduler (KV accounting), PrefixRunner.run_prefill,
PrefixEngine.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import labkit  # noqa: E402,F401
from model import sdpa  # noqa: E402
from s6_paged_kv import BlockManager  # noqa: E402
from s7_model_runner import LLMEngine, ModelRunner, Scheduler, serve as serve_s7  # noqa: E402


class PrefixBlockManager(BlockManager):
    def __init__(self, num_blocks, block_size):
        super().__init__(num_blocks, block_size)
        self.ref = [0] * num_blocks  # sequences holding each block
        self.block_of = {}  # hash -> block
        self.hash_of, self.tokens_of = {}, {}  # block -> its hash, its tokens
        self.hit_tokens = self.prompt_tokens = 0

    def take_free(self):
        """A free block for new contents: forget what it cached."""
        b = self.free.popleft()
        h = self.hash_of.pop(b, None)
        if h is not None and self.block_of.get(h) == b:
            del self.block_of[h]
        return b

    def allocate(self, seq):
        bs, n = self.block_size, len(seq.tokens)
        seq.block_table, seq.num_cached = [], 0
        h, missed = None, False
        for i in range(self.blocks_needed(n)):
            chunk = tuple(seq.tokens[i * bs:(i + 1) * bs])
            # only full blocks that end before the last token: that one must be computed
            h = hash((h, chunk)) if len(chunk) == bs and (i + 1) * bs < n else None
            b = None if (h is None or missed) else self.block_of.get(h)
            if b is not None and self.tokens_of[b] == chunk:  # hit: share the block
                if self.ref[b] == 0:
                    self.free.remove(b)
                seq.num_cached += bs
            else:
                missed, b = True, self.take_free()
                if h is not None:
                    self.block_of[h], self.hash_of[b], self.tokens_of[b] = b, h, chunk
            self.ref[b] += 1
            seq.block_table.append(b)
        # A preempted sequence is allocated again when it is re-admitted, and then finds its own
        # blocks still cached: count each request's prompt and hits once, at its first admission.
        if not getattr(seq, "prefix_counted", False):
            seq.prefix_counted = True
            self.hit_tokens += seq.num_cached
            self.prompt_tokens += n

    def may_append(self, seq):
        if len(seq.block_table) < self.blocks_needed(len(seq.tokens)):
            b = self.take_free()
            self.ref[b] += 1
            seq.block_table.append(b)

    def deallocate(self, seq):
        for b in reversed(seq.block_table):  # the tail goes back first, the shared head last
            self.ref[b] -= 1
            if self.ref[b] == 0:
                self.free.append(b)
        seq.block_table = []


class PrefixScheduler(Scheduler):
    """KV accounting with shared blocks: "used" counts each physical block once (s7's sum over
    sequences would count a shared prefix block once per sequence holding it, and exceed the
    pool). The per-sequence sum is kept as kv_logical_pct: above 100 means sharing."""

    def __init__(self, ecfg, bm):
        super().__init__(ecfg, bm)
        self.logical_fracs = []

    def kv_used_tokens(self):
        bs, filled = self.bm.block_size, {}
        for s in self.running:
            for i, b in enumerate(s.block_table):
                filled[b] = max(filled.get(b, 0), min(bs, len(s.tokens) - i * bs))
        return sum(filled.values())

    def postprocess(self, seqs, tokens, clock):
        super().postprocess(seqs, tokens, clock)
        reserved = clock.kv_samples[-1][1]
        if reserved > 0:
            self.logical_fracs.append(sum(len(s.tokens) for s in self.running) / reserved)
            clock.extra["kv_logical_pct"] = 100.0 * sum(self.logical_fracs) / len(self.logical_fracs)


class PrefixRunner(ModelRunner):
    def run_prefill(self, seqs):
        """Feed only the uncached tokens; attend over the whole sequence read from the pages."""
        dev, model = self.model.device, self.model
        starts, lens = [s.num_cached for s in seqs], [len(s.tokens) for s in seqs]
        ids = torch.tensor([t for s, a in zip(seqs, starts) for t in s.tokens[a:]], device=dev)
        pos = torch.cat([torch.arange(a, n, device=dev) for a, n in zip(starts, lens)])
        slot_mapping = torch.tensor(
            [x for s, a, n in zip(seqs, starts, lens) for x in self.cache.slots(s, range(a, n))],
            device=dev)
        gathers = [torch.tensor(self.cache.slots(s, range(n)), device=dev) for s, n in zip(seqs, lens)]
        masks = [torch.arange(n, device=dev)[None, :] <= torch.arange(a, n, device=dev)[:, None]
                 for a, n in zip(starts, lens)]

        def attend(layer, q, k, v):
            self.cache.k[layer, slot_mapping] = k  # all new k, v first, then every read
            self.cache.v[layer, slot_mapping] = v
            out, off = [], 0
            for a, n, g, mask in zip(starts, lens, gathers, masks):
                keys, values = self.cache.k[layer, g], self.cache.v[layer, g]
                out.append(sdpa(q[None, off:off + n - a], keys[None], values[None], mask=mask[None])[0])
                off += n - a
            return torch.cat(out)

        h = model.forward(ids, pos, attend)
        last = torch.tensor([n - a for a, n in zip(starts, lens)], device=dev).cumsum(0) - 1
        return model.logits(h[last]).argmax(-1).tolist()


class PrefixEngine(LLMEngine):
    scheduler_cls, runner_cls, block_manager_cls = PrefixScheduler, PrefixRunner, PrefixBlockManager

    def generate(self, requests, clock):
        super().generate(requests, clock)
        bm = self.last_block_manager
        clock.extra["prefix_hit_pct"] = 100.0 * bm.hit_tokens / max(1, bm.prompt_tokens)

    def new_block_manager(self):
        self.last_block_manager = PrefixBlockManager(self.num_blocks, self.ecfg.block_size)
        return self.last_block_manager


def serve(model, requests, ecfg, clock):
    serve_s7(model, requests, ecfg, clock, engine_cls=PrefixEngine)


if __name__ == "__main__":
    import bench
    bench.run(8, "s8", "s8 prefix caching", serve, gpu_only=True)
