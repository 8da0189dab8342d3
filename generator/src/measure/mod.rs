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
mod prof;
pub mod quant;
pub mod reference;
pub mod report;
pub mod results;
mod run;
pub mod store;

pub use cache::{item_key, select_todo};
pub use harness::rep_count;
pub use store::{baseline_ok, best_ok, metric, metric_unit, uses_flops};

use anyhow::{anyhow, bail, Result};
use results::{Provenance, ResultsFile, SCHEMA_VERSION};
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
    ("sgemm_ring.cu", include_str!("../../../kernels/sgemm_ring.cu")),
    ("tc_gemm.cu", include_str!("../../../kernels/tc_gemm.cu")),
    (
        "tc_gemm_persistent.cu",
        include_str!("../../../kernels/tc_gemm_persistent.cu"),
    ),
    (
        "tc_gemm_streamk.cu",
        include_str!("../../../kernels/tc_gemm_streamk.cu"),
    ),
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

/// Headers the kernel files may `#include "name"`: handed to NVRTC with every program (it has
/// no file system to search) and folded into the source hash of each file that includes one.
const KERNEL_HEADERS: &[(&str, &str)] = &[
    (
        "hopper_sync.cuh",
        include_str!("../../../kernels/hopper_sync.cuh"),
    ),
    (
        "attention_common.cuh",
        include_str!("../../../kernels/attention_common.cuh"),
    ),
    (
        "persistent_gemm.cuh",
        include_str!("../../../kernels/persistent_gemm.cuh"),
    ),
    (
        "cluster_sync.cuh",
        include_str!("../../../kernels/cluster_sync.cuh"),
    ),
    ("wgmma_gemm.cuh", include_str!("../../../kernels/wgmma_gemm.cuh")),
];

/// The embedded headers as (name, source).
pub fn kernel_headers() -> &'static [(&'static str, &'static str)] {
    KERNEL_HEADERS
}

/// The headers `source` includes (`#include "name"` lines naming an embedded header).
pub fn included_headers(source: &str) -> impl Iterator<Item = &'static (&'static str, &'static str)> + '_ {
    KERNEL_HEADERS.iter().filter(move |(name, _)| {
        source
            .lines()
            .any(|l| l.trim_start().starts_with("#include") && l.contains(&format!("\"{name}\"")))
    })
}

/// The source hash of a kernel file: its text and that of every header it includes, so editing
/// a shared header re-measures every kernel built from it.
pub fn kernel_hash(file: &str) -> Option<String> {
    let src = kernel_source(file)?;
    let mut text = src.to_string();
    for (name, header) in included_headers(src) {
        text.push_str(&format!("\n// header {name}\n{header}"));
    }
    Some(cache::source_hash(&text))
}

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
                    .any(|r| r.key == key && store::same_slot_item(r, &item) && cache::reusable(r));
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
    let (lab_plan, labs_cached) = labs::planned_for(opts, &device, &file, &mut notes);
    cached += labs_cached;

    let started = Instant::now();
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
        let new_records =
            run::kernel_families(&gpu, base_seed, &selected, &todo, &provenance, &bar, &mut notes);
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
