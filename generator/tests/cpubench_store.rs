//! The CPU roofline suite's results file and cache: the file keeps the schema and round-trips,
//! a failed variant carries no numbers, and the cache is hit only when nothing that could
//! change a number changed.
//!
//! Why a file of its own: these tests write results files and caches under temporary roots
//! (tiny sizes, quick in debug builds); the kernels' verification tests are in `cpubench.rs`.

use hdlc::cpubench::{
    cache_key, cache_path, cpu_results_with, load_cached, measure, suite_key, Config, KeyInput, Machine,
    Profile, Source,
};
use hdlc::measure::results::{FailStage, Outcome, Record, ResultsFile, SCHEMA_VERSION};
use hdlc::measure::store::parse_results;
use std::cell::Cell;
use std::path::Path;

fn machine(model: &str) -> Machine {
    Machine {
        cpu_model: model.to_string(),
        threads: 2,
        memory_bytes: 24 << 30,
        llc_bytes: 32 << 20,
    }
}

// ---- the results file --------------------------------------------------------------------------

fn tiny_results(root: &Path, m: &Machine) -> ResultsFile {
    let config = Config::tiny();
    let key = suite_key(m, Profile::Debug, &config);
    measure(m, Profile::Debug, &config, &key, root, false).unwrap()
}

#[test]
fn the_results_file_has_the_schema_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let m = Machine {
        threads: 2,
        ..Machine::detect()
    };
    let file = tiny_results(dir.path(), &m);
    assert_eq!(file.schema, SCHEMA_VERSION);
    assert_eq!(file.device.name, m.cpu_model);
    assert_eq!(file.device.compute_capability, "cpu");
    assert_eq!(file.device.sm_count, 2);
    assert_eq!(file.device.memory_bytes, m.memory_bytes);
    assert_eq!(
        (
            file.device.driver_version.as_str(),
            file.device.cuda_version.as_str(),
            file.device.nvrtc_version.as_str()
        ),
        ("n/a", "n/a", "n/a")
    );
    assert!(file.device.datasheet.is_none());

    let variants: Vec<&str> = file.records.iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(
        variants,
        [
            "copy",
            "triad",
            "matmul_naive",
            "matmul_blocked",
            "matmul_simd",
            "matrixmultiply"
        ]
    );
    let baselines: Vec<&str> = file
        .records
        .iter()
        .filter(|r| r.baseline)
        .map(|r| r.variant.as_str())
        .collect();
    assert_eq!(baselines, ["matrixmultiply"]);
    let key = &file.records[0].key;
    for r in &file.records {
        assert_eq!(r.family, "cpu");
        assert_eq!(&r.key, key);
        assert!(r.label.ends_with("(debug build)"), "{}", r.label);
        assert_eq!(r.params["debug_build"], 1);
        assert!(
            matches!(r.outcome, Outcome::Ok(_)),
            "{}: {:?}",
            r.variant,
            r.outcome
        );
        assert!(!r.provenance.git_commit.is_empty());
        let d = &r.provenance.date;
        assert!(
            d.len() >= 20 && d.as_bytes()[10] == b'T' && d.ends_with('Z'),
            "RFC 3339 UTC: {d}"
        );
    }
    // Thread counts are in the labels, not the params (one ladder, one parameter set).
    assert!(file.records[4].label.contains('2'), "{}", file.records[4].label);
    assert!(file.records.iter().all(|r| !r.params.contains_key("threads")));

    let json = serde_json::to_string_pretty(&file).unwrap();
    let back = parse_results(Path::new("cpu.json"), &json).unwrap();
    assert_same_results(&back, &file);
}

/// Equal, except that floats may differ in the last bit: serde_json (without its
/// `float_roundtrip` feature) does not always parse back the exact f64 it printed.
fn assert_same_results(a: &ResultsFile, b: &ResultsFile) {
    assert_eq!((a.schema, &a.device), (b.schema, &b.device));
    assert_eq!(a.records.len(), b.records.len());
    let close = |x: f64, y: f64| x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs());
    for (x, y) in a.records.iter().zip(&b.records) {
        match (&x.outcome, &y.outcome) {
            (Outcome::Ok(s), Outcome::Ok(t)) => {
                for (p, q) in [
                    (s.rel_error, t.rel_error),
                    (s.tolerance, t.tolerance),
                    (s.median_ms, t.median_ms),
                    (s.p10_ms, t.p10_ms),
                    (s.p90_ms, t.p90_ms),
                    (s.flops, t.flops),
                    (s.bytes, t.bytes),
                ] {
                    assert!(close(p, q), "{}: {p} vs {q}", x.variant);
                }
                assert_eq!(s.reps, t.reps);
            }
            (o, p) => assert_eq!(o, p),
        }
        let without_outcome = |r: &Record| Record {
            outcome: Outcome::Failed {
                stage: FailStage::Unsupported,
                error: String::new(),
            },
            ..r.clone()
        };
        assert_eq!(without_outcome(x), without_outcome(y));
    }
}

#[test]
fn a_failed_variant_serializes_without_numbers() {
    let failed = Outcome::Failed {
        stage: FailStage::Verify,
        error: "relative error 1e-2 exceeds tolerance 1e-4".into(),
    };
    let v = serde_json::to_value(&failed).unwrap();
    assert_eq!(v["status"], "failed");
    assert_eq!(v["stage"], "verify");
    for field in ["median_ms", "p10_ms", "reps", "flops", "bytes", "rel_error"] {
        assert!(v.get(field).is_none(), "a failed record carries no {field}");
    }
}

// ---- the cache ---------------------------------------------------------------------------------

#[test]
fn the_key_changes_with_anything_that_changes_a_number() {
    let base = KeyInput {
        source_hash: "aaa",
        cpu_model: "AMD EPYC",
        threads: 2,
        profile: Profile::Release,
        config: "n=1024",
    };
    let k = cache_key(&base);
    assert_eq!(k, cache_key(&base.clone()), "stable");
    let variants = [
        KeyInput {
            source_hash: "aab",
            ..base.clone()
        },
        KeyInput {
            cpu_model: "Apple M2",
            ..base.clone()
        },
        KeyInput {
            threads: 4,
            ..base.clone()
        },
        KeyInput {
            profile: Profile::Debug,
            ..base.clone()
        },
        KeyInput {
            config: "n=512",
            ..base.clone()
        },
    ];
    for v in &variants {
        assert_ne!(cache_key(v), k, "{v:?}");
    }
    // Length-prefixed fields: moving text between fields changes the key.
    assert_ne!(
        cache_key(&KeyInput {
            source_hash: "aaaAMD",
            cpu_model: " EPYC",
            ..base.clone()
        }),
        cache_key(&KeyInput {
            source_hash: "aaa",
            cpu_model: "AMD EPYC",
            ..base.clone()
        })
    );
    let m = machine("AMD EPYC");
    assert_eq!(
        suite_key(&m, Profile::Release, &Config::tiny()),
        suite_key(&m, Profile::Release, &Config::tiny())
    );
    assert_ne!(
        suite_key(&m, Profile::Release, &Config::tiny()),
        suite_key(&m, Profile::Release, &Config::full(&m))
    );
    assert_ne!(
        suite_key(&m, Profile::Release, &Config::tiny()),
        suite_key(&m, Profile::Debug, &Config::tiny())
    );
}

#[test]
fn cached_results_are_returned_without_measuring_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let m = machine("Test CPU 9000 @ 3.0GHz");
    let config = Config::tiny();
    let measured = Cell::new(0);
    let mut measure_fn = |m: &Machine, p: Profile, c: &Config, key: &str, root: &Path, progress: bool| {
        measured.set(measured.get() + 1);
        measure(m, p, c, key, root, progress)
    };

    let (first, src) =
        cpu_results_with(root, &m, Profile::Release, &config, false, false, &mut measure_fn).unwrap();
    let path = root.join("target/hdlc-cache/cpu-test-cpu-9000-3-0ghz.json");
    assert_eq!(src, Source::Measured(path.clone()));
    assert_eq!(cache_path(root, &m, Profile::Release), path);
    assert!(path.exists());
    assert_eq!(measured.get(), 1);

    let (second, src) =
        cpu_results_with(root, &m, Profile::Release, &config, false, false, &mut measure_fn).unwrap();
    assert_eq!(src, Source::Cached(path.clone()));
    assert_eq!(measured.get(), 1, "a hit measures nothing");
    assert_same_results(&second, &first);

    // force re-measures.
    cpu_results_with(root, &m, Profile::Release, &config, true, false, &mut measure_fn).unwrap();
    assert_eq!(measured.get(), 2);

    // Another CPU (or core count, or config): its own file or key, so a miss.
    cpu_results_with(
        root,
        &machine("Other CPU"),
        Profile::Release,
        &config,
        false,
        false,
        &mut measure_fn,
    )
    .unwrap();
    assert_eq!(measured.get(), 3);
    let more_cores = Machine {
        threads: 3,
        ..m.clone()
    };
    let (_, src) = cpu_results_with(
        root,
        &more_cores,
        Profile::Release,
        &config,
        false,
        false,
        &mut measure_fn,
    )
    .unwrap();
    assert_eq!(
        src,
        Source::Measured(path.clone()),
        "same file name, other key: re-measured"
    );
    assert_eq!(measured.get(), 4);

    // A file whose key does not match (e.g. measured by an older source) is a miss.
    let key = suite_key(&m, Profile::Release, &config);
    assert!(
        load_cached(&path, &key).is_none(),
        "the file now holds the 3-core results"
    );
    let (_, src) =
        cpu_results_with(root, &m, Profile::Release, &config, false, false, &mut measure_fn).unwrap();
    assert_eq!(src, Source::Measured(path.clone()));
    assert_eq!(measured.get(), 5);
    assert!(load_cached(&path, &key).is_some());

    // A corrupt file is a miss, not an error.
    std::fs::write(&path, "{ not json").unwrap();
    assert!(load_cached(&path, &key).is_none());
    cpu_results_with(root, &m, Profile::Release, &config, false, false, &mut measure_fn).unwrap();
    assert_eq!(measured.get(), 6);
}

#[test]
fn a_debug_build_uses_release_results_of_the_same_source_when_there_are_some() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let m = machine("Test CPU");
    let measured = Cell::new(0);
    let mut fake = |m: &Machine, p: Profile, _asked: &Config, key: &str, root: &Path, _: bool| {
        measured.set(measured.get() + 1);
        // Tiny sizes stand in for the real ones; the key is the one the caller asked for.
        measure(m, p, &Config::tiny(), key, root, false)
    };
    // No release results: the debug build measures its own (marked) numbers.
    let (_, src) = cpu_results_with(
        root,
        &m,
        Profile::Debug,
        &Config::debug_build(),
        false,
        false,
        &mut fake,
    )
    .unwrap();
    assert_eq!(src, Source::Measured(cache_path(root, &m, Profile::Debug)));
    assert!(cache_path(root, &m, Profile::Debug)
        .to_string_lossy()
        .ends_with("cpu-test-cpu-debug.json"));

    // A release build measures the real suite and caches it...
    let full = Config::full(&m);
    cpu_results_with(root, &m, Profile::Release, &full, false, false, &mut fake).unwrap();
    assert_eq!(measured.get(), 2);
    // ...and from then on a debug build shows those numbers instead of its own.
    std::fs::remove_file(cache_path(root, &m, Profile::Debug)).unwrap();
    let (_, src) = cpu_results_with(
        root,
        &m,
        Profile::Debug,
        &Config::debug_build(),
        false,
        false,
        &mut fake,
    )
    .unwrap();
    assert_eq!(src, Source::Cached(cache_path(root, &m, Profile::Release)));
    assert_eq!(measured.get(), 2);
}
