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

use std::collections::BTreeMap;

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

const HINT: &str = "write `{{ family/variant where k=v by metric }}` for a value or `{{claim a > b where …}}…{{/claim}}` for a claim (README: Measured numbers in prose)";

/// Parse the text between `{{` and `}}`.
pub fn parse(body: &str) -> Result<Inline, Error> {
    let toks = tokenize(body)?;
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
        let cond = resolve_cond(cond, &clauses).map_err(|m| (0, m, HINT.to_string()))?;
        return Ok(Inline::Claim(cond));
    }
    let expr = p.expr()?;
    let clauses = p.clauses()?;
    let expr = resolve(expr, &clauses).map_err(|m| (0, m, HINT.to_string()))?;
    Ok(Inline::Value(Value {
        expr,
        format: clauses.format,
    }))
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Num(f64),
    Sym(&'static str),
}

/// A token, its byte offset, and whether whitespace came before it.
type Token = (Tok, usize, bool);

fn tokenize(s: &str) -> Result<Vec<Token>, Error> {
    const SYMS: &[&str] = &["<=", ">=", "<", ">", "/", "*", "(", ")", ",", "=", "@", "%", "."];
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    let mut space = true;
    while i < b.len() {
        let c = s[i..].chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            space = true;
            i += c.len_utf8();
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == '_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Word(s[start..i].to_string()), start, space));
        } else if c.is_ascii_digit() {
            while i < b.len()
                && (b[i].is_ascii_digit() || (b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
            let v = s[start..i]
                .parse::<f64>()
                .map_err(|e| (start, e.to_string(), HINT.to_string()))?;
            out.push((Tok::Num(v), start, space));
        } else if let Some(sym) = SYMS.iter().find(|t| s[i..].starts_with(**t)) {
            i += sym.len();
            out.push((Tok::Sym(sym), start, space));
        } else {
            return Err((start, format!("unexpected `{c}`"), HINT.into()));
        }
        space = false;
    }
    Ok(out)
}

/// What the closing clauses set.
#[derive(Default)]
struct Clauses {
    params: BTreeMap<String, Param>,
    metric: Option<String>,
    device: Option<String>,
    format: Format,
}

/// A reference as written, before the clauses fill it in.
#[derive(Debug, Clone, PartialEq)]
struct RawRef {
    family: Option<String>,
    variant: String,
    params: BTreeMap<String, Param>,
    metric: Option<String>,
    device: Option<String>,
}

struct Parser<'a> {
    toks: Vec<Token>,
    at: usize,
    body: &'a str,
}

/// An expression whose references are not yet filled in.
#[derive(Debug, Clone, PartialEq)]
enum RawExpr {
    Num(f64),
    Ref(RawRef),
    Mul(Box<RawExpr>, Box<RawExpr>),
    Div(Box<RawExpr>, Box<RawExpr>),
}

enum RawCond {
    Compare(Vec<RawExpr>, Vec<Cmp>),
    Trend(bool, RawExpr),
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.at)
    }
    fn offset(&self) -> usize {
        self.peek().map_or(self.body.len(), |t| t.1)
    }
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, Error> {
        Err((self.offset(), msg.into(), HINT.to_string()))
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some((Tok::Sym(x), _, _)) if *x == s)
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some((Tok::Word(x), _, _)) if x == w)
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        let yes = self.is_sym(s);
        self.at += yes as usize;
        yes
    }
    /// A keyword; `/claim` is the symbol `/` then the word `claim`.
    fn eat_word(&mut self, w: &str) -> bool {
        if let Some(rest) = w.strip_prefix('/') {
            if self.is_sym("/")
                && matches!(self.toks.get(self.at + 1), Some((Tok::Word(x), _, _)) if x == rest)
            {
                self.at += 2;
                return true;
            }
            return false;
        }
        let yes = self.is_word(w);
        self.at += yes as usize;
        yes
    }
    fn word(&mut self, what: &str) -> Result<String, Error> {
        match self.peek() {
            Some((Tok::Word(w), _, _)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            _ => self.err(format!("expected {what}")),
        }
    }
    fn end(&self) -> Result<(), Error> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("unexpected text"),
        }
    }

    fn cond(&mut self) -> Result<RawCond, Error> {
        for (w, up) in [("increasing", true), ("decreasing", false)] {
            if self.eat_word(w) {
                return Ok(RawCond::Trend(up, self.expr()?));
            }
        }
        let mut exprs = vec![self.expr()?];
        let mut cmps = Vec::new();
        loop {
            let cmp = match self.peek() {
                Some((Tok::Sym("<"), _, _)) => Cmp::Lt,
                Some((Tok::Sym("<="), _, _)) => Cmp::Le,
                Some((Tok::Sym(">"), _, _)) => Cmp::Gt,
                Some((Tok::Sym(">="), _, _)) => Cmp::Ge,
                _ => break,
            };
            self.at += 1;
            cmps.push(cmp);
            exprs.push(self.expr()?);
        }
        if cmps.is_empty() {
            return self.err(
                "a claim compares (`<`, `<=`, `>`, `>=`) or states a trend (`increasing`, `decreasing`)",
            );
        }
        Ok(RawCond::Compare(exprs, cmps))
    }

    fn expr(&mut self) -> Result<RawExpr, Error> {
        let mut e = self.term()?;
        loop {
            if self.is_sym("*") {
                self.at += 1;
                e = RawExpr::Mul(Box::new(e), Box::new(self.term()?));
            } else if self.is_sym("/") && self.peek().is_some_and(|t| t.2) {
                self.at += 1;
                e = RawExpr::Div(Box::new(e), Box::new(self.term()?));
            } else {
                return Ok(e);
            }
        }
    }

    fn term(&mut self) -> Result<RawExpr, Error> {
        match self.peek().cloned() {
            Some((Tok::Num(v), _, _)) => {
                self.at += 1;
                Ok(RawExpr::Num(v))
            }
            Some((Tok::Sym("("), _, _)) => {
                self.at += 1;
                let e = self.expr()?;
                if !self.eat_sym(")") {
                    return self.err("expected `)`");
                }
                Ok(e)
            }
            Some((Tok::Word(w), _, _)) if !is_keyword(&w) => self.reference().map(RawExpr::Ref),
            _ => self.err("expected a reference (`family/variant`), a number or `(`"),
        }
    }

    fn reference(&mut self) -> Result<RawRef, Error> {
        let first = self.word("a family or variant")?;
        let (family, variant) = if self.is_sym("/") && self.peek().is_some_and(|t| !t.2) {
            self.at += 1;
            if self.peek().is_some_and(|t| t.2) {
                return self.err("no space inside `family/variant`");
            }
            (Some(first), self.word("a variant after `/`")?)
        } else {
            (None, first)
        };
        let mut r = RawRef {
            family,
            variant,
            params: BTreeMap::new(),
            metric: None,
            device: None,
        };
        if self.is_sym("(") && self.peek().is_some_and(|t| !t.2) {
            self.at += 1;
            r.params = self.params()?;
            if !self.eat_sym(")") {
                return self.err("expected `)` after the parameters");
            }
        }
        if self.is_sym(".") && self.peek().is_some_and(|t| !t.2) {
            self.at += 1;
            r.metric = Some(self.word("a metric after `.`")?);
        }
        if self.is_sym("@") && self.peek().is_some_and(|t| !t.2) {
            self.at += 1;
            r.device = Some(self.device()?);
        }
        Ok(r)
    }

    fn device(&mut self) -> Result<String, Error> {
        match self.peek().cloned() {
            Some((Tok::Word(w), _, _)) => {
                self.at += 1;
                Ok(w)
            }
            _ => self.err("expected a machine after `@`, e.g. `@H200`"),
        }
    }

    fn params(&mut self) -> Result<BTreeMap<String, Param>, Error> {
        let mut out = BTreeMap::new();
        loop {
            let k = self.word("a parameter name")?;
            if !self.eat_sym("=") {
                return self.err(format!("expected `=` after `{k}`"));
            }
            let v = match self.peek().cloned() {
                Some((Tok::Num(v), _, _)) if v.fract() == 0.0 && v >= 0.0 => Param::Is(v as u64),
                Some((Tok::Sym("*"), _, _)) => Param::Every,
                _ => return self.err(format!("`{k}=` takes a whole number or `*`")),
            };
            self.at += 1;
            if out.insert(k.clone(), v).is_some() {
                return self.err(format!("`{k}` given twice"));
            }
            if !self.eat_sym(",") {
                return Ok(out);
            }
        }
    }

    fn clauses(&mut self) -> Result<Clauses, Error> {
        let mut c = Clauses::default();
        while self.peek().is_some() {
            if self.eat_word("where") {
                c.params = self.params()?;
            } else if self.eat_word("by") {
                c.metric = Some(self.word("a metric after `by`")?);
            } else if self.eat_sym("@") {
                c.device = Some(self.device()?);
            } else if self.eat_word("as") {
                c.format = if self.eat_sym("%") {
                    Format::Percent
                } else if self.eat_word("x") {
                    Format::Times
                } else {
                    return self.err("`as` takes `%` or `x`");
                };
            } else {
                return self.err("expected `where`, `by`, `@` or `as`");
            }
        }
        Ok(c)
    }
}

fn is_keyword(w: &str) -> bool {
    matches!(w, "where" | "by" | "as" | "claim" | "increasing" | "decreasing")
}

/// Fill every reference in from the clauses and the first reference's family (and, for
/// `baseline`, the first reference's own parameters: the baseline at the same shape).
fn resolve(e: RawExpr, c: &Clauses) -> Result<Expr, String> {
    let first = first_ref(&e).ok_or("name the family of the first reference (`family/variant`)")?;
    fill(e, &first, c)
}

fn resolve_cond(cond: RawCond, c: &Clauses) -> Result<Cond, String> {
    match cond {
        RawCond::Trend(up, e) => Ok(Cond::Trend(up, resolve(e, c)?)),
        RawCond::Compare(exprs, cmps) => {
            let first = exprs
                .iter()
                .find_map(first_ref)
                .ok_or("name the family of the first reference (`family/variant`)")?;
            let exprs = exprs
                .into_iter()
                .map(|e| fill(e, &first, c))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Cond::Compare(exprs, cmps))
        }
    }
}

/// The first reference that names its family.
fn first_ref(e: &RawExpr) -> Option<RawRef> {
    match e {
        RawExpr::Num(_) => None,
        RawExpr::Ref(r) => r.family.is_some().then(|| r.clone()),
        RawExpr::Mul(a, b) | RawExpr::Div(a, b) => first_ref(a).or_else(|| first_ref(b)),
    }
}

fn fill(e: RawExpr, first: &RawRef, c: &Clauses) -> Result<Expr, String> {
    Ok(match e {
        RawExpr::Num(v) => Expr::Num(v),
        RawExpr::Mul(a, b) => Expr::Mul(Box::new(fill(*a, first, c)?), Box::new(fill(*b, first, c)?)),
        RawExpr::Div(a, b) => Expr::Div(Box::new(fill(*a, first, c)?), Box::new(fill(*b, first, c)?)),
        RawExpr::Ref(r) => {
            let family = r.family.or_else(|| first.family.clone()).unwrap_or_default();
            let mut params = c.params.clone();
            if r.variant == "baseline" {
                params.extend(first.params.clone());
            }
            params.extend(r.params);
            let metric = r
                .metric
                .or_else(|| c.metric.clone())
                .unwrap_or_else(|| crate::records::Metric::default_for(&family).name().to_string());
            Expr::Ref(Ref {
                family,
                variant: r.variant,
                params,
                metric,
                device: r.device.or_else(|| c.device.clone()),
            })
        }
    })
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
        }
    }
}
