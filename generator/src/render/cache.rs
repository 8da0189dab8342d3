//! What one render keeps for the next, so that `serve` re-renders only what an edit changed.
//!
//! Why these keys: a card's body depends on its own file alone (given the records, the kernel
//! and lab sources, and the lab list, which the cache's owner swaps the cache for when they
//! change); every other part of every page — line boxes, link boxes, path pages, the index, the
//! maps, the sidebar — depends only on the cards' and paths' front matter and the templates. So
//! a body edit re-renders one body and one page; a front-matter edit re-renders the pages from
//! cached bodies; the map is laid out again only when the map's own input changed.
//!
//! Why the map also on disk: laying it out is the largest single piece of a render (about a
//! quarter of a second for this book) and its input — the paths and the cards' titles and
//! folders — rarely changes between two builds. The drawn map is kept in one file under the
//! cache folder (`target/hdlc-cache/`), keyed by a SHA-256 of its input and of the program that
//! drew it (its size and modification time: a rebuilt generator may draw differently), so a
//! cached map is the map this program would draw.

use super::views::BodyView;
use super::Pages;
use crate::diag::Diagnostics;
use crate::model::{Book, Card};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

/// Cached render results; `Default` is empty (a full render).
///
/// Valid while the measured records, the kernel and lab sources and `book/` are what they were
/// when it was filled: its owner makes a new one when any of those change.
#[derive(Default)]
pub struct RenderCache {
    pub(super) bodies: HashMap<String, CachedBody>,
    /// Key of the front matter and templates the cached pages were rendered from.
    pub(super) front: Option<u64>,
    /// The global maps drawn last (key of the layout input, SVG), newest first: undoing an edit
    /// of a title finds the map from before it.
    pub(super) maps: Vec<(String, String)>,
    /// Folder of the map kept on disk between runs; `None`: memory only.
    pub(super) dir: Option<PathBuf>,
    /// See [`RenderCache::defer_map`].
    pub(super) defer_map: bool,
    /// The last render left the pages that show the map as they were before it.
    pub(super) map_pending: bool,
    /// The pages of the last render.
    pub(super) pages: Pages,
}

impl RenderCache {
    /// An empty cache that keeps the drawn map in `dir` (created when first written) between
    /// runs, beside what it keeps in memory.
    pub fn on_disk(dir: &Path) -> RenderCache {
        RenderCache {
            dir: Some(dir.to_path_buf()),
            ..RenderCache::default()
        }
    }
}

impl RenderCache {
    /// `serve`: when the map has to be laid out anew (a title changed), a render leaves the
    /// pages that show it ([`super::pages::MAP_PAGES`]) as the previous render made them and
    /// says so ([`map_pending`](Self::map_pending)); the next render draws the map. So an edit
    /// reaches the edited card's page without waiting for the layout.
    pub fn defer_map(mut self) -> RenderCache {
        self.defer_map = true;
        self
    }

    /// The last render left the map pages behind: render again to bring them up to date.
    pub fn map_pending(&self) -> bool {
        self.map_pending
    }
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

/// Key of the drawn global map: its layout input, the link prefix and this program.
pub(super) fn map_key(book: &Book, prefix: &str) -> String {
    let mut h = Sha256::new();
    h.update(format!("{:?}\n{prefix}\n", super::map::Input::from_book(book)));
    h.update(program_identity());
    hex::encode(h.finalize())
}

/// This executable's size and modification time: changes whenever the generator is rebuilt.
/// Empty when it cannot be read (then the key still names the input).
fn program_identity() -> String {
    let meta = std::env::current_exe().and_then(std::fs::metadata);
    match meta.and_then(|m| Ok((m.len(), m.modified()?))) {
        Ok((len, time)) => format!("{len} {time:?}"),
        Err(_) => String::new(),
    }
}

/// Most maps kept in memory.
const MAPS_KEPT: usize = 4;

/// The map drawn under `key`, from memory or from `dir`; kept in memory as the newest.
pub(super) fn find_map(maps: &mut Vec<(String, String)>, dir: Option<&Path>, key: &str) -> Option<String> {
    let svg = match maps.iter().position(|(k, _)| k == key) {
        Some(i) => maps.remove(i).1,
        None => load_map(dir?, key)?,
    };
    keep_map(maps, key, &svg);
    Some(svg)
}

/// A map just drawn under `key`: kept in memory as the newest, and in `dir`.
pub(super) fn drawn_map(maps: &mut Vec<(String, String)>, dir: Option<&Path>, key: &str, svg: &str) {
    if let Some(d) = dir {
        store_map(d, key, svg);
    }
    keep_map(maps, key, svg);
}

fn keep_map(maps: &mut Vec<(String, String)>, key: &str, svg: &str) {
    maps.insert(0, (key.to_string(), svg.to_string()));
    maps.truncate(MAPS_KEPT);
}

/// Name of the map's file in the cache folder. One file, overwritten: the cache holds the last
/// map drawn, not every map ever drawn.
const MAP_FILE: &str = "map.html";

/// The map kept in `dir` if it was drawn under `key`.
fn load_map(dir: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(MAP_FILE)).ok()?;
    let (k, svg) = text.split_once('\n')?;
    (k == key).then(|| svg.to_string())
}

/// Keep the map drawn under `key` in `dir`. A map that cannot be kept is drawn again next time,
/// so failures are ignored; the file is renamed into place, so a reader never sees half of it.
fn store_map(dir: &Path, key: &str, svg: &str) {
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, format!("{key}\n{svg}").as_bytes())?;
        tmp.persist(dir.join(MAP_FILE))?;
        Ok(())
    };
    let _ = write();
}
