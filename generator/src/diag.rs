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

/// 1-based line and column of a byte offset in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1;
    (line, col)
}
