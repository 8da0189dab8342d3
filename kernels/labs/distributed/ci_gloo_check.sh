#!/usr/bin/env bash
# CI step: the distributed labs' correctness on CPU processes with the gloo backend — DDP's
# averaged gradients equal one process's gradients, FSDP2's shards reassemble to the full
# parameters. CI has no GPU; CPU PyTorch in a throwaway virtualenv is enough for these checks.
# Exits non-zero unless every gloo record is `ok` and within its stated tolerance.
set -euo pipefail
cd "$(dirname "$0")"
# HDLC_CI_VENV reuses a virtualenv that already has torch (a developer's, say).
venv="${HDLC_CI_VENV:-}"
if [ -z "$venv" ]; then
  venv="${TMPDIR:-/tmp}/hdlc-torch-ci"
  if ! python3 -m venv --clear "$venv" >/dev/null 2>&1; then
    # Debian's python3 ships venv separately.
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv --clear "$venv"
  fi
  "$venv/bin/pip" install -q torch numpy
fi
for lab in ddp.py fsdp2.py; do
  HDLC_LAB_QUICK=1 "$venv/bin/python" "$lab" 2>/dev/null | python3 ci_check_records.py "$lab"
done
