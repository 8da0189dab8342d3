//! Hangul words, which mdBook's English index drops, are collected per document and field with
//! elasticlunr's term frequency (√count); ASCII words are left to mdBook.

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
