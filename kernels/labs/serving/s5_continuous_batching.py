"""Snapshot 5: continuous batching. The scheduler decides every step: if a slot is free and a
request waits, admit it and run a prefill step; otherwise run one decode step for everyone
running. A finished sequence frees its slot at once, so the next request starts without
waiting for the rest of its batch. Changed from s4: serve (the scheduler) only.
"""

import pathlib
import sys
from collections import deque

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import labkit  # noqa: E402,F401
from s3_static_batch import Sequence, Status  # noqa: E402
from s4_prefill_decode import SlotCache, decode, prefill  # noqa: E402


def serve(model, requests, ecfg, clock):
    cache = SlotCache(model, ecfg.max_num_seqs, ecfg.max_model_len)
    free_slots = list(range(ecfg.max_num_seqs))
    clock.start()
    waiting, running = deque(Sequence(r) for r in requests), []
    while waiting or running:
        admitted = []
        while waiting and free_slots:  # prefill first: new requests join at any step
            s = waiting.popleft()
            s.slot, s.status = free_slots.pop(), Status.RUNNING
            admitted.append(s)
        if admitted:
            prefill(model, cache, admitted, clock)
            running += admitted
        else:
            decode(model, cache, running, clock)
        for s in running:
            if s.status == Status.FINISHED:
                free_slots.append(s.slot)
        running = [s for s in running if s.status == Status.RUNNING]
        clock.kv(sum(len(s.tokens) for s in running), len(running) * ecfg.max_model_len)


if __name__ == "__main__":
    import bench
    bench.run(5, "s5", "s5 continuous batching", serve)
