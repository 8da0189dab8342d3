//! Stage 3, measure: make sure every figure the book asks for has numbers behind it.
//!
//! Results are committed per device under `kernels/results/`; with a GPU present the harness
//! measures what is missing (by cache key) and merges it in, without one the shipped results are
//! used and every figure says so.
//!
//! Layout: `families` (one file per family: its plan, work counts, set-up, check and timing,
//! registered in one table), `kernels` (the embedded CUDA sources), `plan` (the item type and
//! the ladder helpers), `cache` (keys), `store` (files, merging, picking the best record),
//! `reference` (CPU f64 references, inputs, error measure), `nvrtc_log` (compile errors as
//! file:line) and `device` are plain CPU code and are tested without a GPU; `session` and `run`
//! string a measuring run together. `gpu` is the only module that touches cudarc; `harness`
//! and `families` use it through plain types.

pub mod cache;
pub mod collectives;
pub mod device;
pub mod estimate;
pub mod families;
mod gpu;
mod harness;
pub mod interrupt;
pub mod kernels;
pub mod labs;
pub mod nvrtc_log;
pub mod plan;
mod prof;
pub mod progress;
pub mod quant;
pub mod reference;
pub mod report;
pub mod results;
mod run;
mod session;
pub mod store;

pub use cache::{item_key, select_todo};
pub use families::kernel_hash;
pub use families::{items, uses_cublas, work};
pub use harness::rep_count;
pub use kernels::{included_headers, kernel_headers};
pub use store::{baseline_ok, best_ok, metric, metric_unit, uses_flops};

use anyhow::{anyhow, bail, Result};
use std::path::{Path, PathBuf};

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
    /// Ctrl-C stopped the run: what was measured is saved, the rest waits for the next run.
    pub interrupted: bool,
}

/// The family of the reader's CPU roofline (measured by `cpubench`, not the GPU harness).
pub const CPU_FAMILY: &str = "cpu";

/// The benchmark families, in run order (the names of [`families::FAMILIES`]).
pub fn families() -> Vec<&'static str> {
    families::names()
}

/// An embedded kernel file's text by its path under `kernels/`, e.g. "gemm/sgemm.cu".
pub fn kernel_source(path: &str) -> Option<&'static str> {
    families::source(path).map(|f| f.text)
}

/// The paths of all embedded kernel files, in family order.
pub fn kernel_files() -> Vec<&'static str> {
    families::sources().iter().map(|f| f.path).collect()
}

/// Where the results files live.
pub fn results_dir(root: &Path) -> PathBuf {
    root.join("kernels").join("results")
}

/// Compile a kernel source with NVRTC for `arch` without a GPU (a syntax and type check of the
/// kernels on machines that have NVRTC but no device). `None` when NVRTC is not installed;
/// otherwise the errors as `file:line: error: ...` lines.
pub fn nvrtc_check(file: &str, source: &str, arch: &str) -> Option<Result<(), String>> {
    gpu::nvrtc_compile_only(file, source, arch)
        .map(|r| r.map_err(|log| nvrtc_log::describe_failure(file, &log)))
}

/// Run the measure stage: plan → select what the cache lacks → run kernels and labs → merge →
/// save. Without a usable GPU (or with `use_gpu` off) it returns the shipped results as they are.
pub fn measure(opts: &MeasureOptions) -> Result<Measured> {
    let mut files = store::load_dir(&results_dir(&opts.root))?;
    let mut notes = Vec::new();
    let selected = selected_families(opts)?;
    let Some(gpu) = open_gpu(opts.use_gpu, &mut notes) else {
        return Ok(Measured {
            files,
            local_device: None,
            notes,
            interrupted: false,
        });
    };
    let mut session = session::Session::plan(opts, &gpu, &files, selected, &mut notes)?;
    let interrupted = session.run(opts, &files, interrupt::flag(), &mut notes)?;
    let device = session.file.device.name.clone();
    session.check_strict(opts.strict)?;
    session.replace_in(&mut files);
    Ok(Measured {
        files,
        local_device: Some(device),
        notes,
        interrupted,
    })
}

/// The kernel families this run considers: all of them, or those named in `--families` (none
/// when only labs were asked for).
fn selected_families(opts: &MeasureOptions) -> Result<Vec<&'static str>> {
    let labs_only = matches!(opts.labs, LabSelection::Only(_));
    if opts.families.is_empty() {
        return Ok(if labs_only { Vec::new() } else { families() });
    }
    let mut v = Vec::new();
    for f in &opts.families {
        match families::family(f) {
            Some(fam) => v.push(fam.name),
            None if labs_only => {}
            None => bail!(
                "unknown benchmark family `{f}` (known: {})",
                families().join(", ")
            ),
        }
    }
    Ok(v)
}

/// The GPU, if one is present, usable and allowed; otherwise a note saying why the shipped
/// results are used. `CudaContext::new` panics without libcuda, so opening is guarded.
fn open_gpu(use_gpu: bool, notes: &mut Vec<String>) -> Option<gpu::Gpu> {
    if !use_gpu {
        notes.push("GPU not used (disabled): using shipped results".to_string());
        return None;
    }
    let opened = std::panic::catch_unwind(gpu::Gpu::open)
        .unwrap_or_else(|_| Err(anyhow!("GPU initialisation panicked")));
    match opened {
        Ok(Some(g)) => Some(g),
        Ok(None) => {
            notes.push("no GPU found: using shipped results".to_string());
            None
        }
        Err(e) => {
            notes.push(format!("GPU present but unusable ({e:#}): using shipped results"));
            None
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
