//! lowp_gemm: 8-bit GEMMs on the tensor cores, as W8A8 inference runs them — FP8 E4M3 with one
//! scale per tensor or per token × per channel (BF16 out), and INT8 (INT32 out) — at Llama 3 8B's
//! prefill shapes (4096 tokens through the MLP's up and down projections) and at 8192³, against
//! cuBLASLt FP8 (fast and default accumulation), cuBLASLt INT8 and cuBLAS BF16 in the same run.
//!
//! Why a family: FP8 is Hopper's headline format, and the activation-quantization card's claim
//! ("8-bit doubles the tensor-core rate") is only worth what a measured kernel shows. The book's
//! kernels are the persistent BF16 rung with one-byte inputs (kernels/gemm/lowp_gemm.cu).
//!
//! Verification (before timing, on fresh random inputs quantized by `quant.rs`):
//! - every FP8 variant against an f64 reference on 16384 sampled entries, computed from the very
//!   codes and scales the GPU read (s_a · s_b · Σ q_a q_b); the book's FP8 kernels also over every
//!   entry against cuBLASLt (fast accumulation) on the same codes, as the worst 128 × 64 block.
//!   Tolerance 2e-2: the output is BF16 (each entry rounded by up to 2^-9 ≈ 2e-3 of itself), and
//!   Hopper's FP8 tensor-core accumulation keeps fewer bits than FP32 (DeepSeek-V3 report §3.3.2:
//!   about 14), which over K = 14336 adds errors of the order of 1e-3; a wrong fragment, tile or
//!   scale costs O(1). The measured error is in every record (`rel_error`).
//! - INT8 is exact: 16384 sampled entries equal the i64 sums, and the book's kernel equals
//!   cuBLASLt's INT32 output entry for entry. Tolerance 0.
//! - cuBLAS BF16 on 16384 sampled f64 entries of its BF16 inputs (BF16 output rounding), 1e-2.
//!
//! Files: `operands.rs` (the quantized inputs of each format and their references), `run.rs`
//! (each variant's launch or library call and its check).

use super::super::harness::{Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::{params, run_last, Item, V};
use super::super::results::{FailStage, Timing};
use super::Family;

mod operands;
mod run;

pub(crate) const FAMILY: Family = Family {
    name: "lowp_gemm",
    sources: SOURCES,
    items,
    work,
    cublas: LIBRARY,
    measure,
};
pub(crate) const SOURCES: &[KernelFile] = &[kernel_file!("gemm/lowp_gemm.cu", arch_specific)];
const FILE: &str = SOURCES[0].path;

/// (m, n, k): 4096 prefill tokens through Llama 3 8B's MLP up projection (n = 14336) and down
/// projection (k = 14336), and the square size of the BF16 ladder.
pub const LOWP_SHAPES: &[(u64, u64, u64)] = &[(4096, 14336, 4096), (4096, 4096, 14336), (8192, 8192, 8192)];

/// The book's kernels, in ladder order.
const KERNELS: &[V] = &[
    V("fp8_tensor", "FP8 E4M3 WGMMA, per-tensor scales"),
    V("fp8_rowwise", "FP8 E4M3 WGMMA, per-token × per-channel scales"),
    V("int8", "INT8 WGMMA, INT32 out"),
];
/// The library calls, the first being the reference of every "% of baseline".
const LIBRARY: &[&str] = &[
    "cublaslt_fp8_fast",
    "cublaslt_fp8",
    "cublaslt_int8",
    "cublas_bf16",
];
const LIBRARY_LABELS: &[&str] = &[
    "cuBLASLt FP8 (fast accumulation)",
    "cuBLASLt FP8 (default accumulation)",
    "cuBLASLt INT8 → INT32",
    "cuBLAS BF16 → BF16",
];

/// Every shape: the three kernels, then the four library calls (all baselines, so a re-measured
/// kernel always re-measures them in the same run). The kernels run last (see `run_last`).
pub fn items() -> Vec<Item> {
    let mut out = Vec::new();
    for &(m, n, k) in LOWP_SHAPES {
        let p = params(&[("m", m), ("n", n), ("k", k)]);
        for (i, V(variant, label)) in KERNELS.iter().enumerate() {
            out.push(Item {
                family: "lowp_gemm",
                variant,
                label,
                rung: i as u32 + 1,
                baseline: false,
                source_file: Some(FILE),
                params: p.clone(),
                skip: None,
            });
        }
        for (i, (variant, label)) in LIBRARY.iter().zip(LIBRARY_LABELS).enumerate() {
            out.push(Item {
                family: "lowp_gemm",
                variant,
                label,
                rung: (KERNELS.len() + i) as u32 + 1,
                baseline: true,
                source_file: None,
                params: p.clone(),
                skip: None,
            });
        }
    }
    let last: Vec<&str> = KERNELS.iter().map(|v| v.0).collect();
    run_last(out, &last)
}

/// 2·m·n·k operations (multiply-adds on 8-bit codes count as FLOPs, as the datasheets count
/// them); each input read once, C written once (BF16, or INT32 for the INT8 variants; cuBLAS
/// BF16 reads 2-byte inputs).
pub fn work(item: &Item) -> (f64, f64) {
    let (m, n, k) = (item.p("m") as f64, item.p("n") as f64, item.p("k") as f64);
    let (input, output) = match item.variant {
        "int8" | "cublaslt_int8" => (1.0, 4.0),
        "cublas_bf16" => (2.0, 2.0),
        _ => (1.0, 2.0),
    };
    (2.0 * m * n * k, input * (m * k + n * k) + output * m * n)
}

/// Refuse shapes the tiles do not divide, the book's kernels off Hopper, and FP8 before Ada.
fn supported(ctx: &Ctx, item: &Item, m: u64, n: u64, k: u64) -> Res<()> {
    if !m.is_multiple_of(128) || !n.is_multiple_of(256) || !k.is_multiple_of(128) {
        return Err(Fail::new(
            FailStage::Unsupported,
            "sizes must be multiples of 128 (m), 256 (n) and 128 (k)",
        ));
    }
    if !item.baseline && ctx.gpu.arch_specific() != "sm_90a" {
        return Err(Fail::new(
            FailStage::Unsupported,
            "8-bit WGMMA and TMA need a Hopper GPU (sm_90a)",
        ));
    }
    Ok(())
}

/// Set up (the format's operands, shared by the shape's variants), check and time one item.
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (m, n, k) = (item.p("m"), item.p("n"), item.p("k"));
    supported(ctx, item, m, n, k)?;
    let shape = run::Shape {
        m: m as usize,
        n: n as usize,
        k: k as usize,
        seed: ctx.seed(item),
    };
    run::measure(ctx, item, &shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_fit_the_tiles_and_every_shape_has_all_variants() {
        let all = items();
        assert_eq!(all.len(), LOWP_SHAPES.len() * (KERNELS.len() + LIBRARY.len()));
        for i in &all {
            assert!(i.p("m") % 128 == 0 && i.p("n") % 256 == 0 && i.p("k") % 128 == 0);
            assert_eq!(i.baseline, i.source_file.is_none(), "{}", i.describe());
        }
        // The kernels run after every library number is taken.
        let first_kernel = all.iter().position(|i| !i.baseline).unwrap();
        assert!(all[first_kernel..].iter().all(|i| !i.baseline));
    }

    #[test]
    fn work_counts_the_bytes_each_format_moves() {
        let at = |variant: &str| {
            let mut it = items().into_iter().find(|i| i.variant == variant).unwrap();
            it.params = params(&[("m", 256), ("n", 256), ("k", 128)]);
            work(&it)
        };
        assert_eq!(
            at("fp8_tensor"),
            (2.0 * 256.0 * 256.0 * 128.0, 2.0 * 256.0 * 128.0 + 2.0 * 65536.0)
        );
        assert_eq!(at("int8").1, 2.0 * 256.0 * 128.0 + 4.0 * 65536.0);
        assert_eq!(at("cublas_bf16").1, 4.0 * 256.0 * 128.0 + 2.0 * 65536.0);
    }
}
