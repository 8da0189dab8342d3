//! What `check` says about a value or claim: references that name nothing (with the names that
//! exist), values no shipped machine has a verified number for, and claims the shipped records
//! contradict, each with the numbers that break it.

use super::eval::{self, NoValue, Point, Verdict};
use super::syntax::{Cond, Expr, Param, Ref};
use crate::measure::results::ResultsFile;
use crate::records::{self, Metric};
use std::collections::BTreeSet;

/// A problem to report: error or warning, message, hint.
pub struct Problem {
    pub error: bool,
    pub message: String,
    pub hint: String,
}

fn error(message: String, hint: String) -> Problem {
    Problem {
        error: true,
        message,
        hint,
    }
}

/// Every reference names records that exist somewhere, and its metric is one they have.
pub fn references(refs: &[&Ref], files: &[&ResultsFile]) -> Vec<Problem> {
    refs.iter().filter_map(|r| reference(r, files)).collect()
}

fn reference(r: &Ref, files: &[&ResultsFile]) -> Option<Problem> {
    let fam: Vec<_> = files
        .iter()
        .flat_map(|f| f.records.iter())
        .filter(|x| x.family == r.family)
        .collect();
    if fam.is_empty() {
        let known: BTreeSet<&str> = files
            .iter()
            .flat_map(|f| f.records.iter().map(|x| x.family.as_str()))
            .collect();
        return Some(error(
            format!("unknown family `{}`", r.family),
            format!(
                "families with records: {}",
                known.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    if r.variant != "baseline" && !fam.iter().any(|x| x.variant == r.variant) {
        let known: BTreeSet<&str> = fam.iter().map(|x| x.variant.as_str()).collect();
        return Some(error(
            format!("`{}` has no variant `{}`", r.family, r.variant),
            format!(
                "its variants: {} (or `baseline`)",
                known.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let free = free_params(r);
    let matched: Vec<_> = files
        .iter()
        .flat_map(|f| records::matching(f, &r.family, &r.variant, &free))
        .collect();
    if matched.is_empty() {
        return Some(error(
            format!(
                "no record of {}/{} has {}",
                r.family,
                r.variant,
                eval::show_params(&free)
            ),
            param_values(r, files),
        ));
    }
    let metric = Metric::parse(&r.metric);
    if let Metric::Named(n) = &metric {
        let has =
            |x: &&crate::measure::results::Record| records::judge(x).is_ok_and(|t| t.metrics.contains_key(n));
        if !matched.iter().any(has) {
            let keys: BTreeSet<&str> = matched
                .iter()
                .filter_map(|x| records::judge(x).ok())
                .flat_map(|t| t.metrics.keys().map(String::as_str))
                .collect();
            let hint = if keys.is_empty() {
                "these records have no named metrics: use time, tflops or gbps".to_string()
            } else {
                format!(
                    "use time, tflops, gbps or one of: {}",
                    keys.into_iter().collect::<Vec<_>>().join(", ")
                )
            };
            return Some(error(
                format!("{}/{} records no metric `{n}`", r.family, r.variant),
                hint,
            ));
        }
    }
    None
}

/// A reference's given (non-`*`) parameters.
fn free_params(r: &Ref) -> std::collections::BTreeMap<String, u64> {
    r.params
        .iter()
        .filter_map(|(k, p)| match p {
            Param::Is(v) => Some((k.clone(), *v)),
            Param::Every => None,
        })
        .collect()
}

/// "n ∈ {512, 1024}; d ∈ {64, 128}" for the parameters a reference gives.
fn param_values(r: &Ref, files: &[&ResultsFile]) -> String {
    let recs: Vec<_> = files
        .iter()
        .flat_map(|f| records::matching(f, &r.family, &r.variant, &Default::default()))
        .collect();
    let parts: Vec<String> = r
        .params
        .keys()
        .map(|k| {
            let vals: BTreeSet<u64> = recs.iter().filter_map(|x| x.params.get(k).copied()).collect();
            if vals.is_empty() {
                format!("`{k}` is not a parameter of these records")
            } else {
                let v: Vec<String> = vals.iter().map(u64::to_string).collect();
                format!("{k} ∈ {{{}}}", v.join(", "))
            }
        })
        .collect();
    format!("measured: {}", parts.join("; "))
}

/// A value must be a verified number on at least one shipped machine, and name one record there.
pub fn value(e: &Expr, files: &[&ResultsFile]) -> Option<Problem> {
    if e.refs()
        .iter()
        .any(|r| r.params.values().any(|p| *p == Param::Every))
    {
        return Some(error(
            "a value cannot use `*`".into(),
            "pin every parameter; `*` is for claims".into(),
        ));
    }
    let shipped: Vec<&ResultsFile> = files
        .iter()
        .copied()
        .filter(|f| records::is_shipped(&f.device.name))
        .collect();
    let mut why = None;
    for f in &shipped {
        match eval::expr_value(e, f, files, &Point::new()) {
            Ok(_) => return None,
            Err(NoValue::Ambiguous(s)) => {
                return Some(error(
                    s,
                    "a value names one record: give the parameters that differ".into(),
                ))
            }
            Err(w) => why = why.or(Some(w.text().to_string())),
        }
    }
    Some(error(
        format!(
            "no shipped machine has a verified number for this value ({})",
            why.unwrap_or_default()
        ),
        "pick a record that was measured and verified on the H100 or H200".into(),
    ))
}

/// A claim must hold on every shipped machine that can check it, and be checkable on one.
pub fn claim(c: &Cond, files: &[&ResultsFile]) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut checked = false;
    let mut why = Vec::new();
    for f in files
        .iter()
        .copied()
        .filter(|f| records::is_shipped(&f.device.name))
    {
        match eval::verdict(c, f, files) {
            Verdict::Holds(_) => checked = true,
            Verdict::Fails(detail) => {
                checked = true;
                out.push(error(
                    format!("claim is false on the shipped results: {detail}"),
                    "rewrite the sentence (and its claim) so that it holds, with a margin wider than run-to-run noise".into(),
                ));
            }
            Verdict::Unchecked(w) => why.push(w),
        }
    }
    if !checked {
        out.push(Problem {
            error: false,
            message: format!(
                "claim cannot be checked on any shipped machine ({})",
                why.join("; ")
            ),
            hint: "name records that were measured and verified on the H100 or H200".into(),
        });
    }
    out
}
