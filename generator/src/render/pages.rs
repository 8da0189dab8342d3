//! The pages around the cards: one page per path, the front page, the full map, the card index
//! and SUMMARY.md (mdBook's sidebar).

use super::views::{
    link, link_id, path_link, CardIndexEntry, CardIndexGroup, CardIndexView, IndexView, LinkView, PathView,
    StationView, SummaryPath, SummaryView,
};
use super::{map, reading_order, text, Pages, OPENING_CARD};
use crate::graph::stops;
use crate::model::Book;
use std::collections::HashSet;
use std::path::PathBuf;

/// The pages that show the global map.
pub const MAP_PAGES: [&str; 2] = ["index.md", "map.md"];

/// Every page but the card pages, given the global map's SVG; without it, every page but the
/// card pages and [`MAP_PAGES`].
pub fn render(t: &tera::Tera, book: &Book, map_svg: Option<&str>) -> anyhow::Result<Pages> {
    let mut pages = Pages::new();
    for (i, p) in book.paths.iter().enumerate() {
        pages.insert(
            PathBuf::from(format!("paths/{}.md", p.id)),
            path_page(t, book, i)?,
        );
    }
    if let Some(map_svg) = map_svg {
        let index = index_view(book, map_svg);
        pages.insert(
            PathBuf::from(MAP_PAGES[0]),
            t.render("index.md", &tera::Context::from_serialize(&index)?)?,
        );
        let mut ctx = tera::Context::new();
        ctx.insert("map_svg", map_svg);
        ctx.insert("paths", &index.all_paths);
        pages.insert(PathBuf::from(MAP_PAGES[1]), t.render("map.md", &ctx)?);
    }
    pages.insert(
        PathBuf::from("cards.md"),
        t.render("cards.md", &tera::Context::from_serialize(card_index(book))?)?,
    );
    pages.insert(
        PathBuf::from("SUMMARY.md"),
        t.render("SUMMARY.md", &tera::Context::from_serialize(summary(book))?)?,
    );
    Ok(pages)
}

/// The page of the `i`-th path: its stations, with the other lines through each.
fn path_page(t: &tera::Tera, book: &Book, i: usize) -> anyhow::Result<String> {
    let stations = book.paths[i]
        .stations
        .iter()
        .filter_map(|id| book.card(id))
        .map(|c| StationView {
            id: c.id.clone(),
            title: c.title.clone(),
            summary: text::inline_html(&c.summary),
            transfers: stops(book, &c.id)
                .into_iter()
                .filter(|s| s.path != i)
                .map(|s| path_link(book, s.path))
                .collect(),
        })
        .collect();
    let view = PathView {
        path: path_link(book, i),
        stations,
        strip: map::strip(book, i, None, "../cards/"),
    };
    Ok(t.render("path.md", &tera::Context::from_serialize(&view)?)?)
}

/// The front page: the start paths, the map, every path.
fn index_view<'a>(book: &Book, map_svg: &'a str) -> IndexView<'a> {
    let mut start: Vec<usize> = (0..book.paths.len())
        .filter(|&i| book.paths[i].start.is_some())
        .collect();
    start.sort_by_key(|&i| book.paths[i].start);
    let order = reading_order(book);
    IndexView {
        start_paths: start.iter().map(|&i| path_link(book, i)).collect(),
        all_paths: order.iter().map(|&i| path_link(book, i)).collect(),
        rest_paths: order
            .iter()
            .filter(|&&i| book.paths[i].start.is_none())
            .map(|&i| path_link(book, i))
            .collect(),
        card_count: book.cards.len(),
        map_svg,
        opening: link_id(book, OPENING_CARD),
    }
}

/// The "모든 카드" page: every card by title, in groups by initial.
fn card_index(book: &Book) -> CardIndexView {
    let mut entries: Vec<CardIndexEntry> = book
        .cards
        .iter()
        .map(|c| CardIndexEntry {
            card: link(c),
            lines: stops(book, &c.id)
                .into_iter()
                .map(|s| path_link(book, s.path))
                .collect(),
        })
        .collect();
    entries.sort_by_key(|e| e.card.title.to_lowercase());
    let count = entries.len();
    let mut groups: Vec<CardIndexGroup> = Vec::new();
    for e in entries {
        let initial = text::index_initial(&e.card.title);
        match groups.last_mut() {
            Some(g) if g.initial == initial => g.cards.push(e),
            _ => groups.push(CardIndexGroup {
                anchor: format!("initial-{}", groups.len() + 1),
                heading_attr: format!("{{#initial-{}}}", groups.len() + 1),
                initial,
                cards: vec![e],
            }),
        }
    }
    CardIndexView { count, groups }
}

/// SUMMARY: each card once, under the first path (in reading order) that visits it.
fn summary(book: &Book) -> SummaryView {
    let mut listed = HashSet::new();
    let mut paths = Vec::new();
    for i in reading_order(book) {
        let cards = book.paths[i]
            .stations
            .iter()
            .filter(|id| listed.insert(id.to_string()))
            .filter_map(|id| link_id(book, id))
            .collect();
        paths.push(SummaryPath {
            path: path_link(book, i),
            cards,
        });
    }
    let mut orphans: Vec<LinkView> = book
        .cards
        .iter()
        .filter(|c| !listed.contains(&c.id))
        .map(link)
        .collect();
    orphans.sort_by(|a, b| a.id.cmp(&b.id));
    SummaryView { paths, orphans }
}
