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
    let run = Run {
        config,
        threads,
        seed: crate::measure::reference::base_seed(),
        debug: profile == Profile::Debug,
        bar: progress_bar(progress),
    };
    let mut items = bandwidth_items(&run, machine);
    items.extend(matmul_items(&run));
    run.bar.finish_and_clear();
    let records = records(items, key, root);
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

/// What every step of one run of the suite shares.
struct Run<'a> {
    config: &'a Config,
    threads: usize,
    /// The base seed of this run's inputs.
    seed: u64,
    /// A debug build: its labels and parameters say so.
    debug: bool,
    bar: indicatif::ProgressBar,
}

/// Six steps (two bandwidth runs, four ladder rungs); hidden when not asked for.
fn progress_bar(progress: bool) -> indicatif::ProgressBar {
    if !progress {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(6);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} CPU: {msg}")
    {
        b.set_style(style.progress_chars("=> "));
    }
    b
}

/// A record's parameters: the given pairs and whether this was a debug build.
///
/// The thread count is in each label; as a parameter it would split the ladder into single- and
/// all-core groups that no figure could put side by side.
fn params(pairs: &[(&str, u64)], debug: bool) -> BTreeMap<String, u64> {
    let mut p: BTreeMap<String, u64> = pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    p.insert("debug_build".into(), debug as u64);
    p
}

/// " (debug build)" after every label of a debug build, so its numbers never pass for real ones.
fn mark(debug: bool) -> &'static str {
    if debug {
        " (debug build)"
    } else {
        ""
    }
}

/// Copy and triad on all cores, rungs 1 and 2.
fn bandwidth_items(run: &Run, machine: &Machine) -> Vec<Item> {
    let (config, debug) = (run.config, run.debug);
    run.bar.set_message("memory bandwidth");
    let (copy, triad) = bandwidth::run(config.stream_len, run.threads, run.seed, &config.policy);
    run.bar.inc(2);
    let stream_params = params(
        &[
            ("n", config.stream_len as u64),
            ("elem_bytes", bandwidth::ELEM_BYTES as u64),
            ("llc_bytes", machine.llc_bytes),
            ("write_allocate_counted", 0),
        ],
        debug,
    );
    [
        ("copy", "copy (all cores)", 1, copy),
        ("triad", "triad a = b + s·c (all cores)", 2, triad),
    ]
    .into_iter()
    .map(|(variant, label, rung, outcome)| Item {
        variant,
        label: format!("{label}{}", mark(debug)),
        rung,
        baseline: false,
        params: stream_params.clone(),
        source_file: Some("generator/src/cpubench/bandwidth.rs"),
        outcome,
    })
    .collect()
}

/// The matrix-product ladder: (variant, label, baseline, threads, kernel), rungs 3 to 6.
fn ladder(threads: usize) -> [(&'static str, String, bool, usize, matmul::MatmulFn); 4] {
    let isa = matmul::simd_isa();
    [
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
    ]
}

/// Each rung of the ladder verified and timed; rungs of the same n share one problem (its
/// inputs and reference product), so the reference is computed once per size.
fn matmul_items(run: &Run) -> Vec<Item> {
    let (config, threads, debug) = (run.config, run.threads, run.debug);
    let mut items = Vec::new();
    let mut problems: Vec<matmul::Problem> = Vec::new();
    for (rung, (variant, label, baseline, t, kernel)) in (3u32..).zip(ladder(threads)) {
        run.bar.set_message(variant);
        let n = if variant == "matmul_naive" {
            config.naive_n
        } else {
            config.matmul_n
        };
        if !problems.iter().any(|p| p.n == n) {
            problems.push(matmul::Problem::new(n, reference_seed(run.seed, n), threads));
        }
        let problem = problems.iter_mut().find(|p| p.n == n).expect("just added");
        let outcome = problem.measure(&config.policy, &mut |a, b, c| kernel(a, b, c, n, t));
        items.push(Item {
            variant,
            label: format!("{label}{}", mark(debug)),
            rung,
            baseline,
            params: params(&[("n", n as u64)], debug),
            source_file: (!baseline).then_some("generator/src/cpubench/matmul.rs"),
            outcome,
        });
        run.bar.inc(1);
    }
    items
}

/// The items as records of one run: same key, commit and date; the suite's source hash on
/// our own kernels, none on the library baseline (its code is not ours to hash).
fn records(items: Vec<Item>, key: &str, root: &Path) -> Vec<Record> {
    let provenance = Provenance {
        generator_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: crate::measure::git_commit(root),
        date: crate::measure::now_rfc3339(),
        frameworks: Default::default(),
        gpus: None,
        interconnect: None,
    };
    let source_hash = source_hash();
    items
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
        .collect()
}

fn reference_seed(base: u64, n: usize) -> u64 {
    crate::measure::reference::seed_for(base, &format!("cpu/matmul/n={n}"))
}
