//! The lab runner and GPU counts: a lab with `world:` runs once per world size the machine has
//! GPUs for (through torchrun), its records carry `params.world`, the world sizes it cannot run
//! keep their shipped records, and every process it starts has NVLink multicast off.
//!
//! torchrun here is a fake `torch/distributed/run.py` in the temporary book's `kernels/labs/`
//! (the runner puts that folder first on PYTHONPATH): it starts one plain Python process per
//! rank with RANK, WORLD_SIZE and LOCAL_RANK set, as torchrun does, so the test needs neither
//! torch nor a GPU. Needs `python3`; skipped with a message when it is missing, unless
//! `HDLC_REQUIRE_PYTHON=1`.

mod common;
use hdlc::diag::Diagnostics;
use hdlc::measure::labs::{self, manifest::Lab, probe::Env, world::Backend};
use hdlc::measure::progress::Progress;
use hdlc::measure::results::{DeviceInfo, FailStage, Outcome, Provenance, Record, ResultsFile, Timing};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

fn python_present() -> bool {
    common::python_present()
}

/// Like torchrun: each rank in a session of its own, all of them stopped on SIGTERM.
const FAKE_TORCHRUN: &str = r#"import os, signal, subprocess, sys
args = sys.argv[1:]
assert "--standalone" in args, args
n = int(next(a.split("=", 1)[1] for a in args if a.startswith("--nproc-per-node=")))
ranks = [subprocess.Popen([sys.executable, args[-1]], start_new_session=True,
                          env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r),
                               "WORLD_SIZE": str(n), "LOCAL_WORLD_SIZE": str(n)})
         for r in range(n)]
def stop(sig, frame):
    for p in ranks:
        p.terminate()
    os._exit(1)
signal.signal(signal.SIGTERM, stop)
sys.exit(max(p.wait() for p in ranks))
"#;

/// Rank 0 writes what it saw into env_w<W>.json beside itself and prints one record (without
/// `world`: the runner adds it); `liar.py` names a world it did not run at.
const WORLD_LAB: &str = r#"import json, os, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
keys = ["NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
        "HDLC_LAB_WORLD", "HDLC_LAB_BACKEND"]
if rank == 0:
    seen = {k: os.environ.get(k) for k in keys}
    pathlib.Path(__file__).with_name(f"env_w{world}.json").write_text(json.dumps(seen))
    t = {"reps": 5, "median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1}
    labkit.ok("all_reduce", "all-reduce", {"bytes": 8}, t, rel_error=0.0, tolerance=0.0, bytes=8)
"#;

const LIAR_LAB: &str = r#"import os, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit
if os.environ["RANK"] == "0":
    t = {"reps": 5, "median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1}
    labkit.ok("x", "x", {"world": 4}, t, rel_error=0.0, tolerance=0.0)
"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A temporary book with the real labkit.py and probe.py, the fake torchrun and `labs.yaml`.
fn fake_book(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let labs_dir = dir.path().join("kernels/labs");
    let run = labs_dir.join("torch/distributed");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(labs_dir.join("fake")).unwrap();
    for f in ["labkit.py", "probe.py"] {
        std::fs::copy(repo().join("kernels/labs").join(f), labs_dir.join(f)).unwrap();
    }
    std::fs::write(labs_dir.join("torch/__init__.py"), "").unwrap();
    std::fs::write(run.join("__init__.py"), "").unwrap();
    std::fs::write(run.join("run.py"), FAKE_TORCHRUN).unwrap();
    std::fs::write(labs_dir.join("fake/labs.yaml"), manifest).unwrap();
    std::fs::write(labs_dir.join("fake/world.py"), WORLD_LAB).unwrap();
    std::fs::write(labs_dir.join("fake/liar.py"), LIAR_LAB).unwrap();
    dir
}

fn device() -> DeviceInfo {
    common::test_device()
}

/// A machine with `gpus` GPUs (none: no GPU at all) and PyTorch with NCCL.
fn machine(gpus: u32) -> Env {
    let versions = [("python", "3.x"), ("torch", "2.11.0"), ("nccl", "2.27.5")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Env {
        versions,
        gpu: (gpus > 0).then(|| "Test GPU".to_string()),
        gpus,
        interconnect: (gpus > 1).then(|| "NV18".to_string()),
    }
}

fn provenance(gpus: Option<u32>) -> Provenance {
    Provenance {
        generator_version: "test".into(),
        git_commit: "test".into(),
        date: "2026-01-01T00:00:00Z".into(),
        frameworks: BTreeMap::new(),
        gpus,
        interconnect: gpus.filter(|g| *g > 1).map(|_| "NV18".into()),
    }
}

/// A record of the world lab as a 2-GPU machine left it (never re-measured on a smaller one).
fn shipped_world2() -> Record {
    let t = Timing {
        rel_error: 0.0,
        tolerance: 0.0,
        reps: 5,
        median_ms: 1.0,
        p10_ms: 0.9,
        p90_ms: 1.1,
        flops: 0.0,
        bytes: 8.0,
        workspace_bytes: None,
        metrics: BTreeMap::new(),
        series: BTreeMap::new(),
        tables: BTreeMap::new(),
    };
    Record {
        family: "fam_multi".into(),
        variant: "all_reduce".into(),
        label: "all-reduce".into(),
        rung: 1,
        baseline: false,
        params: BTreeMap::from([("bytes".into(), 8), ("world".into(), 2)]),
        key: "measured-on-two-gpus".into(),
        source_hash: "old".into(),
        source_file: Some("labs/fake/world.py".into()),
        outcome: Outcome::Ok(t),
        provenance: provenance(Some(2)),
        wall_s: Some(3.0),
    }
}

fn load(root: &Path) -> Vec<Lab> {
    let mut d = Diagnostics::new();
    let labs = labs::load_manifests(root, &["softmax"], &mut d);
    assert_eq!(d.error_count(), 0, "{:?}", d.sorted());
    labs
}

/// Plan and run every lab of the book on `env`, starting from `file`.
fn run_on(root: &Path, env: &Env, mut file: ResultsFile) -> (ResultsFile, Vec<String>, usize) {
    let labs = load(root);
    let mut notes = Vec::new();
    let (planned, _) = labs::plan(root, &labs, env, &device(), &file, false, &mut notes);
    let (progress, _) = Progress::collecting();
    let stop = AtomicBool::new(false);
    let prov = provenance(None);
    let run = labs::LabRun {
        root,
        provenance: &prov,
        seed: 7,
        progress: &progress,
        stop: &stop,
        expected: &|_| None,
    };
    labs::run_planned(&run, &planned, &mut file, &mut notes, &mut |_| {});
    (file, notes, planned.len())
}

fn seen_env(root: &Path, world: u32) -> BTreeMap<String, Option<String>> {
    let path = root.join(format!("kernels/labs/fake/env_w{world}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn world_of(r: &Record) -> Option<u64> {
    r.params.get("world").copied()
}

#[test]
fn one_gpu_runs_world_one_and_keeps_the_shipped_world_two() {
    if !python_present() {
        return;
    }
    let book = fake_book(
        "- id: multi\n  file: world.py\n  family: fam_multi\n  requires: [torch]\n  world: [1, 2]\n",
    );
    let file = ResultsFile {
        schema: 1,
        device: device(),
        records: vec![shipped_world2()],
    };
    let (file, notes, planned) = run_on(book.path(), &machine(1), file);
    assert_eq!(planned, 1, "world 1 only: {notes:?}");
    assert!(
        notes.iter().any(
            |n| n.contains("lab multi at world 2: not run here (needs 2 GPU(s), 1 visible)")
                && n.contains("1 shipped record(s) kept")
        ),
        "{notes:?}"
    );
    assert_eq!(file.records.len(), 2, "{:#?}", file.records);
    let shipped = file.records.iter().find(|r| world_of(r) == Some(2)).unwrap();
    assert_eq!(
        shipped,
        &shipped_world2(),
        "the world-2 record is kept exactly as shipped"
    );
    let new = file
        .records
        .iter()
        .find(|r| world_of(r) == Some(1))
        .expect("a world-1 record");
    assert!(matches!(new.outcome, Outcome::Ok(_)), "{new:#?}");
    assert_eq!(new.params.get("bytes"), Some(&8), "the lab's own params stay");
    assert_eq!(new.provenance.gpus, Some(1));
    assert_eq!(
        new.provenance.frameworks.get("nccl").map(String::as_str),
        Some("2.27.5")
    );
    let seen = seen_env(book.path(), 1);
    for (k, v) in [
        ("NCCL_NVLS_ENABLE", "0"),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
        ("NVSHMEM_DISABLE_NVLS", "1"),
        ("HDLC_LAB_WORLD", "1"),
        ("HDLC_LAB_BACKEND", "nccl"),
    ] {
        assert_eq!(
            seen[k].as_deref(),
            Some(v),
            "{k} in the lab's environment: {seen:?}"
        );
    }
    // Measured once: the next plan finds world 1 cached and still does not touch world 2.
    let labs = load(book.path());
    let mut notes = Vec::new();
    let (again, cached) = labs::plan(
        book.path(),
        &labs,
        &machine(1),
        &device(),
        &file,
        false,
        &mut notes,
    );
    assert!(again.is_empty() && cached == 1, "{notes:?}");
}

#[test]
fn two_gpus_run_both_worlds_and_cpu_machines_only_their_cpu_world() {
    if !python_present() {
        return;
    }
    let book = fake_book(
        "- id: multi\n  file: world.py\n  family: fam_multi\n  requires: [torch]\n  world: [1, 2]\n  cpu_world: [2]\n\
         - id: liar\n  file: liar.py\n  family: fam_liar\n  requires: [torch]\n  world: [2]\n  cpu_world: [2]\n",
    );
    let empty = || ResultsFile {
        schema: 1,
        device: device(),
        records: Vec::new(),
    };
    let (file, notes, planned) = run_on(book.path(), &machine(2), empty());
    assert_eq!(planned, 3, "{notes:?}");
    let worlds: Vec<Option<u64>> = file
        .records
        .iter()
        .filter(|r| r.family == "fam_multi")
        .map(world_of)
        .collect();
    assert_eq!(worlds.len(), 2);
    assert!(
        worlds.contains(&Some(1)) && worlds.contains(&Some(2)),
        "{worlds:?}"
    );
    let two = file
        .records
        .iter()
        .find(|r| r.family == "fam_multi" && world_of(r) == Some(2))
        .unwrap();
    assert_eq!(
        (two.provenance.gpus, two.provenance.interconnect.as_deref()),
        (Some(2), Some("NV18"))
    );
    assert_eq!(seen_env(book.path(), 2)["HDLC_LAB_WORLD"].as_deref(), Some("2"));
    // A lab that names another world than it ran at is rejected, filed under the world it ran at.
    let liar = file.records.iter().find(|r| r.family == "fam_liar").unwrap();
    assert_eq!(world_of(liar), Some(2));
    match &liar.outcome {
        Outcome::Failed { stage, error } => {
            assert_eq!(*stage, FailStage::Output);
            assert!(error.contains("says world 4"), "{error}");
        }
        Outcome::Ok(_) => panic!("a record with the wrong world was accepted"),
    }
    // No GPU: only `cpu_world` sizes run, on gloo; world 1 is skipped, not failed.
    let labs = load(book.path());
    let mut notes = Vec::new();
    let (cpu, _) = labs::plan(
        book.path(),
        &labs,
        &machine(0),
        &device(),
        &empty(),
        false,
        &mut notes,
    );
    let sizes: Vec<(String, u32, Backend)> = cpu
        .iter()
        .map(|p| {
            let w = p.world.as_ref().unwrap();
            (p.lab.id.clone(), w.size, w.backend)
        })
        .collect();
    assert_eq!(
        sizes,
        [
            ("multi".to_string(), 2, Backend::Gloo),
            ("liar".to_string(), 2, Backend::Gloo)
        ]
    );
    assert!(
        notes.iter().any(|n| n
            .contains("multi at world 1: not run here (needs 1 GPU(s), none visible); no shipped records")),
        "{notes:?}"
    );
}

#[test]
fn malformed_world_lists_name_file_and_line() {
    let book = fake_book("- id: a\n  file: world.py\n  requires: [torch]\n  world: [1, two]\n");
    let mut d = Diagnostics::new();
    assert!(labs::load_manifests(book.path(), &[], &mut d).is_empty());
    let all: Vec<String> = d.sorted().iter().map(|x| x.to_string()).collect();
    assert!(
        all.iter()
            .any(|e| e.contains("fake/labs.yaml:4:") && e.contains("lab manifest")),
        "{all:?}"
    );
    let entries = "- id: backwards\n  file: world.py\n  requires: [torch]\n  world: [2, 1]\n\
                   - id: zero\n  file: world.py\n  requires: [torch]\n  world: [0, 2]\n\
                   - id: stray\n  file: world.py\n  requires: [torch]\n  world: [1, 2]\n  cpu_world: [4]\n\
                   - id: no_torch\n  file: world.py\n  world: [2]\n\
                   - id: gpu_cpu\n  file: world.py\n  requires: [torch, gpu]\n  world: [2]\n  cpu_world: [2]\n\
                   - id: good\n  file: world.py\n  requires: [torch]\n  world: [1, 2, 4, 8]\n  cpu_world: [1, 2]\n";
    let book = fake_book(entries);
    let mut d = Diagnostics::new();
    let labs = labs::load_manifests(book.path(), &[], &mut d);
    let all = d
        .sorted()
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    for expected in [
        "labs.yaml:4:1: `world: [2, 1]` is not a list of GPU counts",
        "labs.yaml:8:1: `world: [0, 2]` is not a list of GPU counts",
        "labs.yaml:13:1: cpu_world size 4 is not one of the lab's `world` sizes",
        "labs.yaml:16:1: a lab with `world` is started through torchrun, so it requires torch",
        "labs.yaml:21:1: a lab that requires `gpu` cannot run on CPU processes",
    ] {
        assert!(all.contains(expected), "missing `{expected}` in:\n{all}");
    }
    assert_eq!(d.error_count(), 5, "{all}");
    let good: Vec<(&str, &[u32], &[u32])> = labs
        .iter()
        .map(|l| (l.id.as_str(), l.world.as_slice(), l.cpu_world.as_slice()))
        .collect();
    assert_eq!(good, [("good", &[1, 2, 4, 8][..], &[1, 2][..])]);
}

/// The command the runner starts for a world: torchrun with one process per rank, and the
/// multicast switches in the environment of every lab run (world or not).
#[test]
fn world_runs_go_through_torchrun_with_multicast_off() {
    let book = fake_book(
        "- id: multi\n  file: world.py\n  family: fam_multi\n  requires: [torch]\n  world: [1, 2]\n",
    );
    let labs = load(book.path());
    let (planned, _) = labs::plan(
        book.path(),
        &labs,
        &machine(2),
        &device(),
        &ResultsFile {
            schema: 1,
            device: device(),
            records: vec![],
        },
        false,
        &mut Vec::new(),
    );
    let two = planned
        .iter()
        .find(|p| p.world.as_ref().is_some_and(|w| w.size == 2))
        .unwrap();
    let (args, env) = labs::command(book.path(), &two.lab, two.world.as_ref(), 7);
    assert_eq!(
        &args[..4],
        [
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node=2"
        ]
    );
    assert!(args[4].ends_with("world.py"));
    let env: BTreeMap<String, String> = env.into_iter().collect();
    for (k, v) in [
        ("NCCL_NVLS_ENABLE", "0"),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
        ("NVSHMEM_DISABLE_NVLS", "1"),
        ("HDLC_LAB_BACKEND", "nccl"),
    ] {
        assert_eq!(env.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert_ne!(planned[0].key, planned[1].key, "each world size has its own key");
}

/// The probe's GPU count and NCCL version: what plans the world sizes and enters the key.
#[test]
fn the_probe_counts_gpus_and_names_nccl() {
    let two = labs::probe::parse(
        r#"{"python": "3.12", "torch": "2.11.0", "gpu": "NVIDIA H200", "gpu_count": 2, "nccl": "2.27.5"}"#,
    )
    .unwrap();
    assert_eq!((two.gpus, two.versions["nccl"].as_str()), (2, "2.27.5"));
    let uncounted = labs::probe::parse(r#"{"python": "3.12", "gpu": "NVIDIA H100"}"#).unwrap();
    assert_eq!(uncounted.gpus, 1, "a GPU that is seen counts as one");
    let none = labs::probe::parse(r#"{"python": "3.12", "gpu_count": 4}"#).unwrap();
    assert_eq!(none.gpus, 0, "no GPU seen, no GPUs");
}

/// A world run that outlives its time-out: torchrun's ranks live in sessions of their own, out of
/// the lab's process group, so the runner must let torchrun stop them (SIGTERM first) rather than
/// kill torchrun alone and leave its ranks on the GPUs.
#[test]
fn a_timed_out_world_run_leaves_no_rank_behind() {
    if !python_present() {
        return;
    }
    let book = fake_book("- id: hang\n  file: hang.py\n  family: fam_hang\n  requires: [torch]\n  world: [2]\n  timeout_s: 1\n");
    let marker = book.path().join("rank-survived");
    let hang = format!("import pathlib, time\ntime.sleep(4)\npathlib.Path({marker:?}).write_text('x')\n");
    std::fs::write(book.path().join("kernels/labs/fake/hang.py"), hang).unwrap();
    let empty = ResultsFile {
        schema: 1,
        device: device(),
        records: Vec::new(),
    };
    let started = std::time::Instant::now();
    let (file, _, _) = run_on(book.path(), &machine(2), empty);
    assert!(started.elapsed().as_secs() < 4, "took {:?}", started.elapsed());
    match &file.records[0].outcome {
        Outcome::Failed { stage, .. } => assert_eq!(*stage, FailStage::Timeout),
        Outcome::Ok(_) => panic!("a hung lab was recorded as ok"),
    }
    assert_eq!(world_of(&file.records[0]), Some(2));
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert!(!marker.exists(), "a rank outlived the time-out");
}

/// A `launch: devices` lab: one plain process (no RANK), which writes what it saw.
const DEVICES_LAB: &str = r#"import json, os, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import labkit
keys = ["RANK", "HDLC_LAB_WORLD", "HDLC_LAB_BACKEND", "CUDA_VISIBLE_DEVICES", "XLA_FLAGS",
        "JAX_PLATFORMS", "NCCL_NVLS_ENABLE"]
world = os.environ["HDLC_LAB_WORLD"]
seen = {k: os.environ.get(k) for k in keys}
pathlib.Path(__file__).with_name(f"dev_w{world}.json").write_text(json.dumps(seen))
t = {"reps": 5, "median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1}
labkit.ok("psum", "psum", {"bytes": 8}, t, rel_error=0.0, tolerance=0.0, bytes=8)
"#;

fn seen_devices(root: &Path, world: u32) -> BTreeMap<String, Option<String>> {
    let path = root.join(format!("kernels/labs/fake/dev_w{world}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_devices_lab_runs_as_one_process_that_sees_the_world_s_devices() {
    if !python_present() {
        return;
    }
    let book = fake_book(
        "- id: mesh\n  file: devices.py\n  family: fam_mesh\n  world: [1, 2]\n  cpu_world: [2]\n  launch: devices\n",
    );
    std::fs::write(book.path().join("kernels/labs/fake/devices.py"), DEVICES_LAB).unwrap();
    let empty = || ResultsFile {
        schema: 1,
        device: device(),
        records: Vec::new(),
    };
    let (file, notes, planned) = run_on(book.path(), &machine(2), empty());
    assert_eq!(planned, 2, "{notes:?}");
    let mut worlds: Vec<Option<u64>> = file.records.iter().map(world_of).collect();
    worlds.sort();
    assert_eq!(worlds, [Some(1), Some(2)], "{:?}", file.records);
    for (w, gpus) in [(1, "0"), (2, "0,1")] {
        let seen = seen_devices(book.path(), w);
        assert_eq!(seen["RANK"], None, "not started through torchrun");
        assert_eq!(seen["NCCL_NVLS_ENABLE"].as_deref(), Some("0"));
        assert_eq!(seen["HDLC_LAB_BACKEND"].as_deref(), Some("nccl"));
        if std::env::var("CUDA_VISIBLE_DEVICES").is_err() {
            assert_eq!(seen["CUDA_VISIBLE_DEVICES"].as_deref(), Some(gpus));
        }
    }
    // No GPU: the cpu_world size runs with that many simulated CPU devices.
    let (file, notes, planned) = run_on(book.path(), &machine(0), empty());
    assert_eq!(planned, 1, "{notes:?}");
    assert_eq!(file.records.iter().map(world_of).collect::<Vec<_>>(), [Some(2)]);
    let seen = seen_devices(book.path(), 2);
    assert_eq!(seen["JAX_PLATFORMS"].as_deref(), Some("cpu"));
    assert_eq!(
        seen["XLA_FLAGS"].as_deref(),
        Some("--xla_force_host_platform_device_count=2")
    );
}

#[test]
fn a_manifest_s_launch_is_checked() {
    let book = fake_book(
        "- id: a\n  file: world.py\n  world: [2]\n  launch: mpirun\n\
         - id: b\n  file: world.py\n  launch: devices\n\
         - id: c\n  file: world.py\n  world: [2]\n",
    );
    let mut d = Diagnostics::new();
    let labs = labs::load_manifests(book.path(), &[], &mut d);
    let errors: Vec<String> = d.sorted().iter().map(|x| x.to_string()).collect();
    assert!(labs.is_empty(), "{labs:?}");
    assert_eq!(errors.len(), 3, "{errors:?}");
    let at = |line: usize, words: &str| {
        errors
            .iter()
            .any(|e| e.contains(&format!("labs.yaml:{line}:")) && e.contains(words))
    };
    assert!(
        at(4, "`launch: mpirun` is not a way to start a lab"),
        "{errors:?}"
    );
    assert!(at(7, "the lab has no `world`"), "{errors:?}");
    assert!(at(10, "requires torch"), "{errors:?}");
}
