//! Fuzz-style property tests of the three parsers an author feeds by hand: card front matter,
//! `paths.yaml` and figure blocks.
//!
//! Why: these parsers see whatever an author types, half-finished, mid-edit (`serve` rebuilds on
//! every save). Whatever the input — arbitrary bytes, or a valid file with a few random edits —
//! they must not panic, and every error must point at a place in the file (`file:line`), so the
//! author can jump to it. The one exception is a file with no content at all, which is reported
//! for the whole file (line 0), as the `empty-file` fixture expects.

use hdlc::diag::{Diagnostics, Severity};
use hdlc::figspec::parse_figure;
use hdlc::load::{card_from_bytes, paths_from_bytes};
use proptest::prelude::*;
use std::path::Path;

const CARD: &str = "---\nid: arithmetic-intensity\ntitle: 산술 강도 (Arithmetic Intensity)\n\
summary: \"연산량을 메모리 이동량으로 나눈 값: 커널이 어느 벽에 부딪히는지\"\n\
requires: [matmul-flops, memory-traffic]\ntags: [performance]\n---\n## 왜 중요한가\n\n본문 $I = F/B$\n";

const PATHS: &str = "- id: roofline\n  title: \"행렬 연산에서 Roofline 분석까지\"\n  summary: \"요약\"\n\
  color: \"#e6194b\"\n  start: 1\n  stations: [matmul-flops, memory-traffic, arithmetic-intensity]\n\
- id: kernels\n  title: \"CUDA 커널\"\n  summary: \"요약\"\n  color: \"#3cb44b\"\n  planned: true\n  stations: []\n";

const FIGURES: &[&str] = &[
    "bench: sgemm\nshow: ladder\ncaption: 한 줄 설명\nsize: 4096\n",
    "bench: bandwidth\nshow: scaling\n",
    "calc: matmul\nm: 4096\nn: 4096\nk: 4096\ndtype: bf16\n",
    "calc: training-memory\nmodel: gpt2-124m\nbatch: 8\nseq: 1024\n",
    "bench: pt_forward\nshow: scaling\nmetric: tflops\nwhere: {batch: 1}\nvariants: [eager, compiled]\nx: seq\n",
    "bench: pt_train\nshow: curve\nseries: loss\n",
    "bench: pt_forward\nshow: table\nloc:\n  triton: labs/triton/rmsnorm.py#rmsnorm_kernel\n  cuda: rmsnorm.cu#rmsnorm_block_vec4\n",
];

/// Lab families the figure parser is told about (in a book they come from the lab manifests).
fn labs() -> Vec<String> {
    vec!["pt_forward".into(), "pt_train".into()]
}

/// Fragments that YAML (or our line scanning) treats specially.
const TOKENS: &[&str] = &[
    ":",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "\t",
    "\n",
    "#",
    "&a ",
    "*a",
    "!!binary ",
    "|",
    ">",
    "%YAML 1.2\n",
    "---\n",
    "...\n",
    "\u{feff}",
    "\0",
    "\r",
    "  ",
    "id: x\n",
    "size: -1",
    "size: 1e400",
    "requires: x\n",
    "stations: [a, [b]]\n",
    "? ",
    "<<: *a\n",
    "~",
    "null",
    "0x10",
    "\u{85}",
    "\u{2028}",
    "🦀",
    "calc:",
    "bench:",
    "show: roofline",
    "- id:",
    "stations:",
    "m: 99999999999999999999999",
];

/// One random edit of a text: insert a token, delete a run, duplicate or swap lines.
type Edit = (u8, usize, usize, usize);

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(kind, a, b, t) in edits {
        match kind % 4 {
            0 => {
                let at = a % (chars.len() + 1);
                let tok = TOKENS[t % TOKENS.len()];
                chars.splice(at..at, tok.chars());
            }
            1 if !chars.is_empty() => {
                let at = a % chars.len();
                let end = (at + 1 + b % 12).min(chars.len());
                chars.drain(at..end);
            }
            2 | 3 => {
                let s: String = chars.iter().collect();
                let mut lines: Vec<&str> = s.split('\n').collect();
                let (i, j) = (a % lines.len(), b % lines.len());
                if kind % 4 == 2 {
                    let l = lines[i];
                    lines.insert(j, l);
                } else {
                    lines.swap(i, j);
                }
                chars = lines.join("\n").chars().collect();
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(
        (any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>()),
        0..8,
    )
}

/// Byte edits on top of text edits: set some bytes to anything (breaks UTF-8 mid-line too).
fn flip(mut bytes: Vec<u8>, flips: &[(usize, u8)]) -> Vec<u8> {
    for &(at, v) in flips {
        if !bytes.is_empty() {
            let n = bytes.len();
            bytes[at % n] = v;
        }
    }
    bytes
}

fn flips() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>()), 0..3)
}

/// Lines an error may name: 1 ..= lines + 1 (the end of a file is one past its last line).
fn line_range(bytes: &[u8]) -> std::ops::RangeInclusive<usize> {
    1..=bytes.iter().filter(|&&b| b == b'\n').count() + 2
}

/// A file that holds nothing (or only whitespace) is reported for the whole file.
fn blank(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|t| t.trim_start_matches('\u{feff}').trim().is_empty())
}

/// Every error names `rel` and a line inside the file; returns how many errors there were.
fn located_errors(diags: &Diagnostics, rel: &Path, bytes: &[u8]) -> Result<usize, TestCaseError> {
    let mut n = 0;
    for d in diags.iter().filter(|d| d.severity == Severity::Error) {
        n += 1;
        prop_assert_eq!(&d.file, rel);
        if !blank(bytes) {
            prop_assert!(
                line_range(bytes).contains(&d.line) && d.col >= 1,
                "error without a place in the file: {} (input {:?})",
                d,
                String::from_utf8_lossy(bytes)
            );
        }
    }
    Ok(n)
}

fn check_card(bytes: &[u8]) -> Result<(), TestCaseError> {
    let rel = Path::new("cards/basics/x.md");
    let mut diags = Diagnostics::new();
    let card = card_from_bytes(bytes, rel, &mut diags);
    let errors = located_errors(&diags, rel, bytes)?;
    prop_assert!(card.is_some() || errors > 0, "card rejected without an error");
    Ok(())
}

fn check_paths(bytes: &[u8]) -> Result<(), TestCaseError> {
    let rel = Path::new("paths.yaml");
    let mut diags = Diagnostics::new();
    let _ = paths_from_bytes(bytes, rel, &mut diags);
    located_errors(&diags, rel, bytes)?;
    Ok(())
}

fn check_figure(body: &str) -> Result<(), TestCaseError> {
    if let Err((line, msg, _)) = parse_figure(body, &hdlc::render::figures::known(&labs())) {
        prop_assert!(
            line_range(body.as_bytes()).contains(&line),
            "figure error without a line in the block: {}: {} (body {:?})",
            line,
            msg,
            body
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn card_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check_card(&bytes)?;
        let mut framed = b"---\n".to_vec();
        framed.extend(&bytes);
        check_card(&framed)?;
    }

    #[test]
    fn card_near_valid(e in edits(), f in flips()) {
        let text = apply(CARD, &e);
        check_card(text.as_bytes())?;
        check_card(&flip(text.into_bytes(), &f))?;
    }

    #[test]
    fn paths_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check_paths(&bytes)?;
    }

    #[test]
    fn paths_near_valid(e in edits(), f in flips()) {
        let text = apply(PATHS, &e);
        check_paths(text.as_bytes())?;
        check_paths(&flip(text.into_bytes(), &f))?;
    }

    #[test]
    fn figure_arbitrary_text(body in ".{0,200}") {
        check_figure(&body)?;
    }

    #[test]
    fn figure_near_valid(i in 0..FIGURES.len(), e in edits()) {
        check_figure(&apply(FIGURES[i], &e))?;
    }
}

/// YAML 1.1 line breaks (lone `\r`, NEL, U+2028/9) that serde_yaml counts and editors do not.
#[test]
fn yaml_only_line_breaks_map_to_lines_of_the_block() {
    assert_eq!(hdlc::diag::yaml_line("a\r\rb", 3), 1);
    assert_eq!(hdlc::diag::yaml_line("a\n\u{85}b\nc", 4), 3);
    assert_eq!(hdlc::diag::yaml_line("a\r\nb", 2), 2);
    for body in [
        "\r\r",
        "bench: sgemm\nshow: ladder\ncaption: \u{85}한 줄\u{85}  4096\n",
    ] {
        let Err((line, msg, _)) = parse_figure(body, &hdlc::render::figures::known(&labs())) else {
            panic!("{body:?} parsed")
        };
        assert!(line <= body.matches('\n').count() + 1, "{line}: {msg}");
    }
}
