"""A decode-like step of the hdlc-lab model, launched op by op (eager) vs replayed as a CUDA graph.

One idea: at batch 1 and one token, each of the model's ~100 kernels does almost no work, so the
step's time is mostly the CPU launching kernels one after another. A CUDA graph records the whole
sequence of launches once (torch.cuda.CUDAGraph) and replays it with one call, so the GPU runs the
kernels back to back. The step here is the full 8-layer model on [batch, 1] tokens without a KV
cache (every layer's matmuls at M = batch, attention over one position): the launch pattern of
decoding, not its attention cost.

Verification: the eager step against a float64 copy of the model (BF16 tolerance), and the graph
replay against the eager output on new tokens copied into the graph's static input buffer.
Metric `launch_overhead_us`: eager median − graph median, the time the graph saved per step.
"""

import copy
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import model  # noqa: E402
import torch  # noqa: E402

QUICK = labkit.QUICK
DEV = labkit.torch_device()
CFG = model.TINY if QUICK else model.HDLC_LAB
BATCHES = [1, 8] if QUICK else [1, 2, 4, 8]


# ANCHOR: capture
def capture(m, static_tokens):
    """Record one forward of `m` on the static input buffer into a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():  # warm-up: allocator, cuBLAS handles
        for _ in range(3):
            m(static_tokens)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_logits = m(static_tokens)  # kernels recorded, not run; outputs live in the graph's pool
    return graph, static_logits


def graph_step(graph, static_tokens, static_logits, tokens):
    static_tokens.copy_(tokens)  # new input goes into the recorded address
    graph.replay()
    return static_logits
# ANCHOR_END: capture


def main():
    m = model.build(CFG, seed=0, device=DEV, dtype=torch.bfloat16).eval()
    ref_model = copy.deepcopy(m).double()
    g = torch.Generator().manual_seed(labkit.SEED)
    for batch in BATCHES:
        params = {"batch": batch, "seq": 1}
        tokens = torch.randint(0, CFG.vocab, (batch, 1), generator=g).to(DEV)
        with torch.no_grad():
            ref = ref_model(tokens)

        def eager():
            with torch.no_grad():
                return m(tokens)

        flops = model.forward_flops(CFG, batch, 1)
        err = labkit.rel_error(eager(), ref)
        if not err <= 5e-2:
            labkit.failed("eager", "eager (op by op)", params, "verify", f"rel_error {err:.3e}", rung=0)
            continue
        # No L2 flush: a flush kernel ahead of each step would let the CPU queue the step's
        # launches while the GPU is busy, hiding exactly the launch cost this lab measures.
        eager_timing = labkit.time_torch(eager, flush=False)
        eager_ms = eager_timing["median_ms"]
        labkit.ok("eager", "eager (op by op)", params, eager_timing, rel_error=err, tolerance=5e-2,
                  flops=flops, rung=0, metrics={"tokens_per_s": batch / (eager_ms * 1e-3)})
        if DEV != "cuda":
            labkit.failed("graph", "CUDA graph replay", params, "unsupported", "CUDA graphs need a GPU",
                          rung=1)
            continue
        try:
            static_tokens = torch.zeros_like(tokens)
            graph, static_logits = capture(m, static_tokens)
        except Exception as e:
            labkit.failed("graph", "CUDA graph replay", params, "launch", f"capture: {e}", rung=1)
            continue
        fresh = torch.randint(0, CFG.vocab, (batch, 1), generator=g).to(DEV)
        with torch.no_grad():
            expect = m(fresh)  # eager on the same new tokens: the replay must equal it

        def replay():
            return graph_step(graph, static_tokens, static_logits, fresh)

        try:
            out = replay().clone()
            err = labkit.rel_error(out, expect)
        except Exception as e:
            labkit.failed("graph", "CUDA graph replay", params, "launch", str(e), rung=1)
            continue
        if not err <= 1e-3:
            labkit.failed("graph", "CUDA graph replay", params, "verify", f"rel_error {err:.3e}", rung=1)
            continue
        timing = labkit.time_torch(replay, flush=False)
        labkit.ok("graph", "CUDA graph replay", params, timing, rel_error=err, tolerance=1e-3,
                  flops=flops, rung=1,
                  metrics={"launch_overhead_us": 1e3 * (eager_ms - timing["median_ms"]),
                           "tokens_per_s": batch / (timing["median_ms"] * 1e-3)})


if __name__ == "__main__":
    main()
