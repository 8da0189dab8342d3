"""Where a JAX program's time goes: tracing, compiling, running, and the ops inside the run.

One idea: `jax.jit(f)(x)` hides three costs that a benchmark must separate. Tracing + lowering
(Python runs f once on abstract values and emits StableHLO), XLA compilation (fusion, kernel
selection, code generation), and execution. The first two are paid once per shape and dtype;
only the third repeats. And execution is asynchronous: the call returns as soon as the work is
queued, so a timer stopped without block_until_ready() measures the dispatch, not the work.

Variants, all on the hdlc-lab forward in bf16 at batch 32 x seq 256, all on one executable
whose output is first checked against the PyTorch float64 model (as in forward.py):
  lower        jax.jit(f).lower(args)      trace + lower, a fresh function each repetition
  compile      lowered.compile()           XLA compilation of the same lowered module
  run          compiled(args).block_until_ready()   the right execution time
  run_no_block compiled(args) without blocking       the wrong one: only the dispatch
  run_no_block_queued  the same, back to back        wrong again: a full queue's throughput
The `run` record carries two tables: `top_ops`, the ops with the most device time in a
jax.profiler trace of a few runs (parsed from its Perfetto JSON), and `hlo_ops`, a census of
the instructions in the compiled HLO (what XLA fused the model into).
"""

import collections
import gzip
import json
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import labkit  # noqa: E402
import forward  # noqa: E402  (sets XLA_PYTHON_CLIENT_PREALLOCATE before jax starts)
import model  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

CFG, B, S, TOL = forward.CFG, forward.B, forward.S, forward.TOL_BF16
REPS_COMPILE = 3  # compiling takes seconds: a few repetitions are enough for a median
REPS_RUN = 50     # the same count for the blocked and the unblocked timing, so they compare


# ANCHOR: stages
def stages(params, tokens):
    """The three stages of jax.jit, each made explicit."""
    f = jax.jit(lambda p, t: model.forward(p, t, CFG))  # a fresh function: no cached trace
    lowered = f.lower(params, tokens)     # Python traced once, StableHLO emitted
    compiled = lowered.compile()          # XLA: HLO passes, fusion, kernels, executable
    return lowered, compiled
# ANCHOR_END: stages


def top_ops_from_trace(run, n_runs=5, top=12):
    """Run `run` under jax.profiler.trace and sum device time per op from the Perfetto JSON.

    GPU: the device process's "XLA Ops" line (one event per HLO op) if present, else its
    stream lines (one event per kernel). CPU: the XLA client's thread-pool lines.
    """
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            for _ in range(n_runs):
                run()
        path = next(pathlib.Path(d).rglob("perfetto_trace.json.gz"))
        trace = json.load(gzip.open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    dev = {p for p, name in procs.items() if "/device:GPU" in name}

    def line(e):
        return threads.get((e["pid"], e.get("tid")), "")

    spans = [e for e in events if e.get("ph") == "X" and e.get("dur") is not None]
    if dev:
        spans = [e for e in spans if e["pid"] in dev]
        ops_line = [e for e in spans if line(e) == "XLA Ops"]
        spans = ops_line or [e for e in spans if "Stream" in line(e)]
        source = "XLA Ops" if ops_line else "GPU streams"
    else:
        spans = [e for e in spans if line(e).startswith("tf_XLA") and not
                 re.match(r"(ThreadpoolListener|ThunkExecutor|end: )", e["name"])]
        source = "CPU thunks"
    total = collections.Counter()
    calls = collections.Counter()
    for e in spans:
        total[e["name"]] += float(e["dur"])
        calls[e["name"]] += 1
    all_us = sum(total.values()) or 1.0
    rows = [[name[:60], calls[name] // n_runs, round(us / n_runs, 1), round(100 * us / all_us, 1)]
            for name, us in total.most_common(top)]
    columns = [f"op ({source})", "calls_per_run", "time_us_per_run", "pct"]  # which line was read
    return {"columns": columns, "rows": rows}, source


def hlo_census(compiled, top=12):
    """Count the instruction kinds in the entry computation of the compiled (optimized) HLO."""
    text = compiled.as_text()
    entry = text[text.find("ENTRY"):]
    kinds = collections.Counter()
    for m in re.finditer(r"=\s*\S+\s+([a-z][a-z0-9-]*)\(", entry):
        kinds[m.group(1)] += 1
    fusions = collections.Counter(re.findall(r"kind=(k\w+)", entry))
    rows = [[k, c] for k, c in kinds.most_common(top)]
    rows += [[f"fusion {k}", c] for k, c in fusions.most_common()]
    return {"columns": ["hlo_instruction", "count"], "rows": rows}


def main():
    rng = np.random.default_rng(labkit.SEED)
    tokens_np = rng.integers(0, CFG.vocab, size=(B, S), dtype=np.int32)
    params, ref, ref_name = forward.reference(tokens_np)
    params = model.cast_params(params, jnp.bfloat16)
    tokens = jnp.asarray(tokens_np)
    shape = {"batch": B, "seq": S}
    flops = model.flops_per_token(CFG, S) * B * S

    _, compiled = stages(params, tokens)
    err = labkit.rel_error(np.asarray(compiled(params, tokens), np.float64), ref)
    labkit.log(f"compiled forward: rel_error {err:.2e} vs {ref_name}")
    if not err <= TOL:
        for rung, v in enumerate(["lower", "compile", "run", "run_no_block", "run_no_block_queued"]):
            labkit.failed(v, v, shape, "verify", f"rel_error {err:.3e} vs {ref_name} exceeds {TOL:.1e}",
                          rung=rung)
        return
    check = dict(rel_error=err, tolerance=TOL)

    # ANCHOR: compile_vs_run
    def lower():  # a new Python function each time, so nothing is reused from a cache
        return jax.jit(lambda p, t: model.forward(p, t, CFG)).lower(params, tokens)

    lower_t = labkit.time_wall(lower, warmup=1, reps=REPS_COMPILE)
    fresh = {"lowered": lower()}  # a Lowered caches its executable: compile a new one each time
    compile_t = labkit.time_wall(lambda: fresh["lowered"].compile(), warmup=1, reps=REPS_COMPILE,
                                 before=lambda: fresh.update(lowered=lower()))
    run_t = labkit.time_wall(lambda: compiled(params, tokens).block_until_ready(), reps=REPS_RUN)
    pending = []
    # Each wrong timing starts on an empty queue (drained, untimed, before it), so the clock
    # stops as soon as the call has been dispatched: the number a forgotten block gives.
    no_block_t = labkit.time_wall(lambda: pending.append(compiled(params, tokens)), reps=REPS_RUN,
                                  before=lambda: jax.block_until_ready(pending))
    jax.block_until_ready(pending)
    # The same wrong timing back to back: after a few calls the dispatch queue is full and each
    # call waits for an earlier run, so the clock measures throughput, not dispatch.
    queued_t = labkit.time_wall(lambda: pending.append(compiled(params, tokens)), reps=REPS_RUN)
    jax.block_until_ready(pending)  # drain the queue the wrong timings left behind
    # ANCHOR_END: compile_vs_run

    labkit.ok("lower", "trace + lower (jit(f).lower)", shape, lower_t, rung=0, **check)
    labkit.ok("compile", "XLA compile (lowered.compile())", shape, compile_t, rung=1, **check)
    tables = {"hlo_ops": hlo_census(compiled)}
    metrics = {}
    try:
        tables["top_ops"], source = top_ops_from_trace(
            lambda: compiled(params, tokens).block_until_ready())
        labkit.log(f"top ops from the profiler trace ({source})")
    except Exception as e:  # a trace that cannot be read leaves the census as the only table
        labkit.log(f"profiler trace not usable: {type(e).__name__}: {e}")
    metrics["compile_over_run"] = compile_t["median_ms"] / run_t["median_ms"]
    labkit.ok("run", "execute + block_until_ready (right)", shape, run_t, rung=2, baseline=True,
              flops=flops, tables=tables, metrics=metrics, **check)
    # no flops here: a FLOP/s computed from a dispatch time would be a number about nothing
    labkit.ok("run_no_block", "execute, no block_until_ready (wrong)", shape, no_block_t, rung=3,
              **check)
    labkit.ok("run_no_block_queued", "no block_until_ready, back to back (wrong)", shape, queued_t,
              rung=4, **check)


if __name__ == "__main__":
    main()
