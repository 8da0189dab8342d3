//! Values and claims as they appear on a page.
//!
//! A value is a number with its unit that names its machine and record in a tooltip; on the
//! reader's GPU it is the reader's number. A claim wraps its sentence: checked on every machine
//! with records, it gets a small ✓; false on a reader's GPU, the sentence is marked and the
//! numbers that contradict it follow; with no verified records anywhere it is marked unchecked.
//! Output is inline HTML on one line, safe inside Markdown paragraphs, lists and table cells.

use super::eval::{self, NoValue, Point, Verdict};
use super::syntax::{Cond, Expr, Format};
use crate::measure::results::ResultsFile;
use crate::records::{self, Metric};

/// Escape text for an HTML attribute or element.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The short machine name a reader recognizes: "H100" from "NVIDIA H100 80GB HBM3".
pub fn short_device(name: &str) -> String {
    let n = name.trim_start_matches("NVIDIA ").trim();
    n.split_whitespace().next().unwrap_or(n).to_string()
}

/// A value as text, in its unit: one reference in its metric's unit, a ratio with "×".
pub fn format_value(e: &Expr, format: Format, v: f64) -> String {
    match (format, e) {
        (Format::Percent, _) => format!("{}%", records::metric::sig3(v * 100.0)),
        (Format::Auto, Expr::Ref(r)) => Metric::parse(&r.metric).format(v),
        _ => format!("{}×", records::metric::sig3(v)),
    }
}

/// What a value's tooltip says about where it comes from.
fn provenance(e: &Expr, file: &ResultsFile) -> String {
    let refs: Vec<String> = e
        .refs()
        .iter()
        .map(|r| {
            let p: Vec<String> = r
                .params
                .iter()
                .map(|(k, v)| format!("{k}={}", v.show()))
                .collect();
            format!("{}/{} ({}) · {}", r.family, r.variant, p.join(", "), r.metric)
        })
        .collect();
    format!("측정값 · {} · {}", file.device.name, refs.join(" ÷ "))
}

/// An inline value: the first machine (reader's GPU, H100, others) with a verified number.
pub fn value(e: &Expr, format: Format, files: &[&ResultsFile]) -> String {
    let mut first_failure: Option<(String, String)> = None;
    for f in files {
        match eval::expr_value(e, f, files, &Point::new()) {
            Ok(v) => {
                return format!(
                    "<span class=\"hdlc-val\" tabindex=\"0\" title=\"{}\">{}<sup class=\"hdlc-dev\">{}</sup></span>",
                    esc(&provenance(e, f)),
                    esc(&format_value(e, format, v)),
                    esc(&short_device(&f.device.name))
                )
            }
            Err(NoValue::Missing(_)) => {}
            Err(w) => {
                first_failure.get_or_insert((f.device.name.clone(), w.text().to_string()));
            }
        }
    }
    let (device, why) = first_failure.unwrap_or_else(|| ("—".into(), "no record".into()));
    format!(
        "<span class=\"hdlc-val hdlc-val-none\" tabindex=\"0\" title=\"{}\">측정값 없음</span>",
        esc(&format!("{device}: {why}"))
    )
}

/// How a claim reads on the page, from its verdict on every machine with results.
pub struct ClaimMark {
    /// Opening tag, placed before the sentence.
    pub open: String,
    /// Closing tag and the mark or note, placed after it.
    pub close: String,
}

/// The marks of a claim. `files` are in display order; shipped machines are the H100 and H200,
/// every other file is a reader's own GPU.
pub fn claim(c: &Cond, files: &[&ResultsFile]) -> ClaimMark {
    // A machine with no record of the claim's families (the CPU roofline file, a GPU that ran
    // only the kernels) has nothing to say about it: its line would only be noise.
    let families: Vec<&str> = c
        .exprs()
        .iter()
        .flat_map(|e| e.refs())
        .map(|r| r.family.as_str())
        .collect();
    let verdicts: Vec<(&ResultsFile, Verdict)> = files
        .iter()
        .filter(|f| f.records.iter().any(|r| families.contains(&r.family.as_str())))
        .map(|f| (*f, eval::verdict(c, f, files)))
        .collect();
    let line = |f: &ResultsFile, v: &Verdict| match v {
        Verdict::Holds(n) => format!("{}: 성립 ({n}개 측정점)", f.device.name),
        Verdict::Fails(d) => format!("{}: 성립하지 않음 — {d}", f.device.name),
        Verdict::Unchecked(w) => format!("{}: 확인할 수 없음 — {w}", f.device.name),
    };
    let title = verdicts
        .iter()
        .map(|(f, v)| line(f, v))
        .collect::<Vec<_>>()
        .join(" / ");
    let false_on: Vec<(&ResultsFile, &str)> = verdicts
        .iter()
        .filter_map(|(f, v)| match v {
            Verdict::Fails(d) => Some((*f, d.as_str())),
            _ => None,
        })
        .collect();
    if !false_on.is_empty() {
        let notes: Vec<String> = false_on.iter().map(|(_, d)| d.to_string()).collect();
        let whose = if false_on.iter().all(|(f, _)| records::is_shipped(&f.device.name)) {
            "측정한 값으로는"
        } else {
            "당신의 GPU에서 측정한 값으로는"
        };
        return ClaimMark {
            open: format!(
                "<span class=\"hdlc-claim hdlc-claim-false\" title=\"{}\">",
                esc(&title)
            ),
            close: format!(
                "</span><span class=\"hdlc-claim-note\">⚠ 이 문장은 {whose} 성립하지 않는다 — {}</span>",
                esc(&notes.join("; "))
            ),
        };
    }
    if verdicts.iter().any(|(_, v)| matches!(v, Verdict::Holds(_))) {
        return ClaimMark {
            open: format!("<span class=\"hdlc-claim\" title=\"{}\">", esc(&title)),
            close: format!(
                "</span><sup class=\"hdlc-check\" tabindex=\"0\" title=\"측정으로 확인한 문장 · {}\">✓</sup>",
                esc(&title)
            ),
        };
    }
    ClaimMark {
        open: format!("<span class=\"hdlc-claim hdlc-claim-unchecked\" title=\"{}\">", esc(&title)),
        close: format!(
            "</span><sup class=\"hdlc-check hdlc-check-unknown\" tabindex=\"0\" title=\"확인할 수 없는 문장 · {}\">?</sup>",
            esc(&title)
        ),
    }
}
