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
//! - `run`: one lab into records, the planned labs in order with a log line each.
//!
//! `build` never needs Python: without one (or without the framework, or without a GPU) the
//! shipped results are used and the build log says which labs were not run and why.

pub mod child;
pub mod deps;
pub mod manifest;
pub mod probe;
pub mod records;
mod run;

pub use run::{run_one, run_planned, LabRun, LabsDone};

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
    out
}

/// The cache key of a lab on a device: runner version, lab, source hash (with dependencies),
/// the device and its driver, and the framework versions.
pub fn lab_key(lab: &Lab, source_hash: &str, device: &DeviceInfo, fw: &BTreeMap<String, String>) -> String {
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
    hex::encode(h.finalize())
}

/// The records a lab left in a results file.
pub fn records_of<'a>(file: &'a ResultsFile, lab: &'a Lab) -> impl Iterator<Item = &'a Record> + 'a {
    file.records
        .iter()
        .filter(move |r| r.family == lab.family && r.source_file.as_deref() == Some(lab.source_file.as_str()))
}

/// Whether the file already holds this lab's results under `key`, none of them a failure that
/// may have been transient (a crash, a time-out, a launch error).
pub fn cached(file: &ResultsFile, lab: &Lab, key: &str) -> bool {
    let mut any = false;
    for r in records_of(file, lab) {
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
    [
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
/// output, so variants it no longer prints disappear) and keep the file sorted.
pub fn replace(file: &mut ResultsFile, lab: &Lab, new: Vec<Record>) {
    file.records
        .retain(|r| !(r.family == lab.family && r.source_file.as_deref() == Some(lab.source_file.as_str())));
    super::store::merge(file, new);
}

/// A lab that will run in this measure stage, with its key.
pub struct Planned {
    pub lab: Lab,
    pub key: String,
    pub source_hash: String,
    pub frameworks: BTreeMap<String, String>,
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
        let key = lab_key(lab, &source_hash, device, &fw);
        if !force && cached(file, lab, &key) {
            cached_n += 1;
            continue;
        }
        out.push(Planned {
            lab: lab.clone(),
            key,
            source_hash,
            frameworks: fw,
        });
    }
    (out, cached_n)
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
        Ok(env) => plan(&opts.root, &chosen, &env, device, file, opts.force, notes),
        Err(e) => {
            notes.push(format!(
                "labs not run: {py} is not usable ({e}); shipped results used (set HDLC_PYTHON to choose an interpreter)"
            ));
            (Vec::new(), 0)
        }
    }
}
