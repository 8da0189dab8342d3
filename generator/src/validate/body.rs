//! A card's body: links to cards, pages and anchors, math, figure and include blocks, stray
//! dollar signs, and the measured values, claims and typed numbers of its prose.

use super::suggest;
use crate::diag::{line_col, Diagnostics};
use crate::markup::{self, Piece};
use crate::model::{Book, Card};

/// Every piece of the body the scanner found, then the prose.
pub(super) fn check_body(book: &Book, card: &Card, diags: &mut Diagnostics) {
    let lab_fams = crate::figspec::lab_families(&book.labs);
    let mut stray_line = 0;
    let index = crate::diag::LineIndex::new(&card.source);
    let pieces = markup::scan(card.body(), card.body_offset);
    for piece in pieces.iter().cloned() {
        let (line, col) = index.line_col(piece.range().start);
        if matches!(piece, Piece::StrayDollar { .. }) {
            // One report per line: the closing `$` of the same broken span is not news.
            if stray_line == line {
                continue;
            }
            stray_line = line;
        }
        let at = At { card, line, col };
        match piece {
            Piece::CardLink { id, anchor, .. } => check_card_link(book, &at, &id, anchor, diags),
            Piece::Math { latex, display, .. } => {
                if let Err(e) = markup::latex_to_mathml(&latex, display) {
                    diags
                        .error(
                            &card.file,
                            line,
                            col,
                            format!("malformed math `{}`: {e}", latex.trim()),
                        )
                        .hint(
                            "check braces and command names; math is LaTeX converted to MathML at build time",
                        );
                }
            }
            Piece::Figure { body, .. } => check_figure(book, &at, &body, &lab_fams, diags),
            Piece::Link { url, .. } => {
                if let Err(hint) = resolve_page_link(book, card, &url) {
                    diags
                        .error(&card.file, line, col, format!("broken link `{url}`"))
                        .hint(hint);
                }
            }
            Piece::Include { body, .. } => check_include(book, &at, &body, diags),
            Piece::StrayDollar { .. } => {
                diags
                    .error(&card.file, line, col, "`$` that does not start math: unclosed `$…$` or unbalanced braces inside it")
                    .hint("balance every `{` with `}` inside the math, close it with `$`, or write `\\$` for a literal dollar sign");
            }
            Piece::Prose { .. } => {}
        }
    }
    check_prose(book, card, pieces, diags);
}

/// Where a piece starts: the card, and the line and column in its file.
struct At<'a> {
    card: &'a Card,
    line: usize,
    col: usize,
}

/// `card:id` must name a card (or one already reported as broken), and `#anchor` a heading of it.
fn check_card_link(book: &Book, at: &At, id: &str, anchor: Option<String>, diags: &mut Diagnostics) {
    let (file, line, col) = (&at.card.file, at.line, at.col);
    match book.card(id) {
        None if book.is_broken(id) => {}
        None => {
            let hint = suggest(id, book.cards.iter().map(|c| c.id.as_str()));
            diags
                .error(file, line, col, format!("link to unknown card `card:{id}`"))
                .hint(hint);
        }
        Some(target) => {
            if let Some(a) = anchor {
                if !crate::render::anchors(target).contains(&a) {
                    diags
                        .error(
                            file,
                            line,
                            col,
                            format!("link to unknown anchor `#{a}` in card `{id}`"),
                        )
                        .hint(
                            "anchors are the headings of the target card, lowercased with spaces as hyphens",
                        );
                }
            }
        }
    }
}

/// A figure block must parse against the known benchmarks and labs, and the `loc:` sources of
/// a bench figure must exist now, not only when the figure is drawn.
fn check_figure(book: &Book, at: &At, body: &str, lab_fams: &[String], diags: &mut Diagnostics) {
    let (file, line, col) = (&at.card.file, at.line, at.col);
    match crate::figspec::parse_figure(body, &crate::render::figures::known(lab_fams)) {
        Err((off, msg, hint)) => {
            diags.error(file, line + off, 1, msg).hint(hint);
        }
        Ok(crate::figspec::Figure::Bench(spec)) => {
            check_caption(at, body, spec.caption.as_deref(), diags);
            for (variant, source) in spec.loc.iter().flatten() {
                let found = crate::include::parse_source_ref(source)
                    .and_then(|inc| crate::include::extract(&book.root, &inc));
                if let Err(e) = found {
                    diags
                        .error(file, line, col, format!("`loc:` of `{variant}`: {e}"))
                        .hint("name a def/class of a lab file or a kernel of a .cu file as `file#name`");
                }
            }
        }
        Ok(_) => {}
    }
}

/// A figure's caption is prose a reader reads: a typed measured number in it is an error like one
/// in the body (the figure itself shows the measured numbers; the caption says what they are).
fn check_caption(at: &At, body: &str, caption: Option<&str>, diags: &mut Diagnostics) {
    let Some(caption) = caption else { return };
    let line = at.line
        + body
            .lines()
            .position(|l| l.trim_start().starts_with("caption:"))
            .map_or(0, |i| i + 1);
    for f in crate::prose::lint::find(caption, None) {
        diags
            .error(&at.card.file, line, 1, format!("typed measured number `{}` in a figure caption", f.text))
            .hint(format!(
                "the figure shows the measured numbers; say what they are in words, or mark a non-measured number: {}",
                crate::prose::lint::MARKERS.join(", ")
            ));
    }
}

/// An include block must parse, and what it names must be found in the sources.
fn check_include(book: &Book, at: &At, body: &str, diags: &mut Diagnostics) {
    let (file, line) = (&at.card.file, at.line);
    match crate::include::parse(body) {
        Err((off, msg, hint)) => {
            diags.error(file, line + off, 1, msg).hint(hint);
        }
        Ok(spec) => {
            if let Err(e) = crate::include::extract(&book.root, &spec) {
                diags.error(file, line + 1, 1, format!("include: {e}")).hint(
                    "kernel sources live in kernels/*.cu; name one `__global__` function or a line range",
                );
            }
        }
    }
}

/// The card's measured values and claims against the results, and its typed measured numbers.
fn check_prose(book: &Book, card: &Card, pieces: Vec<Piece>, diags: &mut Diagnostics) {
    let pieces = pieces
        .into_iter()
        .filter_map(|p| match p {
            Piece::Prose { body, range } => Some((body, range)),
            _ => None,
        })
        .collect();
    let files: Vec<_> = crate::records::display_order(&book.results, None);
    crate::prose::check_card(card, &crate::prose::parse_all(pieces), &files, diags);
    for f in crate::prose::lint::find(card.body(), Some(crate::render::REFERENCES_HEADING)) {
        let (line, col) = line_col(&card.source, card.body_offset + f.offset);
        diags
            .error(&card.file, line, col, format!("typed measured number `{}` in prose", f.text))
            .hint(format!(
                "read it from the records (`{{{{ family/variant where … by metric }}}}`), or say what it is in the sentence: {}",
                crate::prose::lint::MARKERS.join(", ")
            ));
    }
}

/// Check a plain relative link in a card body against the pages the book will have. Card pages
/// live side by side in `cards/`, paths in `paths/`, the front page, map and index at the top.
fn resolve_page_link(book: &Book, card: &Card, url: &str) -> Result<(), String> {
    let (path, frag) = match url.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (url, None),
    };
    let path = path.split('?').next().unwrap_or("");
    let target: Option<&Card> = if path.is_empty() {
        Some(card)
    } else if let Some(id) = path.strip_suffix(".md").filter(|p| !p.contains('/')) {
        match book.card(id) {
            Some(c) => Some(c),
            None => return Err(format!("no card `{id}`; link to cards with `card:{id}`")),
        }
    } else if let Some(id) = path.strip_prefix("../paths/").and_then(|p| p.strip_suffix(".md")) {
        if book.paths.iter().any(|p| p.id == id) {
            None
        } else {
            return Err(format!("no path `{id}` in paths.yaml"));
        }
    } else if ["../index.md", "../map.md", "../cards.md"].contains(&path) {
        None
    } else {
        return Err(
            "link to another card as `card:id`, to a path as `../paths/<id>.md`, or to `../map.md`".into(),
        );
    };
    if let (Some(t), Some(f)) = (target, frag) {
        if !crate::render::anchors(t).iter().any(|a| a == f) {
            return Err(format!("no heading with anchor `#{f}` in `{}`", t.id));
        }
    }
    Ok(())
}
