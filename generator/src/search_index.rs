//! Korean search for the built book.
//!
//! mdBook builds its elasticlunr index with an English pipeline whose trimmer keeps only
//! `[0-9a-z]`: every Hangul word is trimmed to nothing and never indexed, so a Korean query finds
//! nothing. After mdBook has written `searchindex-*.js`, this adds the words that contain
//! non-ASCII letters (split at punctuation, lowercased) to the same inverted index, with
//! elasticlunr's own term-frequency rule (√count). The query side gets a Unicode-aware trimmer
//! from `book/theme/head.hbs`; prefix expansion then lets "강도" find "강도를" and "강도는".

use anyhow::{bail, Context};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

const PREFIX: &str = "window.search = Object.assign(window.search, JSON.parse('";
const SUFFIX: &str = "'));";

/// Words of `text` that elasticlunr-rs drops: alphanumeric runs holding a non-ASCII letter.
pub fn non_ascii_terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.is_ascii())
        .map(|w| w.to_lowercase())
        .collect()
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

/// Add non-ASCII terms to the search index files under `html`. A book without search
/// (no index file) is left alone.
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
    let mut data: Value = serde_json::from_str(&unescape_js(inner)).context("parsing the search index")?;
    let added = add_terms(&mut data)?;
    let json = serde_json::to_string(&data)?;
    let escaped = json.replace('\\', "\\\\").replace('\'', "\\'");
    std::fs::write(&file, format!("{PREFIX}{escaped}{SUFFIX}"))?;
    Ok(added)
}

/// Insert the terms into the elasticlunr index held in `data` (`{ index: {...} }`).
fn add_terms(data: &mut Value) -> anyhow::Result<usize> {
    let index = data.get_mut("index").context("no index")?;
    let fields: Vec<String> = index["fields"]
        .as_array()
        .context("no fields")?
        .iter()
        .filter_map(|f| f.as_str().map(String::from))
        .collect();
    let docs: Vec<(String, Map<String, Value>)> = index["documentStore"]["docs"]
        .as_object()
        .context("documents are not stored")?
        .iter()
        .filter_map(|(k, v)| v.as_object().map(|o| (k.clone(), o.clone())))
        .collect();
    let mut added = 0;
    for (doc_ref, doc) in &docs {
        for field in &fields {
            let Some(text) = doc.get(field).and_then(Value::as_str) else {
                continue;
            };
            let mut counts: BTreeMap<String, u32> = BTreeMap::new();
            for t in non_ascii_terms(text) {
                *counts.entry(t).or_default() += 1;
            }
            if counts.is_empty() {
                continue;
            }
            let total: u32 = counts.values().sum();
            if let Some(n) = index["documentStore"]["docInfo"][doc_ref.as_str()][field.as_str()].as_u64() {
                index["documentStore"]["docInfo"][doc_ref.as_str()][field.as_str()] =
                    json!(n + u64::from(total));
            }
            let root = index["index"][field.as_str()]["root"]
                .as_object_mut()
                .context("no field index")?;
            for (term, count) in counts {
                let mut node = &mut *root;
                for c in term.chars() {
                    node = node
                        .entry(c.to_string())
                        .or_insert_with(|| json!({}))
                        .as_object_mut()
                        .context("bad trie node")?;
                }
                let docs = node
                    .entry("docs")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .context("bad docs")?;
                if docs
                    .insert(doc_ref.clone(), json!({ "tf": (count as f64).sqrt() }))
                    .is_none()
                {
                    let df = node.get("df").and_then(Value::as_u64).unwrap_or(0);
                    node.insert("df".into(), json!(df + 1));
                }
                added += 1;
            }
        }
    }
    Ok(added)
}
