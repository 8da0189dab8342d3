//! `serve` builds the book, serves it on loopback, and rebuilds with a new version number when a
//! card changes; a broken edit keeps the last good book served. An edit rewrites only the pages
//! that show what changed, and the result is the book a full build writes.
//!
//! How long an edit takes to reach the browser is measured by a benchmark, not here:
//! `cargo bench --bench serve_edit`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    // Long enough for a long poll on `/__hdlc/wait` (the server answers within 25 s).
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
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

/// `hdlc serve` on `root`, once it answers; the guard stops it.
fn start(root: &std::path::Path) -> (Kill, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hdlc"))
        .arg("--root")
        .arg(root)
        .args(["serve", "--port", &port.to_string()])
        .env("HDLC_CPU_BENCH", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let guard = Kill(child);
    wait_for("the server", 60, || {
        get(port, "/index.html").is_some_and(|(s, _)| s == 200)
    });
    (guard, port)
}

/// One HTTP/1.1 response read from a kept-alive connection: (status line and headers, body).
fn read_response(s: &mut std::io::BufReader<TcpStream>) -> (String, Vec<u8>) {
    use std::io::BufRead;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        s.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line);
    }
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0; len];
    s.read_exact(&mut body).unwrap();
    (head, body)
}

#[test]
fn the_server_keeps_connections_apart_and_revalidates() {
    let tmp = common::fixture_book("valid");
    let (_guard, port) = start(tmp.path());
    // Connections a browser opened and left idle (preconnects, kept-alive ones) must not hold
    // up a new one: each has its own thread.
    let idle: Vec<TcpStream> = (0..12)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let t = Instant::now();
    assert_eq!(get(port, "/cards/bytes.html").unwrap().0, 200);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "a new connection waited on idle ones"
    );
    drop(idle);

    // Keep-alive: two requests on one connection, each answered in full.
    let conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = conn.try_clone().unwrap();
    let mut r = std::io::BufReader::new(conn);
    let ask = |w: &mut TcpStream, path: &str, extra: &str| {
        write!(w, "GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n").unwrap();
    };
    ask(&mut w, "/cards/bytes.html", "");
    let (head, page) = read_response(&mut r);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let version = get(port, "/__hdlc/version").unwrap().1;
    let page = String::from_utf8(page).unwrap();
    assert!(
        page.contains(&format!("livereload.js\" data-version=\"{version}\"")),
        "a page names the version it was served at on its reload script"
    );
    // Revalidation: the same file with its ETag is `304 Not Modified`, without a body.
    ask(&mut w, "/css/general.css", "");
    let (head, css) = read_response(&mut r);
    assert!(!css.is_empty());
    let tag = head
        .lines()
        .find_map(|l| l.strip_prefix("ETag: "))
        .expect("files carry an ETag")
        .to_string();
    ask(&mut w, "/css/general.css", &format!("If-None-Match: {tag}\r\n"));
    let (head, body) = read_response(&mut r);
    assert!(head.starts_with("HTTP/1.1 304"), "{head}");
    assert!(body.is_empty());
    ask(&mut w, "/css/general.css", "If-None-Match: \"stale\"\r\n");
    assert_eq!(read_response(&mut r).1, css);
}

#[test]
fn serve_rebuilds_on_change_and_keeps_the_last_good_book() {
    let tmp = common::fixture_book("valid");
    let (_guard, port) = start(tmp.path());
    let (_, page) = get(port, "/cards/bytes.html").unwrap();
    assert!(
        page.contains("livereload"),
        "served pages carry the reload script"
    );
    let v1 = get(port, "/__hdlc/version").unwrap().1;

    // An edit: rebuilt, new version (a waiting reload script hears of it), new text served,
    // and — once the background refresh is done — found by search.
    let card = tmp.path().join("cards/basics/bytes.md");
    let mut text = std::fs::read_to_string(&card).unwrap();
    text.push_str("\n새로 쓴 문장입니다.\n");
    std::fs::write(&card, &text).unwrap();
    wait_for("a rebuild after the edit", 60, || {
        get(port, &format!("/__hdlc/wait?seen={v1}")).is_some_and(|(_, v)| v != v1)
    });
    assert!(get(port, "/cards/bytes.html")
        .unwrap()
        .1
        .contains("새로 쓴 문장입니다"));
    wait_for("the search index to hold the new sentence", 60, || {
        get(port, "/searchindex.js").is_some_and(|(_, t)| t.contains("새로 쓴 문장입니다"))
    });

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

/// The pages of the book at `root` as `serve` renders them (live reload on, shipped results).
fn pages_of(root: &std::path::Path, cache: &mut hdlc::render::RenderCache) -> hdlc::render::Pages {
    let mut site = hdlc::site::Site::load(root);
    assert!(!site.diags.has_errors(), "the fixture must pass check");
    let opts = hdlc::site::BuildOptions {
        use_gpu: false,
        progress: false,
        out_dir: None,
        live_reload: true,
        templates_dir: None,
        cpu_bench: false,
        labs: false,
    };
    let records = site.measure(&opts).unwrap();
    site.render(&records, &opts, Some(cache)).unwrap()
}

/// Every file under `dir`, by relative path.
fn tree(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// The served book after a patch and its background refresh is, byte for byte, the book a full
/// build of the same pages writes — for an edit of a body, a summary and a title — and a patch
/// rewrites only the pages that show what changed.
#[test]
fn a_patched_book_is_the_full_build_of_its_pages() {
    use hdlc::write::live::LiveBook;
    let tmp = common::fixture_book("valid");
    let root = tmp.path();
    let out = root.join("book/html");
    let mut cache = hdlc::render::RenderCache::default();
    let mut live = LiveBook::new(root, &out).unwrap();
    // The fixture has ten pages: a title shows on nine of them.
    live.max_patch = Some(usize::MAX);
    assert!(live.rebuild(&pages_of(root, &mut cache)).unwrap().is_empty());
    let refresher = live.refresher().unwrap();
    let card = root.join("cards/basics/bytes.md");
    let text = std::fs::read_to_string(&card).unwrap();
    let edits: [(&str, String, &[&str]); 3] = [
        (
            "body",
            format!("{text}\n고쳐 쓴 문장입니다.\n"),
            &["cards/bytes.md"],
        ),
        (
            "summary",
            text.replacen("summary:", "summary: 새 요약 —", 1),
            &[
                "cards/bytes.md",
                "cards/intensity.md",
                "cards.md",
                "paths/first.md",
                "paths/second.md",
            ],
        ),
        (
            "title",
            text.replacen("title:", "title: 새 제목", 1),
            &[
                "SUMMARY.md",
                "cards/bytes.md",
                "cards/flops.md",
                "cards/intensity.md",
                "cards.md",
                "index.md",
                "map.md",
                "paths/first.md",
                "paths/second.md",
            ],
        ),
    ];
    for (what, new_text, expected) in edits {
        std::fs::write(&card, &new_text).unwrap();
        let pages = pages_of(root, &mut cache);
        let patch = live
            .patch(&pages)
            .unwrap()
            .unwrap_or_else(|| panic!("a {what} edit is patched, not rebuilt"));
        let mut changed: Vec<String> = patch.changed.iter().map(|p| p.display().to_string()).collect();
        changed.sort();
        let mut expected: Vec<&str> = expected.to_vec();
        expected.sort();
        assert_eq!(changed, expected, "pages a {what} edit changes");
        let generation = live.publish(patch).unwrap();
        let full = tempfile::tempdir().unwrap();
        let problems = hdlc::write::write_book(root, &pages, &full.path().join("html"), true);
        assert!(problems.unwrap().is_empty());
        // The patch itself brings the sidebar (a new title shows there at once).
        for f in hdlc::write::live::SIDEBAR {
            let read = |d: &std::path::Path| std::fs::read(d.join(f)).unwrap();
            assert!(
                read(&out) == read(&full.path().join("html")),
                "{what}: {f} is the full build's"
            );
        }
        let (problems, moved) = refresher.run(&pages, generation).unwrap();
        assert!(problems.is_empty(), "{what}: {problems:?}");
        // The background refresh brings the search index; the sidebar was already right.
        assert!(moved.contains(&"searchindex.js"), "{what}: {moved:?}");
        assert!(!moved.contains(&"toc.js"), "{what}: {moved:?}");

        let (served, built) = (tree(&out), tree(&full.path().join("html")));
        assert_eq!(
            served.keys().collect::<Vec<_>>(),
            built.keys().collect::<Vec<_>>(),
            "{what}: the same files"
        );
        for (rel, bytes) in &built {
            assert!(
                served[rel] == *bytes,
                "{what}: {} differs from a full build",
                rel.display()
            );
        }
        std::fs::write(&card, &text).unwrap();
        let pages = pages_of(root, &mut cache);
        let back = live.patch(&pages).unwrap().expect("undoing an edit is a patch");
        let generation = live.publish(back).unwrap();
        refresher.run(&pages, generation).unwrap();
    }
}

/// Under `serve` a title edit does not wait for the map's layout: the first render leaves the
/// pages that show the map as they were and says so, the next one brings them, and then the
/// pages are those of a render without a cache.
#[test]
fn a_deferred_map_follows_in_the_next_render() {
    let tmp = common::fixture_book("valid");
    let root = tmp.path();
    let mut cache = hdlc::render::RenderCache::default().defer_map();
    let before = pages_of(root, &mut cache);
    assert!(!cache.map_pending(), "the first render draws the map");
    let card = root.join("cards/basics/bytes.md");
    let text = std::fs::read_to_string(&card).unwrap();
    std::fs::write(&card, text.replacen("title:", "title: 새 제목", 1)).unwrap();
    let first = pages_of(root, &mut cache);
    assert!(cache.map_pending(), "a new title waits for a new map");
    for p in ["index.md", "map.md"] {
        assert_eq!(
            first[std::path::Path::new(p)],
            before[std::path::Path::new(p)],
            "{p}"
        );
    }
    assert_ne!(
        first[std::path::Path::new("cards/bytes.md")],
        before[std::path::Path::new("cards/bytes.md")]
    );
    let second = pages_of(root, &mut cache);
    assert!(!cache.map_pending());
    assert_ne!(
        second[std::path::Path::new("map.md")],
        before[std::path::Path::new("map.md")]
    );
    let fresh = pages_of(root, &mut hdlc::render::RenderCache::default());
    assert!(second == fresh, "the pages of a render without a cache");
}
