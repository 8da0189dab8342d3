//! Stage 1, load: read `paths.yaml` and every `cards/**/*.md` into domain types.
//!
//! Loading never stops at the first bad file: each problem becomes a diagnostic with the file
//! and line, and the files that did parse are still returned so validation can report more.

use crate::diag::{line_col, Diagnostics};
use crate::model::{Book, Card, LearningPath};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Front-matter keys a card may have; anything else is an error (`deny_unknown_fields`).
pub const CARD_KEYS: &[&str] = &["id", "title", "summary", "requires", "tags"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    id: String,
    title: String,
    summary: String,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathEntry {
    id: String,
    title: String,
    summary: String,
    color: String,
    #[serde(default)]
    start: Option<u32>,
    #[serde(default)]
    planned: bool,
    #[serde(default)]
    stations: Vec<String>,
}

/// Load the book rooted at `root`. Problems go into `diags`; what parsed is returned.
pub fn load_book(root: &Path, diags: &mut Diagnostics) -> Book {
    let paths_file = PathBuf::from("paths.yaml");
    let before = diags.error_count();
    let paths = match std::fs::read(root.join(&paths_file)) {
        Ok(bytes) => paths_from_bytes(&bytes, &paths_file, diags),
        Err(e) => {
            diags
                .error(&paths_file, 0, 0, format!("cannot read paths.yaml: {e}"))
                .hint("every book needs a paths.yaml at its root listing the learning paths");
            Vec::new()
        }
    };
    let paths_ok = diags.error_count() == before;
    let mut cards = Vec::new();
    let mut broken = Vec::new();
    let cards_dir = root.join("cards");
    if !cards_dir.is_dir() {
        diags
            .error(Path::new("cards"), 0, 0, "no cards/ folder")
            .hint("put one Markdown file per card under cards/");
    } else {
        let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&cards_dir)
            .sort_by_file_name()
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "md"))
            .map(|e| e.into_path())
            .collect();
        files.sort();
        for abs in files {
            let rel = abs.strip_prefix(root).unwrap_or(&abs).to_path_buf();
            match std::fs::read(&abs) {
                Ok(bytes) => match card_from_bytes(&bytes, &rel, diags) {
                    Some(card) => cards.push(card),
                    None if std::str::from_utf8(&bytes).is_err() => {}
                    None => {
                        if let Some(stem) = rel.file_stem().and_then(|s| s.to_str()) {
                            broken.push(stem.to_string());
                        }
                    }
                },
                Err(e) => {
                    diags.error(&rel, 0, 0, format!("cannot read: {e}"));
                }
            }
        }
    }
    let labs = crate::measure::labs::load_manifests(root, &crate::measure::families(), diags);
    let results = match crate::measure::store::load_dir(&crate::measure::results_dir(root)) {
        Ok(r) => r,
        Err(e) => {
            diags
                .error(Path::new("kernels/results"), 0, 0, format!("{e:#}"))
                .hint("the measured results must load for the prose's values and claims to be checked");
            Vec::new()
        }
    };
    Book {
        root: root.to_path_buf(),
        cards,
        paths,
        paths_file,
        broken,
        paths_ok,
        labs,
        results,
    }
}

/// A card file's bytes: not UTF-8 is an error at the line and column of the first bad byte;
/// otherwise [`parse_card`].
pub fn card_from_bytes(bytes: &[u8], rel: &Path, diags: &mut Diagnostics) -> Option<Card> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_card(text, rel, diags),
        Err(e) => {
            let (line, col) = utf8_error_at(bytes, &e);
            diags
                .error(rel, line, col, format!("not valid UTF-8: {e}"))
                .hint("save the card as UTF-8");
            None
        }
    }
}

/// `paths.yaml`'s bytes: not UTF-8 is an error at the first bad byte; otherwise [`parse_paths`].
pub fn paths_from_bytes(bytes: &[u8], rel: &Path, diags: &mut Diagnostics) -> Vec<LearningPath> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_paths(text, rel, diags),
        Err(e) => {
            let (line, col) = utf8_error_at(bytes, &e);
            diags
                .error(rel, line, col, format!("paths.yaml is not valid UTF-8: {e}"))
                .hint("save paths.yaml as UTF-8");
            Vec::new()
        }
    }
}

/// 1-based line and column (in characters) of the first byte that is not UTF-8.
fn utf8_error_at(bytes: &[u8], e: &std::str::Utf8Error) -> (usize, usize) {
    let good = &bytes[..e.valid_up_to()];
    let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = std::str::from_utf8(&good[line_start..]).map_or(1, |t| t.chars().count() + 1);
    (line, col)
}

/// Split `---\n<yaml>\n---\n<body>`; returns (yaml, yaml start offset, body offset).
fn split_front_matter(text: &str) -> Result<(&str, usize, usize), (usize, String, &'static str)> {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - t.len();
    if t.trim().is_empty() {
        return Err((
            0,
            "empty card file".into(),
            "a card starts with `---`, YAML front matter, `---`, then the body",
        ));
    }
    let first_nl = t.find('\n').unwrap_or(t.len());
    if t[..first_nl].trim_end() != "---" {
        return Err((
            1,
            "missing front matter: the first line must be `---`".into(),
            "start the file with `---`, then id, title, summary, requires, tags, then `---`",
        ));
    }
    let yaml_start = first_nl + 1;
    let mut pos = yaml_start;
    while pos <= t.len() {
        let end = t[pos..].find('\n').map(|i| pos + i).unwrap_or(t.len());
        if t[pos..end].trim_end() == "---" {
            let body = (end + 1).min(t.len());
            return Ok((&t[yaml_start..pos], bom + yaml_start, bom + body));
        }
        if end == t.len() {
            break;
        }
        pos = end + 1;
    }
    Err((
        1,
        "front matter is not closed".into(),
        "end the front matter with a line holding only `---`",
    ))
}

/// Parse one card file. Returns None when the front matter cannot be read at all.
pub fn parse_card(text: &str, rel: &Path, diags: &mut Diagnostics) -> Option<Card> {
    let (yaml, yaml_offset, body_offset) = match split_front_matter(text) {
        Ok(v) => v,
        Err((line, msg, hint)) => {
            diags.error(rel, line, 1, msg).hint(hint);
            return None;
        }
    };
    let (yaml_line, _) = line_col(text, yaml_offset);
    let fm: FrontMatter = match serde_yaml_ng::from_str(yaml) {
        Ok(fm) => fm,
        Err(e) => {
            let (line, col) = e
                .location()
                .map(|l| (yaml_line + crate::diag::yaml_line(yaml, l.line()) - 1, l.column()))
                .unwrap_or((yaml_line, 1));
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            let hint = if msg.contains("unknown field") {
                format!("allowed keys: {}", CARD_KEYS.join(", "))
            } else if msg.contains("missing field") {
                "every card needs id, title and summary; requires and tags are optional lists".to_string()
            } else {
                "check the YAML syntax of the front matter (lists as [a, b], strings with `:` quoted)"
                    .to_string()
            };
            diags
                .error(rel, line, col, format!("front matter: {msg}"))
                .hint(hint);
            return None;
        }
    };
    let mut key_lines = BTreeMap::new();
    for (i, l) in yaml.lines().enumerate() {
        if let Some((k, _)) = l.split_once(':') {
            if !k.starts_with([' ', '\t', '-', '#']) && !k.is_empty() {
                key_lines.entry(k.trim().to_string()).or_insert(yaml_line + i);
            }
        }
    }
    Some(Card {
        id: fm.id,
        title: fm.title,
        summary: fm.summary,
        requires: fm.requires,
        tags: fm.tags,
        file: rel.to_path_buf(),
        source: text.to_string(),
        body_offset,
        key_lines,
    })
}

/// Parse paths.yaml. Line numbers are recovered by scanning the text, since the YAML
/// deserializer does not keep spans for values.
pub fn parse_paths(text: &str, rel: &Path, diags: &mut Diagnostics) -> Vec<LearningPath> {
    if text.trim().is_empty() {
        diags
            .error(rel, 0, 0, "paths.yaml is empty")
            .hint("list the learning paths as a YAML sequence of `- id: …` entries");
        return Vec::new();
    }
    let entries: Vec<PathEntry> = match serde_yaml_ng::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let (line, col) = e
                .location()
                .map(|l| (crate::diag::yaml_line(text, l.line()), l.column()))
                .unwrap_or((1, 1));
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            let hint = if msg.contains("unknown field") {
                "allowed path keys: id, title, summary, color, start, planned, stations"
            } else if msg.contains("missing field") {
                "every path needs id, title, summary and color"
            } else {
                "paths.yaml is a sequence of mappings: `- id: …` with title, summary, color, stations"
            };
            diags
                .error(rel, line, col, format!("paths.yaml: {msg}"))
                .hint(hint);
            return Vec::new();
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    // Line index of every `- id:` entry start, in order.
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            t.starts_with("- ") && t[2..].trim_start().starts_with("id:")
        })
        .map(|(i, _)| i)
        .collect();
    entries
        .into_iter()
        .enumerate()
        .map(|(n, e)| {
            let start = starts.get(n).copied().unwrap_or(0);
            let end = starts.get(n + 1).copied().unwrap_or(lines.len());
            let stations_line = (start..end)
                .find(|&i| lines[i].trim_start().starts_with("stations:"))
                .unwrap_or(start);
            let mut from = stations_line;
            let station_pos: Vec<(usize, usize)> = e
                .stations
                .iter()
                .map(|s| match find_token(&lines, from, end, s) {
                    Some(i) => {
                        from = i;
                        let col = token_col(lines[i], s)
                            .map(|c| lines[i][..c].chars().count() + 1)
                            .unwrap_or(1);
                        (i + 1, col)
                    }
                    None => (stations_line + 1, 1),
                })
                .collect();
            LearningPath {
                id: e.id,
                title: e.title,
                summary: e.summary,
                color: e.color,
                start: e.start,
                planned: e.planned,
                stations: e.stations,
                line: start + 1,
                station_lines: station_pos,
            }
        })
        .collect()
}

/// First line index in `from..end` holding `token` as a whole word (kebab-case aware).
fn find_token(lines: &[&str], from: usize, end: usize, token: &str) -> Option<usize> {
    (from..end.min(lines.len())).find(|&i| token_col(lines[i], token).is_some())
}

/// Byte column of `token` in `line` as a whole word, if present.
pub fn token_col(line: &str, token: &str) -> Option<usize> {
    if token.is_empty() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    let mut search = 0;
    while let Some(i) = line[search..].find(token) {
        let at = search + i;
        let before = line[..at].chars().next_back();
        let after = line[at + token.len()..].chars().next();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return Some(at);
        }
        search = at + token.len();
    }
    None
}
