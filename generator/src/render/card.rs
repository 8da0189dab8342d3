//! A card page: the line boxes (the reader never loses the line they ride), the summary, the
//! prerequisites, the card's own text, what it leads to, and its small map.

use super::views::{link_id, BodyView, CardView, LineView};
use super::{map, text, NAV_HEADINGS};
use crate::graph::{stops, ConceptGraph};
use crate::model::{Book, Card};

/// The card page of `card` with its rendered `body`.
pub fn page(
    t: &tera::Tera,
    book: &Book,
    graph: &ConceptGraph,
    card: &Card,
    body: &BodyView,
) -> anyhow::Result<String> {
    let lines = line_views(book, card);
    let view = CardView {
        id: &card.id,
        title: &card.title,
        summary: text::inline_html(&card.summary),
        interchange: lines.len() > 1,
        prerequisites: graph
            .prerequisites(&card.id)
            .iter()
            .filter_map(|id| link_id(book, id))
            .collect(),
        leads_to: graph
            .leads_to(&card.id)
            .iter()
            .filter_map(|id| link_id(book, id))
            .collect(),
        lines,
        body,
        mini_map: map::card_map(book, &card.id),
        nav: NAV_HEADINGS,
    };
    Ok(t.render("card.md", &tera::Context::from_serialize(&view)?)?)
}

/// Every line through the card, with the card's position and its neighbours on it.
fn line_views(book: &Book, card: &Card) -> Vec<LineView> {
    stops(book, &card.id)
        .into_iter()
        .map(|s| {
            let p = &book.paths[s.path];
            LineView {
                id: p.id.clone(),
                title: p.title.clone(),
                color: p.color.clone(),
                pos: s.pos + 1,
                total: p.stations.len(),
                prev: s.prev.as_deref().and_then(|id| link_id(book, id)),
                next: s.next.as_deref().and_then(|id| link_id(book, id)),
            }
        })
        .collect()
}
