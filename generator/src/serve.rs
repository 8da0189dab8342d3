//! `serve`: build, serve the book on localhost, and rebuild on changes with live reload.
//!
//! Works offline: the reload script (book/assets/livereload.js) polls `/__hdlc/version` on the
//! same server; no websocket library or CDN is involved. A failed rebuild prints its
//! diagnostics and keeps serving the previous book.

use crate::site::{BuildOptions, Site};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn rebuild(root: &Path, out: &Path) -> bool {
    let mut site = Site::load(root);
    if site.diags.report() {
        eprintln!("rebuild stopped: fix the errors above (still serving the previous book)");
        return false;
    }
    let templates = root.join("generator/src/render/templates");
    let opts = BuildOptions {
        use_gpu: true,
        progress: false,
        out_dir: Some(out.to_path_buf()),
        live_reload: true,
        templates_dir: templates.is_dir().then_some(templates),
        cpu_bench: true,
        // A lab can take minutes; `serve` rebuilds on every save, so it draws shipped results.
        labs: false,
    };
    match site.build(&opts) {
        Ok(rep) => {
            println!("rebuilt {} pages ({})", rep.pages, site.timing_line());
            true
        }
        Err(e) => {
            site.diags.report();
            eprintln!("error: {e:#}");
            false
        }
    }
}

/// A create, write, rename or delete of a source file. Reads (the rebuild itself opens every
/// card) must not count, or each rebuild would trigger the next.
fn is_edit(root: &Path, ev: &notify::Result<notify::Event>) -> bool {
    use notify::EventKind;
    match ev {
        Ok(e) => {
            matches!(
                e.kind,
                EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
            ) && e.paths.iter().any(|p| relevant(root, p))
        }
        Err(_) => false,
    }
}

/// Is this change one that should trigger a rebuild (not our own output)?
fn relevant(root: &Path, p: &Path) -> bool {
    let rel = p.strip_prefix(root).unwrap_or(p);
    let s = rel.to_string_lossy();
    !(s.starts_with("book/html")
        || s.starts_with("book/src")
        || s.starts_with("book/.")
        || s.starts_with("target")
        || s.contains("/.build-")
        || s.starts_with(".git"))
}

pub fn serve(root: &Path, host: &str, port: u16) -> ExitCode {
    let out: PathBuf = root.join("book/html");
    rebuild(root, &out);
    let version = Arc::new(AtomicU64::new(1));
    let server = match tiny_http::Server::http((host, port)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {host}:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("serving the book at http://{host}:{port}/ (Ctrl-C to stop)");

    // Watcher thread: debounce, rebuild, bump the version.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut watcher = match notify::recommended_watcher(tx) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: cannot watch files: {e}");
            return ExitCode::FAILURE;
        }
    };
    use notify::Watcher;
    for p in [
        "cards",
        "paths.yaml",
        "kernels",
        "book/book.toml",
        "book/assets",
        "generator/src/render/templates",
    ] {
        let path = root.join(p);
        if path.exists() {
            let _ = watcher.watch(&path, notify::RecursiveMode::Recursive);
        }
    }
    let (r, o, v) = (root.to_path_buf(), out.clone(), version.clone());
    std::thread::spawn(move || {
        let _watcher = watcher;
        while let Ok(ev) = rx.recv() {
            let mut hit = is_edit(&r, &ev);
            while let Ok(ev) = rx.recv_timeout(Duration::from_millis(250)) {
                hit |= is_edit(&r, &ev);
            }
            if hit && rebuild(&r, &o) {
                v.fetch_add(1, Ordering::SeqCst);
            }
        }
    });

    for req in server.incoming_requests() {
        let url = req.url().split(['?', '#']).next().unwrap_or("/").to_string();
        if url == "/__hdlc/version" {
            let _ = req.respond(tiny_http::Response::from_string(
                version.load(Ordering::SeqCst).to_string(),
            ));
            continue;
        }
        let _ = req.respond(file_response(&out, &url));
    }
    ExitCode::SUCCESS
}

fn file_response(out: &Path, url: &str) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let decoded = crate::verify::decode(url.trim_start_matches('/'));
    let mut path = out.to_path_buf();
    for part in decoded.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            continue;
        }
        path.push(part);
    }
    if path.is_dir() {
        path.push("index.html");
    }
    match std::fs::read(&path) {
        Ok(bytes) => {
            let ct = content_type(&path);
            let header = tiny_http::Header::from_bytes("Content-Type", ct).expect("static header");
            tiny_http::Response::from_data(bytes).with_header(header)
        }
        Err(_) => {
            let body = std::fs::read(out.join("404.html")).unwrap_or_else(|_| b"not found".to_vec());
            tiny_http::Response::from_data(body).with_status_code(404)
        }
    }
}

fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "application/javascript; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        _ => "application/octet-stream",
    }
}
