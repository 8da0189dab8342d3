//! One fixture book per kind of author error: `check` must exit non-zero and print exactly the
//! expected diagnostics (message, file, line, column, hint). Set `UPDATE_EXPECT=1` to rewrite
//! the expected files after a deliberate change, then review the diff.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/books")
}

fn check(case: &str) -> (bool, String) {
    let root = fixtures().join(case);
    let out = Command::cargo_bin("hdlc")
        .unwrap()
        .arg("--root")
        .arg(&root)
        .arg("check")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stderr).unwrap())
}

fn expect(case: &str, success: bool) {
    let (ok, stderr) = check(case);
    let file = fixtures().join(case).join("expected.txt");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&file, &stderr).unwrap();
    }
    let want = std::fs::read_to_string(&file).unwrap();
    assert_eq!(stderr, want, "diagnostics of fixture `{case}` changed");
    assert_eq!(ok, success, "exit status of `check` on `{case}`:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn valid_book_passes() {
    expect("valid", true);
    let (_, stderr) = check("valid");
    assert!(stderr.is_empty(), "a valid book prints no diagnostics: {stderr}");
}

#[test]
fn orphan_card_is_a_warning_only() {
    expect("orphan-card", true);
    assert!(check("orphan-card")
        .1
        .contains("warning: cards/lonely.md:2:1: card `lonely` is on no learning path"));
}

macro_rules! failing {
    ($($name:ident => $case:literal contains $needle:literal;)*) => {$(
        #[test]
        fn $name() {
            expect($case, false);
            let (_, stderr) = check($case);
            assert!(stderr.contains($needle), "`{}` should report `{}`:\n{}", $case, $needle, stderr);
        }
    )*};
}

failing! {
    duplicate_id => "duplicate-id" contains "error: cards/other/flops.md:2:1: duplicate card id `flops`";
    id_mismatch => "id-mismatch" contains "error: cards/bytes2.md:2:1: card id `bytes` differs from its file name `bytes2.md`";
    unknown_requires => "unknown-requires" contains "error: cards/intensity.md:5:19: unknown card `byts` in requires\n  hint: did you mean `bytes`?";
    cycle => "cycle" contains "prerequisite cycle: flops → intensity → flops";
    station_order => "station-order" contains "error: paths.yaml:6:14: path `first`: station `intensity` comes before its prerequisite `flops`";
    dangling_link => "dangling-link" contains "error: cards/basics/bytes.md:10:15: link to unknown card `card:nowhere`";
    unknown_key => "unknown-key" contains "error: cards/basics/bytes.md:7:1: front matter: unknown field `author`";
    empty_file => "empty-file" contains "error: cards/basics/bytes.md: empty card file";
    malformed_front_matter => "malformed-front-matter" contains "error: cards/basics/bytes.md:3:8: front matter: title: invalid type";
    malformed_math => "malformed-math" contains "error: cards/basics/bytes.md:12:11: malformed math `\\foo x`";
    unbalanced_math => "malformed-math" contains "error: cards/basics/bytes.md:10:8: `$` that does not start math";
    unknown_figure => "unknown-figure" contains "error: cards/intensity.md:11:1: unknown benchmark `nonsense`";
    unknown_station => "unknown-station" contains "error: paths.yaml:13:7: path `second`: unknown station `intensty`\n  hint: did you mean `intensity`?";
    malformed_paths => "malformed-paths" contains "error: paths.yaml:4:3: paths.yaml: .[0]: unknown field `colour`";
    no_front_matter => "no-front-matter" contains "error: cards/basics/bytes.md:1:1: missing front matter";
    missing_paths => "missing-paths" contains "error: paths.yaml: cannot read paths.yaml";
    unknown_include => "unknown-include" contains "error: cards/basics/bytes.md:14:1: include: no file `kernels/nothere.cu`";
    false_part_of_and => "claims" contains "error: cards/basics/bytes.md:11:1: claim is false on the shipped results: bandwidth/copy_naive 900 GB/s > bandwidth/copy_grid_stride 1,000 GB/s is false";
    false_claim => "claims" contains "error: cards/basics/bytes.md:15:1: claim is false on the shipped results: bandwidth/copy_naive 9.32 µs < bandwidth/copy_grid_stride 8.39 µs is false on NVIDIA H100 80GB HBM3";
    bad_value_variant => "claims" contains "error: cards/basics/bytes.md:17:8: `bandwidth` has no variant `copy_nope`\n  hint: its variants: copy_grid_stride, copy_naive, copy_vec4, memcpy (or `baseline`)";
    bad_value_params => "claims" contains "error: cards/basics/bytes.md:17:51: no record of bandwidth/copy_naive has n=7\n  hint: measured: n ∈ {1048576, 16777216, 268435456}";
    ambiguous_value => "claims" contains "error: cards/basics/bytes.md:17:89: bandwidth/copy_naive matches 3 records";
    bad_value_metric => "claims" contains "error: cards/basics/bytes.md:17:117: bandwidth/copy_naive records no metric `tokens_per_s`";
    typed_number_in_caption => "claims" contains "error: cards/basics/bytes.md:26:1: typed measured number `12 GB/s` in a figure caption";
    unclosed_claim => "claims" contains "error: cards/basics/bytes.md:21:1: `{{claim …}}` is never closed";
    typed_number => "claims" contains "error: cards/basics/bytes.md:19:16: typed measured number `12 GB/s` in prose";
    broken_relative_link => "broken-relative-link" contains "error: cards/basics/bytes.md:13:8: broken link `../paths/nowhere.md`";
}

/// A broken card does not cascade: references to it are not reported a second time.
#[test]
fn broken_card_does_not_cascade() {
    let (_, stderr) = check("unknown-key");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
}
