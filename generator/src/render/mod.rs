//! Stage 4, render: cards and paths → Markdown pages (with inline HTML) for mdBook.
//!
//! Pages come from tera templates embedded in the binary ([`templates`]); templates see small
//! `Serialize` view structs ([`views`]), never the domain types, as zola does. Card bodies are
//! rewritten in [`body`]: `card:` links become page links, math becomes MathML, figure blocks
//! become SVG figures. [`card`] makes a card page around its body, [`pages`] every other page.
//!
//! Why the work is spread over threads: bodies (figures, math) and the map layout are most of
//! the time, they are independent of one another, and the output does not depend on the order
//! they finish in (results are put back in card order). Why a [`RenderCache`]: `serve`
//! re-renders after every save, and an edit to one card changes one body; and the map's layout,
//! the largest single piece, is kept on disk between builds while its input stays the same.

pub mod figures;
pub mod map;
pub mod text;

mod body;
mod cache;
mod card;
mod pages;
mod templates;
mod views;

pub use body::{anchors, normalize_id, REFERENCES_HEADING};
pub use cache::RenderCache;

use crate::diag::Diagnostics;
use crate::graph::ConceptGraph;
use crate::measure::results::ResultsFile;
use crate::model::Book;
use body::BodyInput;
use cache::CachedBody;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Measured data the renderer draws from.
pub struct FigureData<'a> {
    pub files: &'a [(PathBuf, ResultsFile)],
    pub local_device: Option<&'a str>,
}

/// The generated mdBook source tree: relative path → file contents.
pub type Pages = BTreeMap<PathBuf, String>;

/// Headings of the sections a card page adds around the card's own text (navigation, not the
/// card): the search index leaves them out (`search_docs`), so they are named once, here.
#[derive(Serialize, Clone, Copy)]
pub struct NavHeadings {
    pub leads_to: &'static str,
    pub map: &'static str,
}

/// See [`NavHeadings`].
pub const NAV_HEADINGS: NavHeadings = NavHeadings {
    leads_to: "다음에 배울 수 있는 것",
    map: "노선에서의 위치",
};

/// Id of the card the front page recommends reading first, if the book has it.
pub const OPENING_CARD: &str = "how-to-learn";

/// Render every page of the book. The book must have passed validation; problems found while
/// rendering (a figure that cannot be drawn) are reported into `diags`.
pub fn render(
    book: &Book,
    graph: &ConceptGraph,
    figs: &FigureData,
    diags: &mut Diagnostics,
) -> anyhow::Result<Pages> {
    render_with(book, graph, figs, None, diags)
}

/// [`render`] with templates read from `templates_dir` where it has them.
pub fn render_with(
    book: &Book,
    graph: &ConceptGraph,
    figs: &FigureData,
    templates_dir: Option<&std::path::Path>,
    diags: &mut Diagnostics,
) -> anyhow::Result<Pages> {
    let mut cache = RenderCache::default();
    render_inner(book, graph, figs, templates_dir, diags, &mut cache, false)
}

/// [`render_with`] that reuses what `cache` holds from the previous render and leaves this
/// render's results there: the pages come out the same as from a render without a cache.
pub fn render_incremental(
    book: &Book,
    graph: &ConceptGraph,
    figs: &FigureData,
    templates_dir: Option<&std::path::Path>,
    diags: &mut Diagnostics,
    cache: &mut RenderCache,
) -> anyhow::Result<Pages> {
    render_inner(book, graph, figs, templates_dir, diags, cache, true)
}

/// One card's result: its body (new, or `None` when the cache's is still good) and its page
/// (`None` when the previous one stands).
struct CardOut {
    body: Option<CachedBody>,
    page: Option<String>,
}

fn render_inner(
    book: &Book,
    graph: &ConceptGraph,
    figs: &FigureData,
    templates_dir: Option<&std::path::Path>,
    diags: &mut Diagnostics,
    cache: &mut RenderCache,
    keep: bool,
) -> anyhow::Result<Pages> {
    let sources = templates::sources(templates_dir)?;
    let front = cache::front_key(book, &sources);
    let t = templates::compile(sources)?;
    let labs = crate::figspec::lab_families(&book.labs);
    let input = BodyInput {
        book,
        figs,
        labs: &labs,
    };
    // Unchanged front matter and templates: only cards with a new body get a new page.
    let all_pages = cache.front != Some(front);
    // Set again only when this render succeeds: a failed one leaves the cache half taken.
    cache.front = None;
    let keys: Vec<u64> = book.cards.iter().map(|c| cache::body_key(c, &labs)).collect();
    let RenderCache {
        bodies,
        maps,
        pages: previous,
        dir,
        defer_map,
        map_pending,
        ..
    } = &mut *cache;
    let dir = dir.as_deref();
    // Deferring needs the pages it leaves as they were; a map deferred once is drawn now.
    let defer = *defer_map && !*map_pending && previous.contains_key(Path::new(pages::MAP_PAGES[1]));
    let (cards, others) = std::thread::scope(|s| {
        let others = all_pages.then(|| s.spawn(|| other_pages(&t, book, graph, maps, dir, defer)));
        let cards = crate::parallel::map(book.cards.len(), |i| {
            card_out(&t, &input, graph, bodies, i, keys[i], all_pages)
        });
        let others = others.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (cards, others)
    });
    let (mut out, deferred) = others_or_previous(others, previous)?;
    let new_bodies = card_pages(book, keys, cards, bodies, &mut out, diags)?;
    if keep {
        cache.bodies = new_bodies;
        // A deferred map: the next render makes every page, the map pages with the map.
        cache.front = (!deferred).then_some(front);
        cache.map_pending = deferred;
        cache.pages = out.clone();
    }
    Ok(out)
}

/// The pages besides the cards': those just made (with the previous map pages where the map
/// was deferred), or, when none were made, the previous render's. Also whether the map waits.
fn others_or_previous(
    others: Option<anyhow::Result<(Pages, bool)>>,
    previous: &mut Pages,
) -> anyhow::Result<(Pages, bool)> {
    let (mut out, deferred) = match others {
        Some(others) => others?,
        None => return Ok((std::mem::take(previous), false)),
    };
    if deferred {
        for p in pages::MAP_PAGES.map(PathBuf::from) {
            out.insert(p.clone(), previous[&p].clone());
        }
    }
    Ok((out, deferred))
}

/// The cards' pages into `out` and their bodies' reports into `diags`, in card order; returns
/// every card's body (new, or taken from `cached`) for the next render.
fn card_pages(
    book: &Book,
    keys: Vec<u64>,
    cards: Vec<anyhow::Result<CardOut>>,
    cached: &mut HashMap<String, CachedBody>,
    out: &mut Pages,
    diags: &mut Diagnostics,
) -> anyhow::Result<HashMap<String, CachedBody>> {
    let mut bodies = HashMap::with_capacity(book.cards.len());
    for ((card, key), result) in book.cards.iter().zip(keys).zip(cards) {
        let CardOut { body, page } = result?;
        let body = match body {
            Some(b) => b,
            None => cached.remove(&card.id).expect("a reused body is cached"),
        };
        debug_assert_eq!(body.key, key);
        diags.extend(body.diags.clone());
        if let Some(page) = page {
            out.insert(PathBuf::from(format!("cards/{}.md", card.id)), page);
        }
        bodies.insert(card.id.clone(), body);
    }
    Ok(bodies)
}

/// The body and page of the `i`-th card, reusing the cached body when its key matches.
fn card_out(
    t: &tera::Tera,
    input: &BodyInput,
    graph: &ConceptGraph,
    bodies: &HashMap<String, CachedBody>,
    i: usize,
    key: u64,
    all_pages: bool,
) -> anyhow::Result<CardOut> {
    let card = &input.book.cards[i];
    if let Some(cached) = bodies.get(&card.id).filter(|b| b.key == key) {
        let page = match all_pages {
            true => Some(card::page(t, input.book, graph, card, &cached.body)?),
            false => None,
        };
        return Ok(CardOut { body: None, page });
    }
    let mut diags = Diagnostics::new();
    let body = body::render_body(input, card, &mut diags);
    let page = card::page(t, input.book, graph, card, &body)?;
    Ok(CardOut {
        body: Some(CachedBody { key, body, diags }),
        page: Some(page),
    })
}

/// Every page but the card pages; the global map is laid out again only if its input changed.
/// With `defer`, a map not drawn before is not drawn now: the pages are made without
/// [`pages::MAP_PAGES`], and the flag returned says so.
fn other_pages(
    t: &tera::Tera,
    book: &Book,
    graph: &ConceptGraph,
    maps: &mut Vec<(String, String)>,
    dir: Option<&std::path::Path>,
    defer: bool,
) -> anyhow::Result<(Pages, bool)> {
    let key = cache::map_key(book, MAP_PREFIX);
    let svg = match cache::find_map(maps, dir, &key) {
        Some(svg) => svg,
        None if defer => return Ok((pages::render(t, book, None)?, true)),
        None => {
            let svg = map::global(book, &map::layout(book, graph), MAP_PREFIX);
            cache::drawn_map(maps, dir, &key, &svg);
            svg
        }
    };
    Ok((pages::render(t, book, Some(&svg))?, false))
}

/// Where the global map's stations link to, from the pages that show it (the book's top level).
const MAP_PREFIX: &str = "cards/";

/// Paths in reading order: the start paths first (by `start`), then the rest as listed.
pub fn reading_order(book: &Book) -> Vec<usize> {
    let mut v: Vec<usize> = (0..book.paths.len()).collect();
    v.sort_by_key(|&i| (book.paths[i].start.unwrap_or(u32::MAX), i));
    v
}
