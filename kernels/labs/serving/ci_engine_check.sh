#!/usr/bin/env bash
# CI step: the serving engine's snapshots (s2-s11 and the scale labs' engines) keep their
# correctness on a machine without a GPU: on the tiny model, Triton's interpreter runs the
# paged-attention kernels on the CPU, and every snapshot's FP32 greedy tokens must equal
# snapshot 1's (including preemption, prefix hits and chunked prefill). Each lab runs under
# ci_poison.py, which fills fresh allocations with NaN, so an engine that reads memory it never
# wrote fails here rather than only on machines whose allocator hands back NaN bits.
# A lab that fails its check prints a `verify` or `launch` record, and this script fails.
set -euo pipefail
cd "$(dirname "$0")"
venv="${HDLC_CI_VENV:-${TMPDIR:-/tmp}/hdlc-torch-ci}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv --clear "$venv"
fi
# Triton comes with Linux torch; its interpreter needs NumPy 1.x for loops with run-time bounds.
"$venv/bin/pip" install -q torch "numpy<2"
for lab in s2_kv_cache.py s3_static_batch.py s4_prefill_decode.py s5_continuous_batching.py \
    s6_paged_kv.py s7_model_runner.py s8_prefix_cache.py s9_paged_attention.py \
    s10_chunked_prefill.py s11_async_scheduling.py throughput.py rates.py; do
  HDLC_LAB_QUICK=1 TRITON_INTERPRET=1 "$venv/bin/python" ci_poison.py "$lab" 2>/dev/null | python3 -c '
import json, sys
lab, records = sys.argv[1], [json.loads(l) for l in sys.stdin if l.strip()]
bad = [r for r in records if r.get("stage") in ("verify", "launch")]
if not records or bad:
    sys.exit(f"{lab}: " + ("; ".join(r["variant"] + ": " + r["error"] for r in bad) or "no records"))
print(f"{lab}: {len(records)} record(s), every engine verified against snapshot 1")
' "$lab"
done
