//! Stage 4, render: cards and paths → Markdown pages (with inline HTML) for mdBook.
//!
//! Pages come from tera templates embedded in the binary; templates see small `Serialize` view
//! structs (below), never the domain types, as zola does. Card bodies are rewritten here:
//! `card:` links become page links, math becomes MathML, figure blocks become SVG figures.

pub mod figures;
pub mod map;
pub mod text;

use crate::diag::{line_col, Diagnostics};
use crate::graph::{stops, ConceptGraph};
use crate::markup::{self, Piece};
use crate::measure::results::ResultsFile;
use crate::model::{Book, Card};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

/// Measured data the renderer draws from.
pub struct FigureData<'a> {
    pub files: &'a [(PathBuf, ResultsFile)],
    pub local_device: Option<&'a str>,
}

/// The generated mdBook source tree: relative path → file contents.
pub type Pages = BTreeMap<PathBuf, String>;

#[derive(Serialize, Clone)]
struct LinkView {
    id: String,
    title: String,
    /// The title without a trailing "(English name)", and that part: phones show only `short`.
    short: String,
    tail: String,
    summary: String,
}

#[derive(Serialize)]
struct LineView {
    id: String,
    title: String,
    color: String,
    pos: usize,
    total: usize,
    prev: Option<LinkView>,
    next: Option<LinkView>,
}

#[derive(Serialize)]
struct CardView {
    id: String,
    title: String,
    summary: String,
    lines: Vec<LineView>,
    interchange: bool,
    prerequisites: Vec<LinkView>,
    leads_to: Vec<LinkView>,
    body: BodyView,
    mini_map: String,
    nav: NavHeadings,
}

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

/// A card body split so that references can go last, after "leads to".
#[derive(Serialize)]
struct BodyView {
    main: String,
    references: String,
}

#[derive(Serialize)]
struct StationView {
    id: String,
    title: String,
    summary: String,
    /// Other lines through this station (for 환승 marks).
    transfers: Vec<PathLinkView>,
}

#[derive(Serialize, Clone)]
struct PathLinkView {
    id: String,
    title: String,
    summary: String,
    color: String,
    planned: bool,
    start: Option<u32>,
    stations: usize,
}

#[derive(Serialize)]
struct PathView {
    path: PathLinkView,
    stations: Vec<StationView>,
    strip: String,
}

#[derive(Serialize)]
struct IndexView {
    start_paths: Vec<PathLinkView>,
    /// Every path in the sidebar's order ([`reading_order`]).
    all_paths: Vec<PathLinkView>,
    /// The paths after the start paths, in the sidebar's order.
    rest_paths: Vec<PathLinkView>,
    card_count: usize,
    map_svg: String,
    opening: Option<LinkView>,
}

#[derive(Serialize)]
struct SummaryPath {
    path: PathLinkView,
    cards: Vec<LinkView>,
}

#[derive(Serialize)]
struct SummaryView {
    paths: Vec<SummaryPath>,
    orphans: Vec<LinkView>,
}

#[derive(Serialize)]
struct CardIndexView {
    count: usize,
    /// Cards by the initial of their title (A–Z, then ㄱ–ㅎ): short tables a reader can scan.
    groups: Vec<CardIndexGroup>,
}

#[derive(Serialize)]
struct CardIndexGroup {
    initial: String,
    anchor: String,
    /// `{#anchor}`: the heading's id (written here, as tera reads `{#` as a comment).
    heading_attr: String,
    cards: Vec<CardIndexEntry>,
}

#[derive(Serialize)]
struct CardIndexEntry {
    card: LinkView,
    lines: Vec<PathLinkView>,
}

/// Id of the card the front page recommends reading first, if the book has it.
pub const OPENING_CARD: &str = "how-to-learn";

const TEMPLATES: &[(&str, &str)] = &[
    ("card.md", include_str!("templates/card.md")),
    ("path.md", include_str!("templates/path.md")),
    ("index.md", include_str!("templates/index.md")),
    ("map.md", include_str!("templates/map.md")),
    ("cards.md", include_str!("templates/cards.md")),
    ("SUMMARY.md", include_str!("templates/SUMMARY.md")),
];

/// The page templates: embedded in the binary, or read from `dir` (used by `serve`, so that
/// editing a template reloads the page without recompiling).
fn templates(dir: Option<&std::path::Path>) -> anyhow::Result<tera::Tera> {
    let mut t = tera::Tera::default();
    let mut sources: Vec<(String, String)> = Vec::new();
    for (name, embedded) in TEMPLATES {
        let text = match dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
            Some(p) => std::fs::read_to_string(&p)?,
            None => embedded.to_string(),
        };
        sources.push((name.to_string(), text));
    }
    t.add_raw_templates(sources)
        .map_err(|e| anyhow::anyhow!("page templates: {e:?}"))?;
    t.autoescape_on(vec![]);
    Ok(t)
}

fn link(card: &Card) -> LinkView {
    let (short, tail) = text::split_title(&card.title);
    LinkView {
        id: card.id.clone(),
        title: card.title.clone(),
        short: short.to_string(),
        tail: tail.to_string(),
        summary: text::inline_html(&card.summary),
    }
}

fn link_id(book: &Book, id: &str) -> Option<LinkView> {
    book.card(id).map(link)
}

fn path_link(book: &Book, i: usize) -> PathLinkView {
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
    let t = templates(templates_dir)?;
    let mut pages = Pages::new();
    let layout = map::layout(book, graph);

    // Cards.
    for card in &book.cards {
        let lines: Vec<LineView> = stops(book, &card.id)
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
            .collect();
        let view = CardView {
            id: card.id.clone(),
            title: card.title.clone(),
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
            body: render_body(book, card, figs, diags),
            mini_map: map::card_map(book, &card.id),
            nav: NAV_HEADINGS,
        };
        let ctx = tera::Context::from_serialize(&view)?;
        pages.insert(
            PathBuf::from(format!("cards/{}.md", card.id)),
            t.render("card.md", &ctx)?,
        );
    }

    // Paths.
    for (i, p) in book.paths.iter().enumerate() {
        let stations = p
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
        let ctx = tera::Context::from_serialize(&view)?;
        pages.insert(
            PathBuf::from(format!("paths/{}.md", p.id)),
            t.render("path.md", &ctx)?,
        );
    }

    // Front page, map, card index.
    let mut start: Vec<usize> = (0..book.paths.len())
        .filter(|&i| book.paths[i].start.is_some())
        .collect();
    start.sort_by_key(|&i| book.paths[i].start);
    let map_svg = map::global(book, &layout, "cards/");
    let order = reading_order(book);
    let index = IndexView {
        start_paths: start.iter().map(|&i| path_link(book, i)).collect(),
        all_paths: order.iter().map(|&i| path_link(book, i)).collect(),
        rest_paths: order
            .iter()
            .filter(|&&i| book.paths[i].start.is_none())
            .map(|&i| path_link(book, i))
            .collect(),
        card_count: book.cards.len(),
        map_svg: map_svg.clone(),
        opening: link_id(book, OPENING_CARD),
    };
    pages.insert(
        PathBuf::from("index.md"),
        t.render("index.md", &tera::Context::from_serialize(&index)?)?,
    );
    let mut ctx = tera::Context::new();
    ctx.insert("map_svg", &map_svg);
    ctx.insert("paths", &index.all_paths);
    pages.insert(PathBuf::from("map.md"), t.render("map.md", &ctx)?);

    pages.insert(
        PathBuf::from("cards.md"),
        t.render("cards.md", &tera::Context::from_serialize(card_index(book))?)?,
    );

    // SUMMARY: each card once, under the first path (in reading order) that visits it.
    let mut listed = HashSet::new();
    let mut spaths = Vec::new();
    for i in reading_order(book) {
        let cards = book.paths[i]
            .stations
            .iter()
            .filter(|id| listed.insert(id.to_string()))
            .filter_map(|id| link_id(book, id))
            .collect();
        spaths.push(SummaryPath {
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
    let summary = SummaryView {
        paths: spaths,
        orphans,
    };
    pages.insert(
        PathBuf::from("SUMMARY.md"),
        t.render("SUMMARY.md", &tera::Context::from_serialize(&summary)?)?,
    );
    Ok(pages)
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

/// Paths in reading order: the start paths first (by `start`), then the rest as listed.
pub fn reading_order(book: &Book) -> Vec<usize> {
    let mut v: Vec<usize> = (0..book.paths.len()).collect();
    v.sort_by_key(|&i| (book.paths[i].start.unwrap_or(u32::MAX), i));
    v
}

/// Rewrite a card body for mdBook: links, math and figures.
/// Lines of code of each variant a lab figure's `loc:` names, counted from the sources now.
fn lab_loc(book: &Book, spec: &crate::figspec::FigureSpec) -> Result<BTreeMap<String, usize>, String> {
    let mut out = BTreeMap::new();
    for (variant, source) in spec.loc.iter().flatten() {
        let inc = crate::include::parse_source_ref(source)?;
        let x =
            crate::include::extract(&book.root, &inc).map_err(|e| format!("`loc:` of `{variant}`: {e}"))?;
        out.insert(variant.clone(), x.code_lines());
    }
    Ok(out)
}

fn render_body(book: &Book, card: &Card, figs: &FigureData, diags: &mut Diagnostics) -> BodyView {
    let labs = crate::figspec::lab_families(&book.labs);
    let mut src = card.source.clone();
    let mut pieces = markup::scan(card.body(), card.body_offset);
    let prose = prose_replacements(&pieces, figs);
    pieces.sort_by_key(|p| std::cmp::Reverse(p.range().start));
    for piece in pieces {
        let range = piece.range().clone();
        let replacement = match piece {
            Piece::CardLink { id, anchor, .. } => match anchor {
                Some(a) => format!("{id}.md#{a}"),
                None => format!("{id}.md"),
            },
            Piece::Math { latex, display, .. } => match markup::latex_to_mathml(&latex, display) {
                Ok(m) if display => format!("<span class=\"math-display\">{m}</span>"),
                Ok(m) => m,
                Err(_) => src[range.clone()].to_string(),
            },
            Piece::StrayDollar { .. } | Piece::Link { .. } => continue,
            Piece::Prose { .. } => prose
                .iter()
                .find(|(r, _)| *r == range)
                .map(|(_, html)| html.clone())
                .unwrap_or_default(),
            Piece::Include { body, .. } => {
                let excerpt = crate::include::parse(&body)
                    .map_err(|(_, m, _)| m)
                    .and_then(|spec| crate::include::extract(&book.root, &spec).map(|x| (spec, x)));
                match excerpt {
                    Ok((spec, x)) => text::include_block(
                        x.lang,
                        &x.code,
                        &spec.file,
                        spec.kernel.as_deref().or(spec.name.as_deref()),
                        (x.first_line, x.last_line),
                    ),
                    Err(e) => {
                        let (line, col) = line_col(&card.source, range.start);
                        diags.error(&card.file, line, col, format!("include cannot be resolved: {e}"));
                        String::new()
                    }
                }
            }
            Piece::Figure { body, .. } => {
                let html = crate::figspec::parse_figure(&body, &figures::known(&labs))
                    .map_err(|(_, m, _)| m)
                    .and_then(|fig| match fig {
                        crate::figspec::Figure::Bench(spec)
                            if labs.contains(&spec.bench) || spec.record_view() =>
                        {
                            lab_loc(book, &spec).and_then(|loc| {
                                figures::render_lab_figure(&spec, figs.files, figs.local_device, &loc)
                            })
                        }
                        crate::figspec::Figure::Bench(spec) => {
                            figures::render_figure(&spec, figs.files, figs.local_device)
                        }
                        crate::figspec::Figure::Calc(spec) => crate::calc::render(&spec, figs.files),
                    });
                match html {
                    Ok(h) => format!("\n\n{}\n\n", text::wrap_tables(h.trim())),
                    Err(e) => {
                        let (line, col) = line_col(&card.source, range.start);
                        diags.error(&card.file, line, col, format!("figure cannot be drawn: {e}"));
                        String::new()
                    }
                }
            }
        };
        src.replace_range(range, &replacement);
    }
    let body = src[card.body_offset..].trim();
    match body.find(REFERENCES_HEADING) {
        Some(i) if i == 0 || body[..i].ends_with('\n') => BodyView {
            main: body[..i].trim_end().to_string(),
            references: body[i..].trim().to_string(),
        },
        _ => BodyView {
            main: body.to_string(),
            references: String::new(),
        },
    }
}

/// What each `{{…}}` value and claim of a card becomes, from the records of the machines in the
/// figures' order (the reader's GPU first).
fn prose_replacements(pieces: &[Piece], figs: &FigureData) -> Vec<(std::ops::Range<usize>, String)> {
    let found = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Prose { body, range } => Some((body.clone(), range.clone())),
            _ => None,
        })
        .collect();
    let files = crate::records::display_order(figs.files, figs.local_device);
    crate::prose::replacements(&crate::prose::parse_all(found), &files)
}

/// The heading under which a card lists its references; moved to the end of the page.
pub const REFERENCES_HEADING: &str = "## 참고 자료";

/// Heading anchors of a card page as mdBook generates them (lowercase, spaces → '-').
pub fn anchors(card: &Card) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out: Vec<String> = Vec::new();
    let mut cur: Option<String> = None;
    for ev in Parser::new_ext(card.body(), markup::options()) {
        match ev {
            Event::Start(Tag::Heading { .. }) => cur = Some(String::new()),
            Event::Text(t) | Event::Code(t) if cur.is_some() => {
                cur.as_mut().expect("in heading").push_str(&t)
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(text) = cur.take() {
                    let base = normalize_id(&text);
                    let mut id = base.clone();
                    let mut n = 1;
                    while out.contains(&id) {
                        id = format!("{base}-{n}");
                        n += 1;
                    }
                    out.push(id);
                }
            }
            _ => {}
        }
    }
    out
}

/// mdBook's heading-id rule.
pub fn normalize_id(text: &str) -> String {
    text.trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}
