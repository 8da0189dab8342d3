//! Numbers with a measured unit in prose that are neither inline values nor marked as what they
//! are.
//!
//! Why: a typed "811 tok/s" or "3.07×" is one run's number on one machine; on the reader's GPU it
//! is unverified. Such a number belongs in `{{ … }}` (read from the records). Numbers that are not
//! measurements — a datasheet peak, a paper's result, a calculation — may be typed, but the
//! sentence says so, with one of [`MARKERS`] (e.g. "989 TFLOP/s(데이터시트)", "약 60.8 µs(계산)").
//! Math, code, HTML and the references section are not prose and are not looked at.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use regex::Regex;
use std::ops::Range;
use std::sync::OnceLock;

/// Words that mark a sentence's typed numbers as not measured here.
pub const MARKERS: &[&str] = &[
    "데이터시트",
    "datasheet",
    "논문",
    "paper",
    "계산",
    "calculated",
    "이론",
    "가정",
    "사양",
    // others' published benchmark results (an issue, a README), cited as theirs
    "보고된 수치",
    "reported",
];

/// Words that contain a marker but do not mark anything ("재계산" is recomputation, not a
/// calculated number).
const NOT_MARKERS: &[&str] = &["재계산"];

/// A typed number with a measured unit: where it is in the body and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub offset: usize,
    pub text: String,
}

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?:^|[^\w.,])(\d[\d,]*(?:\.\d+)?(?:\s?(?:[TGP]FLOP/?[sS]|[TGM]B/s|tok/s|tokens?/s|ms|µs|ns)|×)|\d[\d,]*\.\d+\s?배)",
        )
        .expect("valid pattern")
    })
}

/// Text of one block (a paragraph, heading, list item's own text, or table row) with the body
/// offset of each piece.
#[derive(Default)]
struct Block {
    text: String,
    /// (position in `text`, offset in the body) at each piece's start.
    marks: Vec<(usize, usize)>,
    /// A table row: the header row's text, whose markers cover the row.
    header: Option<String>,
}

impl Block {
    fn push(&mut self, t: &str, at: usize) {
        self.marks.push((self.text.len(), at));
        self.text.push_str(t);
    }
    fn offset_of(&self, pos: usize) -> usize {
        let i = self.marks.partition_point(|(p, _)| *p <= pos).saturating_sub(1);
        self.marks.get(i).map_or(0, |(p, off)| off + (pos - p))
    }
}

/// Every unmarked number with a measured unit in `body` (the part before `stop_at`, the
/// references heading, when given).
pub fn find(body: &str, stop_at: Option<&str>) -> Vec<Finding> {
    let end = stop_at.and_then(|h| body.find(h)).unwrap_or(body.len());
    let mut out = Vec::new();
    let mut stack: Vec<Block> = Vec::new();
    let mut header_text = String::new();
    let mut in_head = false;
    for (ev, range) in Parser::new_ext(&body[..end], crate::markup::options()).into_offset_iter() {
        match ev {
            Event::Start(Tag::Paragraph | Tag::Heading { .. } | Tag::Item | Tag::TableRow) => {
                stack.push(Block::default())
            }
            Event::Start(Tag::TableHead) => {
                in_head = true;
                header_text.clear();
                stack.push(Block::default());
            }
            Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::TableRow | TagEnd::TableHead,
            ) => {
                if let Some(mut b) = stack.pop() {
                    if in_head {
                        header_text = b.text.clone();
                        in_head = false;
                    } else if !header_text.is_empty() {
                        b.header = Some(header_text.clone());
                    }
                    out.extend(scan_block(&b));
                }
            }
            Event::End(TagEnd::Table) => header_text.clear(),
            Event::End(TagEnd::TableCell) => {
                if let Some(b) = stack.last_mut() {
                    b.push(" | ", range.end);
                }
            }
            Event::Text(t) => {
                if let Some(b) = stack.last_mut() {
                    b.push(&t, range.start);
                }
            }
            // `$\approx 716$ µs`: the number is math, its unit prose; the pair is still a typed
            // measurement. The math stands in as its trailing number (or as a word).
            Event::InlineMath(latex) => {
                if let Some(b) = stack.last_mut() {
                    b.push(&trailing_number(&latex), range.start);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(b) = stack.last_mut() {
                    b.push(" ", range.start);
                }
            }
            _ => {}
        }
    }
    out
}

/// The findings of one block: sentence by sentence (a table row as a whole, with its header).
fn scan_block(b: &Block) -> Vec<Finding> {
    let marked = |s: &str| {
        if !MARKERS.iter().any(|m| s.contains(m)) {
            return false;
        }
        if !NOT_MARKERS.iter().any(|n| s.contains(n)) {
            return true;
        }
        let mut t = s.to_string();
        for n in NOT_MARKERS {
            t = t.replace(n, "");
        }
        MARKERS.iter().any(|m| t.contains(m))
    };
    if b.header.as_deref().is_some_and(marked) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (start, sentence) in sentences(&b.text) {
        if marked(sentence) {
            continue;
        }
        for c in pattern().captures_iter(sentence) {
            let m = c.get(1).expect("group 1");
            if m.as_str().ends_with('×') && continues_as_product(&sentence[m.end()..]) {
                continue;
            }
            out.push(Finding {
                offset: b.offset_of(start + m.start()),
                text: m.as_str().to_string(),
            });
        }
    }
    out
}

/// What a formula stands for in the lint's text: its trailing number when the formula is only
/// that number (`$1.04$`, `$\\approx 1.04$`), so that a unit after it is looked at; a formula
/// that computes (`$a / b \\approx 1.04$`) shows its own calculation and stands as a word.
fn trailing_number(latex: &str) -> String {
    let t = latex.trim_end();
    let digits: String = t
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ','))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let head = &t[..t.len() - digits.len()];
    let computes = ["/", "\\times", "\\cdot", "+", "-", "*", "\\frac", "^", "="]
        .iter()
        .any(|op| head.contains(op));
    if digits.starts_with(|c: char| c.is_ascii_digit())
        && !computes
        && head.chars().last().is_none_or(|c| !c.is_alphanumeric())
    {
        format!(" {digits}")
    } else {
        " x".into()
    }
}

/// "3×4,096" or "2×(a+b)": a product being written out, not a ratio. (A "×" after a space, as in
/// "3 × 4,096" or "128 × causal", never counts: a measured ratio is written "3.07×".)
fn continues_as_product(rest: &str) -> bool {
    rest.trim_start()
        .starts_with(|c: char| c.is_ascii_digit() || c == '(' || c == '$')
}

/// Sentences with their start: a stop (`.`, `?`, `!`, `다.`) followed by a space ends one; a
/// decimal point does not.
fn sentences(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '?' | '!') && bytes.get(i + 1).is_some_and(|b| *b == b' ') {
            out.push((start, &text[start..=i]));
            start = i + 2;
        }
    }
    if start < text.len() {
        out.push((start, &text[start..]));
    }
    out
}

/// The byte range of a finding in its card file.
pub fn range(f: &Finding, body_offset: usize) -> Range<usize> {
    body_offset + f.offset..body_offset + f.offset + f.text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(body: &str) -> Vec<String> {
        find(body, Some("## 참고 자료"))
            .into_iter()
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn typed_measurements_are_found_and_marked_ones_are_not() {
        assert_eq!(
            texts("s7는 811 tok/s를 냈다. 속도는 3.07×였다.\n"),
            ["811 tok/s", "3.07×"]
        );
        assert_eq!(texts("paged는 1.24배 느렸다. K가 8배 짧아진다.\n"), ["1.24배"]);
        assert!(texts("peak는 989 TFLOP/s(데이터시트)다.\n").is_empty());
        assert!(texts("하한은 약 60.8 µs(계산)다.\n").is_empty());
        assert!(texts("vLLM은 A800에서 8,588 token/s다(보고된 수치).\n").is_empty());
        assert_eq!(
            texts("보고된 8,588 token/s다.\n"),
            ["8,588 token/s"],
            "보고된 alone is not a mark"
        );
        assert!(texts("곱은 3 × 4,096 × 14,336 = 176,160,768이다.\n").is_empty());
        assert!(texts("수식 $x = 3.2\\,\\text{ms}$ 와 `5 ms` 는 prose가 아니다.\n").is_empty());
        assert!(texts("## 참고 자료\n\n- H100: 3.35 TB/s\n").is_empty());
        assert_eq!(texts("앞 문장(계산)은 2 ms. 뒤 문장은 5 ms.\n"), ["5 ms"]);
        assert_eq!(
            texts("하한은 $\\approx 716$ µs다.\n").len(),
            1,
            "a number in math, its unit outside"
        );
        assert!(texts("하한은 $\\approx 716$ µs다(계산).\n").is_empty());
        assert!(texts("$10^{3}$ ms는 1 s다.\n").is_empty() || texts("$10^{3}$ ms는 1 s다.\n") == [" x ms"]);
        assert_eq!(
            texts("재계산에 120 ms가 든다.\n"),
            ["120 ms"],
            "재계산 is not a marker"
        );
    }

    #[test]
    fn a_table_header_marks_its_rows() {
        let t = "| 크기 | 시간 (계산) |\n|---|---|\n| 1 | 2.5 ms |\n";
        assert!(texts(t).is_empty());
        let t = "| 크기 | 시간 |\n|---|---|\n| 1 | 2.5 ms |\n";
        assert_eq!(texts(t), ["2.5 ms"]);
    }

    #[test]
    fn offsets_point_at_the_number() {
        let body = "첫 줄.\n\n둘째 줄은 **굵게** 12 GB/s다.\n";
        let f = &find(body, None)[0];
        assert_eq!(&body[f.offset..f.offset + f.text.len()], "12 GB/s");
    }
}
