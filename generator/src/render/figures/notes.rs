//! Footnotes for points a figure does not draw: "측정하지 않음¹" (skipped, with why) or
//! "실행 실패²" (it ran and failed) in the chart or table, the reason once under the figure.
//!
//! Why: a failed or skipped record must be visible where its number would be, but its raw
//! error text ("RuntimeError: The size of tensor a (624) …", a 100-character skip reason) does
//! not belong in a chart label or a table cell. One mark per distinct reason keeps the cell short
//! and says the reason once, with the items it applies to; an exception's text stays available,
//! folded, for whoever debugs the lab.

use super::format::{esc, superscript};
use crate::measure::results::{FailStage, Outcome, Record};
use std::fmt::Write as _;

/// Why a record has no number: the short text shown in its place and the reason.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Why {
    /// "측정하지 않음", "실행 실패", "검증 실패", "측정 오류", "값 없음".
    pub(super) kind: &'static str,
    /// A reason in words (a skip reason, a stage, a tolerance), never an exception's text.
    pub(super) reason: String,
    /// The error message of a crash or a failed launch, shown folded.
    pub(super) error: Option<String>,
}

/// Why a record that a figure may not draw as a number has none. `None` for a record whose
/// outcome looks fine (a view then judged it for another reason, e.g. a missing metric).
pub(super) fn why(rec: &Record) -> Option<Why> {
    match &rec.outcome {
        Outcome::Failed { stage, error } => Some(failed(*stage, error)),
        Outcome::Ok(t) => {
            let verified = t.rel_error.is_finite()
                && t.tolerance.is_finite()
                && t.rel_error >= 0.0
                && t.rel_error <= t.tolerance;
            if !verified {
                let err = if t.rel_error.is_finite() && t.tolerance.is_finite() {
                    format!(" (상대 오차 {:.1e}, 허용 {:.1e})", t.rel_error, t.tolerance)
                } else {
                    " (상대 오차를 잴 수 없다)".into()
                };
                return Some(Why {
                    kind: "검증 실패",
                    reason: format!("결과가 기준과 다르다{err} — 숫자를 그리지 않는다"),
                    error: None,
                });
            }
            let ok = t.median_ms.is_finite() && t.median_ms > 0.0 && t.reps > 0;
            (!ok).then(|| Why {
                kind: "측정 오류",
                reason: "시간이 0이거나 유효하지 않다 (invalid timing) — 숫자를 그리지 않는다".into(),
                error: None,
            })
        }
    }
}

fn failed(stage: FailStage, error: &str) -> Why {
    let first = error.lines().next().unwrap_or("").trim();
    let stage_words = match stage {
        FailStage::Unsupported => {
            let reason = ["skipped:", "unsupported:", "skipped", "unsupported"]
                .iter()
                .find_map(|p| first.strip_prefix(p))
                .unwrap_or(first)
                .trim();
            return Why {
                kind: "측정하지 않음",
                reason: if reason.is_empty() {
                    "이 기계나 크기에서는 측정 계획에 없다 (skipped)".into()
                } else {
                    reason.to_string()
                },
                error: None,
            };
        }
        FailStage::Verify => {
            return Why {
                kind: "검증 실패",
                reason: "결과가 기준과 다르다 — 숫자를 그리지 않는다".into(),
                error: None,
            }
        }
        FailStage::Compile => "kernel compile 실패 (compile)",
        FailStage::Launch => "실행 중 오류 (launch)",
        FailStage::Crash => "lab 프로세스가 비정상 종료 (crash)",
        FailStage::Timeout => "시간 제한 초과 (timeout)",
        FailStage::Output => "lab이 잘못된 record를 출력 (output)",
    };
    Why {
        kind: "실행 실패",
        reason: stage_words.into(),
        error: (!first.is_empty()).then(|| first.to_string()),
    }
}

/// The footnotes of one figure, numbered in the order their marks were handed out.
#[derive(Default)]
pub(super) struct Footnotes {
    entries: Vec<(Why, Vec<String>)>,
}

impl Footnotes {
    /// The text that stands in for `rec`'s number ("측정하지 않음¹"), noting `item` (the
    /// variant and parameters, in words) under the reason's footnote.
    pub(super) fn mark(&mut self, rec: &Record, item: &str) -> String {
        let w = why(rec).unwrap_or(Why {
            kind: "값 없음",
            reason: "이 record에는 그리는 값이 없다".into(),
            error: None,
        });
        self.mark_why(w, item)
    }

    /// As [`Footnotes::mark`], for a reason a view found itself (a metric the record lacks).
    pub(super) fn mark_why(&mut self, w: Why, item: &str) -> String {
        let i = match self.entries.iter().position(|(e, _)| *e == w) {
            Some(i) => i,
            None => {
                self.entries.push((w, Vec::new()));
                self.entries.len() - 1
            }
        };
        let items = &mut self.entries[i].1;
        if !item.is_empty() && !items.iter().any(|x| x == item) {
            items.push(item.to_string());
        }
        format!("{}{}", self.entries[i].0.kind, superscript(i + 1))
    }

    /// One caption note per footnote: the mark, the kind, the items, the reason, and an
    /// error message folded under "오류 메시지".
    pub(super) fn html(&self) -> Vec<String> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, (w, items))| {
                let mut h = format!(
                    "<span class=\"hdlc-note fail\">{} {}",
                    superscript(i + 1),
                    w.kind
                );
                if !items.is_empty() {
                    let _ = write!(h, " — {}", esc(&items.join("; ")));
                }
                let _ = write!(h, ": {}.", esc(w.reason.trim_end_matches('.')));
                if let Some(e) = &w.error {
                    let _ = write!(
                        h,
                        " <details class=\"hdlc-error\"><summary>오류 메시지</summary><code>{}</code></details>",
                        esc(e)
                    );
                }
                h.push_str("</span>");
                h
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_rec(stage: FailStage, error: &str) -> Record {
        let mut r: Record = serde_json::from_value(serde_json::json!({
            "family": "f", "variant": "v", "label": "v", "rung": 1, "baseline": false,
            "params": {}, "key": "", "source_hash": "",
            "outcome": {"status": "failed", "stage": "launch", "error": ""},
            "provenance": {"generator_version": "0", "git_commit": "", "date": ""}
        }))
        .unwrap();
        r.outcome = Outcome::Failed {
            stage,
            error: error.into(),
        };
        r
    }

    #[test]
    fn exceptions_are_folded_and_skips_explained() {
        let mut n = Footnotes::default();
        let crash = failed_rec(
            FailStage::Launch,
            "RuntimeError: The size of tensor a (624) must match\nTraceback …",
        );
        assert_eq!(n.mark(&crash, "s3"), "실행 실패¹");
        let skip = failed_rec(FailStage::Unsupported, "skipped: out of memory — 96 GiB");
        assert_eq!(n.mark(&skip, "naive, N = 8,192"), "측정하지 않음²");
        assert_eq!(n.mark(&skip, "naive, N = 16,384"), "측정하지 않음²");
        let html = n.html().join("\n");
        assert!(html.contains("<summary>오류 메시지</summary><code>RuntimeError: The size"));
        assert!(!html.contains("Traceback"));
        assert!(html.contains("naive, N = 8,192; naive, N = 16,384: out of memory — 96 GiB."));
        assert!(!html.contains("skipped:"));
    }
}
