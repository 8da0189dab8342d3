//! How quant_gemv is timed: cuBLAS on BF16 X and the BF16 weight, and each kernel rung on FP32
//! X and the weight in its layout (recording its error against the unquantized weight).

use super::weight::DevWeight;
use super::{token_tile, Io, FILE, FILE_MMA, MMA_ROWS_PER_BLOCK, MMA_WARPS};
use super::{ROWS_PER_WARP, ROWS_PER_WARP_FAST, TOL};
use crate::measure::families::blocks;
use crate::measure::gpu::{Arg, DevBuf, Dtype, Launch, RowMajorGemm};
use crate::measure::harness::{check_and_time, Ctx, Fail, Res};
use crate::measure::results::{FailStage, Timing};

/// The cuBLAS baseline: BF16 X (`xb`) times the BF16 weight `w`.
pub(super) fn time_cublas(io: &Io, xb: &[u16], w: &DevBuf) -> Res<Timing> {
    let (gpu, m, n, k, y) = (io.gpu, io.m, io.n, io.k, io.y);
    if !gpu.has_cublas() {
        return Err(Fail::new(FailStage::Unsupported, "cuBLAS library not found"));
    }
    let x = gpu.alloc(m * k * 2)?;
    gpu.upload_u16(&x, xb)?;
    check_and_time(
        gpu,
        TOL,
        &[y],
        &mut || {
            gpu.gemm_bf16(&RowMajorGemm {
                m,
                n,
                k,
                batch: 1,
                alpha: 1.0,
                a: &x,
                stride_a: 0,
                b: w,
                stride_b: 0,
                b_is_nk: true,
                c: y,
                stride_c: 0,
                c_type: Dtype::F32,
            })
        },
        &mut || Ok(io.rel(&gpu.download_f32(y, m * n)?, io.wh)),
    )
}

/// One kernel rung: `quantized` rungs also record `err_vs_bf16`, their error against f64 on the
/// unquantized weight; `dequant` is the weight values they multiply (the BF16 ones when `None`).
pub(super) fn time_kernel(
    ctx: &mut Ctx,
    variant: &str,
    io: &Io,
    dev: &DevWeight,
    quantized: bool,
    dequant: Option<&Vec<f32>>,
) -> Res<Timing> {
    let (gpu, m, n, k, y, wh) = (io.gpu, io.m, io.n, io.k, io.y, io.wh);
    let (fast, mma) = (variant.ends_with("_fast"), variant.ends_with("_mma"));
    let (w, scales) = (&dev.w, &dev.scales);
    let x = gpu.alloc_f32(m * k)?;
    gpu.upload_f32(&x, io.xh)?;
    let tile = token_tile(m);
    let kern = ctx.kernel(
        if mma { FILE_MMA } else { FILE },
        &format!("qgemv_{}_t{tile}", variant),
    )?;
    let cfg = launch_config(n, fast, mma)?;
    let mut vs_bf16 = 0.0;
    let mut t = check_and_time(
        gpu,
        TOL,
        &[y],
        &mut || {
            gpu.launch(
                &kern,
                cfg,
                &[
                    Arg::Buf(w),
                    scales.as_ref().map_or(Arg::U64(0), Arg::Buf),
                    Arg::Buf(&x),
                    Arg::Buf(y),
                    Arg::I32(m as i32),
                    Arg::I32(n as i32),
                    Arg::I32(k as i32),
                ],
            )
        },
        &mut || {
            let out = gpu.download_f32(y, m * n)?;
            if quantized {
                vs_bf16 = io.rel(&out, wh);
            }
            Ok(io.rel(&out, dequant.map_or(wh, |d| d.as_slice())))
        },
    )?;
    if quantized {
        t.metrics.insert("err_vs_bf16".into(), vs_bf16);
    }
    Ok(t)
}

/// The grid: one block per 16-row tile for the `_mma` rungs, else one warp per `R` (or `RF`)
/// rows.
fn launch_config(n: usize, fast: bool, mma: bool) -> Res<Launch> {
    Ok(if mma {
        // One block per 16-row tile; its warps split K and meet in shared memory.
        let b = (n / MMA_ROWS_PER_BLOCK) as u64;
        Launch::linear(b, (MMA_WARPS * 32) as u32)?
    } else {
        let warps = (n / if fast { ROWS_PER_WARP_FAST } else { ROWS_PER_WARP }) as u64;
        Launch::linear(blocks(warps * 32, 256), 256)?
    })
}
