//! softmax: row softmax of a 32768 × 4096 matrix (512 MiB each way), against cuMemcpyDtoD; and
//! a width sweep (1024 to 65536 columns, the same 512 MiB) of the one-pass kernels.
//!
//! Why memcpy is the baseline: softmax reads and writes the matrix once at best, so a copy of the
//! same bytes is the speed a perfect kernel would reach.

use super::super::gpu::{Arg, DevBuf, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, MEMCPY, V};
use super::super::reference::{rel_error_fn, softmax_at, softmax_row_stats};
use super::super::results::{FailStage, Timing};
use super::row_sweep::with_sweep;
use super::rows::{row_split, RowSplit};
use super::Family;
use super::{memcpy_baseline, shared_input};

pub(crate) const FAMILY: Family = Family {
    name: "softmax",
    sources: &[kernel_file!("rowwise/softmax.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// The ladder at 32768 × 4096, then the one-pass kernels swept from 1k to 64k columns.
pub fn items() -> Vec<Item> {
    with_sweep(
        ladder(
            "softmax",
            FILE,
            &[
                V("softmax_three_pass", "three passes (max, sum, normalize)"),
                V("softmax_online", "online softmax, two passes"),
                V("softmax_fused", "one pass, row in registers (float4)"),
                V(
                    "softmax_adaptive",
                    "one pass: a warp per short row, a block cluster per long row",
                ),
            ],
            &params(&[("rows", 32768), ("cols", 4096)]),
            MEMCPY,
        ),
        &["softmax_fused", "softmax_adaptive"],
        "softmax_fused",
        8192,
        "unsupported: softmax_fused holds a row in one block's registers, at most 8192 floats",
    )
}

/// 5 operations per element (max, subtract, exp, add, scale) — a convention, stated so figures
/// can say so; the row read once and written once.
pub fn work(item: &Item) -> (f64, f64) {
    let e = item.p("rows") as f64 * item.p("cols") as f64;
    if item.variant == MEMCPY.0 {
        (0.0, 8.0 * e)
    } else {
        (5.0 * e, 8.0 * e)
    }
}

const TOL: f64 = 1e-5;

/// The check of a rung's output against the f64 row statistics.
type Check<'a> = dyn FnMut() -> anyhow::Result<f64> + 'a;

/// What a softmax rung reads and writes: the input, the output, the row maxima and sums of the
/// multi-pass rungs, one thread block per row, and the shape.
#[derive(Clone, Copy)]
struct Io<'a> {
    input: &'a DevBuf,
    out: &'a DevBuf,
    row_max: &'a DevBuf,
    row_sum: &'a DevBuf,
    per_row: Launch,
    rows: usize,
    cols: usize,
}

/// Set up (the input and its f64 row statistics, shared by a shape's variants), check and time
/// one item.
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let gpu = ctx.gpu;
    // Scores in [-8, 8): exp spans e^16, enough to make the max subtraction matter.
    let shared = shared_input(ctx, "softmax_input", item, rows * cols, (-8.0, 8.0))?;
    let (x, input) = (&shared.host, &shared.dev);
    if item.baseline {
        return memcpy_baseline(gpu, input, x);
    }
    let out = gpu.alloc_f32(rows * cols)?;

    let row_max = gpu.alloc_f32(rows)?;
    let row_sum = gpu.alloc_f32(rows)?;
    let per_row = Launch::linear(rows as u64, 256)?;
    let stats_rc = ctx.shared("softmax_stats", &format!("{:?}", item.params), |_, _| {
        Ok(softmax_row_stats(x, rows, cols))
    })?;
    let stats: &[(f64, f64)] = &stats_rc;
    let mut check = || {
        let o = gpu.download_f32(&out, rows * cols)?;
        Ok(rel_error_fn(&o, |i| softmax_at(x, stats, cols, i)))
    };
    let io = Io {
        input,
        out: &out,
        row_max: &row_max,
        row_sum: &row_sum,
        per_row,
        rows,
        cols,
    };
    match item.variant {
        "softmax_three_pass" => three_pass(ctx, io, &mut check),
        "softmax_online" => online(ctx, io, &mut check),
        "softmax_adaptive" => adaptive(ctx, io, &mut check),
        variant => fused(ctx, variant, io, &mut check),
    }
}

/// Three passes: the row maxima, the row sums, then normalize.
fn three_pass(ctx: &mut Ctx, io: Io, check: &mut Check) -> Res<Timing> {
    let Io {
        input,
        out,
        row_max,
        row_sum,
        per_row,
        cols,
        ..
    } = io;
    let gpu = ctx.gpu;
    let (k1, k2, k3) = (
        ctx.kernel(FILE, "softmax3_max")?,
        ctx.kernel(FILE, "softmax3_sum")?,
        ctx.kernel(FILE, "softmax_normalize")?,
    );
    check_and_time(
        gpu,
        TOL,
        &[out, row_max, row_sum],
        &mut || {
            gpu.launch(&k1, per_row, &[Arg::Buf(input), Arg::Buf(row_max), c_arg(cols)])?;
            gpu.launch(
                &k2,
                per_row,
                &[Arg::Buf(input), Arg::Buf(row_max), Arg::Buf(row_sum), c_arg(cols)],
            )?;
            gpu.launch(
                &k3,
                per_row,
                &[
                    Arg::Buf(input),
                    Arg::Buf(row_max),
                    Arg::Buf(row_sum),
                    Arg::Buf(out),
                    c_arg(cols),
                ],
            )
        },
        check,
    )
}

/// Online softmax: the row maximum and sum in one pass, then normalize.
fn online(ctx: &mut Ctx, io: Io, check: &mut Check) -> Res<Timing> {
    let Io {
        input,
        out,
        row_max,
        row_sum,
        per_row,
        cols,
        ..
    } = io;
    let gpu = ctx.gpu;
    let (k1, k2) = (
        ctx.kernel(FILE, "softmax_online_stats")?,
        ctx.kernel(FILE, "softmax_normalize")?,
    );
    check_and_time(
        gpu,
        TOL,
        &[out, row_max, row_sum],
        &mut || {
            gpu.launch(
                &k1,
                per_row,
                &[Arg::Buf(input), Arg::Buf(row_max), Arg::Buf(row_sum), c_arg(cols)],
            )?;
            gpu.launch(
                &k2,
                per_row,
                &[
                    Arg::Buf(input),
                    Arg::Buf(row_max),
                    Arg::Buf(row_sum),
                    Arg::Buf(out),
                    c_arg(cols),
                ],
            )
        },
        check,
    )
}

/// One pass, sized to the row: a warp per short row, a block cluster per long one.
fn adaptive(ctx: &mut Ctx, io: Io, check: &mut Check) -> Res<Timing> {
    let Io {
        input,
        out,
        rows,
        cols,
        ..
    } = io;
    let gpu = ctx.gpu;
    let (k, cfg, with_rows) = match row_split(rows, cols)? {
        RowSplit::Warp(cfg) => (ctx.kernel(FILE, "softmax_warp")?, cfg, true),
        RowSplit::Cluster(cfg) => (ctx.kernel(FILE, "softmax_cluster")?, cfg, false),
    };
    // softmax_warp takes (x, y, rows, cols), softmax_cluster (x, y, cols).
    let mut args = vec![Arg::Buf(input), Arg::Buf(out)];
    if with_rows {
        args.push(Arg::I32(rows as i32));
    }
    args.push(c_arg(cols));
    check_and_time(gpu, TOL, &[out], &mut || gpu.launch(&k, cfg, &args), check)
}

/// One pass with the row in registers (`softmax_fused`), rows of at most 8192 floats.
fn fused(ctx: &mut Ctx, variant: &str, io: Io, check: &mut Check) -> Res<Timing> {
    let Io {
        input,
        out,
        per_row,
        cols,
        ..
    } = io;
    let gpu = ctx.gpu;
    let k = ctx.kernel(FILE, variant)?;
    if cols % 4 != 0 || cols > 4 * 8 * 256 {
        return Err(Fail::new(
            FailStage::Unsupported,
            "softmax_fused needs cols divisible by 4 and at most 8192",
        ));
    }
    check_and_time(
        gpu,
        TOL,
        &[out],
        &mut || gpu.launch(&k, per_row, &[Arg::Buf(input), Arg::Buf(out), c_arg(cols)]),
        check,
    )
}

fn c_arg(cols: usize) -> Arg<'static> {
    Arg::I32(cols as i32)
}
