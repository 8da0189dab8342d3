//! The subway map in a real browser, driven over the DevTools protocol: on the fixture book,
//! click a station and land on its card, highlight a line from the legend, zoom; on the real
//! book, the bars a reader sees at 1400 × 900 (every name shown at 10 px or more, the map a
//! landscape rectangle filling the window, the index's map above the fold), the explorer (pan
//! and zoom by wheel, drag, pinch and keys; areas that open; line switches; station search;
//! `#line=`), and the page at 390 px. Screenshots go to the test's temporary folder.
//!
//! Needs no crate beyond what the generator already has: the DevTools websocket is spoken with a
//! few lines over `std::net` (client frames masked, text only), JSON with `serde_json`.
//! Without `/usr/bin/chromium` the test says so and passes, unless `HDLC_REQUIRE_BROWSER=1`.

mod common;

use assert_cmd::Command;
use common::devtools::{self, Tab};
use serde_json::json;
use std::path::{Path, PathBuf};

const CHROMIUM: &str = "/usr/bin/chromium";

fn browser_or_skip() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    if std::env::var("HDLC_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!("HDLC_REQUIRE_BROWSER=1 but {CHROMIUM} is missing");
    }
    eprintln!("skipped: {CHROMIUM} not found (set HDLC_REQUIRE_BROWSER=1 to make this an error)");
    false
}

fn open(ws: &mut Tab, url: &str, ready: &str) {
    ws.call("Page.navigate", json!({ "url": url }));
    ws.wait_for(
        &format!(
            "document.readyState === 'complete' && location.href === {} && ({ready})",
            json!(url)
        ),
        url,
    );
}

/// The page's viewport, as a reader's window (headless Chromium's window has no chrome, but
/// its size is the window's, not the page's).
fn viewport(ws: &mut Tab, w: u32, h: u32, mobile: bool) {
    ws.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": w, "height": h, "deviceScaleFactor": 1, "mobile": mobile}),
    );
}

/// Everything the page loaded came from the book itself.
fn no_network(ws: &mut Tab) {
    let foreign = ws.eval("performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin))");
    assert_eq!(foreign, json!([]), "the page loads nothing from elsewhere");
}

/// The real book served locally, and one of its pages open at 1400 × 900 once its map has
/// started. Holds the book, the browser and its profile for as long as the test needs them.
struct RealPage {
    _book: tempfile::TempDir,
    _profile: tempfile::TempDir,
    browser: devtools::Browser,
    origin: String,
    url: String,
    shots: PathBuf,
}

impl RealPage {
    fn open(page: &str) -> RealPage {
        let book = common::build_real_book();
        let origin = common::serve(&book.path().join("html"));
        let profile = tempfile::tempdir().unwrap();
        let browser = devtools::launch(Path::new(CHROMIUM), profile.path());
        RealPage {
            url: format!("{origin}/{page}"),
            origin,
            _book: book,
            _profile: profile,
            browser,
            shots: PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        }
    }

    /// The page's tab, at 1400 × 900, loaded and its map view started.
    fn tab(&self) -> Tab {
        let mut ws = Tab::first(&self.browser);
        ws.call("Page.enable", json!({}));
        ws.call("Runtime.enable", json!({}));
        viewport(&mut ws, 1400, 900, false);
        open(
            &mut ws,
            &self.url,
            "!!document.querySelector('.hdlc-mapview.hdlc-js')",
        );
        ws
    }
}

#[test]
fn clicking_a_station_on_the_map_opens_its_card() {
    if !browser_or_skip() {
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
    let origin = common::serve(&out.clone());
    let browser = devtools::launch(Path::new(CHROMIUM), &tmp.path().join("profile"));
    let mut ws = Tab::first(&browser);
    ws.call("Page.enable", json!({}));
    ws.call("Runtime.enable", json!({}));
    open(
        &mut ws,
        &format!("{origin}/map.html"),
        "!!document.querySelector('.hdlc-mapview.hdlc-js')",
    );
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    ws.screenshot(&shots.join("browser-map.png"));
    no_network(&mut ws);

    // Hovering a legend entry highlights its line and fades the rest.
    let legend = ws.eval("(() => { const e = document.querySelector('.hdlc-maplegend-line a'); const r = e.getBoundingClientRect(); return {x: r.left + 10, y: r.top + r.height / 2, line: e.getAttribute('data-line')}; })()");
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
    ws.call(
        "Input.dispatchMouseEvent",
        json!({"type": "mouseMoved", "x": 700, "y": 880}),
    );

    // Keyboard: stations are focusable links.
    let focusable = ws.eval("(() => { const s = document.querySelector('.hdlc-stop'); s.focus(); return document.activeElement === s; })()");
    assert_eq!(focusable, json!(true), "stations take keyboard focus");

    // Zoom buttons change the scale; "전체" brings the whole map back.
    let zoom = ws.eval("(() => { const p = document.querySelector('.hdlc-mapport'); const s0 = +p.dataset.scale; document.querySelector('[data-act=out]').click(); const s1 = +p.dataset.scale; document.querySelector('[data-act=fit]').click(); return s1 < s0 && Math.abs(+p.dataset.scale - s0) < 1e-6; })()");
    assert_eq!(zoom, json!(true), "zoom out shrinks the map, 전체 restores it");

    // A real mouse click on a station's marker lands on its card.
    let stop = ws.eval("(() => { const a = document.querySelector('.hdlc-stop'); const r = a.querySelector('.hdlc-station').getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2, href: a.getAttribute('href')}; })()");
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
    drop(browser);
}

/// Font size on screen (px) of every station name shown in the viewport, and of the area names.
const SHOWN_TEXT: &str = "(() => { const port = document.querySelector('.hdlc-mapport'); const pr = port.getBoundingClientRect(); const svg = port.querySelector('svg'); const k = svg.getScreenCTM().a; const inView = r => r.width > 0 && r.right > pr.left && r.left < pr.right && r.bottom > pr.top && r.top < pr.bottom; const labels = [...svg.querySelectorAll('.hdlc-label')].filter(t => getComputedStyle(t).display !== 'none' && inView(t.getBoundingClientRect())).map(t => parseFloat(getComputedStyle(t).fontSize) * k); const chips = [...document.querySelectorAll('.hdlc-mapchip')].filter(c => c.offsetParent && inView(c.getBoundingClientRect())).map(c => parseFloat(getComputedStyle(c).fontSize)); return {labels, chips, cut: [...svg.querySelectorAll('text')].filter(t => t.textContent.endsWith('…')).length}; })()";

#[test]
fn the_real_map_fits_the_window_and_opens_by_area() {
    if !browser_or_skip() {
        return;
    }
    let real = RealPage::open("map.html");
    let (mut ws, shots) = (real.tab(), real.shots.clone());
    ws.screenshot(&shots.join("real-map-1400.png"));
    no_network(&mut ws);

    // The map fills the window under the menu bar, and is a landscape rectangle of at most 1.8:1.
    let frame = ws.eval("(() => { const r = document.querySelector('.hdlc-mapview').getBoundingClientRect(); const s = document.querySelector('svg.hdlc-subway'); return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, aspect: s.dataset.width / s.dataset.height, w: innerWidth, h: innerHeight}; })()");
    assert_eq!(frame["left"].as_f64(), Some(0.0), "{frame}");
    assert!(
        frame["right"].as_f64() == frame["w"].as_f64()
            && frame["bottom"].as_f64() == frame["h"].as_f64()
            && frame["top"].as_f64().unwrap() <= 60.0,
        "the map fills the window: {frame}"
    );
    let aspect = frame["aspect"].as_f64().unwrap();
    assert!(
        (1.0..=1.8).contains(&aspect),
        "landscape, at most 1.8:1: {aspect}"
    );

    // Fitted to the window: every name shown is at least 10 px tall, none cut short. The
    // whole map at once is the overview by area; station names show once readable.
    let fit = ws.eval(SHOWN_TEXT);
    eprintln!(
        "at fit: {} station names, {} area names shown",
        fit["labels"].as_array().unwrap().len(),
        fit["chips"].as_array().unwrap().len()
    );
    assert!(
        fit["chips"].as_array().unwrap().len() >= 5,
        "the overview names the areas: {fit}"
    );
    for v in fit["labels"]
        .as_array()
        .unwrap()
        .iter()
        .chain(fit["chips"].as_array().unwrap())
    {
        assert!(
            v.as_f64().unwrap() >= 10.0 - 1e-6,
            "a name shown at {v} px at fit"
        );
    }
    assert_eq!(fit["cut"], json!(0), "no name is cut short");

    // Each area opens at a readable size with its stations in view.
    let areas = ws.eval("[...document.querySelectorAll('.hdlc-mapchip')].map(c => c.dataset.area)");
    for area in areas.as_array().unwrap() {
        let a = area.as_str().unwrap();
        ws.eval(&format!("document.querySelector('[data-act=fit]').click(); document.querySelector('.hdlc-mapchip[data-area=\"{a}\"]').click(); true"));
        let shown = ws.eval(SHOWN_TEXT);
        let labels = shown["labels"].as_array().unwrap();
        let mine = ws.eval(&format!("(() => {{ const pr = document.querySelector('.hdlc-mapport').getBoundingClientRect(); return [...document.querySelectorAll('.hdlc-stop[data-area=\"{a}\"] .hdlc-label')].filter(t => {{ const r = t.getBoundingClientRect(); return r.width > 0 && r.left >= pr.left && r.right <= pr.right && r.top >= pr.top && r.bottom <= pr.bottom; }}).length; }})()"));
        assert!(
            !labels.is_empty() && mine.as_u64().unwrap() >= 3,
            "area {a} opens with its names in view: {shown} {mine}"
        );
        for v in labels {
            assert!(v.as_f64().unwrap() >= 10.0 - 1e-6, "area {a}: a name at {v} px");
        }
    }
    ws.screenshot(&shots.join("real-map-area.png"));

    explorer(&mut ws);
    drop(real);
}

/// Pan and zoom by wheel, drag, keys and pinch; line switches; station search; `#line=`.
fn explorer(ws: &mut Tab) {
    let scale = |ws: &mut Tab| {
        let v = ws.eval("document.querySelector('.hdlc-mapport') ? +document.querySelector('.hdlc-mapport').dataset.scale : location.href");
        v.as_f64().unwrap_or_else(|| panic!("left the map: {v}"))
    };
    let stage = |ws: &mut Tab| ws.eval("document.querySelector('.hdlc-mapstage').style.transform");
    ws.eval("document.querySelector('[data-act=fit]').click(); true");
    let s0 = scale(ws);
    ws.call(
        "Input.dispatchMouseEvent",
        json!({"type": "mouseWheel", "x": 500, "y": 400, "deltaX": 0, "deltaY": -400}),
    );
    let s1 = scale(ws);
    assert!(s1 > s0 * 1.2, "the wheel zooms in: {s0} → {s1}");
    let before = stage(ws);
    for (t, x, b) in [
        ("mousePressed", 500, 1),
        ("mouseMoved", 560, 1),
        ("mouseMoved", 640, 1),
        ("mouseReleased", 640, 0),
    ] {
        ws.call(
            "Input.dispatchMouseEvent",
            json!({"type": t, "x": x, "y": 400, "button": "left", "buttons": b, "clickCount": 1}),
        );
    }
    assert_ne!(stage(ws), before, "dragging pans the map");
    ws.eval("document.querySelector('.hdlc-mapport').focus(); true");
    for (key, code) in [("+", "Equal"), ("ArrowLeft", "ArrowLeft")] {
        ws.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyDown", "key": key, "code": code}),
        );
        ws.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code}),
        );
    }
    assert!(scale(ws) > s1 * 1.1, "+ zooms in");
    ws.call(
        "Input.dispatchKeyEvent",
        json!({"type": "keyDown", "key": "0", "code": "Digit0"}),
    );
    assert!((scale(ws) - s0).abs() < 1e-6, "0 shows the whole map");
    // Two fingers moving apart zoom in.
    let pinch = |x1: f64, x2: f64| json!([{"x": x1, "y": 450, "id": 1}, {"x": x2, "y": 450, "id": 2}]);
    ws.call(
        "Input.dispatchTouchEvent",
        json!({"type": "touchStart", "touchPoints": pinch(650.0, 750.0)}),
    );
    ws.call(
        "Input.dispatchTouchEvent",
        json!({"type": "touchMove", "touchPoints": pinch(600.0, 800.0)}),
    );
    ws.call(
        "Input.dispatchTouchEvent",
        json!({"type": "touchMove", "touchPoints": pinch(500.0, 900.0)}),
    );
    ws.call(
        "Input.dispatchTouchEvent",
        json!({"type": "touchEnd", "touchPoints": []}),
    );
    assert!(scale(ws) > s0 * 1.5, "a pinch zooms in: {s0} → {}", scale(ws));

    // Lines switch off and on, one by one and by area.
    let toggled = ws.eval("(() => { const i = document.querySelector('.hdlc-maplegend input[data-line]'); const id = i.dataset.line; const route = document.querySelector('.hdlc-route[data-line=\"' + id + '\"]'); i.click(); const off = getComputedStyle(route).display === 'none'; const g = i.closest('fieldset').querySelector('input[data-group]'); const partial = g.indeterminate; g.click(); g.click(); const allOff = [...i.closest('fieldset').querySelectorAll('input[data-line]')].every(x => !x.checked); g.click(); return off && partial && allOff && getComputedStyle(route).display !== 'none'; })()");
    assert_eq!(
        toggled,
        json!(true),
        "legend switches turn lines off and on, by area too"
    );

    // Searching a station jumps to it: in view, marked, its name readable, its link focused.
    ws.eval("document.querySelector('[data-act=fit]').click(); const q = document.querySelector('.hdlc-mapsearch'); q.value = 'Roofline 모델'; q.dispatchEvent(new Event('change')); true");
    let found = ws.eval("(() => { const a = document.querySelector('.hdlc-stop.hdlc-found'); if (!a) return null; const pr = document.querySelector('.hdlc-mapport').getBoundingClientRect(); const r = a.querySelector('.hdlc-station').getBoundingClientRect(); const t = a.querySelector('.hdlc-label'); return {id: a.dataset.id, inside: r.left >= pr.left && r.right <= pr.right && r.top >= pr.top && r.bottom <= pr.bottom, px: parseFloat(getComputedStyle(t).fontSize) * a.closest('svg').getScreenCTM().a, shown: getComputedStyle(t).display !== 'none', focused: document.activeElement === a}; })()");
    assert_eq!(found["id"], json!("roofline-model"), "{found}");
    assert_eq!(found["inside"], json!(true), "{found}");
    assert_eq!(found["shown"], json!(true), "{found}");
    assert_eq!(found["focused"], json!(true), "{found}");
    assert!(found["px"].as_f64().unwrap() >= 10.0, "{found}");

    // #line=<id> selects a line: highlighted, its legend entry marked, framed in view.
    let url = ws
        .eval("location.href.split('#')[0]")
        .as_str()
        .unwrap()
        .to_string();
    open(
        ws,
        &format!("{url}#line=roofline"),
        "document.querySelector('svg.hdlc-subway.hdlc-focused')",
    );
    let sel = ws.eval("(() => { const pr = document.querySelector('.hdlc-mapport').getBoundingClientRect(); const r = document.querySelector('.hdlc-route[data-line=roofline]').getBoundingClientRect(); return {on: [...document.querySelectorAll('.hdlc-route.hdlc-on')].map(x => x.dataset.line), legend: document.querySelector('.hdlc-maplegend-line.hdlc-selected')?.dataset.line, inside: r.left >= pr.left - 1 && r.right <= pr.right + 1 && r.top >= pr.top - 1 && r.bottom <= pr.bottom + 1}; })()");
    assert_eq!(
        sel,
        json!({"on": ["roofline"], "legend": "roofline", "inside": true})
    );
}

#[test]
fn the_index_shows_the_map_above_the_fold_and_phones_can_use_it() {
    if !browser_or_skip() {
        return;
    }
    let real = RealPage::open("index.html");
    let (mut ws, shots) = (real.tab(), real.shots.clone());
    ws.screenshot(&shots.join("real-index-1400.png"));
    let port = ws.eval("(() => { const r = document.querySelector('.hdlc-mapport').getBoundingClientRect(); return {top: r.top, bottom: r.bottom, h: innerHeight}; })()");
    assert!(
        port["top"].as_f64().unwrap() < 600.0 && port["bottom"].as_f64() <= port["h"].as_f64(),
        "the index's map is above the fold at 1400 × 900: {port}"
    );
    no_network(&mut ws);

    // A phone: 390 × 844.
    viewport(&mut ws, 390, 844, true);
    for page in ["map.html", "index.html"] {
        open(
            &mut ws,
            &format!("{}/{page}", real.origin),
            "!!document.querySelector('.hdlc-mapview.hdlc-js')",
        );
        ws.eval("new Promise(r => setTimeout(() => r(true), 300))");
        ws.screenshot(&shots.join(format!("real-{}-390.png", page.trim_end_matches(".html"))));
        let fits = ws.eval("(() => { const v = document.querySelector('.hdlc-mapview').getBoundingClientRect(); const tools = [...document.querySelectorAll('.hdlc-maptools > *')].every(t => { const r = t.getBoundingClientRect(); return r.left >= -1 && r.right <= innerWidth + 1; }); return {wide: document.documentElement.scrollWidth <= innerWidth + 1, view: v.left >= -1 && v.right <= innerWidth + 1 && v.width > 300, tools}; })()");
        assert_eq!(
            fits,
            json!({"wide": true, "view": true, "tools": true}),
            "{page} at 390 px"
        );
    }
    // On the phone the legend opens over the map and closes again.
    let legend = ws.eval("(() => { const b = document.querySelector('[data-act=legend]'); b.click(); const l = document.querySelector('.hdlc-maplegend'); const r = l.getBoundingClientRect(); const open = getComputedStyle(l).display !== 'none' && r.right <= innerWidth + 1 && r.left >= -1; b.click(); return open && getComputedStyle(l).display === 'none'; })()");
    assert_eq!(legend, json!(true), "the legend opens within the phone's width");
    drop(real);
}
