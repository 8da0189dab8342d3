"""Snapshot 2: a KV cache. The prompt is computed once (prefill) and its keys and values kept;
each new token then runs the model on one position and attends over the cache (decode).
Still one request at a time. Changed from s1: KVCache, generate.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

import labkit  # noqa: E402,F401
from model import sdpa  # noqa: E402


class KVCache:
    """Keys and values of one sequence, for every layer: [layers, max_len, kv_heads, head_dim]."""

    def __init__(self, model, max_len):
        c = model.cfg
        shape = (c.n_layers, max_len, c.n_kv_heads, c.head_dim)
        self.k = torch.empty(shape, dtype=model.dtype, device=model.device)
        self.v = torch.empty(shape, dtype=model.dtype, device=model.device)
        self.len = 0  # positions already in the cache

    def attend(self, layer, q, k, v):
        """Write the new positions' k, v after the cached ones, attend over all of them."""
        start, n = self.len, q.shape[0]
        self.k[layer, start:start + n] = k
        self.v[layer, start:start + n] = v
        keys, values = self.k[layer, :start + n], self.v[layer, :start + n]
        # prefill (start 0): causal over the prompt; decode (n 1): the new token sees everything
        return sdpa(q[None], keys[None], values[None], causal=(start == 0 and n > 1))[0]


def generate(model, prompt, max_tokens, emit, cache, clock):
    ids = list(prompt)  # the first step feeds the prompt, later steps one token
    for _ in range(max_tokens):
        pos = torch.arange(cache.len, cache.len + len(ids), device=model.device)
        h = model.forward(torch.tensor(ids, device=model.device), pos, cache.attend)
        cache.len += len(ids)
        next_id = model.logits(h[-1]).argmax().item()
        clock.kv(cache.len, cache.k.shape[1])
        emit(next_id)
        ids = [next_id]


def serve(model, requests, ecfg, clock):
    clock.start()
    for r in requests:
        cache = KVCache(model, ecfg.max_model_len)  # sized for the longest request it may get
        generate(model, r.prompt, r.max_tokens, lambda t, rid=r.rid: clock.token(rid, t),
                 cache, clock)


if __name__ == "__main__":
    import bench
    bench.run(2, "s2", "s2 KV cache", serve, full_warmup=False)
