//! `serve`: build, serve the book on localhost, and rebuild on changes with live reload.
//!
//! Works offline: the reload script (book/assets/livereload.js) waits on `/__hdlc/wait` on the
//! same server ([`http`]); no websocket library or CDN is involved. A failed rebuild prints its
//! diagnostics and keeps serving the previous book.
//!
//! Why a [`session::Session`]: an author saves one card at a time, and a full build is about a
//! second; the session keeps what the last build made and rewrites only the pages an edit
//! changed (see `render::RenderCache` and `write::live`).

mod http;
mod session;

use session::{Change, Session};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Quiet time after a file event before rebuilding: an editor's save is often a burst of events
/// (write, rename, attributes), and one rebuild should follow it, not one per event.
const SETTLE: Duration = Duration::from_millis(30);

/// A create, write, rename or delete of a source file. Reads (the rebuild itself opens every
/// card) must not count, or each rebuild would trigger the next.
fn edited(root: &Path, ev: &notify::Result<notify::Event>) -> Option<Change> {
    use notify::EventKind;
    let e = ev.as_ref().ok()?;
    if !matches!(
        e.kind,
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
    ) {
        return None;
    }
    e.paths.iter().filter_map(|p| change_of(root, p)).max()
}

/// What a change to `p` touches, if it should trigger a rebuild at all (not our own output).
fn change_of(root: &Path, p: &Path) -> Option<Change> {
    let rel = p.strip_prefix(root).unwrap_or(p);
    let s = rel.to_string_lossy();
    if s.starts_with("book/html")
        || s.starts_with("book/src")
        || s.starts_with("book/.")
        || s.starts_with("target")
        || s.contains("/.build-")
        || s.starts_with(".git")
    {
        return None;
    }
    Some(if s.starts_with("book/") {
        Change::Book
    } else if s.starts_with("kernels") {
        Change::Kernels
    } else {
        Change::Content
    })
}

pub fn serve(root: &Path, host: &str, port: u16) -> ExitCode {
    let out: PathBuf = root.join("book/html");
    let version = http::Version::new(1);
    let mut session = match Session::new(root, &out, version.clone()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    session.rebuild(Change::Book);
    let server = match std::net::TcpListener::bind((host, port)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {host}:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("serving the book at http://{host}:{port}/ (Ctrl-C to stop)");

    // Watcher thread: settle, rebuild, bump the version.
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
        "book/theme",
        "generator/src/render/templates",
    ] {
        let path = root.join(p);
        if path.exists() {
            let _ = watcher.watch(&path, notify::RecursiveMode::Recursive);
        }
    }
    let r = root.to_path_buf();
    std::thread::spawn(move || {
        let _watcher = watcher;
        while let Ok(ev) = rx.recv() {
            let mut change = edited(&r, &ev);
            while let Ok(ev) = rx.recv_timeout(SETTLE) {
                change = change.max(edited(&r, &ev));
            }
            if let Some(c) = change {
                session.rebuild(c);
            }
        }
    });
    http::run(server, &out, version);
    ExitCode::SUCCESS
}
