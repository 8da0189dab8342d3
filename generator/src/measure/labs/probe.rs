//! Asking the Python interpreter what it has: one run of `kernels/labs/probe.py`.
//!
//! Why ask before running any lab: the framework versions are part of every lab's cache key, so
//! they must be known to decide whether a lab needs re-measuring at all; and a lab whose
//! framework is missing should be reported as "not run here", not started and crashed.

use super::child;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Env {
    /// python, torch, triton, jax, jaxlib, flax, optax, numpy, cuda (PyTorch's CUDA) — those present.
    pub versions: BTreeMap<String, String>,
    /// The GPU the frameworks see, if any.
    pub gpu: Option<String>,
    /// How many GPUs PyTorch sees (1 when a GPU is seen but not counted; 0 without one).
    pub gpus: u32,
    /// What connects the GPUs, read by the runner (not the probe) from `nvidia-smi topo -m`.
    pub interconnect: Option<String>,
}

/// Parse the probe's one line of JSON.
pub fn parse(stdout: &str) -> Result<Env, String> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("the probe printed nothing")?;
    let map: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(line).map_err(|e| format!("the probe printed `{line}`: {e}"))?;
    let mut env = Env::default();
    let mut count = None;
    for (k, v) in map {
        if k == "gpu_count" {
            count = v.as_u64().and_then(|n| u32::try_from(n).ok());
            continue;
        }
        let Some(s) = v.as_str() else { continue };
        if k == "gpu" {
            env.gpu = Some(s.to_string());
        } else if !k.ends_with("_error") {
            env.versions.insert(k, s.to_string());
        }
    }
    env.gpus = match (&env.gpu, count) {
        (None, _) => 0,
        (Some(_), c) => c.unwrap_or(1).max(1),
    };
    if !env.versions.contains_key("python") {
        return Err("the probe did not report a python version".into());
    }
    Ok(env)
}

/// Run the probe with `python`. Err when Python cannot be started or the probe fails.
pub fn run(root: &Path, python: &str) -> Result<Env, String> {
    let script = root.join("kernels").join("labs").join("probe.py");
    if !script.is_file() {
        return Err("kernels/labs/probe.py is missing".into());
    }
    let path = script.to_string_lossy().into_owned();
    let env = [("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string())];
    let r = child::run(
        python,
        &[&path],
        root,
        &env,
        Duration::from_secs(180),
        crate::measure::interrupt::flag(),
        &mut |_| {},
    );
    match r.exit {
        child::Exit::Code(Some(0)) => parse(&r.stdout),
        child::Exit::NotStarted(e) => Err(e),
        child::Exit::TimedOut => Err("the probe timed out".into()),
        child::Exit::Interrupted => Err("interrupted".into()),
        child::Exit::Code(c) => Err(format!(
            "the probe exited with {c:?}: {}",
            r.stderr_tail.lines().last().unwrap_or("")
        )),
    }
}
