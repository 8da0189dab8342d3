//! quant_gemv: Y = X·Wᵀ for a batch of M tokens against an N × K Linear weight stored as BF16,
//! int8 (per channel), int4 (groups of 128) or FP8 E4M3 (per channel), against cuBLAS BF16
//! (the per-batch baseline) and a device memcpy of the BF16 weight (params `batch = 0`).
//!
//! Verification, for every variant: 256 output rows (the first and the last among them) for
//! every token against f64 on the exact values the kernel multiplies — the BF16 weights, or the
//! dequantized codes — and every output element must be finite. FP32 accumulation over K = 8192
//! keeps the honest error near 1e-6; 1e-3 still catches any layout mistake. The quantized rungs
//! record `metrics.err_vs_bf16`: their error against f64 on the unquantized BF16 weights.

use super::super::gpu::{Arg, DevBuf, Dtype, RowMajorGemm};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::Item;
use super::super::plan::{ladder, params, V};
use super::super::quant::{quantize_rows_par, Format, Quantized};
use super::super::reference::{mix, par_chunks_mut, random_bf16, rel_error};
use super::super::results::{FailStage, Timing};
use super::qgemv_layout::{repack_int4_fast, repack_int4_mma, repack_int8_fast};
use super::Family;
use super::{blocks, memcpy_baseline_bytes};
use std::rc::Rc;

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
            ],
            &params(&[("batch", batch), ("n", QGEMV_N), ("k", QGEMV_K)]),
            ("cublas", "cuBLAS gemm_ex (BF16, FP32 accumulate)"),
        ));
    }
    for i in out.iter_mut().filter(|i| i.variant == "int4_mma") {
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
        "int8" | "int8_fast" | "fp8" => n * k + 4.0 * n,
        "int4" | "int4_fast" | "int4_mma" => n * k / 2.0 + 4.0 * n * k / 128.0,
        _ => 2.0 * n * k,
    };
    (2.0 * m * n * k, w + 2.0 * m * k + 4.0 * m * n)
}
/// The tensor-core rung (`int4_mma`).
const FILE_MMA: &str = SOURCES[1].path;
const TOL: f64 = 1e-3;
const SAMPLE_ROWS: usize = 256;
/// Output rows per warp in quant_gemv.cu (`R`).
const ROWS_PER_WARP: usize = 2;
/// Output rows per warp of `int4_fast` (`RF`).
const ROWS_PER_WARP_FAST: usize = 4;
/// `int4_mma`: rows per block (one 16-row MMA tile, `MMA_TW = 1`) and warps per block
/// (`MMA_S`, splitting K, so k must be a multiple of 128 · 8).
const MMA_ROWS_PER_BLOCK: usize = 16;
const MMA_WARPS: usize = 8;

/// The output rows checked against f64: the first, the last and the rest spread by `seed`.
pub fn sample_rows(n: usize, seed: u64) -> Vec<usize> {
    let mut rows = vec![0, n - 1];
    rows.extend((0..SAMPLE_ROWS as u64 - 2).map(|s| (mix(seed ^ mix(s)) % n as u64) as usize));
    rows
}

/// ‖Y − ref‖ / ‖ref‖ over the sampled rows of every token, with ref in f64 from `w` (N × K);
/// +∞ if any element of `y` is not finite.
pub fn sampled_rel(y: &[f32], x: &[f32], w: &[f32], m: usize, n: usize, k: usize, rows: &[usize]) -> f64 {
    crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
        if y.iter().any(|v| !v.is_finite()) {
            return f64::INFINITY;
        }
        let got: Vec<f32> = (0..m)
            .flat_map(|t| rows.iter().map(move |&r| y[t * n + r]))
            .collect();
        // Tokens × sampled rows dot products of length K, on all cores (at batch 64 they are a
        // hundred million multiply-adds per check).
        let mut want = vec![0f64; m * rows.len()];
        par_chunks_mut(&mut want, |start, part| {
            for (j, out) in part.iter_mut().enumerate() {
                let (t, r) = ((start + j) / rows.len(), rows[(start + j) % rows.len()]);
                let (xr, wr) = (&x[t * k..][..k], &w[r * k..][..k]);
                *out = xr.iter().zip(wr).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>();
            }
        });
        rel_error(&got, &want)
    })
}

/// Rows of X handled per kernel pass (the kernel's register tile of tokens).
pub fn token_tile(batch: usize) -> usize {
    match batch {
        b if b % 16 == 0 => 16,
        b if b % 4 == 0 => 4,
        _ => 1,
    }
}

/// The N × K weight on the host (BF16 bits and values), shared by every batch and variant.
struct HostWeight {
    bits: Vec<u16>,
    values: Vec<f32>,
}

/// A variant's weight on the device: codes (or BF16 bits) in its layout, and scales.
struct DevWeight {
    w: DevBuf,
    scales: Option<DevBuf>,
}

/// The `Ctx::shared` slot of a variant's device weight: variants reading the same layout share it.
fn layout_slot(variant: &str) -> &'static str {
    match variant {
        "int8" => "qgemv_int8",
        "int8_fast" => "qgemv_int8_fast",
        "int4" => "qgemv_int4",
        "int4_fast" => "qgemv_int4_fast",
        "int4_mma" => "qgemv_int4_mma",
        "fp8" => "qgemv_fp8",
        _ => "qgemv_bf16",
    }
}

/// The slot of a format's quantization (codes, scales, dequantized values) on the host.
fn quant_slot(fmt: Format) -> &'static str {
    match fmt {
        Format::Int8 => "qgemv_q_int8",
        Format::Int4 => "qgemv_q_int4",
        Format::Fp8 => "qgemv_q_fp8",
    }
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (m, n, k) = (
        item.p("batch") as usize,
        item.p("n") as usize,
        item.p("k") as usize,
    );
    if k % 128 != 0 || n % ROWS_PER_WARP != 0 {
        return Err(Fail::new(
            FailStage::Unsupported,
            "k must be a multiple of 128 and n of 2",
        ));
    }
    let fast = item.variant.ends_with("_fast");
    let mma = item.variant == "int4_mma";
    if (fast || mma) && (k % 1024 != 0 || n % MMA_ROWS_PER_BLOCK != 0) {
        return Err(Fail::new(
            FailStage::Unsupported,
            "the _fast and _mma variants need k a multiple of 1024 and n of 16",
        ));
    }
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    if item.variant == "memcpy" {
        return memcpy_baseline_bytes(gpu, n * k * 2, seed); // the BF16 weight
    }
    let key = format!("n{n} k{k}");
    let host = ctx.shared("qgemv_w_host", &key, |_, seed| {
        let (bits, values) = random_bf16(n * k, seed ^ 0x77, -1.0, 1.0);
        Ok(HostWeight { bits, values })
    })?;
    let wh = &host.values;
    let (xb, xh) = random_bf16(m * k, seed ^ 0x78, -1.0, 1.0);
    let y = gpu.alloc_f32(m * n)?;
    let rows = sample_rows(n, seed);
    let fmt = match item.variant {
        "int8" | "int8_fast" => Some(Format::Int8),
        "int4" | "int4_fast" | "int4_mma" => Some(Format::Int4),
        "fp8" => Some(Format::Fp8),
        _ => None,
    };
    let quantized: Option<Rc<Quantized>> = match fmt {
        None => None,
        Some(f) => Some(ctx.shared(quant_slot(f), &key, |_, _| Ok(quantize_rows_par(wh, n, k, f)))?),
    };
    // The kernel's weight: codes (or BF16 bits) in the variant's layout, and scales.
    let variant = item.variant;
    let dev = ctx.shared(layout_slot(variant), &key, |gpu, _| {
        let Some(q) = quantized.as_deref() else {
            let w = gpu.alloc(n * k * 2)?;
            gpu.upload_u16(&w, &host.bits)?;
            return Ok(DevWeight { w, scales: None });
        };
        let (w, s) = (gpu.alloc(q.codes.len())?, gpu.alloc_f32(q.scales.len())?);
        match variant {
            "int4_fast" => gpu.upload_bytes(&w, &repack_int4_fast(&q.codes, n, k))?,
            "int4_mma" => gpu.upload_bytes(&w, &repack_int4_mma(&q.codes, n, k))?,
            "int8_fast" => gpu.upload_bytes(&w, &repack_int8_fast(&q.codes, n, k))?,
            _ => gpu.upload_bytes(&w, &q.codes)?,
        }
        gpu.upload_f32(&s, &q.scales)?;
        Ok(DevWeight { w, scales: Some(s) })
    })?;
    let dequant = quantized.as_ref().map(|q| &q.dequant);
    if item.variant == "cublas" {
        if !gpu.has_cublas() {
            return Err(Fail::new(FailStage::Unsupported, "cuBLAS library not found"));
        }
        let x = gpu.alloc(m * k * 2)?;
        gpu.upload_u16(&x, &xb)?;
        return check_and_time(
            gpu,
            TOL,
            &[&y],
            &mut || {
                gpu.gemm_bf16(&RowMajorGemm {
                    m,
                    n,
                    k,
                    batch: 1,
                    alpha: 1.0,
                    a: &x,
                    stride_a: 0,
                    b: &dev.w,
                    stride_b: 0,
                    b_is_nk: true,
                    c: &y,
                    stride_c: 0,
                    c_type: Dtype::F32,
                })
            },
            &mut || {
                Ok(sampled_rel(
                    &gpu.download_f32(&y, m * n)?,
                    &xh,
                    wh,
                    m,
                    n,
                    k,
                    &rows,
                ))
            },
        );
    }
    let (w, scales) = (&dev.w, &dev.scales);
    let x = gpu.alloc_f32(m * k)?;
    gpu.upload_f32(&x, &xh)?;
    let tile = token_tile(m);
    let kern = ctx.kernel(
        if mma { FILE_MMA } else { FILE },
        &format!("qgemv_{}_t{tile}", item.variant),
    )?;
    let cfg = if mma {
        // One block per 16-row tile; its warps split K and meet in shared memory.
        let b = (n / MMA_ROWS_PER_BLOCK) as u64;
        super::super::gpu::Launch::linear(b, (MMA_WARPS * 32) as u32)?
    } else {
        let warps = (n / if fast { ROWS_PER_WARP_FAST } else { ROWS_PER_WARP }) as u64;
        super::super::gpu::Launch::linear(blocks(warps * 32, 256), 256)?
    };
    let mut vs_bf16 = 0.0;
    let mut t = check_and_time(
        gpu,
        TOL,
        &[&y],
        &mut || {
            gpu.launch(
                &kern,
                cfg,
                &[
                    Arg::Buf(w),
                    scales.as_ref().map_or(Arg::U64(0), Arg::Buf),
                    Arg::Buf(&x),
                    Arg::Buf(&y),
                    Arg::I32(m as i32),
                    Arg::I32(n as i32),
                    Arg::I32(k as i32),
                ],
            )
        },
        &mut || {
            let out = gpu.download_f32(&y, m * n)?;
            if fmt.is_some() {
                vs_bf16 = sampled_rel(&out, &xh, wh, m, n, k, &rows);
            }
            Ok(sampled_rel(
                &out,
                &xh,
                dequant.map_or(wh.as_slice(), |d| d.as_slice()),
                m,
                n,
                k,
                &rows,
            ))
        },
    )?;
    if fmt.is_some() {
        t.metrics.insert("err_vs_bf16".into(), vs_bf16);
    }
    Ok(t)
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

    #[test]
    fn sampled_rows_include_the_ends_and_the_error_sees_nan() {
        let rows = sample_rows(1000, 3);
        assert_eq!(rows.len(), SAMPLE_ROWS);
        assert!(rows.contains(&0) && rows.contains(&999) && rows.iter().all(|&r| r < 1000));
        let (m, n, k) = (2, 4, 3);
        let x = vec![1.0, 2.0, 3.0, -1.0, 0.5, 2.0];
        let w: Vec<f32> = (0..n * k).map(|i| i as f32 * 0.25).collect();
        let y: Vec<f32> = (0..m * n)
            .map(|i| (0..k).map(|j| x[(i / n) * k + j] * w[(i % n) * k + j]).sum())
            .collect();
        let all: Vec<usize> = (0..n).collect();
        assert!(sampled_rel(&y, &x, &w, m, n, k, &all) < 1e-7);
        let mut bad = y.clone();
        bad[5] = f32::NAN;
        assert!(sampled_rel(&bad, &x, &w, m, n, k, &all).is_infinite());
    }
}
