//! Hangul words, which mdBook's English index drops, are collected per document and field with
//! elasticlunr's term frequency (√count); ASCII words go to the elasticlunr index, which the build
//! rebuilds from mdBook's pages and the card documents.

use hdlc::search_index::{non_ascii_terms, postings};

#[test]
fn splits_at_punctuation_and_keeps_only_non_ascii_words() {
    let t: Vec<String> = non_ascii_terms("산술 강도(Arithmetic Intensity)는 FLOP/byte, 강도를!").collect();
    assert_eq!(t, ["산술", "강도", "는", "강도를"]);
}

#[test]
fn postings_per_field_with_sqrt_tf() {
    let index = r#"{"doc_urls":[],"index":{"fields":["title","body"],"ref":"id","documentStore":{"docs":{
        "0":{"title":"산술 강도","body":"강도 강도 roofline"},
        "1":{"title":"Roofline","body":"강도는 크다"}},"docInfo":{},"length":2,"save":true},
        "index":{},"pipeline":[]}}"#;
    let p = postings(index).unwrap();
    assert_eq!(p["title"]["산술"], vec![("0".to_string(), 1.0)]);
    assert_eq!(p["body"]["강도"], vec![("0".to_string(), 2f64.sqrt())]);
    assert_eq!(p["body"]["강도는"], vec![("1".to_string(), 1.0)]);
    assert!(
        !p["body"].contains_key("roofline"),
        "ASCII words stay with mdBook's own index"
    );
    assert!(!p["title"].contains_key("roofline"));
}

/// The rebuilt index keeps mdBook's pages and options, adds the card documents after them, and
/// carries the Korean postings of both.
#[test]
fn rebuild_adds_card_documents_after_mdbooks_pages() {
    use hdlc::search_docs::Doc;
    let dir = tempfile::tempdir().unwrap();
    let json = r#"{"doc_urls":["index.html#home"],"index":{"documentStore":{"docs":{"0":{"title":"Home","body":"책 소개","breadcrumbs":"Home"}},"docInfo":{},"length":1,"save":true},"fields":["title","body","breadcrumbs"],"index":{},"lang":"English","pipeline":[],"ref":"id","version":"0.9.5"},"results_options":{"limit_results":30,"teaser_word_count":30},"search_options":{"bool":"AND","expand":true,"fields":{}}}"#;
    let file = dir.path().join("searchindex-abc.js");
    std::fs::write(
        &file,
        format!("window.search = Object.assign(window.search, JSON.parse('{json}'));"),
    )
    .unwrap();
    let card = Doc {
        url: "cards/x.html#산술-강도".into(),
        title: "산술 강도".into(),
        body: "FLOP per byte, 강도를 잰다".into(),
        breadcrumbs: "경로 » 산술 강도".into(),
    };
    assert_eq!(hdlc::search_index::finish(dir.path(), &[card]).unwrap(), 2);
    let text = std::fs::read_to_string(&file).unwrap();
    let inner = text
        .split("JSON.parse('")
        .nth(1)
        .and_then(|t| t.split("'));").next())
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(inner).unwrap();
    assert_eq!(
        v["doc_urls"],
        serde_json::json!(["index.html#home", "cards/x.html#산술-강도"])
    );
    assert_eq!(v["results_options"]["limit_results"], 30);
    assert_eq!(
        v["index"]["documentStore"]["docs"]["1"]["body"],
        "FLOP per byte, 강도를 잰다"
    );
    assert!(
        v["index"]["index"]["body"]["root"]["f"]["l"]["o"]["p"].is_object(),
        "English words of the card are in mdBook's inverted index"
    );
    let ko = text.split("window.hdlcKo = ").nth(1).unwrap();
    assert!(
        ko.contains("\"강도를\":[[\"1\"") && ko.contains("\"소개\":[[\"0\""),
        "{ko}"
    );
}
