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
