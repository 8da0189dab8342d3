//! The post-build verifier finds broken links, broken anchors and external resources in a
//! built HTML tree, and accepts links to the web and namespace URLs.

use hdlc::verify::verify_tree;

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn finds_every_kind_of_problem_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    write(
        r,
        "index.html",
        r##"<html><head><link rel="stylesheet" href="css/a.css"><script src="https://cdn.example/x.js"></script></head>
<body><h2 id="top">t</h2><a href="cards/a.html#sec">ok</a> <a href="cards/a.html#nope">bad anchor</a>
<a href="cards/missing.html">bad link</a> <a href="https://example.org/paper">reference</a> <a href="#top">self</a>
<img src="img/%ED%95%9C.png"></body></html>"##,
    );
    write(
        r,
        "cards/a.html",
        r#"<h2 id="sec">s</h2><a href="../index.html">up</a><a href="a.html?line=x">q</a>"#,
    );
    write(r, "img/한.png", "png");
    write(r, "css/a.css", "@namespace m url('http://www.w3.org/1998/Math/MathML');\n@font-face { src: url('f.woff2'); }\n.x { background: url(https://cdn.example/bg.png); }");
    let problems = verify_tree(r);
    let urls: Vec<&str> = problems.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls.len(), 5, "{problems:#?}");
    assert!(urls.contains(&"https://cdn.example/x.js"));
    assert!(urls.contains(&"cards/a.html#nope"));
    assert!(urls.contains(&"cards/missing.html"));
    assert!(urls.contains(&"https://cdn.example/bg.png"));
    assert!(urls.contains(&"f.woff2"), "missing font file is reported");
    assert!(
        !urls.contains(&"https://example.org/paper"),
        "links to the web are navigation, not resources"
    );
}
