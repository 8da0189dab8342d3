//! gemv: y = A·x with A 16384 × 16384 (1 GiB read), against cuMemcpyDtoD of A.

use super::super::gpu::{Arg, Launch};
use super::super::harness::{check_and_time, Ctx, Res};
use super::super::plan::Item;
use super::super::reference::{gemv_f64, random_vec, rel_error};
use super::super::results::Timing;
use super::{blocks, memcpy_baseline};

const FILE: &str = "gemv.cu";

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    let a_host = random_vec(rows * cols, seed, -1.0, 1.0);
    let a = gpu.alloc_f32(rows * cols)?;
    gpu.upload_f32(&a, &a_host)?;

    if item.baseline {
        return memcpy_baseline(gpu, item, &a, &a_host);
    }

    let x_host = random_vec(cols, seed ^ 0x55, -1.0, 1.0);
    let x = gpu.alloc_f32(cols)?;
    gpu.upload_f32(&x, &x_host)?;
    let y = gpu.alloc_f32(rows)?;
    let k = ctx.kernel(FILE, item.variant)?;
    let cfg = match item.variant {
        "gemv_naive" => Launch::linear(blocks(rows as u64, 256), 256)?,
        _ => Launch::linear(blocks(rows as u64 * 32, 256), 256)?,
    };
    let reference = gemv_f64(&a_host, &x_host, rows, cols);
    check_and_time(
        gpu,
        item,
        1e-4,
        &[&y],
        &mut || {
            gpu.launch(
                &k,
                cfg,
                &[
                    Arg::Buf(&a),
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
