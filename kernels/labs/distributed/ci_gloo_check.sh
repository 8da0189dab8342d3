#!/usr/bin/env bash
# CI step: the distributed labs' correctness on CPU processes with the gloo backend — DDP's
# averaged gradients equal one process's gradients, FSDP2's shards reassemble to the full
# parameters, every collective of collectives.py gives exactly the expected result at every
# size, and the multi-GPU labs (DDP/FSDP2 scaling, tensor, pipeline, expert and context
# parallelism, sharded matmul) equal their unsharded reference — all at world 2, started by
# torchrun as `hdlc bench` starts them. CI has no GPU; CPU PyTorch in a throwaway virtualenv is enough for these checks.
# Exits non-zero unless every checked record is `ok` and within its stated tolerance.
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
# The runner's convention for labs with `world:` in their manifest entry: torchrun, one process
# per rank; HDLC_LAB_BACKEND=gloo is what the runner sets for a `cpu_world` run.
# Every torchrun lab at world 2: the same code that runs one process per GPU, checked against
# a single-process reference before anything is timed.
export HDLC_LAB_QUICK=1 HDLC_LAB_BACKEND=gloo NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
torchrun_check() {  # LAB WORLD
  "$venv/bin/python" -m torch.distributed.run --standalone --nproc-per-node="$2" "$1" 2>/dev/null \
    | python3 ci_check_records.py "$1" --all "$2"
}
for lab in collectives.py scaling.py tensor_parallel.py pipeline.py expert_parallel.py \
    ring_attention.py sharded_matmul.py; do
  torchrun_check "$lab" 2
done
"$venv/bin/python" trace_overlap.py  # the profiler-overlap arithmetic on made-up intervals
