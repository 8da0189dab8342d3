//! Strip maps: one line drawn straight with its stations evenly spaced (path pages), and the
//! strips of every line through a card with that card highlighted (card pages).
//!
//! Why apart from the metro layout: these are straight lines that need no layout search, so they
//! are cheap enough to draw on every page.

use super::short_label;
use crate::graph::stops;
use crate::model::Book;
use std::fmt::Write;

const LINE_W: f64 = 5.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One line drawn straight, its stations evenly spaced, labels alternating above and below.
/// `highlight` marks the current card (used on card pages).
pub fn strip(book: &Book, path: usize, highlight: Option<&str>, prefix: &str) -> String {
    let p = &book.paths[path];
    let n = p.stations.len();
    if n == 0 {
        return String::new();
    }
    let gap = 110.0;
    let w = gap * (n as f64 - 1.0) + 140.0;
    let h = 110.0;
    let y = 55.0;
    let mut s = format!(
        r#"<svg class="hdlc-strip-svg" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" role="img" aria-label="{t} 노선도" xmlns="http://www.w3.org/2000/svg"><line x1="70" y1="{y}" x2="{x2:.0}" y2="{y}" stroke="{c}" stroke-width="{LINE_W}" stroke-linecap="round"/>"#,
        t = esc(&p.title),
        c = esc(&p.color),
        x2 = 70.0 + gap * (n as f64 - 1.0)
    );
    for (i, id) in p.stations.iter().enumerate() {
        let x = 70.0 + gap * i as f64;
        let title = book.card(id).map(|c| c.title.as_str()).unwrap_or(id);
        let transfer = stops(book, id).len() > 1;
        let current = highlight == Some(id.as_str());
        let class = match (current, transfer) {
            (true, _) => "hdlc-station hdlc-current",
            (false, true) => "hdlc-station hdlc-interchange-mark",
            _ => "hdlc-station",
        };
        let r = if transfer || current { 9 } else { 7 };
        let ty = if i % 2 == 0 { y - 18.0 } else { y + 28.0 };
        let _ = write!(
            s,
            r#"<a class="hdlc-stop" href="{prefix}{id}.html?line={line}"><title>{tt}</title><circle class="{class}" cx="{x:.0}" cy="{y}" r="{r}"/><text x="{x:.0}" y="{ty:.0}" text-anchor="middle"{bold}>{label}</text></a>"#,
            id = esc(id),
            line = esc(&p.id),
            tt = esc(title),
            label = esc(&short_label(title, 9)),
            bold = if current { r#" font-weight="bold""# } else { "" }
        );
    }
    s.push_str("</svg>");
    s
}

/// For a card page: the strip of each line through the card, the card highlighted.
pub fn card_map(book: &Book, id: &str) -> String {
    stops(book, id)
        .into_iter()
        .map(|st| {
            format!(
                r#"<div class="hdlc-minimap-line" data-line="{}">{}</div>"#,
                esc(&book.paths[st.path].id),
                strip(book, st.path, Some(id), "")
            )
        })
        .collect::<Vec<_>>()
        .join("")
}
