//! Measuring the whole CPU suite once: bandwidth runs, then the matrix-product ladder, each
//! verified before it is timed, turned into the records of a results file.
//!
//! Why apart from `mod.rs`: the cache and its key decide *whether* to measure; this file is the
//! one that measures, and is read on its own when a number looks wrong.

use super::*;

/// One variant of the suite, before it becomes a `Record`.
struct Item {
    variant: &'static str,
    label: String,
    rung: u32,
    baseline: bool,
    params: BTreeMap<String, u64>,
    source_file: Option<&'static str>,
    outcome: Outcome,
}

/// Measure the whole suite on `machine` (no cache): bandwidth first, then the matrix ladder.
/// `key` is stamped on every record; `root` is where `git rev-parse` looks for the commit.
pub fn measure(
    machine: &Machine,
    profile: Profile,
    config: &Config,
    key: &str,
    root: &Path,
    progress: bool,
) -> Result<ResultsFile> {
    let started = Instant::now();
    let threads = machine.threads.max(1);
    let seed = base_seed();
    let debug = profile == Profile::Debug;
    let mark = if debug { " (debug build)" } else { "" };
    let bar = if progress {
        let b = indicatif::ProgressBar::new(6);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} CPU: {msg}")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let base_params = |pairs: &[(&str, u64)], t: usize| {
        let mut p: BTreeMap<String, u64> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        // The thread count is in each label; as a parameter it would split the ladder into
        // single- and all-core groups that no figure could put side by side.
        let _ = t;
        p.insert("debug_build".into(), debug as u64);
        p
    };
    let mut items = Vec::new();

    bar.set_message("memory bandwidth");
    let (copy, triad) = bandwidth::run(config.stream_len, threads, seed, &config.policy);
    bar.inc(2);
    let stream_params = base_params(
        &[
            ("n", config.stream_len as u64),
            ("elem_bytes", bandwidth::ELEM_BYTES as u64),
            ("llc_bytes", machine.llc_bytes),
            ("write_allocate_counted", 0),
        ],
        threads,
    );
    for (variant, label, rung, outcome) in [
        ("copy", "copy (all cores)", 1, copy),
        ("triad", "triad a = b + s·c (all cores)", 2, triad),
    ] {
        items.push(Item {
            variant,
            label: format!("{label}{mark}"),
            rung,
            baseline: false,
            params: stream_params.clone(),
            source_file: Some("generator/src/cpubench/bandwidth.rs"),
            outcome,
        });
    }

    let isa = matmul::simd_isa();
    let ladder: [(&str, String, bool, usize, matmul::MatmulFn); 4] = [
        (
            "matmul_naive",
            "naive i-j-k loops (1 core)".to_string(),
            false,
            1,
            matmul::naive,
        ),
        (
            "matmul_blocked",
            "cache-blocked, i-k-j order (1 core)".to_string(),
            false,
            1,
            matmul::blocked,
        ),
        (
            "matmul_simd",
            format!(
                "blocked + {}×{} register tile, auto-vectorized {isa} (all cores)",
                matmul::MR,
                matmul::NR
            ),
            false,
            threads,
            matmul::simd,
        ),
        (
            "matrixmultiply",
            "matrixmultiply sgemm (library, all cores)".to_string(),
            true,
            threads,
            matmul::library,
        ),
    ];
    let mut problems: Vec<matmul::Problem> = Vec::new();
    for (rung, (variant, label, baseline, t, kernel)) in (3u32..).zip(ladder) {
        bar.set_message(variant);
        let n = if variant == "matmul_naive" {
            config.naive_n
        } else {
            config.matmul_n
        };
        if !problems.iter().any(|p| p.n == n) {
            problems.push(matmul::Problem::new(n, reference_seed(seed, n), threads));
        }
        let problem = problems.iter_mut().find(|p| p.n == n).expect("just added");
        let outcome = problem.measure(&config.policy, &mut |a, b, c| kernel(a, b, c, n, t));
        items.push(Item {
            variant,
            label: format!("{label}{mark}"),
            rung,
            baseline,
            params: base_params(&[("n", n as u64)], t),
            source_file: (!baseline).then_some("generator/src/cpubench/matmul.rs"),
            outcome,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();

    let provenance = Provenance {
        generator_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: crate::measure::git_commit(root),
        date: crate::measure::now_rfc3339(),
        frameworks: Default::default(),
    };
    let source_hash = source_hash();
    let records = items
        .into_iter()
        .map(|it| Record {
            family: FAMILY.to_string(),
            variant: it.variant.to_string(),
            label: it.label,
            rung: it.rung,
            baseline: it.baseline,
            params: it.params,
            key: key.to_string(),
            source_hash: if it.baseline {
                String::new()
            } else {
                source_hash.clone()
            },
            source_file: it.source_file.map(str::to_string),
            outcome: it.outcome,
            provenance: provenance.clone(),
            wall_s: None,
        })
        .collect();
    if progress {
        eprintln!(
            "CPU roofline of {} ({} threads, {} build) measured in {:.1} s",
            machine.cpu_model,
            threads,
            profile.name(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ResultsFile {
        schema: SCHEMA_VERSION,
        device: device_info(machine),
        records,
    })
}

/// Fresh inputs every run: $HDLC_SEED if set (to reproduce a failure), else the clock.
fn base_seed() -> u64 {
    std::env::var("HDLC_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

fn reference_seed(base: u64, n: usize) -> u64 {
    crate::measure::reference::seed_for(base, &format!("cpu/matmul/n={n}"))
}
