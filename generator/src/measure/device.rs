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
/// drawn as measurements. Only the H100 SXM is filled in (the PCIe card has other peaks).
pub fn datasheet_for(name: &str) -> Option<Datasheet> {
    if name.contains("H100") && !name.contains("PCIe") {
        Some(Datasheet {
            source: "NVIDIA H100 Tensor Core GPU datasheet (SXM5)".into(),
            memory_bandwidth_gbs: 3350.0,
            fp32_tflops: 67.0,
            bf16_tensor_tflops: Some(989.0),
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
