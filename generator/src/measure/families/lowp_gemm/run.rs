//! Each lowp_gemm variant's call — the book's kernel (tensor maps, grid, shared memory) or the
//! library — and its check before timing.

use super::operands::{self, sample_positions, sampled_refs, sampled_rel, worst_block_rel, Kind, Pair};
use super::FILE;
use crate::measure::gpu::{Arg, DevBuf, Dtype, Gpu, Kernel, Launch, LtKind, LtPlan, RowMajorGemm, TensorMap};
use crate::measure::harness::{check_and_time, Ctx, Fail, Res};
use crate::measure::reference::bf16_to_f32;
use crate::measure::results::{FailStage, Timing};

/// See the module doc of `lowp_gemm` for why these tolerances.
const TOL_FP8: f64 = 2e-2;
const TOL_INT8: f64 = 0.0;
const TOL_BF16: f64 = 1e-2;
/// Sampled f64 entries per check.
const SAMPLES: usize = 16384;
/// Dynamic shared memory of both kernels: persistent_gemm.cuh's ring (4 stages of a 128 × 128-byte
/// A box and a 256 × 128-byte Bᵀ box), two 16 KiB epilogue boxes, alignment slack, 8 mbarriers.
const SMEM: u32 = 4 * (128 * 128 + 256 * 128) + 2 * 128 * 128 + 1024 + 2 * 4 * 8;

/// One item's shape and its input seed.
pub(super) struct Shape {
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) seed: u64,
}

/// What a variant's output is checked against: the sampled f64 entries of its format.
struct Check<'a> {
    s: &'a Shape,
    pair: &'a Pair,
    pos: Vec<(usize, usize)>,
    refs: Vec<f64>,
}

fn kind_of(variant: &str) -> Res<Kind> {
    Ok(match variant {
        "fp8_tensor" | "cublaslt_fp8_fast" | "cublaslt_fp8" => Kind::Fp8Tensor,
        "fp8_rowwise" => Kind::Fp8Rowwise,
        "int8" | "cublaslt_int8" => Kind::Int8,
        "cublas_bf16" => Kind::Bf16,
        other => {
            return Err(Fail::new(
                FailStage::Unsupported,
                format!("unknown variant {other}"),
            ))
        }
    })
}

pub(super) fn measure(ctx: &mut Ctx, item: &crate::measure::plan::Item, s: &Shape) -> Res<Timing> {
    let kind = kind_of(item.variant)?;
    let (m, n, k) = (s.m, s.n, s.k);
    let kernel = match item.variant {
        "fp8_tensor" | "fp8_rowwise" => Some(ctx.kernel(FILE, "fp8_wgmma")?),
        "int8" => Some(ctx.kernel(FILE, "int8_wgmma")?),
        _ => None,
    };
    // One format's operands at a time, shared by the variants that read it.
    let key = format!("{kind:?} {m}x{n}x{k}");
    let pair = ctx.shared("lowp_operands", &key, |gpu, seed| {
        operands::make(gpu, kind, m, n, k, seed)
    })?;
    let gpu = ctx.gpu;
    let out_bytes = if kind == Kind::Int8 { 4 } else { 2 };
    let c = gpu.alloc(m * n * out_bytes)?;
    let pos = sample_positions(m, n, SAMPLES, s.seed);
    let refs = sampled_refs(&pair, &pos);
    let chk = Check {
        s,
        pair: &pair,
        pos,
        refs,
    };
    match (item.variant, kernel) {
        (_, Some(kern)) => time_kernel(gpu, &kern, &chk, &c),
        ("cublas_bf16", None) => time_bf16(gpu, &chk, &c),
        (v, None) => time_lt(gpu, v, &chk, &c),
    }
}

/// The sampled error of a BF16 output.
fn bf16_rel(gpu: &Gpu, chk: &Check, c: &DevBuf) -> anyhow::Result<(f64, Vec<f32>)> {
    let n = chk.s.n;
    let out = bf16_to_f32(&gpu.download_u16(c, chk.s.m * n)?);
    let rel = sampled_rel(&chk.pos, &chk.refs, |i, j| out[i * n + j] as f64);
    Ok((rel, out))
}

/// An INT32 output, downloaded.
fn download_i32(gpu: &Gpu, c: &DevBuf, len: usize) -> anyhow::Result<Vec<i32>> {
    Ok(gpu
        .download_f32(c, len)?
        .iter()
        .map(|v| v.to_bits() as i32)
        .collect())
}

/// The sampled error of an INT32 output (0 when every sampled sum is exact).
fn int_rel(chk: &Check, out: &[i32]) -> f64 {
    let n = chk.s.n;
    sampled_rel(&chk.pos, &chk.refs, |i, j| out[i * n + j] as f64)
}

/// A library FP8 or INT8 product: planned once, checked on sampled entries, timed.
fn time_lt(gpu: &Gpu, variant: &str, chk: &Check, c: &DevBuf) -> Res<Timing> {
    let s = chk.s;
    let plan = lt_plan(gpu, variant, chk.pair, s)?;
    let int = plan_is_int(variant);
    check_and_time(
        gpu,
        if int { TOL_INT8 } else { TOL_FP8 },
        &[c],
        &mut || gpu.lt_run(&plan, &chk.pair.a.dev, &chk.pair.bt.dev, c),
        &mut || {
            if int {
                Ok(int_rel(chk, &download_i32(gpu, c, s.m * s.n)?))
            } else {
                Ok(bf16_rel(gpu, chk, c)?.0)
            }
        },
    )
}

fn plan_is_int(variant: &str) -> bool {
    variant == "cublaslt_int8" || variant == "int8"
}

/// The cuBLASLt plan of a variant (FP8 with the pair's first scales: a per-tensor format).
fn lt_plan(gpu: &Gpu, variant: &str, pair: &Pair, s: &Shape) -> Res<LtPlan> {
    if !gpu.has_cublaslt() {
        return Err(Fail::new(FailStage::Unsupported, "cuBLASLt library not found"));
    }
    let kind = match variant {
        "cublaslt_int8" | "int8" => LtKind::Int8,
        "cublaslt_fp8" => LtKind::Fp8 { fast_accum: false },
        _ => LtKind::Fp8 { fast_accum: true },
    };
    let scales = Some((&pair.a.dev_scales, &pair.bt.dev_scales));
    gpu.lt_plan(kind, s.m, s.n, s.k, scales)
        .map_err(|e| Fail::new(FailStage::Unsupported, format!("{e:#}")))
}

/// cuBLAS BF16 → BF16 on the BF16 operands.
fn time_bf16(gpu: &Gpu, chk: &Check, c: &DevBuf) -> Res<Timing> {
    if !gpu.has_cublas() {
        return Err(Fail::new(FailStage::Unsupported, "cuBLAS library not found"));
    }
    let s = chk.s;
    let g = RowMajorGemm {
        m: s.m,
        n: s.n,
        k: s.k,
        batch: 1,
        alpha: 1.0,
        a: &chk.pair.a.dev,
        stride_a: 0,
        b: &chk.pair.bt.dev,
        stride_b: 0,
        b_is_nk: true,
        c,
        stride_c: 0,
        c_type: Dtype::Bf16,
    };
    check_and_time(gpu, TOL_BF16, &[c], &mut || gpu.gemm_bf16(&g), &mut || {
        Ok(bf16_rel(gpu, chk, c)?.0)
    })
}

/// cuBLASLt's output on the kernel's codes, the full-output reference of the book's kernels:
/// FP8 as f32 with the pair's scales applied per row and column (for the per-tensor pair these
/// are cuBLASLt's own; for the rowwise pair cuBLASLt runs unscaled and the scales are applied
/// here), INT8 as its exact sums. `None` without cuBLASLt (the sampled check still runs).
enum FullRef {
    Fp8(Vec<f32>),
    Int8(Vec<i32>),
}

fn full_reference(gpu: &Gpu, chk: &Check, int: bool) -> Res<Option<FullRef>> {
    if !gpu.has_cublaslt() {
        return Ok(None);
    }
    let (s, pair) = (chk.s, chk.pair);
    let r = gpu.alloc(s.m * s.n * if int { 4 } else { 2 })?;
    gpu.fill_nan(&r)?;
    if int {
        let plan = lt_plan(gpu, "cublaslt_int8", pair, s)?;
        gpu.lt_run(&plan, &pair.a.dev, &pair.bt.dev, &r)?;
        return Ok(Some(FullRef::Int8(download_i32(gpu, &r, s.m * s.n)?)));
    }
    let rowwise = pair.kind == Kind::Fp8Rowwise;
    let unit = gpu.alloc_f32(1)?;
    gpu.upload_f32(&unit, &[1.0])?;
    let scales = if rowwise {
        (&unit, &unit)
    } else {
        (&pair.a.dev_scales, &pair.bt.dev_scales)
    };
    let plan = gpu.lt_plan(LtKind::Fp8 { fast_accum: true }, s.m, s.n, s.k, Some(scales))?;
    gpu.lt_run(&plan, &pair.a.dev, &pair.bt.dev, &r)?;
    let mut v = bf16_to_f32(&gpu.download_u16(&r, s.m * s.n)?);
    if rowwise {
        for (i, row) in v.chunks_mut(s.n).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x *= pair.a.scales[i] * pair.bt.scales[j];
            }
        }
    }
    Ok(Some(FullRef::Fp8(v)))
}

/// Error of one of the book's kernels: the larger of the sampled f64 error and (with cuBLASLt)
/// the worst block against cuBLASLt's full output — for INT8 both must be exactly 0.
fn kernel_rel(gpu: &Gpu, chk: &Check, c: &DevBuf, full: Option<&FullRef>) -> anyhow::Result<f64> {
    let (m, n) = (chk.s.m, chk.s.n);
    if chk.pair.kind == Kind::Int8 {
        let out = download_i32(gpu, c, m * n)?;
        let whole = match full {
            Some(FullRef::Int8(r)) => int_whole_rel(&out, r),
            _ => 0.0,
        };
        return Ok(int_rel(chk, &out).max(whole));
    }
    let (sampled, out) = bf16_rel(gpu, chk, c)?;
    Ok(match full {
        Some(FullRef::Fp8(r)) => sampled.max(worst_block_rel(&out, r, m, n, 128, 64)),
        _ => sampled,
    })
}

/// ‖out − ref‖ / ‖ref‖ over every entry of two INT32 outputs (0 only when they are equal).
fn int_whole_rel(out: &[i32], reference: &[i32]) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (&o, &r) in out.iter().zip(reference) {
        num += (o as f64 - r as f64).powi(2);
        den += (r as f64).powi(2);
    }
    if num == 0.0 && out.len() == reference.len() {
        0.0
    } else if den > 0.0 {
        (num / den).sqrt().max(f64::MIN_POSITIVE)
    } else {
        f64::INFINITY
    }
}

/// One of the book's kernels: tensor maps, launch shape, check against the references, timing.
fn time_kernel(gpu: &Gpu, kern: &Kernel, chk: &Check, c: &DevBuf) -> Res<Timing> {
    let (s, pair) = (chk.s, chk.pair);
    let int = pair.kind == Kind::Int8;
    let full = full_reference(gpu, chk, int)?;
    let maps: [TensorMap; 3] = [
        gpu.tensor_map(&pair.a.dev, Dtype::U8, s.m, s.k, 128, 128)?,
        gpu.tensor_map(&pair.bt.dev, Dtype::U8, s.n, s.k, 256, 128)?,
        if int {
            gpu.tensor_map(c, Dtype::I32, s.m, s.n, 128, 32)?
        } else {
            gpu.tensor_map(c, Dtype::Bf16, s.m, s.n, 128, 64)?
        },
    ];
    let mut args = vec![
        Arg::I32(s.m as i32),
        Arg::I32(s.n as i32),
        Arg::I32(s.k as i32),
        Arg::TensorMap(&maps[0]),
        Arg::TensorMap(&maps[1]),
        Arg::TensorMap(&maps[2]),
    ];
    if !int {
        let rowwise = pair.kind == Kind::Fp8Rowwise;
        args.extend([
            Arg::Buf(&pair.a.dev_scales),
            Arg::Buf(&pair.bt.dev_scales),
            Arg::I32(rowwise as i32),
        ]);
    }
    gpu.set_max_dynamic_smem(kern, SMEM)?;
    let tiles = ((s.m / 128) * (s.n / 256)) as u64;
    let cfg = Launch {
        smem: SMEM,
        ..Launch::linear(tiles.min(gpu.sm_count().max(1) as u64), 384)?
    };
    let tol = if int { TOL_INT8 } else { TOL_FP8 };
    check_and_time(gpu, tol, &[c], &mut || gpu.launch(kern, cfg, &args), &mut || {
        kernel_rel(gpu, chk, c, full.as_ref())
    })
}
