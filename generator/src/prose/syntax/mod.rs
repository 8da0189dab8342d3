//! The syntax of measured numbers and checked claims in card prose, between `{{` and `}}`:
//!
//! ```text
//! {{ tp_gemm/cublas where proj=1, tp=8 by tflops }}                  a value: "701 TFLOP/s"
//! {{ attention/flash_tc / standard where n=4096, d=128, causal=0 }}   a ratio: "1.52×"
//! {{ tc_gemm/tc_wgmma_streamk / baseline where m=8192 as % }}         of the baseline: "99.6%"
//! {{claim decode_attention/paged_v2 > paged where b=8, hkv=8, ctx=* by gbps}}…{{/claim}}
//! {{claim 1.4 <= attention/flash_tc / standard <= 1.6 where …}}…{{/claim}}
//! {{claim decreasing tp_gemm/cublas where proj=1, tp=* by tflops}}…{{/claim}}
//! ```
//!
//! A reference is `family/variant`, or a bare variant of the first reference's family, or
//! `baseline` (that family's baseline at the same parameters); it may carry its own parameters
//! `(k=v, …)`, metric `.tflops` and machine `@H200`. The closing clauses give the rest to every
//! reference that lacks them: `where` parameters (`k=*` means "for every value measured"), `by`
//! a metric (`time`, `tflops`, `gbps` or a record's metric key), `@` a machine, `as %` or `as x`.
//! Operators need spaces around them (`a / b`), which keeps `family/variant` one word.

use parser::Parser;
use std::collections::BTreeMap;

mod lexer;
mod parser;
mod resolve;

/// One `{{…}}` piece.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    /// A number read from the records.
    Value(Value),
    /// `{{claim …}}`: the sentence up to `{{/claim}}` states this.
    Claim(Cond),
    /// `{{/claim}}`.
    ClaimEnd,
}

/// A value and how it is shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub expr: Expr,
    pub format: Format,
}

/// How a value is written.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Format {
    /// One reference: its metric's unit; an expression: a plain ratio "1.52×".
    #[default]
    Auto,
    /// `as %`: the ratio times 100 with a percent sign.
    Percent,
    /// `as x`: a ratio with "×" even for one reference.
    Times,
}

/// An arithmetic expression over references and numbers.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Ref(Ref),
    Mul(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
}

/// A named record (or, with `*` parameters, one per point).
#[derive(Debug, Clone, PartialEq)]
pub struct Ref {
    pub family: String,
    /// A variant, or `baseline`.
    pub variant: String,
    pub params: BTreeMap<String, Param>,
    pub metric: String,
    /// Part of a device name, when the reference is pinned to one machine.
    pub device: Option<String>,
}

/// A parameter's wanted value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Param {
    Is(u64),
    /// `*`: every value the records have.
    Every,
}

impl Param {
    /// As written: the number, or `*`.
    pub fn show(&self) -> String {
        match self {
            Param::Is(v) => v.to_string(),
            Param::Every => "*".into(),
        }
    }
}

/// What a claim states.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// `a < b`, `a >= 0.85`, `1.4 <= a / b <= 1.6`: every comparison holds at every point.
    Compare(Vec<Expr>, Vec<Cmp>),
    /// The expression rises (or falls) strictly along the one `*` parameter.
    Trend(bool, Expr),
    /// `a > b and c > d`: every part holds. The parts share the closing clauses, and each part
    /// is checked at its own points, so one sentence can state a pattern across variants.
    All(Vec<Cond>),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "≤",
            Cmp::Gt => ">",
            Cmp::Ge => "≥",
        }
    }
}

/// A parse error: the byte offset inside the `{{…}}` body, the message and a hint.
pub type Error = (usize, String, String);

pub(super) const HINT: &str = "write `{{ family/variant where k=v by metric }}` for a value or `{{claim a > b where …}}…{{/claim}}` for a claim (README: Measured numbers in prose)";

/// Parse the text between `{{` and `}}`.
pub fn parse(body: &str) -> Result<Inline, Error> {
    let toks = lexer::tokenize(body)?;
    let mut p = Parser { toks, at: 0, body };
    if p.eat_word("/claim") {
        return p.end().map(|_| Inline::ClaimEnd);
    }
    if p.eat_word("claim") {
        let cond = p.cond()?;
        let clauses = p.clauses()?;
        if clauses.format != Format::Auto {
            return Err((body.len(), "a claim has no `as`".into(), HINT.into()));
        }
        let cond = resolve::resolve_cond(cond, &clauses).map_err(|m| (0, m, HINT.to_string()))?;
        return Ok(Inline::Claim(cond));
    }
    let expr = p.expr()?;
    let clauses = p.clauses()?;
    let expr = resolve::resolve(expr, &clauses).map_err(|m| (0, m, HINT.to_string()))?;
    Ok(Inline::Value(Value {
        expr,
        format: clauses.format,
    }))
}

impl Expr {
    /// Every reference, left to right.
    pub fn refs(&self) -> Vec<&Ref> {
        match self {
            Expr::Num(_) => Vec::new(),
            Expr::Ref(r) => vec![r],
            Expr::Mul(a, b) | Expr::Div(a, b) => {
                let mut v = a.refs();
                v.extend(b.refs());
                v
            }
        }
    }
}

impl Cond {
    /// Every expression the claim compares.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Cond::Compare(e, _) => e.iter().collect(),
            Cond::Trend(_, e) => vec![e],
            Cond::All(parts) => parts.iter().flat_map(Cond::exprs).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(body: &str) -> Value {
        match parse(body) {
            Ok(Inline::Value(v)) => v,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn references_take_the_clauses() {
        let v = value(" tp_gemm/cublas where proj=1, tp=8 by tflops @H200 ");
        let Expr::Ref(r) = &v.expr else { panic!() };
        assert_eq!(
            (r.family.as_str(), r.variant.as_str(), r.metric.as_str()),
            ("tp_gemm", "cublas", "tflops")
        );
        assert_eq!(r.params["tp"], Param::Is(8));
        assert_eq!(r.device.as_deref(), Some("H200"));
        // A bare variant takes the first reference's family; `baseline` its parameters too.
        let v = value("tc_gemm/tc_wgmma(m=8192) / baseline as %");
        assert_eq!(v.format, Format::Percent);
        let refs = v.expr.refs();
        assert_eq!(
            (refs[1].family.as_str(), refs[1].variant.as_str()),
            ("tc_gemm", "baseline")
        );
        assert_eq!(refs[1].params["m"], Param::Is(8192));
        // The default metric is the family's figure of merit.
        let Expr::Ref(r) = value("attention/flash_tc where n=4096").expr else {
            panic!()
        };
        assert_eq!(r.metric, "tflops");
    }

    #[test]
    fn claims_compare_in_chains_or_state_a_trend() {
        let Ok(Inline::Claim(Cond::Compare(e, c))) = parse("claim 1.4 <= a/x / y <= 1.6 where n=*") else {
            panic!()
        };
        assert_eq!((e.len(), c), (3, vec![Cmp::Le, Cmp::Le]));
        let Ok(Inline::Claim(Cond::All(parts))) = parse("claim a/x > a/y and decreasing a/x where tp=*")
        else {
            panic!("and");
        };
        assert!(matches!(parts[..], [Cond::Compare(..), Cond::Trend(false, _)]));
        let Err((_, msg, _)) = parse("claim a/x > a/y and where tp=*") else {
            panic!("a dangling and is an error");
        };
        assert!(msg.contains("expected"), "{msg}");
        let Ok(Inline::Claim(Cond::Trend(false, _))) = parse("claim decreasing a/x where tp=*") else {
            panic!()
        };
        assert_eq!(parse("/claim"), Ok(Inline::ClaimEnd));
    }

    #[test]
    fn mistakes_are_errors_with_their_place() {
        for (body, at) in [
            ("a/x where n=", 12),
            ("a/ x", 3),
            ("claim a/x", 9),
            ("a/x by", 6),
            ("claim a/x > 1 as %", 18),
            ("a/x $", 4),
            ("x / y", 0),
        ] {
            let Err((off, msg, _)) = parse(body) else {
                panic!("{body} should fail")
            };
            assert_eq!(off, at, "{body}: {msg}");
        }
    }
}
