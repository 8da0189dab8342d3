//! The table of metric and parameter names covers every key the shipped results carry, so no
//! figure, table or inline value falls back to showing an identifier.

use hdlc::measure::results::{Outcome, ResultsFile};
use hdlc::metric_names::{family_title, lookup, param};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn shipped() -> Vec<ResultsFile> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/results");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("kernels/results readable") {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
        }
    }
    assert!(!out.is_empty(), "no shipped results found in {}", dir.display());
    out
}

#[test]
fn every_shipped_metric_and_param_has_words() {
    let (mut metrics, mut params, mut families) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for f in shipped() {
        for r in &f.records {
            families.insert(r.family.clone());
            params.extend(r.params.keys().map(|k| (r.family.clone(), k.clone())));
            if let Outcome::Ok(t) = &r.outcome {
                metrics.extend(t.metrics.keys().cloned());
                metrics.extend(t.series.keys().cloned());
                for table in t.tables.values() {
                    // Numeric columns are metrics; the text columns (names) are not.
                    metrics.extend(table.columns.iter().enumerate().filter_map(|(i, c)| {
                        let numeric = table
                            .rows
                            .iter()
                            .all(|row| matches!(row.get(i), Some(hdlc::measure::results::Cell::Num(_))));
                        (numeric && !table.rows.is_empty()).then(|| c.clone())
                    }));
                }
            }
        }
    }
    assert!(metrics.len() > 20 && params.len() > 20, "{metrics:?} {params:?}");
    let missing: Vec<&String> = metrics.iter().filter(|k| lookup(k).is_none()).collect();
    assert!(
        missing.is_empty(),
        "metrics without words in metric_names: {missing:?}"
    );
    let missing: Vec<&(String, String)> = params.iter().filter(|(f, k)| param(f, k).is_none()).collect();
    assert!(
        missing.is_empty(),
        "params without words in metric_names: {missing:?}"
    );
    // No parameter of a shipped record reads as an identifier.
    let raw: Vec<String> = params
        .iter()
        .map(|(f, k)| hdlc::metric_names::param_name(f, k))
        .filter(|n| n.contains('_'))
        .collect();
    assert!(raw.is_empty(), "parameter names with underscores: {raw:?}");
    let raw: Vec<&String> = families
        .iter()
        .filter(|f| family_title(f).contains('_'))
        .collect();
    assert!(raw.is_empty(), "families without a title: {raw:?}");
}

#[test]
fn every_named_metric_has_a_unit_or_says_why_not() {
    use hdlc::metric_names::{Quantity, METRICS};
    for m in METRICS {
        assert!(!m.label.contains('_'), "{}: label is an identifier", m.key);
        // Only losses, perplexities, entropies and errors are unitless.
        if matches!(m.quantity, Quantity::Plain | Quantity::Error) {
            assert!(
                ["loss", "perplexity", "entropy", "err"]
                    .iter()
                    .any(|w| m.key.contains(w)),
                "{} has no unit",
                m.key
            );
        }
    }
}

/// Metric keys written as literals in the labs' `metrics={...}` dicts (and `metrics["k"] = ...`):
/// a lab whose records are not shipped yet (a multi-GPU lab waiting for its machine) must still
/// have words for what it will measure.
fn lab_metric_keys() -> BTreeSet<(String, String)> {
    let labs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/labs");
    let open = regex::Regex::new(r"metrics\s*=\s*\{").unwrap();
    let key = regex::Regex::new(r#"["']([a-z0-9_]+)["']\s*:"#).unwrap();
    let assign = regex::Regex::new(r#"metrics\[["']([a-z0-9_]+)["']\]\s*="#).unwrap();
    let mut out = BTreeSet::new();
    let mut dirs = vec![labs];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "py") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            for m in open.find_iter(&text) {
                let mut depth = 1;
                let body: String = text[m.end()..]
                    .chars()
                    .take_while(|c| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth > 0
                    })
                    .collect();
                out.extend(key.captures_iter(&body).map(|c| (name.clone(), c[1].to_string())));
            }
            out.extend(
                assign
                    .captures_iter(&text)
                    .map(|c| (name.clone(), c[1].to_string())),
            );
        }
    }
    out
}

#[test]
fn every_metric_a_lab_writes_has_words() {
    let keys = lab_metric_keys();
    let collectives = [
        "algbw_gbps",
        "busbw_gbps",
        "alpha_us",
        "beta_ps_per_byte",
        "fit_gbps",
    ];
    for k in collectives {
        assert!(
            keys.iter().any(|(f, key)| f == "collectives.py" && key == k),
            "the scan did not find `{k}` in collectives.py: {keys:?}"
        );
    }
    let missing: Vec<&(String, String)> = keys.iter().filter(|(_, k)| lookup(k).is_none()).collect();
    assert!(
        missing.is_empty(),
        "lab metrics without words in metric_names: {missing:?}"
    );
    // The collectives lab's params and family, which no shipped record names yet.
    for k in ["bytes", "world"] {
        assert!(
            param("dist_collectives", k).is_some(),
            "param `{k}` of dist_collectives"
        );
    }
    assert!(!family_title("dist_collectives").contains('_'));
}
