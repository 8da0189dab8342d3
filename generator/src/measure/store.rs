//! Reading, merging and writing the per-device results files, and picking numbers out of them.
//!
//! The files are committed, so the rules are conservative: an unknown schema version is an error
//! that names the file (never a silent misread); a merge replaces only the records it re-measured
//! (same family, variant and parameters) and keeps the rest; a write goes to a temporary file in
//! the same directory and is renamed over the old one, so a crash never leaves half a file.

use super::results::{FailStage, Outcome, Record, ResultsFile, Timing, SCHEMA_VERSION};
use anyhow::{anyhow, bail, Context as _, Result};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Parse one results file; `path` is only used in error messages.
pub fn parse_results(path: &Path, text: &str) -> Result<ResultsFile> {
    // The common case in one pass; anything unusual goes the careful way below for its message.
    if let Ok(f) = serde_json::from_str::<ResultsFile>(text) {
        if f.schema == SCHEMA_VERSION {
            return Ok(current_datasheet(f));
        }
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| anyhow!("{}:{}: invalid JSON: {e}", path.display(), e.line()))?;
    let schema = value.get("schema").and_then(|s| s.as_u64());
    match schema {
        Some(v) if v == SCHEMA_VERSION as u64 => {}
        Some(v) => bail!(
            "{}: unknown results schema version {v} (this generator reads version {SCHEMA_VERSION}); \
             regenerate it with `bench` or update the generator",
            path.display()
        ),
        None => bail!(
            "{}: not a results file (no numeric \"schema\" field)",
            path.display()
        ),
    }
    serde_json::from_value(value)
        .map(current_datasheet)
        .map_err(|e| anyhow!("{}: malformed results file: {e}", path.display()))
}

/// The datasheet peaks are the generator's table (`device::datasheet_for`), not a measurement:
/// a file written before a peak joined the table gets it on reading, so its figures draw the
/// same ceilings as a freshly measured one.
fn current_datasheet(mut f: ResultsFile) -> ResultsFile {
    if let Some(d) = super::device::datasheet_for(&f.device.name) {
        f.device.datasheet = Some(d);
    }
    f
}

/// Every `*.json` under `dir`, sorted by file name. A missing directory is an empty list.
pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, ResultsFile)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow!("{}: {e}", dir.display())),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).with_context(|| format!("{}: cannot read", p.display()))?;
        out.push((p.clone(), parse_results(&p, &text)?));
    }
    Ok(out)
}

/// Whether two records measure the same thing (and so one replaces the other).
pub fn same_slot(a: &Record, b: &Record) -> bool {
    a.family == b.family && a.variant == b.variant && a.params == b.params
}

/// Merge `new` records into `file`: same family + variant + params replaces, everything else is
/// kept. Records are then sorted (family, rung, variant, params) so the file diffs cleanly.
pub fn merge(file: &mut ResultsFile, new: Vec<Record>) {
    for rec in new {
        if let Some(old) = file.records.iter_mut().find(|r| same_slot(r, &rec)) {
            *old = rec;
        } else {
            file.records.push(rec);
        }
    }
    file.records.sort_by(|a, b| {
        (a.family.as_str(), a.rung, a.variant.as_str(), &a.params).cmp(&(
            b.family.as_str(),
            b.rung,
            b.variant.as_str(),
            &b.params,
        ))
    });
}

/// Drop the records of the kernel families in `families` that no item of `planned` matches
/// (shapes or variants the plan no longer has): they were measured by an older harness and would
/// otherwise sit in the file, and in `bench`'s summary, as if current. Returns how many went.
pub fn prune_unplanned(file: &mut ResultsFile, families: &[&str], planned: &[super::plan::Item]) -> usize {
    let before = file.records.len();
    file.records
        .retain(|r| !families.contains(&r.family.as_str()) || planned.iter().any(|i| same_slot_item(r, i)));
    before - file.records.len()
}

/// Write `file` to `path` atomically: a temporary file in the same directory, then a rename.
pub fn save_atomic(path: &Path, file: &ResultsFile) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    let mut json = serde_json::to_string_pretty(file)?;
    json.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{}: cannot create a temporary file", dir.display()))?;
    tmp.write_all(json.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .map_err(|e| anyhow!("{}: cannot replace: {}", path.display(), e.error))?;
    Ok(())
}

/// The figure of merit of a record: GFLOP/s for compute-bound families (the matrix products and
/// attention), GB/s for the rest. `None` for a failed record: a failure never yields a number.
pub fn metric(r: &Record) -> Option<f64> {
    match &r.outcome {
        Outcome::Ok(t) => Some(metric_of(&r.family, t)),
        Outcome::Failed { .. } => None,
    }
}

fn metric_of(family: &str, t: &Timing) -> f64 {
    if uses_flops(family) {
        t.gflops()
    } else {
        t.gbs()
    }
}

/// Families whose figure of merit is FLOP/s rather than bytes/s: the matrix products (every
/// family named "…gemm") and attention.
pub fn uses_flops(family: &str) -> bool {
    family.ends_with("gemm") || family == "attention"
}

/// The unit of `metric` for a family.
pub fn metric_unit(family: &str) -> &'static str {
    if uses_flops(family) {
        "GFLOP/s"
    } else {
        "GB/s"
    }
}

/// The best successful non-baseline record of `family` (optionally at exactly `params`).
/// Failed records are skipped, never ranked.
pub fn best_ok<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    family: &str,
    params: Option<&BTreeMap<String, u64>>,
) -> Option<&'a Record> {
    records
        .into_iter()
        .filter(|r| r.family == family && !r.baseline && params.is_none_or(|p| &r.params == p))
        .filter_map(|r| metric(r).map(|m| (m, r)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r)
}

/// The successful baseline record of `family` at `params`.
pub fn baseline_ok<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    family: &str,
    params: &BTreeMap<String, u64>,
) -> Option<&'a Record> {
    records
        .into_iter()
        .find(|r| r.family == family && r.baseline && &r.params == params && metric(r).is_some())
}

/// Failures that should fail a `--strict` build: everything except deliberate skips.
pub fn is_real_failure(r: &Record) -> bool {
    matches!(&r.outcome, Outcome::Failed { stage, .. } if *stage != FailStage::Unsupported)
}

/// Whether a stored record is in the slot of a plan item (same family, variant, params).
pub fn same_slot_item(r: &Record, item: &super::plan::Item) -> bool {
    r.family == item.family && r.variant == item.variant && r.params == item.params
}
