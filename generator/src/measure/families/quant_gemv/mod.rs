//! quant_gemv: Y = X·Wᵀ for a batch of M tokens against an N × K Linear weight stored as BF16,
//! int8 (per channel), int4 (groups of 128) or FP8 E4M3 (per channel), against cuBLAS BF16
//! (the per-batch baseline) and a device memcpy of the BF16 weight (params `batch = 0`).
//!
//! Verification, for every variant: 256 output rows (the first and the last among them) for
//! every token against f64 on the exact values the kernel multiplies — the BF16 weights, or the
//! dequantized codes — and every output element must be finite. FP32 accumulation over K = 8192
//! keeps the honest error near 1e-6; 1e-3 still catches any layout mistake. The quantized rungs
//! record `metrics.err_vs_bf16`: their error against f64 on the unquantized BF16 weights.
//!
//! Files: `check.rs` (the sampled rows and their f64 reference), `weight.rs` (the weight on the
//! host, quantized, and in each variant's device layout), `launch.rs` (cuBLAS and the kernels).

use super::super::harness::{Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::Item;
use super::super::plan::{ladder, params, V};
use super::super::reference::random_bf16;
use super::super::results::{FailStage, Timing};
use super::memcpy_baseline_bytes;
use super::Family;
use crate::measure::gpu::{DevBuf, Gpu};

mod check;
mod launch;
mod weight;

pub use check::{sample_rows, sampled_rel};

pub(crate) const FAMILY: Family = Family {
    name: "quant_gemv",
    sources: SOURCES,
    items,
    work,
    cublas: &["cublas"],
    measure,
};
const SOURCES: &[KernelFile] = &[
    kernel_file!("inference/quant_gemv.cu"),
    kernel_file!("inference/quant_gemv_mma.cu"),
];
const FILE: &str = SOURCES[0].path;

/// The 28672 × 8192 weight (Llama 3 70B's fused gate/up projection shape, N × K).
pub const QGEMV_N: u64 = 28672;
pub const QGEMV_K: u64 = 8192;
pub const QGEMV_BATCH: &[u64] = &[1, 4, 16, 64];

/// The memcpy of the BF16 weight once, then the weight formats against cuBLAS at each batch.
pub fn items() -> Vec<Item> {
    let memcpy_label = "device memcpy of the BF16 weight (cuMemcpyDtoD)";
    let mut out = ladder(
        "quant_gemv",
        FILE,
        &[],
        &params(&[("batch", 0), ("n", QGEMV_N), ("k", QGEMV_K)]),
        ("memcpy", memcpy_label),
    );
    for &batch in QGEMV_BATCH {
        out.extend(ladder(
            "quant_gemv",
            FILE,
            &[
                V("bf16", "BF16 weight (the book's GEMV)"),
                V("int8", "int8 weight, per-channel scale"),
                V(
                    "int8_fast",
                    "int8 (per channel), reordered codes, coalesced X, 4 rows per warp",
                ),
                V("int4", "int4 weight, group-wise scale (g = 128)"),
                V(
                    "int4_fast",
                    "int4 (g = 128), reordered codes, coalesced X, 4 rows per warp",
                ),
                V("fp8", "FP8 E4M3 weight, per-channel scale"),
                V(
                    "int4_mma",
                    "int4 (g = 128) on tensor cores: LOP3 dequant into mma.sync fragments",
                ),
                V(
                    "int8_mma",
                    "int8 (per channel) on tensor cores: PRMT into FP16 mma.sync fragments",
                ),
                V(
                    "fp8_mma",
                    "FP8 E4M3 (per channel) on tensor cores: CVT e4m3x2 into mma.sync fragments",
                ),
            ],
            &params(&[("batch", batch), ("n", QGEMV_N), ("k", QGEMV_K)]),
            ("cublas", "cuBLAS gemm_ex (BF16, FP32 accumulate)"),
        ));
    }
    for i in out.iter_mut().filter(|i| i.variant.ends_with("_mma")) {
        i.source_file = Some(FILE_MMA);
    }
    out
}

/// 2·M·N·K FLOPs; X (BF16), Y (FP32) and the weight in its stored format (codes and scales).
/// The memcpy baseline copies the BF16 weight.
pub fn work(item: &Item) -> (f64, f64) {
    let f = |k: &str| item.p(k) as f64;
    let (m, n, k) = (f("batch"), f("n"), f("k"));
    if item.variant == "memcpy" {
        return (0.0, 2.0 * n * k * 2.0);
    }
    let w = match item.variant {
        "int8" | "int8_fast" | "fp8" | "int8_mma" | "fp8_mma" => n * k + 4.0 * n,
        "int4" | "int4_fast" | "int4_mma" => n * k / 2.0 + 4.0 * n * k / 128.0,
        _ => 2.0 * n * k,
    };
    (2.0 * m * n * k, w + 2.0 * m * k + 4.0 * m * n)
}
/// The tensor-core rungs (`int4_mma`, `int8_mma`, `fp8_mma`).
const FILE_MMA: &str = SOURCES[1].path;
const TOL: f64 = 1e-3;
/// Output rows per warp in quant_gemv.cu (`R`).
const ROWS_PER_WARP: usize = 2;
/// Output rows per warp of `int4_fast` (`RF`).
const ROWS_PER_WARP_FAST: usize = 4;
/// The `_mma` rungs: rows per block (one 16-row MMA tile, `MMA_TW = 1`) and warps per block
/// (`MMA_S`, splitting K, so k must be a multiple of 128 · 8).
const MMA_ROWS_PER_BLOCK: usize = 16;
const MMA_WARPS: usize = 8;

/// Rows of X handled per kernel pass (the kernel's register tile of tokens).
pub fn token_tile(batch: usize) -> usize {
    match batch {
        b if b % 16 == 0 => 16,
        b if b % 4 == 0 => 4,
        _ => 1,
    }
}

/// One item's shape, its host X and weight values, its output and the rows checked: what the
/// cuBLAS baseline and every kernel rung read.
struct Io<'a> {
    gpu: &'a Gpu,
    m: usize,
    n: usize,
    k: usize,
    xh: &'a [f32],
    wh: &'a [f32],
    y: &'a DevBuf,
    rows: &'a [usize],
}

impl Io<'_> {
    /// The sampled error of `out` against f64 on the weight values `w` (see [`sampled_rel`]).
    fn rel(&self, out: &[f32], w: &[f32]) -> f64 {
        sampled_rel(out, self.xh, w, self.m, self.n, self.k, self.rows)
    }
}

/// Refuse shapes the kernels' row and K tiling does not divide.
fn supported(variant: &str, n: usize, k: usize) -> Res<()> {
    if !k.is_multiple_of(128) || !n.is_multiple_of(ROWS_PER_WARP) {
        return Err(Fail::new(
            FailStage::Unsupported,
            "k must be a multiple of 128 and n of 2",
        ));
    }
    let fast = variant.ends_with("_fast");
    let mma = variant.ends_with("_mma");
    if (fast || mma) && (!k.is_multiple_of(1024) || !n.is_multiple_of(MMA_ROWS_PER_BLOCK)) {
        return Err(Fail::new(
            FailStage::Unsupported,
            "the _fast and _mma variants need k a multiple of 1024 and n of 16",
        ));
    }
    Ok(())
}

/// Set up (the weight shared by every batch and variant reading its layout), check and time one
/// item.
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (m, n, k) = (
        item.p("batch") as usize,
        item.p("n") as usize,
        item.p("k") as usize,
    );
    supported(item.variant, n, k)?;
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    if item.variant == "memcpy" {
        return memcpy_baseline_bytes(gpu, n * k * 2, seed); // the BF16 weight
    }
    let key = format!("n{n} k{k}");
    let host = weight::host(ctx, &key, n, k)?;
    let wh = &host.values;
    let (xb, xh) = random_bf16(m * k, seed ^ 0x78, -1.0, 1.0);
    let y = gpu.alloc_f32(m * n)?;
    let rows = sample_rows(n, seed);
    let fmt = weight::format(item.variant);
    let quantized = weight::quantized(ctx, fmt, &key, wh, n, k)?;
    let dev = weight::device(ctx, item.variant, &key, quantized.as_deref(), &host.bits, (n, k))?;
    let dequant = quantized.as_ref().map(|q| &q.dequant);
    let io = Io {
        gpu,
        m,
        n,
        k,
        xh: &xh,
        wh,
        y: &y,
        rows: &rows,
    };
    if item.variant == "cublas" {
        return launch::time_cublas(&io, &xb, &dev.w);
    }
    launch::time_kernel(ctx, item.variant, &io, &dev, fmt.is_some(), dequant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_weights_count_fewer_bytes() {
        let items = items();
        let at = |v: &str| {
            work(
                items
                    .iter()
                    .find(|i| i.variant == v && i.p("batch") == 1)
                    .unwrap(),
            )
        };
        let (bf, i8, i4, f8) = (at("bf16").1, at("int8").1, at("int4").1, at("fp8").1);
        assert!(i4 < i8 && i8 == f8 && i8 < bf);
        // int4 + group scales: a little over a quarter of BF16's weight bytes.
        let ratio = i4 / bf;
        assert!(ratio > 0.25 && ratio < 0.28, "{ratio}");
        assert_eq!(items.iter().filter(|i| i.variant == "memcpy").count(), 1);
    }

    #[test]
    fn rows_per_warp_matches_the_kernel() {
        let src = crate::measure::families::source(FILE).unwrap().text;
        assert!(src.contains(&format!("#define R {ROWS_PER_WARP}\n")));
        assert!(src.contains(&format!("#define RF {ROWS_PER_WARP_FAST}\n")));
        let mma = crate::measure::families::source(FILE_MMA).unwrap().text;
        assert!(mma.contains(&format!("#define MMA_ROWS {MMA_ROWS_PER_BLOCK}\n")));
        assert!(mma.contains(&format!("#define MMA_S {MMA_WARPS}\n")));
        assert!(mma.contains("#define MMA_TW 1\n") && mma.contains("#define MMA_U 1\n"));
    }

    #[test]
    fn tiles_divide_the_batch() {
        for b in [1, 4, 16, 64] {
            assert_eq!(b % token_tile(b), 0);
        }
        assert_eq!(token_tile(64), 16);
        assert_eq!(token_tile(1), 1);
    }
}
