//! Turning a lab's standard output into result records, strictly.
//!
//! Why strict: a lab is someone else's program printing numbers. Anything that is not exactly a
//! record in the schema of `kernels/labs/README.md` rejects the whole run with the line that was
//! wrong, so a stray print, a half-written line or a renamed field can never turn into a figure.
//! An `ok` record that claims to have passed its check but did not is recorded as a failed
//! check, not trusted.

use crate::measure::results::{Cell, FailStage, Outcome, Table, Timing};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// One record as a lab prints it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    variant: String,
    label: String,
    params: BTreeMap<String, u64>,
    status: String,
    #[serde(default)]
    rung: Option<u32>,
    #[serde(default)]
    baseline: bool,
    rel_error: Option<f64>,
    tolerance: Option<f64>,
    reps: Option<u32>,
    median_ms: Option<f64>,
    p10_ms: Option<f64>,
    p90_ms: Option<f64>,
    flops: Option<f64>,
    bytes: Option<f64>,
    workspace_bytes: Option<f64>,
    #[serde(default)]
    metrics: BTreeMap<String, f64>,
    #[serde(default)]
    series: BTreeMap<String, Vec<[f64; 2]>>,
    #[serde(default)]
    tables: BTreeMap<String, Table>,
    stage: Option<String>,
    error: Option<String>,
}

/// A parsed record, before the runner adds family, key and provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct LabRecord {
    pub variant: String,
    pub label: String,
    pub rung: u32,
    pub baseline: bool,
    pub params: BTreeMap<String, u64>,
    pub outcome: Outcome,
}

fn need(v: Option<f64>, name: &str) -> Result<f64, String> {
    match v {
        Some(x) if x.is_finite() => Ok(x),
        Some(x) => Err(format!("`{name}` is {x}, not a finite number")),
        None => Err(format!("an ok record needs `{name}`")),
    }
}

/// Series points and table cells are finite, and every table row has one cell per column.
fn check_extras(l: &Line) -> Result<(), String> {
    for (name, pts) in &l.series {
        if pts.iter().flatten().any(|v| !v.is_finite()) {
            return Err(format!("series `{name}` has a non-finite point"));
        }
    }
    for (name, t) in &l.tables {
        if t.columns.is_empty() || t.rows.iter().any(|r| r.len() != t.columns.len()) {
            return Err(format!("table `{name}`: every row needs one cell per column"));
        }
        if t.rows
            .iter()
            .flatten()
            .any(|c| matches!(c, Cell::Num(x) if !x.is_finite()))
        {
            return Err(format!("table `{name}` has a non-finite number"));
        }
    }
    Ok(())
}

/// The timing of a line that says `ok`: every field present, finite and consistent.
fn ok_timing(l: &Line) -> Result<Timing, String> {
    let rel_error = need(l.rel_error, "rel_error")?;
    let tolerance = need(l.tolerance, "tolerance")?;
    let median_ms = need(l.median_ms, "median_ms")?;
    let p10_ms = need(l.p10_ms, "p10_ms")?;
    let p90_ms = need(l.p90_ms, "p90_ms")?;
    let flops = need(l.flops, "flops")?;
    let bytes = need(l.bytes, "bytes")?;
    let reps = l.reps.ok_or("an ok record needs `reps`")?;
    if reps == 0 {
        return Err("`reps` is 0: nothing was timed".into());
    }
    if median_ms <= 0.0 || p10_ms <= 0.0 {
        return Err(format!(
            "times must be positive (median {median_ms} ms, p10 {p10_ms} ms)"
        ));
    }
    let slack = 1e-9 * median_ms.abs().max(1.0);
    if p10_ms > median_ms + slack || median_ms > p90_ms + slack {
        return Err(format!(
            "percentiles out of order: p10 {p10_ms} ≤ median {median_ms} ≤ p90 {p90_ms} does not hold"
        ));
    }
    if rel_error < 0.0 || tolerance < 0.0 || flops < 0.0 || bytes < 0.0 {
        return Err("rel_error, tolerance, flops and bytes must not be negative".into());
    }
    if let Some(w) = l.workspace_bytes {
        if !(w.is_finite() && w >= 0.0) {
            return Err("`workspace_bytes` must be a non-negative number".into());
        }
    }
    check_extras(l)?;
    Ok(Timing {
        rel_error,
        tolerance,
        reps,
        median_ms,
        p10_ms,
        p90_ms,
        flops,
        bytes,
        workspace_bytes: l.workspace_bytes,
        metrics: l.metrics.clone(),
        series: l.series.clone(),
        tables: l.tables.clone(),
    })
}

fn outcome(l: &Line) -> Result<Outcome, String> {
    match l.status.as_str() {
        "ok" => {
            if l.stage.is_some() || l.error.is_some() {
                return Err("an ok record carries no `stage` or `error`".into());
            }
            if l.metrics.values().any(|v| !v.is_finite()) {
                return Err("a metric is not a finite number".into());
            }
            let t = ok_timing(l)?;
            if t.rel_error > t.tolerance {
                return Ok(Outcome::Failed {
                    stage: FailStage::Verify,
                    error: format!(
                        "the lab reported ok, but rel_error {:.3e} exceeds its tolerance {:.1e}",
                        t.rel_error, t.tolerance
                    ),
                });
            }
            Ok(Outcome::Ok(t))
        }
        "failed" => {
            let stage = match l.stage.as_deref() {
                Some("verify") => FailStage::Verify,
                Some("launch") => FailStage::Launch,
                Some("unsupported") => FailStage::Unsupported,
                Some(s) => return Err(format!("unknown stage `{s}` (verify, launch or unsupported)")),
                None => return Err("a failed record needs `stage`".into()),
            };
            let error = l.error.clone().unwrap_or_default();
            if error.trim().is_empty() {
                return Err("a failed record needs a non-empty `error`".into());
            }
            Ok(Outcome::Failed { stage, error })
        }
        s => Err(format!("unknown status `{s}` (ok or failed)")),
    }
}

/// Parse a lab's whole standard output. Err names the first bad line (1-based) and why.
pub fn parse(stdout: &str) -> Result<Vec<LabRecord>, String> {
    let mut out: Vec<LabRecord> = Vec::new();
    let mut variants = BTreeSet::new();
    for (i, raw) in stdout.lines().enumerate() {
        let n = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let shown: String = raw.chars().take(80).collect();
        let line: Line = serde_json::from_str(raw)
            .map_err(|e| format!("stdout line {n} is not a record ({e}): `{shown}`"))?;
        let bad = |why: String| format!("stdout line {n}: {why}");
        if line.variant.trim().is_empty() || line.label.trim().is_empty() {
            return Err(bad("`variant` and `label` must not be empty".into()));
        }
        if line.params.keys().any(|k| k.trim().is_empty()) {
            return Err(bad("a parameter name is empty".into()));
        }
        let key = (line.variant.clone(), line.params.clone());
        if !variants.insert(key) {
            return Err(bad(format!(
                "variant `{}` at these params appears twice",
                line.variant
            )));
        }
        let outcome = outcome(&line).map_err(bad)?;
        out.push(LabRecord {
            rung: line.rung.unwrap_or(out.len() as u32 + 1),
            variant: line.variant,
            label: line.label,
            baseline: line.baseline,
            params: line.params,
            outcome,
        });
    }
    if out.is_empty() {
        return Err("the lab printed no records".into());
    }
    Ok(out)
}
