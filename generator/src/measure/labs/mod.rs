//! Labs: PyTorch, Triton and JAX code measured like the CUDA kernels.
//!
//! Why the runner lives in Rust while the labs are Python: the numbers of both kinds end up in
//! the same results files and figures, so one program must own the schema, the cache key, the
//! provenance, the merge and the failure handling. A lab only verifies, times and prints
//! records (see `kernels/labs/README.md`); everything around it is here:
//!
//! - `manifest`: the `labs.yaml` files, checked with file:line errors;
//! - `probe`: which Python, which framework versions, whether they see a GPU;
//! - `deps`: the lab's source hash, following its local imports and the `.cu` files it loads;
//! - `child`: the process, its group, its time-out, its pipes;
//! - `records`: strict parsing of what it printed;
//! - `run`: one lab into records, the planned labs in order with a log line each;
//! - `world`: the GPU counts a lab runs at (torchrun, one process per GPU), and the interconnect.
//!
//! `build` never needs Python: without one (or without the framework, or without a GPU) the
//! shipped results are used and the build log says which labs were not run and why.

pub mod child;
pub mod deps;
pub mod manifest;
pub mod probe;
pub mod records;
mod run;
pub mod world;

pub use run::{command, run_one, run_planned, LabRun, LabsDone};
use world::World;

use super::results::{DeviceInfo, FailStage, Outcome, Record, ResultsFile};
use manifest::Lab;
use probe::Env;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

pub use manifest::load as load_manifests;

/// Bump when the runner changes how it reads, checks or stores lab output.
pub const RUNNER_VERSION: u32 = 1;

/// The Python interpreter the runner starts: `$HDLC_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("HDLC_PYTHON")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "python3".to_string())
}

/// Why a lab cannot run here, if it cannot.
pub fn unmet(lab: &Lab, env: &Env) -> Option<String> {
    let missing: Vec<&str> = lab
        .requires
        .iter()
        .map(String::as_str)
        .filter(|r| *r != "gpu" && !env.versions.contains_key(*r))
        .collect();
    if !missing.is_empty() {
        return Some(format!("needs {} (not installed)", missing.join(", ")));
    }
    if lab.needs_gpu() && env.gpu.is_none() {
        return Some("needs a GPU that its framework can see".into());
    }
    None
}

/// The framework versions that go into a lab's key and provenance: python, the packages it
/// requires, and CUDA as PyTorch reports it when it uses torch.
pub fn frameworks(lab: &Lab, env: &Env) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut take = |k: &str| {
        if let Some(v) = env.versions.get(k) {
            out.insert(k.to_string(), v.clone());
        }
    };
    take("python");
    for r in &lab.requires {
        take(r);
    }
    if lab.requires.iter().any(|r| r == "jax") {
        take("jaxlib");
    }
    if lab.requires.iter().any(|r| r == "torch") {
        take("cuda");
    }
    if !lab.world.is_empty() {
        take("nccl");
    }
    out
}

/// The cache key of a lab on a device: runner version, lab, source hash (with dependencies),
/// the device and its driver, the framework versions, and for a world run its size, backend
/// and (across GPUs) the interconnect.
pub fn lab_key(
    lab: &Lab,
    source_hash: &str,
    device: &DeviceInfo,
    fw: &BTreeMap<String, String>,
    world: Option<&World>,
) -> String {
    let mut h = Sha256::new();
    let mut field = |name: &str, value: &str| {
        h.update(name.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value.as_bytes());
    };
    field("runner", &RUNNER_VERSION.to_string());
    field("lab", &lab.id);
    field("family", &lab.family);
    field("source", source_hash);
    field("device", &device.name);
    field("cc", &device.compute_capability);
    field("driver", &device.driver_version);
    field("cuda", &device.cuda_version);
    for (k, v) in fw {
        field(k, v);
    }
    if let Some(w) = world {
        field("world", &w.size.to_string());
        field("backend", w.backend.name());
        if w.size > 1 {
            field("interconnect", w.interconnect.as_deref().unwrap_or(""));
        }
    }
    hex::encode(h.finalize())
}

/// Whether `r` is one of the lab's records, at world size `world` when one is given (a record
/// of a world lab without `params.world` is stale and counts as every size's, so it is replaced).
fn is_of(r: &Record, lab: &Lab, world: Option<u32>) -> bool {
    r.family == lab.family
        && r.source_file.as_deref() == Some(lab.source_file.as_str())
        && world.is_none_or(|w| r.params.get("world").is_none_or(|v| *v == u64::from(w)))
}

/// The records a lab left in a results file (at one world size, when given).
pub fn records_of<'a>(
    file: &'a ResultsFile,
    lab: &'a Lab,
    world: Option<u32>,
) -> impl Iterator<Item = &'a Record> + 'a {
    file.records.iter().filter(move |r| is_of(r, lab, world))
}

/// Whether the file already holds this lab's results (at world size `world`) under `key`, none
/// of them a failure that may have been transient (a crash, a time-out, a launch error).
pub fn cached(file: &ResultsFile, lab: &Lab, world: Option<u32>, key: &str) -> bool {
    let mut any = false;
    for r in records_of(file, lab, world) {
        any = true;
        let transient = matches!(
            r.outcome,
            Outcome::Failed {
                stage: FailStage::Launch | FailStage::Crash | FailStage::Timeout,
                ..
            }
        );
        if r.key != key || transient {
            return false;
        }
    }
    any
}

/// Environment every lab runs with: the import path, unbuffered output, no bytecode files in
/// the repository, the seed, and the settings the device machines require of every process.
pub(crate) fn lab_env(root: &Path, seed: u64) -> Vec<(String, String)> {
    let labs = root.join("kernels").join("labs");
    let mut path = labs.to_string_lossy().into_owned();
    if let Ok(old) = std::env::var("PYTHONPATH") {
        if !old.is_empty() {
            path = format!("{path}:{old}");
        }
    }
    // Labs that start the harness itself (nccl_rust.py) find this very binary.
    let bin = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    [
        ("HDLC_BIN", bin),
        ("PYTHONPATH", path),
        ("PYTHONUNBUFFERED", "1".into()),
        ("PYTHONDONTWRITEBYTECODE", "1".into()),
        ("HDLC_LAB_SEED", seed.to_string()),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "false".into()),
        ("NCCL_NVLS_ENABLE", "0".into()),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1".into()),
        ("NVSHMEM_DISABLE_NVLS", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Replace a lab's records in `file` with `new` (a lab's output replaces all of its previous
/// output, so variants it no longer prints disappear) and keep the file sorted. A world run
/// replaces only the records of its world size: the others stay as shipped.
pub fn replace(file: &mut ResultsFile, lab: &Lab, world: Option<u32>, new: Vec<Record>) {
    file.records.retain(|r| !is_of(r, lab, world));
    super::store::merge(file, new);
}

/// A lab that will run in this measure stage (at one world size, for a lab with `world:`), with
/// its key.
pub struct Planned {
    pub lab: Lab,
    pub key: String,
    pub source_hash: String,
    pub frameworks: BTreeMap<String, String>,
    pub world: Option<World>,
}

/// Which labs to run: those selected, runnable here and not cached (all of them with `force`).
/// Notes say why the others are not run.
pub fn plan(
    root: &Path,
    labs: &[Lab],
    env: &Env,
    device: &DeviceInfo,
    file: &ResultsFile,
    force: bool,
    notes: &mut Vec<String>,
) -> (Vec<Planned>, usize) {
    let mut out = Vec::new();
    let mut cached_n = 0;
    for lab in labs {
        if let Some(why) = unmet(lab, env) {
            notes.push(format!(
                "lab {}: not run here ({why}); shipped results used",
                lab.id
            ));
            continue;
        }
        let source_hash = deps::source_hash(root, &lab.path);
        let fw = frameworks(lab, env);
        let worlds: Vec<Option<World>> = if lab.world.is_empty() {
            vec![None]
        } else {
            let (run, skip) = world::split(&lab.world, &lab.cpu_world, env);
            note_skipped(file, lab, &skip, notes);
            run.into_iter().map(Some).collect()
        };
        for w in worlds {
            let key = lab_key(lab, &source_hash, device, &fw, w.as_ref());
            if !force && cached(file, lab, w.as_ref().map(|w| w.size), &key) {
                cached_n += 1;
                continue;
            }
            out.push(Planned {
                lab: lab.clone(),
                key,
                source_hash: source_hash.clone(),
                frameworks: fw.clone(),
                world: w,
            });
        }
    }
    (out, cached_n)
}

/// Say which world sizes are not run here and that their shipped records are kept.
fn note_skipped(file: &ResultsFile, lab: &Lab, skip: &[(u32, String)], notes: &mut Vec<String>) {
    for (size, why) in skip {
        let shipped = records_of(file, lab, Some(*size))
            .filter(|r| r.params.contains_key("world"))
            .count();
        let kept = if shipped > 0 {
            format!("its {shipped} shipped record(s) kept, not re-measured")
        } else {
            "no shipped records".to_string()
        };
        notes.push(format!(
            "lab {} at world {size}: not run here ({why}); {kept}",
            lab.id
        ));
    }
}

/// The labs this measure stage runs: selected, runnable with this Python and not cached.
pub(super) fn planned_for(
    opts: &super::MeasureOptions,
    device: &super::results::DeviceInfo,
    file: &super::results::ResultsFile,
    notes: &mut Vec<String>,
) -> (Vec<Planned>, usize) {
    if opts.labs == super::LabSelection::None {
        return (Vec::new(), 0);
    }
    let mut diags = crate::diag::Diagnostics::new();
    let all = load_manifests(&opts.root, &super::families(), &mut diags);
    for d in diags.iter() {
        notes.push(d.to_string());
    }
    let chosen: Vec<manifest::Lab> = all.into_iter().filter(|l| opts.labs.picks(l)).collect();
    if let super::LabSelection::Only(names) = &opts.labs {
        for n in names {
            if !chosen.iter().any(|l| &l.id == n || &l.family == n) && super::families::family(n).is_none() {
                notes.push(format!("no lab or family named `{n}`"));
            }
        }
    }
    if chosen.is_empty() {
        return (Vec::new(), 0);
    }
    let py = python();
    match probe::run(&opts.root, &py) {
        Ok(mut env) => {
            if env.gpus > 1 && chosen.iter().any(|l| !l.world.is_empty()) {
                env.interconnect = world::read_interconnect(&opts.root);
            }
            plan(&opts.root, &chosen, &env, device, file, opts.force, notes)
        }
        Err(e) => {
            notes.push(format!(
                "labs not run: {py} is not usable ({e}); shipped results used (set HDLC_PYTHON to choose an interpreter)"
            ));
            (Vec::new(), 0)
        }
    }
}
