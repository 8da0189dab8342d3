//! Headless Chromium driven over the DevTools protocol, for tests that look at pages the way a
//! reader does (layout, computed styles, text boxes) rather than at the HTML the build wrote.
//!
//! Needs no crate beyond what the generator already has: the DevTools websocket is spoken with a
//! few lines over `std::net` (client frames masked, text only), JSON with `serde_json`. One
//! browser and one tab serve a whole test: starting Chromium costs far more than a navigation.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Chromium with a fresh profile and DevTools on a port of its choosing; killed on drop.
pub struct Browser {
    child: Child,
    pub port: u16,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `chrome` headless with its profile in `profile` (a fresh folder), network cut to
/// 127.0.0.1 so that a page that reached out would fail instead of waiting.
pub fn launch(chrome: &Path, profile: &Path) -> Browser {
    let child = std::process::Command::new(chrome)
        .args(super::CHROME_OFFLINE)
        .args([
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

/// The smallest websocket client the DevTools protocol needs, attached to one tab.
pub struct Tab {
    stream: TcpStream,
    next_id: u64,
}

impl Tab {
    /// The browser's first page target.
    pub fn first(browser: &Browser) -> Tab {
        let t = Instant::now();
        loop {
            if let Ok(body) = http_get(browser.port, "/json/list") {
                if let Ok(Value::Array(targets)) = serde_json::from_str::<Value>(&body) {
                    if let Some(url) = targets
                        .iter()
                        .find(|t| t["type"] == "page")
                        .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                    {
                        let path = url.splitn(4, '/').nth(3).map(|p| format!("/{p}")).unwrap();
                        return Tab::connect(browser.port, &path);
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

    fn connect(port: u16, path: &str) -> Tab {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: aGRsYy1tYXAtdGVzdC1rZXk=\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
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
        Tab { stream, next_id: 1 }
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
                0x9 => continue,
                0x8 => panic!("DevTools closed the connection"),
                _ => data.extend(payload),
            }
            if fin {
                return String::from_utf8(data).unwrap();
            }
        }
    }

    /// Send a command and wait for its answer (events in between are dropped).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        match self.try_call(method, params) {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e}"),
        }
    }

    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send_text(&json!({"id": id, "method": method, "params": params}).to_string());
        loop {
            let v: Value = serde_json::from_str(&self.read_message()).unwrap();
            if v["id"].as_u64() == Some(id) {
                return match v.get("error") {
                    Some(e) => Err(e.clone()),
                    None => Ok(v["result"].clone()),
                };
            }
        }
    }

    /// Evaluate `expr` in the page (promises awaited) and return its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        match self.try_eval(expr) {
            Ok(v) => v,
            Err(e) => panic!("script failed: {e}"),
        }
    }

    /// [`Tab::eval`], with a failure (a thrown exception, a page between documents) as `Err`.
    pub fn try_eval(&mut self, expr: &str) -> Result<Value, Value> {
        let r = self.try_call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        )?;
        match r.get("exceptionDetails") {
            Some(e) => Err(e.clone()),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    /// Poll `expr` until it is truthy; panics after 30 s naming `what`. While a navigation
    /// replaces the document, a failed evaluation counts as "not yet".
    pub fn wait_for(&mut self, expr: &str, what: &str) -> Value {
        let t = Instant::now();
        loop {
            let v = self.try_eval(expr).unwrap_or(Value::Null);
            if !(v.is_null() || v == json!(false) || v == json!("")) {
                return v;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Lay pages out as a window `width` × `height` CSS px wide (no touch, scale 1).
    pub fn set_viewport(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Open `url` and wait until it has loaded, its fonts are in and its scripts have run.
    pub fn open(&mut self, url: &str) {
        // A mark on the old document tells its `complete` apart from the new one's.
        self.eval("window.__hdlcOldPage = true");
        self.call("Page.navigate", json!({"url": url}));
        let t = Instant::now();
        let loaded = "!window.__hdlcOldPage && document.readyState === 'complete'";
        while !matches!(self.try_eval(loaded), Ok(Value::Bool(true))) {
            if t.elapsed() > Duration::from_secs(30) {
                // Where the parser stopped says which file it is waiting on.
                let state = self.try_eval(
                    "document.readyState + ', parsed up to: ' + document.documentElement.outerHTML.slice(-200)",
                );
                panic!("timed out waiting for {url} to load ({state:?})");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.eval(
            "document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))).then(() => true)",
        );
    }

    /// A PNG of the viewport, written to `to`.
    /// A left click at page coordinates, as a mouse makes it (move, press, release).
    pub fn click_at(&mut self, x: f64, y: f64) {
        for (t, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": t, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1}),
            );
        }
    }

    pub fn screenshot(&mut self, to: &Path) {
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
