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
mod tables;

use super::device_matches;
use super::panels::SharedAxis;
use super::prelude::*;
use crate::figspec::{Devices, FigureSpec};
use crate::measure::results::{FailStage, ResultsFile, Timing};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

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
    let recs = select(spec, file);
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

    /// The axis description.
    fn axis(&self) -> String {
        match self {
            Metric::Time => "median time, ms (whisker p10–p90; shorter is faster)".into(),
            Metric::Tflops => "TFLOP/s (median; whisker p10–p90)".into(),
            Metric::Gbps => "GB/s (median; whisker p10–p90)".into(),
            Metric::Named(n) => n.clone(),
        }
    }

    /// The column header in tables.
    fn header(&self) -> String {
        match self {
            Metric::Time => "median ms".into(),
            Metric::Tflops => "TFLOP/s".into(),
            Metric::Gbps => "GB/s".into(),
            Metric::Named(n) => esc(n),
        }
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

    fn fmt(&self, v: f64) -> String {
        match self {
            Metric::Time => format!("{} ms", fmt_ms(v)),
            Metric::Tflops => format!("{} TFLOP/s", num(v)),
            Metric::Gbps => format!("{} GB/s", num(v)),
            Metric::Named(_) => num(v),
        }
    }
}

/// A number with as many digits as its size deserves.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v.abs() >= 100.0 {
        let s = group(v.abs().round() as u64);
        if v < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 || v == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
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

/// The error text of a failed record (shortened), for tables and captions.
fn error_of(r: &Record) -> Option<&str> {
    match &r.outcome {
        Outcome::Failed { error, .. } => Some(error.as_str()),
        Outcome::Ok(_) => None,
    }
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

/// A record's label, with the varying params when the same variant appears more than once.
fn row_label(r: &Record, recs: &[&Record], varying: &[String]) -> String {
    let repeated = recs.iter().filter(|o| o.variant == r.variant).count() > 1;
    if !repeated || varying.is_empty() {
        return r.label.clone();
    }
    let ps: Vec<String> = varying
        .iter()
        .filter_map(|k| r.params.get(k).map(|v| format!("{k}={}", group(*v))))
        .collect();
    format!("{} ({})", r.label, ps.join(", "))
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
    let extra = format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}",
        spec.metric, spec.filter, spec.variants, spec.x, spec.series, spec.table
    );
    // FNV-1a: stable across builds and platforms.
    let h = extra.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("{base}-{:06x}", h & 0xff_ffff)
}

/// The framework versions of the records drawn, e.g. "python 3.12.3 · torch 2.11.0".
fn frameworks(used: &[&Record]) -> String {
    let mut all: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in used {
        for (k, v) in &r.provenance.frameworks {
            all.entry(k).or_default().insert(v);
        }
    }
    all.iter()
        .map(|(k, vs)| {
            format!(
                "{} {}",
                esc(k),
                vs.iter().map(|v| esc(v)).collect::<Vec<_>>().join("/")
            )
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The `<figcaption>`: caption, notes, machine and framework provenance.
fn lab_caption(c: &LabCtx, used: &[&Record], notes: &[String]) -> String {
    let mut prov = provenance(&c.file.device, used, c.local);
    let fw = frameworks(used);
    if !fw.is_empty() {
        prov = format!("{prov} · {fw}");
    }
    caption_html(c.spec.caption.as_deref(), notes, &prov)
}

/// Failed records of the selection, as caption notes with their errors (never as numbers): one
/// note per variant and kind of failure, naming the params it failed at and the first error.
/// `skip_unsupported`: the view already says which points were skipped (a line chart's legend).
fn failure_notes(recs: &[&Record], skip_unsupported: bool) -> Vec<String> {
    let varying = varying_params(recs);
    let mut groups: Vec<(&str, String, Vec<String>, &str)> = Vec::new();
    for r in recs {
        let Err(why) = judge(r) else { continue };
        let unsupported = matches!(
            &r.outcome,
            Outcome::Failed {
                stage: FailStage::Unsupported,
                ..
            }
        );
        if skip_unsupported && unsupported {
            continue;
        }
        let at: Vec<String> = varying
            .iter()
            .filter_map(|k| r.params.get(k).map(|v| format!("{k}={}", group(*v))))
            .collect();
        let err = error_of(r).and_then(|e| e.lines().next()).unwrap_or("");
        match groups.iter_mut().find(|g| g.0 == r.label && g.1 == why) {
            Some(g) => g.2.push(at.join(", ")),
            None => groups.push((&r.label, why, vec![at.join(", ")], err)),
        }
    }
    groups
        .into_iter()
        .map(|(label, why, at, err)| {
            let at: Vec<String> = at.into_iter().filter(|a| !a.is_empty()).collect();
            let at = if at.is_empty() {
                String::new()
            } else {
                format!(" ({})", esc(&at.join("; ")))
            };
            let err = if err.is_empty() {
                String::new()
            } else {
                format!(": {}", esc(&short(err, 140)))
            };
            format!("<span class=\"fail\">{} — {why}{at}{err}.</span>", esc(label))
        })
        .collect()
}

fn lab_figure(c: &LabCtx, svg: &str, used: &[&Record], notes: &[String]) -> String {
    format!(
        "<figure class=\"hdlc-figure\" id=\"{}\">\n{}\n{}</figure>",
        c.id,
        svg.trim_end(),
        lab_caption(c, used, notes)
    )
}
