//! bandwidth: copies and vector add over 1 GiB arrays, against cuMemcpyDtoD.
//!
//! Why: the memory roof every other figure is drawn against is measured here, on the same GPU.

use super::super::gpu::{Arg, DevBuf, Kernel, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, MEMCPY, N_1GIB, V};
use super::super::reference::{rel_error_f32, rel_error_fn};
use super::super::results::{FailStage, Timing};
use super::Family;
use super::{blocks, shared_input};

pub(crate) const FAMILY: Family = Family {
    name: "bandwidth",
    sources: &[kernel_file!("memory/bandwidth.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// Copies from one float per thread to four float4s in flight, and a vector add, over 1 GiB.
pub fn items() -> Vec<Item> {
    ladder(
        "bandwidth",
        FILE,
        &[
            V("copy_naive", "copy, one element per thread"),
            V("copy_grid_stride", "copy, grid-stride loop"),
            V("copy_vec4", "copy, float4 per thread"),
            V("copy_vec4_ilp", "copy, 4 × float4 in flight per thread"),
            V("vector_add_naive", "vector add c = a + b, one element per thread"),
            V("vector_add_vec4", "vector add c = a + b, float4"),
        ],
        &params(&[("n", N_1GIB)]),
        MEMCPY,
    )
}

/// A copy reads and writes 4 bytes per element; a vector add reads two and writes one, and
/// does one addition.
pub fn work(item: &Item) -> (f64, f64) {
    let n = item.p("n") as f64;
    if item.variant.starts_with("vector_add") {
        (n, 12.0 * n)
    } else {
        (0.0, 8.0 * n)
    }
}

/// Set up (inputs shared by a size's variants), check and time one item.
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let n = item.p("n");
    let sms = ctx.gpu.sm_count() as u64;
    let kernel = ctx.variant_kernel(FILE, item)?;
    let gpu = ctx.gpu;

    // The variants of a size share their inputs (see `Ctx::shared`).
    let a_in = shared_input(ctx, "bandwidth_a", item, n as usize, (-1.0, 1.0))?;
    let (a_host, a) = (&a_in.host, &a_in.dev);
    let out = gpu.alloc_f32(n as usize)?;
    if item.variant.starts_with("vector_add") {
        return vector_add(ctx, item, kernel, (a_host, a), &out);
    }
    let (cfg, count) = copy_config(item.variant, n, sms)?;
    let mut run = || match &kernel {
        None => gpu.memcpy_dtod(&out, a, (n * 4) as usize),
        Some(k) => gpu.launch(k, cfg, &[Arg::Buf(a), Arg::Buf(&out), Arg::U64(count)]),
    };
    // A copy must be exact.
    check_and_time(gpu, 0.0, &[&out], &mut run, &mut || {
        let o = gpu.download_f32(&out, n as usize)?;
        Ok(rel_error_f32(&o, a_host))
    })
}

/// A copy rung's launch and the element count it is passed (float4s for the vec4 rungs).
fn copy_config(variant: &str, n: u64, sms: u64) -> Res<(Launch, u64)> {
    let n4 = n / 4;
    Ok(match variant {
        "memcpy" => (Launch::linear(1, 1)?, n),
        "copy_naive" => (Launch::linear(blocks(n, 256), 256)?, n),
        "copy_grid_stride" => (Launch::linear(sms * 8, 256)?, n),
        "copy_vec4" => (Launch::linear(blocks(n4, 256), 256)?, n4),
        "copy_vec4_ilp" => (Launch::linear(blocks(n4, 256 * 4), 256)?, n4),
        other => {
            return Err(Fail::new(
                FailStage::Unsupported,
                format!("no launch configuration for {other}"),
            ))
        }
    })
}

/// A vector-add rung: c = a + b, with b shared by the size's variants like a.
fn vector_add(
    ctx: &mut Ctx,
    item: &Item,
    kernel: Option<Kernel>,
    (a_host, a): (&[f32], &DevBuf),
    out: &DevBuf,
) -> Res<Timing> {
    let (n, gpu) = (item.p("n"), ctx.gpu);
    let n4 = n / 4;
    let b_in = shared_input(ctx, "bandwidth_b", item, n as usize, (-1.0, 1.0))?;
    let (b_host, b) = (&b_in.host, &b_in.dev);
    let k = kernel.ok_or_else(|| Fail::new(FailStage::Compile, "no kernel"))?;
    // The naive kernel takes one float per thread; the vec4 one two float4s per thread.
    let (cfg, count) = if item.variant == "vector_add_naive" {
        (Launch::linear(blocks(n, 256), 256)?, n)
    } else {
        (Launch::linear(blocks(n4, 256 * 2), 256)?, n4)
    };
    check_and_time(
        gpu,
        1e-6,
        &[out],
        &mut || {
            gpu.launch(
                &k,
                cfg,
                &[Arg::Buf(a), Arg::Buf(b), Arg::Buf(out), Arg::U64(count)],
            )
        },
        &mut || {
            let o = gpu.download_f32(out, n as usize)?;
            Ok(rel_error_fn(&o, |i| a_host[i] as f64 + b_host[i] as f64))
        },
    )
}
