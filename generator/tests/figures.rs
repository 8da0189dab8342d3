//! Figures drawn from a hand-written fixture results file (`tests/fixtures/results/test-gpu.json`,
//! device "Test GPU (fixture)": fake numbers, never shipped in the book).

use hdlc::figspec::FigureSpec;
use hdlc::measure::results::{Outcome, ResultsFile};
use hdlc::render::figures::render_figure;
use std::path::PathBuf;

const FIXTURE: &str = "Test GPU (fixture)";
/// The distinctive number in the failed sgemm record's error message.
const FAILED_VALUE: &str = "0.7311";

fn fixture() -> ResultsFile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/test-gpu.json");
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture parses as a results file")
}

fn files() -> Vec<(PathBuf, ResultsFile)> {
    vec![(PathBuf::from("test-gpu.json"), fixture())]
}

fn spec(bench: &str, show: &str) -> FigureSpec {
    FigureSpec {
        caption: Some("테스트 그림 (fixture)".into()),
        ..FigureSpec::new(bench, show)
    }
}

fn render(bench: &str, show: &str) -> String {
    render_figure(&spec(bench, show), &files(), None).unwrap_or_else(|e| panic!("{bench}/{show}: {e}"))
}

/// Rules every HTML block must keep to stay one block in CommonMark.
fn assert_one_block(html: &str) {
    assert!(!html.contains("<?xml"), "no XML header");
    assert!(
        !html.lines().any(|l| l.trim().is_empty()),
        "no blank line inside the block:\n{html}"
    );
    assert!(!html.starts_with(char::is_whitespace) && !html.ends_with(char::is_whitespace));
}

#[test]
fn fixture_has_the_failed_record_it_is_meant_to_have() {
    let f = fixture();
    let failed = f
        .records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
        .count();
    assert_eq!(failed, 1);
    assert_eq!(f.device.name, FIXTURE);
}

#[test]
fn snapshot_sgemm_ladder() {
    insta::assert_snapshot!("sgemm_ladder", render("sgemm", "ladder"));
}

#[test]
fn snapshot_bandwidth_ladder() {
    insta::assert_snapshot!("bandwidth_ladder", render("bandwidth", "ladder"));
}

#[test]
fn snapshot_sgemm_roofline() {
    insta::assert_snapshot!("sgemm_roofline", render("sgemm", "roofline"));
}

#[test]
fn snapshot_softmax_roofline() {
    insta::assert_snapshot!("softmax_roofline", render("softmax", "roofline"));
}

#[test]
fn snapshot_bandwidth_scaling() {
    insta::assert_snapshot!("bandwidth_scaling", render("bandwidth", "scaling"));
}

#[test]
fn snapshot_sgemm_scaling() {
    insta::assert_snapshot!("sgemm_scaling", render("sgemm", "scaling"));
}

#[test]
fn snapshot_sgemm_table() {
    insta::assert_snapshot!("sgemm_table", render("sgemm", "table"));
}

#[test]
fn every_view_is_one_html_block_without_xml_header() {
    for bench in ["bandwidth", "sgemm", "softmax"] {
        for show in ["ladder", "roofline", "scaling", "table"] {
            if bench == "bandwidth" && show == "roofline" {
                continue;
            }
            let html = render(bench, show);
            assert_one_block(&html);
            assert!(html.starts_with("<figure class=\"hdlc-figure"), "{bench}/{show}");
            assert!(html.ends_with("</figure>"), "{bench}/{show}");
            assert!(html.contains(&format!("id=\"fig-{bench}-{show}\"")));
        }
    }
}

#[test]
fn failed_record_is_marked_and_its_number_never_drawn() {
    for show in ["ladder", "roofline", "scaling", "table"] {
        let html = render("sgemm", show);
        assert!(
            !html.contains(FAILED_VALUE),
            "{show}: the failed record's number leaked"
        );
        assert!(
            html.contains("검증 실패¹"),
            "{show}: failure not marked where the number would be"
        );
        assert!(
            html.contains("¹ 검증 실패") && html.contains("결과가 기준과 다르다"),
            "{show}: the footnote says why"
        );
        assert!(
            html.contains("warp tiling"),
            "{show}: failed variant not labelled"
        );
    }
}

#[test]
fn ladder_failed_row_has_no_bar() {
    let html = render("sgemm", "ladder");
    // 4 Ok variants at n = 4096 → 4 bars in the palette or gray, in each of the two layouts
    // (wide and narrow); the failed variant draws none.
    let bars = html
        .lines()
        .filter(|l| l.starts_with("<rect") && !l.contains("fill=\"none\"") && l.contains("opacity=\"1\""))
        .count();
    assert_eq!(bars, 2 * 4, "{html}");
    assert!(html.contains("기준선 cuBLAS SGEMM 대비 처리량 (100%보다 크면 기준선보다 빠름)"));
    assert!(
        html.contains("31.0 TFLOP/s · 60.8%"),
        "register tiling at 31.0 of 51.0 TFLOP/s"
    );
    assert!(html.contains("datasheet 67.0 TFLOP/s"));
}

#[test]
fn provenance_names_device_and_where_it_was_measured() {
    let shipped = render_figure(&spec("sgemm", "ladder"), &files(), None).unwrap();
    assert!(shipped.contains("측정: Test GPU (fixture)"));
    assert!(shipped.contains("(shipped)"));
    assert!(!shipped.contains("이 컴퓨터에서"));
    assert!(shipped.contains("CC 9.0") && shipped.contains("132 SMs") && shipped.contains("NVRTC 13.0"));
    assert!(
        shipped.contains("2026-11-22") && shipped.contains("commit 0123456") && shipped.contains("200 reps")
    );

    let local = render_figure(&spec("sgemm", "table"), &files(), Some(FIXTURE)).unwrap();
    assert!(local.contains("측정: Test GPU (fixture)"));
    assert!(local.contains("이 컴퓨터에서 측정"));
    assert!(!local.contains("shipped"));

    let other_machine = render_figure(&spec("sgemm", "table"), &files(), Some("Some Other GPU")).unwrap();
    assert!(other_machine.contains("(shipped)"));
}

#[test]
fn local_file_is_preferred_then_h100_then_first() {
    let mut h100 = fixture();
    h100.device.name = "NVIDIA H100 80GB HBM3 (fixture copy)".into();
    let other = fixture();
    let list = vec![(PathBuf::from("a.json"), other), (PathBuf::from("b.json"), h100)];
    let shipped = render_figure(&spec("bandwidth", "ladder"), &list, None).unwrap();
    assert!(shipped.contains("측정: NVIDIA H100 80GB HBM3 (fixture copy)"));
    let local = render_figure(&spec("bandwidth", "ladder"), &list, Some(FIXTURE)).unwrap();
    assert!(local.contains("측정: Test GPU (fixture)") && local.contains("이 컴퓨터에서 측정"));
    // A local file without Ok records for the family does not hide the shipped one.
    let mut empty_local = fixture();
    empty_local.device.name = "Local GPU".into();
    empty_local.records.retain(|r| r.family != "bandwidth");
    let list = vec![
        (PathBuf::from("local.json"), empty_local),
        (PathBuf::from("shipped.json"), fixture()),
    ];
    let html = render_figure(&spec("bandwidth", "ladder"), &list, Some("Local GPU")).unwrap();
    assert!(html.contains("측정: Test GPU (fixture)") && html.contains("(shipped)"));
}

#[test]
fn missing_family_gives_the_no_data_box_without_numbers() {
    for show in ["ladder", "roofline", "scaling", "table"] {
        let html = render("gemv", show);
        assert!(html.contains("이 그림의 측정 결과가 아직 없습니다"), "{html}");
        assert!(
            !html.chars().any(|c| c.is_ascii_digit()),
            "no numbers in the no-data box: {html}"
        );
        assert_one_block(&html);
    }
    let none = render_figure(&spec("sgemm", "ladder"), &[], None).unwrap();
    assert!(none.contains("이 그림의 측정 결과가 아직 없습니다"));
}

#[test]
fn requested_size_is_drawn_or_reported_missing() {
    let mut s = spec("sgemm", "ladder");
    s.size = Some(1024);
    let html = render_figure(&s, &files(), None).unwrap();
    assert!(html.contains("M = N = K = 1,024"), "{html}");
    assert!(html.contains("id=\"fig-sgemm-ladder-1024\""));
    // at n = 1024 the warp-tiled variant verified, so no failure is shown
    assert!(!html.contains("실패"));
    s.size = Some(3000);
    let html = render_figure(&s, &files(), None).unwrap();
    assert!(html.contains("이 그림의 측정 결과가 아직 없습니다"));
}

#[test]
fn roofline_of_a_family_without_flops_is_an_error() {
    let err = render_figure(&spec("bandwidth", "roofline"), &files(), None).unwrap_err();
    assert!(err.contains("floating-point"), "{err}");
}

#[test]
fn roofline_uses_measured_roofs_and_datasheet_peak() {
    let html = render("sgemm", "roofline");
    assert!(html.contains("cudaMemcpy D2D 2,950 GB/s (측정)"), "{html}");
    assert!(html.contains("cuBLAS SGEMM 51.0 TFLOP/s (측정)"));
    assert!(html.contains("FP32 peak 67.0 TFLOP/s (datasheet)"));
    // Without a memcpy measurement the memory roof comes from the datasheet, labelled so.
    let mut f = fixture();
    f.records.retain(|r| r.family != "bandwidth");
    let html = render_figure(&spec("sgemm", "roofline"), &[(PathBuf::from("x.json"), f)], None).unwrap();
    assert!(html.contains("메모리 3,350 GB/s (datasheet)"), "{html}");
}

#[test]
fn theme_colors_are_not_hard_coded() {
    for (bench, show) in [
        ("sgemm", "ladder"),
        ("sgemm", "roofline"),
        ("bandwidth", "scaling"),
    ] {
        let html = render(bench, show);
        assert!(html.contains("currentColor"));
        assert!(!html.contains("#000000"), "{bench}/{show}: black left in");
        let white_rect = html
            .lines()
            .any(|l| l.starts_with("<rect") && l.to_ascii_uppercase().contains("FILL=\"#FFFFFF\""));
        assert!(!white_rect, "{bench}/{show}: white background");
        assert!(
            !html.contains("<svg width=\"640\""),
            "{bench}/{show}: fixed width left in"
        );
        assert!(html.contains("width=\"100%\"") && html.contains("viewBox=\"0 0 640 "));
        // The phone layout beside the desktop one, each marked for the stylesheet to pick.
        assert!(html.contains("hdlc-chart-wide") && html.contains("viewBox=\"0 0 360 "));
        assert!(html.contains("hdlc-chart-narrow"));
    }
}

#[test]
fn output_is_deterministic() {
    for show in ["ladder", "roofline", "scaling", "table"] {
        assert_eq!(render("sgemm", show), render("sgemm", show));
    }
}

#[test]
fn odd_values_never_panic_and_never_show_as_numbers() {
    let mut f = fixture();
    for r in f.records.iter_mut().filter(|r| r.family == "sgemm") {
        if let Outcome::Ok(t) = &mut r.outcome {
            match r.variant.as_str() {
                "naive" => t.median_ms = f64::NAN,
                "smem_tiled" => t.median_ms = 0.0,
                "reg_tiled" => t.rel_error = f64::INFINITY,
                "warp_tiled" => {
                    t.p10_ms = f64::NAN;
                    t.p90_ms = -1.0;
                }
                _ => {}
            }
        }
    }
    let list = vec![(PathBuf::from("odd.json"), f)];
    for show in ["ladder", "roofline", "scaling", "table"] {
        let html = render_figure(&spec("sgemm", show), &list, None).unwrap();
        assert!(!html.contains("NaN") && !html.contains("inf"), "{show}: {html}");
        assert_one_block(&html);
        assert!(
            html.contains("검증 실패") && html.contains("측정 오류"),
            "{show}: {html}"
        );
    }
    // Every record odd: the family has no data at all.
    let mut f = fixture();
    for r in f.records.iter_mut() {
        if let Outcome::Ok(t) = &mut r.outcome {
            t.median_ms = 0.0;
        }
    }
    let html = render_figure(&spec("sgemm", "ladder"), &[(PathBuf::from("zero.json"), f)], None).unwrap();
    assert!(html.contains("이 그림의 측정 결과가 아직 없습니다"));
}

#[test]
fn caption_is_escaped_and_kept_on_the_block() {
    let mut s = spec("bandwidth", "table");
    s.caption = Some("복사 <b>속도</b>\n\n둘째 줄".into());
    let html = render_figure(&s, &files(), None).unwrap();
    assert!(html.contains("복사 &lt;b&gt;속도&lt;/b&gt; 둘째 줄"));
    assert_one_block(&html);
}

#[test]
fn unknown_view_is_an_error() {
    assert!(render_figure(&spec("sgemm", "pie"), &files(), None).is_err());
    assert!(render_figure(&spec("nope", "ladder"), &files(), None).is_err());
}

/// Memory beside speed: a recorded workspace gets its own column; without one there is none.
#[test]
fn table_shows_workspace_only_when_recorded() {
    let plain = render("softmax", "table");
    assert!(!plain.contains("<th>작업 공간 (GiB)</th>"));
    let mut file = fixture();
    for r in file.records.iter_mut().filter(|r| r.family == "softmax") {
        if let hdlc::measure::results::Outcome::Ok(t) = &mut r.outcome {
            t.workspace_bytes = Some(3.0 * (1u64 << 30) as f64);
        }
    }
    let html = hdlc::render::figures::render_figure(
        &spec("softmax", "table"),
        &[(PathBuf::from("x.json"), file)],
        None,
    )
    .unwrap();
    assert!(html.contains("<th>작업 공간 (GiB)</th>"), "{html}");
    assert!(html.contains("<td>3.00</td>"), "{html}");
}
