//! Checks on the finished HTML before it replaces the reader's book: every internal link,
//! anchor and asset resolves, and nothing loads from the network.
//!
//! Why after mdBook and not only on the Markdown: links and assets also come from templates,
//! mdBook's theme and the figures; the built tree is the one thing the reader gets, so that is
//! what is checked. A problem here fails the build, and the previous book stays in place.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One broken link or external resource, by the built page it appears in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Page relative to the HTML root, e.g. `cards/roofline-model.html`.
    pub page: PathBuf,
    pub message: String,
    /// The offending URL as written.
    pub url: String,
}

/// Attribute values of `attr="…"` in an HTML text, with their byte offsets.
fn attr_values<'a>(html: &'a str, attr: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    for quote in ['"', '\''] {
        let pat = format!(" {attr}={quote}");
        let mut from = 0;
        while let Some(i) = html[from..].find(&pat) {
            let start = from + i + pat.len();
            let Some(len) = html[start..].find(quote) else {
                break;
            };
            out.push((start, &html[start..start + len]));
            from = start + len;
        }
    }
    out
}

/// Schemes that are navigation or inline data, never a resource fetched from elsewhere.
fn is_external(url: &str) -> bool {
    let u = url.trim().to_ascii_lowercase();
    u.starts_with("http://") || u.starts_with("https://") || u.starts_with("//")
}

fn skip_link(url: &str) -> bool {
    let u = url.trim().to_ascii_lowercase();
    u.is_empty()
        || u.starts_with("mailto:")
        || u.starts_with("data:")
        || u.starts_with("javascript:")
        || u.starts_with("tel:")
        || u.contains("{{")
}

/// Decode `%XX` escapes of a URL path (UTF-8), leaving anything malformed as it is.
pub fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unescape(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

/// The built tree, read once: every file and folder, the pages and style sheets to check, and
/// the ids of every page.
struct Site<'a> {
    root: &'a Path,
    /// Every file and folder of the tree, so that ten thousand sidebar links cost set lookups,
    /// not file-system calls.
    files: HashSet<PathBuf>,
    dirs: HashSet<PathBuf>,
    pages: Vec<PathBuf>,
    css: Vec<PathBuf>,
    /// The `id`s of each page, for `#fragment` links.
    ids: HashMap<PathBuf, HashSet<String>>,
}

/// Check every HTML and CSS file under `root`.
pub fn verify_tree(root: &Path) -> Vec<Problem> {
    let mut site = Site::walk(root);
    let texts = site.read_pages();
    let mut problems = Vec::new();
    for (page, text) in &texts {
        site.check_page(page, text, &mut problems);
    }
    for p in &site.css {
        check_css(root, p, &mut problems);
    }
    problems
}

impl<'a> Site<'a> {
    /// Walk the tree once and sort the pages and style sheets into a stable order.
    fn walk(root: &'a Path) -> Site<'a> {
        let mut site = Site {
            root,
            files: HashSet::new(),
            dirs: HashSet::new(),
            pages: Vec::new(),
            css: Vec::new(),
            ids: HashMap::new(),
        };
        for e in walkdir::WalkDir::new(root).into_iter().filter_map(|e| e.ok()) {
            let p = e.path();
            if e.file_type().is_dir() {
                site.dirs.insert(p.to_path_buf());
            } else {
                site.files.insert(p.to_path_buf());
            }
            // The print page repeats every chapter (their links are checked there) and the 404
            // page resolves against the site root: reading them would only cost time.
            let rel = p.strip_prefix(root).unwrap_or(p);
            if rel == Path::new("print.html") || rel == Path::new("404.html") {
                continue;
            }
            match p.extension().and_then(|x| x.to_str()) {
                Some("html") => site.pages.push(p.to_path_buf()),
                Some("css") => site.css.push(p.to_path_buf()),
                _ => {}
            }
        }
        site.pages.sort();
        site.css.sort();
        site
    }

    /// Read every page and note its ids; returns the texts, in page order.
    fn read_pages(&mut self) -> Vec<(PathBuf, String)> {
        let mut texts = Vec::new();
        for p in &self.pages {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let set = attr_values(&text, "id")
                .into_iter()
                .map(|(_, v)| unescape(v))
                .collect();
            self.ids.insert(p.clone(), set);
            texts.push((p.clone(), text));
        }
        texts
    }

    /// Every `href` and `src` of one page.
    fn check_page(&self, page: &Path, text: &str, problems: &mut Vec<Problem>) {
        let rel = page.strip_prefix(self.root).unwrap_or(page).to_path_buf();
        // mdBook's 404 page resolves links against the site root (<base>), not its own folder;
        // the print page repeats every chapter's links (a broken one is reported there).
        if rel == Path::new("404.html") || rel == Path::new("print.html") {
            return;
        }
        for (pos, href) in attr_values(text, "href")
            .into_iter()
            .chain(attr_values(text, "src"))
        {
            let url = unescape(href);
            if skip_link(&url) {
                continue;
            }
            if is_external(&url) {
                // Links to the web (references) are fine; resources fetched from it are not.
                let tag_start = text[..pos].rfind('<').unwrap_or(0);
                let tag = &text[tag_start..pos];
                let is_anchor = tag.starts_with("<a ") || tag.starts_with("<a\n");
                if !is_anchor {
                    problems.push(Problem {
                        page: rel.clone(),
                        message: "external resource: the book must load nothing from the network".into(),
                        url,
                    });
                }
                continue;
            }
            if let Some(message) = self.check_link(page, &rel, &url) {
                problems.push(Problem {
                    page: rel.clone(),
                    message: message.into(),
                    url,
                });
            }
        }
    }

    /// What is wrong with a link inside the book, if anything: its file must exist (a folder
    /// means its index.html) and its fragment must be an id on that page.
    fn check_link(&self, page: &Path, rel: &Path, url: &str) -> Option<&'static str> {
        let (path_part, frag) = match url.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (url, None),
        };
        let path_part = path_part.split('?').next().unwrap_or("");
        let target = if path_part.is_empty() {
            page.to_path_buf()
        } else {
            let joined = page.parent().unwrap_or(self.root).join(decode(path_part));
            normalize(&joined)
        };
        let target = if self.dirs.contains(&target) {
            target.join("index.html")
        } else {
            target
        };
        if !target.starts_with(self.root) || !self.files.contains(&target) {
            return Some("broken link: target does not exist");
        }
        let f = decode(frag?);
        if f.is_empty() || rel == Path::new("print.html") {
            return None;
        }
        match self.ids.get(&target) {
            Some(set) if !set.contains(&f) => Some("broken anchor: no element with this id"),
            _ => None,
        }
    }
}

/// Every `url(…)` of a style sheet must be local and exist, and nothing may be `@import`ed
/// from the network.
fn check_css(root: &Path, p: &Path, problems: &mut Vec<Problem>) {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let rel = p.strip_prefix(root).unwrap_or(p).to_path_buf();
    for (i, _) in text.match_indices("url(") {
        let rest = &text[i + 4..];
        let end = rest.find(')').unwrap_or(rest.len());
        let url = rest[..end]
            .trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .to_string();
        // `@namespace m url(...)` names a namespace; nothing is fetched.
        let line_start = text[..i].rfind('\n').map(|n| n + 1).unwrap_or(0);
        if text[line_start..i].trim_start().starts_with("@namespace")
            || url.starts_with("data:")
            || url.starts_with('#')
        {
            continue;
        }
        if is_external(&url) {
            problems.push(Problem {
                page: rel.clone(),
                message: "external resource in CSS".into(),
                url,
            });
        } else if !normalize(
            &p.parent()
                .unwrap_or(root)
                .join(decode(url.split(['?', '#']).next().unwrap_or(""))),
        )
        .exists()
        {
            problems.push(Problem {
                page: rel.clone(),
                message: "CSS refers to a missing file".into(),
                url,
            });
        }
    }
    if text.contains("@import")
        && (text.contains("@import url(\"http")
            || text.contains("@import \"http")
            || text.contains("@import 'http"))
    {
        problems.push(Problem {
            page: rel,
            message: "external @import in CSS".into(),
            url: "@import".into(),
        });
    }
}

/// Resolve `.` and `..` without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
