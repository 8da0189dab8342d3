//! The local HTTP server of `serve`: the built book's files, and the build counter the reload
//! script waits on.
//!
//! Why a long poll: the page asks `/__hdlc/wait?seen=N` and the answer comes the moment the
//! counter passes N, so an edit reaches the browser as soon as its pages are written — a page
//! that polled once a second would add up to a second to every edit.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{TcpListener, TcpStream};
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

/// How long an idle keep-alive connection is kept open.
const IDLE: Duration = Duration::from_secs(15);

/// Answer connections until the process ends: files from `out`, the version counter, and long
/// polls on it. One thread per connection: a page asks for its twenty-odd files over the
/// browser's six connections and keeps them open, and its reload script holds one in a long
/// poll. (A shared worker pool that can leave a new connection queued behind idle keep-alive
/// ones stalled pages for tens of seconds — `tiny_http` 0.12 did, which is why this is plain
/// threads with `httparse` reading the requests.)
pub fn run(listener: TcpListener, out: &Path, version: Arc<Version>) {
    for stream in listener.incoming().flatten() {
        let (out, version) = (out.to_path_buf(), version.clone());
        std::thread::spawn(move || {
            let _ = connection(stream, &out, &version);
        });
    }
}

/// One connection: requests answered in turn until the client closes it, asks to close it
/// (HTTP/1.0 or `Connection: close`), sends something that is not a request, or idles.
fn connection(stream: TcpStream, out: &Path, version: &Arc<Version>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let Some(req) = read_request(&mut reader)? else {
            return Ok(());
        };
        let (status, headers, body) = answer(&req, out, version);
        let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !req.keep_alive {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        writer.write_all(head.as_bytes())?;
        if req.method != "HEAD" {
            writer.write_all(&body)?;
        }
        writer.flush()?;
        if !req.keep_alive {
            return Ok(());
        }
    }
}

/// What the server reads of a request.
struct Request {
    method: String,
    /// The target as sent: path and query.
    target: String,
    if_none_match: Option<String>,
    keep_alive: bool,
}

/// The next request's head (bodies are not expected: GET and HEAD only), or `None` at the end
/// of the connection or on anything unreadable.
fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let mut raw = Vec::new();
    loop {
        let n = match reader.read_until(b'\n', &mut raw) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => 0,
            Err(e) => return Err(e),
        };
        if n == 0 || raw.len() > 64 * 1024 {
            return Ok(None);
        }
        if raw.ends_with(b"\r\n\r\n") || raw == b"\r\n" {
            break;
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    if !matches!(parsed.parse(&raw), Ok(httparse::Status::Complete(_))) {
        return Ok(None);
    }
    let header = |name: &str| {
        parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).to_string())
    };
    let connection = header("Connection").unwrap_or_default().to_ascii_lowercase();
    let keep_alive = match parsed.version {
        Some(1) => !connection.contains("close"),
        _ => connection.contains("keep-alive"),
    };
    Ok(Some(Request {
        method: parsed.method.unwrap_or("GET").to_string(),
        target: parsed.path.unwrap_or("/").to_string(),
        if_none_match: header("If-None-Match"),
        keep_alive,
    }))
}

/// Status line, headers and body for one request.
fn answer(req: &Request, out: &Path, version: &Version) -> (&'static str, Headers, Vec<u8>) {
    let url = req.target.split(['?', '#']).next().unwrap_or("/");
    let text = |v: u64| {
        (
            "200 OK",
            vec![("Content-Type", "text/plain".to_string())],
            v.to_string().into_bytes(),
        )
    };
    match url {
        "/__hdlc/version" => text(version.get()),
        "/__hdlc/wait" => {
            let seen = req
                .target
                .split_once("seen=")
                .and_then(|(_, v)| v.split('&').next())
                .and_then(|v| v.parse::<u64>().ok());
            text(match seen {
                Some(s) => version.wait_past(s, Duration::from_secs(25)),
                None => version.get(),
            })
        }
        // Read before the file: the page is then at least this version, and a reload
        // script that waits from it reloads once more at worst, never misses a change.
        _ => file_response(out, url, req.if_none_match.as_deref(), version.get()),
    }
}

type Headers = Vec<(&'static str, String)>;

fn file_response(
    out: &Path,
    url: &str,
    seen: Option<&str>,
    version: u64,
) -> (&'static str, Headers, Vec<u8>) {
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
    let html = content_type(&path).starts_with("text/html");
    let tag = etag(&path).map(|t| match html {
        true => format!("{}-{version}\"", t.trim_end_matches('"')),
        false => t,
    });
    if tag.is_some() && tag.as_deref() == seen {
        return ("304 Not Modified", Vec::new(), Vec::new());
    }
    match std::fs::read(&path) {
        Ok(bytes) => {
            let bytes = match html {
                true => with_version(bytes, version),
                false => bytes,
            };
            let mut headers = vec![("Content-Type", content_type(&path).to_string())];
            if let Some(tag) = tag {
                // `no-cache`: keep the copy, but ask (with its ETag) before every use: a live
                // reload then revalidates the theme's CSS, scripts and fonts instead of
                // fetching them all again, and only the rebuilt page travels.
                headers.push(("ETag", tag));
                headers.push(("Cache-Control", "no-cache".to_string()));
            }
            ("200 OK", headers, bytes)
        }
        Err(_) => {
            let body = std::fs::read(out.join("404.html")).unwrap_or_else(|_| b"not found".to_vec());
            let headers = vec![("Content-Type", "text/html; charset=utf-8".to_string())];
            ("404 Not Found", headers, body)
        }
    }
}

/// The page with the served version on its reload script's tag (`data-version`): the script
/// waits from the version its page was served at. Asking the server for "the current version"
/// once it runs would miss a change published between the page's load and that question —
/// a title edit is served in two steps, and the sidebar of the second would never arrive.
fn with_version(page: Vec<u8>, version: u64) -> Vec<u8> {
    const TAG: &str = "assets/livereload.js\"";
    match String::from_utf8(page) {
        Ok(text) => text
            .replacen(TAG, &format!("{TAG} data-version=\"{version}\""), 1)
            .into_bytes(),
        Err(e) => e.into_bytes(),
    }
}

/// A validator for the file's current contents: its length and modification time. A rebuilt
/// page is a new file (renamed into place), so its time changes even when its length does not.
fn etag(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(format!("\"{:x}-{:x}\"", meta.len(), modified.as_nanos()))
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
