//! Stage 5, write: drive mdBook as a library over the generated pages, then swap the result
//! into place.
//!
//! Why a temporary directory and a swap: a build that fails halfway (a bad page, a full disk)
//! must leave the reader's previous book intact, so nothing touches the output directory until
//! mdBook has finished a complete book next to it.
//!
//! Why a thread beside mdBook: mdBook renders on one core, and the card pages' search documents
//! (our own index, `search_index`) need only the generated Markdown, so they are indexed on the
//! other core meanwhile; after mdBook, the link check and the rest of the index run side by side.
//!
//! [`live`] keeps a served book up to date page by page (`serve`).

pub mod live;

use crate::render::Pages;
use anyhow::{bail, Context};
use std::path::Path;

/// The live-reload snippet `serve` injects: waits for the server's build counter to change,
/// then reloads.
pub const LIVE_RELOAD_JS: &str = include_str!("../../../book/assets/livereload.js");

/// Write `pages` as an mdBook source tree, build it and swap it into `out_dir`.
/// The generated source is also swapped into `<root>/book/src` for authors to inspect.
pub fn write_book(
    root: &Path,
    pages: &Pages,
    out_dir: &Path,
    live_reload: bool,
) -> anyhow::Result<Vec<crate::verify::Problem>> {
    let book_dir = root.join("book");
    let parent = out_dir.parent().context("output directory has no parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(parent)
        .context("creating a temporary build directory")?;
    let work = tmp.path();
    let src = work.join("src");
    write_pages(&src, pages.iter())?;
    stage(&book_dir, work, live_reload)?;
    // The search index of card pages is ours (search_docs.rs), not mdBook's, which would index
    // their navigation too. The setting needs at least one card page to name.
    let config = config(work, live_reload, pages.keys().any(|p| is_card_page(p)))?;
    let built = work.join("html");
    let (prepared, built_ok) = std::thread::scope(|s| {
        let prepared = s.spawn(|| crate::search_index::prepare(crate::search_docs::card_docs(pages)));
        let built_ok = mdbook_build(work, config);
        (prepared.join(), built_ok)
    });
    built_ok?;
    let prepared = prepared.map_err(|_| anyhow::anyhow!("the search-index thread panicked"))?;
    if !built.join("index.html").is_file() {
        bail!("mdBook finished without an index.html; the previous book was left in place");
    }
    // Independent passes over different files: run them side by side.
    let (search, problems) = std::thread::scope(|s| {
        let search = s.spawn(|| crate::search_index::finish_prepared(&built, prepared));
        let problems = crate::verify::verify_tree(&built);
        (search.join(), problems)
    });
    search
        .map_err(|_| anyhow::anyhow!("the search-index thread panicked"))?
        .context("rebuilding the search index")?;
    if !problems.is_empty() {
        return Ok(problems);
    }
    swap_into(&built, out_dir)?;
    if out_dir == book_dir.join("html") {
        swap_into(&src, &book_dir.join("src"))?;
    }
    Ok(problems)
}

/// Is `rel` a card page (`cards/<id>.md`)?
pub fn is_card_page(rel: &Path) -> bool {
    rel.starts_with("cards") && rel.extension().is_some_and(|e| e == "md")
}

/// Write pages under `src`.
fn write_pages<'a>(
    src: &Path,
    pages: impl Iterator<Item = (&'a std::path::PathBuf, &'a String)>,
) -> anyhow::Result<()> {
    for (rel, text) in pages {
        let file = src.join(rel);
        std::fs::create_dir_all(file.parent().expect("page has a parent"))?;
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(())
}

/// Put the book's hand-written parts beside a generated source tree in `work`: book.toml, the
/// theme, the assets (and the live-reload script).
fn stage(book_dir: &Path, work: &Path, live_reload: bool) -> anyhow::Result<()> {
    let config_file = book_dir.join("book.toml");
    if !config_file.is_file() {
        bail!(
            "{}: missing; the book's mdBook configuration lives there",
            config_file.display()
        );
    }
    std::fs::copy(&config_file, work.join("book.toml"))?;
    let assets = book_dir.join("assets");
    if assets.is_dir() {
        // Once beside book.toml for `additional-css`/`-js`, once in src/ so that files those
        // refer to (the math fonts) are copied into the output as static files.
        link_dir(&assets, &work.join("assets"))?;
        link_dir(&assets, &work.join("src/assets"))?;
    }
    let theme = book_dir.join("theme");
    if theme.is_dir() {
        copy_dir(&theme, &work.join("theme"))?;
    }
    if live_reload {
        std::fs::create_dir_all(work.join("assets"))?;
        let js = work.join("assets/livereload.js");
        // A hard link to book/assets must not be written through.
        let _ = std::fs::remove_file(&js);
        std::fs::write(js, LIVE_RELOAD_JS)?;
    }
    Ok(())
}

/// The mdBook configuration of a staged book in `work`.
///
/// `live_reload` (`serve`): the reload script is added, and asset names are not fingerprinted —
/// with fingerprints, a new title (the sidebar) or a new path summary (mdBook's index of the
/// path pages) renames a file that every page names, so every page would change with it.
fn config(work: &Path, live_reload: bool, card_pages: bool) -> anyhow::Result<mdbook_driver::config::Config> {
    let mut config = mdbook_driver::config::Config::from_disk(work.join("book.toml"))
        .map_err(|e| anyhow::anyhow!("book/book.toml: {e}"))?;
    fn set(c: &mut mdbook_driver::config::Config, key: &str, v: impl serde::Serialize) -> anyhow::Result<()> {
        c.set(key, v).map_err(|e| anyhow::anyhow!("{e}"))
    }
    set(&mut config, "build.build-dir", "html")?;
    if live_reload {
        let mut js: Vec<String> = config
            .get("output.html.additional-js")
            .ok()
            .flatten()
            .unwrap_or_default();
        js.push("assets/livereload.js".into());
        set(&mut config, "output.html.additional-js", js)?;
        set(&mut config, "output.html.hash-files", false)?;
    }
    if card_pages {
        set(&mut config, "output.html.search.chapter.cards.enable", false)?;
    }
    Ok(config)
}

/// mdBook over the staged book in `work`, into `work/html`.
fn mdbook_build(work: &Path, config: mdbook_driver::config::Config) -> anyhow::Result<()> {
    let md = mdbook_driver::MDBook::load_with_config(work, config)
        .map_err(|e| anyhow::anyhow!("mdBook could not load the generated book: {e:#}"))?;
    md.build().map_err(|e| anyhow::anyhow!("mdBook failed: {e:#}"))
}

/// Replace `dest` by `new` with two renames; the old tree is removed only after the swap.
fn swap_into(new: &Path, dest: &Path) -> anyhow::Result<()> {
    let old = dest.with_file_name(format!(
        ".old-{}-{}",
        dest.file_name().and_then(|s| s.to_str()).unwrap_or("x"),
        std::process::id()
    ));
    if dest.exists() {
        std::fs::rename(dest, &old)
            .with_context(|| format!("moving the previous {} aside", dest.display()))?;
    }
    if let Err(e) = std::fs::rename(new, dest) {
        if old.exists() {
            let _ = std::fs::rename(&old, dest);
        }
        return Err(e).with_context(|| format!("moving the new book into {}", dest.display()));
    }
    if old.exists() {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Like [`copy_dir`], but hard-links files where the file system allows it (same volume).
fn link_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let target = to.join(entry.path().strip_prefix(from)?);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if std::fs::hard_link(entry.path(), &target).is_err() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from)?;
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
