//! The built book's search index: card pages indexed from their own text, and Korean words.
//!
//! Cards: mdBook is told not to index `cards/` (`write.rs`); its index of the other pages is
//! read back and rebuilt with the card documents of [`crate::search_docs`] added, with the same
//! elasticlunr crate, fields and tokenizer mdBook uses, so its searcher reads it unchanged.
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

use crate::search_docs::Doc;
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
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
    let docs = &search.index.document_store.docs;
    Ok(postings_of(
        &search.index.fields,
        docs.iter()
            .map(|(r, d)| (r.to_string(), |f: &str| d.get(f).map(String::as_str))),
    ))
}

/// Postings of non-ASCII words of `docs` (ref, field lookup) in `fields`.
fn postings_of<'a, F>(fields: &[String], docs: impl Iterator<Item = (String, F)> + Clone) -> Postings
where
    F: Fn(&str) -> Option<&'a str>,
{
    let mut out = Postings::new();
    // Breadcrumbs repeat the titles (indexed under `title`): skip them.
    for field in fields.iter().filter(|f| f.as_str() != "breadcrumbs") {
        let terms = out.entry(field.clone()).or_default();
        for (doc_ref, doc) in docs.clone() {
            let Some(text) = doc(field) else { continue };
            let mut counts: HashMap<String, u32> = HashMap::new();
            for t in non_ascii_terms(text) {
                *counts.entry(t).or_default() += 1;
            }
            for (term, n) in counts {
                terms
                    .entry(term)
                    .or_default()
                    .push((doc_ref.clone(), f64::from(n).sqrt()));
            }
        }
        for docs in terms.values_mut() {
            docs.sort_by(|a, b| a.0.cmp(&b.0));
        }
    }
    out
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

/// The file mdBook writes, in the shape its searcher reads.
#[derive(Serialize)]
struct IndexFile {
    results_options: serde_json::Value,
    search_options: serde_json::Value,
    doc_urls: Vec<String>,
    index: elasticlunr::Index,
}

const FIELDS: [&str; 3] = ["title", "body", "breadcrumbs"];

/// mdBook's tokenizer: elasticlunr's English split (whitespace and `-`), lowercased, words over
/// 80 bytes dropped.
fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '-')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_lowercase())
        .filter(|s| s.len() <= 80)
        .collect()
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
    let mut docs: Vec<Doc> = Vec::with_capacity(md.doc_urls.len() + cards.len());
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
    docs.extend(cards.iter().cloned());
    let mut builder = elasticlunr::IndexBuilder::new();
    for f in FIELDS {
        builder = builder.add_field_with_tokenizer(f, Box::new(tokenize));
    }
    let mut index = builder.build();
    for (i, d) in docs.iter().enumerate() {
        index.add_doc(&i.to_string(), [&d.title, &d.body, &d.breadcrumbs]);
    }
    let out = IndexFile {
        results_options: md.results_options,
        search_options: md.search_options,
        doc_urls: docs.iter().map(|d| d.url.clone()).collect(),
        index,
    };
    // Through a Value, as mdBook does: its maps are sorted, so the file is stable.
    let json = serde_json::to_string(&serde_json::to_value(&out)?)?;
    let fields: Vec<String> = FIELDS.iter().map(|f| f.to_string()).collect();
    let ko = postings_of(
        &fields,
        docs.iter().enumerate().map(|(i, d)| {
            (i.to_string(), move |f: &str| match f {
                "title" => Some(d.title.as_str()),
                "body" => Some(d.body.as_str()),
                _ => None,
            })
        }),
    );
    let js = format!(
        "{PREFIX}{}{SUFFIX}\nwindow.hdlcKo = {};\n",
        json.replace('\\', "\\\\").replace('\'', "\\'"),
        serde_json::to_string(&ko)?
    );
    std::fs::write(&file, js).with_context(|| format!("writing {}", file.display()))?;
    Ok(docs.len())
}
