//! One `serve` session: what the last build made, kept so that the next edit rewrites only
//! what it changed.
//!
//! An edit to a card: the book is read again; validation runs on one core while the other
//! renders (from the render cache: only changed bodies) and builds the changed pages with
//! mdBook — nothing is served before validation passes. The pages are then moved into the
//! served book, and a full build in the background brings the print page and the search index
//! up to date (they show every card: a changed card's text is findable a moment later).
//! The render starts before validation ends whenever the records can be reused (measuring,
//! which may run kernels, waits for a valid book). When a title changed the map, the edit is
//! served without waiting for the map's layout, and the map pages follow in a second step.

use super::http::Version;
use crate::diag::Diagnostics;
use crate::measure::Measured;
use crate::render::{Pages, RenderCache};
use crate::site::{figure_bodies, render_pages, validate_book, BuildOptions, Site, CACHE_DIR};
use crate::write::live::{LiveBook, Patch, SIDEBAR};
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a batch of file events touched, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Cards, paths.yaml or page templates: the caches stay valid.
    Content,
    /// Kernel or lab sources, or the records: bodies (figures, includes) and records go stale.
    Kernels,
    /// The book's configuration, theme or assets: everything is built again.
    Book,
}

/// The families the records were measured for, and the records.
type Records = ((Vec<String>, Vec<String>), Measured);

pub struct Session {
    root: PathBuf,
    opts: BuildOptions,
    live: LiveBook,
    cache: RenderCache,
    records: Option<Records>,
    /// Figure blocks of each card by the hash of its text: what [`Self::needed`] scanned.
    figures: HashMap<String, (u64, Vec<String>)>,
    /// Pages of the cards whose text changed since the last rebuild: served first.
    edited: HashSet<PathBuf>,
    /// Jobs for the background refresh: the served pages and their generation.
    refresh: Sender<(Pages, u64)>,
    /// The version the reload script waits on: bumped whenever the served pages change.
    version: Arc<Version>,
}

impl Session {
    /// A session serving `out`; `version` is bumped whenever the served pages change (an
    /// edit's pages, the map pages that follow them, a sidebar the background refresh brings).
    pub fn new(root: &Path, out: &Path, version: Arc<Version>) -> anyhow::Result<Session> {
        let templates = root.join("generator/src/render/templates");
        let opts = BuildOptions {
            use_gpu: true,
            progress: false,
            out_dir: Some(out.to_path_buf()),
            live_reload: true,
            templates_dir: templates.is_dir().then_some(templates),
            cpu_bench: true,
            // A lab can take minutes; `serve` rebuilds on every save, so it draws shipped results.
            labs: false,
        };
        let live = LiveBook::new(root, out)?;
        let refresher = live.refresher()?;
        let (tx, rx) = channel::<(Pages, u64)>();
        let r = root.to_path_buf();
        let v = version.clone();
        std::thread::spawn(move || {
            while let Ok(mut job) = rx.recv() {
                // Only the newest pages matter: wait until the edits pause.
                while let Ok(newer) = rx.recv_timeout(Duration::from_millis(300)) {
                    job = newer;
                }
                match refresher.run(&job.0, job.1) {
                    Ok((problems, _)) if !problems.is_empty() => report_problems(&r, &problems),
                    // A new sidebar (a title changed) shows on every page: reload them.
                    Ok((_, moved)) if moved.iter().any(|f| SIDEBAR.contains(f)) => v.bump(),
                    Ok(_) => {}
                    Err(e) => eprintln!("error: refreshing the sidebar, search index and print page: {e:#}"),
                }
            }
        });
        Ok(Session {
            root: root.to_path_buf(),
            opts,
            live,
            cache: RenderCache::on_disk(&root.join(CACHE_DIR)).defer_map(),
            records: None,
            figures: HashMap::new(),
            edited: HashSet::new(),
            refresh: tx,
            version,
        })
    }

    /// Rebuild after `change`, bumping the version each time the served book changes; when the
    /// map had to wait ([`RenderCache::defer_map`]), its pages follow in a second step.
    pub fn rebuild(&mut self, change: Change) {
        if self.rebuild_once(change) {
            self.version.bump();
            if self.cache.map_pending() && self.rebuild_once(Change::Content) {
                self.version.bump();
            }
        }
    }

    /// One rebuild; true if the served book changed.
    fn rebuild_once(&mut self, change: Change) -> bool {
        if change >= Change::Kernels {
            self.cache = RenderCache::on_disk(&self.root.join(CACHE_DIR)).defer_map();
            self.records = None;
        }
        if change == Change::Book {
            if let Err(e) = self.live.restage() {
                eprintln!("error: {e:#}");
                return false;
            }
        }
        let t = Instant::now();
        match self.try_rebuild() {
            Ok(Some(what)) => {
                println!("{what} in {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
                true
            }
            Ok(None) => false,
            Err(e) => {
                eprintln!("error: {e:#} (still serving the previous book)");
                false
            }
        }
    }

    /// `Some(what was done)` when the served book changed, `None` when it stayed as it was.
    fn try_rebuild(&mut self) -> anyhow::Result<Option<String>> {
        let mut site = Site::read(&self.root);
        let needed = self.needed(&site);
        let records_ok = self.records.as_ref().is_some_and(|(k, _)| *k == needed);
        // Measuring may run kernels: only for a book that passed validation.
        let early = records_ok && !site.diags.has_errors();
        let (validated, early) = std::thread::scope(|s| {
            let book = &site.book;
            let v = s.spawn(move || {
                let t = Instant::now();
                (validate_book(book), t.elapsed())
            });
            // The render takes any input (the map layout is tested on random graphs), but a
            // book that fails validation is not the renderer's to judge: a panic there is
            // dropped with the book.
            let early = early.then(|| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.render_and_patch(&site)))
            });
            (v.join(), early)
        });
        let (diags, took) = validated.unwrap_or_else(|p| std::panic::resume_unwind(p));
        site.diags.extend(diags);
        site.timings.push(("validate", took));
        if site.diags.has_errors() {
            return Ok(stopped(&site));
        }
        let done = match early {
            Some(Ok(done)) => done?,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => {
                if !records_ok {
                    self.records = Some((needed, site.measure(&self.opts)?));
                }
                self.render_and_patch(&site)?
            }
        };
        site.diags.extend(done.diags);
        site.timings.push(("render", done.render));
        if done.patch.is_some() || done.first.is_some() {
            site.timings.push(("write", done.write));
        }
        if site.diags.report() {
            return Ok(stopped(&site));
        }
        let mut first_pages = Vec::new();
        let patch = match done.first {
            None => done.patch,
            Some(first) => {
                // A title or summary edit: the edited card's page now, the pages that show its
                // title or summary (and the sidebar) in a second step.
                first_pages = first.changed.clone();
                self.live.publish(first)?;
                self.version.bump();
                self.live.patch(&done.pages)?
            }
        };
        self.serve(&mut site, done.pages, patch, first_pages)
    }

    /// The families the figures draw from, scanning only cards whose text changed (and noting
    /// their pages in `edited`).
    fn needed(&mut self, site: &Site) -> (Vec<String>, Vec<String>) {
        self.edited.clear();
        let mut figures = Vec::new();
        let mut memo = HashMap::with_capacity(site.book.cards.len());
        for card in &site.book.cards {
            let mut h = DefaultHasher::new();
            card.source.hash(&mut h);
            let key = h.finish();
            let bodies = match self.figures.remove(&card.id) {
                Some((k, b)) if k == key => b,
                old => {
                    if old.is_some() {
                        self.edited.insert(PathBuf::from(format!("cards/{}.md", card.id)));
                    }
                    figure_bodies(card)
                }
            };
            figures.extend(bodies.iter().cloned());
            memo.insert(card.id.clone(), (key, bodies));
        }
        self.figures = memo;
        site.needed_from(&figures)
    }

    /// Render from the cache and build the changed pages (not served yet).
    fn render_and_patch(&mut self, site: &Site) -> anyhow::Result<Rendered> {
        let (_, records) = self.records.as_ref().expect("records before render");
        let t = Instant::now();
        let (pages, diags) = render_pages(
            &site.book,
            &site.graph,
            records,
            &self.opts,
            Some(&mut self.cache),
        )?;
        let render = t.elapsed();
        let t = Instant::now();
        let (first, patch) = match diags.has_errors() {
            true => (None, None),
            false => match self.live.patch_first(&pages, &self.edited)? {
                // The rest of the edit is built once `first` is served.
                Some(first) => (Some(first), None),
                None => (None, self.live.patch(&pages)?),
            },
        };
        Ok(Rendered {
            pages,
            diags,
            first,
            patch,
            render,
            write: t.elapsed(),
        })
    }

    /// Put the pages into the served book: the changed ones, or all with a full build.
    fn serve(
        &mut self,
        site: &mut Site,
        pages: Pages,
        patch: Option<Patch>,
        first: Vec<PathBuf>,
    ) -> anyhow::Result<Option<String>> {
        let Some(patch) = patch else {
            let t = Instant::now();
            let problems = self.live.rebuild(&pages)?;
            site.timings.push(("write", t.elapsed()));
            if let Err(e) = site.fail_on_problems(&problems) {
                site.diags.report();
                eprintln!("error: {e:#} (still serving the previous book)");
                return Ok(None);
            }
            return Ok(Some(format!(
                "rebuilt {} pages ({})",
                pages.len(),
                site.timing_line()
            )));
        };
        if patch.changed.is_empty() && first.is_empty() {
            return Ok(None);
        }
        let changed: Vec<String> = first
            .iter()
            .chain(&patch.changed)
            .map(|p| p.display().to_string())
            .collect();
        let generation = self.live.publish(patch)?;
        // The print page and the search index show every card: rebuilt off the edit's path.
        let _ = self.refresh.send((pages, generation));
        Ok(Some(format!(
            "updated {} ({})",
            changed.join(", "),
            site.timing_line()
        )))
    }
}

/// What a render and its patch made.
struct Rendered {
    pages: Pages,
    diags: Diagnostics,
    /// The edited cards' own pages, built, when the edit changed other pages too: they are
    /// served first, and `patch` is built afterwards.
    first: Option<Patch>,
    /// The changed pages, built; `None` when they take a full build (or come after `first`).
    patch: Option<Patch>,
    render: Duration,
    write: Duration,
}

/// Report the problems that stopped a rebuild; the served book stays as it was.
fn stopped(site: &Site) -> Option<String> {
    site.diags.report();
    eprintln!("rebuild stopped: fix the errors above (still serving the previous book)");
    None
}

/// Broken links the background build found, at their sources.
fn report_problems(root: &Path, problems: &[crate::verify::Problem]) {
    let mut site = Site::read(root);
    let _ = site.fail_on_problems(problems);
    site.diags.report();
    eprintln!(
        "error: {} broken link(s) or external resource(s) in the served book",
        problems.len()
    );
}
