//! The small `Serialize` structs the page templates see, and the few functions that make the
//! ones every page shares (a card's link, a path's link).
//!
//! Why apart from the domain types: templates depend on these alone, so a change in `model`
//! never reaches a template unnoticed, and each page's view says exactly what the page shows.

use super::text;
use crate::model::{Book, Card};
use serde::Serialize;

/// A link to a card with what a link box shows of it.
#[derive(Serialize, Clone)]
pub struct LinkView {
    pub id: String,
    pub title: String,
    /// The title without a trailing "(English name)", and that part: phones show only `short`.
    pub short: String,
    pub tail: String,
    pub summary: String,
}

/// One line (learning path) through a card: the card's place on it and its neighbours.
#[derive(Serialize)]
pub struct LineView {
    pub id: String,
    pub title: String,
    pub color: String,
    pub pos: usize,
    pub total: usize,
    pub prev: Option<LinkView>,
    pub next: Option<LinkView>,
}

/// A card page.
#[derive(Serialize)]
pub struct CardView<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub summary: String,
    pub lines: Vec<LineView>,
    pub interchange: bool,
    pub prerequisites: Vec<LinkView>,
    pub leads_to: Vec<LinkView>,
    pub body: &'a BodyView,
    pub mini_map: String,
    pub nav: super::NavHeadings,
}

/// A card body split so that references can go last, after "leads to".
#[derive(Serialize, Clone, PartialEq, Debug)]
pub struct BodyView {
    pub main: String,
    pub references: String,
}

/// A station on a path page.
#[derive(Serialize)]
pub struct StationView {
    pub id: String,
    pub title: String,
    pub summary: String,
    /// Other lines through this station (for 환승 marks).
    pub transfers: Vec<PathLinkView>,
}

/// A link to a path with what lists of paths show of it.
#[derive(Serialize, Clone)]
pub struct PathLinkView {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub color: String,
    pub planned: bool,
    pub start: Option<u32>,
    pub stations: usize,
}

/// A path page.
#[derive(Serialize)]
pub struct PathView {
    pub path: PathLinkView,
    pub stations: Vec<StationView>,
    pub strip: String,
}

/// The front page.
#[derive(Serialize)]
pub struct IndexView<'a> {
    pub start_paths: Vec<PathLinkView>,
    /// Every path in the sidebar's order ([`super::reading_order`]).
    pub all_paths: Vec<PathLinkView>,
    /// The paths after the start paths, in the sidebar's order.
    pub rest_paths: Vec<PathLinkView>,
    pub card_count: usize,
    pub map_svg: &'a str,
    pub opening: Option<LinkView>,
}

/// A path in the sidebar with the cards listed under it.
#[derive(Serialize)]
pub struct SummaryPath {
    pub path: PathLinkView,
    pub cards: Vec<LinkView>,
}

/// SUMMARY.md: the sidebar.
#[derive(Serialize)]
pub struct SummaryView {
    pub paths: Vec<SummaryPath>,
    pub orphans: Vec<LinkView>,
}

/// The "모든 카드" page.
#[derive(Serialize)]
pub struct CardIndexView {
    pub count: usize,
    /// Cards by the initial of their title (A–Z, then ㄱ–ㅎ): short tables a reader can scan.
    pub groups: Vec<CardIndexGroup>,
}

/// Cards whose titles start with one initial.
#[derive(Serialize)]
pub struct CardIndexGroup {
    pub initial: String,
    pub anchor: String,
    /// `{#anchor}`: the heading's id (written here, as tera reads `{#` as a comment).
    pub heading_attr: String,
    pub cards: Vec<CardIndexEntry>,
}

/// A card in the card index, with the lines through it.
#[derive(Serialize)]
pub struct CardIndexEntry {
    pub card: LinkView,
    pub lines: Vec<PathLinkView>,
}

/// A card's link view.
pub fn link(card: &Card) -> LinkView {
    let (short, tail) = text::split_title(&card.title);
    LinkView {
        id: card.id.clone(),
        title: card.title.clone(),
        short: short.to_string(),
        tail: tail.to_string(),
        summary: text::inline_html(&card.summary),
    }
}

/// The link view of the card `id`, if the book has it.
pub fn link_id(book: &Book, id: &str) -> Option<LinkView> {
    book.card(id).map(link)
}

/// The link view of the `i`-th path.
pub fn path_link(book: &Book, i: usize) -> PathLinkView {
    let p = &book.paths[i];
    PathLinkView {
        id: p.id.clone(),
        title: p.title.clone(),
        summary: text::inline_html(&p.summary),
        color: p.color.clone(),
        planned: p.planned,
        start: p.start,
        stations: p.stations.len(),
    }
}
