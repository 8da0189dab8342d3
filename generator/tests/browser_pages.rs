//! The whole book as a reader sees it: build the real book (the repository's cards and shipped
//! results), serve it on 127.0.0.1, load every built page in headless Chromium at 1400 and at
//! 390 px wide, and check issue 28's bars on the laid-out page (tests/common/page_audit.js):
//! nothing spills past the main column except inside a scroll box, every table in its own
//! scroll box and none over 30 visible rows, no SVG label cut with "…", no raw Markdown, TeX or
//! HTML entity in visible text, no Korean word split across lines, every CUDA block highlighted.
//!
//! Every offence on every page is reported in one run, like `check`, so the failure message is
//! a worklist. `HDLC_AUDIT_REPORT=/path/audit.txt` writes the full list there (also when the
//! test fails); `HDLC_AUDIT_REPORT_ONLY=1` makes the run a report that does not fail.
//! `HDLC_AUDIT_PAGES=cards/a,cards/b` limits the run to pages whose path contains one of those;
//! `HDLC_AUDIT_HTML=book/html` audits a book already built there instead of building one.

mod common;

use common::devtools::{launch, Tab};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const WIDTHS: [u32; 2] = [1400, 390];
const AUDIT_JS: &str = include_str!("common/page_audit.js");

#[derive(Deserialize)]
struct Finding {
    bar: String,
    #[serde(rename = "where")]
    at: String,
    detail: String,
}

/// Every page a reader can open: all HTML files except `print.html` (the same chapters again, on
/// one page) — `toc.html` stands for the sidebar that every page shows.
fn pages(html: &Path) -> Vec<String> {
    let filter: Vec<String> = std::env::var("HDLC_AUDIT_PAGES")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let mut out: Vec<String> = walkdir::WalkDir::new(html)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
        .map(|e| {
            e.path()
                .strip_prefix(html)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|p| !p.starts_with("assets/") && p != "print.html")
        .filter(|p| filter.is_empty() || filter.iter().any(|f| p.contains(f.as_str())))
        .collect();
    out.sort();
    out
}

/// The report: counts per bar, then every finding grouped by page.
fn report(found: &BTreeMap<(String, u32), Vec<Finding>>, pages: usize) -> String {
    let mut per_bar: BTreeMap<&str, (usize, std::collections::BTreeSet<&str>)> = BTreeMap::new();
    for ((page, _), fs) in found {
        for f in fs {
            let e = per_bar.entry(&f.bar).or_default();
            e.0 += 1;
            e.1.insert(page);
        }
    }
    let mut s = format!("{pages} pages × {WIDTHS:?} px\n");
    for (bar, (n, ps)) in &per_bar {
        let _ = writeln!(s, "  {bar:<10} {n:>5} findings on {:>3} pages", ps.len());
    }
    for ((page, width), fs) in found {
        if fs.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n{page} @ {width} px: {} findings", fs.len());
        for f in fs {
            let _ = writeln!(s, "  [{}] {} — {}", f.bar, f.at, f.detail);
        }
    }
    s
}

#[test]
fn every_page_meets_the_readers_bars_at_desktop_and_phone_width() {
    let Some(chrome) = common::chromium() else { return };
    let built;
    let html = match std::env::var_os("HDLC_AUDIT_HTML") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            built = common::build_real_book();
            built.path().join("html")
        }
    };
    let base = common::serve(&html);
    let pages = pages(&html);
    assert!(!pages.is_empty(), "no pages to audit");
    let profile = tempfile::tempdir().unwrap();
    let browser = launch(&chrome, profile.path());
    let mut tab = Tab::first(&browser);
    let mut found: BTreeMap<(String, u32), Vec<Finding>> = BTreeMap::new();
    let t = std::time::Instant::now();
    for width in WIDTHS {
        tab.set_viewport(width, 900);
        for page in &pages {
            tab.open(&format!("{base}/{page}"));
            let v = tab.eval(AUDIT_JS);
            let fs: Vec<Finding> = serde_json::from_value(v).expect("audit result");
            found.insert((page.clone(), width), fs);
        }
    }
    drop(browser);
    let total: usize = found.values().map(Vec::len).sum();
    let text = report(&found, pages.len());
    eprintln!(
        "audited {} pages at {WIDTHS:?} px in {:.0} s: {total} findings",
        pages.len(),
        t.elapsed().as_secs_f64()
    );
    if let Some(path) = std::env::var_os("HDLC_AUDIT_REPORT") {
        std::fs::write(&path, &text).expect("writing the audit report");
        eprintln!("full report: {}", Path::new(&path).display());
    }
    if std::env::var("HDLC_AUDIT_REPORT_ONLY").as_deref() == Ok("1") {
        eprintln!("{}", text.lines().take(12).collect::<Vec<_>>().join("\n"));
        return;
    }
    let shown: String = text.lines().take(150).collect::<Vec<_>>().join("\n");
    assert!(
        total == 0,
        "{total} findings (set HDLC_AUDIT_REPORT=/tmp/audit.txt for the whole list):\n{shown}"
    );
}
