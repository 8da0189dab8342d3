//! Text report of a results file: every record, then the best variant of each family against
//! its baseline measured in the same run. Printed by `bench` (and read back from the device
//! machine's log when the suite runs there).
//!
//! Why plain text: it must be readable in a terminal and in a log copied back from a GPU machine.

use crate::measure::{self, results::Outcome, results::ResultsFile};
use std::fmt::Write;

/// The report for the records of `families` (all families when empty).
pub fn summary(file: &ResultsFile, families: &[String]) -> String {
    let mut out = String::new();
    macro_rules! o {
        ($($t:tt)*) => {{ let _ = writeln!(out, $($t)*); }};
    }
    o!(
        "{:<10} {:<22} {:<24} {:>10} {:>12} {:>17} {:>9} {:>5}",
        "family",
        "variant",
        "params",
        "median ms",
        "metric",
        "p10..p90 ms",
        "rel err",
        "reps"
    );
    let selected: Vec<&str> = if families.is_empty() {
        measure::families().to_vec()
    } else {
        families.iter().map(|s| s.as_str()).collect()
    };
    for r in file
        .records
        .iter()
        .filter(|r| selected.contains(&r.family.as_str()))
    {
        let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        match &r.outcome {
            Outcome::Ok(t) => o!(
                "{:<10} {:<22} {:<24} {:>10.4} {:>8.1} {:<4} {:>8.4}..{:<8.4} {:>9.1e} {:>5}",
                r.family,
                r.variant,
                params.join(","),
                t.median_ms,
                measure::metric(r).unwrap_or(f64::NAN),
                if measure::metric_unit(&r.family) == "GB/s" {
                    "GB/s"
                } else {
                    "GF/s"
                },
                t.p10_ms,
                t.p90_ms,
                t.rel_error,
                t.reps
            ),
            Outcome::Failed { stage, error } => {
                o!(
                    "{:<10} {:<22} {:<24} FAILED ({stage:?}): {}",
                    r.family,
                    r.variant,
                    params.join(","),
                    error.lines().next().unwrap_or("")
                )
            }
        }
    }
    o!("\n# best variant per family vs baseline (same run)");
    o!(
        "{:<10} {:<24} {:<22} {:>12} {:>12} {:>7}",
        "family",
        "params",
        "best variant",
        "best",
        "baseline",
        "%"
    );
    let mut slots: Vec<(String, std::collections::BTreeMap<String, u64>)> = Vec::new();
    for r in file
        .records
        .iter()
        .filter(|r| selected.contains(&r.family.as_str()))
    {
        if !slots.iter().any(|(f, p)| *f == r.family && *p == r.params) {
            slots.push((r.family.clone(), r.params.clone()));
        }
    }
    for (fam, params) in &slots {
        let recs: Vec<_> = file
            .records
            .iter()
            .filter(|r| &r.family == fam && &r.params == params)
            .collect();
        let base = measure::baseline_ok(recs.iter().copied(), fam, params);
        let mut groups: Vec<(&str, Vec<&measure::results::Record>)> = vec![("", recs.clone())];
        if fam == "bandwidth" {
            groups = vec![
                (
                    "copy",
                    recs.iter()
                        .copied()
                        .filter(|r| r.variant.starts_with("copy"))
                        .collect(),
                ),
                (
                    "add",
                    recs.iter()
                        .copied()
                        .filter(|r| r.variant.starts_with("vector_add"))
                        .collect(),
                ),
            ];
        }
        for (_, g) in groups {
            let Some(best) = measure::best_ok(g.iter().copied(), fam, Some(params)) else {
                continue;
            };
            let (b, bl) = (
                measure::metric(best).unwrap_or(f64::NAN),
                base.and_then(measure::metric),
            );
            let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            o!(
                "{:<10} {:<24} {:<22} {:>12.1} {:>12} {:>6.1}%",
                fam,
                p.join(","),
                best.variant,
                b,
                bl.map(|x| format!("{x:.1}")).unwrap_or("-".into()),
                bl.map(|x| 100.0 * b / x).unwrap_or(f64::NAN)
            );
        }
    }
    out
}
