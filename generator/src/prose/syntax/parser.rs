//! The recursive-descent parser of a `{{…}}` body: references, expressions, conditions and the
//! closing clauses, before the clauses are applied (`resolve`).

use super::lexer::{Tok, Token};
use super::{Cmp, Error, Format, Param, HINT};
use std::collections::BTreeMap;

/// What the closing clauses set.
#[derive(Default)]
pub(super) struct Clauses {
    pub(super) params: BTreeMap<String, Param>,
    pub(super) metric: Option<String>,
    pub(super) device: Option<String>,
    pub(super) format: Format,
}

/// A reference as written, before the clauses fill it in.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RawRef {
    pub(super) family: Option<String>,
    pub(super) variant: String,
    pub(super) params: BTreeMap<String, Param>,
    pub(super) metric: Option<String>,
    pub(super) device: Option<String>,
}

pub(super) struct Parser<'a> {
    pub(super) toks: Vec<Token>,
    pub(super) at: usize,
    pub(super) body: &'a str,
}

/// An expression whose references are not yet filled in.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawExpr {
    Num(f64),
    Ref(RawRef),
    Mul(Box<RawExpr>, Box<RawExpr>),
    Div(Box<RawExpr>, Box<RawExpr>),
}

pub(super) enum RawCond {
    Compare(Vec<RawExpr>, Vec<Cmp>),
    Trend(bool, RawExpr),
    All(Vec<RawCond>),
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
    pub(super) fn eat_word(&mut self, w: &str) -> bool {
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
    pub(super) fn end(&self) -> Result<(), Error> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("unexpected text"),
        }
    }

    /// One statement, or several joined by `and`.
    pub(super) fn cond(&mut self) -> Result<RawCond, Error> {
        let mut parts = vec![self.statement()?];
        while self.eat_word("and") {
            parts.push(self.statement()?);
        }
        Ok(match parts.len() {
            1 => parts.remove(0),
            _ => RawCond::All(parts),
        })
    }

    fn statement(&mut self) -> Result<RawCond, Error> {
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

    pub(super) fn expr(&mut self) -> Result<RawExpr, Error> {
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

    pub(super) fn clauses(&mut self) -> Result<Clauses, Error> {
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
    matches!(
        w,
        "where" | "by" | "as" | "claim" | "increasing" | "decreasing" | "and"
    )
}
