"""Snapshot 1: the smallest generate loop. No KV cache: every new token recomputes the whole
sequence, one request at a time. It is the reference every later snapshot must match token for
token, and the slowest rung of the ladder.

Run: python3 kernels/labs/serving/s1_no_cache.py  (HDLC_LAB_QUICK=1 for a CPU smoke test)
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import labkit  # noqa: E402,F401
from model import sdpa  # noqa: E402


def attend_no_cache(layer, q, k, v):
    """Causal attention over the keys and values of this very forward pass: [T, H, D]."""
    return sdpa(q[None], k[None], v[None], causal=True)[0]


def generate(model, prompt, max_tokens, emit):
    tokens = list(prompt)
    for _ in range(max_tokens):
        ids = torch.tensor(tokens, device=model.device)
        pos = torch.arange(len(tokens), device=model.device)
        h = model.forward(ids, pos, attend_no_cache)  # all len(tokens) positions, every time
        next_id = model.logits(h[-1]).argmax().item()  # greedy
        tokens.append(next_id)
        emit(next_id)


def serve(model, requests, ecfg, clock):
    clock.start()
    for r in requests:  # one request at a time, in arrival order
        generate(model, r.prompt, r.max_tokens, lambda t, rid=r.rid: clock.token(rid, t))


if __name__ == "__main__":
    import bench
    bench.run(1, "s1", "s1 no cache", serve, full_warmup=False)
