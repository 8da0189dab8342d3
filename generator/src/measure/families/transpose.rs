//! transpose: out = inᵀ for a 16384 × 16384 matrix (1 GiB each way), against cuMemcpyDtoD.
//!
//! Why memcpy is the baseline: a transpose moves the same bytes as a copy; the gap is the cost of
//! its access pattern.

use super::super::gpu::{Arg, Launch};
use super::super::harness::{check_and_time, Ctx, Res};
use super::super::plan::Item;
use super::super::reference::{rel_error_f32, rel_error_fn};
use super::super::results::Timing;
use super::shared_input;

const FILE: &str = "transpose.cu";

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let kernel = ctx.variant_kernel(FILE, item)?;
    let gpu = ctx.gpu;
    // The variants share the input matrix (see `Ctx::shared`).
    let shared = shared_input(ctx, "transpose_input", item, rows * cols, (-1.0, 1.0))?;
    let (x, input) = (&shared.host, &shared.dev);
    let out = gpu.alloc_f32(rows * cols)?;
    let cfg = Launch::grid2(cols.div_ceil(32) as u32, rows.div_ceil(32) as u32, 32, 8);
    let mut run = || match &kernel {
        None => gpu.memcpy_dtod(&out, input, rows * cols * 4),
        Some(k) => gpu.launch(
            k,
            cfg,
            &[
                Arg::Buf(input),
                Arg::Buf(&out),
                Arg::I32(rows as i32),
                Arg::I32(cols as i32),
            ],
        ),
    };
    let baseline = item.baseline;
    check_and_time(gpu, item, 0.0, &[&out], &mut run, &mut || {
        let o = gpu.download_f32(&out, rows * cols)?;
        Ok(if baseline {
            rel_error_f32(&o, x)
        } else {
            // out is cols × rows: out[c][r] = x[r][c]
            rel_error_fn(&o, |i| x[(i % rows) * cols + i / rows] as f64)
        })
    })
}
