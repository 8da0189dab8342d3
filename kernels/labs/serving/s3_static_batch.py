"""Snapshot 3: request state and a static-batch scheduler. Requests become Sequence objects that
carry their own tokens and status; the scheduler takes up to max_num_seqs of them and runs them
in lockstep as one padded rectangle (prompts left-padded to the longest) until the last one is
done, then takes the next batch. Changed from s2: Sequence, BatchCache, run_batch, serve.
"""

import enum
import pathlib
import sys
from collections import deque

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import labkit  # noqa: E402,F401
from model import sdpa  # noqa: E402


class Status(enum.Enum):
    WAITING = 1
    RUNNING = 2
    FINISHED = 3


class Sequence:
    """One request's state: its tokens so far (prompt, then outputs) and where it stands."""

    def __init__(self, req):
        self.rid, self.max_tokens = req.rid, req.max_tokens
        self.tokens = list(req.prompt)
        self.num_prompt = len(req.prompt)
        self.status = Status.WAITING

    @property
    def num_out(self):
        return len(self.tokens) - self.num_prompt

    def append(self, token, clock):
        self.tokens.append(token)
        clock.token(self.rid, token)
        if self.num_out == self.max_tokens:
            self.status = Status.FINISHED


class BatchCache:
    """One rectangle [layers, batch, max_len, kv_heads, head_dim]; row b is left-padded by pad[b]."""

    def __init__(self, model, pad, max_len):
        c = model.cfg
        shape = (c.n_layers, len(pad), max_len, c.n_kv_heads, c.head_dim)
        self.k = torch.empty(shape, dtype=model.dtype, device=model.device)
        self.v = torch.empty(shape, dtype=model.dtype, device=model.device)
        self.pad = torch.tensor(pad, device=model.device)
        self.len = 0  # columns filled (the same for every row)

    def attend(self, layer, q, k, v):  # q [B, T, H, D], k, v [B, T, KV, D]
        start, n = self.len, q.shape[1]
        self.k[layer, :, start:start + n] = k
        self.v[layer, :, start:start + n] = v
        keys, values = self.k[layer, :, :start + n], self.v[layer, :, :start + n]
        col = torch.arange(start + n, device=q.device)
        row = torch.arange(start, start + n, device=q.device)
        # a real query sees real keys up to itself; a pad query sees only itself (never NaN)
        mask = (col[None, None, :] >= self.pad[:, None, None]) & (col[None, None, :] <= row[None, :, None])
        mask = mask | (col[None, None, :] == row[None, :, None])
        return sdpa(q, keys, values, mask=mask)


def run_batch(model, batch, ecfg, clock):
    longest = max(s.num_prompt for s in batch)
    pad = [longest - s.num_prompt for s in batch]
    # The rectangle runs until the longest output is done, after the longest prompt: its width is
    # longest prompt + longest output, which can exceed every single request's own length.
    width = longest + max(s.max_tokens for s in batch)
    cache = BatchCache(model, pad, width)
    ids = torch.tensor([[0] * p + s.tokens for p, s in zip(pad, batch)], device=model.device)
    pad_t = torch.tensor(pad, device=model.device)[:, None]
    for s in batch:
        s.status = Status.RUNNING
    while any(s.status == Status.RUNNING for s in batch):
        cols = torch.arange(cache.len, cache.len + ids.shape[1], device=model.device)
        pos = (cols[None, :] - pad_t).clamp(min=0)
        h = model.forward(ids, pos, cache.attend)  # finished rows are still computed
        cache.len += ids.shape[1]
        next_ids = model.logits(h[:, -1]).argmax(-1).tolist()
        for s, t in zip(batch, next_ids):
            if s.status == Status.RUNNING:
                s.append(t, clock)
        clock.kv(sum(len(s.tokens) for s in batch if s.status == Status.RUNNING),
                 len(batch) * width)
        ids = torch.tensor(next_ids, device=model.device)[:, None]


def serve(model, requests, ecfg, clock):
    clock.start()
    waiting = deque(Sequence(r) for r in requests)
    while waiting:  # static batching: the next batch starts when the whole last one is done
        batch = [waiting.popleft() for _ in range(min(ecfg.max_num_seqs, len(waiting)))]
        run_batch(model, batch, ecfg, clock)


if __name__ == "__main__":
    import bench
    bench.run(3, "s3", "s3 static batch", serve)
