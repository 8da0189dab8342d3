//! The cache key of a measurement.
//!
//! A record is re-measured only when something that could change its number changed: the kernel
//! source, the problem parameters, the device, or the toolchain (driver, CUDA, NVRTC, the
//! harness itself). Everything else — the date, the git commit, the generator version — is
//! provenance, printed but not part of the key, so a rebuild of an unchanged book on the same
//! machine measures nothing.

use super::plan;
use super::results::{self, DeviceInfo, Outcome, Record};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Bump when the harness changes how it verifies, times or counts (invalidates every record).
/// 2: the L2 flush between timed runs reads its buffer instead of writing it (gpu/timing.rs).
pub const HARNESS_VERSION: u32 = 2;

pub use super::kernels::source_hash;

/// What goes into a key.
#[derive(Debug, Clone)]
pub struct KeyInput<'a> {
    pub family: &'a str,
    pub variant: &'a str,
    /// `source_hash` of the kernel file ("" for library baselines).
    pub source_hash: &'a str,
    pub params: &'a BTreeMap<String, u64>,
    pub device: &'a DeviceInfo,
    /// Toolchain parts that only some records depend on, e.g. the cuBLAS version.
    pub extra: &'a str,
}

/// Hex sha256 over an unambiguous rendering of the inputs (each field length-prefixed).
pub fn cache_key(k: &KeyInput) -> String {
    let mut h = Sha256::new();
    let mut field = |name: &str, value: &str| {
        h.update(name.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value.as_bytes());
    };
    field("harness", &HARNESS_VERSION.to_string());
    field("family", k.family);
    field("variant", k.variant);
    field("source", k.source_hash);
    let params: Vec<String> = k.params.iter().map(|(p, v)| format!("{p}={v}")).collect();
    field("params", &params.join(","));
    field("device", &k.device.name);
    field("cc", &k.device.compute_capability);
    field("driver", &k.device.driver_version);
    field("cuda", &k.device.cuda_version);
    field("nvrtc", &k.device.nvrtc_version);
    field("extra", k.extra);
    hex::encode(h.finalize())
}

/// The cache key of one plan item on one device.
pub fn item_key(item: &plan::Item, device: &DeviceInfo, extra: &str) -> (String, String) {
    let source_hash = item
        .source_file
        .and_then(super::families::kernel_hash)
        .unwrap_or_default();
    let key = cache_key(&KeyInput {
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
pub(super) fn reusable(r: &Record) -> bool {
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
