//! Diagnostics: every problem the generator finds in the author's input, with where and a hint.
//!
//! Why collect instead of bail: an author fixing a book wants the whole list in one run
//! (ripgrep keeps going past per-file errors for the same reason). Stages push into a
//! [`Diagnostics`] and the caller decides whether errors stop the pipeline.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem at one place. `line` and `col` are 1-based; 0 means "the whole file".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: PathBuf,
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev}: {}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col.max(1))?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// The line an editor shows for a line that serde_yaml reports. serde_yaml counts lines the
/// YAML 1.1 way, where a lone `\r`, NEL (U+0085) and the Unicode line and paragraph separators
/// also end a line; this counts `\n` only, as `line_col` and editors do, so that a YAML error
/// never points past the text it came from.
pub fn yaml_line(text: &str, yaml_line: usize) -> usize {
    let (mut yaml, mut real) = (1, 1);
    let mut chars = text.chars().peekable();
    while yaml < yaml_line {
        let Some(c) = chars.next() else { break };
        match c {
            '\n' => real += 1,
            '\r' if chars.peek() == Some(&'\n') => {
                chars.next();
                real += 1;
            }
            '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' => {}
            _ => continue,
        }
        yaml += 1;
    }
    real
}

/// An ordered collection of diagnostics, sorted by file and line when printed.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn error(
        &mut self,
        file: &Path,
        line: usize,
        col: usize,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.push(Severity::Error, file, line, col, message)
    }

    pub fn warning(
        &mut self,
        file: &Path,
        line: usize,
        col: usize,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.push(Severity::Warning, file, line, col, message)
    }

    fn push(
        &mut self,
        severity: Severity,
        file: &Path,
        line: usize,
        col: usize,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        self.items.push(Diagnostic {
            severity,
            file: file.to_path_buf(),
            line,
            col,
            message: message.into(),
            hint: None,
        });
        self.items.last_mut().expect("just pushed")
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    pub fn warning_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Diagnostics sorted by file, line, column, so output is stable and easy to scan.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.items.iter().collect();
        v.sort_by(|a, b| (&a.file, a.line, a.col, a.severity).cmp(&(&b.file, b.line, b.col, b.severity)));
        v
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Print every diagnostic (sorted) and a one-line tally to stderr; true when there were
    /// errors. Shared by the commands and `serve`'s rebuilds, so both report alike.
    pub fn report(&self) -> bool {
        for d in self.sorted() {
            eprintln!("{d}");
        }
        let (e, w) = (self.error_count(), self.warning_count());
        if e + w > 0 {
            eprintln!("{e} error(s), {w} warning(s)");
        }
        e > 0
    }
}

impl Diagnostic {
    pub fn hint(&mut self, hint: impl Into<String>) -> &mut Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Line and column lookups in one text, for callers that ask many times (a card's pieces):
/// the line starts are found once and each lookup is a binary search.
pub struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The same as [`line_col`].
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|s| *s <= offset);
        let start = self.starts[line - 1];
        (line, self.text[start..offset].chars().count() + 1)
    }
}

/// 1-based line and column of a byte offset in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_agrees_with_line_col() {
        let text = "ab\n가나다\n\nxyz";
        let idx = LineIndex::new(text);
        for off in 0..=text.len() + 2 {
            if text.is_char_boundary(off.min(text.len())) {
                assert_eq!(idx.line_col(off), line_col(text, off), "offset {off}");
            }
        }
    }
}
