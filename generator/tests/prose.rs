//! Prose bound to the measurements, on the real book.
//!
//! - A reader's GPU whose numbers contradict a claim: the build still succeeds (a reader's
//!   measurement never fails the build), and the page marks the sentence with the numbers.
//! - No card narrates project history.

mod common;

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A copy of the real book's sources (cards, paths, kernels with their results, book assets).
fn real_book_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["cards", "kernels", "book/assets", "book/theme"] {
        if repo().join(d).is_dir() {
            common::copy_tree(&repo().join(d), &tmp.path().join(d));
        }
    }
    for f in ["paths.yaml", "book/book.toml"] {
        std::fs::copy(repo().join(f), tmp.path().join(f)).unwrap();
    }
    tmp
}

#[test]
fn a_readers_slower_kernel_marks_the_claim_and_the_build_succeeds() {
    let book = real_book_copy();
    let results = book.path().join("kernels/results");
    let h100 = std::fs::read_to_string(results.join("nvidia-h100-80gb-hbm3.json")).unwrap();
    let mut reader: serde_json::Value = serde_json::from_str(&h100).unwrap();
    reader["device"]["name"] = "NVIDIA GeForce RTX 4090 (test reader)".into();
    // The reader's ping-pong attention kernel is three times slower at the shape the
    // triton-flash-attention card compares with the Triton kernel.
    let mut slowed = 0;
    for r in reader["records"].as_array_mut().unwrap() {
        let p = &r["params"];
        if r["family"] == "attention"
            && r["variant"] == "flash_wgmma_pingpong"
            && p["n"] == 4096
            && p["d"] == 128
            && p["causal"] == 0
        {
            let ms = r["outcome"]["median_ms"].as_f64().unwrap();
            r["outcome"]["median_ms"] = (ms * 3.0).into();
            slowed += 1;
        }
    }
    assert_eq!(slowed, 1, "the record the card's claim reads");
    std::fs::write(
        results.join("rtx-4090-test.json"),
        serde_json::to_string(&reader).unwrap(),
    )
    .unwrap();

    let out = assert_cmd::Command::cargo_bin("hdlc")
        .unwrap()
        .arg("--root")
        .arg(book.path())
        .args(["build", "--no-gpu", "--no-cpu-bench", "--no-labs"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "a reader's numbers never fail the build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = book.path().join("book/html");
    let page = std::fs::read_to_string(html.join("cards/triton-flash-attention.html")).unwrap();
    assert!(page.contains("hdlc-claim-false"), "the sentence is marked");
    let note = page
        .split("hdlc-claim-note")
        .nth(1)
        .expect("the numbers follow the sentence");
    assert!(note.contains("NVIDIA GeForce RTX 4090 (test reader)"), "{note}");
    assert!(note.contains("flash_wgmma_pingpong"), "{note}");
    // The shipped machines still hold it: the other claims on the page keep their check mark.
    assert!(page.contains("class=\"hdlc-check\""));
    // Only claims that read the slowed record are marked, wherever they are.
    for e in walkdir::WalkDir::new(html.join("cards")).into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for note in text.split("class=\"hdlc-claim-note\">").skip(1) {
            let note = note.split("</span>").next().unwrap_or("");
            assert!(
                note.contains("flash_wgmma_pingpong"),
                "{}: {note}",
                e.path().display()
            );
        }
    }
}

/// Phrases that narrate how the book was made rather than what it measures.
const HISTORY: &[&str] = &[
    "첫 측정",
    "이전 판",
    "첫 판",
    "별도 이슈",
    "다중 GPU 이슈",
    "이슈에서",
    "결과가 아직 없으면",
    "아직 측정",
    "실패로 남아 있을 수",
    "이 카드를 쓸 때",
    "이 카드를 쓰며",
    "이 글을 쓰는 시점",
    "나중에 측정",
    "다음 세션",
];

#[test]
fn no_card_narrates_project_history() {
    let mut found = Vec::new();
    for e in walkdir::WalkDir::new(repo().join("cards")).into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            for p in HISTORY.iter().filter(|p| line.contains(**p)) {
                found.push(format!("{}:{}: `{p}`", e.path().display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "project history in cards:\n{}",
        found.join("\n")
    );
}
