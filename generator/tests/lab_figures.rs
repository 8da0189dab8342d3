//! Lab figures drawn from a hand-written fixture (`tests/fixtures/results/lab-gpu.json`, family
//! `fixture_lab`: fake numbers, never shipped), and the checks of lab figure blocks.

use hdlc::figspec::FigureSpec;
use hdlc::measure::results::ResultsFile;
use hdlc::render::figures::render_lab_figure;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn files() -> Vec<(PathBuf, ResultsFile)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/lab-gpu.json");
    let f: ResultsFile = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    vec![(PathBuf::from("lab-gpu.json"), f)]
}

fn labs() -> Vec<String> {
    vec!["fixture_lab".to_string()]
}

fn draw(block: &str) -> String {
    let spec = parse(block, &labs()).unwrap_or_else(|e| panic!("{block}: {e:?}"));
    let html = render_lab_figure(&spec, &files(), None, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !html.lines().any(|l| l.trim().is_empty()),
        "one HTML block:\n{html}"
    );
    assert!(!html.contains("<?xml"));
    html
}

#[test]
fn failures_are_named_never_drawn() {
    let html = draw("bench: fixture_lab\nshow: table\nwhere: {cols: 4096}\n");
    // The crashed and the unverified variants: shown as failed where their numbers would be,
    // with a footnote mark; the crash's exception only in the footnote, folded, never in a cell.
    let table = &html[..html.find("</table>").unwrap()];
    assert!(
        table.contains("검증 실패¹") && table.contains("실행 실패²"),
        "{html}"
    );
    assert!(
        !table.contains("RuntimeError") && !table.contains("fixture crash"),
        "{table}"
    );
    assert!(html.contains("lab 프로세스가 비정상 종료 (crash)"), "{html}");
    assert!(
        html.contains("<summary>오류 메시지</summary><code>RuntimeError: fixture crash"),
        "{html}"
    );
    // The unverified record's time (0.0137 ms) must not appear as a number.
    assert!(!html.contains("0.0137"), "{html}");
    // Provenance names the machine and the frameworks.
    assert!(
        html.contains("Test GPU (fixture)") && html.contains("torch 2.11.0+fixture"),
        "{html}"
    );
    // % of baseline: the Triton row at 4096 is baseline time ÷ its time = 0.1 / 0.12.
    assert!(html.contains("83.3%"), "{html}");
}

#[test]
fn ladder_and_scaling_draw_the_metric() {
    let html = draw("bench: fixture_lab\nshow: ladder\nmetric: tokens_per_s\nwhere: {cols: 1024}\nvariants: [triton, eager]\n");
    assert!(html.contains("<svg"));
    assert!(html.contains("3,024") && html.contains("2,024"), "{html}");
    let t = html.find("Triton kernel").unwrap();
    let e = html.find("eager PyTorch").unwrap();
    assert!(t < e, "variants: order kept");
    let html =
        draw("bench: fixture_lab\nshow: scaling\nmetric: gbps\nvariants: [eager, triton, copy]\nx: cols\n");
    assert!(html.contains("<svg") && html.contains("GB/s"), "{html}");
}

#[test]
fn scaling_without_x_names_the_ambiguity() {
    let spec = parse("bench: fixture_lab\nshow: scaling\n", &labs()).unwrap();
    // cols varies, and so does nothing else; with the training record's own params it still works.
    let r = render_lab_figure(&spec, &files(), None, &BTreeMap::new());
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn curve_and_records() {
    let html = draw("bench: fixture_lab\nshow: curve\nseries: loss\nvariants: [train_fp32]\n");
    assert!(html.contains("<svg") && html.contains("loss"), "{html}");
    let html =
        draw("bench: fixture_lab\nshow: records\ntable: top_kernels\nvariants: [train_fp32, compiled]\n");
    assert!(
        html.contains("ampere_sgemm_fixture") && html.contains("1,234") || html.contains("1234"),
        "{html}"
    );
    assert!(html.contains("실행 실패¹"), "{html}");
    // Profiler kernels are grouped by kind, each kind a heading row with its time and share.
    assert!(
        html.contains("class=\"hdlc-group\"><strong>GEMM (행렬 곱)</strong>"),
        "{html}"
    );
}

/// A whole-benchmark wall time from a single run (a serving engine): seconds, and no spread.
#[test]
fn single_runs_show_seconds_and_no_spread() {
    let mut f = files();
    for r in f[0].1.records.iter_mut().filter(|r| r.variant == "eager") {
        if let hdlc::measure::results::Outcome::Ok(t) = &mut r.outcome {
            t.reps = 1;
            t.median_ms = 114_076.1;
            t.p10_ms = 114_076.1;
            t.p90_ms = 114_076.1;
        }
    }
    let spec = parse("bench: fixture_lab\nshow: table\nvariants: [eager]\n", &labs()).unwrap();
    let html = render_lab_figure(&spec, &f, None, &BTreeMap::new()).unwrap();
    assert!(
        html.contains("중앙값 시간 (s) ↓") && html.contains("<td>114.1</td>"),
        "{html}"
    );
    assert!(!html.contains("p10–p90") && !html.contains("114076"), "{html}");
}

#[test]
fn lines_of_code_column() {
    let spec = parse("bench: fixture_lab\nshow: table\nwhere: {cols: 1024}\n", &labs()).unwrap();
    let loc = BTreeMap::from([("triton".to_string(), 17usize)]);
    let html = render_lab_figure(&spec, &files(), None, &loc).unwrap();
    assert!(
        html.contains("코드 줄 수") && html.contains("<td>17</td>"),
        "{html}"
    );
}

#[test]
fn no_records_is_no_data() {
    let spec = parse("bench: fixture_lab\nshow: ladder\nwhere: {cols: 3}\n", &labs()).unwrap();
    let html = render_lab_figure(&spec, &files(), None, &BTreeMap::new()).unwrap();
    assert!(html.contains("hdlc-nodata"), "{html}");
}

#[test]
fn lab_keys_are_checked() {
    let err = |body: &str| parse(body, &labs()).unwrap_err();
    // Kernel families may use the record views too, but not with a kernel-only view.
    assert!(parse("bench: sgemm\nshow: ladder\nmetric: tflops\n", &labs()).is_ok());
    let (line, msg, _) = err("bench: sgemm\nshow: roofline\nmetric: tflops\n");
    assert_eq!(line, 2);
    assert!(msg.contains("unknown lab figure view"), "{msg}");
    let (line, msg, _) = err("bench: fixture_lab\nshow: roofline\n");
    assert_eq!(line, 2);
    assert!(msg.contains("unknown lab figure view"), "{msg}");
    let (_, msg, _) = err("bench: fixture_lab\nshow: curve\n");
    assert!(msg.contains("series"), "{msg}");
    let (_, msg, _) = err("bench: fixture_lab\nshow: records\n");
    assert!(msg.contains("table"), "{msg}");
    let (line, msg, _) = err("bench: fixture_lab\nshow: table\nloc:\n  triton: rmsnorm.cu\n");
    assert_eq!(line, 3);
    assert!(msg.contains("#name"), "{msg}");
    let (_, msg, hint) = err("bench: not_a_lab\nshow: ladder\n");
    assert!(
        msg.contains("unknown benchmark") && hint.contains("fixture_lab"),
        "{msg} {hint}"
    );
    let (line, _, _) = err("bench: fixture_lab\nshow: ladder\nvariants: []\n");
    assert_eq!(line, 3);
    // A lab family is unknown when no manifest declares it.
    assert!(parse("bench: fixture_lab\nshow: ladder\n", &[]).is_err());
    let ok: FigureSpec = parse(
        "bench: fixture_lab\nshow: ladder\nmetric: tokens_per_s\n",
        &labs(),
    )
    .unwrap();
    assert_eq!(ok.metric.as_deref(), Some("tokens_per_s"));
}

#[test]
fn device_key_picks_the_machine() {
    let mut two = files();
    let mut other = two[0].1.clone();
    other.device.name = "NVIDIA H200 (fixture)".into();
    two.push((PathBuf::from("h200.json"), other));
    let spec = parse("bench: fixture_lab\nshow: table\ndevice: h200\n", &labs()).unwrap();
    let html = render_lab_figure(&spec, &two, Some("Test GPU (fixture)"), &BTreeMap::new()).unwrap();
    assert!(html.contains("NVIDIA H200 (fixture)"), "{html}");
    // Without the key the reader's own machine wins.
    let spec = parse("bench: fixture_lab\nshow: table\n", &labs()).unwrap();
    let html = render_lab_figure(&spec, &two, Some("Test GPU (fixture)"), &BTreeMap::new()).unwrap();
    assert!(!html.contains("H200"), "{html}");
    // A machine nobody measured on: no data, not another machine's numbers.
    let spec = parse("bench: fixture_lab\nshow: table\ndevice: B200\n", &labs()).unwrap();
    let html = render_lab_figure(&spec, &two, None, &BTreeMap::new()).unwrap();
    assert!(html.contains("hdlc-nodata"), "{html}");
    assert!(parse("bench: fixture_lab\nshow: table\ndevice: ''\n", &labs()).is_err());
}

/// Two runs whose curves lie on each other are drawn once and the figure says they coincide;
/// `compare:` puts another family on the same axes, each record named by its family.
#[test]
fn coinciding_curves_are_said_to_coincide() {
    let mut f = files();
    let mut twin = f[0]
        .1
        .records
        .iter()
        .find(|r| r.variant == "train_fp32")
        .unwrap()
        .clone();
    twin.variant = "train_twin".into();
    twin.label = "train twin".into();
    twin.family = "fixture_lab_b".into();
    f[0].1.records.push(twin);
    let labs = vec!["fixture_lab".to_string(), "fixture_lab_b".to_string()];
    let spec = parse(
        "bench: fixture_lab\nshow: curve\nseries: loss\nvariants: [train_fp32, train_twin]\ncompare: [fixture_lab_b]\n",
        &labs,
    )
    .unwrap();
    let html = render_lab_figure(&spec, &f, None, &BTreeMap::new()).unwrap();
    assert!(
        html.contains("(겹침)") && html.contains("2개 선이 겹쳐 하나로 그렸다"),
        "{html}"
    );
    // One line drawn per layout, not two on top of each other.
    assert_eq!(html.matches("<polyline").count() - axis_lines(&html), 2, "{html}");
    assert!(parse(
        "bench: fixture_lab\nshow: curve\nseries: loss\ncompare: [nope]\n",
        &labs
    )
    .is_err());
}

/// Polylines that are axes or ticks (plotters draws them as two-point polylines).
fn axis_lines(html: &str) -> usize {
    html.lines()
        .filter(|l| l.starts_with("<polyline") && l.matches(',').count() <= 2)
        .count()
}

/// Parse a figure block as `check` does, with the renderer's views and `labs`.
fn parse(body: &str, labs: &[String]) -> Result<FigureSpec, (usize, String, String)> {
    hdlc::figspec::parse(body, &hdlc::render::figures::known(labs))
}
