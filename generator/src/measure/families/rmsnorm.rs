//! rmsnorm: RMSNorm forward over a 32768 × 4096 matrix (512 MiB each way), against
//! cuMemcpyDtoD, with a width sweep (1024 to 65536 columns, the same 512 MiB) of the forward
//! kernels that hold a row in registers; and its backward pass (dx and dw from x, w and dy: 1.5 GiB moved), whose
//! GB/s are comparable with the same memcpy.
//!
//! Why memcpy is the baseline: RMSNorm is memory-bound, so a copy of the same bytes is its ceiling.

use super::super::gpu::{Arg, DevBuf, Gpu, Kernel, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, MEMCPY, V};
use super::super::reference::{
    random_vec, rel_error, rel_error_fn, rmsnorm_bwd_dw_f64, rmsnorm_bwd_dx_at, rmsnorm_bwd_row_stats,
    rmsnorm_row_scale,
};
use super::super::results::{FailStage, Timing};
use super::row_sweep::with_sweep;
use super::rows::{row_split, RowSplit};
use super::Family;
use super::{blocks, memcpy_baseline, random_input, shared_input};

pub(crate) const FAMILY: Family = Family {
    name: "rmsnorm",
    sources: &[kernel_file!("rowwise/rmsnorm.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// Forward and backward at 32768 × 4096, then the one-pass forward kernels swept from 1k to 64k
/// columns.
pub fn items() -> Vec<Item> {
    with_sweep(
        ladder(
            "rmsnorm",
            FILE,
            &[
                V("rmsnorm_naive", "one thread per row"),
                V(
                    "rmsnorm_block_vec4",
                    "one block per row, float4, row in registers",
                ),
                V(
                    "rmsnorm_adaptive",
                    "a warp per short row, a block cluster per long row",
                ),
                V(
                    "rmsnorm_bwd_atomic",
                    "backward (dx, dw): dw by atomicAdd per element",
                ),
                V(
                    "rmsnorm_bwd",
                    "backward (dx, dw): per-block dw partials + reduce kernel",
                ),
            ],
            &params(&[("rows", 32768), ("cols", 4096)]),
            MEMCPY,
        ),
        &["rmsnorm_block_vec4", "rmsnorm_adaptive"],
        "rmsnorm_block_vec4",
        8192,
        "unsupported: rmsnorm_block_vec4 holds a row in one block's registers, at most 8192 \
         floats",
    )
}

/// Forward: 4 operations per element (square, add, two multiplies), x read and y written, w
/// read. Backward: read x and dy, write dx (12 bytes per element), read w and write dw; 9
/// operations per element (w·dy, ·x and add; s·g, k·x, subtract; dy·x·s and add).
pub fn work(item: &Item) -> (f64, f64) {
    let (r, c) = (item.p("rows") as f64, item.p("cols") as f64);
    if item.variant == MEMCPY.0 {
        (0.0, 8.0 * r * c)
    } else if item.variant.starts_with("rmsnorm_bwd") {
        (9.0 * r * c, 12.0 * r * c + 8.0 * c)
    } else {
        (4.0 * r * c, 8.0 * r * c + 4.0 * c)
    }
}
const EPS: f32 = 1e-6;
/// dw sums 32768 rows in FP32 (atomics in any order): looser than the forward pass's 1e-5.
const BWD_TOL: f64 = 1e-4;

/// Set up (the input and its f64 row scales, shared by a shape's variants), check and time one
/// forward item; the backward ones go to [`measure_bwd`].
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    if item.variant.starts_with("rmsnorm_bwd") {
        return measure_bwd(ctx, item);
    }
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    let shared = shared_input(ctx, "rmsnorm_input", item, rows * cols, (-1.0, 1.0))?;
    let (x, input) = (&shared.host, &shared.dev);
    if item.baseline {
        return memcpy_baseline(gpu, input, x);
    }
    let out = gpu.alloc_f32(rows * cols)?;

    let (w_host, w) = random_input(gpu, cols, seed ^ 0x77, 0.5, 1.5)?;
    let (k, cfg) = forward_kernel(ctx, item.variant, rows, cols)?;
    let scale_rc = ctx.shared("rmsnorm_scale", &format!("{:?}", item.params), |_, _| {
        Ok(rmsnorm_row_scale(x, rows, cols, EPS as f64))
    })?;
    let scale: &[f64] = &scale_rc;
    check_and_time(
        gpu,
        1e-5,
        &[&out],
        &mut || {
            gpu.launch(
                &k,
                cfg,
                &[
                    Arg::Buf(input),
                    Arg::Buf(&w),
                    Arg::Buf(&out),
                    Arg::I32(rows as i32),
                    Arg::I32(cols as i32),
                    Arg::F32(EPS),
                ],
            )
        },
        &mut || {
            let o = gpu.download_f32(&out, rows * cols)?;
            Ok(rel_error_fn(&o, |i| {
                x[i] as f64 * scale[i / cols] * w_host[i % cols] as f64
            }))
        },
    )
}

/// A forward rung's kernel and launch: the adaptive rung picks a warp or a cluster per row.
fn forward_kernel(ctx: &mut Ctx, variant: &str, rows: usize, cols: usize) -> Res<(Kernel, Launch)> {
    Ok(match variant {
        // rmsnorm_warp and rmsnorm_cluster take the same arguments as the other rungs.
        "rmsnorm_adaptive" => match row_split(rows, cols)? {
            RowSplit::Warp(cfg) => (ctx.kernel(FILE, "rmsnorm_warp")?, cfg),
            RowSplit::Cluster(cfg) => (ctx.kernel(FILE, "rmsnorm_cluster")?, cfg),
        },
        "rmsnorm_naive" => (
            ctx.kernel(FILE, variant)?,
            Launch::linear(blocks(rows as u64, 256), 256)?,
        ),
        _ => {
            if !cols.is_multiple_of(4) || cols > 4 * 8 * 256 {
                return Err(Fail::new(
                    FailStage::Unsupported,
                    "rmsnorm_block_vec4 needs cols divisible by 4 and at most 8192",
                ));
            }
            (ctx.kernel(FILE, variant)?, Launch::linear(rows as u64, 256)?)
        }
    })
}

/// The backward pass's inputs x, dy and w on the host and the device, and its outputs dx and dw.
struct Bwd {
    x: Vec<f32>,
    dy: Vec<f32>,
    w_host: Vec<f32>,
    dx_buf: DevBuf,
    x_buf: DevBuf,
    dy_buf: DevBuf,
    w: DevBuf,
    dw: DevBuf,
}

/// Draw x, dy (from `seed`) and w, and allocate and upload them beside dx and dw.
fn bwd_inputs(gpu: &Gpu, rows: usize, cols: usize, seed: u64) -> Res<Bwd> {
    let x = random_vec(rows * cols, seed, -1.0, 1.0);
    let dy = random_vec(rows * cols, seed ^ 0xd1, -1.0, 1.0);
    let w_host = random_vec(cols, seed ^ 0x77, 0.5, 1.5);
    let (dx_buf, x_buf, dy_buf) = (
        gpu.alloc_f32(rows * cols)?,
        gpu.alloc_f32(rows * cols)?,
        gpu.alloc_f32(rows * cols)?,
    );
    let (w, dw) = (gpu.alloc_f32(cols)?, gpu.alloc_f32(cols)?);
    gpu.upload_f32(&x_buf, &x)?;
    gpu.upload_f32(&dy_buf, &dy)?;
    gpu.upload_f32(&w, &w_host)?;
    Ok(Bwd {
        x,
        dy,
        w_host,
        dx_buf,
        x_buf,
        dy_buf,
        w,
        dw,
    })
}

/// The threads per block of a backward rung, if its rows fit in registers.
fn bwd_threads(variant: &str, cols: usize) -> Res<usize> {
    // rmsnorm_bwd runs 128-thread blocks (a row of at most 4 · 8 · 128 floats in registers),
    // rmsnorm_bwd_atomic one 256-thread block per row.
    let threads: usize = if variant == "rmsnorm_bwd" { 128 } else { 256 };
    if !cols.is_multiple_of(4) || cols > 4 * 8 * threads {
        return Err(Fail::new(
            FailStage::Unsupported,
            format!(
                "the backward kernels need cols divisible by 4 and at most {}",
                4 * 8 * threads
            ),
        ));
    }
    Ok(threads)
}

/// The backward variants: dx (rows × cols) and dw (cols), checked against f64 over every element
/// of both.
fn measure_bwd(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let threads = bwd_threads(item.variant, cols)?;
    let seed = ctx.seed(item);
    let k = ctx.kernel(FILE, item.variant)?;
    let reduce = if item.variant == "rmsnorm_bwd" {
        Some(ctx.kernel(FILE, "rmsnorm_bwd_dw_reduce")?)
    } else {
        None
    };
    let gpu = ctx.gpu;
    let Bwd {
        x,
        dy,
        w_host,
        dx_buf,
        x_buf,
        dy_buf,
        w,
        dw,
    } = bwd_inputs(gpu, rows, cols, seed)?;
    // Four blocks per SM walk the rows; each leaves one partial dw row.
    let parts = (4 * gpu.sm_count().max(1) as usize).min(rows);
    let partial = gpu.alloc_f32(parts * cols)?;
    let stats = rmsnorm_bwd_row_stats(&x, &w_host, &dy, rows, cols, EPS as f64);
    let dw_ref = rmsnorm_bwd_dw_f64(&x, &dy, &stats, rows, cols);
    let args = [
        Arg::Buf(&x_buf),
        Arg::Buf(&w),
        Arg::Buf(&dy_buf),
        Arg::Buf(&dx_buf),
        Arg::Buf(if reduce.is_some() { &partial } else { &dw }),
        Arg::I32(rows as i32),
        Arg::I32(cols as i32),
        Arg::F32(EPS),
    ];
    let mut run = || -> anyhow::Result<()> {
        bwd_pass(
            gpu,
            &k,
            reduce.as_ref(),
            &args,
            (&dw, &partial),
            (rows, cols, parts, threads),
        )
    };
    check_and_time(gpu, BWD_TOL, &[&dx_buf, &dw, &partial], &mut run, &mut || {
        let dx = gpu.download_f32(&dx_buf, rows * cols)?;
        let dx_rel = rel_error_fn(&dx, |i| rmsnorm_bwd_dx_at(&x, &w_host, &dy, &stats, cols, i));
        let dw_rel = rel_error(&gpu.download_f32(&dw, cols)?, &dw_ref);
        Ok(dx_rel.max(dw_rel))
    })
}

/// One backward pass: zero dw and a block per row (atomic dw), or `parts` blocks leaving
/// partial dw rows and the reduce kernel summing them.
fn bwd_pass(
    gpu: &Gpu,
    k: &Kernel,
    reduce: Option<&Kernel>,
    args: &[Arg],
    (dw, partial): (&DevBuf, &DevBuf),
    (rows, cols, parts, threads): (usize, usize, usize, usize),
) -> anyhow::Result<()> {
    match reduce {
        None => {
            gpu.fill_zero(dw)?;
            gpu.launch(k, Launch::linear(rows as u64, threads as u32)?, args)
        }
        Some(r) => {
            gpu.launch(k, Launch::linear(parts as u64, threads as u32)?, args)?;
            gpu.launch(
                r,
                Launch::linear(blocks(cols as u64, 256), 256)?,
                &[
                    Arg::Buf(partial),
                    Arg::Buf(dw),
                    Arg::I32(parts as i32),
                    Arg::I32(cols as i32),
                ],
            )
        }
    }
}
