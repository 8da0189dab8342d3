"""Snapshot 11: the CPU prepares step k+1 while the GPU runs step k.

In s10 every decode step ends with `.tolist()`, which waits for the GPU; only then does the CPU
append the tokens, schedule the next step and copy its inputs, and all that while the GPU has
nothing to do. But a decode step's inputs do not need the previous tokens' *values* on the CPU:
the token ids are already on the GPU, and (no end-of-sequence token stops a request early) how
many tokens each request still needs is known. So this snapshot launches step k+1 first, with
the ids of rows that continue from step k gathered on the GPU from step k's output, and only
then waits for step k's tokens, which were copied to pinned host memory behind step k. The CPU
work of one step then hides behind the GPU work of the next.

A token whose value is not known yet is a placeholder in the sequence. Anything that needs the
values (a mixed step that builds its ids on the CPU, admitting or preempting a sequence, the end
of the run) first waits for the step in flight. Changed from s10: AsyncScheduler, AsyncRunner,
AsyncEngine, serve.
"""

import functools
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import labkit  # noqa: E402,F401
from s3_static_batch import Status  # noqa: E402
from s7_model_runner import serve as serve_s7  # noqa: E402
from s10_chunked_prefill import ChunkedEngine, ChunkedRunner, ChunkedScheduler, fused_norm  # noqa: E402

PENDING = -1  # a token computed (or being computed) on the GPU whose value the CPU has not read


class Result:
    """What a step hands back: this step's tokens if it ran synchronously (`now`), and the
    (sequence, value) pairs of an earlier step that were read while this one was launched."""

    def __init__(self, now=None, resolved=()):
        self.now, self.resolved = now, list(resolved)


class AsyncScheduler(ChunkedScheduler):
    def __init__(self, ecfg, bm, runner):
        super().__init__(ecfg, bm)
        self.runner, self.clock = runner, None

    def drain(self):
        """Wait for the step in flight and stamp its tokens."""
        for s, v in self.runner.drain():
            self.clock.token(s.rid, v)

    def schedule(self):
        # Admitting, chunking and preempting read token values: settle them first.
        if self.runner.inflight and (self.waiting or len(self.bm.free) < len(self.running)
                                     or any(len(s.tokens) - s.num_computed > 1 for s in self.running)):
            self.drain()
        return super().schedule()

    def postprocess(self, step, result, clock):
        self.clock = clock
        for s, v in result.resolved:
            clock.token(s.rid, v)
        if result.now is not None:
            return super().postprocess(step, result.now, clock)
        for s, a, n in step:  # launched, values pending: placeholders keep the lengths right
            s.num_computed = a + n
            s.tokens.append(PENDING)
            if s.num_out == s.max_tokens:
                s.status = Status.FINISHED
                self.bm.deallocate(s)  # stream order: later steps write these blocks after this one
        self.running = type(self.running)(s for s in self.running if s.status == Status.RUNNING)
        reserved = (self.bm.num_blocks - 1 - len(self.bm.free)) * self.bm.block_size
        clock.kv(self.kv_used_tokens(), reserved)
        if self.is_finished():
            self.drain()


class AsyncRunner(ChunkedRunner):
    def __init__(self, model, ecfg, num_blocks, use_graphs):
        super().__init__(model, ecfg, num_blocks, use_graphs)
        self.inflight = None  # (event, host tokens, device tokens, [(seq, index in seq.tokens)])
        self.inputs_copied = None  # event after a step's input copies (the pinned buffers are reused)
        pin = model.device.type == "cuda"
        self.host_out, self.host_out_next = (
            torch.zeros(self.batch_sizes[-1], dtype=torch.long, pin_memory=pin) for _ in range(2))

    def drain(self):
        """The values of the step in flight, written into its sequences: [(seq, value)]."""
        if not self.inflight:
            return []
        event, host, _, rows = self.inflight
        self.inflight = None
        if event is not None:
            event.synchronize()
        values = host[:len(rows)].tolist()
        for (s, i), v in zip(rows, values):
            s.tokens[i] = v
        return [(s, v) for (s, _), v in zip(rows, values)]

    def run(self, step, kind):
        with fused_norm(self.model):
            if not all(n == 1 for _, _, n in step):
                resolved = self.drain()
                return Result(now=self.run_mixed(step), resolved=resolved)
            return self.run_async([s for s, _, _ in step])

    def run_async(self, seqs):
        """Launch the decode step; then read the previous step's tokens while this one runs."""
        n = self.prepare_decode(seqs)
        self.chain_ids(seqs)
        if n in self.graphs:
            g, out = self.graphs[n]
            g.replay()
        else:
            out = self.decode_step(n)
        b = len(seqs)
        self.host_out_next[:b].copy_(out[:b], non_blocking=True)
        event = torch.cuda.Event() if out.is_cuda else None
        if event is not None:
            event.record()
        previous = self.drain()
        self.host_out, self.host_out_next = self.host_out_next, self.host_out
        self.inflight = (event, self.host_out, out, [(s, len(s.tokens)) for s in seqs])
        return Result(resolved=previous)

    def prepare_decode(self, seqs):
        """s9's, but the pinned buffers are written only once the last step's copies have left
        them: with a step in flight the CPU gets here before the GPU has read them."""
        if self.inputs_copied is not None:
            self.inputs_copied.synchronize()
        n = super().prepare_decode(seqs)
        if self.model.device.type == "cuda":
            self.inputs_copied = torch.cuda.Event()
            self.inputs_copied.record()
        return n

    def chain_ids(self, seqs):
        """Rows whose last token is still on the GPU take it from the step in flight's output."""
        if not self.inflight:
            return
        _, _, prev_out, rows = self.inflight
        where = {id(s): r for r, (s, _) in enumerate(rows)}
        src = np.array([where.get(id(s), -1) if s.tokens[-1] == PENDING else -1 for s in seqs])
        if (src < 0).all():
            return
        dev = self.model.device
        src_d = torch.from_numpy(src).to(dev, non_blocking=True)
        ids = self.buf["ids"][:len(seqs)]
        ids.copy_(torch.where(src_d >= 0, prev_out[src_d.clamp(min=0)], ids))


class AsyncEngine(ChunkedEngine):
    runner_cls = AsyncRunner

    @property
    def scheduler_cls(self):
        return functools.partial(AsyncScheduler, runner=self.runner)


def serve(model, requests, ecfg, clock):
    serve_s7(model, requests, ecfg, clock, engine_cls=AsyncEngine)


if __name__ == "__main__":
    import bench
    bench.run(11, "s11", "s11 async scheduling", serve, gpu_only=True)
