//! The local HTTP server of `serve`: the built book's files, and the build counter the reload
//! script waits on.
//!
//! Why a long poll: the page asks `/__hdlc/wait?seen=N` and the answer comes the moment the
//! counter passes N, so an edit reaches the browser as soon as its pages are written — a page
//! that polled once a second would add up to a second to every edit.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The served book's version, and a signal for those waiting on it.
#[derive(Default)]
pub struct Version {
    value: Mutex<u64>,
    changed: Condvar,
}

impl Version {
    pub fn new(v: u64) -> Arc<Version> {
        Arc::new(Version {
            value: Mutex::new(v),
            changed: Condvar::new(),
        })
    }

    pub fn get(&self) -> u64 {
        *self.value.lock().expect("not poisoned")
    }

    pub fn bump(&self) {
        *self.value.lock().expect("not poisoned") += 1;
        self.changed.notify_all();
    }

    /// The version once it differs from `seen`, or after `limit` the one there is.
    fn wait_past(&self, seen: u64, limit: Duration) -> u64 {
        let guard = self.value.lock().expect("not poisoned");
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, limit, |v| *v == seen)
            .expect("not poisoned");
        *guard
    }
}

/// Threads answering requests: a browser asks for a page's twenty-odd files at once.
const WORKERS: usize = 4;

/// Answer requests until the server stops: files from `out`, the version counter, and long
/// polls on it (each waits on its own thread, so files keep being served meanwhile).
pub fn run(server: tiny_http::Server, out: &Path, version: Arc<Version>) {
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                while let Ok(req) = server.recv() {
                    answer(req, out, &version);
                }
            });
        }
    });
}

fn answer(req: tiny_http::Request, out: &Path, version: &Arc<Version>) {
    let full = req.url().to_string();
    let url = full.split(['?', '#']).next().unwrap_or("/").to_string();
    match url.as_str() {
        "/__hdlc/version" => {
            let _ = req.respond(tiny_http::Response::from_string(version.get().to_string()));
        }
        "/__hdlc/wait" => {
            let seen = full
                .split_once("seen=")
                .and_then(|(_, v)| v.split('&').next())
                .and_then(|v| v.parse::<u64>().ok());
            let version = version.clone();
            std::thread::spawn(move || {
                let v = match seen {
                    Some(s) => version.wait_past(s, Duration::from_secs(25)),
                    None => version.get(),
                };
                let _ = req.respond(tiny_http::Response::from_string(v.to_string()));
            });
        }
        _ => {
            let _ = req.respond(file_response(out, &url));
        }
    }
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
