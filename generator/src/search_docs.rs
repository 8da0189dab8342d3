//! Search documents for the card pages: the card's own text, without the page's navigation.
//!
//! Why: mdBook indexes everything in a chapter. On a card page that is the line box ("◀ previous
//! … next ▶"), the prerequisite box with other cards' summaries, the "leads to" list, the mini
//! map and every chart label, so most search results opened with navigation text. The build
//! turns mdBook's indexing of `cards/` off (`write.rs`) and indexes the card pages here instead,
//! from the generated Markdown: text and code outside HTML blocks (the navigation boxes and the
//! figures are HTML), without the sections named in [`NAV_HEADINGS`]. Sections, anchors and
//! breadcrumbs follow mdBook's own indexer (one document per heading of level ≤ 3, mdBook's
//! heading ids, "path » card » heading"), so results look and link as before.

use crate::render::{Pages, NAV_HEADINGS};
use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::{HashMap, HashSet};

/// One search result: a section of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub url: String,
    pub title: String,
    pub body: String,
    pub breadcrumbs: String,
}

/// mdBook's Markdown options (smart punctuation on, as mdBook has it by default), so that the
/// indexed text is the text the reader sees.
fn options() -> Options {
    crate::markup::options().difference(Options::ENABLE_MATH) | Options::ENABLE_SMART_PUNCTUATION
}

/// Search documents of every `cards/*.md` page in `pages`.
pub fn card_docs(pages: &Pages) -> Vec<Doc> {
    let summary = pages
        .get(std::path::Path::new("SUMMARY.md"))
        .map(|s| chapters(s))
        .unwrap_or_default();
    let mut out = Vec::new();
    for (rel, md) in pages {
        let rel = rel.to_string_lossy().replace('\\', "/");
        if !(rel.starts_with("cards/") && rel.ends_with(".md")) {
            continue;
        }
        let (mut crumbs, name) = summary.get(&rel).cloned().unwrap_or_default();
        crumbs.push(name);
        let url = format!("{}.html", rel.trim_end_matches(".md"));
        out.extend(page_docs(&url, md, &crumbs));
    }
    out
}

/// SUMMARY.md: page → (names of the chapters it is nested under, its own name).
fn chapters(summary: &str) -> HashMap<String, (Vec<String>, String)> {
    let mut out = HashMap::new();
    let mut items: Vec<String> = Vec::new();
    let mut link: Option<(String, String)> = None;
    for ev in Parser::new(summary) {
        match ev {
            Event::Start(Tag::Item) => items.push(String::new()),
            Event::End(TagEnd::Item) => {
                items.pop();
            }
            Event::Start(Tag::Link { dest_url, .. }) => link = Some((dest_url.to_string(), String::new())),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text)) = link.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Link) => {
                if let Some((dest, text)) = link.take() {
                    let parents = items.len().saturating_sub(1);
                    let crumbs = items[..parents].to_vec();
                    if let Some(last) = items.last_mut() {
                        *last = text.clone();
                    }
                    out.insert(dest, (crumbs, text));
                }
            }
            _ => {}
        }
    }
    out
}

/// A section being collected: its heading's text and id, and its body so far.
#[derive(Default)]
struct Section {
    title: String,
    id: String,
    body: String,
}

/// The documents of one card page (see the module docs for what is left out).
fn page_docs(url: &str, md: &str, crumbs: &[String]) -> Vec<Doc> {
    let nav = [NAV_HEADINGS.leads_to, NAV_HEADINGS.map];
    let mut docs = Vec::new();
    let mut ids = HashSet::new();
    let mut cur = Section::default();
    // The heading being read: (level, explicit id, text).
    let mut heading: Option<(HeadingLevel, Option<String>, String)> = None;
    let push = |s: &Section, docs: &mut Vec<Doc>| {
        if (s.title.is_empty() && s.body.trim().is_empty()) || nav.contains(&s.title.trim()) {
            return;
        }
        let mut c = crumbs.to_vec();
        c.push(s.title.clone());
        docs.push(Doc {
            url: if s.id.is_empty() {
                url.to_string()
            } else {
                format!("{url}#{}", s.id)
            },
            title: collapse(&s.title),
            body: collapse(&s.body),
            breadcrumbs: collapse(&c.join(" » ")),
        });
    };
    for ev in Parser::new_ext(md, options()) {
        match ev {
            Event::Start(Tag::Heading { level, id, .. }) => {
                heading = Some((level, id.map(|i| i.to_string()), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((level, explicit, text)) = heading.take() else {
                    continue;
                };
                let id = explicit.unwrap_or_else(|| unique_id(&id_from_content(&text), &mut ids));
                if level <= HeadingLevel::H3 {
                    push(&cur, &mut docs);
                    cur = Section {
                        title: text,
                        id,
                        body: String::new(),
                    };
                } else {
                    cur.body.push_str(&text);
                    cur.body.push(' ');
                }
            }
            // mdBook's `<code>` element adds a space before the code, like any element.
            Event::Code(t) => {
                let out = sink(&mut heading, &mut cur.body);
                out.push(' ');
                out.push_str(&t);
            }
            Event::Text(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                sink(&mut heading, &mut cur.body).push_str(&t)
            }
            // Block HTML (the line box, prerequisites, figures) is navigation or drawing.
            Event::Html(_) => {}
            // Where mdBook's tree opens an element, it adds a space: words never run together.
            Event::InlineHtml(_) | Event::SoftBreak | Event::HardBreak | Event::Start(_) => {
                sink(&mut heading, &mut cur.body).push(' ')
            }
            _ => {}
        }
    }
    push(&cur, &mut docs);
    docs
}

/// Where text goes: into the heading being read, or else the section's body.
fn sink<'a>(
    heading: &'a mut Option<(HeadingLevel, Option<String>, String)>,
    body: &'a mut String,
) -> &'a mut String {
    match heading {
        Some((_, _, h)) => h,
        None => body,
    }
}

/// mdBook's heading id: lowercase, alphanumerics, `_` and `-` kept, whitespace as `-`.
fn id_from_content(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// mdBook's unique id: `-1`, `-2`, … appended to an id already used on the page.
fn unique_id(id: &str, used: &mut HashSet<String>) -> String {
    if used.insert(id.to_string()) {
        return id.to_string();
    }
    (1..)
        .map(|n| format!("{id}-{n}"))
        .find(|c| used.insert(c.clone()))
        .expect("some suffix is free")
}

/// Runs of whitespace as one space, trimmed (mdBook stores search text this way).
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn pages(card: &str) -> Pages {
        let mut p = Pages::new();
        p.insert(
            PathBuf::from("SUMMARY.md"),
            "# Summary\n\n[Home](index.md)\n\n# 학습 경로\n\n- [경로 A](paths/a.md)\n    - [카드 X](cards/x.md)\n".into(),
        );
        p.insert(PathBuf::from("cards/x.md"), card.into());
        p
    }

    #[test]
    fn card_text_without_navigation() {
        let card = "# 카드 X\n\n<div class=\"hdlc-lines\">\n<a href=\"y.html\">◀ 이전 역 Y</a>\n</div>\n\n> 요약 문장\n\n<div class=\"hdlc-prereq\"><strong>먼저 읽을 카드</strong></div>\n\n본문 첫 문단.\n\n## 왜 중요한가\n\n`code` 와 **강조**.\n\n## 다음에 배울 수 있는 것\n\n- [Z](z.md) — 다른 카드 요약\n\n## 노선에서의 위치\n\n<div class=\"hdlc-minimap\"><svg><text>Y</text></svg></div>\n\n## 참고 자료\n\n- 논문\n";
        let docs = card_docs(&pages(card));
        let urls: Vec<&str> = docs.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "cards/x.html#카드-x",
                "cards/x.html#왜-중요한가",
                "cards/x.html#참고-자료"
            ]
        );
        assert_eq!(docs[0].body, "요약 문장 본문 첫 문단.");
        assert_eq!(docs[0].breadcrumbs, "경로 A » 카드 X » 카드 X");
        assert_eq!(docs[1].body, "code 와 강조.");
        let all: String = docs.iter().map(|d| d.body.clone()).collect();
        assert!(
            !all.contains('◀') && !all.contains("먼저 읽을") && !all.contains("다른 카드"),
            "{all}"
        );
    }

    #[test]
    fn repeated_headings_get_mdbooks_suffixes() {
        let docs = card_docs(&pages("# A\n\n## 예시\n\n하나\n\n## 예시\n\n둘\n"));
        assert_eq!(docs[2].url, "cards/x.html#예시-1");
    }
}
