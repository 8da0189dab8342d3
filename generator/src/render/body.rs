//! A card's own text for mdBook: `card:` links become page links, math becomes MathML, include
//! blocks become the code they name, figure blocks become SVG figures, and `{{…}}` values and
//! claims become the numbers of the records. Also the heading anchors mdBook will give the page.
//!
//! Why one pass over the scanned pieces: every rewrite is a replacement of a piece the markup
//! scanner found, so the body is assembled once, front to back, from the text between pieces and
//! each piece's replacement.

use super::views::BodyView;
use super::{figures, text, FigureData};
use crate::diag::{line_col, Diagnostics};
use crate::figspec::{Figure, FigureSpec};
use crate::markup::{self, Piece};
use crate::model::{Book, Card};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// The heading under which a card lists its references; moved to the end of the page.
pub const REFERENCES_HEADING: &str = "## 참고 자료";

/// What a body is rendered with besides the card: the book (for includes and labs), the
/// measured records, and the lab families (figures of those are drawn as lab figures).
pub struct BodyInput<'a> {
    pub book: &'a Book,
    pub figs: &'a FigureData<'a>,
    pub labs: &'a [String],
}

/// Rewrite a card body for mdBook. Problems (an include or figure that cannot be made) are
/// reported into `diags`, and the piece is left out of the page.
pub fn render_body(input: &BodyInput, card: &Card, diags: &mut Diagnostics) -> BodyView {
    let mut pieces = markup::scan(card.body(), card.body_offset);
    let prose = prose_replacements(&pieces, input.figs);
    pieces.sort_by_key(|p| p.range().start);
    let mut out = String::with_capacity(card.source.len());
    let mut at = card.body_offset;
    for piece in pieces {
        let range = piece.range().clone();
        if range.start < at {
            continue;
        }
        if let Some(html) = replacement(input, card, piece, &prose, diags) {
            out.push_str(&card.source[at..range.start]);
            out.push_str(&html);
            at = range.end;
        }
    }
    out.push_str(&card.source[at..]);
    split_references(out.trim())
}

/// What one piece becomes; `None` keeps its text as written.
fn replacement(
    input: &BodyInput,
    card: &Card,
    piece: Piece,
    prose: &HashMap<(usize, usize), String>,
    diags: &mut Diagnostics,
) -> Option<String> {
    let start = piece.range().start;
    Some(match piece {
        Piece::CardLink { id, anchor, .. } => match anchor {
            Some(a) => format!("{id}.md#{a}"),
            None => format!("{id}.md"),
        },
        Piece::Math { latex, display, .. } => match markup::latex_to_mathml(&latex, display) {
            Ok(m) if display => format!("<span class=\"math-display\">{m}</span>"),
            Ok(m) => m,
            Err(_) => return None,
        },
        Piece::StrayDollar { .. } | Piece::Link { .. } => return None,
        Piece::Prose { range, .. } => prose.get(&(range.start, range.end)).cloned().unwrap_or_default(),
        Piece::Include { body, .. } => include_html(input.book, &body).unwrap_or_else(|e| {
            let (line, col) = line_col(&card.source, start);
            diags.error(&card.file, line, col, format!("include cannot be resolved: {e}"));
            String::new()
        }),
        Piece::Figure { body, .. } => match figure_html(input, &body) {
            Ok(h) => format!("\n\n{}\n\n", text::wrap_tables(h.trim())),
            Err(e) => {
                let (line, col) = line_col(&card.source, start);
                diags.error(&card.file, line, col, format!("figure cannot be drawn: {e}"));
                String::new()
            }
        },
    })
}

/// An include block as the excerpt it names, with the line naming its file above it.
fn include_html(book: &Book, body: &str) -> Result<String, String> {
    let spec = crate::include::parse(body).map_err(|(_, m, _)| m)?;
    let x = crate::include::extract(&book.root, &spec)?;
    Ok(text::include_block(
        x.lang,
        &x.code,
        &spec.file,
        spec.kernel.as_deref().or(spec.name.as_deref()),
        (x.first_line, x.last_line),
    ))
}

/// A figure block as HTML: a measured figure, a lab figure or a calculation.
fn figure_html(input: &BodyInput, body: &str) -> Result<String, String> {
    let (figs, labs) = (input.figs, input.labs);
    let fig = crate::figspec::parse_figure(body, &figures::known(labs)).map_err(|(_, m, _)| m)?;
    match fig {
        Figure::Bench(spec) if labs.contains(&spec.bench) || spec.record_view() => {
            let loc = lab_loc(input.book, &spec)?;
            figures::render_lab_figure(&spec, figs.files, figs.local_device, &loc)
        }
        Figure::Bench(spec) => figures::render_figure(&spec, figs.files, figs.local_device),
        Figure::Calc(spec) => crate::calc::render(&spec, figs.files),
    }
}

/// Lines of code of each variant a lab figure's `loc:` names, counted from the sources now.
fn lab_loc(book: &Book, spec: &FigureSpec) -> Result<BTreeMap<String, usize>, String> {
    let mut out = BTreeMap::new();
    for (variant, source) in spec.loc.iter().flatten() {
        let inc = crate::include::parse_source_ref(source)?;
        let x =
            crate::include::extract(&book.root, &inc).map_err(|e| format!("`loc:` of `{variant}`: {e}"))?;
        out.insert(variant.clone(), x.code_lines());
    }
    Ok(out)
}

/// What each `{{…}}` value and claim of a card becomes, by the range of its piece, from the
/// records of the machines in the figures' order (the reader's GPU first).
fn prose_replacements(pieces: &[Piece], figs: &FigureData) -> HashMap<(usize, usize), String> {
    let found = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Prose { body, range } => Some((body.clone(), range.clone())),
            _ => None,
        })
        .collect();
    let files = crate::records::display_order(figs.files, figs.local_device);
    let all: Vec<(Range<usize>, String)> =
        crate::prose::replacements(&crate::prose::parse_all(found), &files);
    // The first replacement of a piece wins, as a search from the front would find it.
    let mut out = HashMap::with_capacity(all.len());
    for (range, html) in all {
        out.entry((range.start, range.end)).or_insert(html);
    }
    out
}

/// The body with its references section (from [`REFERENCES_HEADING`] on) apart.
fn split_references(body: &str) -> BodyView {
    match body.find(REFERENCES_HEADING) {
        Some(i) if i == 0 || body[..i].ends_with('\n') => BodyView {
            main: body[..i].trim_end().to_string(),
            references: body[i..].trim().to_string(),
        },
        _ => BodyView {
            main: body.to_string(),
            references: String::new(),
        },
    }
}

/// Heading anchors of a card page as mdBook generates them (lowercase, spaces → '-').
pub fn anchors(card: &Card) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out: Vec<String> = Vec::new();
    let mut cur: Option<String> = None;
    for ev in Parser::new_ext(card.body(), markup::options()) {
        match ev {
            Event::Start(Tag::Heading { .. }) => cur = Some(String::new()),
            Event::Text(t) | Event::Code(t) if cur.is_some() => {
                cur.as_mut().expect("in heading").push_str(&t)
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(text) = cur.take() {
                    let base = normalize_id(&text);
                    let mut id = base.clone();
                    let mut n = 1;
                    while out.contains(&id) {
                        id = format!("{base}-{n}");
                        n += 1;
                    }
                    out.push(id);
                }
            }
            _ => {}
        }
    }
    out
}

/// mdBook's heading-id rule.
pub fn normalize_id(text: &str) -> String {
    text.trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}
