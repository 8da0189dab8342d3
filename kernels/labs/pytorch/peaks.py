"""Datasheet peak throughput of the GPUs the labs may run on, for MFU (model FLOPs utilization).

Why a table: MFU = achieved FLOP/s ÷ the chip's peak, and the peak is a datasheet number, not
something a lab can measure. Dense (no 2:4 sparsity) tensor-core peaks, in FLOP/s, from
NVIDIA's datasheets: "NVIDIA H100 Tensor Core GPU" (SXM5: BF16 989.4 TF, TF32 494.7 TF, FP32
66.9 TF; PCIe: 756.5 / 378 / 51.2; NVL: 835.5 / 417.5 / 60), "NVIDIA H200 Tensor Core GPU"
(SXM: same tensor and FP32 peaks as H100 SXM5), "NVIDIA A100 Tensor Core GPU" (SXM 80GB:
312 / 156 / 19.5). The datasheets print the sparse figures (twice these) beside them.
A GPU not in the table gets no MFU: the lab reports none rather than a guess.
"""

# Matched in order against torch.cuda.get_device_name(); the first substring that occurs wins.
PEAKS = [
    ("H100 PCIe", {"bf16": 756.5e12, "tf32": 378e12, "fp32": 51.2e12}),
    ("H100 NVL", {"bf16": 835.5e12, "tf32": 417.5e12, "fp32": 60e12}),
    ("H100", {"bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12}),  # SXM5: "NVIDIA H100 80GB HBM3"
    ("H200", {"bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12}),
    ("A100", {"bf16": 312e12, "tf32": 156e12, "fp32": 19.5e12}),
]


def peak_flops(precision="bf16"):
    """Datasheet dense peak of this process's GPU for `precision`, or None when unknown."""
    import torch
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(0)
    for key, peaks in PEAKS:
        if key in name:
            return peaks[precision]
    return None


def mfu_metrics(flops, median_ms, precision="bf16"):
    """{"tflops": achieved, "mfu_pct": % of the BF16 dense peak} (mfu only for a known GPU)."""
    achieved = flops / (median_ms * 1e-3)
    out = {"achieved_tflops": achieved / 1e12}
    peak = peak_flops(precision)
    if peak:
        out["mfu_pct"] = 100.0 * achieved / peak
    return out
