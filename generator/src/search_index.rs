//! Korean search for the built book.
//!
//! mdBook builds its elasticlunr index with an English pipeline whose trimmer keeps only
//! `[0-9a-z]`: every Hangul word is trimmed to nothing and never indexed, so a Korean query finds
//! nothing. After mdBook has written `searchindex-*.js`, this computes the postings of the words
//! that contain non-ASCII letters (split at punctuation, lowercased; term frequency √count, as
//! elasticlunr does) and appends them to that file as `window.hdlcKo`. The hook in
//! `book/theme/head.hbs` adds them to the index when the searcher loads it, and gives queries a
//! Unicode-aware trimmer; prefix expansion then lets "강도" find "강도를" and "강도는".
//!
//! Why append instead of rewriting mdBook's JSON: parsing and re-serializing the whole index
//! cost more than the rest of the build's own work; appending leaves mdBook's bytes untouched.

use anyhow::{bail, Context};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

const PREFIX: &str = "window.search = Object.assign(window.search, JSON.parse('";
const SUFFIX: &str = "'));";

/// Words of `text` that elasticlunr-rs drops: alphanumeric runs holding a non-ASCII letter.
pub fn non_ascii_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.is_ascii())
        .map(str::to_lowercase)
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

/// Only the parts of mdBook's index this module reads; the rest is skipped unparsed.
#[derive(Deserialize)]
struct Search<'a> {
    #[serde(borrow)]
    index: Index<'a>,
}
#[derive(Deserialize)]
struct Index<'a> {
    fields: Vec<String>,
    #[serde(rename = "documentStore", borrow)]
    document_store: Store<'a>,
}
#[derive(Deserialize)]
struct Store<'a> {
    #[serde(borrow)]
    docs: HashMap<&'a str, HashMap<String, String>>,
}

/// field → term → [(doc ref, tf)], sorted for deterministic output.
pub type Postings = BTreeMap<String, BTreeMap<String, Vec<(String, f64)>>>;

/// Postings of non-ASCII words for every document and field of an mdBook index (its JSON).
pub fn postings(index_json: &str) -> anyhow::Result<Postings> {
    let search: Search = serde_json::from_str(index_json).context("parsing the search index")?;
    let mut out = Postings::new();
    // Breadcrumbs repeat the titles (indexed under `title`): skip them.
    for field in search.index.fields.iter().filter(|f| f.as_str() != "breadcrumbs") {
        let terms = out.entry(field.clone()).or_default();
        for (doc_ref, doc) in &search.index.document_store.docs {
            let Some(text) = doc.get(field) else { continue };
            let mut counts: HashMap<String, u32> = HashMap::new();
            for t in non_ascii_terms(text) {
                *counts.entry(t).or_default() += 1;
            }
            for (term, n) in counts {
                terms
                    .entry(term)
                    .or_default()
                    .push((doc_ref.to_string(), f64::from(n).sqrt()));
            }
        }
        for docs in terms.values_mut() {
            docs.sort_by(|a, b| a.0.cmp(&b.0));
        }
    }
    Ok(out)
}

/// Append the non-ASCII postings to the search index file under `html` (none: left alone).
/// Returns the number of (term, document) pairs added.
pub fn add_korean_terms(html: &Path) -> anyhow::Result<usize> {
    let Some(file) = std::fs::read_dir(html)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("searchindex") && n.ends_with(".js"))
        })
    else {
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
    let postings = postings(&unescape_js(inner))?;
    let added = postings.values().flat_map(|t| t.values()).map(Vec::len).sum();
    let mut f = std::fs::OpenOptions::new().append(true).open(&file)?;
    write!(f, "\nwindow.hdlcKo = {};\n", serde_json::to_string(&postings)?)?;
    Ok(added)
}
