//! Evaluating values and claims against the results files, one machine at a time.
//!
//! A reference with `*` parameters stands for one record per *point*: each assignment of the `*`
//! parameters that every reference of the claim has records for on that machine. A claim holds
//! on a machine when it holds at every point; a point whose record is missing or failed makes
//! the claim unchecked there, never true.

use super::syntax::{Cond, Expr, Param, Ref};
use crate::measure::results::{Record, ResultsFile};
use crate::records::{self, Metric};
use std::collections::{BTreeMap, BTreeSet};

/// One assignment of the `*` parameters.
pub type Point = BTreeMap<String, u64>;

/// Why a reference has no number at a point.
#[derive(Debug, Clone, PartialEq)]
pub enum NoValue {
    /// No record matches (or the reference is pinned to another machine).
    Missing(String),
    /// The record failed, was skipped, or lacks the metric: the words a page shows.
    Failed(String),
    /// Several records match: the parameters that tell them apart must be given.
    Ambiguous(String),
    /// The record is a deliberate skip (not measured at that point by design): a claim over
    /// `*` leaves such points out, a value shows why.
    Skipped(String),
}

impl NoValue {
    pub fn text(&self) -> &str {
        match self {
            NoValue::Missing(s) | NoValue::Failed(s) | NoValue::Ambiguous(s) | NoValue::Skipped(s) => s,
        }
    }
}

/// The parameters of a reference at a point: its fixed ones, and the point's for its `*` ones.
fn fixed(r: &Ref, point: &Point) -> BTreeMap<String, u64> {
    r.params
        .iter()
        .filter_map(|(k, p)| match p {
            Param::Is(v) => Some((k.clone(), *v)),
            Param::Every => point.get(k).map(|v| (k.clone(), *v)),
        })
        .collect()
}

/// The file a reference reads on machine `file`: that one, unless it is pinned elsewhere.
fn file_for<'f>(r: &Ref, file: &'f ResultsFile, all: &[&'f ResultsFile]) -> Option<&'f ResultsFile> {
    match &r.device {
        None => Some(file),
        Some(d) if records::device_matches(file, Some(d)) => Some(file),
        Some(d) => all.iter().copied().find(|f| records::device_matches(f, Some(d))),
    }
}

/// The one record a reference names at a point.
pub fn record<'f>(r: &Ref, file: &'f ResultsFile, point: &Point) -> Result<&'f Record, NoValue> {
    let params = fixed(r, point);
    let found = records::matching(file, &r.family, &r.variant, &params);
    match found.len() {
        0 => Err(NoValue::Missing(format!(
            "no record of {}/{}{} on {}",
            r.family,
            r.variant,
            at_params(&params),
            file.device.name
        ))),
        1 => Ok(found[0]),
        _ => Err(NoValue::Ambiguous(format!(
            "{}/{}{} matches {} records; give {}",
            r.family,
            r.variant,
            at_params(&params),
            found.len(),
            varying(&found).join(", ")
        ))),
    }
}

/// The parameters that differ between records, each with its values: "n ∈ {1024, 2048}".
fn varying(recs: &[&Record]) -> Vec<String> {
    let keys: BTreeSet<&String> = recs.iter().flat_map(|r| r.params.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let vals: BTreeSet<Option<&u64>> = recs.iter().map(|r| r.params.get(k)).collect();
            (vals.len() > 1).then(|| {
                let vs: Vec<String> = vals.into_iter().flatten().map(|v| v.to_string()).collect();
                format!("{k} ∈ {{{}}}", vs.join(", "))
            })
        })
        .collect()
}

/// " at n=4096, d=128", or nothing without parameters.
fn at_params(p: &BTreeMap<String, u64>) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!(" at {}", show_params(p))
    }
}

/// "n=4096, d=128".
pub fn show_params(p: &BTreeMap<String, u64>) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The number a reference reads at a point on machine `file`.
pub fn ref_value(r: &Ref, file: &ResultsFile, all: &[&ResultsFile], point: &Point) -> Result<f64, NoValue> {
    let Some(f) = file_for(r, file, all) else {
        return Err(NoValue::Missing(format!(
            "no results of a machine matching `@{}`",
            r.device.as_deref().unwrap_or("")
        )));
    };
    let rec = record(r, f, point)?;
    if rec.outcome.is_skip() {
        return Err(NoValue::Skipped(
            records::failure_text(crate::measure::results::FailStage::Unsupported).to_string(),
        ));
    }
    let t = records::judge(rec).map_err(|why| NoValue::Failed(why.to_string()))?;
    Metric::parse(&r.metric).value(t).map_err(NoValue::Failed)
}

/// The value of an expression at a point.
pub fn expr_value(e: &Expr, file: &ResultsFile, all: &[&ResultsFile], point: &Point) -> Result<f64, NoValue> {
    match e {
        Expr::Num(v) => Ok(*v),
        Expr::Ref(r) => ref_value(r, file, all, point),
        Expr::Mul(a, b) => Ok(expr_value(a, file, all, point)? * expr_value(b, file, all, point)?),
        Expr::Div(a, b) => {
            let d = expr_value(b, file, all, point)?;
            if d == 0.0 {
                return Err(NoValue::Failed("division by zero".into()));
            }
            Ok(expr_value(a, file, all, point)? / d)
        }
    }
}

/// The parameters some reference leaves as `*`.
fn every_keys<'a>(refs: &[&'a Ref]) -> BTreeSet<&'a String> {
    refs.iter()
        .flat_map(|r| {
            r.params
                .iter()
                .filter(|(_, p)| **p == Param::Every)
                .map(|(k, _)| k)
        })
        .collect()
}

/// The points of some references on machine `file`: each assignment of their `*` parameters
/// that all of them have records for (one empty point when there is no `*`).
pub fn points(refs: &[&Ref], file: &ResultsFile) -> Vec<Point> {
    let keys = every_keys(refs);
    if keys.is_empty() {
        return vec![Point::new()];
    }
    let mut common: Option<BTreeSet<Point>> = None;
    for r in refs.iter().filter(|r| {
        r.device
            .as_ref()
            .is_none_or(|d| records::device_matches(file, Some(d)))
    }) {
        let free = fixed(r, &Point::new());
        let seen: BTreeSet<Point> = records::matching(file, &r.family, &r.variant, &free)
            .iter()
            .filter_map(|rec| {
                keys.iter()
                    .map(|k| rec.params.get(*k).map(|v| ((*k).clone(), *v)))
                    .collect()
            })
            .collect();
        common = Some(match common {
            None => seen,
            Some(c) => c.intersection(&seen).cloned().collect(),
        });
    }
    common.unwrap_or_default().into_iter().collect()
}

/// A claim's verdict on one machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// It holds at every point (how many).
    Holds(usize),
    /// It fails at a point: the numbers that break it.
    Fails(String),
    /// It could not be checked here: why.
    Unchecked(String),
}

/// Evaluate a claim on machine `file`.
pub fn verdict(cond: &Cond, file: &ResultsFile, all: &[&ResultsFile]) -> Verdict {
    if let Cond::All(parts) = cond {
        return every(parts, file, all);
    }
    let refs: Vec<&Ref> = cond.exprs().iter().flat_map(|e| e.refs()).collect();
    let pts = points(&refs, file);
    if pts.is_empty() {
        return Verdict::Unchecked(format!("no common records on {}", file.device.name));
    }
    match cond {
        Cond::Compare(exprs, cmps) => compare(exprs, cmps, &pts, file, all),
        Cond::Trend(up, e) => trend(*up, e, &refs, &pts, file, all),
        Cond::All(parts) => every(parts, file, all),
    }
}

/// `a and b`: false when a part is false, unchecked when a part cannot be checked, else it
/// holds at all the parts' points together.
fn every(parts: &[Cond], file: &ResultsFile, all: &[&ResultsFile]) -> Verdict {
    let verdicts: Vec<Verdict> = parts.iter().map(|p| verdict(p, file, all)).collect();
    if let Some(v) = verdicts.iter().find(|v| matches!(v, Verdict::Fails(_))) {
        return v.clone();
    }
    if let Some(v) = verdicts.iter().find(|v| matches!(v, Verdict::Unchecked(_))) {
        return v.clone();
    }
    Verdict::Holds(
        verdicts
            .iter()
            .map(|v| match v {
                Verdict::Holds(n) => *n,
                _ => 0,
            })
            .sum(),
    )
}

fn compare(
    exprs: &[Expr],
    cmps: &[super::syntax::Cmp],
    pts: &[Point],
    file: &ResultsFile,
    all: &[&ResultsFile],
) -> Verdict {
    let mut unchecked = None;
    let mut skipped = 0;
    for p in pts {
        let vals: Result<Vec<f64>, NoValue> = exprs.iter().map(|e| expr_value(e, file, all, p)).collect();
        let vals = match vals {
            Ok(v) => v,
            // A point the plan skips on purpose is not measured: "every measured value" leaves it out.
            Err(NoValue::Skipped(_)) if !p.is_empty() => {
                skipped += 1;
                continue;
            }
            Err(why) => {
                unchecked.get_or_insert(why.text().to_string());
                continue;
            }
        };
        if let Some(i) = (0..cmps.len()).find(|&i| !cmps[i].holds(vals[i], vals[i + 1])) {
            let at = if p.is_empty() {
                String::new()
            } else {
                format!(" at {}", show_params(p))
            };
            return Verdict::Fails(format!(
                "{} {} {} is false{at} on {}",
                describe(&exprs[i], vals[i]),
                cmps[i].symbol(),
                describe(&exprs[i + 1], vals[i + 1]),
                file.device.name
            ));
        }
    }
    match unchecked {
        Some(why) => Verdict::Unchecked(why),
        None if skipped == pts.len() => Verdict::Unchecked("every point is skipped by the plan".into()),
        None => Verdict::Holds(pts.len() - skipped),
    }
}

fn trend(
    up: bool,
    e: &Expr,
    refs: &[&Ref],
    pts: &[Point],
    file: &ResultsFile,
    all: &[&ResultsFile],
) -> Verdict {
    let keys = every_keys(refs);
    let [key] = keys.into_iter().collect::<Vec<_>>()[..] else {
        return Verdict::Unchecked("a trend needs exactly one `*` parameter".into());
    };
    let mut series: Vec<(u64, f64)> = Vec::new();
    for p in pts {
        match expr_value(e, file, all, p) {
            Ok(v) => series.push((p[key], v)),
            Err(NoValue::Skipped(_)) => {}
            Err(why) => return Verdict::Unchecked(why.text().to_string()),
        }
    }
    series.sort_by_key(|(x, _)| *x);
    for w in series.windows(2) {
        let ok = if up { w[1].1 > w[0].1 } else { w[1].1 < w[0].1 };
        if !ok {
            return Verdict::Fails(format!(
                "{key}={}: {} then {key}={}: {} does not {} on {}",
                w[0].0,
                describe(e, w[0].1),
                w[1].0,
                describe(e, w[1].1),
                if up { "rise" } else { "fall" },
                file.device.name
            ));
        }
    }
    if series.len() < 2 {
        return Verdict::Unchecked(format!("fewer than two points along `{key}`"));
    }
    Verdict::Holds(series.len())
}

/// A side of a comparison with its value, as a reader checks it: "attention/flash_tc 612 TFLOP/s",
/// a plain number, or a ratio "0.957".
pub fn describe(e: &Expr, v: f64) -> String {
    match e {
        Expr::Num(_) => crate::records::metric::sig3(v),
        Expr::Ref(r) => format!(
            "{}/{} {}",
            r.family,
            r.variant,
            Metric::parse(&r.metric).format(v)
        ),
        _ => format!("{} = {v:.3}", show_expr(e)),
    }
}

/// An expression as a reader recognizes it: "attention/flash_tc / attention/standard".
fn show_expr(e: &Expr) -> String {
    match e {
        Expr::Num(v) => crate::records::metric::sig3(*v),
        Expr::Ref(r) => format!("{}/{}", r.family, r.variant),
        Expr::Mul(a, b) => format!("{} × {}", show_expr(a), show_expr(b)),
        Expr::Div(a, b) => format!("{} / {}", show_expr(a), show_expr(b)),
    }
}
