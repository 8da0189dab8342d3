//! The built book's search index: card pages indexed from their own text, and Korean words.
//!
//! Cards: mdBook is told not to index `cards/` (`write.rs`); its index of the other pages is
//! read back and rebuilt with the card documents of [`crate::search_docs`] added, with the same
//! elasticlunr pipeline, fields and tokenizer mdBook uses, so its searcher reads it unchanged.
//! The card documents are indexed first ([`prepare`], while mdBook builds) and mdBook's pages
//! added after ([`finish_prepared`]); the file lists mdBook's pages first, as before.
//!
//! Korean:
//! mdBook builds its elasticlunr index with an English pipeline whose trimmer keeps only
//! `[0-9a-z]`: every Hangul word is trimmed to nothing and never indexed, so a Korean query finds
//! nothing. After mdBook has written `searchindex-*.js`, this computes the postings of the words
//! that contain non-ASCII letters (split at punctuation, lowercased; term frequency √count, as
//! elasticlunr does) and appends them to that file as `window.hdlcKo`. The hook in
//! `book/theme/head.hbs` adds them to the index when the searcher loads it, and gives queries a
//! Unicode-aware trimmer; prefix expansion then lets "강도" find "강도를" and "강도는".
//!
//! Why rebuild rather than edit mdBook's index: its documents store the navigation text and its
//! inverted index the navigation words; taking them out of both is more code than indexing the
//! card text once. mdBook, told to skip the cards, indexes only the few other pages, so the
//! rebuild replaces work rather than adding to it.

mod json;
mod korean;

pub use korean::{non_ascii_terms, postings, Postings};

use crate::search_docs::Doc;
use anyhow::{bail, Context};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

const PREFIX: &str = "window.search = Object.assign(window.search, JSON.parse('";
const SUFFIX: &str = "'));";

/// Card documents indexed ahead of mdBook's pages.
pub struct Prepared {
    cards: Vec<Doc>,
    index: json::Index,
}

/// Index the card documents (the expensive part: tokens, stems, Korean words), so that only
/// mdBook's few pages are left for [`finish_prepared`].
pub fn prepare(cards: Vec<Doc>) -> Prepared {
    let pipeline = json::pipeline();
    let mut index = json::Index::default();
    for (j, d) in cards.iter().enumerate() {
        index.add(&pipeline, json::CARD | j as u32, d);
    }
    Prepared { cards, index }
}

/// mdBook's index file as far as the rebuild reads it: the options pass through untouched.
#[derive(Deserialize)]
struct MdbookIndex {
    results_options: serde_json::Value,
    search_options: serde_json::Value,
    doc_urls: Vec<String>,
    index: MdbookFields,
}
#[derive(Deserialize)]
struct MdbookFields {
    #[serde(rename = "documentStore")]
    document_store: MdbookStore,
}
#[derive(Deserialize)]
struct MdbookStore {
    docs: HashMap<String, HashMap<String, String>>,
}

fn unescape_js(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            if let Some(n) = it.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The search index file under `html` (none: the book has search turned off).
fn index_file(html: &Path) -> anyhow::Result<Option<std::path::PathBuf>> {
    Ok(std::fs::read_dir(html)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("searchindex") && n.ends_with(".js"))
        }))
}

/// Rebuild the search index under `html`: mdBook's documents (the pages it indexed), then
/// `cards`; then append the Korean postings of all of them. Returns the number of documents.
pub fn finish(html: &Path, cards: &[Doc]) -> anyhow::Result<usize> {
    finish_prepared(html, prepare(cards.to_vec()))
}

/// [`finish`] with the card documents already indexed.
pub fn finish_prepared(html: &Path, prepared: Prepared) -> anyhow::Result<usize> {
    let Some(file) = index_file(html)? else {
        return Ok(0);
    };
    let text = std::fs::read_to_string(&file)?;
    let Some(inner) = text
        .trim_end()
        .strip_prefix(PREFIX)
        .and_then(|t| t.strip_suffix(SUFFIX))
    else {
        bail!(
            "{}: unexpected search index layout (mdBook changed it?)",
            file.display()
        );
    };
    let md: MdbookIndex =
        serde_json::from_str(&unescape_js(inner)).context("parsing mdBook's search index")?;
    let pages = mdbook_docs(&md);
    let Prepared { cards, mut index } = prepared;
    let pipeline = json::pipeline();
    for (i, d) in pages.iter().enumerate() {
        index.add(&pipeline, i as u32, d);
    }
    let docs: Vec<&Doc> = pages.iter().chain(&cards).collect();
    let js = index_js(&md, &index, &docs, pages.len());
    std::fs::write(&file, js).with_context(|| format!("writing {}", file.display()))?;
    Ok(docs.len())
}

/// mdBook's documents, in the order of its `doc_urls`.
fn mdbook_docs(md: &MdbookIndex) -> Vec<Doc> {
    let mut docs = Vec::with_capacity(md.doc_urls.len());
    for (i, url) in md.doc_urls.iter().enumerate() {
        let Some(d) = md.index.document_store.docs.get(&i.to_string()) else {
            continue;
        };
        let field = |f: &str| d.get(f).cloned().unwrap_or_default();
        docs.push(Doc {
            url: url.clone(),
            title: field("title"),
            body: field("body"),
            breadcrumbs: field("breadcrumbs"),
        });
    }
    docs
}

/// The whole index file: mdBook's wrapper around the index JSON (keys sorted at every level, as
/// mdBook writes it), then the Korean postings.
fn index_js(md: &MdbookIndex, index: &json::Index, docs: &[&Doc], pages: usize) -> Vec<u8> {
    let refs = json::Refs::new(pages, docs.len());
    let meta = {
        let mut b = elasticlunr::IndexBuilder::new();
        for f in json::FIELDS {
            b = b.add_field(f);
        }
        serde_json::to_value(b.build()).expect("an empty index serializes")
    };
    let mut j = Vec::with_capacity(8 << 20);
    j.extend_from_slice(b"{\"doc_urls\":");
    let urls: Vec<&str> = docs.iter().map(|d| d.url.as_str()).collect();
    json::value(&mut j, &urls);
    j.extend_from_slice(b",\"index\":");
    json::write_index(&mut j, index, docs, &refs, &meta);
    j.extend_from_slice(b",\"results_options\":");
    json::value(&mut j, &md.results_options);
    j.extend_from_slice(b",\"search_options\":");
    json::value(&mut j, &md.search_options);
    j.push(b'}');
    let mut out = Vec::with_capacity(j.len() + (j.len() >> 4) + (4 << 20));
    out.extend_from_slice(PREFIX.as_bytes());
    // In a '…' string: backslashes and quotes escaped, as mdBook does.
    for &b in &j {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\'' => out.extend_from_slice(b"\\'"),
            _ => out.push(b),
        }
    }
    out.extend_from_slice(SUFFIX.as_bytes());
    out.extend_from_slice(b"\nwindow.hdlcKo = ");
    json::write_korean(&mut out, &index.korean, &refs);
    out.extend_from_slice(b";\n");
    out
}

#[cfg(test)]
mod tests;
