//! paths.yaml: each line's id, colour, start position and stations, the order of prerequisites
//! along a line, and the cards no line reaches.

use super::{is_kebab, suggest};
use crate::diag::Diagnostics;
use crate::model::{Book, LearningPath};
use std::collections::{HashMap, HashSet};

/// paths.yaml line by line, then the cards that no line reaches.
pub(super) fn check_paths(book: &Book, diags: &mut Diagnostics) {
    let mut seen = Seen::default();
    for p in &book.paths {
        check_line(book, p, &mut seen, diags);
        check_stations(book, p, diags);
    }
    if !book.paths_ok {
        return;
    }
    check_reached(book, diags);
}

/// What the earlier lines of paths.yaml already claimed: ids, colours and start positions.
#[derive(Default)]
struct Seen<'a> {
    ids: HashSet<&'a str>,
    colors: HashMap<String, &'a str>,
    starts: HashMap<u32, &'a str>,
}

/// One line's own fields: a kebab-case id of its own, a colour of its own, a start position of
/// its own, and stations unless it is only planned.
fn check_line<'a>(book: &'a Book, p: &'a LearningPath, seen: &mut Seen<'a>, diags: &mut Diagnostics) {
    let file = &book.paths_file;
    if !is_kebab(&p.id) {
        diags
            .error(file, p.line, 1, format!("path id `{}` is not kebab-case", p.id))
            .hint("e.g. `roofline`, `cuda-first-kernel`");
    }
    if !seen.ids.insert(p.id.as_str()) {
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
    } else if let Some(other) = seen.colors.insert(c, &p.id) {
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
        if let Some(other) = seen.starts.insert(s, &p.id) {
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
}

/// The stations of one line: each once, each a card, each after its prerequisites on the line.
fn check_stations(book: &Book, p: &LearningPath, diags: &mut Diagnostics) {
    let file = &book.paths_file;
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

/// Cards that no line reaches (only once paths.yaml itself loaded: otherwise every card would
/// be reported).
fn check_reached(book: &Book, diags: &mut Diagnostics) {
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
