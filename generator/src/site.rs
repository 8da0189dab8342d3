//! The pipeline as a whole: `Site::load()` (load + validate) then `Site::build()`
//! (measure → render → write), each stage timed and reported like zola does.
//!
//! Why one place: `build`, `check`, `serve` and the tests run the same stages in the same order,
//! so a book that checks clean builds the same way from every command.

use crate::diag::Diagnostics;
use crate::graph::ConceptGraph;
use crate::measure::Measured;
use crate::measure::{self, MeasureOptions};
use crate::model::Book;
use crate::render::{self, FigureData, Pages, RenderCache};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cache folder, under the book's root.
pub const CACHE_DIR: &str = "target/hdlc-cache";

/// A loaded and validated book.
pub struct Site {
    pub root: PathBuf,
    pub book: Book,
    pub graph: ConceptGraph,
    pub diags: Diagnostics,
    pub timings: Vec<(&'static str, Duration)>,
}

/// Options for the measure and write stages.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Allow GPU measurement when a GPU is present.
    pub use_gpu: bool,
    pub progress: bool,
    /// Where the finished book goes; default `<root>/book/html`.
    pub out_dir: Option<PathBuf>,
    /// Extra `<script>` injected into every page (live reload of `serve`).
    pub live_reload: bool,
    /// Read page templates from this folder instead of the embedded ones (`serve`).
    pub templates_dir: Option<PathBuf>,
    /// Measure (or take from this machine's cache) the CPU roofline; `HDLC_CPU_BENCH=0` also
    /// turns it off.
    pub cpu_bench: bool,
    /// Run labs whose results are stale, when a GPU and their frameworks are present.
    pub labs: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            use_gpu: true,
            progress: true,
            out_dir: None,
            live_reload: false,
            templates_dir: None,
            cpu_bench: true,
            labs: true,
        }
    }
}

/// What a build produced.
pub struct BuildReport {
    pub out_dir: PathBuf,
    pub pages: usize,
    pub notes: Vec<String>,
}

/// Walk up from `start` to the first directory holding `paths.yaml`.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("paths.yaml").is_file())
        .map(Path::to_path_buf)
}

impl Site {
    /// Stages 1 and 2. Never fails: problems are in `diags`.
    pub fn load(root: &Path) -> Site {
        let mut site = Site::read(root);
        let t = Instant::now();
        let diags = validate_book(&site.book);
        site.diags.extend(diags);
        site.timings.push(("validate", t.elapsed()));
        site
    }

    /// Stage 1 alone: the book read and its graph built, not validated (`serve` validates
    /// beside the render of an edit, with [`validate_book`]).
    pub fn read(root: &Path) -> Site {
        let mut diags = Diagnostics::new();
        let t = Instant::now();
        let book = crate::load::load_book(root, &mut diags);
        let graph = ConceptGraph::build(&book);
        Site {
            root: root.to_path_buf(),
            book,
            graph,
            diags,
            timings: vec![("load", t.elapsed())],
        }
    }

    /// GPU families and lab families the book's figures draw from.
    pub fn needed(&self) -> (Vec<String>, Vec<String>) {
        let figures: Vec<String> = self.book.cards.iter().flat_map(figure_bodies).collect();
        self.needed_from(&figures)
    }

    /// GPU families and lab families of the figure blocks `figures` (their bodies).
    pub fn needed_from(&self, figures: &[String]) -> (Vec<String>, Vec<String>) {
        let labs = crate::figspec::lab_families(&self.book.labs);
        let known = crate::render::figures::known(&labs);
        let mut gpu: Vec<String> = figures
            .iter()
            .filter_map(|body| {
                crate::figspec::parse_figure(body, &known)
                    .ok()
                    .and_then(|f| f.bench().map(str::to_string))
            })
            .collect();
        // Only GPU families go to the GPU harness; `cpu` is measured by `cpubench` below.
        gpu.retain(|f| measure::families().contains(&f.as_str()));
        gpu.sort();
        gpu.dedup();
        // The `bench:` of every figure block as written (checked or not) that names a lab.
        let mut lab: Vec<String> = figures
            .iter()
            .filter_map(|body| {
                body.lines().find_map(|l| {
                    l.trim()
                        .strip_prefix("bench:")
                        .map(|v| v.split('#').next().unwrap_or("").trim().to_string())
                })
            })
            .filter(|f| self.book.labs.iter().any(|l| &l.family == f))
            .collect();
        lab.sort();
        lab.dedup();
        (gpu, lab)
    }

    /// Stages 3–5. Call only when `load` found no errors.
    pub fn build(&mut self, opts: &BuildOptions) -> anyhow::Result<BuildReport> {
        let measured = self.measure(opts)?;
        let pages = self.render(&measured, opts, None)?;
        let out_dir = self.write(&pages, opts)?;
        Ok(BuildReport {
            out_dir,
            pages: pages.len(),
            notes: measured.notes,
        })
    }

    /// Stage 3: the records the figures draw from (measured where stale and a GPU is there).
    pub fn measure(&mut self, opts: &BuildOptions) -> anyhow::Result<Measured> {
        let t = Instant::now();
        let (families, lab_families) = self.needed();
        let mut measured = measure::measure(&MeasureOptions {
            root: self.root.clone(),
            families: families.clone(),
            force: false,
            strict: false,
            progress: opts.progress,
            use_gpu: opts.use_gpu && !(families.is_empty() && lab_families.is_empty()),
            labs: if opts.labs && !lab_families.is_empty() {
                measure::LabSelection::Only(lab_families)
            } else {
                measure::LabSelection::None
            },
        })?;
        if measured.interrupted {
            for n in &measured.notes {
                eprintln!("{n}");
            }
            anyhow::bail!(
                "interrupted while measuring: the book was not rebuilt (the previous one is in place); \
                 run `build` again to resume — what was measured is saved and cached"
            );
        }
        // The reader's own CPU roofline: cached per machine under target/, so only the first
        // build on a machine pays for it.
        let cpu_off = std::env::var("HDLC_CPU_BENCH").is_ok_and(|v| v == "0");
        if opts.cpu_bench && !cpu_off {
            match crate::cpubench::cpu_results(&self.root, false, opts.progress) {
                Ok(file) => {
                    measured.notes.push(format!("CPU roofline: {}", file.device.name));
                    measured.files.push((self.cache_dir(), file));
                }
                Err(e) => measured.notes.push(format!("CPU roofline not measured: {e:#}")),
            }
        }
        self.timings.push(("measure", t.elapsed()));
        Ok(measured)
    }

    /// Stage 4: every page, reusing what `cache` holds from an earlier render; without one,
    /// what the cache folder keeps between builds (the map).
    pub fn render(
        &mut self,
        measured: &Measured,
        opts: &BuildOptions,
        cache: Option<&mut RenderCache>,
    ) -> anyhow::Result<Pages> {
        let t = Instant::now();
        let mut fresh;
        let cache = match cache {
            Some(c) => c,
            None => {
                fresh = RenderCache::on_disk(&self.cache_dir());
                &mut fresh
            }
        };
        let pages = render_pages(&self.book, &self.graph, measured, opts, Some(cache));
        self.timings.push(("render", t.elapsed()));
        let (pages, diags) = pages?;
        let failed = diags.has_errors();
        self.diags.extend(diags);
        if failed {
            anyhow::bail!("rendering found errors; the previous book was left in place");
        }
        Ok(pages)
    }

    /// Stage 5: the pages built by mdBook into the output directory, which it returns.
    pub fn write(&mut self, pages: &Pages, opts: &BuildOptions) -> anyhow::Result<PathBuf> {
        let t = Instant::now();
        let out_dir = opts
            .out_dir
            .clone()
            .unwrap_or_else(|| self.root.join("book/html"));
        let problems = crate::write::write_book(&self.root, pages, &out_dir, opts.live_reload)?;
        self.timings.push(("write", t.elapsed()));
        self.fail_on_problems(&problems)?;
        Ok(out_dir)
    }

    /// Report broken links or external resources of a built book as errors at their sources.
    pub fn fail_on_problems(&mut self, problems: &[crate::verify::Problem]) -> anyhow::Result<()> {
        if problems.is_empty() {
            return Ok(());
        }
        for p in problems {
            let (file, line, col) = self.source_of(p);
            self.diags
                .error(
                    &file,
                    line,
                    col,
                    format!("{}: `{}` (in {})", p.message, p.url, p.page.display()),
                )
                .hint("fix the link or asset; the previous book was left in place");
        }
        anyhow::bail!(
            "{} broken link(s) or external resource(s) in the built book",
            problems.len()
        )
    }

    /// Map a problem in a built page back to the file an author edits, with a line if found.
    fn source_of(&self, p: &crate::verify::Problem) -> (PathBuf, usize, usize) {
        let stem = p.page.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let in_cards = p.page.starts_with("cards");
        if let Some(card) = self.book.cards.iter().find(|c| in_cards && c.id == stem) {
            let md = p.url.replace(".html", ".md");
            let frag = p.url.split('#').nth(1).unwrap_or("").to_string();
            let found = [p.url.as_str(), md.as_str(), frag.as_str()]
                .into_iter()
                .filter(|n| !n.is_empty())
                .find_map(|n| {
                    card.source[card.body_offset..]
                        .find(n)
                        .map(|i| i + card.body_offset)
                });
            if let Some(i) = found {
                let (l, c) = crate::diag::line_col(&card.source, i);
                return (card.file.clone(), l, c);
            }
            return (card.file.clone(), 0, 0);
        }
        (PathBuf::from("book/src").join(p.page.with_extension("md")), 0, 0)
    }

    /// Where results are kept between runs on this machine (the CPU roofline, the map).
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join(CACHE_DIR)
    }

    /// "load 12 ms · validate 3 ms · …"
    pub fn timing_line(&self) -> String {
        self.timings
            .iter()
            .map(|(n, d)| format!("{n} {:.0} ms", d.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// The body of every figure block of a card.
pub fn figure_bodies(card: &crate::model::Card) -> Vec<String> {
    crate::markup::scan(card.body(), card.body_offset)
        .into_iter()
        .filter_map(|p| match p {
            crate::markup::Piece::Figure { body, .. } => Some(body),
            _ => None,
        })
        .collect()
}

/// Stage 2 over a loaded book: every problem, none fatal here.
pub fn validate_book(book: &Book) -> Diagnostics {
    let mut diags = Diagnostics::new();
    crate::validate::validate(book, &mut diags);
    diags
}

/// Stage 4 as a function of its inputs (`serve` runs it beside validation); with a cache, what
/// it holds is reused and this render's results are kept there.
pub fn render_pages(
    book: &Book,
    graph: &ConceptGraph,
    measured: &Measured,
    opts: &BuildOptions,
    cache: Option<&mut RenderCache>,
) -> anyhow::Result<(Pages, Diagnostics)> {
    let figs = FigureData {
        files: &measured.files,
        local_device: measured.local_device.as_deref(),
    };
    let mut diags = Diagnostics::new();
    let templates = opts.templates_dir.as_deref();
    let pages = match cache {
        Some(c) => render::render_incremental(book, graph, &figs, templates, &mut diags, c)?,
        None => render::render_with(book, graph, &figs, templates, &mut diags)?,
    };
    Ok((pages, diags))
}
