//! The benchmark families, one file each: a family's plan (variants, sizes, skips with their
//! reasons, baseline), its kernel files, its FLOP and byte counts, and its set-up, reference
//! check and timing all live in `families/<name>.rs`, which ends in one [`Family`] value.
//!
//! Why one table: [`FAMILIES`] is the only registration. The run order, `bench --families`,
//! the cache keys, the embedded kernel sources, `check`'s list of benchmarks and the dispatch
//! below all read it, so a new family is a `.cu` file, a `families/<name>.rs` and one line here.
//! Only `measure` (through the `gpu` boundary) touches the GPU; the plan and work halves are
//! plain data that tests read without one.

pub mod attention;
pub mod bandwidth;
pub mod decode_attention;
pub mod gemv;
pub mod lowp_gemm;
mod qgemv_layout;
pub mod quant_gemv;
pub mod reduction;
pub mod rmsnorm;
mod row_sweep;
mod rows;
pub mod sgemm;
pub mod softmax;
pub mod ssm_scan;
pub mod tc_gemm;
pub mod tp_gemm;
pub mod transpose;

use super::gpu::{DevBuf, Gpu};
use super::harness::{check_and_time, to_outcome, Ctx, Res};
use super::kernels::KernelFile;
use super::plan::Item;
use super::reference::rel_error_f32;
use super::results::{Outcome, Timing};

/// One benchmark family: everything the harness and the book need to know about it.
pub struct Family {
    /// The name records, figures (`bench:`) and `bench --families` use.
    pub name: &'static str,
    /// The kernel files its variants compile (a file may belong to several families).
    pub sources: &'static [KernelFile],
    /// Its items in run order: the teaching ladder × sizes, skips with their reasons.
    pub items: fn() -> Vec<Item>,
    /// FLOPs and the fewest bytes one run of an item must move.
    pub work: fn(&Item) -> (f64, f64),
    /// Variants whose number depends on cuBLAS (its version joins their cache key).
    pub cublas: &'static [&'static str],
    /// Set up, check against the reference, and time one item on the GPU.
    pub(crate) measure: fn(&mut Ctx, &Item) -> Res<Timing>,
}

/// Every family, in the order the harness runs them.
pub const FAMILIES: &[&Family] = &[
    &bandwidth::FAMILY,
    &transpose::FAMILY,
    &reduction::FAMILY,
    &softmax::FAMILY,
    &rmsnorm::FAMILY,
    &gemv::FAMILY,
    &sgemm::FAMILY,
    &tc_gemm::FAMILY,
    &lowp_gemm::FAMILY,
    &attention::FAMILY,
    &tp_gemm::FAMILY,
    &decode_attention::FAMILY,
    &quant_gemv::FAMILY,
    &ssm_scan::FAMILY,
];

/// The family names, in run order.
pub fn names() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.name).collect()
}

/// A family by name.
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().copied().find(|f| f.name == name)
}

/// The items of one family (empty for an unknown family).
pub fn items(name: &str) -> Vec<Item> {
    family(name).map(|f| (f.items)()).unwrap_or_default()
}

/// Floating-point operations and the fewest bytes one run of `item` must move.
///
/// Bytes count every input read once and every output written once; a memcpy baseline copies its
/// family's main input (so its bytes are read + write of that size). Each family's file states
/// its conventions (e.g. operations counted per softmax element).
pub fn work(item: &Item) -> (f64, f64) {
    family(item.family).map(|f| (f.work)(item)).unwrap_or((0.0, 0.0))
}

/// Every kernel file of every family, once each, in family order.
pub fn sources() -> Vec<&'static KernelFile> {
    let mut out: Vec<&'static KernelFile> = Vec::new();
    for fam in FAMILIES {
        for f in fam.sources {
            if !out.iter().any(|o| o.path == f.path) {
                out.push(f);
            }
        }
    }
    out
}

/// A kernel file by its path under `kernels/`, e.g. "gemm/sgemm.cu".
pub fn source(path: &str) -> Option<&'static KernelFile> {
    sources().into_iter().find(|f| f.path == path)
}

/// The source hash of a kernel file: its text and that of every header it includes, never its
/// path (see `kernels`).
pub fn kernel_hash(path: &str) -> Option<String> {
    source(path).map(|f| super::kernels::source_hash(&super::kernels::with_headers(f.text)))
}

/// Whether an item's number depends on the cuBLAS library (its version joins the cache key).
pub fn uses_cublas(item: &Item) -> bool {
    family(item.family).is_some_and(|f| f.cublas.contains(&item.variant))
}

/// Where one item's wall time went, in seconds: all of it, its checks, its timed runs (the rest
/// is set-up: inputs, references, compiling).
#[derive(Debug, Clone, Copy, Default)]
pub struct ItemTime {
    pub total: f64,
    pub check: f64,
    pub timed: f64,
}

/// Run one family's items, reporting each outcome and where its time went through `done` as
/// soon as it is known; stop before the next item once `stop` is set.
pub(crate) fn run(
    ctx: &mut Ctx,
    family: &str,
    items: &[Item],
    stop: &std::sync::atomic::AtomicBool,
    done: &mut dyn FnMut(&Item, Outcome, ItemTime),
) {
    let Some(f) = self::family(family) else {
        return;
    };
    for item in items {
        // Ctrl-C: the item in flight finishes, the rest wait for the next run.
        if super::interrupt::requested(stop) {
            break;
        }
        let started = std::time::Instant::now();
        super::harness::take_phase_times();
        // FLOPs and bytes are the family's counts, the same for every variant's record.
        let out = to_outcome((f.measure)(ctx, item).map(|mut t| {
            (t.flops, t.bytes) = (f.work)(item);
            t
        }));
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
pub(crate) fn memcpy_baseline(gpu: &Gpu, src: &DevBuf, host: &[f32]) -> Res<Timing> {
    let out = gpu.alloc_f32(host.len())?;
    check_and_time(
        gpu,
        0.0,
        &[&out],
        &mut || gpu.memcpy_dtod(&out, src, host.len() * 4),
        &mut || Ok(rel_error_f32(&gpu.download_f32(&out, host.len())?, host)),
    )
}

/// The memcpy baseline of a family whose main input is `bytes` of another type (BF16 or
/// quantized): fresh random floats of the same byte count, copied by [`memcpy_baseline`].
pub(crate) fn memcpy_baseline_bytes(gpu: &Gpu, bytes: usize, seed: u64) -> Res<Timing> {
    let host = super::reference::random_vec(bytes / 4, seed, -1.0, 1.0);
    let src = gpu.alloc_f32(host.len())?;
    gpu.upload_f32(&src, &host)?;
    memcpy_baseline(gpu, &src, &host)
}
