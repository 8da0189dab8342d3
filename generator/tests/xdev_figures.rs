//! Figures that compare machines: `device: [H100, H200]` / `device: all` panels and the
//! `show: devices` table. The machines are copies of the hand-written fixture
//! (`tests/fixtures/results/test-gpu.json`) renamed, with the "H200" copy's times scaled in the
//! test: fixture data to check the drawing and the arithmetic, never shipped results.

use hdlc::figspec::{Devices, FigureSpec};
use hdlc::measure::device::datasheet_for;
use hdlc::measure::results::{Outcome, ResultsFile};
use hdlc::render::figures::{render_figure, render_lab_figure};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const H100: &str = "NVIDIA H100 80GB HBM3 (fixture)";
const H200: &str = "NVIDIA H200 (fixture)";
/// The distinctive number in the failed sgemm record's error message.
const FAILED_VALUE: &str = "0.7311";

fn fixture(name: &str) -> ResultsFile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/test-gpu.json");
    let mut f: ResultsFile = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f.device.name = name.into();
    // What the harness records for a device of that name.
    f.device.datasheet = datasheet_for(name);
    f
}

/// An "H200": bandwidth runs faster by exactly the HBM ratio, sgemm not at all, softmax by 1.2×.
fn h200() -> ResultsFile {
    let mut f = fixture(H200);
    for r in &mut f.records {
        let speedup = match r.family.as_str() {
            "bandwidth" => 4800.0 / 3350.0,
            "softmax" => 1.2,
            _ => 1.0,
        };
        if let Outcome::Ok(t) = &mut r.outcome {
            t.median_ms /= speedup;
            t.p10_ms /= speedup;
            t.p90_ms /= speedup;
        }
    }
    f
}

fn both() -> Vec<(PathBuf, ResultsFile)> {
    vec![
        (PathBuf::from("nvidia-h100.json"), fixture(H100)),
        (PathBuf::from("nvidia-h200.json"), h200()),
    ]
}

fn figure(block: &str, files: &[(PathBuf, ResultsFile)], local: Option<&str>) -> String {
    let spec = parse(block, &[]).unwrap_or_else(|e| panic!("{block}: {e:?}"));
    let html = render_figure(&spec, files, local).unwrap_or_else(|e| panic!("{block}: {e}"));
    assert!(
        !html.lines().any(|l| l.trim().is_empty()),
        "one HTML block:\n{html}"
    );
    assert!(!html.contains("<?xml"));
    html
}

fn parse_err(block: &str) -> (usize, String, String) {
    parse(block, &[]).expect_err(block)
}

#[test]
fn device_key_takes_one_name_a_list_or_all() {
    let one = parse("bench: bandwidth\ndevice: H200\n", &[]).unwrap();
    assert_eq!(one.device, Some(Devices::One("H200".into())));
    let list = parse("bench: bandwidth\ndevice: [H100, H200]\n", &[]).unwrap();
    assert_eq!(
        list.device,
        Some(Devices::List(vec!["H100".into(), "H200".into()]))
    );
    let all = parse("bench: bandwidth\nshow: table\ndevice: all\n", &[]).unwrap();
    assert_eq!(all.device, Some(Devices::All));
    assert!(all.device.as_ref().unwrap().several() && list.device.as_ref().unwrap().several());
}

#[test]
fn bad_device_lists_name_their_line_with_a_hint() {
    for (block, what) in [
        (
            "bench: bandwidth\nshow: ladder\ndevice: []\n",
            "empty `device:` list",
        ),
        ("bench: bandwidth\nshow: ladder\ndevice: [H100, 3]\n", "a number"),
        (
            "bench: bandwidth\nshow: ladder\ndevice: [H100, {a: 1}]\n",
            "a mapping",
        ),
        ("bench: bandwidth\nshow: ladder\ndevice: H100, H200\n", "comma"),
        (
            "bench: bandwidth\nshow: ladder\ndevice: [H100, all]\n",
            "`all` inside",
        ),
        ("bench: bandwidth\nshow: ladder\ndevice: [H100, h100]\n", "twice"),
        ("bench: bandwidth\nshow: ladder\ndevice: [H100, '']\n", "empty"),
        ("bench: bandwidth\nshow: ladder\ndevice: 7\n", "a number"),
    ] {
        let (line, msg, hint) = parse_err(block);
        assert_eq!(line, 3, "{block}: the `device:` line");
        assert!(msg.contains(what), "{block}: {msg}");
        assert!(!hint.is_empty(), "{block}");
    }
}

#[test]
fn devices_view_checks_its_keys() {
    let ok = parse(
        "bench: bandwidth\nshow: devices\nvariants: [copy_vec4, memcpy]\nwhere: {n: 268435456}\n",
        &[],
    )
    .unwrap();
    assert!(!ok.record_view(), "a kernel view even with `where:`/`variants:`");
    let (line, msg, _) = parse_err("bench: bandwidth\nshow: devices\nmetric: gbps\n");
    assert_eq!(line, 3);
    assert!(msg.contains("`metric:`"), "{msg}");
    let (line, msg, hint) = parse_err("bench: bandwidth\nshow: devices\ndevice: H200\n");
    assert_eq!(line, 3);
    assert!(msg.contains("names one") && hint.contains("all"), "{msg}");
    assert!(hdlc::render::figures::VIEW_NAMES.contains(&"devices"));
}

/// The numbers written as text in an SVG (axis ticks): equal sets mean equal axes.
fn ticks(panel: &str) -> BTreeSet<String> {
    panel
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.'))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_device_list_draws_one_panel_per_machine_on_one_axis() {
    let html = figure(
        "bench: bandwidth\nshow: ladder\ndevice: [H100, H200]\ncaption: 두 기계\n",
        &both(),
        None,
    );
    assert!(
        html.starts_with("<figure class=\"hdlc-figure hdlc-panels\" id=\"fig-bandwidth-ladder-h100-h200\">")
    );
    assert!(html.ends_with("</figure>"));
    let panels: Vec<&str> = html.split("<figure class=\"hdlc-figure\"").skip(1).collect();
    assert_eq!(panels.len(), 2, "{html}");
    assert!(panels[0].contains(&format!("측정: {H100}")) && panels[1].contains(&format!("측정: {H200}")));
    assert!(html.contains("id=\"fig-bandwidth-ladder-h100-h200-h100\""));
    assert!(html.contains("두 기계"));
    // Each panel shows its own datasheet line; both share one value axis.
    assert!(panels[0].contains("datasheet 3,350 GB/s") && panels[1].contains("datasheet 4,800 GB/s"));
    assert!(ticks(panels[0]).len() >= 3, "{}", panels[0]);
    assert_eq!(ticks(panels[0]), ticks(panels[1]), "same axis in both panels");
    // Alone, the H100's axis ends lower than beside the H200.
    let alone = figure("bench: bandwidth\nshow: ladder\ndevice: H100\n", &both(), None);
    assert_ne!(ticks(&alone), ticks(panels[0]));
    // Scaling panels share their axes too.
    let html = figure(
        "bench: bandwidth\nshow: scaling\ndevice: [H100, H200]\n",
        &both(),
        None,
    );
    let panels: Vec<&str> = html.split("<figure class=\"hdlc-figure\"").skip(1).collect();
    assert_eq!(ticks(panels[0]), ticks(panels[1]));
}

#[test]
fn a_machine_without_results_is_a_no_data_panel() {
    let only_h100 = vec![(PathBuf::from("h100.json"), fixture(H100))];
    let html = figure(
        "bench: sgemm\nshow: ladder\ndevice: [H100, H200]\n",
        &only_h100,
        None,
    );
    assert!(html.contains(&format!("측정: {H100}")), "{html}");
    assert!(
        html.contains("no data for H200") && html.contains("hdlc-nodata"),
        "{html}"
    );
    // Nothing at all: still no panic, and no numbers.
    let html = figure(
        "bench: sgemm\nshow: ladder\ndevice: [B200, H200]\n",
        &only_h100,
        None,
    );
    assert!(html.contains("no data for B200") && html.contains("no data for H200"));
    // The failed record stays failed in every panel.
    let html = figure("bench: sgemm\nshow: table\ndevice: [H100, H200]\n", &both(), None);
    assert!(!html.contains(FAILED_VALUE) && html.contains("검증 실패"));
}

#[test]
fn all_brings_in_the_readers_own_gpu() {
    let mut files = both();
    files.insert(0, (PathBuf::from("local.json"), fixture("Local RTX (fixture)")));
    let html = figure(
        "bench: bandwidth\nshow: ladder\ndevice: all\n",
        &files,
        Some("Local RTX (fixture)"),
    );
    let panels: Vec<&str> = html.split("<figure class=\"hdlc-figure\"").skip(1).collect();
    assert_eq!(panels.len(), 3, "{html}");
    assert!(panels[0].contains(H100), "H100 first");
    assert!(panels
        .iter()
        .any(|p| p.contains("Local RTX") && p.contains("이 컴퓨터에서 측정")));
}

#[test]
fn devices_table_states_measured_and_datasheet_ratios() {
    // A file without a datasheet (an older one) gets it from `measure::device::datasheet_for`.
    let mut files = both();
    files[1].1.device.datasheet = None;
    let html = figure("bench: bandwidth\nshow: devices\nsize: 268435456\n", &files, None);
    assert!(html.contains("hdlc-xdev") && html.contains("id=\"fig-bandwidth-devices-268435456\""));
    assert!(
        html.contains("H100 80GB HBM3 (fixture)<br>중앙값 GB/s ↑"),
        "{html}"
    );
    assert!(
        html.contains("H200 (fixture) ÷ H100 80GB HBM3 (fixture)"),
        "{html}"
    );
    // Four items at one size, each 1.43× faster on the "H200": follows bandwidth.
    assert_eq!(html.matches("<td>1.43×</td><td>1.43×</td>").count(), 4, "{html}");
    assert_eq!(html.matches("follows bandwidth").count(), 4, "{html}");
    // Both datasheets are cited, from `measure::device`, and both machines have provenance.
    assert!(html.contains("NVIDIA H200 Tensor Core GPU datasheet") && html.contains("4,800 GB/s"));
    assert!(html.contains(&format!("측정: {H100}")) && html.contains(&format!("측정: {H200}")));

    let html = figure(
        "bench: sgemm\nshow: devices\ndevice: [H100, H200]\n",
        &both(),
        None,
    );
    assert!(
        html.contains("follows FP32 peak") && !html.contains("follows bandwidth"),
        "{html}"
    );
    assert!(html.contains("(datasheet, FP32 peak)"));
    assert!(
        !html.contains(FAILED_VALUE) && html.contains("검증 실패"),
        "failed stays failed"
    );

    let html = figure("bench: softmax\nshow: devices\n", &both(), None);
    assert!(
        html.contains("<td>1.20×</td>") && html.contains("follows neither"),
        "{html}"
    );
}

#[test]
fn devices_table_filters_and_reports_missing_machines() {
    let html = figure(
        "bench: bandwidth\nshow: devices\nvariants: [memcpy, copy_vec4]\nwhere: {n: 16777216}\n",
        &both(),
        None,
    );
    assert_eq!(html.matches("<tr><td>").count(), 2, "{html}");
    let m = html
        .find("device memcpy")
        .or_else(|| html.find("(기준선)"))
        .unwrap();
    let v = html.find("float4").or_else(|| html.find("vec")).unwrap();
    assert!(m < v, "`variants:` order kept");

    let only_h100 = vec![(PathBuf::from("h100.json"), fixture(H100))];
    let html = figure(
        "bench: bandwidth\nshow: devices\ndevice: [H100, H200]\n",
        &only_h100,
        None,
    );
    assert!(
        html.contains("H200 (no data)") && html.contains("no data for H200"),
        "{html}"
    );
    assert!(
        !html.contains("follows"),
        "no ratios without a second measurement"
    );
    // `all` with one machine: a one-column table, still no panic.
    let html = figure("bench: bandwidth\nshow: devices\n", &only_h100, None);
    assert!(html.contains("중앙값 GB/s") && !html.contains("÷"));
}

#[test]
fn lab_figures_draw_panels_too() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/lab-gpu.json");
    let lab: ResultsFile = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut other = lab.clone();
    other.device.name = "NVIDIA H200 (fixture)".into();
    let files = vec![(PathBuf::from("a.json"), lab), (PathBuf::from("b.json"), other)];
    let labs = vec!["fixture_lab".to_string()];
    let spec: FigureSpec = parse(
        "bench: fixture_lab\nshow: ladder\nmetric: tokens_per_s\nwhere: {cols: 1024}\ndevice: all\n",
        &labs,
    )
    .unwrap();
    let html = render_lab_figure(&spec, &files, None, &BTreeMap::new()).unwrap();
    assert!(
        html.contains("hdlc-panels") && html.contains("측정: NVIDIA H200 (fixture)"),
        "{html}"
    );
    // Two panels, each laid out for a wide and a narrow column.
    assert_eq!(html.matches("<svg").count(), 4);
    assert_eq!(html.matches("hdlc-chart-narrow").count(), 2);
    assert!(!html.lines().any(|l| l.trim().is_empty()));
}

/// Parse a figure block as `check` does, with the renderer's views and `labs`.
fn parse(body: &str, labs: &[String]) -> Result<FigureSpec, (usize, String, String)> {
    hdlc::figspec::parse(body, &hdlc::render::figures::known(labs))
}
