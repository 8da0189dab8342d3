//! The CPU roofline suite: verification catches wrong kernels before any timing, and the
//! machine facts and array sizes are read right. Everything runs at tiny sizes (n = 64, 1 MiB
//! arrays) so it is quick in debug builds.
//!
//! The real suite: `cargo test --release --test cpubench -- --ignored --nocapture real_suite`.
//! The results file and the cache are tested in `cpubench_store.rs`.

use hdlc::cpubench::machine::{parse_cache_size, parse_cpuinfo_model, parse_meminfo_total};
use hdlc::cpubench::timing::{check_then_time, rel_error, time_runs, Policy, Work};
use hdlc::cpubench::{bandwidth, matmul, Config, Machine};
use hdlc::measure::results::{FailStage, Outcome};
use std::cell::Cell;
use std::path::Path;
use std::time::Duration;

const SEED: u64 = 0x1234_5678;

fn machine(model: &str) -> Machine {
    Machine {
        cpu_model: model.to_string(),
        threads: 2,
        memory_bytes: 24 << 30,
        llc_bytes: 32 << 20,
    }
}

fn assert_verify_failed(o: &Outcome) -> &str {
    match o {
        Outcome::Failed {
            stage: FailStage::Verify,
            error,
        } => error,
        other => panic!("expected a verification failure, got {other:?}"),
    }
}

// ---- verification ----------------------------------------------------------------------------

#[test]
fn every_rung_matches_the_f64_reference_at_awkward_sizes() {
    // 1 and 7: smaller than a register tile; 67: not a multiple of MR = 6 or NR = 16; 150: past
    // the blocked rung's BI = 64 and BK = 128 and the SIMD rung's MC = 144; 300 (blocked only):
    // past BJ = 256. The threaded rung also runs on 2 and 3 threads (uneven row splits); the
    // SIMD rung's KC and NC edges are crossed in `the_simd_rung_crosses_every_blocking_edge`.
    let rungs: [(&str, matmul::MatmulFn, &[usize], usize); 4] = [
        ("naive", matmul::naive, &[1], 150),
        ("blocked", matmul::blocked, &[1], 300),
        ("simd", matmul::simd, &[1, 2, 3], 150),
        ("library", matmul::library, &[1], 150),
    ];
    for n in [1usize, 7, 67, 150, 300] {
        let mut p = matmul::Problem::new(n, SEED + n as u64, 2);
        for (name, kernel, threads, max_n) in rungs {
            for &t in threads.iter().filter(|_| n <= max_n) {
                let rel = p.check(&mut |a, b, c| kernel(a, b, c, n, t));
                assert!(rel <= 1e-6, "{name} n={n} threads={t}: rel error {rel:e}");
            }
        }
    }
}

#[test]
fn the_simd_rung_crosses_every_blocking_edge() {
    // Rectangular shapes past KC = 256 (k), MC = 144 (m) and NC = 1024 (n), none a multiple of
    // the 6 × 16 tile, at a cost a debug build can afford.
    let uni = |len: usize, seed: u64| -> Vec<f32> {
        (0..len)
            .map(|i| hdlc::measure::reference::uniform(seed, i as u64, -1.0, 1.0))
            .collect()
    };
    for (m, n, k) in [(7, 1100, 300), (150, 40, 513), (1, 17, 1), (13, 1, 5), (5, 3, 0)] {
        let (a, b) = (uni(m * k, 1), uni(k * n, 2));
        let mut want = vec![0f64; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    want[i * n + j] += a[i * k + p] as f64 * b[p * n + j] as f64;
                }
            }
        }
        for threads in [1, 2, 3] {
            let mut c = vec![f32::NAN; m * n];
            matmul::simd_mnk(&a, &b, &mut c, m, n, k, threads);
            let rel = if k == 0 {
                assert!(c.iter().all(|&x| x == 0.0), "k = 0 gives zeros");
                0.0
            } else {
                rel_error(&c, |i| want[i])
            };
            assert!(
                rel <= 1e-6,
                "m={m} n={n} k={k} threads={threads}: rel error {rel:e}"
            );
        }
    }
}

#[test]
fn a_wrong_kernel_fails_verification_and_is_never_timed() {
    let n = 64;
    let mut p = matmul::Problem::new(n, SEED, 2);
    let calls = Cell::new(0);
    // Right everywhere except one element: a single wrong entry must be enough.
    let outcome = p.measure(&Policy::QUICK, &mut |a, b, c| {
        calls.set(calls.get() + 1);
        matmul::blocked(a, b, c, n, 1);
        c[n * n / 2 + 3] += 1.0;
    });
    let err = assert_verify_failed(&outcome);
    assert!(err.contains("exceeds tolerance"), "{err}");
    assert_eq!(calls.get(), 1, "one verification run, no warm-up, no timed runs");

    // A transposed product (a classic indexing slip) fails too.
    let outcome = p.measure(&Policy::QUICK, &mut |a, b, c| {
        matmul::naive(b, a, c, n, 1);
    });
    assert_verify_failed(&outcome);
}

#[test]
fn unwritten_output_is_caught_by_the_nan_poison() {
    let n = 64;
    let mut p = matmul::Problem::new(n, SEED, 2);
    // Writes everything but the last row: the poison left there must fail the check.
    let outcome = p.measure(&Policy::QUICK, &mut |a, b, c| {
        let mut full = vec![0f32; n * n];
        matmul::blocked(a, b, &mut full, n, 1);
        c[..n * (n - 1)].copy_from_slice(&full[..n * (n - 1)]);
    });
    let err = assert_verify_failed(&outcome);
    assert!(err.contains("NaN"), "{err}");
}

#[test]
fn a_correct_kernel_is_timed_with_the_counts_of_a_matrix_product() {
    let n = 64;
    let mut p = matmul::Problem::new(n, SEED, 2);
    let calls = Cell::new(0);
    let outcome = p.measure(&Policy::QUICK, &mut |a, b, c| {
        calls.set(calls.get() + 1);
        matmul::simd(a, b, c, n, 2);
    });
    let Outcome::Ok(t) = outcome else {
        panic!("expected a timing, got {outcome:?}");
    };
    assert_eq!(t.reps, 5);
    assert_eq!(calls.get(), 1 + 1 + 5, "check, warm-up, 5 timed runs");
    assert_eq!(t.flops, 2.0 * 64f64.powi(3));
    assert_eq!(t.bytes, 3.0 * 64.0 * 64.0 * 4.0);
    assert_eq!(t.tolerance, matmul::TOLERANCE);
    assert!(t.rel_error < 1e-6 && t.rel_error.is_finite());
    assert!(t.p10_ms <= t.median_ms && t.median_ms <= t.p90_ms && t.median_ms > 0.0);
}

#[test]
fn inputs_are_random_and_not_zero() {
    let p = matmul::Problem::new(32, SEED, 1);
    let q = matmul::Problem::new(32, SEED + 1, 1);
    assert!(p.a.iter().all(|x| x.is_finite()) && p.a.iter().filter(|&&x| x == 0.0).count() < 4);
    assert_ne!(p.a, q.a, "a different seed gives different inputs");
    assert_ne!(p.a, p.b, "A and B are different streams");
    assert!(p.reference.iter().map(|r| r * r).sum::<f64>() > 1.0);
}

#[test]
fn bandwidth_kernels_verify_and_count_reads_plus_writes() {
    let len = Config::tiny().stream_len;
    let (copy, triad) = bandwidth::run(len, 2, SEED, &Policy::QUICK);
    let (Outcome::Ok(c), Outcome::Ok(t)) = (&copy, &triad) else {
        panic!("expected timings, got {copy:?} / {triad:?}");
    };
    assert_eq!(c.rel_error, 0.0, "a copy is exact");
    assert_eq!(
        t.rel_error, 0.0,
        "the triad is the same f64 arithmetic as the reference"
    );
    assert_eq!(
        c.bytes,
        16.0 * len as f64,
        "copy: 8 B read + 8 B written per element"
    );
    assert_eq!(
        t.bytes,
        24.0 * len as f64,
        "triad: 16 B read + 8 B written, no write-allocate"
    );
    assert_eq!((c.flops, t.flops), (0.0, 2.0 * len as f64));
}

#[test]
fn bandwidth_kernels_are_correct_for_uneven_chunks() {
    let b: Vec<f64> = (0..1001).map(|i| i as f64 + 0.5).collect();
    let c: Vec<f64> = (0..1001).map(|i| 2.0 * i as f64).collect();
    for threads in [1, 2, 3, 7] {
        let mut a = vec![f64::NAN; 1001];
        bandwidth::copy(&mut a, &b, threads);
        assert_eq!(a, b);
        bandwidth::triad(&mut a, &b, &c, 3.0, threads);
        assert!(a.iter().zip(&b).zip(&c).all(|((x, y), z)| *x == y + 3.0 * z));
    }
}

#[test]
fn the_error_measure_and_the_timing_loop() {
    assert_eq!(rel_error(&[1.0f32, 2.0], |i| [1.0, 2.0][i]), 0.0);
    assert!((rel_error(&[1.0f64, 0.0], |i| [1.0, 1.0][i]) - 0.5f64.sqrt()).abs() < 1e-12);
    assert_eq!(rel_error(&[f32::NAN, 1.0], |_| 1.0), f64::INFINITY);
    assert_eq!(
        rel_error::<f32>(&[], |_| 1.0),
        f64::INFINITY,
        "nothing written never passes"
    );

    let runs = Cell::new(0);
    let policy = Policy {
        warmup: 2,
        min_reps: 5,
        min_time: Duration::from_millis(20),
        max_reps: 1000,
    };
    let samples = time_runs(&policy, &mut (), |_| {
        runs.set(runs.get() + 1);
        std::thread::sleep(Duration::from_millis(1));
    });
    assert!(samples.len() >= 5 && samples.len() < 1000);
    assert!(
        samples.iter().sum::<f64>() >= 20.0,
        "at least min_time of timed runs"
    );
    assert_eq!(runs.get(), samples.len() + 2, "warm-up runs are not timed");

    // A failed check: no timing at all, whatever the run closure would do.
    let o = check_then_time(
        &Policy::QUICK,
        1e-4,
        Work {
            flops: 1.0,
            bytes: 1.0,
        },
        &mut (),
        |_| 0.5,
        |_| panic!("a failed variant must never be timed"),
    );
    assert_verify_failed(&o);
}

// ---- machine description ----------------------------------------------------------------------

#[test]
fn machine_facts_are_parsed_from_proc_and_sys() {
    let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  9654 96-Core Processor\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n";
    assert_eq!(
        parse_cpuinfo_model(cpuinfo).as_deref(),
        Some("AMD EPYC 9654 96-Core Processor")
    );
    assert_eq!(parse_cpuinfo_model("processor : 0\nBogoMIPS : 48.00\n"), None);
    assert_eq!(
        parse_meminfo_total("MemTotal:       24684084 kB\nMemFree:  1 kB\n"),
        Some(24_684_084 * 1024)
    );
    assert_eq!(parse_meminfo_total("MemFree: 1 kB\n"), None);
    assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
    assert_eq!(parse_cache_size("1M"), Some(1 << 20));
    assert_eq!(parse_cache_size("512"), Some(512));
    assert_eq!(parse_cache_size("lots"), None);

    let here = Machine::detect();
    assert!(here.threads >= 1 && !here.cpu_model.is_empty());
}

#[test]
fn bandwidth_arrays_are_sized_past_the_cache_and_within_memory() {
    let mib = 1usize << 20;
    let cfg = |llc: u64, mem: u64| {
        let m = Machine {
            llc_bytes: llc,
            memory_bytes: mem,
            ..machine("x")
        };
        Config::full(&m).stream_len * 8
    };
    assert_eq!(cfg(32 << 20, 24 << 30), 256 * mib, "at least 256 MiB");
    assert_eq!(cfg(96 << 20, 24 << 30), 384 * mib, "4× a large LLC");
    assert_eq!(
        cfg(1 << 30, 64 << 30),
        512 * mib,
        "at most 512 MiB per array (1.5 GiB in all)"
    );
    assert_eq!(
        cfg(32 << 20, 3 << 30),
        128 * mib,
        "at most 1/8 of RAM for the three arrays"
    );
    assert_eq!(cfg(0, 0), 256 * mib, "unknown LLC and RAM: the default");
}

// ---- the real suite ----------------------------------------------------------------------------

/// Measures this machine with the real sizes (run it in release), refreshes the cache under
/// target/, and prints the numbers.
#[test]
#[ignore = "measures the real suite (~10 s in release); run with --release -- --ignored"]
fn real_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let started = std::time::Instant::now();
    let file = hdlc::cpubench::cpu_results(root, true, true).unwrap();
    let wall = started.elapsed().as_secs_f64();
    let lib = file
        .records
        .iter()
        .find(|r| r.baseline)
        .and_then(|r| match &r.outcome {
            Outcome::Ok(t) => Some(t.gflops()),
            _ => None,
        });
    println!(
        "{} — {} threads, {:.1} GiB RAM",
        file.device.name,
        file.device.sm_count,
        file.device.memory_bytes as f64 / (1u64 << 30) as f64
    );
    for r in &file.records {
        match &r.outcome {
            Outcome::Ok(t) if t.flops > 0.0 && r.family == "cpu" && r.variant != "triad" => println!(
                "{:<16} n={:<5} {:>8.2} GFLOP/s  ({:.1}% of library)  median {:.2} ms [p10 {:.2}, p90 {:.2}] ×{}  rel {:.1e}  | {}",
                r.variant,
                r.params["n"],
                t.gflops(),
                100.0 * t.gflops() / lib.unwrap_or(f64::NAN),
                t.median_ms,
                t.p10_ms,
                t.p90_ms,
                t.reps,
                t.rel_error,
                r.label
            ),
            Outcome::Ok(t) => println!(
                "{:<16} {:>6} MiB {:>8.2} GB/s   median {:.2} ms [p10 {:.2}, p90 {:.2}] ×{}  | {}",
                r.variant,
                (r.params["n"] * 8) >> 20,
                t.gbs(),
                t.median_ms,
                t.p10_ms,
                t.p90_ms,
                t.reps,
                r.label
            ),
            Outcome::Failed { stage, error } => println!("{:<16} FAILED ({stage:?}): {error}", r.variant),
        }
    }
    println!("suite wall time {wall:.1} s");
    assert!(file.records.iter().all(|r| matches!(r.outcome, Outcome::Ok(_))));
}
