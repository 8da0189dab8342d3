//! The `key: value` lines of a `calc:` block.
//!
//! Why not a YAML parser: a calculator block is a flat list of keys that authors annotate with
//! trailing `# comments`, and every error must point at the line of the offending key, which a
//! deserializer into a map cannot tell us. The accepted syntax is the YAML subset the authoring
//! brief shows: `key: value` lines, `# comments`, and for list values either `[a, b]`, `a, b`
//! or `- item` lines under an empty `key:`.

/// (line within the block, 1-based; message; hint).
pub type ParseError = (usize, String, String);

/// A value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(String),
    /// Items with their own lines.
    List(Vec<(String, usize)>),
}

/// One `key: value` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub value: Value,
    pub line: usize,
}

/// Cut a `# comment` (a `#` at the start or after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, ch) in line.char_indices() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if ch == '"' || ch == '\'' => quote = Some(ch),
            None if ch == '#' && prev_space => return &line[..i],
            None => {}
        }
        prev_space = ch.is_whitespace();
    }
    line
}

/// Remove one pair of matching quotes around a value.
fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_string();
        }
    }
    s.to_string()
}

/// Split the body into entries, in order. Keys must be unique.
pub fn entries(body: &str) -> Result<Vec<Entry>, ParseError> {
    let mut out: Vec<Entry> = Vec::new();
    for (i, raw) in body.lines().enumerate() {
        let line = i + 1;
        let text = strip_comment(raw).trim();
        if text.is_empty() {
            continue;
        }
        if let Some(item) = text.strip_prefix('-') {
            if !(item.is_empty() || item.starts_with(char::is_whitespace)) {
                return Err(syntax(line, text));
            }
            let Some(last) = out.last_mut() else {
                return Err((
                    line,
                    format!("calc block: list item `{text}` without a key above it"),
                    "write the key first, e.g. `formats:` on its own line, then `- fp16` lines under it"
                        .into(),
                ));
            };
            let item = unquote(item);
            if item.is_empty() {
                return Err((
                    line,
                    "calc block: empty list item".into(),
                    "write one value after `- `".into(),
                ));
            }
            match &mut last.value {
                Value::List(items) => items.push((item, line)),
                Value::Scalar(s) if s.is_empty() => last.value = Value::List(vec![(item, line)]),
                Value::Scalar(_) => {
                    return Err((
                        line,
                        format!(
                            "calc block: list item `{text}` after `{}:` which already has a value",
                            last.key
                        ),
                        "a key takes either a value on its own line or `- item` lines under it, not both"
                            .into(),
                    ))
                }
            }
            continue;
        }
        let Some((key, value)) = text.split_once(':') else {
            return Err(syntax(line, text));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(syntax(line, text));
        }
        if let Some(first) = out.iter().find(|e| e.key == key) {
            return Err((
                line,
                format!(
                    "calc block: key `{key}` given twice (first on line {} of the block)",
                    first.line
                ),
                "give each key once".into(),
            ));
        }
        let value = value.trim();
        let value = if let Some(inner) = value.strip_prefix('[') {
            let Some(inner) = inner.strip_suffix(']') else {
                return Err((
                    line,
                    format!("calc block: unclosed list in `{text}`"),
                    "write a list as `[a, b, c]`".into(),
                ));
            };
            Value::List(
                inner
                    .split(',')
                    .map(unquote)
                    .filter(|s| !s.is_empty())
                    .map(|s| (s, line))
                    .collect(),
            )
        } else {
            Value::Scalar(unquote(value))
        };
        out.push(Entry {
            key: key.to_string(),
            value,
            line,
        });
    }
    Ok(out)
}

fn syntax(line: usize, text: &str) -> ParseError {
    (
        line,
        format!("calc block: cannot read `{text}`"),
        "each line of a calc block is `key: value` (a `# comment` may follow)".into(),
    )
}

/// The entries of one block, with the checks every calculator needs.
pub struct Fields {
    entries: Vec<Entry>,
    /// Line of the `calc:` key: where errors about missing keys point.
    pub calc_line: usize,
}

/// Requirement of one key, for hints.
pub struct KeyDoc {
    pub key: &'static str,
    pub doc: &'static str,
}

impl Fields {
    pub fn new(entries: Vec<Entry>) -> Self {
        let calc_line = entries.iter().find(|e| e.key == "calc").map_or(1, |e| e.line);
        Fields { entries, calc_line }
    }

    fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// Every key must be one of `allowed` (plus `calc`).
    pub fn only(&self, kind: &str, allowed: &[KeyDoc]) -> Result<(), ParseError> {
        for e in &self.entries {
            if e.key != "calc" && !allowed.iter().any(|a| a.key == e.key) {
                return Err((
                    e.line,
                    format!("`calc: {kind}`: unknown key `{}`", e.key),
                    hint(kind, allowed),
                ));
            }
        }
        Ok(())
    }

    /// A scalar value, or `None` when the key is absent.
    pub fn scalar(
        &self,
        kind: &str,
        key: &str,
        allowed: &[KeyDoc],
    ) -> Result<Option<(String, usize)>, ParseError> {
        match self.get(key) {
            None => Ok(None),
            Some(Entry {
                value: Value::Scalar(s),
                line,
                ..
            }) if !s.is_empty() => Ok(Some((s.clone(), *line))),
            Some(e) => Err((
                e.line,
                format!("`calc: {kind}`: `{key}` needs one value"),
                hint(kind, allowed),
            )),
        }
    }

    /// A list value (`[a, b]`, `a, b`, or `- a` lines), or `None` when the key is absent.
    pub fn list(
        &self,
        kind: &str,
        key: &str,
        allowed: &[KeyDoc],
    ) -> Result<Option<Vec<(String, usize)>>, ParseError> {
        match self.get(key) {
            None => Ok(None),
            Some(Entry {
                value: Value::List(items),
                ..
            }) if !items.is_empty() => Ok(Some(items.clone())),
            Some(Entry {
                value: Value::Scalar(s),
                line,
                ..
            }) if !s.is_empty() => Ok(Some(
                s.split(',')
                    .map(unquote)
                    .filter(|x| !x.is_empty())
                    .map(|x| (x, *line))
                    .collect(),
            )),
            Some(e) => Err((
                e.line,
                format!("`calc: {kind}`: `{key}` needs at least one value"),
                hint(kind, allowed),
            )),
        }
    }

    /// A required positive integer no larger than `max`.
    /// The model named by `model:` (required): one of the calculators' model configurations.
    pub fn model(&self, kind: &str, allowed: &[KeyDoc]) -> Result<super::models::ModelId, ParseError> {
        let Some((name, line)) = self.scalar(kind, "model", allowed)? else {
            return Err((
                self.calc_line,
                format!("`calc: {kind}`: missing key `model`"),
                hint(kind, allowed),
            ));
        };
        super::models::ModelId::parse(&name).ok_or_else(|| {
            (
                line,
                format!("`calc: {kind}`: unknown model `{name}`"),
                format!("model is one of: {}", super::models::MODEL_NAMES.join(", ")),
            )
        })
    }

    pub fn positive(&self, kind: &str, key: &str, max: u64, allowed: &[KeyDoc]) -> Result<u64, ParseError> {
        let Some((s, line)) = self.scalar(kind, key, allowed)? else {
            return Err((
                self.calc_line,
                format!("`calc: {kind}`: missing key `{key}`"),
                hint(kind, allowed),
            ));
        };
        let digits: String = s.chars().filter(|&c| c != '_').collect();
        let bad = || {
            (
                line,
                format!("`calc: {kind}`: `{key}: {s}` is not a positive integer"),
                format!(
                    "`{key}` is a whole number from 1 to {}, e.g. `{key}: 4096`",
                    crate::calc::fmt::int(max as u128)
                ),
            )
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        match digits.parse::<u64>() {
            Ok(v) if (1..=max).contains(&v) => Ok(v),
            _ => Err(bad()),
        }
    }
}

/// "allowed keys for `calc: kind`: m (…), n (…)".
pub fn hint(kind: &str, allowed: &[KeyDoc]) -> String {
    let keys: Vec<String> = allowed
        .iter()
        .map(|a| format!("`{}` ({})", a.key, a.doc))
        .collect();
    format!("allowed keys for `calc: {kind}`: {}", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_quotes() {
        let e = entries("calc: matmul   # FLOPs\n\nm: 4096\ndtype: \"bf16\" # a # b\ncaption: 'A # B'\n")
            .unwrap();
        assert_eq!(e.len(), 4);
        assert_eq!(
            e[0],
            Entry {
                key: "calc".into(),
                value: Value::Scalar("matmul".into()),
                line: 1
            }
        );
        assert_eq!(e[1].line, 3);
        assert_eq!(e[2].value, Value::Scalar("bf16".into()));
        assert_eq!(e[3].value, Value::Scalar("A # B".into()));
    }

    #[test]
    fn lists() {
        let e = entries("formats: [fp16, bf16]\n").unwrap();
        assert_eq!(
            e[0].value,
            Value::List(vec![("fp16".into(), 1), ("bf16".into(), 1)])
        );
        let e = entries("formats:\n  - fp16   # half\n  - bf16\n").unwrap();
        assert_eq!(
            e[0].value,
            Value::List(vec![("fp16".into(), 2), ("bf16".into(), 3)])
        );
    }

    #[test]
    fn errors_point_at_lines() {
        assert_eq!(entries("calc: matmul\nm 4096\n").unwrap_err().0, 2);
        assert_eq!(entries("calc: matmul\nm: 1\nm: 2\n").unwrap_err().0, 3);
        assert_eq!(entries("- fp16\n").unwrap_err().0, 1);
        assert_eq!(entries("a: b\n- c\n").unwrap_err().0, 2);
        assert_eq!(entries("a: [b, c\n").unwrap_err().0, 1);
    }
}
