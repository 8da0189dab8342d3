//! reduction: the sum of 2^28 floats (1 GiB read), against cuMemcpyDtoD of the same array.
//!
//! Inputs are uniform in [0, 1): the sum is well conditioned, so the error measures the
//! kernel's arithmetic rather than cancellation.

use super::super::gpu::{Arg, Launch};
use super::super::harness::{check_and_time, Ctx, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, MEMCPY, N_1GIB, V};
use super::super::reference::sum_f64;
use super::super::results::Timing;
use super::Family;
use super::{blocks, memcpy_baseline, shared_input};

pub(crate) const FAMILY: Family = Family {
    name: "reduction",
    sources: &[kernel_file!("memory/reduction.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// Sums of 1 GiB of floats, from atomics to float4 loads with warp shuffles.
pub fn items() -> Vec<Item> {
    ladder(
        "reduction",
        FILE,
        &[
            V(
                "reduce_atomic",
                "atomicAdd per element into a shared float, per block",
            ),
            V("reduce_shared_tree", "shared-memory tree"),
            V("reduce_warp_shuffle", "warp shuffles"),
            V("reduce_vec4", "float4, many elements per thread + shuffles"),
        ],
        &params(&[("n", N_1GIB)]),
        MEMCPY,
    )
}

/// One addition and 4 bytes read per element; the memcpy baseline copies the input (read +
/// write).
pub fn work(item: &Item) -> (f64, f64) {
    let n = item.p("n") as f64;
    if item.variant == MEMCPY.0 {
        (0.0, 8.0 * n)
    } else {
        (n, 4.0 * n)
    }
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let n = item.p("n");
    let sms = ctx.gpu.sm_count() as u64;
    let gpu = ctx.gpu;
    // The variants of a size share their input (see `Ctx::shared`).
    let shared = shared_input(ctx, "reduction_input", item, n as usize, (0.0, 1.0))?;
    let (x, input) = (&shared.host, &shared.dev);

    if item.baseline {
        return memcpy_baseline(gpu, input, x);
    }

    let k1 = ctx.kernel(FILE, item.variant)?;
    let k2 = ctx.kernel(FILE, "sum_partials")?;
    // Pass 1 grid: one element per thread for the first three rungs, a fixed grid for the last.
    let (grid, count) = if item.variant == "reduce_vec4" {
        (sms * 8, n / 4)
    } else {
        (blocks(n, 256), n)
    };
    let partials = gpu.alloc_f32(grid as usize)?;
    let out = gpu.alloc_f32(1)?;
    let cfg1 = Launch::linear(grid, 256)?;
    let cfg2 = Launch::linear(1, 1024)?;
    let reference = sum_f64(x);
    check_and_time(
        gpu,
        1e-4,
        &[&out, &partials],
        &mut || {
            gpu.launch(
                &k1,
                cfg1,
                &[Arg::Buf(input), Arg::U64(count), Arg::Buf(&partials)],
            )?;
            gpu.launch(
                &k2,
                cfg2,
                &[Arg::Buf(&partials), Arg::U32(grid as u32), Arg::Buf(&out)],
            )
        },
        &mut || {
            let o = gpu.download_f32(&out, 1)?;
            Ok(super::super::reference::rel_error(&o, &[reference]))
        },
    )
}
