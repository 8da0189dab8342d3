//! Text report of a results file: every record, then the best variant of each family against
//! its baseline measured in the same run. Printed by `bench` (and read back from the device
//! machine's log when the suite runs there).
//!
//! Why plain text: it must be readable in a terminal and in a log copied back from a GPU machine.

use crate::measure::results::{Outcome, Record, ResultsFile};
use crate::measure::{self};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The report for the records of `families` (all families when empty).
pub fn summary(file: &ResultsFile, families: &[String]) -> String {
    let selected: Vec<&str> = if families.is_empty() {
        measure::families().to_vec()
    } else {
        families.iter().map(|s| s.as_str()).collect()
    };
    let recs: Vec<&Record> = file
        .records
        .iter()
        .filter(|r| selected.contains(&r.family.as_str()))
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:<22} {:<24} {:>10} {:>12} {:>17} {:>9} {:>5}",
        "family", "variant", "params", "median ms", "metric", "p10..p90 ms", "rel err", "reps"
    );
    for r in &recs {
        let _ = writeln!(out, "{}", record_line(r));
    }
    let _ = writeln!(out, "\n# best variant per family vs baseline (same run)");
    let _ = writeln!(
        out,
        "{:<10} {:<24} {:<22} {:>12} {:>12} {:>7}",
        "family", "params", "best variant", "best", "baseline", "%"
    );
    for line in best_lines(&recs) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// "k=v,k=v".
fn params_text(params: &BTreeMap<String, u64>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One record's row: its timing and figure of merit, or its failure.
fn record_line(r: &Record) -> String {
    let params = params_text(&r.params);
    match &r.outcome {
        Outcome::Ok(t) => format!(
            "{:<10} {:<22} {:<24} {:>10.4} {:>8.1} {:<4} {:>8.4}..{:<8.4} {:>9.1e} {:>5}",
            r.family,
            r.variant,
            params,
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
        Outcome::Failed { stage, error } => format!(
            "{:<10} {:<22} {:<24} FAILED ({stage:?}): {}",
            r.family,
            r.variant,
            params,
            error.lines().next().unwrap_or("")
        ),
    }
}

/// For every (family, params) slot: the best variant against the baseline of the same run
/// (bandwidth: the best copy and the best vector add apart).
fn best_lines(recs: &[&Record]) -> Vec<String> {
    let mut slots: Vec<(&str, &BTreeMap<String, u64>)> = Vec::new();
    for r in recs {
        if !slots.iter().any(|(f, p)| *f == r.family && **p == r.params) {
            slots.push((&r.family, &r.params));
        }
    }
    let mut out = Vec::new();
    for (fam, params) in slots {
        let slot: Vec<&Record> = recs
            .iter()
            .copied()
            .filter(|r| r.family == fam && r.params == *params)
            .collect();
        let base = measure::baseline_ok(slot.iter().copied(), fam, params).and_then(measure::metric);
        let groups: Vec<Vec<&Record>> = if fam == "bandwidth" {
            ["copy", "vector_add"]
                .iter()
                .map(|p| {
                    slot.iter()
                        .copied()
                        .filter(|r| r.variant.starts_with(p))
                        .collect()
                })
                .collect()
        } else {
            vec![slot.clone()]
        };
        for g in groups {
            let Some(best) = measure::best_ok(g.iter().copied(), fam, Some(params)) else {
                continue;
            };
            let b = measure::metric(best).unwrap_or(f64::NAN);
            out.push(format!(
                "{:<10} {:<24} {:<22} {:>12.1} {:>12} {:>6.1}%",
                fam,
                params_text(params),
                best.variant,
                b,
                base.map(|x| format!("{x:.1}")).unwrap_or("-".into()),
                base.map(|x| 100.0 * b / x).unwrap_or(f64::NAN)
            ));
        }
    }
    out
}

/// One line of the "wall time per family" log: the family's wall time split into checking,
/// timed runs and the rest (setting up inputs and references, compiling), then its three slowest
/// items. `phases` is (check s, timed s); `items` (description, s) is sorted in place.
pub fn family_time_line(
    family: &str,
    count: usize,
    secs: f64,
    phases: (f64, f64),
    items: &mut [(String, f64)],
) -> String {
    let (check, timed) = phases;
    let setup = (secs - check - timed).max(0.0);
    items.sort_by(|a, b| b.1.total_cmp(&a.1));
    let slowest: Vec<String> = items
        .iter()
        .take(3)
        .map(|(d, s)| format!("{d} {s:.1} s"))
        .collect();
    let mut line = format!(
        "{family}: {count} item(s) in {secs:.1} s (set-up {setup:.1} s, checks {check:.1} s, timed runs {timed:.1} s)"
    );
    if !slowest.is_empty() {
        let _ = write!(line, "; slowest: {}", slowest.join(", "));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::family_time_line;

    #[test]
    fn family_line_splits_time_and_names_the_slowest() {
        let mut items = vec![
            ("a".to_string(), 1.0),
            ("b".to_string(), 3.0),
            ("c".to_string(), 2.0),
            ("d".to_string(), 0.5),
        ];
        let line = family_time_line("softmax", 4, 10.0, (2.0, 5.0), &mut items);
        assert!(
            line.starts_with("softmax: 4 item(s) in 10.0 s (set-up 3.0 s, checks 2.0 s, timed runs 5.0 s)"),
            "{line}"
        );
        assert!(line.ends_with("slowest: b 3.0 s, c 2.0 s, a 1.0 s"), "{line}");
        // Phases longer than the wall time (clock skew) never give a negative set-up.
        assert!(family_time_line("x", 0, 1.0, (1.0, 1.0), &mut []).contains("set-up 0.0 s"));
    }
}
