//! The concept graph as a whole: no card may require itself through others.

use super::key_token_pos;
use crate::diag::Diagnostics;
use crate::graph::ConceptGraph;
use crate::model::Book;

/// Every prerequisite cycle, reported at the `requires` entry that closes it.
pub(super) fn check_graph(book: &Book, diags: &mut Diagnostics) {
    let g = ConceptGraph::build(book);
    for cycle in g.cycles() {
        let Some(card) = book.card(&cycle[0]) else {
            continue;
        };
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
    }
}
