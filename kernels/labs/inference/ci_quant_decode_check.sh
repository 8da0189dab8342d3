#!/usr/bin/env bash
# CI step: quant_decode's structure on a machine without a GPU. In quick mode the lab runs a
# two-layer model of the same shape family with torch stand-ins for the book's kernels (its
# records say so), so this checks what can be checked without CUDA: the INT8/INT4 layout
# permutations entry by entry, the codes' round trip, every (weight, KV) step against the
# independent FP32 reference, the W8A8 GEMMs, and that every record is well formed. A lab that
# fails a check prints a `verify` or `launch` record (or exits non-zero), and this script fails.
set -euo pipefail
cd "$(dirname "$0")"
venv="${HDLC_CI_VENV:-${TMPDIR:-/tmp}/hdlc-torch-ci}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install -q torch
fi
# A 64-bit seed, as the runner passes (a torch generator takes only a signed 64-bit one).
HDLC_LAB_SEED=18446744073709551000 HDLC_LAB_QUICK=1 "$venv/bin/python" quant_decode.py 2>/dev/null | python3 -c '
import json, math, sys
records = [json.loads(l) for l in sys.stdin if l.strip()]
bad = [r for r in records if r.get("stage") in ("verify", "launch")]
if not records or bad:
    sys.exit("quant_decode: " + ("; ".join(r["variant"] + ": " + r["error"] for r in bad) or "no records"))
for r in records:
    assert all(isinstance(v, int) and v >= 0 for v in r["params"].values()), r
    if r["status"] == "ok":
        assert r["rel_error"] <= r["tolerance"] and r["reps"] > 0, r
        assert all(math.isfinite(v) for v in r.get("metrics", {}).values()), r
ok = sum(r["status"] == "ok" for r in records)
print(f"quant_decode: {len(records)} record(s), {ok} verified against the FP32 reference")
'
