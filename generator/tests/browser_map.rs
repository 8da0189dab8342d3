//! The subway map in a real browser: build the valid fixture book, serve it on 127.0.0.1, drive
//! headless Chromium over the DevTools protocol, click a station and land on its card page;
//! hover a legend entry and see its line highlighted; zoom; save screenshots to look at.
//!
//! Needs no crate beyond what the generator already has: the DevTools websocket is spoken with a
//! few lines over `std::net` (client frames masked, text only), JSON with `serde_json`.
//! Without `/usr/bin/chromium` the test says so and passes, unless `HDLC_REQUIRE_BROWSER=1`.

mod common;

use assert_cmd::Command;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

/// A static file server for the built book, one thread per connection.
fn serve(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let _ = answer(stream, &root);
            });
        }
    });
    port
}

fn answer(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let path = path
        .split(['?', '#'])
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let mut file = root.join(if path.is_empty() { "index.html" } else { path });
    if file.is_dir() {
        file = file.join("index.html");
    }
    let inside = file
        .canonicalize()
        .map(|f| f.starts_with(root.canonicalize().unwrap()))
        .unwrap_or(false);
    match std::fs::read(&file) {
        Ok(body) if inside => {
            let ct = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("css") => "text/css",
                Some("js") => "text/javascript",
                Some("svg") => "image/svg+xml",
                Some("png") => "image/png",
                Some("woff2") => "font/woff2",
                Some("json") => "application/json",
                _ => "application/octet-stream",
            };
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)?;
        }
        _ => {
            stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
        }
    }
    stream.flush()
}

/// Plain HTTP GET on localhost (the DevTools target list). DevTools keeps the connection
/// open, so the body is read by its Content-Length.
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut reader = BufReader::new(s);
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The smallest websocket client the DevTools protocol needs.
struct Ws {
    stream: TcpStream,
    next_id: u64,
}

impl Ws {
    fn connect(port: u16, path: &str) -> Ws {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: aGRsYy1tYXAtdGVzdC1rZXk=\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        // Read the handshake response byte by byte up to the blank line.
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(
            head.starts_with("HTTP/1.1 101"),
            "websocket handshake refused: {head}"
        );
        Ws { stream, next_id: 1 }
    }

    fn send_text(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        let mask = [0x37u8, 0xfa, 0x21, 0x3d];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n < 65536 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).unwrap();
    }

    fn read_message(&mut self) -> String {
        let mut data = Vec::new();
        loop {
            let mut h = [0u8; 2];
            self.stream.read_exact(&mut h).unwrap();
            let (fin, op) = (h[0] & 0x80 != 0, h[0] & 0x0f);
            let mut len = (h[1] & 0x7f) as u64;
            if len == 126 {
                let mut l = [0u8; 2];
                self.stream.read_exact(&mut l).unwrap();
                len = u16::from_be_bytes(l) as u64;
            } else if len == 127 {
                let mut l = [0u8; 8];
                self.stream.read_exact(&mut l).unwrap();
                len = u64::from_be_bytes(l);
            }
            let mut payload = vec![0u8; len as usize];
            self.stream.read_exact(&mut payload).unwrap();
            match op {
                0x9 => continue, // ping: DevTools does not send these; ignore
                0x8 => panic!("DevTools closed the connection"),
                _ => data.extend(payload),
            }
            if fin {
                return String::from_utf8(data).unwrap();
            }
        }
    }

    /// Send a command and wait for its answer (events in between are dropped).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send_text(&json!({"id": id, "method": method, "params": params}).to_string());
        loop {
            let v: Value = serde_json::from_str(&self.read_message()).unwrap();
            if v["id"].as_u64() == Some(id) {
                assert!(v.get("error").is_none(), "{method} failed: {v}");
                return v["result"].clone();
            }
        }
    }

    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr} threw: {r}");
        r["result"]["value"].clone()
    }

    fn wait_for(&mut self, expr: &str, what: &str) -> Value {
        let t = Instant::now();
        loop {
            let v = self.eval(expr);
            if !(v.is_null() || v == json!(false) || v == json!("")) {
                return v;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn click_at(&mut self, x: f64, y: f64) {
        for (t, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": t, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1}),
            );
        }
    }

    fn screenshot(&mut self, to: &Path) {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        std::fs::write(to, base64_decode(r["data"].as_str().unwrap())).unwrap();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().filter(|&&c| c == b'=').count();
        let n = chunk.iter().fold(0u32, |acc, &c| (acc << 6) | val(c)) << (6 * (4 - chunk.len()));
        let b = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&b[..3 - pad.min(2)]);
    }
    out
}

/// Chromium with a fresh profile and DevTools on a port of its choosing.
struct Browser {
    child: Child,
    port: u16,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn launch(profile: &Path) -> Browser {
    let child = std::process::Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1400,900",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut browser = Browser { child, port: 0 };
    let file = profile.join("DevToolsActivePort");
    let t = Instant::now();
    loop {
        if let Some(port) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse().ok())
        {
            browser.port = port;
            return browser;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "chromium did not open DevTools"
        );
        if let Ok(Some(status)) = browser.child.try_wait() {
            panic!("chromium exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn page_ws(port: u16) -> Ws {
    let t = Instant::now();
    loop {
        if let Ok(body) = http_get(port, "/json/list") {
            if let Ok(Value::Array(targets)) = serde_json::from_str::<Value>(&body) {
                if let Some(url) = targets
                    .iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                {
                    let path = url.splitn(4, '/').nth(3).map(|p| format!("/{p}")).unwrap();
                    return Ws::connect(port, &path);
                }
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no page target in DevTools"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn clicking_a_station_on_the_map_opens_its_card() {
    if !Path::new(CHROMIUM).exists() {
        if std::env::var("HDLC_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("HDLC_REQUIRE_BROWSER=1 but {CHROMIUM} is missing");
        }
        eprintln!("skipped: {CHROMIUM} not found (set HDLC_REQUIRE_BROWSER=1 to make this an error)");
        return;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("book");
    common::copy_tree(&manifest.join("tests/fixtures/books/valid"), &root);
    common::copy_tree(&manifest.join("../book/assets"), &root.join("book/assets"));
    let out = tmp.path().join("html");
    let built = Command::cargo_bin("hdlc")
        .unwrap()
        .arg("--root")
        .arg(&root)
        .args(["build", "--no-gpu", "--no-cpu-bench", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let site = serve(out.clone());
    let origin = format!("http://127.0.0.1:{site}");

    let browser = launch(&tmp.path().join("profile"));
    let mut ws = page_ws(browser.port);
    ws.call("Page.enable", json!({}));
    ws.call("Runtime.enable", json!({}));
    ws.call("Page.navigate", json!({"url": format!("{origin}/map.html")}));
    ws.wait_for(
        "document.readyState === 'complete' && !!document.querySelector('svg.hdlc-subway .hdlc-stop') && location.pathname.endsWith('map.html')",
        "the map page",
    );
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    ws.screenshot(&shots.join("browser-map.png"));

    // Everything the page loaded came from the book itself: no network.
    let foreign = ws.eval("performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin))");
    assert_eq!(foreign, json!([]), "the map page loads nothing from elsewhere");

    // Hovering a legend entry highlights its line and fades the rest.
    let legend = ws.eval(
        "(() => { const e = document.querySelector('.hdlc-legend-item'); e.scrollIntoView({block: 'center', inline: 'center'}); const r = e.getBoundingClientRect(); return {x: r.left + 20, y: r.top + r.height / 2, line: e.getAttribute('data-line')}; })()",
    );
    ws.call(
        "Input.dispatchMouseEvent",
        json!({"type": "mouseMoved", "x": legend["x"], "y": legend["y"]}),
    );
    let focused = ws.eval("(() => { const s = document.querySelector('svg.hdlc-subway'); return s.classList.contains('hdlc-focused') && [...s.querySelectorAll('.hdlc-route.hdlc-on')].map(r => r.dataset.line); })()");
    assert_eq!(
        focused,
        json!([legend["line"]]),
        "hovering the legend highlights exactly its line"
    );
    ws.screenshot(&shots.join("browser-map-highlight.png"));
    ws.call(
        "Input.dispatchMouseEvent",
        json!({"type": "mouseMoved", "x": 1, "y": 1}),
    );

    // Keyboard: stations and legend entries are focusable links.
    let focusable = ws.eval("(() => { const a = document.querySelector('.hdlc-legend-item'); a.focus(); const ok = document.activeElement === a && document.querySelector('svg.hdlc-subway').classList.contains('hdlc-focused'); a.blur(); const s = document.querySelector('.hdlc-stop'); s.focus(); return ok && document.activeElement === s; })()");
    assert_eq!(
        focusable,
        json!(true),
        "legend entries and stations take keyboard focus"
    );

    // Zoom buttons change the drawing's size.
    let zoom = ws.eval("(() => { const svg = document.querySelector('svg.hdlc-subway'); const w0 = svg.getBoundingClientRect().width; const b = document.querySelector('.hdlc-map-tools [data-zoom=\"in\"]'); if (!b) return 'no zoom buttons'; b.click(); const w1 = svg.getBoundingClientRect().width; document.querySelector('.hdlc-map-tools [data-zoom=\"reset\"]').click(); return w1 > w0 * 1.1 && Math.abs(svg.getBoundingClientRect().width - w0) < 1; })()");
    assert_eq!(zoom, json!(true), "zoom in grows the map, reset restores it");

    // Click a station with a real mouse click at its marker and land on its card.
    let stop = ws.eval(
        "(() => { const a = document.querySelector('.hdlc-stop'); const m = a.querySelector('.hdlc-station'); m.scrollIntoView({block: 'center', inline: 'center'}); const r = m.getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2, href: a.getAttribute('href')}; })()",
    );
    let href = stop["href"].as_str().unwrap().to_string();
    assert!(href.starts_with("cards/") && href.ends_with(".html"), "{href}");
    ws.click_at(stop["x"].as_f64().unwrap(), stop["y"].as_f64().unwrap());
    let landed = ws.wait_for(
        &format!(
            "location.href === '{origin}/{href}' && document.readyState === 'complete' && location.href"
        ),
        "the card page after clicking a station",
    );
    assert_eq!(landed, json!(format!("{origin}/{href}")));
    let id = href.trim_start_matches("cards/").trim_end_matches(".html");
    let on_card = ws.eval(&format!(
        "!!document.querySelector('.hdlc-lines[data-card=\"{id}\"]')"
    ));
    assert_eq!(on_card, json!(true), "the page is the card's page");
    ws.screenshot(&shots.join("browser-card.png"));
    eprintln!("screenshots: {}", shots.join("browser-map.png").display());
    drop(browser);
}
