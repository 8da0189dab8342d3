//! Tokens of a `{{…}}` body: words, numbers and symbols, each with its offset and whether a space
//! came before it (the space is what tells `a / b`, a division, from `family/variant`, a name).

use super::{Error, HINT};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Word(String),
    Num(f64),
    Sym(&'static str),
}

/// A token, its byte offset, and whether whitespace came before it.
pub(super) type Token = (Tok, usize, bool);

pub(super) fn tokenize(s: &str) -> Result<Vec<Token>, Error> {
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
