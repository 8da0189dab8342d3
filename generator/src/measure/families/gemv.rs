//! gemv: y = A·x with A 16384 × 16384 (1 GiB read), against cuMemcpyDtoD of A.
//!
//! Why memcpy is the baseline: a GEMV reads A once, so copying A is the speed it can approach.

use super::super::gpu::{Arg, Launch};
use super::super::harness::{check_and_time, Ctx, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, MEMCPY, V};
use super::super::reference::{gemv_f64, rel_error};
use super::super::results::Timing;
use super::Family;
use super::{blocks, memcpy_baseline, random_input, shared_input};

pub(crate) const FAMILY: Family = Family {
    name: "gemv",
    sources: &[kernel_file!("gemm/gemv.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// y = A·x for a 16384 × 16384 FP32 matrix: a thread per row, then a warp per row with float4.
pub fn items() -> Vec<Item> {
    ladder(
        "gemv",
        FILE,
        &[
            V("gemv_naive", "one thread per row"),
            V("gemv_warp_vec4", "one warp per row, float4"),
        ],
        &params(&[("rows", 16384), ("cols", 16384)]),
        MEMCPY,
    )
}

/// 2·rows·cols FLOPs; A, x and y each moved once (FP32). The memcpy baseline copies A.
pub fn work(item: &Item) -> (f64, f64) {
    let (r, c) = (item.p("rows") as f64, item.p("cols") as f64);
    if item.variant == MEMCPY.0 {
        (0.0, 8.0 * r * c)
    } else {
        (2.0 * r * c, 4.0 * (r * c + r + c))
    }
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    // The variants share the matrix (see `Ctx::shared`); each draws its own vector.
    let shared = shared_input(ctx, "gemv_matrix", item, rows * cols, (-1.0, 1.0))?;
    let (a_host, a) = (&shared.host, &shared.dev);

    if item.baseline {
        return memcpy_baseline(gpu, a, a_host);
    }

    let (x_host, x) = random_input(gpu, cols, seed ^ 0x55, -1.0, 1.0)?;
    let y = gpu.alloc_f32(rows)?;
    let k = ctx.kernel(FILE, item.variant)?;
    let cfg = match item.variant {
        "gemv_naive" => Launch::linear(blocks(rows as u64, 256), 256)?,
        _ => Launch::linear(blocks(rows as u64 * 32, 256), 256)?,
    };
    let reference = gemv_f64(a_host, &x_host, rows, cols);
    check_and_time(
        gpu,
        1e-4,
        &[&y],
        &mut || {
            gpu.launch(
                &k,
                cfg,
                &[
                    Arg::Buf(a),
                    Arg::Buf(&x),
                    Arg::Buf(&y),
                    Arg::I32(rows as i32),
                    Arg::I32(cols as i32),
                ],
            )
        },
        &mut || Ok(rel_error(&gpu.download_f32(&y, rows)?, &reference)),
    )
}
