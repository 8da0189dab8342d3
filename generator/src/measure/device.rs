//! Facts about devices that need no GPU: file names, datasheet peaks, version strings.
//!
//! Why apart from `gpu`: these are pure functions, tested on machines without a GPU.

use super::results::Datasheet;

/// File-name slug of a device name: "NVIDIA H100 80GB HBM3" → "nvidia-h100-80gb-hbm3".
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "unknown-device".to_string()
    } else {
        out
    }
}

/// Vendor datasheet peaks where the device is known, printed beside measured baselines and never
/// drawn as measurements. Only the SXM boards are filled in: the PCIe and NVL cards of the same
/// chip have other clocks and power limits, so other peaks, and a wrong ceiling is worse than none.
/// The H200 is the H100's chip (same SMs, clocks, FP32 and tensor peaks) with more and faster HBM,
/// which is what makes the pair useful for telling bandwidth-bound kernels from compute-bound ones.
pub fn datasheet_for(name: &str) -> Option<Datasheet> {
    let other_board = name.contains("PCIe") || name.contains("NVL");
    if name.contains("H100") && !other_board {
        Some(Datasheet {
            source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5)".into(),
            memory_bandwidth_gbs: 3350.0,
            fp32_tflops: 67.0,
            bf16_tensor_tflops: Some(989.0),
            // 3,958 with 2:4 sparsity, as the datasheet prints it; INT8 TOPS the same.
            fp8_tensor_tflops: Some(1979.0),
        })
    } else if name.contains("H200") && !other_board {
        Some(Datasheet {
            source: "NVIDIA H200 Tensor Core GPU datasheet (SXM, 141 GB HBM3e)".into(),
            memory_bandwidth_gbs: 4800.0,
            fp32_tflops: 67.0,
            bf16_tensor_tflops: Some(989.0),
            // 3,958 with 2:4 sparsity, as the datasheet prints it; INT8 TOPS the same.
            fp8_tensor_tflops: Some(1979.0),
        })
    } else {
        None
    }
}

/// The kernel-module version ("580.159.04") from the text of /proc/driver/nvidia/version.
pub fn parse_driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("Kernel Module"))?;
    line.split_whitespace()
        .find(|w| {
            w.contains('.')
                && w.split('.').count() >= 2
                && w.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h200_has_h100_peaks_with_faster_memory() {
        let h100 = datasheet_for("NVIDIA H100 80GB HBM3").expect("H100 SXM");
        let h200 = datasheet_for("NVIDIA H200").expect("H200 SXM");
        assert_eq!(h200.memory_bandwidth_gbs, 4800.0);
        assert_eq!(h200.fp32_tflops, h100.fp32_tflops);
        assert_eq!(h200.bf16_tensor_tflops, h100.bf16_tensor_tflops);
        assert!(h200.source.contains("H200"));
        // Other boards of the same chips have other peaks: no datasheet rather than a wrong one.
        assert!(datasheet_for("NVIDIA H200 NVL").is_none());
        assert!(datasheet_for("NVIDIA H100 NVL").is_none());
        assert!(datasheet_for("NVIDIA H100 PCIe").is_none());
    }
}
