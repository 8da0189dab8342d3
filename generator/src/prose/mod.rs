//! Measured numbers and checked claims in card prose.
//!
//! Why: the book re-measures itself on the reader's GPU, so a sentence that types a number from
//! one run ("811 tok/s") or a comparison that held once ("paged is slower at every length") is
//! unverified everywhere else. Instead a card writes `{{ family/variant where … by metric }}`
//! (a value, shown from the records of the machine the page draws) and wraps comparisons in
//! `{{claim …}}…{{/claim}}` (evaluated on every machine with records; false on a shipped machine
//! is an error in `check`, false on the reader's GPU is marked on the page). `syntax` parses,
//! `eval` evaluates, `check` reports, `html` draws, and `lint` finds numbers with a measured unit
//! that are neither values nor marked as datasheet, paper or calculated.

pub mod check;
pub mod eval;
pub mod html;
pub mod lint;
pub mod syntax;

use crate::diag::Diagnostics;
use crate::measure::results::ResultsFile;
use crate::model::Card;
use std::ops::Range;
use syntax::Inline;

/// A card's `{{…}}` pieces, parsed, in source order: (range in the file, parse or error).
pub type Parsed = Vec<(Range<usize>, Result<Inline, syntax::Error>)>;

/// Parse the prose pieces found by `markup::scan` (`(body, range)`, `None` body = unclosed).
pub fn parse_all(pieces: Vec<(Option<String>, Range<usize>)>) -> Parsed {
    let mut v: Parsed = pieces
        .into_iter()
        .map(|(body, range)| {
            let parsed = match body {
                Some(b) => syntax::parse(&b),
                None => Err((
                    0,
                    "`{{` without `}}` on the same line".into(),
                    "close it with `}}`".into(),
                )),
            };
            (range, parsed)
        })
        .collect();
    v.sort_by_key(|(r, _)| r.start);
    v
}

/// Check a card's values and claims against `files` (all results, shipped and the reader's).
pub fn check_card(card: &Card, parsed: &Parsed, files: &[&ResultsFile], diags: &mut Diagnostics) {
    let index = crate::diag::LineIndex::new(&card.source);
    let at = |offset: usize| index.line_col(offset);
    let mut open: Option<usize> = None;
    for (range, p) in parsed {
        let (line, col) = at(range.start);
        let problems: Vec<check::Problem> = match p {
            Err((off, msg, hint)) => {
                let (l, c) = at(range.start + 2 + off);
                diags.error(&card.file, l, c, msg.clone()).hint(hint.clone());
                continue;
            }
            Ok(Inline::ClaimEnd) => {
                match open.take() {
                    None => report(
                        diags,
                        card,
                        (line, col),
                        "`{{/claim}}` without an open `{{claim …}}`",
                        "open the claim before its sentence",
                    ),
                    Some(start) if at(start).0 != line => report(
                        diags,
                        card,
                        at(start),
                        "a claim's sentence must end on the line it starts (`{{/claim}}` is on another line)",
                        "close the claim before the line ends",
                    ),
                    Some(_) => {}
                }
                continue;
            }
            Ok(Inline::Claim(cond)) => {
                if open.replace(range.start).is_some() {
                    report(
                        diags,
                        card,
                        (line, col),
                        "claims do not nest: `{{claim …}}` before the previous `{{/claim}}`",
                        "close the previous claim first",
                    );
                }
                let refs: Vec<_> = cond.exprs().iter().flat_map(|e| e.refs()).collect();
                let mut v = check::references(&refs, files);
                if v.is_empty() {
                    v = check::claim(cond, files);
                }
                v
            }
            Ok(Inline::Value(val)) => {
                let mut v = check::references(&val.expr.refs(), files);
                if v.is_empty() {
                    v.extend(check::value(&val.expr, files));
                }
                v
            }
        };
        for pr in problems {
            let d = if pr.error {
                diags.error(&card.file, line, col, pr.message)
            } else {
                diags.warning(&card.file, line, col, pr.message)
            };
            d.hint(pr.hint);
        }
    }
    if let Some(start) = open {
        report(
            diags,
            card,
            at(start),
            "`{{claim …}}` is never closed",
            "end its sentence with `{{/claim}}`",
        );
    }
}

fn report(diags: &mut Diagnostics, card: &Card, (line, col): (usize, usize), msg: &str, hint: &str) {
    diags.error(&card.file, line, col, msg).hint(hint);
}

/// What replaces each piece on the page, by its range (pieces that failed to parse become
/// nothing: `check` has reported them). `files` are in display order.
pub fn replacements(parsed: &Parsed, files: &[&ResultsFile]) -> Vec<(Range<usize>, String)> {
    let mut out = Vec::new();
    let mut pending_close: Option<String> = None;
    for (range, p) in parsed {
        let text = match p {
            Ok(Inline::Value(v)) => html::value(&v.expr, v.format, files),
            Ok(Inline::Claim(c)) => {
                let mark = html::claim(c, files);
                pending_close = Some(mark.close);
                mark.open
            }
            Ok(Inline::ClaimEnd) => pending_close.take().unwrap_or_default(),
            Err(_) => String::new(),
        };
        out.push((range.clone(), text));
    }
    out
}

/// `hdlc eval`: a value's number, or a claim's verdict, on every results file, plus what `check`
/// would say about it. For authors trying a sentence before they write it.
pub fn explain(body: &str, files: &[&ResultsFile]) -> Result<String, String> {
    let parsed = syntax::parse(body).map_err(|(at, msg, hint)| format!("at {at}: {msg}\n  hint: {hint}"))?;
    let mut out = String::new();
    let problems = match &parsed {
        Inline::Value(v) => {
            for f in files {
                let text = match eval::expr_value(&v.expr, f, files, &eval::Point::new()) {
                    Ok(x) => html::format_value(&v.expr, v.format, x),
                    Err(w) => format!("— ({})", w.text()),
                };
                out.push_str(&format!("{}: {text}\n", f.device.name));
            }
            let mut p = check::references(&v.expr.refs(), files);
            if p.is_empty() {
                p.extend(check::value(&v.expr, files));
            }
            p
        }
        Inline::Claim(c) => {
            for f in files {
                let v = match eval::verdict(c, f, files) {
                    eval::Verdict::Holds(n) => format!("holds at {n} point(s)"),
                    eval::Verdict::Fails(d) => format!("FALSE: {d}"),
                    eval::Verdict::Unchecked(w) => format!("unchecked: {w}"),
                };
                out.push_str(&format!("{}: {v}\n", f.device.name));
            }
            let refs: Vec<_> = c.exprs().iter().flat_map(|e| e.refs()).collect();
            let mut p = check::references(&refs, files);
            if p.is_empty() {
                p = check::claim(c, files);
            }
            p
        }
        Inline::ClaimEnd => return Err("`/claim` closes a claim; give the claim itself".into()),
    };
    for p in problems {
        let kind = if p.error { "error" } else { "warning" };
        out.push_str(&format!("{kind}: {}\n  hint: {}\n", p.message, p.hint));
    }
    Ok(out)
}
