//! Benchmark (not a test): a full `build` of the real book from cached results against a plain
//! mdBook build of the same generated pages, on the same machine. DESIGN.md's bar: ≤ 1.1×.
//!
//! Run with `cargo bench --bench build_vs_mdbook` (release). `HDLC_BENCH_RUNS=N` sets the number
//! of rounds (default 7).
//!
//! How it measures: the runs are interleaved (full, plain, full, plain, …) so that a change in
//! the machine's load hits both sides alike, and the fastest run of each side is compared — the
//! run least disturbed by other work. The plain side is what `mdbook build` does with the book's
//! own `book.toml`, theme and assets over the pages the full build generated (`book/src`); the
//! full side is `load → validate → measure → render → write`, GPU off, into `book/html`. CPU
//! time (all threads, from `getrusage`) is printed beside wall time: on a shared machine it
//! tells whether a slower run did more work or only waited.

use hdlc::site::{BuildOptions, Site};
use std::path::Path;
use std::time::{Duration, Instant};

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let t = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&t).unwrap();
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// CPU time (user + system, every thread) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct it is given and reads nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Wall and CPU time of one call.
fn timed(f: impl FnOnce()) -> (Duration, Duration) {
    let (t, c) = (Instant::now(), cpu_time());
    f();
    (t.elapsed(), cpu_time() - c)
}

fn full_build(root: &Path) -> String {
    let mut site = Site::load(root);
    assert!(!site.diags.has_errors(), "the real book must pass check");
    let opts = BuildOptions {
        use_gpu: false,
        progress: false,
        // The real output: this also refreshes book/src, which the plain build reads.
        out_dir: None,
        live_reload: false,
        templates_dir: None,
        // Cached after the first build on a machine; leave it out of the comparison.
        cpu_bench: false,
        labs: false,
    };
    site.build(&opts).expect("build");
    site.timing_line()
}

fn plain_build(plain_root: &Path) {
    let _ = std::fs::remove_dir_all(plain_root.join("html"));
    let md = mdbook_driver::MDBook::load(plain_root).expect("mdbook load");
    md.build().expect("mdbook build");
}

/// The plain book: the generated pages with the book's own configuration, theme and assets.
fn plain_book(root: &Path, plain_root: &Path) {
    copy_dir(&root.join("book/src"), &plain_root.join("src"));
    copy_dir(&root.join("book/assets"), &plain_root.join("assets"));
    if root.join("book/theme").is_dir() {
        copy_dir(&root.join("book/theme"), &plain_root.join("theme"));
    }
    std::fs::copy(root.join("book/book.toml"), plain_root.join("book.toml")).unwrap();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let runs: usize = std::env::var("HDLC_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let tmp = tempfile::tempdir().unwrap();
    let plain_root = tmp.path().join("plain");

    // A first build writes book/src (the pages the plain build reads) and warms the caches.
    full_build(&root);
    plain_book(&root, &plain_root);
    plain_build(&plain_root);

    let (mut full, mut plain) = (Vec::new(), Vec::new());
    let mut stages = String::new();
    for _ in 0..runs {
        full.push(timed(|| stages = full_build(&root)));
        plain.push(timed(|| plain_build(&plain_root)));
    }
    let pages = walkdir::WalkDir::new(plain_root.join("src"))
        .into_iter()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "md"))
        })
        .count();
    let fastest = |v: &[(Duration, Duration)]| v.iter().copied().min().expect("runs");
    let least_cpu = |v: &[(Duration, Duration)]| v.iter().map(|x| x.1).min().expect("runs");
    let (f, p) = (fastest(&full), fastest(&plain));
    println!("pages: {pages}; {runs} interleaved runs each");
    println!("stages of the last full build: {stages}");
    for (name, v) in [("full build (load→write)", &full), ("plain mdBook build", &plain)] {
        let walls: Vec<String> = v.iter().map(|x| format!("{:.0}", ms(x.0))).collect();
        println!("{name}: wall ms [{}]", walls.join(", "));
    }
    println!(
        "fastest: full {:.1} ms (cpu {:.1} ms), plain {:.1} ms (cpu {:.1} ms)",
        ms(f.0),
        ms(f.1),
        ms(p.0),
        ms(p.1)
    );
    println!(
        "ratio: {:.3}× wall, fastest runs (bar: ≤ 1.1×); least CPU time: {:.3}×",
        f.0.as_secs_f64() / p.0.as_secs_f64(),
        least_cpu(&full).as_secs_f64() / least_cpu(&plain).as_secs_f64()
    );
}
