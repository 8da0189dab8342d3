"""Which frameworks this Python has, and whether they see a GPU: one JSON line for `hdlc bench`.

Versions come from package metadata (no heavy imports) except the GPU check, which asks PyTorch
and JAX themselves (PyTorch also says how many GPUs it sees and which NCCL it carries). The runner puts these versions into every lab's cache key and provenance.
"""

import json
import os
import platform
import sys
from importlib import metadata

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
out = {"python": platform.python_version()}
for dist in ["torch", "triton", "jax", "jaxlib", "flax", "optax", "numpy"]:
    try:
        out[dist] = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pass
gpu = None
if "torch" in out:
    try:
        import torch
        if torch.version.cuda:
            out["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
            out["gpu_count"] = torch.cuda.device_count()
            try:  # the NCCL PyTorch was built with: part of a multi-GPU lab's key and provenance
                v = torch.cuda.nccl.version()
                out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
            except Exception:
                pass
    except Exception as e:  # a broken install is reported, not fatal
        out["torch_error"] = str(e)[:200]
if gpu is None and "jax" in out and os.environ.get("HDLC_PROBE_JAX_GPU", "1") == "1":
    try:
        import jax
        devs = [d for d in jax.devices() if d.platform == "gpu"]
        if devs:
            gpu = devs[0].device_kind
            out["gpu_count"] = len(devs)
    except Exception:
        pass
if gpu:
    out["gpu"] = gpu
sys.stdout.write(json.dumps(out) + "\n")
