"""Load the PyTorch lab model (kernels/labs/pytorch/model.py) next to the JAX one.

Why a helper: both files are called model.py, so `import model` inside kernels/labs/jax finds
the JAX twin. The PyTorch module is loaded here from its path under another name, and its
weights are what the JAX labs check themselves against: the same seed gives the same numbers
in both frameworks, and a difference in the outputs is a difference in the code.
"""

import dataclasses
import importlib.util
import pathlib

PT_MODEL = pathlib.Path(__file__).resolve().parents[1] / "pytorch" / "model.py"


def torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return PT_MODEL.is_file()


def pt_model_module():
    return _load("pt_model", PT_MODEL)


def pt_config(cfg):
    """The PyTorch Config with the same numbers as the JAX Config `cfg` (same field names)."""
    return pt_model_module().Config(**dataclasses.asdict(cfg))


def build_pt(cfg, seed=0):
    """The PyTorch model with seeded weights (float32, CPU) for config `cfg`."""
    pm = pt_model_module()
    return pm.build(pm.Config(**dataclasses.asdict(cfg)), seed=seed)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def peak_flops(device_kind, precision="bf16"):
    """Datasheet dense peak (FLOP/s) for a JAX device_kind such as "NVIDIA H100 80GB HBM3",
    from the same table the PyTorch labs use (kernels/labs/pytorch/peaks.py); None if unknown."""
    path = PT_MODEL.parent / "peaks.py"
    if not path.is_file():
        return None
    for key, peaks in _load("pt_peaks", path).PEAKS:
        if key in device_kind:
            return peaks[precision]
    return None


def mfu_metrics(flops, median_ms, device_kind, precision="bf16"):
    """{"achieved_tflops", "mfu_pct"} as the PyTorch labs report them (mfu only for a known GPU)."""
    achieved = flops / (median_ms * 1e-3)
    out = {"achieved_tflops": achieved / 1e12}
    peak = peak_flops(device_kind, precision)
    if peak:
        out["mfu_pct"] = 100.0 * achieved / peak
    return out
