//! A served book kept up to date page by page (`serve`).
//!
//! Why: a full build runs mdBook over every page (about a second for this book), while an edit
//! to one card changes one page — or, when its title or summary changed, the pages that show
//! them (path pages, neighbours' line boxes and small maps, the index, the card index).
//!
//! How: the pages the served book was built from are kept in a scratch mdBook source tree, next
//! to the book's configuration, theme and assets. For an edit, mdBook builds a small book: the
//! changed pages and the pages next to them, with only the changed pages' text. A page's HTML
//! depends on its own Markdown, its name and its neighbours' paths (the previous/next arrows);
//! the sidebar is not in the page but in `toc.js` and `toc.html`. When the sidebar changed (a
//! title: SUMMARY.md), the small book holds every chapter, still with only the changed pages'
//! text: the sidebar is made from the chapters' names and places alone, so it comes out as a
//! full build writes it, for about a tenth of a second more. The changed pages' HTML (and the
//! sidebar) is moved into the served book. What depends on every page's text — the print page
//! and the search index — comes from a full build run afterwards in the background
//! ([`Refresher`]), whose other files are the same bytes.

use super::{config, stage, write_book, write_pages};
use crate::render::Pages;
use anyhow::Context;
use mdbook_driver::book::{Book, BookItem};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Files of the built book that depend on every page: brought up to date by the background
/// refresh (the sidebar also by a patch that changes it).
pub const LAZY_FILES: [&str; 4] = ["print.html", "searchindex.js", "toc.js", "toc.html"];

/// Of [`LAZY_FILES`], those every page shows (the sidebar): when they change, pages reload.
pub const SIDEBAR: [&str; 2] = ["toc.js", "toc.html"];

/// The served book and the scratch tree its pages are patched from.
pub struct LiveBook {
    root: PathBuf,
    out: PathBuf,
    scratch: tempfile::TempDir,
    /// The pages the served book shows.
    served: Pages,
    /// The pages in the scratch source tree.
    mirror: Pages,
    /// Generation of the served book, bumped by every change to it; held while writing it.
    generation: Arc<Mutex<u64>>,
    /// Most pages a patch may change; beyond, a full build is cheaper (its small book would hold
    /// nearly every page anyway, and the background refresh builds them all once more).
    /// Default: a quarter of the pages, at least 8.
    pub max_patch: Option<usize>,
}

/// Pages built and ready to be moved into the served book.
#[derive(Default)]
pub struct Patch {
    /// (path in the book, built file).
    files: Vec<(PathBuf, PathBuf)>,
    pages: Pages,
    /// The changed pages (Markdown paths).
    pub changed: Vec<PathBuf>,
}

impl LiveBook {
    /// A live book for `root`, served from `out`; nothing is built yet.
    pub fn new(root: &Path, out: &Path) -> anyhow::Result<LiveBook> {
        let base = root.join("target/hdlc-serve");
        std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
        let scratch = tempfile::Builder::new()
            .prefix("live-")
            .tempdir_in(&base)
            .context("creating the serve scratch directory")?;
        let mut live = LiveBook {
            root: root.to_path_buf(),
            out: out.to_path_buf(),
            scratch,
            served: Pages::new(),
            mirror: Pages::new(),
            generation: Arc::new(Mutex::new(0)),
            max_patch: None,
        };
        live.restage()?;
        Ok(live)
    }

    /// A full build of `pages` into the served book. On problems (broken links) the served
    /// book is left as it was and the problems are returned.
    pub fn rebuild(&mut self, pages: &Pages) -> anyhow::Result<Vec<crate::verify::Problem>> {
        let mut generation = self.generation.lock().expect("not poisoned");
        let problems = write_book(&self.root, pages, &self.out, true)?;
        if problems.is_empty() {
            *generation += 1;
            self.served = pages.clone();
        }
        drop(generation);
        self.sync_mirror(pages)?;
        Ok(problems)
    }

    /// Stage the book's configuration, theme and assets again (they changed), and forget the
    /// served pages, so that the next update is a full build.
    pub fn restage(&mut self) -> anyhow::Result<()> {
        let work = self.scratch.path();
        for d in ["theme", "assets"] {
            let _ = std::fs::remove_dir_all(work.join(d));
        }
        stage(&self.root.join("book"), work, true)?;
        // Only pages go in the scratch source tree: mdBook copies everything else in it to
        // every small build's output.
        let _ = std::fs::remove_dir_all(work.join("src/assets"));
        self.served.clear();
        Ok(())
    }

    /// Write the pages that differ from the scratch source tree's into it.
    fn sync_mirror(&mut self, pages: &Pages) -> anyhow::Result<()> {
        let src = self.scratch.path().join("src");
        write_pages(&src, pages.iter().filter(|(k, v)| self.mirror.get(*k) != Some(v)))?;
        self.mirror = pages.clone();
        Ok(())
    }

    /// Build the pages of `pages` that differ from the served ones, without touching the served
    /// book. `None`: pages were added or removed, or most pages changed, which takes a full
    /// [`rebuild`](Self::rebuild).
    pub fn patch(&mut self, pages: &Pages) -> anyhow::Result<Option<Patch>> {
        if self.served.is_empty() || !self.served.keys().eq(pages.keys()) {
            return Ok(None);
        }
        let changed: Vec<PathBuf> = pages
            .iter()
            .filter(|(k, v)| self.served.get(*k) != Some(v))
            .map(|(k, _)| k.clone())
            .collect();
        if changed.is_empty() {
            return Ok(Some(Patch::default()));
        }
        if changed.len() > self.max_patch.unwrap_or((pages.len() / 4).max(8)) {
            return Ok(None);
        }
        self.sync_mirror(pages)?;
        let chapters: HashSet<PathBuf> = changed
            .iter()
            .filter(|p| p.as_path() != Path::new("SUMMARY.md"))
            .cloned()
            .collect();
        let sidebar = changed.iter().any(|p| p.as_path() == Path::new("SUMMARY.md"));
        self.small_build(&chapters, sidebar)?;
        let html = self.scratch.path().join("html");
        let mut files: Vec<(PathBuf, PathBuf)> = chapters
            .iter()
            .map(|c| {
                let rel = c.with_extension("html");
                (rel.clone(), html.join(rel))
            })
            .collect();
        if sidebar {
            files.extend(SIDEBAR.map(|f| (PathBuf::from(f), html.join(f))));
        }
        Ok(Some(Patch {
            files,
            pages: pages.clone(),
            changed,
        }))
    }

    /// Build only those of `first` that differ from the served pages, without the sidebar: the
    /// pages an author is looking at, served before the rest of a title or summary edit (whose
    /// sidebar build takes every chapter). `None` when that would be the whole edit anyway.
    pub fn patch_first(&mut self, pages: &Pages, first: &HashSet<PathBuf>) -> anyhow::Result<Option<Patch>> {
        if self.served.is_empty() || !self.served.keys().eq(pages.keys()) {
            return Ok(None);
        }
        let differs = |k: &PathBuf| self.served.get(k) != pages.get(k);
        let changed: Vec<PathBuf> = first.iter().filter(|k| differs(k)).cloned().collect();
        let rest = pages.keys().filter(|k| differs(k) && !first.contains(*k)).count();
        if changed.is_empty() || rest == 0 {
            return Ok(None);
        }
        self.sync_mirror(pages)?;
        let chapters: HashSet<PathBuf> = changed.iter().cloned().collect();
        self.small_build(&chapters, false)?;
        let html = self.scratch.path().join("html");
        let files = changed
            .iter()
            .map(|c| (c.with_extension("html"), html.join(c.with_extension("html"))))
            .collect();
        // What is served after this patch: the old pages with only these replaced.
        let mut served = self.served.clone();
        for c in &changed {
            served.insert(c.clone(), pages[c].clone());
        }
        Ok(Some(Patch {
            files,
            pages: served,
            changed,
        }))
    }

    /// Move a patch's pages into the served book. Returns the new generation.
    pub fn publish(&mut self, patch: Patch) -> anyhow::Result<u64> {
        let mut generation = self.generation.lock().expect("not poisoned");
        if patch.changed.is_empty() {
            return Ok(*generation);
        }
        for (rel, built) in &patch.files {
            replace_file(built, &self.out.join(rel))?;
        }
        *generation += 1;
        self.served = patch.pages;
        Ok(*generation)
    }

    /// mdBook over the scratch tree, reduced to the changed `chapters` and their neighbours;
    /// with `sidebar` (SUMMARY.md changed), over every chapter, so that the sidebar it writes
    /// (`toc.js`, `toc.html`: made from the chapters' names and places, not their text) is the
    /// full build's.
    fn small_build(&self, chapters: &HashSet<PathBuf>, sidebar: bool) -> anyhow::Result<()> {
        let work = self.scratch.path();
        let config = config(work, true, false)?;
        let mut md = mdbook_driver::MDBook::load_with_config(work, config)
            .map_err(|e| anyhow::anyhow!("mdBook could not load the changed pages: {e:#}"))?;
        let wanted = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| chapters.contains(p));
        if !sidebar {
            md.book = neighbourhood(&md.book, &wanted);
        }
        // Pages built only for their place in the book are built without their text.
        md.book.for_each_chapter_mut(|ch| {
            if !wanted(&ch.path) {
                ch.content.clear();
            }
        });
        md.build().map_err(|e| anyhow::anyhow!("mdBook failed: {e:#}"))
    }

    /// A handle for the background refresh of [`LAZY_FILES`].
    pub fn refresher(&self) -> anyhow::Result<Refresher> {
        let dir = tempfile::Builder::new()
            .prefix("refresh-")
            .tempdir_in(self.root.join("target/hdlc-serve"))
            .context("creating the refresh directory")?;
        Ok(Refresher {
            root: self.root.clone(),
            out: self.out.clone(),
            dir,
            generation: self.generation.clone(),
        })
    }

    /// Generation of the served book.
    pub fn generation(&self) -> u64 {
        *self.generation.lock().expect("not poisoned")
    }
}

/// The chapters of `book` that `wanted` names and their neighbours, in book order, flat: the
/// smallest book in which each wanted chapter has its real previous and next chapter.
fn neighbourhood(book: &Book, wanted: &dyn Fn(&Option<PathBuf>) -> bool) -> Book {
    let all: Vec<_> = book.chapters().collect();
    let mut keep = vec![false; all.len()];
    for (i, ch) in all.iter().enumerate() {
        if wanted(&ch.path) {
            let last = (i + 1).min(all.len() - 1);
            keep[i.saturating_sub(1)..=last].fill(true);
        }
    }
    let items = all
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(ch, _)| {
            let mut ch = ch.clone();
            ch.sub_items.clear();
            BookItem::Chapter(ch)
        })
        .collect();
    Book::new_with_items(items)
}

/// Replace `dest` by `src` in one rename (a reader never sees half a page); a copy and a rename
/// where the two are on different file systems.
fn replace_file(src: &Path, dest: &Path) -> anyhow::Result<()> {
    if std::fs::rename(src, dest).is_ok() {
        return Ok(());
    }
    let tmp = dest.with_file_name(format!(
        ".{}.new",
        dest.file_name().and_then(|n| n.to_str()).unwrap_or("page")
    ));
    std::fs::copy(src, &tmp).with_context(|| format!("copying {}", src.display()))?;
    std::fs::rename(&tmp, dest).with_context(|| format!("replacing {}", dest.display()))
}

/// Rebuilds what depends on every page ([`LAZY_FILES`]) with a full build, off the edit's path.
pub struct Refresher {
    root: PathBuf,
    out: PathBuf,
    dir: tempfile::TempDir,
    generation: Arc<Mutex<u64>>,
}

impl Refresher {
    /// Build `pages` in full and, if the served book is still at `generation` (no edit came in
    /// meanwhile), move those of its [`LAZY_FILES`] that differ into it. Returns the problems the
    /// full build found (then nothing is moved) and the files moved.
    pub fn run(
        &self,
        pages: &Pages,
        generation: u64,
    ) -> anyhow::Result<(Vec<crate::verify::Problem>, Vec<&'static str>)> {
        let html = self.dir.path().join("html");
        let problems = write_book(&self.root, pages, &html, true)?;
        if !problems.is_empty() {
            return Ok((problems, Vec::new()));
        }
        let current = self.generation.lock().expect("not poisoned");
        if *current != generation {
            return Ok((problems, Vec::new()));
        }
        let mut moved = Vec::new();
        for f in LAZY_FILES {
            let (new, served) = (html.join(f), self.out.join(f));
            if new.is_file() && std::fs::read(&new).ok() != std::fs::read(&served).ok() {
                replace_file(&new, &served)?;
                moved.push(f);
            }
        }
        Ok((problems, moved))
    }
}
