//! Stage 2, validate: check the loaded book as a whole and report every problem at once.
//!
//! Each check pushes diagnostics with the file, line and a hint; nothing here stops early, so an
//! author sees the full list from one `check` run.

use crate::diag::{line_col, Diagnostics};
use crate::graph::ConceptGraph;
use crate::load::token_col;
use crate::markup::{self, Piece};
use crate::model::{Book, Card};
use std::collections::{HashMap, HashSet};

/// Run every check over the book.
pub fn validate(book: &Book, diags: &mut Diagnostics) {
    check_cards(book, diags);
    check_paths(book, diags);
    check_graph(book, diags);
    for card in &book.cards {
        check_body(book, card, diags);
    }
}

/// Line and column of `token` in the card's front matter after the line of `key`.
fn key_token_pos(card: &Card, key: &str, token: &str) -> (usize, usize) {
    let key_line = card.key_lines.get(key).copied().unwrap_or(1);
    let (body_line, _) = line_col(&card.source, card.body_offset);
    for (i, l) in card
        .source
        .lines()
        .enumerate()
        .skip(key_line - 1)
        .take(body_line.saturating_sub(key_line))
    {
        if let Some(c) = token_col(l, token) {
            return (i + 1, l[..c].chars().count() + 1);
        }
    }
    (key_line, 1)
}

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && id
            .split('-')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

fn check_cards(book: &Book, diags: &mut Diagnostics) {
    let mut first: HashMap<&str, &Card> = HashMap::new();
    for card in &book.cards {
        let id_line = card.key_lines.get("id").copied().unwrap_or(1);
        if !is_kebab(&card.id) {
            diags
                .error(
                    &card.file,
                    id_line,
                    1,
                    format!("card id `{}` is not kebab-case", card.id),
                )
                .hint("ids use lowercase letters, digits and single hyphens, e.g. `arithmetic-intensity`");
        }
        let stem = card.file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if stem != card.id {
            diags
                .error(
                    &card.file,
                    id_line,
                    1,
                    format!("card id `{}` differs from its file name `{stem}.md`", card.id),
                )
                .hint(format!("rename the file to `{}.md` or set `id: {stem}`", card.id));
        }
        if let Some(prev) = first.get(card.id.as_str()) {
            diags
                .error(&card.file, id_line, 1, format!("duplicate card id `{}`", card.id))
                .hint(format!(
                    "`{}` already uses this id; ids must be unique across cards/",
                    prev.file.display()
                ));
        } else {
            first.insert(&card.id, card);
        }
        for field in [("title", &card.title), ("summary", &card.summary)] {
            if field.1.trim().is_empty() {
                let line = card.key_lines.get(field.0).copied().unwrap_or(id_line);
                diags
                    .error(&card.file, line, 1, format!("empty `{}`", field.0))
                    .hint("write a short Korean text");
            }
        }
        let mut seen = HashSet::new();
        for r in &card.requires {
            let (line, col) = key_token_pos(card, "requires", r);
            if !seen.insert(r) {
                diags.warning(
                    &card.file,
                    line,
                    col,
                    format!("`{r}` is listed twice in requires"),
                );
            }
            if r == &card.id {
                diags
                    .error(&card.file, line, col, format!("card `{r}` requires itself"))
                    .hint("remove it from `requires`");
            } else if book.card(r).is_none() && !book.is_broken(r) {
                let hint = suggest(r, book.cards.iter().map(|c| c.id.as_str()));
                diags
                    .error(&card.file, line, col, format!("unknown card `{r}` in requires"))
                    .hint(hint);
            }
        }
        if card.body().trim().is_empty() {
            let (line, _) = line_col(&card.source, card.body_offset);
            diags
                .error(&card.file, line, 1, "card has no body")
                .hint("write the card's text below the front matter");
        }
    }
}

/// A "did you mean" hint from the closest known id (by shared prefix and edit distance).
fn suggest<'a>(unknown: &str, known: impl Iterator<Item = &'a str>) -> String {
    let best = known.map(|k| (edit_distance(unknown, k), k)).min();
    match best {
        Some((d, k)) if d <= unknown.len().max(3) / 2 => format!("did you mean `{k}`?"),
        _ => "no card has this id; check the spelling or write the card".to_string(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j])).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn check_paths(book: &Book, diags: &mut Diagnostics) {
    let file = &book.paths_file;
    let mut ids = HashSet::new();
    let mut colors: HashMap<String, &str> = HashMap::new();
    let mut starts: HashMap<u32, &str> = HashMap::new();
    for p in &book.paths {
        if !is_kebab(&p.id) {
            diags
                .error(file, p.line, 1, format!("path id `{}` is not kebab-case", p.id))
                .hint("e.g. `roofline`, `cuda-first-kernel`");
        }
        if !ids.insert(p.id.as_str()) {
            diags
                .error(file, p.line, 1, format!("duplicate path id `{}`", p.id))
                .hint("path ids must be unique");
        }
        let c = p.color.to_ascii_lowercase();
        if !(c.len() == 7 && c.starts_with('#') && c[1..].chars().all(|x| x.is_ascii_hexdigit())) {
            diags
                .error(
                    file,
                    p.line,
                    1,
                    format!("path `{}`: color `{}` is not #rrggbb", p.id, p.color),
                )
                .hint("write the color as a quoted hex string, e.g. \"#e6194b\"");
        } else if let Some(other) = colors.insert(c, &p.id) {
            diags
                .warning(
                    file,
                    p.line,
                    1,
                    format!("path `{}` has the same color as `{other}`", p.id),
                )
                .hint("each line needs its own color on the map");
        }
        if let Some(s) = p.start {
            if let Some(other) = starts.insert(s, &p.id) {
                diags
                    .error(
                        file,
                        p.line,
                        1,
                        format!("paths `{other}` and `{}` both have start: {s}", p.id),
                    )
                    .hint("start positions must be distinct");
            }
        }
        if p.stations.is_empty() && !p.planned {
            diags
                .error(file, p.line, 1, format!("path `{}` has no stations", p.id))
                .hint("list its cards under `stations:`, or mark it `planned: true`");
        }
        let mut seen = HashSet::new();
        for (s, &(line, col)) in p.stations.iter().zip(&p.station_lines) {
            if !seen.insert(s) {
                diags
                    .error(file, line, col, format!("path `{}` visits `{s}` twice", p.id))
                    .hint("a line passes each station once");
            }
            match book.card(s) {
                None if book.is_broken(s) => {}
                None => {
                    let hint = suggest(s, book.cards.iter().map(|c| c.id.as_str()));
                    diags
                        .error(file, line, col, format!("path `{}`: unknown station `{s}`", p.id))
                        .hint(hint);
                }
                Some(card) => {
                    let pos = p.stations.iter().position(|x| x == s).unwrap_or(0);
                    for r in &card.requires {
                        if let Some(rpos) = p.stations.iter().position(|x| x == r) {
                            if rpos > pos {
                                diags
                                    .error(
                                        file,
                                        line,
                                        col,
                                        format!(
                                            "path `{}`: station `{s}` comes before its prerequisite `{r}`",
                                            p.id
                                        ),
                                    )
                                    .hint(format!("move `{r}` before `{s}` on this path"));
                            }
                        }
                    }
                }
            }
        }
    }
    if !book.paths_ok {
        return;
    }
    let on_path: HashSet<&str> = book
        .paths
        .iter()
        .flat_map(|p| p.stations.iter().map(String::as_str))
        .collect();
    for card in &book.cards {
        // The opening card is reached from the front page, not from a line.
        if !on_path.contains(card.id.as_str()) && card.id != crate::render::OPENING_CARD {
            let line = card.key_lines.get("id").copied().unwrap_or(1);
            diags
                .warning(
                    &card.file,
                    line,
                    1,
                    format!("card `{}` is on no learning path", card.id),
                )
                .hint("add it to a path's stations in paths.yaml");
        }
    }
}

fn check_graph(book: &Book, diags: &mut Diagnostics) {
    let g = ConceptGraph::build(book);
    for cycle in g.cycles() {
        let Some(card) = book.card(&cycle[0]) else {
            continue;
        };
        let next = cycle.get(1).cloned().unwrap_or_default();
        // Point at the `requires` entry that closes the cycle, in the card that requires cycle[0].
        let closer = cycle
            .iter()
            .rev()
            .nth(1)
            .and_then(|id| book.card(id))
            .unwrap_or(card);
        let (line, col) = key_token_pos(closer, "requires", &cycle[0]);
        diags
            .error(
                &closer.file,
                line,
                col,
                format!("prerequisite cycle: {}", cycle.join(" → ")),
            )
            .hint(format!(
                "a card cannot (indirectly) require itself; drop one `requires` edge, e.g. `{}` from `{}`",
                cycle[0], closer.id
            ));
        let _ = next;
    }
}

fn check_body(book: &Book, card: &Card, diags: &mut Diagnostics) {
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
        match piece {
            Piece::CardLink { id, anchor, .. } => match book.card(&id) {
                None if book.is_broken(&id) => {}
                None => {
                    let hint = suggest(&id, book.cards.iter().map(|c| c.id.as_str()));
                    diags
                        .error(&card.file, line, col, format!("link to unknown card `card:{id}`"))
                        .hint(hint);
                }
                Some(target) => {
                    if let Some(a) = anchor {
                        if !crate::render::anchors(target).contains(&a) {
                            diags.error(&card.file, line, col, format!("link to unknown anchor `#{a}` in card `{id}`")).hint("anchors are the headings of the target card, lowercased with spaces as hyphens");
                        }
                    }
                }
            },
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
            Piece::Figure { body, .. } => {
                match crate::figspec::parse_figure(&body, &crate::render::figures::known(&lab_fams)) {
                    Err((off, msg, hint)) => {
                        diags.error(&card.file, line + off, 1, msg).hint(hint);
                    }
                    Ok(crate::figspec::Figure::Bench(spec)) => {
                        // `loc:` sources must exist now, not only when the figure is drawn.
                        for (variant, source) in spec.loc.iter().flatten() {
                            let found = crate::include::parse_source_ref(source)
                                .and_then(|inc| crate::include::extract(&book.root, &inc));
                            if let Err(e) = found {
                                diags
                                    .error(&card.file, line, col, format!("`loc:` of `{variant}`: {e}"))
                                    .hint("name a def/class of a lab file or a kernel of a .cu file as `file#name`");
                            }
                        }
                    }
                    Ok(_) => {}
                }
            }
            Piece::Link { url, .. } => {
                if let Err(hint) = resolve_page_link(book, card, &url) {
                    diags
                        .error(&card.file, line, col, format!("broken link `{url}`"))
                        .hint(hint);
                }
            }
            Piece::Include { body, .. } => match crate::include::parse(&body) {
                Err((off, msg, hint)) => {
                    diags.error(&card.file, line + off, 1, msg).hint(hint);
                }
                Ok(spec) => {
                    if let Err(e) = crate::include::extract(&book.root, &spec) {
                        diags
                            .error(&card.file, line + 1, 1, format!("include: {e}"))
                            .hint("kernel sources live in kernels/*.cu; name one `__global__` function or a line range");
                    }
                }
            },
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
