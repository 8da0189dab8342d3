//! Korean words for the searcher: mdBook's English index drops them (see the module above), so
//! their postings are computed here and appended to the index file as `window.hdlcKo`.

use std::collections::{BTreeMap, HashMap};

/// Words of `text` that elasticlunr-rs drops: alphanumeric runs holding a non-ASCII letter.
pub fn non_ascii_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !is_alphanumeric(c))
        .filter(|w| !w.is_empty() && !w.is_ascii())
        .map(str::to_lowercase)
}

/// `char::is_alphanumeric`, with the book's common cases (ASCII, Hangul syllables) answered
/// before the general Unicode table lookup.
fn is_alphanumeric(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else {
        ('\u{AC00}'..='\u{D7A3}').contains(&c) || c.is_alphanumeric()
    }
}

/// field → term → [(doc ref, tf)], sorted for deterministic output.
pub type Postings = BTreeMap<String, BTreeMap<String, Vec<(String, f64)>>>;

/// Only the parts of mdBook's index [`postings`] reads; the rest is skipped unparsed.
#[derive(serde::Deserialize)]
struct Search<'a> {
    #[serde(borrow)]
    index: Index<'a>,
}
#[derive(serde::Deserialize)]
struct Index<'a> {
    fields: Vec<String>,
    #[serde(rename = "documentStore", borrow)]
    document_store: Store<'a>,
}
#[derive(serde::Deserialize)]
struct Store<'a> {
    #[serde(borrow)]
    docs: HashMap<&'a str, HashMap<String, String>>,
}

/// Postings of non-ASCII words for every document and field of an mdBook index (its JSON).
pub fn postings(index_json: &str) -> anyhow::Result<Postings> {
    use anyhow::Context;
    let search: Search = serde_json::from_str(index_json).context("parsing the search index")?;
    let mut out = Postings::new();
    // Breadcrumbs repeat the titles (indexed under `title`): skip them.
    for field in search.index.fields.iter().filter(|f| f.as_str() != "breadcrumbs") {
        let terms = out.entry(field.clone()).or_default();
        for (doc_ref, doc) in &search.index.document_store.docs {
            let Some(text) = doc.get(field) else { continue };
            for (term, n) in counts(text) {
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

/// How often each non-ASCII word occurs in `text`.
pub fn counts(text: &str) -> HashMap<String, u32> {
    let mut counts: HashMap<String, u32> = HashMap::new();
    for t in non_ascii_terms(text) {
        *counts.entry(t).or_default() += 1;
    }
    counts
}

/// Postings of one field being collected: term → [(document number, tf)].
#[derive(Default)]
pub struct FieldPostings(pub BTreeMap<String, Vec<(u32, f64)>>);

impl FieldPostings {
    /// Add the words of document `doc`'s `text`.
    pub fn add(&mut self, doc: u32, text: &str) {
        for (term, n) in counts(text) {
            self.0.entry(term).or_default().push((doc, f64::from(n).sqrt()));
        }
    }
}
