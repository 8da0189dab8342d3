//! The lab runner against fake labs: tiny Python scripts with no framework, written into a
//! temporary book. Each case asserts what ends up in the results file (and so in the book):
//! valid records, a failed check, garbage on stdout, a crash, a time-out that also kills the
//! lab's own child process, and cache hits.
//!
//! Needs `python3`; skipped with a message when it is missing, unless `HDLC_REQUIRE_PYTHON=1`
//! (CI sets it).

mod common;
use hdlc::diag::Diagnostics;
use hdlc::measure::labs::{self, manifest::Lab, probe::Env};
use hdlc::measure::progress::Progress;
use hdlc::measure::results::{DeviceInfo, FailStage, Outcome, Provenance, Record, ResultsFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

fn python_present() -> bool {
    common::python_present()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A temporary book root with the real labkit.py and probe.py and the given fake labs.
fn fake_book(manifest: &str, labs: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let labs_dir = dir.path().join("kernels/labs");
    std::fs::create_dir_all(labs_dir.join("fake")).unwrap();
    for f in ["labkit.py", "probe.py"] {
        std::fs::copy(repo().join("kernels/labs").join(f), labs_dir.join(f)).unwrap();
    }
    std::fs::write(labs_dir.join("fake/labs.yaml"), manifest).unwrap();
    for (name, text) in labs {
        std::fs::write(labs_dir.join("fake").join(name), text).unwrap();
    }
    dir
}

const HEADER: &str = "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))\nimport labkit\n";

fn device() -> DeviceInfo {
    common::test_device()
}

fn env() -> Env {
    let mut versions = BTreeMap::new();
    versions.insert("python".to_string(), "3.x".to_string());
    versions.insert("torch".to_string(), "2.11.0".to_string());
    Env {
        versions,
        gpu: Some("Test GPU".into()),
        gpus: 1,
        interconnect: None,
    }
}

fn provenance() -> Provenance {
    Provenance {
        generator_version: "test".into(),
        git_commit: "test".into(),
        date: "2026-01-01T00:00:00Z".into(),
        frameworks: BTreeMap::new(),
        gpus: None,
        interconnect: None,
    }
}

fn load(root: &Path) -> Vec<Lab> {
    let mut d = Diagnostics::new();
    let labs = labs::load_manifests(root, &["softmax"], &mut d);
    assert_eq!(d.error_count(), 0, "{:?}", d.sorted());
    labs
}

/// Run every lab of the fake book into an empty results file.
fn run_all(root: &Path) -> (ResultsFile, Vec<String>) {
    let labs = load(root);
    let mut file = ResultsFile {
        schema: 1,
        device: device(),
        records: Vec::new(),
    };
    let mut notes = Vec::new();
    let (planned, _) = labs::plan(root, &labs, &env(), &device(), &file, false, &mut notes);
    let mut saves = 0;
    let (progress, _) = Progress::collecting();
    let stop = AtomicBool::new(false);
    let prov = provenance();
    let run = lab_run(root, &prov, &progress, &stop);
    labs::run_planned(&run, &planned, &mut file, &mut notes, &mut |_| saves += 1);
    assert_eq!(saves, planned.len(), "one save per lab");
    (file, notes)
}

/// The settings of a lab run in these tests (seed 7, no time estimates).
fn lab_run<'a>(
    root: &'a Path,
    prov: &'a Provenance,
    progress: &'a Progress,
    stop: &'a AtomicBool,
) -> labs::LabRun<'a> {
    labs::LabRun {
        root,
        provenance: prov,
        seed: 7,
        progress,
        stop,
        expected: &|_| None,
    }
}

fn failure(file: &ResultsFile, variant: &str) -> (FailStage, String) {
    let r = file
        .records
        .iter()
        .find(|r| r.variant == variant)
        .unwrap_or_else(|| panic!("no record `{variant}` in {:#?}", file.records));
    match &r.outcome {
        Outcome::Failed { stage, error } => (*stage, error.clone()),
        Outcome::Ok(_) => panic!("`{variant}` should have failed"),
    }
}

#[test]
fn valid_records_are_stored_with_key_source_and_frameworks() {
    if !python_present() {
        return;
    }
    let lab = format!(
        "{HEADER}t = {{'reps': 20, 'median_ms': 2.0, 'p10_ms': 1.9, 'p90_ms': 2.2}}\n\
         labkit.ok('copy', 'plain copy', {{'n': 1024}}, t, rel_error=0.0, tolerance=0.0, bytes=8192, baseline=True)\n\
         labkit.ok('fast', 'fast one', {{'n': 1024}}, t, rel_error=1e-7, tolerance=1e-5, bytes=8192,\n\
                   metrics={{'tokens_per_s': 123.5}}, series={{'loss': [(0, 5.0), (10, 2.5)]}},\n\
                   tables={{'top': {{'columns': ['kernel', 'ms'], 'rows': [['gemm', 1.5]]}}}})\n\
         print('this goes to stderr, not into the records')\n\
         labkit.failed('cudnn', 'cuDNN', {{'n': 1024}}, 'unsupported', 'no cuDNN here')\n"
    );
    let book = fake_book(
        "- id: good\n  file: good.py\n  family: fake_family\n  requires: [torch, gpu]\n",
        &[("good.py", &lab)],
    );
    let (file, notes) = run_all(book.path());
    assert_eq!(file.records.len(), 3, "{notes:?} {:#?}", file.records);
    let fast: &Record = file.records.iter().find(|r| r.variant == "fast").unwrap();
    assert_eq!(fast.family, "fake_family");
    assert_eq!(fast.source_file.as_deref(), Some("labs/fake/good.py"));
    assert_eq!(
        fast.provenance.frameworks.get("torch").map(String::as_str),
        Some("2.11.0")
    );
    assert!(fast.provenance.frameworks.contains_key("python"));
    assert_eq!(fast.key.len(), 64);
    let Outcome::Ok(t) = &fast.outcome else { panic!() };
    assert_eq!(t.metrics["tokens_per_s"], 123.5);
    assert_eq!(t.series["loss"], vec![[0.0, 5.0], [10.0, 2.5]]);
    assert_eq!(t.tables["top"].rows.len(), 1);
    assert!(file.records.iter().any(|r| r.variant == "copy" && r.baseline));
    assert_eq!(failure(&file, "cudnn").0, FailStage::Unsupported);

    // The same key again: nothing to run.
    let labs = load(book.path());
    let mut notes = Vec::new();
    let (planned, cached) = labs::plan(book.path(), &labs, &env(), &device(), &file, false, &mut notes);
    assert!(planned.is_empty() && cached == 1);
    // A new framework version, or an edited module the lab imports, invalidates it.
    let mut newer = env();
    newer.versions.insert("torch".into(), "2.12.0".into());
    assert_eq!(
        labs::plan(book.path(), &labs, &newer, &device(), &file, false, &mut notes)
            .0
            .len(),
        1
    );
    std::fs::write(book.path().join("kernels/labs/fake/helper.py"), "X = 1\n").unwrap();
    let with_import = format!("import helper\n{lab}");
    std::fs::write(book.path().join("kernels/labs/fake/good.py"), &with_import).unwrap();
    let (p1, _) = labs::plan(book.path(), &labs, &env(), &device(), &file, false, &mut notes);
    assert_eq!(p1.len(), 1, "edited lab re-measured");
    let mut file2 = file.clone();
    for r in &mut file2.records {
        r.key = p1[0].key.clone();
    }
    std::fs::write(book.path().join("kernels/labs/fake/helper.py"), "X = 2\n").unwrap();
    let (p2, _) = labs::plan(book.path(), &labs, &env(), &device(), &file2, false, &mut notes);
    assert_eq!(p2.len(), 1, "a changed imported module changes the key");
    assert_ne!(p2[0].key, p1[0].key);
}

#[test]
fn failed_checks_garbage_crashes_and_bad_records_are_failures() {
    if !python_present() {
        return;
    }
    let t = "t = {'reps': 5, 'median_ms': 1.0, 'p10_ms': 1.0, 'p90_ms': 1.0}\n";
    let verify = format!(
        "{HEADER}{t}labkit.failed('wrong', 'wrong kernel', {{'n': 1}}, 'verify', 'rel_error 3e-1 exceeds 1e-5')\n\
         labkit.ok('liar', 'claims ok', {{'n': 1}}, t, rel_error=0.5, tolerance=1e-3)\n"
    );
    let garbage = "print('hello, world')\n";
    let crash = format!("{HEADER}{t}labkit.ok('a', 'a', {{'n': 1}}, t, rel_error=0, tolerance=0)\nraise RuntimeError('CUDA error: out of memory')\n");
    let missing = "import json\nprint(json.dumps({'variant': 'x', 'label': 'x', 'params': {}, 'status': 'ok', 'median_ms': 1.0}))\n";
    let backwards = "import json\nprint(json.dumps({'variant': 'x', 'label': 'x', 'params': {}, 'status': 'ok', 'rel_error': 0, 'tolerance': 0, 'reps': 3, 'median_ms': 1.0, 'p10_ms': 2.0, 'p90_ms': 3.0, 'flops': 0, 'bytes': 0}))\n";
    let typo = "import json\nprint(json.dumps({'variant': 'x', 'label': 'x', 'params': {}, 'status': 'ok', 'median': 1.0}))\n";
    let silent = "pass\n";
    let manifest = [
        ("verify", "verify.py"),
        ("garbage", "garbage.py"),
        ("crash", "crash.py"),
        ("missing", "missing.py"),
        ("backwards", "backwards.py"),
        ("typo", "typo.py"),
        ("silent", "silent.py"),
    ]
    .iter()
    .map(|(id, f)| format!("- id: {id}\n  file: {f}\n  family: fam_{id}\n"))
    .collect::<String>();
    let book = fake_book(
        &manifest,
        &[
            ("verify.py", &verify),
            ("garbage.py", garbage),
            ("crash.py", &crash),
            ("missing.py", missing),
            ("backwards.py", backwards),
            ("typo.py", typo),
            ("silent.py", silent),
        ],
    );
    let (file, _) = run_all(book.path());
    assert_eq!(failure(&file, "wrong").0, FailStage::Verify);
    let (stage, err) = failure(&file, "liar");
    assert_eq!(stage, FailStage::Verify);
    assert!(err.contains("exceeds its tolerance"), "{err}");
    let (stage, err) = failure(&file, "garbage");
    assert_eq!(stage, FailStage::Output);
    assert!(
        err.contains("garbage") && err.contains("line 1") && err.contains("hello"),
        "{err}"
    );
    let (stage, err) = failure(&file, "crash");
    assert_eq!(stage, FailStage::Crash);
    assert!(err.contains("out of memory"), "{err}");
    assert!(
        !file
            .records
            .iter()
            .any(|r| r.family == "fam_crash" && r.variant == "a"),
        "records printed before a crash are not kept"
    );
    assert!(failure(&file, "missing").1.contains("rel_error"));
    assert!(failure(&file, "backwards").1.contains("out of order"));
    assert!(failure(&file, "typo").1.contains("median"));
    assert!(failure(&file, "silent").1.contains("no records"));
    for r in &file.records {
        assert!(
            matches!(r.outcome, Outcome::Failed { .. }),
            "{} should be a failure",
            r.variant
        );
    }
}

#[test]
fn a_lab_that_outlives_its_timeout_is_killed_with_its_children() {
    if !python_present() {
        return;
    }
    let marker = tempfile::tempdir().unwrap();
    let flag = marker.path().join("child-still-alive");
    let lab = format!(
        "import subprocess, sys, time\n\
         subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3); open({flag:?}, \"w\").write(\"x\")'])\n\
         time.sleep(60)\n"
    );
    let book = fake_book(
        "- id: slow\n  file: slow.py\n  timeout_s: 1\n",
        &[("slow.py", &lab)],
    );
    let t = Instant::now();
    let (file, _) = run_all(book.path());
    assert!(t.elapsed().as_secs() < 10, "took {:?}", t.elapsed());
    let (stage, err) = failure(&file, "slow");
    assert_eq!(stage, FailStage::Timeout);
    assert!(err.contains("1 s"), "{err}");
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(!flag.exists(), "the lab's child process survived the time-out");
}

#[test]
fn labs_that_cannot_run_here_keep_their_shipped_results() {
    let book = fake_book(
        "- id: jaxlab\n  file: j.py\n  requires: [jax, gpu]\n- id: gpulab\n  file: g.py\n  requires: [gpu]\n",
        &[("j.py", "pass\n"), ("g.py", "pass\n")],
    );
    let labs = load(book.path());
    let mut notes = Vec::new();
    let mut no_gpu = env();
    no_gpu.gpu = None;
    let (planned, _) = labs::plan(
        book.path(),
        &labs,
        &no_gpu,
        &device(),
        &ResultsFile {
            schema: 1,
            device: device(),
            records: vec![],
        },
        true,
        &mut notes,
    );
    assert!(planned.is_empty());
    assert!(
        notes
            .iter()
            .any(|n| n.contains("jaxlab") && n.contains("needs jax")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("gpulab") && n.contains("GPU")),
        "{notes:?}"
    );
}

#[test]
fn the_probe_reports_versions() {
    if !python_present() {
        return;
    }
    let env = labs::probe::run(&repo(), &labs::python()).unwrap();
    assert!(env.versions.contains_key("python"));
    assert!(labs::probe::parse("garbage").is_err());
    let e = labs::probe::parse("{\"python\": \"3.12.3\", \"torch\": \"2.11.0\", \"gpu\": \"NVIDIA H100\"}")
        .unwrap();
    assert_eq!(e.gpu.as_deref(), Some("NVIDIA H100"));
    assert_eq!(e.versions["torch"], "2.11.0");
}

#[test]
fn manifest_errors_name_file_and_line() {
    let entries = "- id: ok_lab\n  file: a.py\n- id: Bad-Id\n  file: a.py\n- id: two\n  file: missing.py\n  requires: [tensorflow]\n- id: three\n  file: a.py\n  family: softmax\n- id: ok_lab\n  file: a.py\n- id: four\n  file: a.py\n";
    // An unknown key is a syntax-level error: the manifest yields no labs, the line is named.
    let book = fake_book(&format!("{entries}  colour: red\n"), &[("a.py", "pass\n")]);
    let mut d = Diagnostics::new();
    let labs = labs::load_manifests(book.path(), &["softmax"], &mut d);
    let all = d
        .sorted()
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        all.contains("labs.yaml:15:1: lab manifest:") && all.contains("unknown field `colour`"),
        "{all}"
    );
    assert!(labs.is_empty());
    // Entry-level errors: each with its line; the good labs still load.
    let book = fake_book(entries, &[("a.py", "pass\n")]);
    let mut d = Diagnostics::new();
    let labs = labs::load_manifests(book.path(), &["softmax"], &mut d);
    let all = d
        .sorted()
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        all.contains("labs.yaml:3:1: lab id `Bad-Id` is not snake_case"),
        "{all}"
    );
    assert!(all.contains("labs.yaml:6:1: no lab file"), "{all}");
    assert!(
        all.contains("labs.yaml:7:1: unknown requirement `tensorflow`"),
        "{all}"
    );
    assert!(
        all.contains("labs.yaml:10:1: family `softmax` belongs to the CUDA harness"),
        "{all}"
    );
    assert!(all.contains("labs.yaml:11:1: duplicate lab id `ok_lab`"), "{all}");
    assert_eq!(d.error_count(), 5, "{all}");
    let ids: Vec<&str> = labs.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["ok_lab", "four"]);
}

/// What a reader sees when the output is not a terminal: one line per lab with its name, time,
/// status and record count. And Ctrl-C after the first lab: its records are saved, the second lab
/// never starts, and the run says it was interrupted.
#[test]
fn each_lab_is_logged_and_an_interrupt_keeps_what_is_done() {
    if !python_present() {
        return;
    }
    let t = "t = {'reps': 5, 'median_ms': 1.0, 'p10_ms': 0.9, 'p90_ms': 1.1}\n";
    let ok = |v: &str| {
        format!("{HEADER}{t}labkit.ok('{v}', '{v}', {{'n': 1}}, t, rel_error=0.0, tolerance=0.0, bytes=8)\n")
    };
    let crash = format!("{HEADER}raise SystemExit('no GPU here')\n");
    let book = fake_book(
        "- id: first\n  file: first.py\n  family: fam_a\n  requires: [torch]\n\
         - id: second\n  file: second.py\n  family: fam_b\n  requires: [torch]\n\
         - id: third\n  file: third.py\n  family: fam_c\n  requires: [torch]\n",
        &[
            ("first.py", &ok("a")),
            ("second.py", &crash),
            ("third.py", &ok("c")),
        ],
    );
    let labs = load(book.path());
    let new_file = || ResultsFile {
        schema: 1,
        device: device(),
        records: Vec::new(),
    };
    let mut notes = Vec::new();
    let (planned, _) = labs::plan(
        book.path(),
        &labs,
        &env(),
        &device(),
        &new_file(),
        false,
        &mut notes,
    );
    assert_eq!(planned.len(), 3);
    let prov = provenance();

    // Not a terminal: every lab gets its line.
    let (progress, lines) = Progress::collecting();
    let stop = AtomicBool::new(false);
    let mut file = new_file();
    let done = labs::run_planned(
        &lab_run(book.path(), &prov, &progress, &stop),
        &planned,
        &mut file,
        &mut notes,
        &mut |_| {},
    );
    let lines = lines.borrow();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for (line, id) in lines.iter().zip(["first", "second", "third"]) {
        assert!(line.starts_with(&format!("lab {id} (fam_")), "{line}");
        assert!(
            line.contains("record(s)") && (line.ends_with(" s") || line.contains("min")),
            "{line}"
        );
    }
    assert!(
        lines[0].contains(": ok ·") && lines[1].contains("failed (Crash"),
        "{lines:?}"
    );
    assert_eq!((done.labs, done.interrupted), (3, false));
    assert!(
        file.records.iter().all(|r| r.wall_s.is_some_and(|s| s > 0.0)),
        "every record carries its lab's time"
    );

    // Ctrl-C while the first lab's results are being saved: they stay, nothing else runs.
    let (progress, _) = Progress::collecting();
    let stop = AtomicBool::new(false);
    let mut file = new_file();
    let mut saved: Vec<ResultsFile> = Vec::new();
    let done = labs::run_planned(
        &lab_run(book.path(), &prov, &progress, &stop),
        &planned,
        &mut file,
        &mut notes,
        &mut |f| {
            saved.push(f.clone());
            stop.store(true, Ordering::SeqCst);
        },
    );
    assert!(done.interrupted && done.labs == 1, "{done:?}");
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].records.len(), 1);
    assert_eq!(saved[0].records[0].family, "fam_a");
    assert!(
        file.records.iter().all(|r| r.family == "fam_a"),
        "the later labs never ran"
    );
}

/// Ctrl-C during a lab kills it (and what it started) and records nothing for it.
#[test]
fn an_interrupted_lab_is_killed_and_not_recorded() {
    if !python_present() {
        return;
    }
    let slow = format!("{HEADER}import time\ntime.sleep(30)\n");
    let book = fake_book(
        "- id: slow\n  file: slow.py\n  family: fam\n  requires: [torch]\n",
        &[("slow.py", &slow)],
    );
    let labs = load(book.path());
    let mut file = ResultsFile {
        schema: 1,
        device: device(),
        records: Vec::new(),
    };
    let mut notes = Vec::new();
    let (planned, _) = labs::plan(book.path(), &labs, &env(), &device(), &file, false, &mut notes);
    let prov = provenance();
    let (progress, lines) = Progress::collecting();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let setter = std::sync::Arc::clone(&stop);
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(700));
        setter.store(true, Ordering::SeqCst);
    });
    let started = Instant::now();
    let done = labs::run_planned(
        &lab_run(book.path(), &prov, &progress, &stop),
        &planned,
        &mut file,
        &mut notes,
        &mut |_| panic!("an interrupted lab is not saved"),
    );
    assert!(
        started.elapsed().as_secs() < 15,
        "the lab was killed, not waited for"
    );
    assert!(done.interrupted && done.labs == 0);
    assert!(file.records.is_empty());
    assert!(lines.borrow()[0].contains("interrupted"), "{:?}", lines.borrow());
}
