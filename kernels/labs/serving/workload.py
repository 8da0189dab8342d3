"""The requests every snapshot serves, and the engine limits it serves them under.

Why fixed and seeded: the snapshots are compared with each other, so they must do the same work.
Like nano-vllm's bench, every request arrives at time zero with random token ids and asks for a
fixed number of output tokens (no end-of-sequence token stops it early), so every snapshot
produces exactly the same number of tokens. Unlike that bench (100–1024 tokens each way) the
lengths are smaller, so that even snapshot 1, which recomputes the whole sequence for every new
token, finishes in about a minute. A few prompts share a prefix, which snapshot 8 reuses.

Two workloads: `bench` (timed, BF16) and `verify` (small, FP32, with a KV budget tight enough
that the paged snapshots must preempt), both shrunk under HDLC_LAB_QUICK=1.
"""

import dataclasses
import random

import labkit


# Not labkit.SEED: the runner sets that per invocation, and a lab re-run alone would then serve
# other requests (other lengths, budget, prefix hits) than the snapshots it is compared with.
WORKLOAD_SEED = 1234


@dataclasses.dataclass(frozen=True)
class Request:
    rid: int
    prompt: tuple  # token ids
    max_tokens: int  # exactly this many tokens are generated


@dataclasses.dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int  # sequences one step may hold (static and continuous batching)
    max_model_len: int  # longest prompt + output; a contiguous cache reserves this per sequence
    kv_budget_tokens: int  # the KV pool every batched snapshot gets, in tokens
    max_num_seqs_paged: int  # paged snapshots: the blocks, not this cap, should limit the batch
    block_size: int = 16  # tokens per KV block (paged snapshots)
    max_num_batched_tokens: int = 16384  # new tokens one prefill step may hold (s9 on)


def make_requests(seed, n, prompt_len, out_len, n_prefixes, prefix_len, vocab):
    """n requests; request i starts with shared prefix i % n_prefixes, then random tokens."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(vocab) for _ in range(prefix_len)] for _ in range(n_prefixes)]
    reqs = []
    for i in range(n):
        length = rng.randint(*prompt_len)
        suffix = [rng.randrange(vocab) for _ in range(length - prefix_len)]
        reqs.append(Request(i, tuple(prefixes[i % n_prefixes] + suffix), rng.randint(*out_len)))
    return reqs


def engine_config(reqs, max_num_seqs):
    """A contiguous cache holds max_num_seqs sequences of max_model_len: that is the KV budget,
    and the paged snapshots get exactly the same number of token slots."""
    longest = max(len(r.prompt) + r.max_tokens for r in reqs)
    max_model_len = -(-longest // 16) * 16
    return EngineConfig(max_num_seqs, max_model_len, max_num_seqs * max_model_len, 4 * max_num_seqs)


def bench(vocab):
    if labkit.QUICK:
        reqs = make_requests(WORKLOAD_SEED, 8, (20, 48), (4, 12), 2, 16, vocab)
        return reqs, engine_config(reqs, 3)
    reqs = make_requests(WORKLOAD_SEED, 48, (144, 512), (16, 144), 4, 128, vocab)
    return reqs, engine_config(reqs, 16)


def verify(vocab):
    if labkit.QUICK:
        reqs = make_requests(WORKLOAD_SEED + 1, 6, (20, 40), (3, 10), 2, 16, vocab)
    else:
        reqs = make_requests(WORKLOAD_SEED + 1, 8, (40, 96), (8, 24), 2, 32, vocab)
    # a token budget below the longer prompts, so that s9 packs prefills and s10 splits them
    return reqs, dataclasses.replace(engine_config(reqs, 3), max_num_batched_tokens=32)


def throughput(vocab):
    """nano-vllm's benchmark shape: 256 requests, prompt and output lengths uniform in 100..1024,
    random tokens, no shared prefix, all arriving at time zero. The pool holds every request at
    its full length (no preemption), as on that benchmark's 80 GB card, and up to 256 sequences
    run at once."""
    if labkit.QUICK:
        reqs = make_requests(WORKLOAD_SEED + 2, 12, (10, 40), (4, 16), 1, 0, vocab)
        return reqs, scale_config(reqs, 8)
    reqs = make_requests(WORKLOAD_SEED + 2, 256, (100, 1024), (100, 1024), 1, 0, vocab)
    return reqs, scale_config(reqs, 256)


def scale_config(reqs, max_seqs, block_size=16):
    need = sum(-(-(len(r.prompt) + r.max_tokens) // block_size) for r in reqs) * block_size
    longest = max(len(r.prompt) + r.max_tokens for r in reqs)
    max_model_len = -(-longest // block_size) * block_size
    return EngineConfig(max_seqs, max_model_len, need, max_seqs, block_size)


def poisson_arrivals(n, rate_per_s, seed):
    """Arrival times (s) of n requests at `rate_per_s` on average: exponential gaps, fixed seed,
    the way vLLM's serving benchmark draws them."""
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(n):
        out.append(t)
        t += rng.expovariate(rate_per_s)
    return out
