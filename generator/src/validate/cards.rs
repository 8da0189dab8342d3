//! The cards one by one: id form and uniqueness, file name, title and summary, `requires`
//! entries, and a body to read.

use super::{is_kebab, key_token_pos, suggest};
use crate::diag::{line_col, Diagnostics};
use crate::model::{Book, Card};
use std::collections::{HashMap, HashSet};

/// Every card on its own, and ids unique across cards.
pub(super) fn check_cards(book: &Book, diags: &mut Diagnostics) {
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
        check_requires(book, card, diags);
        if card.body().trim().is_empty() {
            let (line, _) = line_col(&card.source, card.body_offset);
            diags
                .error(&card.file, line, 1, "card has no body")
                .hint("write the card's text below the front matter");
        }
    }
}

/// Each `requires` entry: listed once, not the card itself, and a card that exists (or one
/// already reported as broken).
fn check_requires(book: &Book, card: &Card, diags: &mut Diagnostics) {
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
}
