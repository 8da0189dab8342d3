//! rmsnorm: RMSNorm forward over a 32768 × 4096 matrix (512 MiB each way), against
//! cuMemcpyDtoD.

use super::super::gpu::{Arg, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::plan::Item;
use super::super::reference::{random_vec, rel_error_f32, rel_error_fn, rmsnorm_row_scale};
use super::super::results::{FailStage, Timing};
use super::blocks;

const FILE: &str = "rmsnorm.cu";
const EPS: f32 = 1e-6;

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    let x = random_vec(rows * cols, seed, -1.0, 1.0);
    let input = gpu.alloc_f32(rows * cols)?;
    gpu.upload_f32(&input, &x)?;
    let out = gpu.alloc_f32(rows * cols)?;

    if item.baseline {
        return check_and_time(
            gpu,
            item,
            0.0,
            &[&out],
            &mut || gpu.memcpy_dtod(&out, &input, rows * cols * 4),
            &mut || Ok(rel_error_f32(&gpu.download_f32(&out, rows * cols)?, &x)),
        );
    }

    let w_host = random_vec(cols, seed ^ 0x77, 0.5, 1.5);
    let w = gpu.alloc_f32(cols)?;
    gpu.upload_f32(&w, &w_host)?;
    let k = ctx.kernel(FILE, item.variant)?;
    let cfg = match item.variant {
        "rmsnorm_naive" => Launch::linear(blocks(rows as u64, 256), 256)?,
        _ => {
            if cols % 4 != 0 || cols > 4 * 8 * 256 {
                return Err(Fail::new(
                    FailStage::Unsupported,
                    "rmsnorm_block_vec4 needs cols divisible by 4 and at most 8192",
                ));
            }
            Launch::linear(rows as u64, 256)?
        }
    };
    let scale = rmsnorm_row_scale(&x, rows, cols, EPS as f64);
    check_and_time(
        gpu,
        item,
        1e-5,
        &[&out],
        &mut || {
            gpu.launch(
                &k,
                cfg,
                &[
                    Arg::Buf(&input),
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
