//! Domain types: what a book is made of once loaded. Views for templates live in `render`.
//!
//! Why separate from loading and rendering: every stage reads the same plain types, so a stage
//! can be tested with a book built in code, and templates never depend on them directly.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// A concept card: one Markdown file with YAML front matter.
#[derive(Debug, Clone)]
pub struct Card {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub requires: Vec<String>,
    pub tags: Vec<String>,
    /// Path relative to the book root, e.g. `cards/roofline/arithmetic-intensity.md`.
    pub file: PathBuf,
    /// The whole file as read, for line lookups.
    pub source: String,
    /// Byte offset where the body (after the closing `---`) starts in `source`.
    pub body_offset: usize,
    /// 1-based line of each front-matter key, for diagnostics.
    pub key_lines: BTreeMap<String, usize>,
}

impl Card {
    pub fn body(&self) -> &str {
        &self.source[self.body_offset..]
    }
}

/// A learning path: a subway line through the card graph.
#[derive(Debug, Clone)]
pub struct LearningPath {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub color: String,
    /// Position among "처음이라면 여기부터", if any.
    pub start: Option<u32>,
    /// A path whose cards are not written yet: listed, shown as 준비 중.
    pub planned: bool,
    pub stations: Vec<String>,
    /// 1-based line of `- id:` in paths.yaml.
    pub line: usize,
    /// 1-based (line, column) of each station entry, parallel to `stations`.
    pub station_lines: Vec<(usize, usize)>,
}

/// Everything loaded from disk.
#[derive(Debug, Clone, Default)]
pub struct Book {
    pub root: PathBuf,
    pub cards: Vec<Card>,
    pub paths: Vec<LearningPath>,
    /// `paths.yaml` relative to root.
    pub paths_file: PathBuf,
    /// File stems of cards that failed to load: already reported, so references to these ids
    /// are not reported again as unknown.
    pub broken: Vec<String>,
    /// False when paths.yaml could not be read or parsed (then "on no path" is not reported).
    pub paths_ok: bool,
    /// The labs of `kernels/labs/*/labs.yaml` that loaded without errors.
    pub labs: Vec<crate::measure::labs::manifest::Lab>,
    /// The results files under `kernels/results/` as they were when the book was loaded: what
    /// `check` holds the prose's values and claims to.
    pub results: Vec<(PathBuf, crate::measure::results::ResultsFile)>,
}

impl Book {
    /// Is `id` known to be a card that exists but failed to load?
    pub fn is_broken(&self, id: &str) -> bool {
        self.broken.iter().any(|b| b == id)
    }
}

impl Book {
    pub fn card(&self, id: &str) -> Option<&Card> {
        self.cards.iter().find(|c| c.id == id)
    }
}
