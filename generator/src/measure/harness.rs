//! The part of the harness shared by every family: compiling kernel files once, turning errors
//! into failed records, and the check-then-time protocol.
//!
//! Protocol for one variant: poison the outputs with NaN, run once, compare with the reference
//! (‖out − ref‖ / ‖ref‖ within tolerance, NaN never passes); only then warm up, estimate one
//! run's time, and time enough repetitions with CUDA events, the L2 flushed before each. A
//! variant that fails its check is recorded as failed and never timed.

use super::gpu::{DevBuf, Gpu, Kernel, Module, PendingCompile};
use super::kernels::KernelFile;
use super::plan::Item;
use super::reference;
use super::results::{FailStage, Outcome, Timing};
use std::any::Any;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Wall time spent in checks (poison, check run, reference comparison) and in timed runs (the
/// estimate and the repetitions, flushes included), in nanoseconds since the last
/// [`take_phase_times`]: with an item's total wall time they say how much went to setting up
/// inputs, which the suite's time budget cares about.
static CHECK_NS: AtomicU64 = AtomicU64::new(0);
static TIMED_NS: AtomicU64 = AtomicU64::new(0);

/// Seconds spent checking and timing since the last call, and reset both.
pub fn take_phase_times() -> (f64, f64) {
    let c = CHECK_NS.swap(0, Ordering::Relaxed) as f64 * 1e-9;
    let t = TIMED_NS.swap(0, Ordering::Relaxed) as f64 * 1e-9;
    (c, t)
}

fn add_since(counter: &AtomicU64, since: Instant) {
    counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// A failure at a stage, before it becomes an `Outcome::Failed`.
#[derive(Debug)]
pub struct Fail {
    pub stage: FailStage,
    pub error: String,
}

impl Fail {
    pub fn new(stage: FailStage, error: impl Into<String>) -> Fail {
        Fail {
            stage,
            error: error.into(),
        }
    }
}

/// Driver errors (allocation, copy, launch, sync) are launch-stage failures.
impl From<anyhow::Error> for Fail {
    fn from(e: anyhow::Error) -> Fail {
        Fail::new(FailStage::Launch, format!("{e:#}"))
    }
}

pub type Res<T> = Result<T, Fail>;

pub fn to_outcome(r: Res<Timing>) -> Outcome {
    match r {
        Ok(t) => Outcome::Ok(t),
        Err(f) => Outcome::Failed {
            stage: f.stage,
            error: f.error,
        },
    }
}

/// Timed-repetition policy: a time budget per item, so the whole suite stays short (issue 17
/// asked for `bench --force` in 90 s) while cheap kernels still get many samples.
///
/// At least [`BUDGET_MS`] of timed runs; at least 10 runs when 10 cost at most 100 ms, else at
/// least 5 when 5 cost at most 200 ms, else at least 3 (a kernel that slow is long enough for one
/// event pair to be exact, and its runs differ by far less than 1%); at most 200.
pub fn rep_count(estimate_ms: f64) -> usize {
    if !estimate_ms.is_finite() || estimate_ms <= 0.0 {
        return 10;
    }
    let for_time = (BUDGET_MS / estimate_ms).ceil() as usize;
    let floor = if 10.0 * estimate_ms <= 100.0 {
        10
    } else if 5.0 * estimate_ms <= 200.0 {
        5
    } else {
        3
    };
    for_time.clamp(floor, 200)
}

/// Timed milliseconds wanted per item (see [`rep_count`]).
pub const BUDGET_MS: f64 = 40.0;

/// Per-run state: the device, compiled modules, the input seed, inputs shared by the variants
/// of one shape, and notes for the build log.
pub struct Ctx<'g> {
    pub gpu: &'g Gpu,
    modules: HashMap<String, Result<Module, String>>,
    kernels_noted: std::collections::HashSet<String>,
    pub base_seed: u64,
    pub notes: Vec<String>,
    /// Kernel files compiling on their own threads (see [`Ctx::precompile`]).
    pending: HashMap<String, PendingCompile>,
    /// slot → (key, value): see [`Ctx::shared`].
    shared: HashMap<&'static str, (String, Rc<dyn Any>)>,
    /// The kernel files items may name (every family's sources).
    sources: Vec<&'static KernelFile>,
}

impl<'g> Ctx<'g> {
    pub fn new(gpu: &'g Gpu, base_seed: u64, sources: Vec<&'static KernelFile>) -> Ctx<'g> {
        Ctx {
            gpu,
            modules: HashMap::new(),
            kernels_noted: Default::default(),
            base_seed,
            notes: Vec::new(),
            shared: HashMap::new(),
            pending: HashMap::new(),
            sources,
        }
    }

    /// A kernel file by its path under `kernels/`.
    fn source(&self, path: &str) -> Option<&'static KernelFile> {
        self.sources.iter().copied().find(|k| k.path == path)
    }

    /// Large inputs shared by the variants of one shape (a 1 GiB KV cache, a 470 MB weight and
    /// its quantized forms): made by `make(gpu, seed)` the first time `key` is asked of `slot`,
    /// then handed out again until another key replaces it (the old value is freed first, so a
    /// slot holds one shape at a time). The seed comes from the run's base seed and the key, so
    /// every run still draws fresh inputs, and the variants of a shape are compared on the same
    /// ones; the small per-variant inputs (a query, a batch of activations) stay per item.
    /// Why: generating, quantizing and uploading these once per variant was most of the suite's
    /// wall time. Cleared after each family.
    pub fn shared<T: 'static>(
        &mut self,
        slot: &'static str,
        key: &str,
        make: impl FnOnce(&'g Gpu, u64) -> Res<T>,
    ) -> Res<Rc<T>> {
        if let Some(v) = self.get_shared::<T>(slot, key) {
            return Ok(v);
        }
        self.shared.remove(slot);
        let seed = reference::seed_for(self.base_seed, &format!("{slot}:{key}"));
        let v = make(self.gpu, seed)?;
        Ok(self.put_shared(slot, key, v))
    }

    /// The value `slot` holds for `key`, if any (for values whose making needs `self`).
    pub fn get_shared<T: 'static>(&self, slot: &'static str, key: &str) -> Option<Rc<T>> {
        let (k, v) = self.shared.get(slot)?;
        if k == key {
            v.clone().downcast::<T>().ok()
        } else {
            None
        }
    }

    /// Store `value` for `key` in `slot`, replacing what it held.
    pub fn put_shared<T: 'static>(&mut self, slot: &'static str, key: &str, value: T) -> Rc<T> {
        self.shared.remove(slot);
        let v = Rc::new(value);
        self.shared
            .insert(slot, (key.to_string(), v.clone() as Rc<dyn Any>));
        v
    }

    /// Free every shared input (end of a family).
    pub fn clear_shared(&mut self) {
        self.shared.clear();
    }

    /// Start compiling the kernel files the coming items need, each on its own thread (see
    /// `Gpu::compile_in_background`); `kernel` waits for a file's thread when first asked for it.
    pub fn precompile(&mut self, files: impl IntoIterator<Item = &'static str>) {
        for f in files {
            if self.modules.contains_key(f) || self.pending.contains_key(f) {
                continue;
            }
            if let Some(k) = self.source(f) {
                let job = self.gpu.compile_in_background(k.path, k.text, k.arch_specific);
                self.pending.insert(f.to_string(), job);
            }
        }
    }

    /// A kernel from a kernels/*.cu file; compile failures become `FailStage::Compile` with the
    /// file and line of each error.
    pub fn kernel(&mut self, file: &str, name: &str) -> Res<Kernel> {
        if let Some(job) = self.pending.remove(file) {
            let compiled = self
                .gpu
                .finish_compile(job)
                .map_err(|f| super::nvrtc_log::describe_failure(file, &f.log));
            self.modules.insert(file.to_string(), compiled);
        }
        if !self.modules.contains_key(file) {
            let compiled = match self.source(file) {
                None => Err(format!("{file}: no such kernel file is embedded")),
                Some(k) => self
                    .gpu
                    .compile(file, k.text, k.arch_specific)
                    .map_err(|f| super::nvrtc_log::describe_failure(file, &f.log)),
            };
            self.modules.insert(file.to_string(), compiled);
        }
        let module = match &self.modules[file] {
            Ok(m) => m,
            Err(e) => return Err(Fail::new(FailStage::Compile, e.clone())),
        };
        let k = self
            .gpu
            .kernel(module, name)
            .map_err(|e| Fail::new(FailStage::Compile, format!("{e:#}")))?;
        if self.kernels_noted.insert(format!("{file}:{name}")) {
            let spill = if k.local_bytes > 0 {
                " (local memory: spills or a stack array!)"
            } else {
                ""
            };
            self.notes.push(format!(
                "kernel {file}:{name}: {} registers, {} B static shared, {} B local{spill}",
                k.registers, k.static_smem_bytes, k.local_bytes
            ));
        }
        Ok(k)
    }

    /// Seed for the fresh inputs of one item.
    /// The kernel of a variant item, `None` for a baseline (a library call, not one of our kernels).
    pub fn variant_kernel(&mut self, file: &str, item: &Item) -> Res<Option<Kernel>> {
        if item.baseline {
            Ok(None)
        } else {
            self.kernel(file, item.variant).map(Some)
        }
    }

    pub fn seed(&self, item: &Item) -> u64 {
        reference::seed_for(self.base_seed, &item.describe())
    }
}

/// Turn a relative error into a verification verdict.
pub fn verify(rel: f64, tol: f64) -> Res<()> {
    if reference::passes(rel, tol) {
        Ok(())
    } else if !rel.is_finite() {
        Err(Fail::new(
            FailStage::Verify,
            "output has NaN/Inf (unwritten or overflowed elements)",
        ))
    } else {
        Err(Fail::new(
            FailStage::Verify,
            format!("relative error {rel:.3e} exceeds tolerance {tol:.0e}"),
        ))
    }
}

/// Check one variant, then time it.
///
/// `poison`: outputs filled with NaN before the check run. `run`: enqueue one complete run
/// (all passes). `check`: after the check run, return ‖out − ref‖ / ‖ref‖.
pub fn check_and_time(
    gpu: &Gpu,
    tol: f64,
    poison: &[&DevBuf],
    run: &mut dyn FnMut() -> anyhow::Result<()>,
    check: &mut dyn FnMut() -> anyhow::Result<f64>,
) -> Res<Timing> {
    let checking = Instant::now();
    for b in poison {
        gpu.fill_nan(b)?;
    }
    run()?;
    gpu.sync()?;
    let rel = check()?;
    add_since(&CHECK_NS, checking);
    verify(rel, tol)?;
    let timing = Instant::now();
    // The check run paid the one-time costs (module load, TLB); one flushed, timed run then warms
    // the clocks and sizes the repetitions. Its sample is not kept, unless it alone exceeds the
    // budget (below).
    let estimate = gpu.time_runs(1, run)?;
    let reps = rep_count(estimate[0]);
    // A run longer than the whole budget is its own warm-up (the check run before it was just
    // as long), so its sample counts as the first of the few it gets.
    let samples = if estimate[0] >= BUDGET_MS {
        let mut s = estimate;
        s.extend(gpu.time_runs(reps.saturating_sub(1), run)?);
        s
    } else {
        gpu.time_runs(reps, run)?
    };
    add_since(&TIMED_NS, timing);
    timing_from(rel, tol, &samples)
}

/// Build a Timing from samples (ms per run). Its FLOPs and bytes are the family's counts, set
/// by `families::run` for every variant alike.
pub fn timing_from(rel: f64, tol: f64, samples: &[f64]) -> Res<Timing> {
    let (median, p10, p90) = reference::percentiles(samples);
    if !(median.is_finite() && median > 0.0) {
        return Err(Fail::new(FailStage::Launch, "timing produced no valid samples"));
    }
    Ok(Timing {
        rel_error: rel,
        tolerance: tol,
        reps: samples.len() as u32,
        median_ms: median,
        p10_ms: p10,
        p90_ms: p90,
        workspace_bytes: None,
        ..Default::default()
    })
}
