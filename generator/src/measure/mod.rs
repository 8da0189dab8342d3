//! Stage 3, measure: make sure every figure the book asks for has numbers behind it.
//!
//! Results are committed per device under `kernels/results/`; with a GPU present the harness
//! measures what is missing (by cache key) and merges it in, without one the shipped results are
//! used and every figure says so.
//!
//! Layout: `plan` (what to measure, how much work it is), `cache` (keys), `store` (files,
//! merging, picking the best record), `reference` (CPU f64 references, inputs, error measure),
//! `nvrtc_log` (compile errors as file:line) and `device` are plain CPU code and are tested
//! without a GPU. `gpu` is the only module that touches cudarc; `harness` and `families` use it
//! through plain types.

pub mod cache;
pub mod device;
mod families;
mod gpu;
mod harness;
pub mod labs;
pub mod nvrtc_log;
pub mod plan;
mod plan_infer;
mod plan_rows;
pub mod quant;
pub mod reference;
pub mod report;
pub mod results;
pub mod store;

pub use harness::rep_count;
pub use store::{baseline_ok, best_ok, metric, metric_unit, uses_flops};

use anyhow::{anyhow, bail, Result};
use results::{DeviceInfo, Outcome, Provenance, Record, ResultsFile, SCHEMA_VERSION};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `measure` should do.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// Repository root (kernels/ lives under it).
    pub root: PathBuf,
    /// Families to consider; empty = all families.
    pub families: Vec<String>,
    /// Re-measure even when the cache key matches.
    pub force: bool,
    /// Error if any variant failed (deliberate skips excepted).
    pub strict: bool,
    /// Show a progress bar.
    pub progress: bool,
    /// false = never touch the GPU (tests, --no-gpu).
    pub use_gpu: bool,
    /// Which labs to run (they also need a GPU and their frameworks).
    pub labs: LabSelection,
}

/// Which labs a measure stage considers.
#[derive(Debug, Clone, PartialEq)]
pub enum LabSelection {
    None,
    All,
    /// Labs whose id or family is listed.
    Only(Vec<String>),
}

impl LabSelection {
    fn picks(&self, lab: &labs::manifest::Lab) -> bool {
        match self {
            LabSelection::None => false,
            LabSelection::All => true,
            LabSelection::Only(v) => v.iter().any(|s| *s == lab.id || *s == lab.family),
        }
    }
}

/// What `measure` produced.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Every results file available, after merging, sorted by path.
    pub files: Vec<(PathBuf, results::ResultsFile)>,
    /// Name of the GPU measured on in this run, if any.
    pub local_device: Option<String>,
    /// Human-readable lines for the build log.
    pub notes: Vec<String>,
}

/// The benchmark families, in run order.
pub fn families() -> &'static [&'static str] {
    plan::FAMILIES
}

/// The kernel sources compiled into the binary.
const KERNEL_SOURCES: &[(&str, &str)] = &[
    ("bandwidth.cu", include_str!("../../../kernels/bandwidth.cu")),
    ("transpose.cu", include_str!("../../../kernels/transpose.cu")),
    ("reduction.cu", include_str!("../../../kernels/reduction.cu")),
    ("softmax.cu", include_str!("../../../kernels/softmax.cu")),
    ("rmsnorm.cu", include_str!("../../../kernels/rmsnorm.cu")),
    ("gemv.cu", include_str!("../../../kernels/gemv.cu")),
    ("sgemm.cu", include_str!("../../../kernels/sgemm.cu")),
    ("sgemm_tuned.cu", include_str!("../../../kernels/sgemm_tuned.cu")),
    ("tc_gemm.cu", include_str!("../../../kernels/tc_gemm.cu")),
    ("attention.cu", include_str!("../../../kernels/attention.cu")),
    (
        "attention_hopper.cu",
        include_str!("../../../kernels/attention_hopper.cu"),
    ),
    (
        "decode_attention.cu",
        include_str!("../../../kernels/decode_attention.cu"),
    ),
    (
        "decode_attention_v2.cu",
        include_str!("../../../kernels/decode_attention_v2.cu"),
    ),
    ("quant_gemv.cu", include_str!("../../../kernels/quant_gemv.cu")),
    (
        "quant_gemv_mma.cu",
        include_str!("../../../kernels/quant_gemv_mma.cu"),
    ),
    ("ssm_scan.cu", include_str!("../../../kernels/ssm_scan.cu")),
];

/// An embedded kernels/*.cu file by name, e.g. "sgemm.cu".
pub fn kernel_source(file: &str) -> Option<&'static str> {
    KERNEL_SOURCES.iter().find(|(f, _)| *f == file).map(|(_, s)| *s)
}

/// Names of all embedded kernel files.
pub fn kernel_files() -> impl Iterator<Item = &'static str> {
    KERNEL_SOURCES.iter().map(|(f, _)| *f)
}

/// Compile a kernel source with NVRTC for `arch` without a GPU (a syntax and type check of the
/// kernels on machines that have NVRTC but no device). `None` when NVRTC is not installed;
/// otherwise the errors as `file:line: error: ...` lines.
pub fn nvrtc_check(file: &str, source: &str, arch: &str) -> Option<Result<(), String>> {
    gpu::nvrtc_compile_only(file, source, arch)
        .map(|r| r.map_err(|log| nvrtc_log::describe_failure(file, &log)))
}

/// Where the results files live.
pub fn results_dir(root: &Path) -> PathBuf {
    root.join("kernels").join("results")
}

/// The cache key of one plan item on one device.
pub fn item_key(item: &plan::Item, device: &DeviceInfo, extra: &str) -> (String, String) {
    let source_hash = item
        .source_file
        .and_then(kernel_source)
        .map(cache::source_hash)
        .unwrap_or_default();
    let key = cache::cache_key(&cache::KeyInput {
        family: item.family,
        variant: item.variant,
        source_hash: &source_hash,
        params: &item.params,
        device,
        extra,
    });
    (key, source_hash)
}

/// Whether an existing record with this key can stand in for a new measurement. A launch
/// failure may be transient (driver hiccup, out of memory), so it is retried.
fn reusable(r: &Record) -> bool {
    !matches!(
        r.outcome,
        Outcome::Failed {
            stage: results::FailStage::Launch,
            ..
        }
    )
}

/// Which items to measure: those without a reusable record (all with `force`), plus every
/// baseline whose parameters a re-measured variant shares, so that every "% of baseline" compares
/// numbers taken in the same run. Input: (item, key, source hash, has a reusable record).
/// Returns the items to measure and how many were served from the cache.
#[allow(clippy::type_complexity)]
pub fn select_todo(
    items: Vec<(plan::Item, String, String, bool)>,
    force: bool,
) -> (Vec<(plan::Item, String, String)>, usize) {
    let stale: Vec<_> = items
        .iter()
        .filter(|(i, .., hit)| !i.baseline && !hit)
        .map(|(i, ..)| i.params.clone())
        .collect();
    let mut todo = Vec::new();
    let mut cached = 0;
    for (item, key, hash, hit) in items {
        let rerun_baseline = item.baseline && stale.contains(&item.params);
        if hit && !force && !rerun_baseline {
            cached += 1;
        } else {
            todo.push((item, key, hash));
        }
    }
    (todo, cached)
}

/// Run the measure stage.
pub fn measure(opts: &MeasureOptions) -> Result<Measured> {
    let dir = results_dir(&opts.root);
    let mut files = store::load_dir(&dir)?;
    let mut notes = Vec::new();

    let selected: Vec<&'static str> = if opts.families.is_empty() {
        if matches!(opts.labs, LabSelection::Only(_)) {
            Vec::new()
        } else {
            plan::FAMILIES.to_vec()
        }
    } else {
        let mut v = Vec::new();
        for f in &opts.families {
            match plan::FAMILIES.iter().find(|k| **k == f.as_str()) {
                Some(k) => v.push(*k),
                None if matches!(opts.labs, LabSelection::Only(_)) => {}
                None => bail!(
                    "unknown benchmark family `{f}` (known: {})",
                    plan::FAMILIES.join(", ")
                ),
            }
        }
        v
    };

    if !opts.use_gpu {
        notes.push("GPU not used (disabled): using shipped results".to_string());
        return Ok(Measured {
            files,
            local_device: None,
            notes,
        });
    }
    let opened = std::panic::catch_unwind(gpu::Gpu::open)
        .unwrap_or_else(|_| Err(anyhow!("GPU initialisation panicked")));
    let gpu = match opened {
        Ok(Some(g)) => g,
        Ok(None) => {
            notes.push("no GPU found: using shipped results".to_string());
            return Ok(Measured {
                files,
                local_device: None,
                notes,
            });
        }
        Err(e) => {
            notes.push(format!("GPU present but unusable ({e:#}): using shipped results"));
            return Ok(Measured {
                files,
                local_device: None,
                notes,
            });
        }
    };
    let device = gpu.info().clone();
    let path = dir.join(format!("{}.json", device::slug(&device.name)));
    let mut file = files
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, f)| f.clone())
        .unwrap_or_else(|| ResultsFile {
            schema: SCHEMA_VERSION,
            device: device.clone(),
            records: Vec::new(),
        });
    file.device = device.clone();

    // Which items need measuring.
    let cublas = gpu
        .cublas_version()
        .map(|v| format!("cublas={v}"))
        .unwrap_or_default();
    let mut todo: Vec<(plan::Item, String, String)> = Vec::new();
    let mut cached = 0usize;
    for fam in &selected {
        // (item, key, hash, has a reusable record)
        let items: Vec<(plan::Item, String, String, bool)> = plan::items(fam)
            .into_iter()
            .map(|item| {
                let extra = if plan::uses_cublas(&item) {
                    cublas.as_str()
                } else {
                    ""
                };
                let (key, hash) = item_key(&item, &device, extra);
                let hit = file
                    .records
                    .iter()
                    .any(|r| r.key == key && store::same_slot_item(r, &item) && reusable(r));
                (item, key, hash, hit)
            })
            .collect();
        let (t, c) = select_todo(items, opts.force);
        todo.extend(t);
        cached += c;
    }

    let provenance = Provenance {
        generator_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: git_commit(&opts.root),
        date: now_rfc3339(),
        frameworks: Default::default(),
    };
    let base_seed = std::env::var("HDLC_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });

    // Labs: planned before the bar is made, so it counts them.
    let (lab_plan, labs_cached) = plan_labs(opts, &device, &file, &mut notes);
    cached += labs_cached;

    let started = Instant::now();
    let mut new_records: Vec<Record> = Vec::new();
    if !todo.is_empty() || !lab_plan.is_empty() {
        notes.push(format!(
            "measuring {} item(s) and {} lab(s) on {} (CC {}, driver {}, CUDA {}, NVRTC {}{}); input seed {base_seed}; L2 flush: {}",
            todo.len(),
            lab_plan.len(),
            device.name,
            device.compute_capability,
            device.driver_version,
            device.cuda_version,
            device.nvrtc_version,
            gpu.cublas_version()
                .map(|v| format!(", cuBLAS {v}"))
                .unwrap_or_default(),
            gpu.flush_method()
        ));
        let bar = if opts.progress {
            let b = indicatif::ProgressBar::new((todo.len() + lab_plan.len()) as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            {
                b.set_style(style.progress_chars("=> "));
            }
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        let mut ctx = harness::Ctx::new(&gpu, base_seed);
        // Every kernel file the items use (each item names its file) starts compiling now, in
        // parallel and beside the first families; a file only some family's code names is
        // compiled when asked.
        ctx.precompile(
            todo.iter()
                .filter(|(i, _, _)| i.skip.is_none())
                .filter_map(|(i, _, _)| i.source_file),
        );
        let mut family_times: Vec<String> = Vec::new();
        // HDLC_BENCH_TRACE=1: one line per item with where its wall time went.
        let trace = std::env::var_os("HDLC_BENCH_TRACE").is_some_and(|v| v != "0");
        for fam in &selected {
            let batch: Vec<&(plan::Item, String, String)> =
                todo.iter().filter(|(i, _, _)| i.family == *fam).collect();
            if batch.is_empty() {
                continue;
            }
            let family_started = Instant::now();
            let mut item_secs: Vec<(String, f64)> = Vec::new();
            let mut phases = (0.0, 0.0);
            let mut outcomes: Vec<(plan::Item, Outcome)> = Vec::new();
            let (skipped, runnable): (Vec<_>, Vec<_>) = batch
                .iter()
                .map(|(i, _, _)| i.clone())
                .partition(|i| i.skip.is_some());
            for i in skipped {
                let reason = i.skip.unwrap_or("skipped").to_string();
                outcomes.push((
                    i,
                    Outcome::Failed {
                        stage: results::FailStage::Unsupported,
                        error: reason,
                    },
                ));
                bar.inc(1);
            }
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                families::run(&mut ctx, fam, &runnable, &mut |item, outcome, t| {
                    bar.set_message(item.describe());
                    bar.inc(1);
                    if trace {
                        let (d, c, tm) = (item.describe(), t.check, t.timed);
                        bar.suspend(|| {
                            eprintln!("item {d}: {:.2} s (checks {c:.2} s, timed {tm:.2} s)", t.total)
                        });
                    }
                    phases.0 += t.check;
                    phases.1 += t.timed;
                    item_secs.push((item.describe(), t.total));
                    outcomes.push((item.clone(), outcome));
                });
            }));
            if run.is_err() {
                for i in &runnable {
                    if !outcomes.iter().any(|(o, _)| o == i) {
                        outcomes.push((
                            i.clone(),
                            Outcome::Failed {
                                stage: results::FailStage::Launch,
                                error: "harness panicked".into(),
                            },
                        ));
                    }
                }
            }
            // Where the suite's wall time goes, for the log (the 90-second budget is per suite).
            let line = report::family_time_line(
                fam,
                outcomes.len(),
                family_started.elapsed().as_secs_f64(),
                phases,
                &mut item_secs,
            );
            // Printed as it happens too, so a run stopped by a time-out still says where it was.
            bar.suspend(|| eprintln!("family {line}"));
            family_times.push(line);
            for (item, outcome) in outcomes {
                let (key, hash) = batch
                    .iter()
                    .find(|(i, _, _)| *i == item)
                    .map(|(_, k, h)| (k.clone(), h.clone()))
                    .unwrap_or_default();
                match &outcome {
                    Outcome::Failed {
                        stage: results::FailStage::Unsupported,
                        error,
                    } => notes.push(format!("{}: not measured ({error})", item.describe())),
                    Outcome::Failed { stage, error } => {
                        notes.push(format!("{}: {stage:?} failed: {error}", item.describe()))
                    }
                    Outcome::Ok(_) => {}
                }
                new_records.push(Record {
                    family: item.family.to_string(),
                    variant: item.variant.to_string(),
                    label: item.label.to_string(),
                    rung: item.rung,
                    baseline: item.baseline,
                    params: item.params.clone(),
                    key,
                    source_hash: hash,
                    source_file: item.source_file.map(str::to_string),
                    outcome,
                    provenance: provenance.clone(),
                });
            }
        }
        notes.append(&mut ctx.notes);
        if !family_times.is_empty() {
            notes.push(format!("wall time per family: {}", family_times.join("; ")));
        }
        let mut measured = new_records.len();
        store::merge(&mut file, new_records);
        let planned: Vec<plan::Item> = selected.iter().flat_map(|f| plan::items(f)).collect();
        let pruned = store::prune_unplanned(&mut file, &selected, &planned);
        if pruned > 0 {
            notes.push(format!(
                "dropped {pruned} record(s) of shapes or variants no longer planned"
            ));
        }
        if !lab_plan.is_empty() {
            // Kernels are done: keep their results before the (slower) labs start.
            store::save_atomic(&path, &file)?;
        }
        let mut save_failed: Option<String> = None;
        let mut saved = |f: &ResultsFile| {
            if let Err(e) = store::save_atomic(&path, f) {
                save_failed = Some(e.to_string());
            }
        };
        measured += labs::run_planned(
            &opts.root,
            &lab_plan,
            &mut file,
            &provenance,
            base_seed,
            &bar,
            &mut notes,
            &mut saved,
        );
        if let Some(e) = save_failed {
            notes.push(format!("could not save after a lab: {e}"));
        }
        bar.finish_and_clear();
        store::save_atomic(&path, &file)?;
        notes.push(format!(
            "measured {measured} item(s) in {:.1} s, {cached} cached; wrote {}",
            started.elapsed().as_secs_f64(),
            path.display()
        ));
    } else {
        notes.push(format!(
            "all {cached} item(s) cached for {}; nothing to measure",
            device.name
        ));
    }

    // Replace or add the device's file in the list.
    if let Some(slot) = files.iter_mut().find(|(p, _)| *p == path) {
        slot.1 = file.clone();
    } else if !file.records.is_empty() {
        files.push((path.clone(), file.clone()));
        files.sort_by(|a, b| a.0.cmp(&b.0));
    }

    if opts.strict {
        let failed: Vec<String> = file
            .records
            .iter()
            .filter(|r| {
                (selected.contains(&r.family.as_str()) || lab_plan.iter().any(|p| p.lab.family == r.family))
                    && store::is_real_failure(r)
            })
            .map(|r| format!("{}/{}", r.family, r.variant))
            .collect();
        if !failed.is_empty() {
            bail!(
                "{} variant(s) failed on {} (--strict): {}",
                failed.len(),
                device.name,
                failed.join(", ")
            );
        }
    }
    Ok(Measured {
        files,
        local_device: Some(device.name.clone()),
        notes,
    })
}

/// The labs this measure stage runs: selected, runnable with this Python and not cached.
fn plan_labs(
    opts: &MeasureOptions,
    device: &DeviceInfo,
    file: &ResultsFile,
    notes: &mut Vec<String>,
) -> (Vec<labs::Planned>, usize) {
    if opts.labs == LabSelection::None {
        return (Vec::new(), 0);
    }
    let mut diags = crate::diag::Diagnostics::new();
    let all = labs::load_manifests(&opts.root, plan::FAMILIES, &mut diags);
    for d in diags.iter() {
        notes.push(d.to_string());
    }
    let chosen: Vec<labs::manifest::Lab> = all.into_iter().filter(|l| opts.labs.picks(l)).collect();
    if let LabSelection::Only(names) = &opts.labs {
        for n in names {
            if !chosen.iter().any(|l| &l.id == n || &l.family == n) && !plan::FAMILIES.contains(&n.as_str()) {
                notes.push(format!("no lab or family named `{n}`"));
            }
        }
    }
    if chosen.is_empty() {
        return (Vec::new(), 0);
    }
    let py = labs::python();
    match labs::probe::run(&opts.root, &py) {
        Ok(env) => labs::plan(&opts.root, &chosen, &env, device, file, opts.force, notes),
        Err(e) => {
            notes.push(format!(
                "labs not run: {py} is not usable ({e}); shipped results used (set HDLC_PYTHON to choose an interpreter)"
            ));
            (Vec::new(), 0)
        }
    }
}

/// The commit the numbers were measured at: $HDLC_GIT_COMMIT, else `git rev-parse`, else
/// "unknown".
pub fn git_commit(root: &Path) -> String {
    if let Ok(c) = std::env::var("HDLC_GIT_COMMIT") {
        if !c.trim().is_empty() {
            return c.trim().to_string();
        }
    }
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The current time as RFC 3339 UTC, for provenance.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".to_string())
}
