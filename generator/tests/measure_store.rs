//! Results files: loading (schema check), merging, atomic writes, picking the best record, and
//! the no-GPU path of `measure`.

use hdlc::measure::results::*;
use hdlc::measure::store::{best_ok, load_dir, merge, metric, parse_results, save_atomic};
use hdlc::measure::{baseline_ok, measure, MeasureOptions};
use std::collections::BTreeMap;
use std::path::Path;

fn device() -> DeviceInfo {
    DeviceInfo {
        name: "Test GPU".into(),
        compute_capability: "9.0".into(),
        sm_count: 132,
        memory_bytes: 1 << 30,
        driver_version: "580".into(),
        cuda_version: "13.0".into(),
        nvrtc_version: "13.0".into(),
        datasheet: None,
    }
}

fn timing(ms: f64, bytes: f64) -> Timing {
    Timing {
        rel_error: 0.0,
        tolerance: 1e-5,
        reps: 20,
        median_ms: ms,
        p10_ms: ms * 0.9,
        p90_ms: ms * 1.1,
        flops: 0.0,
        bytes,
        workspace_bytes: None,
        ..Default::default()
    }
}

fn rec(family: &str, variant: &str, n: u64, outcome: Outcome) -> Record {
    Record {
        family: family.into(),
        variant: variant.into(),
        label: variant.into(),
        rung: 1,
        baseline: variant == "memcpy",
        params: [("n".to_string(), n)].into_iter().collect(),
        key: format!("{family}-{variant}-{n}"),
        source_hash: String::new(),
        source_file: None,
        outcome,
        provenance: Provenance {
            generator_version: "0".into(),
            git_commit: "x".into(),
            date: "2026-01-01T00:00:00Z".into(),
            frameworks: Default::default(),
            gpus: None,
            interconnect: None,
        },
        wall_s: None,
    }
}

fn ok(family: &str, variant: &str, n: u64, ms: f64) -> Record {
    rec(family, variant, n, Outcome::Ok(timing(ms, 1e9)))
}

fn failed(family: &str, variant: &str, n: u64) -> Record {
    rec(
        family,
        variant,
        n,
        Outcome::Failed {
            stage: FailStage::Verify,
            error: "relative error 1e-1".into(),
        },
    )
}

#[test]
fn merge_replaces_same_slot_and_keeps_others() {
    let mut file = ResultsFile {
        schema: SCHEMA_VERSION,
        device: device(),
        records: vec![
            ok("bandwidth", "copy_naive", 1, 2.0),
            ok("bandwidth", "copy_vec4", 1, 1.0),
            ok("bandwidth", "copy_naive", 2, 5.0),
        ],
    };
    merge(
        &mut file,
        vec![
            ok("bandwidth", "copy_naive", 1, 3.0),
            ok("gemv", "gemv_naive", 1, 7.0),
        ],
    );
    assert_eq!(file.records.len(), 4, "one replaced, one added");
    let find = |v: &str, n: u64| {
        file.records
            .iter()
            .filter(|r| r.variant == v && r.params["n"] == n)
            .collect::<Vec<_>>()
    };
    let naive1 = find("copy_naive", 1);
    assert_eq!(naive1.len(), 1);
    assert!(
        matches!(&naive1[0].outcome, Outcome::Ok(t) if t.median_ms == 3.0),
        "replaced by the new record"
    );
    assert!(
        matches!(&find("copy_naive", 2)[0].outcome, Outcome::Ok(t) if t.median_ms == 5.0),
        "other params kept"
    );
    assert_eq!(find("copy_vec4", 1).len(), 1, "other variant kept");
    assert_eq!(find("gemv_naive", 1).len(), 1, "new slot added");
}

#[test]
fn merge_replaces_success_with_failure_too() {
    let mut file = ResultsFile {
        schema: SCHEMA_VERSION,
        device: device(),
        records: vec![ok("sgemm", "sgemm_naive", 1, 2.0)],
    };
    merge(&mut file, vec![failed("sgemm", "sgemm_naive", 1)]);
    assert_eq!(file.records.len(), 1);
    assert_eq!(
        metric(&file.records[0]),
        None,
        "a stale number must not survive a failed re-measurement"
    );
}

#[test]
fn failed_records_never_yield_a_number() {
    let recs = vec![
        ok("bandwidth", "copy_naive", 1, 4.0),
        failed("bandwidth", "copy_vec4", 1),
        ok("bandwidth", "memcpy", 1, 0.5),
    ];
    assert_eq!(metric(&recs[1]), None);
    let best = best_ok(&recs, "bandwidth", None).expect("one success");
    assert_eq!(best.variant, "copy_naive", "failure skipped, baseline excluded");
    let only_failed = vec![failed("bandwidth", "copy_vec4", 1)];
    assert!(best_ok(&only_failed, "bandwidth", None).is_none());
    let p: BTreeMap<String, u64> = [("n".to_string(), 1)].into_iter().collect();
    assert_eq!(
        baseline_ok(&recs, "bandwidth", &p).map(|r| r.variant.as_str()),
        Some("memcpy")
    );
    assert!(baseline_ok(&[failed("bandwidth", "memcpy", 1)], "bandwidth", &p).is_none());
}

#[test]
fn best_ok_ranks_by_metric_and_filters_params() {
    let recs = vec![
        ok("bandwidth", "copy_naive", 1, 4.0),
        ok("bandwidth", "copy_vec4", 1, 1.0),
        ok("bandwidth", "copy_grid_stride", 2, 0.1),
    ];
    let p1: BTreeMap<String, u64> = [("n".to_string(), 1)].into_iter().collect();
    assert_eq!(
        best_ok(&recs, "bandwidth", Some(&p1)).unwrap().variant,
        "copy_vec4"
    );
    assert_eq!(
        best_ok(&recs, "bandwidth", None).unwrap().variant,
        "copy_grid_stride"
    );
    assert!(best_ok(&recs, "gemv", None).is_none());
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn loading_rejects_unknown_schema_and_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kernels/results");
    let good = ResultsFile {
        schema: SCHEMA_VERSION,
        device: device(),
        records: vec![ok("gemv", "gemv_naive", 1, 1.0)],
    };
    write(&dir, "a-good.json", &serde_json::to_string(&good).unwrap());
    let mut future = serde_json::to_value(&good).unwrap();
    future["schema"] = serde_json::json!(SCHEMA_VERSION + 1);
    write(&dir, "b-future.json", &future.to_string());
    let err = load_dir(&dir).unwrap_err().to_string();
    assert!(err.contains("b-future.json"), "error names the file: {err}");
    assert!(err.contains("schema"), "error says why: {err}");

    std::fs::remove_file(dir.join("b-future.json")).unwrap();
    let loaded = load_dir(&dir).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].1, good);
}

#[test]
fn loading_reports_malformed_json_with_the_file() {
    let e = parse_results(Path::new("kernels/results/x.json"), "{ not json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("kernels/results/x.json"), "{e}");
    let e = parse_results(Path::new("y.json"), "{\"records\": []}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("y.json") && e.contains("schema"), "{e}");
}

#[test]
fn missing_results_dir_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(load_dir(&tmp.path().join("nope")).unwrap().is_empty());
}

#[test]
fn save_atomic_round_trips_and_leaves_no_temp_files() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("results/dev.json");
    let file = ResultsFile {
        schema: SCHEMA_VERSION,
        device: device(),
        records: vec![
            ok("gemv", "gemv_naive", 1, 1.0),
            failed("gemv", "gemv_warp_vec4", 1),
        ],
    };
    save_atomic(&path, &file).unwrap();
    save_atomic(&path, &file).unwrap(); // replace an existing file
    let back = parse_results(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(back, file);
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "only the results file: {names:?}");
}

#[test]
fn measure_without_gpu_returns_shipped_results() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kernels/results");
    let good = ResultsFile {
        schema: SCHEMA_VERSION,
        device: device(),
        records: vec![ok("gemv", "gemv_naive", 1, 1.0)],
    };
    write(
        &dir,
        "test-gpu.json",
        &serde_json::to_string_pretty(&good).unwrap(),
    );
    let opts = MeasureOptions {
        root: tmp.path().to_path_buf(),
        families: vec![],
        force: false,
        strict: true,
        progress: false,
        use_gpu: false,
        labs: hdlc::measure::LabSelection::None,
    };
    let m = measure(&opts).unwrap();
    assert_eq!(m.files.len(), 1);
    assert_eq!(m.files[0].1, good);
    assert!(m.local_device.is_none());
    assert!(!m.notes.is_empty());
    // The shipped file is untouched.
    assert_eq!(
        std::fs::read_to_string(dir.join("test-gpu.json")).unwrap(),
        serde_json::to_string_pretty(&good).unwrap()
    );
}

#[test]
fn measure_rejects_unknown_family_and_bad_files() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = MeasureOptions {
        root: tmp.path().to_path_buf(),
        families: vec!["nope".into()],
        force: false,
        strict: false,
        progress: false,
        use_gpu: false,
        labs: hdlc::measure::LabSelection::None,
    };
    let e = measure(&opts).unwrap_err().to_string();
    assert!(e.contains("nope"), "{e}");
    write(
        &tmp.path().join("kernels/results"),
        "bad.json",
        "{\"schema\": 99}",
    );
    let opts = MeasureOptions {
        families: vec![],
        ..opts
    };
    let e = measure(&opts).unwrap_err().to_string();
    assert!(e.contains("bad.json"), "{e}");
}

#[test]
fn device_slug_and_driver_version() {
    use hdlc::measure::device::{datasheet_for, parse_driver_version, slug};
    assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
    assert_eq!(slug("  A/B__c  "), "a-b-c");
    assert_eq!(slug("!!"), "unknown-device");
    let text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  Thu Oct 30\nGCC version:  gcc version 12.2.0\n";
    assert_eq!(parse_driver_version(text).as_deref(), Some("580.159.04"));
    assert_eq!(parse_driver_version("nothing here"), None);
    assert_eq!(
        datasheet_for("NVIDIA H100 80GB HBM3").map(|d| d.memory_bandwidth_gbs),
        Some(3350.0)
    );
    assert!(datasheet_for("NVIDIA H100 PCIe").is_none());
    assert!(datasheet_for("NVIDIA A100").is_none());
}

#[test]
fn shipped_results_load_and_hold_only_verified_numbers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/results");
    let files = load_dir(&dir).expect("shipped results load");
    for (path, file) in &files {
        assert!(!file.records.is_empty(), "{}", path.display());
        for r in &file.records {
            match &r.outcome {
                Outcome::Ok(t) => {
                    assert!(
                        t.rel_error.is_finite() && t.rel_error <= t.tolerance,
                        "{}: {}/{} unverified",
                        path.display(),
                        r.family,
                        r.variant
                    );
                    assert!(
                        t.median_ms > 0.0 && t.p10_ms <= t.median_ms && t.median_ms <= t.p90_ms,
                        "{}/{}",
                        r.family,
                        r.variant
                    );
                    assert!(metric(r).is_some_and(f64::is_finite));
                }
                // A lab's failure is shipped as measured (the figure shows it as failed, with its
                // error); a kernel family's shipped results must all have passed.
                Outcome::Failed { .. } if !hdlc::measure::families().contains(&r.family.as_str()) => {}
                Outcome::Failed { stage, error } => {
                    assert_eq!(
                        *stage,
                        FailStage::Unsupported,
                        "{}: {}/{} failed: {error}",
                        path.display(),
                        r.family,
                        r.variant
                    )
                }
            }
        }
    }
}

#[test]
fn flops_families_and_optional_workspace() {
    use hdlc::measure::{metric_unit, uses_flops};
    for f in ["sgemm", "tc_gemm", "attention"] {
        assert!(uses_flops(f), "{f}");
        assert_eq!(metric_unit(f), "GFLOP/s");
    }
    for f in ["bandwidth", "gemv", "rmsnorm", "softmax"] {
        assert!(!uses_flops(f), "{f}");
    }
    // Records written before workspace_bytes existed still load (None), and None is not written.
    let old = r#"{"rel_error":0.0,"tolerance":0.0,"reps":5,"median_ms":1.0,"p10_ms":1.0,"p90_ms":1.0,"flops":0.0,"bytes":8.0}"#;
    let t: Timing = serde_json::from_str(old).unwrap();
    assert_eq!(t.workspace_bytes, None);
    assert!(!serde_json::to_string(&t).unwrap().contains("workspace"));
    let with = Timing {
        workspace_bytes: Some(4096.0),
        ..t
    };
    let back: Timing = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back.workspace_bytes, Some(4096.0));
}

/// The shipped H100 results draw for the new families in every view, in FLOP/s, and a skipped
/// (out of memory) point is shown as such rather than as a number.
#[test]
fn shipped_tensor_core_and_attention_results_render() {
    use hdlc::figspec::FigureSpec;
    use hdlc::render::figures::render_figure;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/results");
    let files = load_dir(&dir).expect("shipped results load");
    if !files
        .iter()
        .any(|(_, f)| f.records.iter().any(|r| r.family == "attention"))
    {
        return;
    }
    for bench in ["tc_gemm", "attention"] {
        for show in ["ladder", "scaling", "table", "roofline"] {
            let spec = FigureSpec::new(bench, show);
            let html = render_figure(&spec, &files, None).unwrap_or_else(|e| panic!("{bench}/{show}: {e}"));
            assert!(html.contains("<svg") || html.contains("<table"), "{bench}/{show}");
            if show == "ladder" {
                assert!(html.contains("FLOP/s"), "{bench}/{show} in FLOP/s");
            }
        }
    }
    let spec = FigureSpec {
        size: Some(16384),
        ..FigureSpec::new("attention", "table")
    };
    let html = render_figure(&spec, &files, None).unwrap();
    assert!(
        html.contains("out of memory") || html.contains("skipped") || html.contains("실패"),
        "{html}"
    );
}

#[test]
fn prune_drops_only_unplanned_records_of_the_measured_families() {
    use hdlc::measure::store::prune_unplanned;
    let planned = hdlc::measure::items("bandwidth");
    let kept = planned.iter().find(|i| i.variant == "copy_vec4").unwrap();
    let mut in_plan = ok("bandwidth", "copy_vec4", kept.p("n"), 1.0);
    in_plan.params = kept.params.clone();
    let mut file = ResultsFile {
        schema: SCHEMA_VERSION,
        device: device(),
        records: vec![
            in_plan,
            ok("bandwidth", "copy_vec4", 12345, 1.0), // a size the plan no longer has
            ok("bandwidth", "retired_variant", kept.p("n"), 1.0),
            ok("softmax", "anything", 7, 1.0), // a family not measured in this run
            ok("lab_family", "x", 1, 1.0),
        ],
    };
    assert_eq!(prune_unplanned(&mut file, &["bandwidth"], &planned), 2);
    let left: Vec<(&str, &str)> = file
        .records
        .iter()
        .map(|r| (r.family.as_str(), r.variant.as_str()))
        .collect();
    assert_eq!(
        left,
        [
            ("bandwidth", "copy_vec4"),
            ("softmax", "anything"),
            ("lab_family", "x")
        ]
    );
    assert_eq!(file.records[0].params, kept.params);
}
