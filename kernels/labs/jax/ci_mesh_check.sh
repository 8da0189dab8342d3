#!/usr/bin/env bash
# CI step: the simulated-mesh labs' correctness checks with CPU-only JAX in a throwaway
# virtualenv. CI has no GPU and no frameworks; CPU jax installs in about a minute, and these two
# labs need nothing else: mesh.py (every sharded MLP equals the unsharded one) and mesh_gpu.py
# at 2 CPU devices, as `hdlc bench` starts it for `cpu_world: [2]` (every sharded training step
# equals the one-device step, every shard_map collective is exact).
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
# Fails unless every record is `ok`, within its tolerance, and names world 2.
HDLC_LAB_QUICK=1 HDLC_LAB_WORLD=2 HDLC_LAB_BACKEND=gloo JAX_PLATFORMS=cpu \
  XLA_FLAGS=--xla_force_host_platform_device_count=2 "$venv/bin/python" mesh_gpu.py 2>/dev/null \
  | python3 ../distributed/ci_check_records.py mesh_gpu.py --all 2
