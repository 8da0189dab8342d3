//! Figures of lab families: records that Python labs (PyTorch, Triton, JAX) printed and the lab
//! runner stored beside the kernels' records.
//!
//! Why apart from the kernel views: a kernel family has one unit (GB/s or FLOP/s) and one size
//! axis that the harness defines; a lab family is whatever its lab measured — a module's forward
//! time, tokens/s, a loss curve, a profiler's table. So a lab figure says what to draw (`metric:`,
//! `where:`, `variants:`, `x:`, `series:`, `table:`) and these views draw exactly that, with the
//! same rules as the kernel views: a failed or unverified record is shown as failed, never as a
//! number; the provenance line names the machine and the framework versions; output is
//! deterministic and blank-line free.

mod bars;
mod lines;
mod profile;
mod tables;
mod words;

use super::device_matches;
use super::notes::{Footnotes, Why};
use super::panels::SharedAxis;
use super::prelude::*;
use crate::figspec::{Devices, FigureSpec};
use crate::measure::results::{ResultsFile, Timing};
use crate::metric_names::{param_text, param_value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use words::*;

/// A lab figure view: its name after `show:` and the function that draws it.
pub struct LabView {
    pub name: &'static str,
    draw: fn(&LabCtx) -> Result<String, String>,
}

/// Every view a lab-family figure block may ask for; `figspec` lists them from here.
pub const LAB_VIEWS: &[LabView] = &[
    LabView {
        name: "ladder",
        draw: bars::ladder,
    },
    LabView {
        name: "scaling",
        draw: lines::scaling,
    },
    LabView {
        name: "table",
        draw: tables::table,
    },
    LabView {
        name: "curve",
        draw: lines::curve,
    },
    LabView {
        name: "records",
        draw: tables::records,
    },
];

/// The names of [`LAB_VIEWS`], as a constant for `figspec`.
pub const LAB_VIEW_NAMES: [&str; LAB_VIEWS.len()] = {
    let mut names = [""; LAB_VIEWS.len()];
    let mut i = 0;
    while i < LAB_VIEWS.len() {
        names[i] = LAB_VIEWS[i].name;
        i += 1;
    }
    names
};

/// Render a figure of a lab family. `loc` holds the lines of code counted for the spec's `loc:`.
pub fn render_lab_figure(
    spec: &FigureSpec,
    files: &[(PathBuf, ResultsFile)],
    local_device: Option<&str>,
    loc: &BTreeMap<String, usize>,
) -> Result<String, String> {
    let id = lab_figure_id(spec);
    if spec.device.as_ref().is_some_and(Devices::several) {
        let covers = |f: &ResultsFile| !select(spec, f).is_empty();
        let draw =
            |s: &FigureSpec, axis: &SharedAxis, id: String| lab_one(s, files, local_device, loc, axis, id);
        return super::panels::side_by_side(spec, &id, files, &covers, &draw);
    }
    lab_one(spec, files, local_device, loc, &SharedAxis::default(), id)
}

/// One lab figure of one machine.
fn lab_one(
    spec: &FigureSpec,
    files: &[(PathBuf, ResultsFile)],
    local_device: Option<&str>,
    loc: &BTreeMap<String, usize>,
    axis: &SharedAxis,
    id: String,
) -> Result<String, String> {
    let Some(file) = choose_lab_file(spec, files, local_device) else {
        return Ok(no_data(spec, &id, None));
    };
    let compared = compared_records(spec, file);
    let recs: Vec<&Record> = if spec.compare.is_some() {
        compared.iter().collect()
    } else {
        select(spec, file)
    };
    if recs.is_empty() {
        return Ok(no_data(spec, &id, None));
    }
    let c = LabCtx {
        spec,
        file,
        recs,
        local: local_device.is_some_and(|d| d == file.device.name),
        id,
        metric: Metric::parse(spec.metric.as_deref()),
        loc,
        axis,
    };
    // figspec checked the view; an unknown one (a spec built in code) draws the table.
    match LAB_VIEWS.iter().find(|v| v.name == spec.show) {
        Some(v) => (v.draw)(&c),
        None => tables::table(&c),
    }
}

/// With `compare:`, the records of the figure's family and of each compared family (the same
/// `where:` and `variants:`, from the same machine's file), each labelled with its framework
/// ("JAX · FP32"), so one chart puts them on one axis. Empty without `compare:`.
fn compared_records(spec: &FigureSpec, file: &ResultsFile) -> Vec<Record> {
    let Some(others) = &spec.compare else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for family in std::iter::once(&spec.bench).chain(others) {
        let one = FigureSpec {
            bench: family.clone(),
            compare: None,
            ..spec.clone()
        };
        let who = framework_of(family);
        out.extend(select(&one, file).into_iter().map(|r| Record {
            label: format!("{who} · {}", r.label),
            ..r.clone()
        }));
    }
    // Same rung (precision, variant) side by side across frameworks; stable, so each family's
    // order stays within a rung. With `variants:`, their order first.
    match &spec.variants {
        Some(vs) => out.sort_by_key(|r| vs.iter().position(|v| *v == r.variant)),
        None => out.sort_by_key(|r| r.rung),
    }
    out
}

/// A record's value and p10–p90 spread, or why it has none.
type Value = Result<(f64, Option<(f64, f64)>), String>;

/// Everything a lab view needs.
pub struct LabCtx<'a> {
    spec: &'a FigureSpec,
    file: &'a ResultsFile,
    /// The records the spec selects, in drawing order.
    recs: Vec<&'a Record>,
    local: bool,
    id: String,
    metric: Metric,
    loc: &'a BTreeMap<String, usize>,
    /// The value axis shared with the other panels of a side-by-side figure.
    axis: &'a SharedAxis,
}

/// What a lab figure plots.
#[derive(Debug, Clone, PartialEq)]
enum Metric {
    /// Median time in ms; lower is better.
    Time,
    Tflops,
    Gbps,
    /// A key of the records' `metrics`.
    Named(String),
}

impl Metric {
    fn parse(s: Option<&str>) -> Metric {
        match s.map(str::trim) {
            None | Some("time") | Some("ms") => Metric::Time,
            Some("tflops") => Metric::Tflops,
            Some("gbps") => Metric::Gbps,
            Some(other) => Metric::Named(other.to_string()),
        }
    }

    /// The metric in words, with its unit and better direction (`metric_names`).
    fn words(&self) -> crate::metric_names::Metric {
        crate::metric_names::describe(match self {
            Metric::Time => "time",
            Metric::Tflops => "tflops",
            Metric::Gbps => "gbps",
            Metric::Named(n) => n,
        })
    }

    /// Whether smaller values are better (times, latencies, bytes), for "% of baseline".
    fn lower_is_better(&self) -> bool {
        match self {
            Metric::Time => true,
            Metric::Tflops | Metric::Gbps => false,
            Metric::Named(n) => {
                let n = n.to_ascii_lowercase();
                !n.contains("per_s")
                    && !n.ends_with("_pct")
                    && !n.contains("speedup")
                    && ["_ms", "_us", "_s", "_bytes", "loss", "error"]
                        .iter()
                        .any(|s| n.ends_with(s))
            }
        }
    }

    /// The value of a verified record and its p10–p90 spread (low, high), or why there is none.
    fn value(&self, t: &Timing) -> Value {
        let spread = (t.p10_ms.is_finite() && t.p90_ms.is_finite() && t.p10_ms > 0.0)
            .then_some((t.p10_ms, t.p90_ms))
            .filter(|(a, b)| a <= b);
        let rate = |work: f64, what: &str| {
            if !(work.is_finite() && work > 0.0) {
                return Err(format!("no {what} recorded"));
            }
            let per = |ms: f64| work / (ms * 1e-3) / 1e12;
            Ok((per(t.median_ms), spread.map(|(p10, p90)| (per(p90), per(p10)))))
        };
        match self {
            Metric::Time => Ok((t.median_ms, spread)),
            Metric::Tflops => rate(t.flops, "FLOPs"),
            Metric::Gbps => {
                rate(t.bytes, "bytes").map(|(v, s)| (v * 1e3, s.map(|(a, b)| (a * 1e3, b * 1e3))))
            }
            Metric::Named(n) => match t.metrics.get(n) {
                Some(v) if v.is_finite() => Ok((*v, None)),
                Some(_) => Err(format!("`{n}` is not a number")),
                None => Err(format!("no `{n}` recorded")),
            },
        }
    }
}

/// A number with as many digits as its size deserves (table cells of lab tables).
fn num(v: f64) -> String {
    crate::metric_names::number(v)
}

/// A record judged: its verified timing, or the text a figure shows instead of a number.
fn judge(r: &Record) -> Result<&Timing, String> {
    match &r.outcome {
        Outcome::Failed { stage, .. } => Err(stage_text(*stage).to_string()),
        Outcome::Ok(t) => {
            let verified = t.rel_error.is_finite()
                && t.tolerance.is_finite()
                && t.rel_error >= 0.0
                && t.rel_error <= t.tolerance;
            if !verified {
                Err(UNVERIFIED.into())
            } else if !(t.median_ms.is_finite() && t.median_ms > 0.0) {
                Err(INVALID.into())
            } else {
                Ok(t)
            }
        }
    }
}

/// A record's spread (p10–p90, low and high) only where there is one: several repetitions
/// whose p10 and p90 differ. A single run has no spread, whatever its p10 and p90 fields say.
fn real_spread(t: &Timing, spread: Option<(f64, f64)>) -> Option<(f64, f64)> {
    spread.filter(|(lo, hi)| t.reps > 1 && hi > lo)
}

/// The file to draw from: this machine's if it has the family, else an H100's, else the first;
/// among those, files with a verified record of the selection come first, so a stale failure
/// elsewhere never hides a good measurement — but a family that only failed is still shown.
fn choose_lab_file<'a>(
    spec: &FigureSpec,
    files: &'a [(PathBuf, ResultsFile)],
    local: Option<&str>,
) -> Option<&'a ResultsFile> {
    let want = spec.device.as_ref().and_then(Devices::single);
    let with: Vec<&ResultsFile> = files
        .iter()
        .map(|(_, f)| f)
        .filter(|f| !select(spec, f).is_empty() && device_matches(f, want))
        .collect();
    let good: Vec<&ResultsFile> = with
        .iter()
        .copied()
        .filter(|f| select(spec, f).iter().any(|r| judge(r).is_ok()))
        .collect();
    let pool = if good.is_empty() { &with } else { &good };
    if want.is_some() {
        return pool.first().copied();
    }
    if let Some(l) = local {
        if let Some(f) = pool.iter().find(|f| f.device.name == l) {
            return Some(f);
        }
    }
    pool.iter()
        .find(|f| f.device.name.contains("H100"))
        .or_else(|| pool.first())
        .copied()
}

/// The records of the figure's family that its `where:` and `variants:` keep, in order: the
/// `variants:` order when given, else by rung (stable, so the lab's order breaks ties).
fn select<'a>(spec: &FigureSpec, file: &'a ResultsFile) -> Vec<&'a Record> {
    let mut v: Vec<&Record> = file
        .records
        .iter()
        .filter(|r| r.family == spec.bench)
        .filter(|r| {
            spec.filter
                .as_ref()
                .is_none_or(|w| w.iter().all(|(k, want)| r.params.get(k) == Some(want)))
        })
        .filter(|r| spec.variants.as_ref().is_none_or(|vs| vs.contains(&r.variant)))
        .collect();
    match &spec.variants {
        Some(vs) => v.sort_by_key(|r| vs.iter().position(|x| *x == r.variant)),
        None => v.sort_by_key(|r| r.rung),
    }
    v
}

/// Params that differ between the selected records (the ones a label must name).
fn varying_params(recs: &[&Record]) -> Vec<String> {
    let keys: BTreeSet<&String> = recs.iter().flat_map(|r| r.params.keys()).collect();
    keys.into_iter()
        .filter(|k| {
            let vals: BTreeSet<Option<&u64>> = recs.iter().map(|r| r.params.get(*k)).collect();
            vals.len() > 1
        })
        .cloned()
        .collect()
}

/// The baseline record at the same params as `r`, with its value, if the selection has one.
fn baseline_for<'a>(c: &LabCtx<'a>, r: &Record) -> Option<(&'a Record, f64)> {
    c.recs
        .iter()
        .filter(|b| b.baseline && b.params == r.params)
        .find_map(|b| {
            judge(b)
                .ok()
                .and_then(|t| c.metric.value(t).ok())
                .map(|(v, _)| (*b, v))
        })
}

/// "% of baseline" for a value: higher is better either way (time: baseline time ÷ time).
fn vs_baseline(c: &LabCtx, v: f64, base: f64) -> Option<f64> {
    let r = if c.metric.lower_is_better() {
        base / v
    } else {
        v / base
    };
    (r.is_finite() && r > 0.0).then_some(r)
}

/// Figure ids must be unique on a page that draws one family several ways.
fn lab_figure_id(spec: &FigureSpec) -> String {
    let base = figure_id(spec);
    let mut extra = format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}",
        spec.metric, spec.filter, spec.variants, spec.x, spec.series, spec.table
    );
    if let Some(c) = &spec.compare {
        extra.push_str(&format!("{c:?}"));
    }
    // FNV-1a: stable across builds and platforms.
    let h = extra.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("{base}-{:06x}", h & 0xff_ffff)
}

/// The `<figcaption>`: caption, notes, machine and framework provenance.
fn lab_caption(c: &LabCtx, used: &[&Record], notes: &[String]) -> String {
    let prov = provenance_with(&c.file.device, used, c.local, &frameworks(used));
    caption_html(c.spec.caption.as_deref(), notes, &prov)
}

fn lab_figure(c: &LabCtx, svg: &str, used: &[&Record], notes: &[String]) -> String {
    format!(
        "<figure class=\"hdlc-figure\" id=\"{}\">\n{}\n{}</figure>",
        c.id,
        svg.trim_end(),
        lab_caption(c, used, notes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric_names::{Better, METRICS};

    /// "% of baseline" divides by `lower_is_better`, the marks on axes come from `metric_names`:
    /// they must agree, or a chart would say "↓ lower is better" and compute the ratio the other
    /// way. Keys where the suffix rule misreads a metric are listed, so a new one fails here.
    #[test]
    fn better_direction_agrees_with_the_ratio() {
        const SUFFIX_RULE_MISREADS: &[&str] = &["param_bytes_per_rank", "err_vs_bf16", "kv_err_vs_bf16"];
        let mut disagree = Vec::new();
        for m in METRICS.iter().filter(|m| m.better != Better::Neither) {
            let lower = Metric::parse(Some(m.key)).lower_is_better();
            if lower != (m.better == Better::Lower) {
                disagree.push(m.key);
            }
        }
        assert_eq!(disagree, SUFFIX_RULE_MISREADS, "update metric_names or the list");
    }
}
