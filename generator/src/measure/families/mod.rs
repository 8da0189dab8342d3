//! The benchmark families: each sets up inputs for its items, checks every variant against a
//! reference and times it, through the `gpu` boundary only.

mod attention;
mod bandwidth;
mod decode_attention;
mod decode_attention_v2;
mod gemv;
mod qgemv_layout;
mod quant_gemv;
mod reduction;
mod rmsnorm;
mod rows;
mod sgemm;
mod softmax;
mod ssm_scan;
mod tc_gemm;
mod transpose;

use super::gpu::{DevBuf, Gpu};
use super::harness::{check_and_time, to_outcome, Ctx, Res};
use super::plan::Item;
use super::reference::rel_error_f32;
use super::results::{Outcome, Timing};

/// Where one item's wall time went, in seconds: all of it, its checks, its timed runs (the rest
/// is set-up: inputs, references, compiling).
#[derive(Debug, Clone, Copy, Default)]
pub struct ItemTime {
    pub total: f64,
    pub check: f64,
    pub timed: f64,
}

/// Run one family's items, reporting each outcome and where its time went through `done` as
/// soon as it is known.
pub fn run(ctx: &mut Ctx, family: &str, items: &[Item], done: &mut dyn FnMut(&Item, Outcome, ItemTime)) {
    let f: fn(&mut Ctx, &Item) -> Res<Timing> = match family {
        "bandwidth" => bandwidth::measure,
        "transpose" => transpose::measure,
        "reduction" => reduction::measure,
        "softmax" => softmax::measure,
        "rmsnorm" => rmsnorm::measure,
        "gemv" => gemv::measure,
        "sgemm" => sgemm::measure,
        "tc_gemm" => tc_gemm::measure,
        "attention" => attention::measure,
        "decode_attention" => decode_attention::measure,
        "quant_gemv" => quant_gemv::measure,
        "ssm_scan" => ssm_scan::measure,
        // The shard shapes run the tensor-core GEMM family's own kernels and checks.
        "tp_gemm" => tc_gemm::measure,
        _ => return,
    };
    for item in items {
        let started = std::time::Instant::now();
        super::harness::take_phase_times();
        let out = to_outcome(f(ctx, item));
        let (check, timed) = super::harness::take_phase_times();
        let total = started.elapsed().as_secs_f64();
        done(item, out, ItemTime { total, check, timed });
    }
    ctx.clear_shared();
}

/// Blocks of `threads` for `work` units (rounded up), as u64 for `Launch::linear`.
pub(crate) fn blocks(work: u64, threads: u64) -> u64 {
    work.div_ceil(threads)
}

/// A fresh random `f32` input of `n` elements in [lo, hi) (seeded), on the host and uploaded: the
/// first lines of nearly every family's set-up.
pub(crate) fn random_input(gpu: &Gpu, n: usize, seed: u64, lo: f32, hi: f32) -> Res<(Vec<f32>, DevBuf)> {
    let host = super::reference::random_vec(n, seed, lo, hi);
    let dev = gpu.alloc_f32(n)?;
    gpu.upload_f32(&dev, &host)?;
    Ok((host, dev))
}

/// A shape's f32 input, on the host and on the device, shared by the shape's variants (see
/// `Ctx::shared`; the slot names the family's input, the key is the item's parameters).
pub(crate) struct SharedInput {
    pub host: Vec<f32>,
    pub dev: DevBuf,
}

pub(crate) fn shared_input(
    ctx: &mut Ctx,
    slot: &'static str,
    item: &Item,
    n: usize,
    (lo, hi): (f32, f32),
) -> Res<std::rc::Rc<SharedInput>> {
    ctx.shared(slot, &format!("{:?}", item.params), |gpu, seed| {
        let (host, dev) = random_input(gpu, n, seed, lo, hi)?;
        Ok(SharedInput { host, dev })
    })
}

/// The device-memcpy baseline of a memory-bound family: copy the input `src` (whose host copy is
/// `host`) into a fresh buffer, checked to be exact and timed like any variant.
pub(crate) fn memcpy_baseline(gpu: &Gpu, item: &Item, src: &DevBuf, host: &[f32]) -> Res<Timing> {
    let out = gpu.alloc_f32(host.len())?;
    check_and_time(
        gpu,
        item,
        0.0,
        &[&out],
        &mut || gpu.memcpy_dtod(&out, src, host.len() * 4),
        &mut || Ok(rel_error_f32(&gpu.download_f32(&out, host.len())?, host)),
    )
}

/// The memcpy baseline of a family whose main input is `bytes` of another type (BF16 or
/// quantized): fresh random floats of the same byte count, copied by [`memcpy_baseline`].
pub(crate) fn memcpy_baseline_bytes(gpu: &Gpu, item: &Item, bytes: usize, seed: u64) -> Res<Timing> {
    let host = super::reference::random_vec(bytes / 4, seed, -1.0, 1.0);
    let src = gpu.alloc_f32(host.len())?;
    gpu.upload_f32(&src, &host)?;
    memcpy_baseline(gpu, item, &src, &host)
}
