//! Stage 5, write: drive mdBook as a library over the generated pages, then swap the result
//! into place.
//!
//! Why a temporary directory and a swap: a build that fails halfway (a bad page, a full disk)
//! must leave the reader's previous book intact, so nothing touches the output directory until
//! mdBook has finished a complete book next to it.

use crate::render::Pages;
use anyhow::{bail, Context};
use std::path::Path;

/// The live-reload snippet `serve` injects: polls a version counter, reloads when it changes.
pub const LIVE_RELOAD_JS: &str = include_str!("../../book/assets/livereload.js");

/// Write `pages` as an mdBook source tree, build it and swap it into `out_dir`.
/// The generated source is also swapped into `<root>/book/src` for authors to inspect.
pub fn write_book(
    root: &Path,
    pages: &Pages,
    out_dir: &Path,
    live_reload: bool,
) -> anyhow::Result<Vec<crate::verify::Problem>> {
    let book_dir = root.join("book");
    let config_file = book_dir.join("book.toml");
    if !config_file.is_file() {
        bail!(
            "{}: missing; the book's mdBook configuration lives there",
            config_file.display()
        );
    }
    let parent = out_dir.parent().context("output directory has no parent")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(parent)
        .context("creating a temporary build directory")?;
    let work = tmp.path();
    let src = work.join("src");
    for (rel, text) in pages {
        let file = src.join(rel);
        std::fs::create_dir_all(file.parent().expect("page has a parent"))?;
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    }
    std::fs::copy(&config_file, work.join("book.toml"))?;
    let assets = book_dir.join("assets");
    if assets.is_dir() {
        // Once beside book.toml for `additional-css`/`-js`, once in src/ so that files those
        // refer to (the math fonts) are copied into the output as static files.
        link_dir(&assets, &work.join("assets"))?;
        link_dir(&assets, &src.join("assets"))?;
    }
    let theme = book_dir.join("theme");
    if theme.is_dir() {
        copy_dir(&theme, &work.join("theme"))?;
    }
    if live_reload {
        std::fs::create_dir_all(work.join("assets"))?;
        std::fs::write(work.join("assets/livereload.js"), LIVE_RELOAD_JS)?;
    }
    let mut config = mdbook_driver::config::Config::from_disk(work.join("book.toml"))
        .map_err(|e| anyhow::anyhow!("book/book.toml: {e}"))?;
    config
        .set("build.build-dir", "html")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if live_reload {
        let mut js: Vec<String> = config
            .get("output.html.additional-js")
            .ok()
            .flatten()
            .unwrap_or_default();
        js.push("assets/livereload.js".into());
        config
            .set("output.html.additional-js", js)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    // Card pages are indexed from their own text (search_docs.rs), not by mdBook, which would
    // index their navigation too. The setting needs at least one card page to name.
    let card_docs = crate::search_docs::card_docs(pages);
    if !card_docs.is_empty() {
        config
            .set("output.html.search.chapter.cards.enable", false)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let md = mdbook_driver::MDBook::load_with_config(work, config)
        .map_err(|e| anyhow::anyhow!("mdBook could not load the generated book: {e:#}"))?;
    md.build().map_err(|e| anyhow::anyhow!("mdBook failed: {e:#}"))?;
    let built = work.join("html");
    if !built.join("index.html").is_file() {
        bail!("mdBook finished without an index.html; the previous book was left in place");
    }
    // Independent passes over different files: run them side by side.
    let (search, problems) = std::thread::scope(|s| {
        let search = s.spawn(|| crate::search_index::finish(&built, &card_docs));
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
