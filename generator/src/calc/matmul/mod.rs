//! `calc: matmul` — FLOPs, fewest bytes, arithmetic intensity, and which roofline wall one
//! matrix product hits on the H100 (datasheet peaks) and, once measured, on the reader's CPU.
//!
//! Why the H100 column is the datasheet and not a measurement: this is a back-of-the-envelope
//! bound the reader can redo by hand from the printed peaks. The measured figures of the book
//! (`bench:` blocks) are where measured numbers live; the CPU column appears only when a CPU
//! roofline has actually been measured into a results file, and says so.

mod cpu;
mod render;

use super::kv::{Fields, KeyDoc, ParseError};

pub use cpu::{cpu_roof, CpuRoof};
pub(super) use render::render;

/// Element type of A, B and C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

pub const DTYPE_NAMES: &[&str] = &["fp32", "tf32", "bf16", "fp16", "fp8"];

impl Dtype {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fp32" => Some(Dtype::Fp32),
            "tf32" => Some(Dtype::Tf32),
            "bf16" => Some(Dtype::Bf16),
            "fp16" => Some(Dtype::Fp16),
            "fp8" => Some(Dtype::Fp8),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }

    /// Bytes per stored element (TF32 is stored in 32-bit words).
    pub fn bytes(self) -> u128 {
        match self {
            Dtype::Fp32 | Dtype::Tf32 => 4,
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp8 => 1,
        }
    }

    /// H100 SXM5 datasheet peak for this type, FLOP/s (dense, no sparsity).
    pub fn h100_peak(self) -> f64 {
        match self {
            Dtype::Fp32 => 67e12,
            Dtype::Tf32 => 494e12,
            Dtype::Bf16 | Dtype::Fp16 => 989e12,
            Dtype::Fp8 => 1979e12,
        }
    }

    /// Which unit of the H100 that peak belongs to.
    pub fn h100_peak_label(self) -> &'static str {
        match self {
            Dtype::Fp32 => "FP32 CUDA core, non-tensor",
            Dtype::Tf32 => "TF32 Tensor Core, dense",
            Dtype::Bf16 => "BF16 Tensor Core, dense",
            Dtype::Fp16 => "FP16 Tensor Core, dense",
            Dtype::Fp8 => "FP8 Tensor Core, dense",
        }
    }
}

/// H100 SXM5 HBM3 bandwidth, B/s (datasheet).
pub const H100_BANDWIDTH: f64 = 3.35e12;
/// Where the H100 numbers come from.
pub const H100_SOURCE: &str = "NVIDIA H100 Tensor Core GPU datasheet (SXM5)";

/// A parsed `calc: matmul` block.
#[derive(Debug, Clone, PartialEq)]
pub struct MatmulSpec {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub dtype: Dtype,
    pub caption: Option<String>,
}

/// Largest accepted dimension: keeps every product far inside u128 and f64's exact range.
pub const MAX_DIM: u64 = 1 << 40;

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "m",
        doc: "rows of A and C, positive integer",
    },
    KeyDoc {
        key: "n",
        doc: "columns of B and C, positive integer",
    },
    KeyDoc {
        key: "k",
        doc: "inner dimension, positive integer",
    },
    KeyDoc {
        key: "dtype",
        doc: "optional: fp32 (default), tf32, bf16, fp16, fp8",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

pub(super) fn parse(f: &Fields) -> Result<MatmulSpec, ParseError> {
    const KIND: &str = "matmul";
    f.only(KIND, KEYS)?;
    let m = f.positive(KIND, "m", MAX_DIM, KEYS)?;
    let n = f.positive(KIND, "n", MAX_DIM, KEYS)?;
    let k = f.positive(KIND, "k", MAX_DIM, KEYS)?;
    let dtype = match f.scalar(KIND, "dtype", KEYS)? {
        None => Dtype::Fp32,
        Some((s, line)) => Dtype::parse(&s).ok_or_else(|| {
            (
                line,
                format!("`calc: matmul`: unknown dtype `{s}`"),
                format!("dtype is one of: {}", DTYPE_NAMES.join(", ")),
            )
        })?,
    };
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(MatmulSpec {
        m,
        n,
        k,
        dtype,
        caption,
    })
}

/// The counts that do not depend on the machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulCounts {
    /// 2·m·n·k.
    pub flops: u128,
    /// (m·k + k·n + m·n)·bytes(dtype): read A and B once, write C once.
    pub bytes: u128,
    /// FLOP per byte.
    pub intensity: f64,
}

pub fn counts(m: u64, n: u64, k: u64, dtype: Dtype) -> MatmulCounts {
    let (m, n, k) = (u128::from(m), u128::from(n), u128::from(k));
    let flops = 2 * m * n * k;
    let bytes = (m * k + k * n + m * n) * dtype.bytes();
    MatmulCounts {
        flops,
        bytes,
        intensity: flops as f64 / bytes as f64,
    }
}

/// Which wall bounds the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wall {
    Memory,
    Compute,
}

/// One machine's roofline applied to the counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// FLOP/B at which the two roofs meet.
    pub ridge: f64,
    pub wall: Wall,
    /// FLOPs / peak, seconds.
    pub compute_floor: f64,
    /// bytes / bandwidth, seconds.
    pub memory_floor: f64,
    /// The larger of the two: no run can be faster.
    pub lower_bound: f64,
    /// min(peak, intensity·bandwidth), FLOP/s.
    pub attainable: f64,
}

pub fn bound(c: &MatmulCounts, peak_flops: f64, bandwidth: f64) -> Bound {
    let ridge = peak_flops / bandwidth;
    let compute_floor = c.flops as f64 / peak_flops;
    let memory_floor = c.bytes as f64 / bandwidth;
    Bound {
        ridge,
        wall: if c.intensity < ridge {
            Wall::Memory
        } else {
            Wall::Compute
        },
        compute_floor,
        memory_floor,
        lower_bound: compute_floor.max(memory_floor),
        attainable: peak_flops.min(c.intensity * bandwidth),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp32_4096_cubed() {
        let c = counts(4096, 4096, 4096, Dtype::Fp32);
        assert_eq!(c.flops, 137_438_953_472);
        assert_eq!(c.bytes, 201_326_592);
        assert!((c.intensity - 682.666_666).abs() < 1e-3);
        let b = bound(&c, Dtype::Fp32.h100_peak(), H100_BANDWIDTH);
        assert_eq!(b.wall, Wall::Compute);
        assert!((b.ridge - 67.0 / 3.35).abs() < 1e-9);
        assert!((b.compute_floor - 137_438_953_472.0 / 67e12).abs() < 1e-15);
    }

    #[test]
    fn skinny_product_is_memory_bound() {
        // A matrix-vector product: intensity about 2 FLOP per 2-byte weight = ~1 FLOP/B.
        let c = counts(4096, 1, 4096, Dtype::Bf16);
        let b = bound(&c, Dtype::Bf16.h100_peak(), H100_BANDWIDTH);
        assert_eq!(b.wall, Wall::Memory);
        assert_eq!(b.lower_bound, b.memory_floor);
    }
}
