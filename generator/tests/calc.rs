//! Calculators (`calc:` figure blocks): numbers against hand-worked cases, parse errors with their
//! lines, HTML snapshots, and `check` on a book whose card holds calc blocks.

use assert_cmd::Command;
use hdlc::calc::floats::FloatFormat;
use hdlc::calc::matmul::{self, Dtype, Wall};
use hdlc::calc::memory::{self, Regime};
use hdlc::calc::models::{ModelId, GPT2_124M, LLAMA3_8B};
use hdlc::calc::{self, CalcSpec};
use hdlc::measure::results::{DeviceInfo, Outcome, Provenance, Record, ResultsFile, Timing};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn parse(body: &str) -> CalcSpec {
    calc::parse(body).unwrap_or_else(|e| panic!("{body:?} should parse: {e:?}"))
}

fn render(body: &str) -> String {
    render_with(body, &[])
}

fn render_with(body: &str, files: &[(PathBuf, ResultsFile)]) -> String {
    let html = calc::render(&parse(body), files).unwrap_or_else(|e| panic!("{body:?}: {e}"));
    assert_one_block(&html);
    html
}

/// Rules every HTML block must keep to stay one block in CommonMark.
fn assert_one_block(html: &str) {
    assert!(!html.contains("<?xml"), "no XML header");
    assert!(
        !html.lines().any(|l| l.trim().is_empty()),
        "no blank line inside the block:\n{html}"
    );
    assert!(!html.starts_with(char::is_whitespace) && !html.ends_with(char::is_whitespace));
    assert!(html.starts_with("<figure class=\"hdlc-figure hdlc-calc\" id=\"calc-"));
    assert!(html.ends_with("</figure>"));
    assert_eq!(html.matches("<figcaption>").count(), 1);
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert_eq!(html.matches("<table>").count(), html.matches("</table>").count());
}

fn err(body: &str) -> (usize, String, String) {
    match calc::parse(body) {
        Ok(s) => panic!("{body:?} should not parse, got {s:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------
// Numbers

#[test]
fn parameter_counts_from_the_configs() {
    assert_eq!(GPT2_124M.params().total(), 124_439_808);
    assert_eq!(LLAMA3_8B.params().total(), 8_030_261_248);
    // GPT-2 by parts: V·d + 1024·d + 12·(4d² + 4d + 8d² + 5d + 4d) + 2d, LM head tied.
    let d: u128 = 768;
    assert_eq!(
        50257 * d + 1024 * d + 12 * (12 * d * d + 13 * d) + 2 * d,
        124_439_808
    );
    assert_eq!(GPT2_124M.params().lm_head, 0);
    assert_eq!(LLAMA3_8B.params().lm_head, 128_256 * 4096);
}

#[test]
fn matmul_4096_cubed_fp32() {
    let c = matmul::counts(4096, 4096, 4096, Dtype::Fp32);
    assert_eq!(c.flops, 137_438_953_472);
    assert_eq!(c.bytes, 201_326_592);
    // bf16 halves the bytes, doubles the intensity.
    let b = matmul::counts(4096, 4096, 4096, Dtype::Bf16);
    assert_eq!(b.bytes, 100_663_296);
    assert_eq!(matmul::counts(4096, 4096, 4096, Dtype::Tf32).bytes, 201_326_592);
    assert_eq!(matmul::counts(4096, 4096, 4096, Dtype::Fp8).bytes, 50_331_648);
    // H100 BF16: ridge 989/3.35 ≈ 295.2 FLOP/B; intensity 1365.3 → compute-bound, 139 µs.
    let h = matmul::bound(&b, Dtype::Bf16.h100_peak(), matmul::H100_BANDWIDTH);
    assert!((h.ridge - 295.223_880_597).abs() < 1e-6, "{}", h.ridge);
    assert_eq!(h.wall, Wall::Compute);
    assert!((h.lower_bound - 137_438_953_472.0 / 989e12).abs() < 1e-12);
    assert!((h.memory_floor - 100_663_296.0 / 3.35e12).abs() < 1e-12);
    // A 16 × 4096 × 4096 bf16 product (decode, batch 16) is memory-bound on the H100.
    let small = matmul::counts(16, 4096, 4096, Dtype::Bf16);
    assert_eq!(matmul::bound(&small, 989e12, 3.35e12).wall, Wall::Memory);
}

#[test]
fn training_memory_gpt2_batch8_seq1024_by_hand() {
    let c = ModelId::Gpt2_124m.config();
    let p: u128 = 124_439_808;
    // One layer, 16-bit: s·b·h·(34 + 5·a·s/h) = 1024·8·768·(34 + 5·12·1024/768) = 6,291,456·(34 + 80).
    let a: u128 = 6_291_456 * 114;
    assert_eq!(a, 717_225_984);
    assert_eq!(memory::layer_activations(&c, 8, 1024), a);

    let fp32 = memory::breakdown(&c, 8, 1024, Regime::Fp32);
    assert_eq!(
        (fp32.weights, fp32.gradients, fp32.optimizer),
        (4 * p, 4 * p, 8 * p)
    );
    assert_eq!(fp32.activations, 2 * 12 * a);
    assert_eq!(fp32.total(), 19_204_460_544);

    let mixed = memory::breakdown(&c, 8, 1024, Regime::Bf16Mixed);
    assert_eq!(
        (mixed.weights, mixed.gradients, mixed.optimizer),
        (2 * p, 2 * p, 12 * p)
    );
    assert_eq!(mixed.activations, 8_606_711_808);
    assert_eq!(mixed.total(), 10_597_748_736);

    let ckpt = memory::breakdown(&c, 8, 1024, Regime::Bf16MixedCheckpointing);
    // 12 layers × 2·1024·8·768 B of inputs + one layer's full activations.
    assert_eq!(ckpt.activations, 12 * 12_582_912 + a);
    assert_eq!(ckpt.total(), 2_859_257_856);
}

#[test]
fn float_formats_from_bit_layouts() {
    let p = |n: &str| FloatFormat::parse(n).unwrap().props();
    let bf16 = p("bf16").max_finite;
    assert_eq!(bf16, (2.0 - 2f64.powi(-7)) * 2f64.powi(127));
    assert!((bf16 / 3.3895e38 - 1.0).abs() < 1e-4, "{bf16}");
    assert_eq!(p("fp16").max_finite, 65504.0);
    assert_eq!(p("fp16").min_subnormal, 2f64.powi(-24));
    assert_eq!(p("fp16").min_normal, 2f64.powi(-14));
    assert_eq!(p("fp8-e4m3").max_finite, 448.0);
    assert_eq!(p("fp8-e4m3").min_subnormal, 2f64.powi(-9));
    assert_eq!(p("fp8-e5m2").max_finite, 57344.0);
    assert_eq!(p("fp8-e5m2").min_subnormal, 2f64.powi(-16));
    assert_eq!(p("fp32").epsilon, 2f64.powi(-23));
    assert_eq!(p("fp32").max_finite, f64::from(f32::MAX));
    assert_eq!(p("fp32").min_subnormal, 2f64.powi(-149));
    assert_eq!(p("tf32").epsilon, 2f64.powi(-10));
    assert!((p("fp32").decimal_digits - 7.2247).abs() < 1e-3);
}

// ---------------------------------------------------------------------------------------------
// Parsing as the authoring brief writes it

#[test]
fn brief_examples_parse() {
    let m = parse(
        "calc: matmul          # FLOPs, minimum bytes, intensity, and which roofline wall (H100) it hits\n\
         m: 4096\nn: 4096\nk: 4096\ndtype: bf16           # fp32, tf32, bf16, fp16, fp8\n",
    );
    match m {
        CalcSpec::Matmul(s) => assert_eq!((s.m, s.n, s.k, s.dtype), (4096, 4096, 4096, Dtype::Bf16)),
        other => panic!("{other:?}"),
    }
    match parse("calc: matmul\nm: 8\nn: 8\nk: 8\n") {
        CalcSpec::Matmul(s) => assert_eq!(s.dtype, Dtype::Fp32, "dtype defaults to fp32"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse("calc: training-memory # params, grads\nmodel: gpt2-124m      # gpt2-124m, llama3-8b\nbatch: 8\nseq: 1024\n"),
        CalcSpec::TrainingMemory(_)
    ));
    assert!(matches!(
        parse("calc: transformer-shapes   # tensor shapes\nmodel: gpt2-124m           # gpt2-124m, llama3-8b\nbatch: 2\nseq: 1024\n"),
        CalcSpec::TransformerShapes(_)
    ));
    match parse("calc: float-formats        # fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2: bits, range, eps, subnormals\n") {
        CalcSpec::FloatFormats(s) => assert_eq!(s.formats.len(), 6),
        other => panic!("{other:?}"),
    }
    match parse("calc: float-formats\nformats: [fp16, bf16]\n") {
        CalcSpec::FloatFormats(s) => assert_eq!(
            s.formats.iter().map(|f| f.name).collect::<Vec<_>>(),
            ["fp16", "bf16"]
        ),
        other => panic!("{other:?}"),
    }
    match parse("calc: float-formats\nformats:\n  - fp8-e4m3\n  - fp8-e5m2\n") {
        CalcSpec::FloatFormats(s) => assert_eq!(s.formats.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_key_names_its_line_and_the_allowed_keys() {
    let (line, msg, hint) = err("calc: matmul\nm: 4096\nn: 4096\nkk: 4096\n");
    assert_eq!(line, 4);
    assert!(msg.contains("unknown key `kk`"), "{msg}");
    for k in ["`m`", "`n`", "`k`", "`dtype`"] {
        assert!(hint.contains(k), "{hint}");
    }
    let (line, msg, _) = err("calc: training-memory\nmodel: gpt2-124m\nbatch: 8\nseq: 1024\nbench: sgemm\n");
    assert_eq!((line, msg.contains("`bench`")), (5, true));
}

#[test]
fn unknown_model_and_values() {
    let (line, msg, hint) = err("calc: training-memory\nmodel: gpt3-175b\nbatch: 8\nseq: 1024\n");
    assert_eq!(line, 2);
    assert!(msg.contains("unknown model `gpt3-175b`"), "{msg}");
    assert!(hint.contains("gpt2-124m") && hint.contains("llama3-8b"), "{hint}");

    let (line, _, hint) = err("calc: matmul\nm: 1\nn: 1\nk: 1\ndtype: int8\n");
    assert_eq!(line, 5);
    assert!(hint.contains("fp8"), "{hint}");

    for bad in ["0", "-3", "4k", "1.5", ""] {
        let (line, _, _) = err(&format!("calc: matmul\nm: {bad}\nn: 1\nk: 1\n"));
        assert_eq!(line, 2, "m: {bad}");
    }
    // seq beyond GPT-2's 1024 learned positions.
    assert_eq!(
        err("calc: transformer-shapes\nmodel: gpt2-124m\nbatch: 1\nseq: 2048\n").0,
        4
    );
    assert_eq!(err("calc: float-formats\nformats:\n  - fp16\n  - fp4\n").0, 4);
    assert_eq!(err("calc: float-formats\nformats: [fp16, e4m3]\n").0, 2);
}

#[test]
fn missing_key_points_at_the_calc_line() {
    let (line, msg, hint) = err("calc: matmul\nn: 4096\nk: 4096\n");
    assert_eq!(line, 1);
    assert!(msg.contains("missing key `m`"), "{msg}");
    assert!(hint.contains("`m`"), "{hint}");
    let (line, msg, _) = err("# a comment\ncalc: training-memory\nbatch: 8\nseq: 1024\n");
    assert_eq!(line, 2);
    assert!(msg.contains("missing key `model`"), "{msg}");
}

#[test]
fn unknown_calculator() {
    let (line, msg, hint) = err("calc: matmull\nm: 1\n");
    assert_eq!(line, 1);
    assert!(msg.contains("matmull"));
    assert!(hint.contains("transformer-shapes"));
}

#[test]
fn figure_blocks_route_calc_to_the_calculators() {
    assert!(matches!(
        hdlc::figspec::parse_figure("calc: float-formats\n", &hdlc::render::figures::known(&[])),
        Ok(hdlc::figspec::Figure::Calc(_))
    ));
    assert_eq!(
        hdlc::figspec::parse_figure("calc: matmul\nm: 2\nn: 2\n", &hdlc::render::figures::known(&[]))
            .unwrap_err()
            .0,
        1
    );
}

#[test]
fn odd_input_never_panics() {
    for body in [
        "",
        "calc:",
        "calc: ",
        "calc: matmul\nm: 99999999999999999999999999999\nn: 1\nk: 1",
        "calc: matmul\nm: [1, 2]\n",
        "calc: float-formats\nformats: []\n",
        "calc: float-formats\nformats:\n",
        "calc: matmul\n\u{0}: x",
        ":",
        "- - -",
        "calc: matmul\nm: 1099511627776\nn: 1099511627776\nk: 1099511627776\ndtype: fp8",
        "calc: training-memory\nmodel: llama3-8b\nbatch: 1048576\nseq: 16777216",
    ] {
        if let Ok(spec) = calc::parse(body) {
            let html = calc::render(&spec, &[]).unwrap();
            assert_one_block(&html);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rendering

#[test]
fn deterministic() {
    for body in [
        "calc: matmul\nm: 4096\nn: 4096\nk: 4096\ndtype: bf16\n",
        "calc: training-memory\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n",
        "calc: transformer-shapes\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n",
        "calc: float-formats\n",
    ] {
        assert_eq!(render(body), render(body));
    }
}

#[test]
fn matmul_html_says_what_is_datasheet() {
    let h = render("calc: matmul\nm: 4096\nn: 4096\nk: 4096\ndtype: bf16\n");
    assert!(h.contains("id=\"calc-matmul-4096x4096x4096-bf16\""));
    assert!(h.contains("137,438,953,472 FLOP"));
    assert!(h.contains("100,663,296 B"));
    assert!(h.contains("295.2 FLOP/B"), "ridge");
    assert!(h.contains("compute-bound"));
    assert!(h.contains("139 µs"), "lower bound 137.4e9 / 989e12 s");
    assert!(h.contains("NVIDIA H100 Tensor Core GPU datasheet (SXM5)"));
    assert!(h.contains("989 TFLOP/s") && h.contains("3.35 TB/s"));
    assert!(
        h.contains("m = 4,096, n = 4,096, k = 4,096, dtype = bf16"),
        "inputs listed in the caption"
    );
    assert!(
        h.contains("CPU 벤치마크를 측정하면"),
        "one line saying the CPU roofline comes once measured"
    );
}

fn record(variant: &str, baseline: bool, flops: f64, bytes: f64, ms: f64, date: &str) -> Record {
    Record {
        family: "cpu".into(),
        variant: variant.into(),
        label: format!("{variant} (fixture)"),
        rung: 0,
        baseline,
        params: BTreeMap::from([("n".to_string(), 1u64 << 24)]),
        key: format!("key-{variant}"),
        source_hash: String::new(),
        source_file: None,
        outcome: Outcome::Ok(Timing {
            rel_error: 1e-7,
            tolerance: 1e-5,
            reps: 10,
            median_ms: ms,
            p10_ms: ms,
            p90_ms: ms,
            flops,
            bytes,
            workspace_bytes: None,
            ..Default::default()
        }),
        provenance: Provenance {
            generator_version: "0.1.0".into(),
            git_commit: "test".into(),
            date: date.into(),
            frameworks: Default::default(),
            gpus: None,
            interconnect: None,
        },
        wall_s: None,
    }
}

/// A CPU roofline: triad 40 GB/s (4e8 B in 10 ms), matmul baseline 500 GFLOP/s (1e9 FLOP in 2 ms).
fn cpu_file() -> (PathBuf, ResultsFile) {
    let device = DeviceInfo {
        name: "Test CPU (fixture)".into(),
        compute_capability: String::new(),
        sm_count: 0,
        memory_bytes: 0,
        driver_version: String::new(),
        cuda_version: String::new(),
        nvrtc_version: String::new(),
        datasheet: None,
    };
    let mut failed = record("matmul_blocked", true, 9e12, 0.0, 1.0, "2026-01-01T00:00:00Z");
    failed.outcome = Outcome::Failed {
        stage: hdlc::measure::results::FailStage::Verify,
        error: "mismatch".into(),
    };
    let records = vec![
        record("triad", false, 0.0, 4e8, 10.0, "2026-01-01T00:00:00Z"),
        record("triad", false, 0.0, 4e6, 0.01, "2026-01-01T00:00:00Z"), // in cache: smaller problem, ignored
        record("matmul_blocked", true, 1e9, 0.0, 2.0, "2026-01-01T00:00:00Z"),
        record("matmul_naive", false, 1e12, 0.0, 1.0, "2026-01-01T00:00:00Z"), // not a baseline
        failed,
        Record {
            family: "sgemm".into(),
            ..record("cublas", true, 1e15, 0.0, 1.0, "2026-01-01T00:00:00Z")
        },
    ];
    (
        PathBuf::from("test-cpu.json"),
        ResultsFile {
            schema: 1,
            device,
            records,
        },
    )
}

#[test]
fn matmul_with_a_measured_cpu_roofline() {
    let files = [cpu_file()];
    let roof = matmul::cpu_roof(&files).expect("cpu roofline found");
    assert!((roof.bandwidth - 40e9).abs() < 1.0, "{}", roof.bandwidth);
    assert!((roof.peak - 500e9).abs() < 1.0, "{}", roof.peak);
    let h = render_with("calc: matmul\nm: 4096\nn: 4096\nk: 4096\n", &files);
    assert!(h.contains("CPU: Test CPU (fixture)"));
    assert!(h.contains("40 GB/s") && h.contains("500 GFLOP/s"));
    assert!(h.contains("12.5 FLOP/B"), "CPU ridge 500/40");
    assert!(!h.contains("CPU 벤치마크를 측정하면"));
    // No CPU records: no roofline.
    let mut gpu_only = cpu_file();
    gpu_only.1.records.retain(|r| r.family != "cpu");
    assert!(matmul::cpu_roof(&[gpu_only]).is_none());
    insta::assert_snapshot!("calc_matmul_cpu", h);
}

#[test]
fn training_memory_marks_the_h100_only_when_exceeded() {
    let small = render("calc: training-memory\nmodel: gpt2-124m\nbatch: 8\nseq: 1024\n");
    assert!(!small.contains("H100 80 GB</text>"));
    assert!(small.contains("124,439,808"));
    assert!(small.contains("19,204,460,544 B") && small.contains("17.89 GiB"));
    assert!(small.contains("#4e79a7") && small.contains("#e15759"));
    assert!(small.contains("currentColor") && small.contains("font-family=\"sans-serif\""));
    let big = render("calc: training-memory\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n");
    assert!(big.contains("H100 80 GB</text>"));
    assert!(big.contains("8,030,261,248"));
    assert!(
        big.contains("근사"),
        "the caption says the activation formula is an approximation for Llama"
    );
}

#[test]
fn shapes_table_names_dims_and_counts_flops() {
    let h = render("calc: transformer-shapes\nmodel: gpt2-124m\nbatch: 2\nseq: 1024\n");
    assert!(h.contains("[B=2, S=1,024, d=768]"));
    assert!(h.contains("[B=2, H=12, S=1,024, S=1,024]"));
    assert!(h.contains("GELU") && h.contains("d_ff=3,072"));
    assert!(h.contains("7,087,872"), "block weights = per-layer params");
    let l = render("calc: transformer-shapes\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n");
    assert!(l.contains("H_kv=8") && l.contains("[d=4,096, H_kv·d_h=1,024]"));
    assert!(l.contains("SwiGLU") && l.contains("d_ff=14,336"));
    assert!(l.contains("218,112,000"));
}

#[test]
fn float_formats_html() {
    let h = render("calc: float-formats\n");
    assert!(h.contains("<th>FP8 E4M3</th>"));
    assert!(h.contains("= 65,504") && h.contains("= 448") && h.contains("= 57,344"));
    assert!(h.contains("3.390\u{a0}×\u{a0}10<sup>38</sup>"), "bf16 max");
    assert!(h.contains("2<sup>−24</sup>"), "fp16 min subnormal");
    assert!(h.contains("(m + 1)"), "says which digits formula");
    let two = render("calc: float-formats\nformats: [fp16, bf16]\n");
    assert!(two.contains("id=\"calc-float-formats-fp16-bf16\""));
    assert!(!two.contains("E4M3</th>"));
}

#[test]
fn snapshot_matmul() {
    insta::assert_snapshot!(
        "calc_matmul",
        render("calc: matmul\nm: 4096\nn: 4096\nk: 4096\ndtype: bf16\ncaption: 큰 정사각 행렬 곱\n")
    );
}

#[test]
fn snapshot_training_memory() {
    insta::assert_snapshot!(
        "calc_training_memory_gpt2",
        render("calc: training-memory\nmodel: gpt2-124m\nbatch: 8\nseq: 1024\n")
    );
    insta::assert_snapshot!(
        "calc_training_memory_llama",
        render("calc: training-memory\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n")
    );
}

#[test]
fn snapshot_transformer_shapes() {
    insta::assert_snapshot!(
        "calc_transformer_shapes_gpt2",
        render("calc: transformer-shapes\nmodel: gpt2-124m\nbatch: 2\nseq: 1024\n")
    );
    insta::assert_snapshot!(
        "calc_transformer_shapes_llama",
        render("calc: transformer-shapes\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n")
    );
}

#[test]
fn snapshot_float_formats() {
    insta::assert_snapshot!("calc_float_formats", render("calc: float-formats\n"));
}

// ---------------------------------------------------------------------------------------------
// `check` on a book with calc blocks

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The `valid` fixture book with `extra` appended to `cards/intensity.md`.
fn check_with(extra: &str) -> (bool, String, usize) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/books/valid");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let card = dir.path().join("cards/intensity.md");
    let mut text = std::fs::read_to_string(&card).unwrap();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let lines_before = text.lines().count();
    text.push_str(extra);
    std::fs::write(&card, text).unwrap();
    let out = Command::cargo_bin("hdlc")
        .unwrap()
        .arg("--root")
        .arg(dir.path())
        .arg("check")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stderr).unwrap(),
        lines_before,
    )
}

#[test]
fn check_accepts_the_brief_blocks() {
    let blocks = "\n```figure\ncalc: matmul          # FLOPs\nm: 4096\nn: 4096\nk: 4096\ndtype: bf16           # fp32, tf32, bf16, fp16, fp8\n```\n\n\
                  ```figure\ncalc: training-memory # params\nmodel: gpt2-124m      # gpt2-124m, llama3-8b\nbatch: 8\nseq: 1024\n```\n\n\
                  ```figure\ncalc: transformer-shapes\nmodel: llama3-8b\nbatch: 2\nseq: 1024\n```\n\n\
                  ```figure\ncalc: float-formats        # all\n```\n";
    let (ok, stderr, _) = check_with(blocks);
    assert!(ok && stderr.is_empty(), "{stderr}");
}

#[test]
fn check_reports_a_broken_block_at_its_line() {
    // Blank line, fence, `calc:`, `m:`, `n:`, then the bad key on the sixth appended line.
    let (ok, stderr, before) = check_with("\n```figure\ncalc: matmul\nm: 4096\nn: 4096\nkk: 4096\n```\n");
    assert!(!ok, "{stderr}");
    let want = format!("cards/intensity.md:{}:", before + 6);
    assert!(
        stderr.contains(&want) && stderr.contains("unknown key `kk`"),
        "want {want}:\n{stderr}"
    );
    assert!(
        stderr.contains("hint: allowed keys for `calc: matmul`"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
