//! What one render keeps for the next, so that `serve` re-renders only what an edit changed.
//!
//! Why these keys: a card's body depends on its own file alone (given the records, the kernel
//! and lab sources, and the lab list, which the cache's owner swaps the cache for when they
//! change); every other part of every page — line boxes, link boxes, path pages, the index, the
//! maps, the sidebar — depends only on the cards' and paths' front matter and the templates. So
//! a body edit re-renders one body and one page; a front-matter edit re-renders the pages from
//! cached bodies; the map is laid out again only when the map's own input changed.

use super::views::BodyView;
use super::Pages;
use crate::diag::Diagnostics;
use crate::model::{Book, Card};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Cached render results; `Default` is empty (a full render).
///
/// Valid while the measured records, the kernel and lab sources and `book/` are what they were
/// when it was filled: its owner makes a new one when any of those change.
#[derive(Default)]
pub struct RenderCache {
    pub(super) bodies: HashMap<String, CachedBody>,
    /// Key of the front matter and templates the cached pages were rendered from.
    pub(super) front: Option<u64>,
    /// The global map's SVG and the key of the layout input it was drawn from.
    pub(super) map: Option<(u64, String)>,
    /// The pages of the last render.
    pub(super) pages: Pages,
}

/// A rendered body and what rendering it reported.
pub(super) struct CachedBody {
    pub key: u64,
    pub body: BodyView,
    pub diags: Diagnostics,
}

/// Key of what a card's body is rendered from: its file, its text, the lab families.
pub(super) fn body_key(card: &Card, labs: &[String]) -> u64 {
    let mut h = DefaultHasher::new();
    (&card.file, card.body_offset, &card.source, labs).hash(&mut h);
    h.finish()
}

/// Key of everything but the bodies that pages show: every card's and path's front matter, in
/// order, and the templates.
pub(super) fn front_key(book: &Book, templates: &[(String, String)]) -> u64 {
    let mut h = DefaultHasher::new();
    templates.hash(&mut h);
    book.cards.len().hash(&mut h);
    for c in &book.cards {
        (&c.id, &c.title, &c.summary, &c.requires, &c.tags, &c.file).hash(&mut h);
    }
    book.paths.len().hash(&mut h);
    for p in &book.paths {
        (
            &p.id,
            &p.title,
            &p.summary,
            &p.color,
            p.start,
            p.planned,
            &p.stations,
        )
            .hash(&mut h);
    }
    h.finish()
}

/// Key of the map layout's input.
pub(super) fn map_key(book: &Book) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{:?}", super::map::Input::from_book(book)).hash(&mut h);
    h.finish()
}
