//! Shared helpers for browser tests: a tiny static file server on 127.0.0.1 and headless
//! Chromium, skipped when Chromium is not installed unless `HDLC_REQUIRE_BROWSER=1`.
#![allow(dead_code)]

pub mod devtools;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Chromium binary, or None (test should skip) — panics if browsers are required.
pub fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        if std::env::var("HDLC_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("HDLC_REQUIRE_BROWSER=1 but no chromium is installed");
        }
        eprintln!("skipping browser test: chromium is not installed (apt-get install chromium)");
    }
    found
}

/// Serve `root` on an ephemeral loopback port for the life of the process; returns the base URL.
pub fn serve(root: &Path) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                }
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .split(['?', '#'])
                    .next()
                    .unwrap_or("/")
                    .to_string();
                let mut file = root.clone();
                for part in hdlc::verify::decode(&path)
                    .split('/')
                    .filter(|p| !p.is_empty() && *p != "..")
                {
                    file.push(part);
                }
                if file.is_dir() {
                    file.push("index.html");
                }
                let (status, body) = match std::fs::read(&file) {
                    Ok(b) => ("200 OK", b),
                    Err(_) => ("404 Not Found", b"not found".to_vec()),
                };
                let ct = match file.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html; charset=utf-8",
                    Some("css") => "text/css",
                    Some("js") => "application/javascript",
                    Some("svg") => "image/svg+xml",
                    Some("woff2") => "font/woff2",
                    _ => "application/octet-stream",
                };
                let _ = write!(stream, "HTTP/1.0 {status}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = stream.write_all(&body);
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// Headless Chromium with nothing of its own on the network and every non-loopback host
/// unresolvable, so that a page that reached out fails instead of waiting.
pub const CHROME_OFFLINE: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/// Run headless Chromium on `url` with every non-loopback host unresolvable, recording the
/// network log. Returns (DOM after scripts ran, network log JSON).
pub fn load(chrome: &Path, url: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let netlog = dir.path().join("netlog.json");
    let out = Command::new("timeout")
        .arg("120")
        .arg(chrome)
        .args(CHROME_OFFLINE)
        .arg("--virtual-time-budget=5000")
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(extra)
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = std::fs::read_to_string(&netlog).unwrap_or_else(|_| "{}".into());
    // Chromium may leave the log without its closing brackets when killed; close it.
    let log: serde_json::Value = serde_json::from_str(&log)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", log.trim_end().trim_end_matches(','))))
        .unwrap_or(serde_json::Value::Null);
    (dom, log)
}

/// URLs the page itself requested (initiator = the page's origin) that left 127.0.0.1,
/// and the number of page requests seen at all.
pub fn external_page_requests(log: &serde_json::Value, origin: &str) -> (Vec<String>, usize) {
    let types = &log["constants"]["logEventTypes"];
    let start = types["URL_REQUEST_START_JOB"].as_u64();
    let mut external = Vec::new();
    let mut seen = 0;
    for e in log["events"].as_array().into_iter().flatten() {
        if e["type"].as_u64() != start {
            continue;
        }
        let url = e["params"]["url"].as_str().unwrap_or("");
        let initiator = e["params"]["initiator"].as_str().unwrap_or("");
        if initiator == origin || url.starts_with(origin) {
            seen += 1;
            let local = url.starts_with(origin) || url.starts_with("data:") || url.starts_with("blob:");
            if !local {
                external.push(url.to_string());
            }
        }
    }
    (external, seen)
}

/// Build the real book (shipped results, no GPU) into a temporary folder.
pub fn build_real_book() -> tempfile::TempDir {
    // HDLC_BOOK_ROOT lets a developer point the browser tests at another book.
    let root = std::env::var_os("HDLC_BOOK_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let tmp = tempfile::tempdir().unwrap();
    let out = assert_cmd::Command::cargo_bin("hdlc")
        .unwrap()
        .arg("--root")
        .arg(&root)
        .args(["build", "--no-gpu", "--no-cpu-bench", "--no-labs", "--out"])
        .arg(tmp.path().join("html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmp
}

/// Copy a folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
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

/// A temporary copy of fixture book `case` with the real book's assets (math fonts, CSS, JS).
pub fn fixture_book(case: &str) -> tempfile::TempDir {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&manifest.join("tests/fixtures/books").join(case), tmp.path());
    copy_tree(&manifest.join("../book/assets"), &tmp.path().join("book/assets"));
    tmp
}

/// The GPU the lab-runner tests pretend to have (an H100-like card; nothing runs on it).
pub fn test_device() -> hdlc::measure::results::DeviceInfo {
    hdlc::measure::results::DeviceInfo {
        name: "Test GPU".into(),
        compute_capability: "9.0".into(),
        sm_count: 132,
        memory_bytes: 80 << 30,
        driver_version: "580".into(),
        cuda_version: "13.0".into(),
        nvrtc_version: "13.0".into(),
        datasheet: None,
    }
}

/// Whether the lab runner's Python can run; panics when `HDLC_REQUIRE_PYTHON=1` and it cannot
/// (CI), else the test says it skips.
pub fn python_present() -> bool {
    let ok = Command::new(hdlc::measure::labs::python())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("HDLC_REQUIRE_PYTHON").as_deref() != Ok("1"),
            "HDLC_REQUIRE_PYTHON=1 but {} cannot be run",
            hdlc::measure::labs::python()
        );
        eprintln!("skipping lab runner test: no python3 (set HDLC_PYTHON)");
    }
    ok
}
