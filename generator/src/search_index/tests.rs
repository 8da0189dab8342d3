//! The hand-written index must be byte for byte what elasticlunr and serde_json write.

use super::*;

/// Documents with what the writer must get right: refs past 9 (so "10" sorts before "2"),
/// Korean words, stems, stop words, quotes and backslashes, empty fields.
fn docs() -> Vec<Doc> {
    let mut v = Vec::new();
    for i in 0..23 {
        v.push(Doc {
            url: format!("cards/c{i}.html#h-{i}"),
            title: format!("카드 {i} Title 'quoted' \\ back"),
            body: format!(
                "the running runners ran {i} times — 강도를 강도 강도는 FLOP/byte, \"q\" d df docs e {}",
                "word ".repeat(i % 4)
            ),
            breadcrumbs: if i % 5 == 0 {
                String::new()
            } else {
                format!("경로 » 카드 {i}")
            },
        });
    }
    v
}

/// The index file as the previous implementation made it: elasticlunr's `Index`, serialized
/// through a `serde_json::Value`, and the Korean postings from a `BTreeMap`.
fn reference(md: &MdbookIndex, docs: &[&Doc]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct IndexFile<'a> {
        results_options: &'a serde_json::Value,
        search_options: &'a serde_json::Value,
        doc_urls: Vec<String>,
        index: elasticlunr::Index,
    }
    fn tokenize(text: &str) -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || c == '-')
            .filter(|s| !s.is_empty())
            .map(|s| s.trim().to_lowercase())
            .filter(|s| s.len() <= 80)
            .collect()
    }
    let mut b = elasticlunr::IndexBuilder::new();
    for f in json::FIELDS {
        b = b.add_field_with_tokenizer(f, Box::new(tokenize));
    }
    let mut index = b.build();
    for (i, d) in docs.iter().enumerate() {
        index.add_doc(&i.to_string(), [&d.title, &d.body, &d.breadcrumbs]);
    }
    let out = IndexFile {
        results_options: &md.results_options,
        search_options: &md.search_options,
        doc_urls: docs.iter().map(|d| d.url.clone()).collect(),
        index,
    };
    let json = serde_json::to_string(&serde_json::to_value(&out).unwrap()).unwrap();
    let mut ko = Postings::new();
    for (field, get) in [("title", 0), ("body", 1)] {
        let terms = ko.entry(field.to_string()).or_default();
        for (i, d) in docs.iter().enumerate() {
            let text = if get == 0 { &d.title } else { &d.body };
            for (term, n) in korean::counts(text) {
                terms
                    .entry(term)
                    .or_default()
                    .push((i.to_string(), f64::from(n).sqrt()));
            }
        }
        for v in terms.values_mut() {
            v.sort_by(|a, b| a.0.cmp(&b.0));
        }
    }
    format!(
        "{PREFIX}{}{SUFFIX}\nwindow.hdlcKo = {};\n",
        json.replace('\\', "\\\\").replace('\'', "\\'"),
        serde_json::to_string(&ko).unwrap()
    )
    .into_bytes()
}

#[test]
fn the_index_is_written_as_elasticlunr_and_serde_json_write_it() {
    let md: MdbookIndex = serde_json::from_str(
        r#"{"doc_urls":[],"index":{"documentStore":{"docs":{}}},
            "results_options":{"limit_results":30,"teaser_word_count":30},
            "search_options":{"bool":"AND","expand":true,"fields":{"title":{"boost":2}}}}"#,
    )
    .unwrap();
    let all = docs();
    let (pages, cards) = all.split_at(4);
    // Cards indexed first, as in a build; pages after, numbered before them.
    let Prepared { cards, mut index } = prepare(cards.to_vec());
    let pipeline = json::pipeline();
    for (i, d) in pages.iter().enumerate() {
        index.add(&pipeline, i as u32, d);
    }
    let docs: Vec<&Doc> = pages.iter().chain(&cards).collect();
    let ours = index_js(&md, &index, &docs, pages.len());
    let theirs = reference(&md, &docs);
    assert_eq!(
        String::from_utf8(ours).unwrap(),
        String::from_utf8(theirs).unwrap()
    );
}
