//! The parts of a card body the generator acts on: `card:` links, `$…$` math and `figure`
//! blocks, each with its byte range in the card file.
//!
//! Why one scanner: validation checks these pieces and rendering rewrites them; both must see
//! exactly the same pieces, so both call [`scan`] (parsed once by pulldown-cmark with offsets).

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use std::ops::Range;

/// pulldown-cmark options matching what mdBook enables, plus math.
pub fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_MATH
}

#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// `[text](card:id#anchor)`; `range` is the byte range of the `card:id` target text.
    CardLink {
        id: String,
        anchor: Option<String>,
        range: Range<usize>,
    },
    /// `$…$` (display false) or `$$…$$` (display true); `range` covers the delimiters.
    Math {
        latex: String,
        display: bool,
        range: Range<usize>,
    },
    /// A fenced ```` ```figure ```` block; `body` is its YAML, `range` covers the fences.
    Figure { body: String, range: Range<usize> },
    /// Any other relative link or image (`[t](../paths/x.md)`, `[t](#anchor)`); `range` is the
    /// link's whole source.
    Link { url: String, range: Range<usize> },
    /// A `$` in text that did not open math (e.g. unbalanced braces inside `$…$`).
    StrayDollar { range: Range<usize> },
    /// A fenced ```` ```include ```` block naming kernel source to show; `body` is its YAML.
    Include { body: String, range: Range<usize> },
    /// A measured value or checked claim, `{{…}}` in prose (not in code or math); `body` is the
    /// text between the braces, `None` when the `}}` is missing on that line.
    Prose {
        body: Option<String>,
        range: Range<usize>,
    },
}

impl Piece {
    pub fn range(&self) -> &Range<usize> {
        match self {
            Piece::CardLink { range, .. }
            | Piece::Math { range, .. }
            | Piece::Figure { range, .. }
            | Piece::Link { range, .. }
            | Piece::StrayDollar { range }
            | Piece::Include { range, .. }
            | Piece::Prose { range, .. } => range,
        }
    }
}

/// Scan a body. `base` is the byte offset of `body` inside its file, added to every range so
/// that ranges (and the lines computed from them) refer to the file.
pub fn scan(body: &str, base: usize) -> Vec<Piece> {
    let mut s = Scanner {
        body,
        base,
        pieces: Vec::new(),
        figure: None,
        in_code: false,
        literal: Vec::new(),
        html_skip: 0,
    };
    for (event, range) in Parser::new_ext(body, options()).into_offset_iter() {
        s.event(event, range);
    }
    let mut pieces = s.pieces;
    pieces.extend(prose_pieces(body, base, &s.literal));
    pieces
}

/// The state of one scan.
struct Scanner<'a> {
    body: &'a str,
    base: usize,
    pieces: Vec<Piece>,
    /// An open figure or include block: (is_include, body, range).
    figure: Option<(bool, String, Range<usize>)>,
    in_code: bool,
    /// Where `{{` is code or math, not a measured value.
    literal: Vec<Range<usize>>,
    /// Depth inside raw-HTML elements whose text is not prose (see `html_math`).
    html_skip: usize,
}

impl Scanner<'_> {
    /// One parser event: the pieces it starts, ends or is.
    fn event(&mut self, event: Event, range: Range<usize>) {
        let (body, base) = (self.body, self.base);
        let at = |r: &Range<usize>| base + r.start..base + r.end;
        if matches!(
            event,
            Event::Code(_)
                | Event::InlineMath(_)
                | Event::DisplayMath(_)
                | Event::Html(_)
                | Event::InlineHtml(_)
        ) || matches!(event, Event::Start(Tag::CodeBlock(_)))
        {
            self.literal.push(range.clone());
        }
        match event {
            Event::Html(_) => html_math(
                &body[range.clone()],
                base + range.start,
                &mut self.html_skip,
                &mut self.pieces,
            ),
            Event::Start(Tag::Link { dest_url, .. }) if dest_url.starts_with("card:") => self
                .pieces
                .push(card_link(&dest_url, &body[range.clone()], base + range.start)),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. })
                if !dest_url.contains("://") && !dest_url.starts_with("mailto:") =>
            {
                self.pieces.push(Piece::Link {
                    url: dest_url.to_string(),
                    range: at(&range),
                });
            }
            Event::InlineMath(latex) => self.math(&latex, false, at(&range)),
            Event::DisplayMath(latex) => self.math(&latex, true, at(&range)),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))
                if matches!(info.split_whitespace().next(), Some("figure") | Some("include")) =>
            {
                let is_include = info.split_whitespace().next() == Some("include");
                self.figure = Some((is_include, String::new(), at(&range)));
                self.in_code = true;
            }
            Event::Text(t) if self.figure.is_some() => {
                if let Some((_, b, _)) = self.figure.as_mut() {
                    b.push_str(&t);
                }
            }
            Event::Text(_) if !self.in_code => self.stray_dollars(range),
            Event::Start(Tag::CodeBlock(_)) => self.in_code = true,
            Event::End(TagEnd::CodeBlock) => {
                self.in_code = false;
                if let Some((is_include, body, range)) = self.figure.take() {
                    self.pieces.push(if is_include {
                        Piece::Include { body, range }
                    } else {
                        Piece::Figure { body, range }
                    });
                }
            }
            _ => {}
        }
    }

    fn math(&mut self, latex: &str, display: bool, range: Range<usize>) {
        self.pieces.push(Piece::Math {
            latex: latex.to_string(),
            display,
            range,
        });
    }

    /// A `$` in plain text did not open math: an error for `validate` (unless escaped).
    fn stray_dollars(&mut self, range: Range<usize>) {
        let src = &self.body[range.clone()];
        for (i, _) in src.match_indices('$') {
            if !self.body[..range.start + i].ends_with('\\') {
                let at = self.base + range.start + i;
                self.pieces.push(Piece::StrayDollar { range: at..at + 1 });
            }
        }
    }
}

/// A `[text](card:id#anchor)` link whose source starts at `start`: the range is that of the
/// literal target text inside the link's source.
fn card_link(dest_url: &str, src: &str, start: usize) -> Piece {
    let target = &dest_url["card:".len()..];
    let (id, anchor) = match target.split_once('#') {
        Some((i, a)) => (i.to_string(), Some(a.to_string())),
        None => (target.to_string(), None),
    };
    let at = src.rfind(dest_url).map(|i| start + i).unwrap_or(start);
    Piece::CardLink {
        id,
        anchor,
        range: at..at + dest_url.len(),
    }
}

/// The `{{…}}` pieces of a body outside `literal` ranges; a `{{` without `}}` on its line is a
/// piece without a body (an error for `validate`).
fn prose_pieces(body: &str, base: usize, literal: &[Range<usize>]) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = body[from..].find("{{").map(|i| i + from) {
        if let Some(r) = literal.iter().find(|r| r.contains(&i)) {
            from = r.end.max(i + 2);
            continue;
        }
        let line_end = body[i..].find('\n').map_or(body.len(), |e| i + e);
        match body[i + 2..line_end].find("}}") {
            Some(j) => {
                let end = i + 2 + j + 2;
                out.push(Piece::Prose {
                    body: Some(body[i + 2..end - 2].to_string()),
                    range: base + i..base + end,
                });
                from = end;
            }
            None => {
                out.push(Piece::Prose {
                    body: None,
                    range: base + i..base + line_end,
                });
                from = line_end;
            }
        }
    }
    out
}

/// Raw-HTML elements whose text is not prose: math is never looked for inside them.
const HTML_NOT_PROSE: &[&str] = &["svg", "math", "code", "pre", "script", "style"];

/// `$…$` and `$$…$$` in a raw HTML block line (a hand-drawn figure's `<figcaption>`).
///
/// Why: pulldown-cmark passes HTML blocks through untouched, so math written there would reach
/// the reader as raw TeX. Only text between tags is searched, never inside `HTML_NOT_PROSE`
/// elements (`skip` carries that depth from line to line); both delimiters must sit in the same
/// run of text, the opening one not followed by a space, the closing one not preceded by one.
fn html_math(src: &str, base: usize, skip: &mut usize, out: &mut Vec<Piece>) {
    let mut i = 0;
    while i < src.len() {
        if src[i..].starts_with('<') {
            let end = src[i..].find('>').map_or(src.len(), |e| i + e + 1);
            let tag = &src[i + 1..end.saturating_sub(1).max(i + 1)];
            let closing = tag.starts_with('/');
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            if HTML_NOT_PROSE.contains(&name.as_str()) && !tag.ends_with('/') {
                *skip = if closing {
                    skip.saturating_sub(1)
                } else {
                    *skip + 1
                };
            }
            i = end;
            continue;
        }
        let end = src[i..].find('<').map_or(src.len(), |e| i + e);
        if *skip == 0 {
            text_math(&src[i..end], base + i, out);
        }
        i = end;
    }
}

/// The `$…$` and `$$…$$` spans of one run of plain text (HTML text, a card's summary), with
/// byte ranges offset by `base`.
pub fn text_math(text: &str, base: usize, out: &mut Vec<Piece>) {
    let mut i = 0;
    while let Some(at) = text[i..].find('$').map(|a| i + a) {
        if text[..at].ends_with('\\') {
            i = at + 1;
            continue;
        }
        let display = text[at..].starts_with("$$");
        let delim = if display { "$$" } else { "$" };
        let inner = at + delim.len();
        let close = text[inner..].find(delim).map(|c| inner + c);
        match close {
            Some(c)
                if c > inner
                    && !text[inner..].starts_with(char::is_whitespace)
                    && !text[..c].ends_with(char::is_whitespace) =>
            {
                out.push(Piece::Math {
                    latex: text[inner..c].to_string(),
                    display,
                    range: base + at..base + c + delim.len(),
                });
                i = c + delim.len();
            }
            _ => i = inner,
        }
    }
}

/// Convert LaTeX to MathML. Errors carry the parser's first message line.
///
/// Results are memoized for the life of the process: `check`/`build` validate every formula and
/// then render the same ones, and `serve` rebuilds the same book again and again.
pub fn latex_to_mathml(latex: &str, display: bool) -> Result<String, String> {
    type Cache = std::sync::Mutex<std::collections::HashMap<(String, bool), Result<String, String>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (latex.to_string(), display);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let result = convert_latex(latex, display);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, result.clone());
    }
    result
}

fn convert_latex(latex: &str, display: bool) -> Result<String, String> {
    use pulldown_latex::config::DisplayMode;
    use pulldown_latex::{Parser as LParser, RenderConfig, Storage};
    let storage = Storage::new();
    let events: Vec<_> = LParser::new(latex, &storage).collect();
    if let Some(Err(e)) = events.iter().find(|e| e.is_err()) {
        let msg = e.to_string();
        let first = msg
            .lines()
            .next()
            .unwrap_or("malformed math")
            .trim_start_matches("parsing error: ");
        return Err(first.to_string());
    }
    let config = RenderConfig {
        display_mode: if display {
            DisplayMode::Block
        } else {
            DisplayMode::Inline
        },
        ..RenderConfig::default()
    };
    let mut out = String::new();
    pulldown_latex::push_mathml(&mut out, events.into_iter(), config).map_err(|e| e.to_string())?;
    // pulldown-latex 0.8 writes the space of `\ ` and `~` as the text "&nbsp;", which its
    // writer then escapes: the reader would see "&nbsp;". Put the character itself back.
    let out = out.replace("&amp;nbsp;", "\u{a0}");
    Ok(protect_from_markdown(&out))
}

/// MathML is placed into Markdown that mdBook parses again: escape text characters Markdown
/// would act on (emphasis, code, links) as numeric entities, and keep it on one line.
fn protect_from_markdown(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 16);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(c)
            }
            '>' => {
                in_tag = false;
                out.push(c)
            }
            '\n' | '\r' => out.push(' '),
            '*' | '_' | '`' | '[' | ']' | '\\' | '$' | '~' | '|' if !in_tag => {
                out.push_str(&format!("&#{};", c as u32));
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn math(body: &str) -> Vec<(String, bool)> {
        scan(body, 0)
            .into_iter()
            .filter_map(|p| match p {
                Piece::Math { latex, display, .. } => Some((latex, display)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn math_in_raw_html_text_but_not_in_drawings_or_code() {
        let body = "<figure>\n<svg><text>$a$</text></svg>\n<figcaption>GQA($H$ = 8, $$x$$) costs $5 or $ 6$</figcaption>\n<code>$b$</code>\n</figure>\n";
        assert_eq!(math(body), [("H".to_string(), false), ("x".to_string(), true)]);
        let (start, end) = match &scan(body, 10)[0] {
            Piece::Math { range, .. } => (range.start, range.end),
            p => panic!("{p:?}"),
        };
        assert_eq!(
            &body[start - 10..end - 10],
            "$H$",
            "ranges point into the card file"
        );
    }

    #[test]
    fn escaped_space_in_math_is_a_space_not_an_entity() {
        let m = latex_to_mathml(r"\max(m,\ x)", false).unwrap();
        assert!(!m.contains("&amp;nbsp;") && !m.contains("&nbsp;"), "{m}");
    }
}
