//! Stage 2, validate: check the loaded book as a whole and report every problem at once.
//!
//! Each check pushes diagnostics with the file, line and a hint; nothing here stops early, so an
//! author sees the full list from one `check` run.

mod body;
mod cards;
mod graph;
mod paths;

use crate::diag::{line_col, Diagnostics};
use crate::load::token_col;
use crate::model::{Book, Card};

/// Run every check over the book.
pub fn validate(book: &Book, diags: &mut Diagnostics) {
    cards::check_cards(book, diags);
    paths::check_paths(book, diags);
    graph::check_graph(book, diags);
    // Each card's body is checked on its own (most of the time here), on every core; the
    // reports are put back in card order, so the list reads the same as from one thread.
    let bodies = crate::parallel::map(book.cards.len(), |i| {
        let mut d = Diagnostics::new();
        body::check_body(book, &book.cards[i], &mut d);
        d
    });
    for d in bodies {
        diags.extend(d);
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
