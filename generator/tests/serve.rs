//! `serve` builds the book, serves it on loopback, and rebuilds with a new version number when a
//! card changes; a broken edit keeps the last good book served.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((
        status,
        text.split_once("\r\n\r\n")
            .map(|x| x.1.to_string())
            .unwrap_or_default(),
    ))
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out waiting for {what}");
}

struct Kill(std::process::Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_rebuilds_on_change_and_keeps_the_last_good_book() {
    let tmp = common::fixture_book("valid");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hdlc"))
        .arg("--root")
        .arg(tmp.path())
        .args(["serve", "--port", &port.to_string()])
        .env("HDLC_CPU_BENCH", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _guard = Kill(child);
    wait_for("the server", 60, || {
        get(port, "/index.html").is_some_and(|(s, _)| s == 200)
    });
    let (_, page) = get(port, "/cards/bytes.html").unwrap();
    assert!(
        page.contains("livereload"),
        "served pages carry the reload script"
    );
    let v1 = get(port, "/__hdlc/version").unwrap().1;

    // An edit: rebuilt, new version, new text served.
    let card = tmp.path().join("cards/basics/bytes.md");
    let mut text = std::fs::read_to_string(&card).unwrap();
    text.push_str("\n새로 쓴 문장입니다.\n");
    std::fs::write(&card, &text).unwrap();
    wait_for("a rebuild after the edit", 60, || {
        get(port, "/__hdlc/version").is_some_and(|(_, v)| v != v1)
    });
    assert!(get(port, "/cards/bytes.html")
        .unwrap()
        .1
        .contains("새로 쓴 문장입니다"));

    // A broken edit: no new version, the last good page is still served.
    let v2 = get(port, "/__hdlc/version").unwrap().1;
    std::fs::write(&card, "---\nid: bytes\n").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(get(port, "/__hdlc/version").unwrap().1, v2);
    assert!(get(port, "/cards/bytes.html")
        .unwrap()
        .1
        .contains("새로 쓴 문장입니다"));
    assert_eq!(get(port, "/no/such/page.html").unwrap().0, 404);
}
