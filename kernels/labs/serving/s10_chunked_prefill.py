"""Snapshot 10: chunked prefill, and RMSNorm as one fused kernel.

In s9 a step is either a prefill or a decode. When a request arrives while others are
decoding, the next step is its whole prefill, and every running sequence waits for it: their
time per output token jumps. Here every step has one token budget. First each decoding sequence
gets its one token, then prompts fill what is left of the budget in chunks; a long prompt is
spread over several steps, and decoding never stops for it. A sequence samples its first token
in the step whose chunk reaches the end of its prompt. A step with no chunk in it is a plain
decode step and replays s9's graph; a mixed step runs eagerly, its decode rows through the
decode kernel and its chunks through the prefill kernel, both reading the pages.

RMSNorm runs as one Triton kernel (read the row once, write it once) instead of five eager ops.
Changed from s9: ChunkedScheduler, ChunkedRunner, ChunkedEngine, serve.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import labkit  # noqa: E402,F401
from paged_attention import paged_decode, paged_prefill  # noqa: E402
from s3_static_batch import Status  # noqa: E402
from s6_paged_kv import preempt  # noqa: E402
from s7_model_runner import serve as serve_s7  # noqa: E402
from s9_paged_attention import PREFILL_BM, PagedRunner, ScaleEngine, ScaleScheduler  # noqa: E402
from triton_kernels import rmsnorm_triton  # noqa: E402


class ChunkedScheduler(ScaleScheduler):
    """A step is a list of (sequence, first position, count): positions to compute this step."""

    def reserve(self, seq, gone):
        """Room for seq's next position; preempt the newest running sequences (into `gone`)
        until there is. False when seq itself had to go."""
        while not self.bm.can_append(seq):
            victim = self.running.pop()
            preempt(victim, self.bm, self.waiting)
            gone.add(id(victim))
            if victim is seq:
                return False
        self.bm.may_append(seq)
        return True

    def schedule(self):
        budget, step, gone = self.ecfg.max_num_batched_tokens, [], set()
        for s in [s for s in self.running if len(s.tokens) - s.num_computed == 1]:
            if id(s) not in gone and self.reserve(s, gone):  # decoding: one token each, first
                step.append((s, s.num_computed, 1))
        budget -= len(step)
        for s in self.running:  # prompts already started, oldest first
            left = len(s.tokens) - s.num_computed
            if left > 1 and budget > 0:
                step.append((s, s.num_computed, min(left, budget)))
                budget -= step[-1][2]
        while (budget > 0 and self.waiting and len(self.running) < self.ecfg.max_num_seqs_paged
               and self.bm.can_allocate(self.waiting[0])):
            s = self.waiting.popleft()
            self.bm.allocate(s)
            s.status, s.num_computed = Status.RUNNING, s.num_cached
            self.running.append(s)
            step.append((s, s.num_computed, min(len(s.tokens) - s.num_computed, budget)))
            budget -= step[-1][2]
        return step, "mixed"

    def postprocess(self, step, tokens, clock):
        for (s, a, n), t in zip(step, tokens):
            s.num_computed = a + n
            if s.num_computed == len(s.tokens):  # the chunk reached the end: a new token
                s.append(t, clock)
                if s.status == Status.FINISHED:
                    self.bm.deallocate(s)
        self.running = type(self.running)(s for s in self.running if s.status == Status.RUNNING)
        reserved = (self.bm.num_blocks - 1 - len(self.bm.free)) * self.bm.block_size
        clock.kv(self.kv_used_tokens(), reserved)


class ChunkedRunner(PagedRunner):
    def __init__(self, model, ecfg, num_blocks, use_graphs):
        with fused_norm(model):
            super().__init__(model, ecfg, num_blocks, use_graphs)

    def run(self, step, kind):
        with fused_norm(self.model):
            if all(n == 1 for _, _, n in step):
                return self.run_decode([s for s, _, _ in step])
            return self.run_mixed(step)

    def run_mixed(self, step):
        """Decode rows (one position each) first, then the prompt chunks, in one forward pass."""
        dev, cache = self.model.device, self.cache
        nd = sum(1 for _, _, n in step if n == 1)
        ids = torch.tensor([t for s, a, n in step for t in s.tokens[a:a + n]], device=dev)
        pos = torch.from_numpy(np.concatenate([np.arange(a, a + n) for _, a, n in step])).to(dev)
        slot_mapping = torch.from_numpy(np.concatenate(
            [self.slot_list(s, a, a + n) for s, a, n in step])).to(dev)
        dec, chunks = step[:nd], step[nd:]
        d_tables = torch.from_numpy(self.tables([s for s, _, _ in dec], self.max_blocks)).to(dev)
        d_ctx = torch.tensor([a + 1 for _, a, _ in dec], dtype=torch.int32, device=dev)
        meta = self.prefill_metadata([s for s, _, _ in chunks], [a for _, a, _ in chunks],
                                     [a + n for _, a, n in chunks])

        def attend(layer, q, k, v):
            cache.k[layer, slot_mapping] = k
            cache.v[layer, slot_mapping] = v
            kc, vc = cache.k[layer], cache.v[layer]
            parts = [paged_decode(q[:nd], kc, vc, d_tables, d_ctx, self.bs)] if nd else []
            if chunks:
                parts.append(paged_prefill(q[nd:], kc, vc, meta, self.bs, bm=PREFILL_BM))
            return torch.cat(parts)

        h = self.model.forward(ids, pos, attend)
        last = torch.tensor([n for _, _, n in step], device=dev).cumsum(0) - 1
        return self.model.logits(h[last]).argmax(-1).tolist()


class fused_norm:
    """While inside: the model's RMSNorm is the fused Triton kernel."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.saved, self.model.rmsnorm = self.model.rmsnorm, rmsnorm_triton

    def __exit__(self, *exc):
        self.model.rmsnorm = self.saved


class ChunkedEngine(ScaleEngine):
    scheduler_cls, runner_cls = ChunkedScheduler, ChunkedRunner


def serve(model, requests, ecfg, clock):
    serve_s7(model, requests, ecfg, clock, engine_cls=ChunkedEngine)


if __name__ == "__main__":
    import bench
    bench.run(10, "s10", "s10 chunked prefill, fused RMSNorm", serve, gpu_only=True)
