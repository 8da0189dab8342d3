//! The built book in a real browser with the network cut: the front page, a card with math and
//! a measured figure, the map and a Korean search make zero requests beyond 127.0.0.1, and the
//! search finds the card for "산술 강도".

mod common;

#[test]
fn zero_network_requests_and_korean_search() {
    let Some(chrome) = common::chromium() else { return };
    let book = common::build_real_book();
    let base = common::serve(&book.path().join("html"));
    let pages = [
        "index.html".to_string(),
        "cards/arithmetic-intensity.html".to_string(),
        "cards/roofline-model.html".to_string(),
        "map.html".to_string(),
        "index.html?search=%EC%82%B0%EC%88%A0%20%EA%B0%95%EB%8F%84".to_string(),
    ];
    let mut total_seen = 0;
    for page in &pages {
        let (dom, log) = common::load(&chrome, &format!("{base}/{page}"), &[]);
        let (external, seen) = common::external_page_requests(&log, &base);
        assert!(external.is_empty(), "{page} requested the network: {external:?}");
        assert!(
            seen > 3,
            "{page}: the network log saw only {seen} page requests: the check would be vacuous"
        );
        total_seen += seen;
        assert!(dom.contains("<main>"), "{page} did not render");
        if page.contains("arithmetic-intensity") {
            assert!(dom.contains("<math"), "math is MathML in the page");
        }
        if page.contains("search=") {
            let results = dom.split("mdbook-searchresults\"").nth(1).unwrap_or("");
            assert!(
                results.contains("cards/arithmetic-intensity.html"),
                "Korean search did not find the card:\n{}",
                &results[..results.len().min(600)]
            );
        }
    }
    eprintln!("{} pages, {total_seen} page requests, 0 external", pages.len());
}
