//! Benchmark (not a test): a full `build` of the real book from cached results against a plain
//! mdBook build of the same generated pages, on the same machine. DESIGN.md's bar: ≤ 1.5×.
//!
//! Run with `cargo bench --bench build_vs_mdbook`.

use hdlc::site::{BuildOptions, Site};
use std::path::Path;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

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

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let runs = 7;
    let tmp = tempfile::tempdir().unwrap();

    // Full pipeline, shipped results (no GPU), into a scratch output directory.
    let mut full = Vec::new();
    for i in 0..runs {
        let t = Instant::now();
        let mut site = Site::load(&root);
        assert!(!site.diags.has_errors(), "the real book must pass check");
        let opts = BuildOptions {
            use_gpu: false,
            progress: false,
            // The real output: this also refreshes book/src, which the plain build below reads.
            out_dir: None,
            live_reload: false,
            templates_dir: None,
            // Cached after the first build on a machine; leave it out of the comparison.
            cpu_bench: false,
            labs: false,
        };
        site.build(&opts).expect("build");
        full.push(t.elapsed());
        if i + 1 == runs {
            println!("stages of the last full build: {}", site.timing_line());
        }
    }

    // Plain mdBook over the same generated pages (book/src, written by the builds above).
    let plain_root = tmp.path().join("plain");
    copy_dir(&root.join("book/src"), &plain_root.join("src"));
    copy_dir(&root.join("book/assets"), &plain_root.join("assets"));
    std::fs::copy(root.join("book/book.toml"), plain_root.join("book.toml")).unwrap();
    let mut plain = Vec::new();
    for _ in 0..runs {
        let _ = std::fs::remove_dir_all(plain_root.join("html"));
        let t = Instant::now();
        let md = mdbook_driver::MDBook::load(&plain_root).expect("mdbook load");
        md.build().expect("mdbook build");
        plain.push(t.elapsed());
    }
    let (f, p) = (median(full), median(plain));
    let pages = walkdir::WalkDir::new(plain_root.join("src"))
        .into_iter()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "md"))
        })
        .count();
    println!("pages: {pages}");
    println!(
        "full build (load→write), median of {runs}: {:.1} ms",
        f.as_secs_f64() * 1e3
    );
    println!(
        "plain mdBook build of the same pages, median of {runs}: {:.1} ms",
        p.as_secs_f64() * 1e3
    );
    println!("ratio: {:.2}× (bar: ≤ 1.5×)", f.as_secs_f64() / p.as_secs_f64());
}
