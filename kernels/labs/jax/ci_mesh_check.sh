#!/usr/bin/env bash
# CI step: the simulated-mesh lab's correctness check (every sharded MLP equals the unsharded
# one) with CPU-only JAX in a throwaway virtualenv. CI has no GPU and no frameworks; CPU jax
# installs in about a minute, and mesh.py needs nothing else, so this one lab can run there.
set -euo pipefail
cd "$(dirname "$0")"
venv="${TMPDIR:-/tmp}/hdlc-jax-ci"
if ! python3 -m venv --clear "$venv" >/dev/null 2>&1; then
  # Debian's python3 ships venv separately.
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3-venv >/dev/null
  python3 -m venv --clear "$venv"
fi
"$venv/bin/pip" install -q "jax[cpu]"
"$venv/bin/python" mesh.py --check
