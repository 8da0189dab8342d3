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
mod record_tables;
mod table;
mod words;

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
        draw: table::table,
    },
    LabView {
        name: "curve",
        draw: lines::curve,
    },
    LabView {
        name: "records",
        draw: record_tables::records,
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
        None => table::table(&c),
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

/// What a lab figure plots: a metric of the records (`records::Metric`, the one prose values
/// read too), with its words from `metric_names`.
#[derive(Debug, Clone, PartialEq)]
struct Metric(crate::records::Metric);

impl Metric {
    fn parse(s: Option<&str>) -> Metric {
        Metric(crate::records::Metric::parse(s.unwrap_or("time")))
    }

    /// Median time, the default.
    fn is_time(&self) -> bool {
        self.0 == crate::records::Metric::Time
    }

    /// The metric in words, with its unit and better direction (`metric_names`).
    fn words(&self) -> crate::metric_names::Metric {
        crate::metric_names::describe(self.0.name())
    }

    /// Whether smaller values are better (times, latencies, bytes), for "% of baseline".
    fn lower_is_better(&self) -> bool {
        self.0.lower_is_better()
    }

    /// The value of a verified record and its p10–p90 spread (low, high), or why there is none.
    fn value(&self, t: &Timing) -> Value {
        self.0.value_with_spread(t)
    }
}

/// A number with as many digits as its size deserves (table cells of lab tables).
fn num(v: f64) -> String {
    crate::metric_names::number(v)
}

/// A record judged: its verified timing, or the text a figure shows instead of a number.
fn judge(r: &Record) -> Result<&Timing, String> {
    crate::records::judge(r).map_err(String::from)
}

/// A record's spread (p10–p90, low and high) only where there is one: several repetitions
/// whose p10 and p90 differ. A single run has no spread, whatever its p10 and p90 fields say.
fn real_spread(t: &Timing, spread: Option<(f64, f64)>) -> Option<(f64, f64)> {
    spread.filter(|(lo, hi)| t.reps > 1 && hi > lo)
}

/// The file to draw from (`records::pick_file`): the one the figure names, else the reader's
/// GPU, else the H100, else the first; files with a verified record of the selection first.
fn choose_lab_file<'a>(
    spec: &FigureSpec,
    files: &'a [(PathBuf, ResultsFile)],
    local: Option<&str>,
) -> Option<&'a ResultsFile> {
    let want = spec.device.as_ref().and_then(Devices::single);
    let has = |f: &ResultsFile| !select(spec, f).is_empty();
    let good = |f: &ResultsFile| select(spec, f).iter().any(|r| judge(r).is_ok());
    crate::records::pick_file(files, local, want, &has, &good)
}

/// The records of the figure's family that its `where:` and `variants:` keep, in order.
fn select<'a>(spec: &FigureSpec, file: &'a ResultsFile) -> Vec<&'a Record> {
    crate::records::filtered(file, &spec.bench, spec.filter.as_ref(), spec.variants.as_deref())
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
    /// way (the suffix rule alone misread `param_bytes_per_rank`, `err_vs_bf16`, `kv_err_vs_bf16`).
    #[test]
    fn better_direction_agrees_with_the_ratio() {
        let mut disagree: Vec<&str> = Vec::new();
        for m in METRICS.iter().filter(|m| m.better != Better::Neither) {
            let lower = Metric::parse(Some(m.key)).lower_is_better();
            if lower != (m.better == Better::Lower) {
                disagree.push(m.key);
            }
        }
        assert!(disagree.is_empty(), "{disagree:?}");
    }
}
