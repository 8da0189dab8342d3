//! End-to-end: `build` on a copy of the valid fixture writes a complete book; a failing build
//! leaves the previous book untouched; rendered pages match their snapshots.

mod common;

use assert_cmd::Command;
use hdlc::diag::Diagnostics;
use hdlc::render::{render, FigureData};
use hdlc::site::Site;
use std::path::{Path, PathBuf};

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/books")
        .join(case)
}

fn build(root: &Path) -> std::process::Output {
    Command::cargo_bin("hdlc")
        .unwrap()
        .arg("--root")
        .arg(root)
        .args(["build", "--no-gpu", "--no-cpu-bench"])
        .output()
        .unwrap()
}

#[test]
fn build_writes_every_page_and_a_failed_build_keeps_the_old_book() {
    let tmp = common::fixture_book("valid");
    let out = build(tmp.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    for stage in ["load", "validate", "measure", "render", "write"] {
        assert!(
            stdout.contains(&format!("{stage} ")),
            "timing of `{stage}` missing: {stdout}"
        );
    }
    let html = tmp.path().join("book/html");
    for page in [
        "index.html",
        "map.html",
        "cards.html",
        "cards/flops.html",
        "cards/bytes.html",
        "cards/intensity.html",
        "paths/first.html",
        "paths/second.html",
        "paths/later.html",
        "searchindex.js",
        "assets/math/font/latinmodern-math.woff2",
    ] {
        assert!(
            html.join(page).is_file() || page == "searchindex.js",
            "missing {page}"
        );
    }
    let card = std::fs::read_to_string(html.join("cards/intensity.html")).unwrap();
    assert!(card.contains("<math"), "math is rendered as MathML");
    assert!(!card.contains("card:"), "card: links are resolved");
    assert!(card.contains("환승"), "intensity is on two lines: an interchange");
    let flops = std::fs::read_to_string(html.join("cards/flops.html")).unwrap();
    assert!(
        flops.contains(r#"href="bytes.html""#),
        "card link resolved to the page: {flops}"
    );
    assert!(!tmp.path().read_dir().unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".build-")));

    // Break a card: the build fails, names the file, and the old book is still there.
    let before = std::fs::read_to_string(html.join("index.html")).unwrap();
    std::fs::write(
        tmp.path().join("cards/basics/bytes.md"),
        "---\nid: bytes\ntitle: [\n---\n",
    )
    .unwrap();
    let out = build(tmp.path());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cards/basics/bytes.md:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(std::fs::read_to_string(html.join("index.html")).unwrap(), before);
    assert!(html.join("cards/intensity.html").is_file());
}

fn rendered() -> hdlc::render::Pages {
    let site = Site::load(&fixture("valid"));
    assert!(!site.diags.has_errors());
    let mut diags = Diagnostics::new();
    let figs = FigureData {
        files: &[],
        local_device: None,
    };
    render(&site.book, &site.graph, &figs, &mut diags).unwrap()
}

#[test]
fn card_page_snapshot() {
    insta::assert_snapshot!(rendered()[Path::new("cards/intensity.md")]);
}

#[test]
fn path_page_snapshot() {
    insta::assert_snapshot!(rendered()[Path::new("paths/first.md")]);
}

#[test]
fn summary_lists_each_card_once() {
    let pages = rendered();
    let summary = &pages[Path::new("SUMMARY.md")];
    for id in ["flops", "bytes", "intensity"] {
        assert_eq!(
            summary.matches(&format!("(cards/{id}.md)")).count(),
            1,
            "{summary}"
        );
    }
    assert!(summary.contains("[나중 경로](paths/later.md)"));
}

#[test]
fn front_page_lists_start_paths_and_planned_paths() {
    let pages = rendered();
    let index = &pages[Path::new("index.md")];
    assert!(index.contains("처음이라면 여기부터"));
    assert!(index.contains("전체 지식 지도"));
    assert!(index.contains("모든 학습 경로"));
    assert!(index.contains("준비 중"), "the planned path is marked");
    assert!(index.contains(r#"<span class="hdlc-start-num">1</span><strong>첫 경로</strong>"#));
}
