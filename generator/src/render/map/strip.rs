//! Strip maps: one line drawn straight with its stations evenly spaced (path pages), and the
//! strips of every line through a card with that card highlighted (card pages).
//!
//! Why apart from the metro layout: these are straight lines that need no layout search, so they
//! are cheap enough to draw on every page.

use super::text::{base_name, label_variants, text_width, LINE_H};
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

/// Room (px) a label may take: labels alternate above and below, so each has two gaps.
const LABEL_ROOM: f64 = 2.0 * GAP - 12.0;
const GAP: f64 = 110.0;

/// A station's name, whole: on one line if it fits its room, else on the fewest lines that do.
fn name_lines(title: &str) -> Vec<String> {
    let v = label_variants(base_name(title));
    v.iter()
        .find(|ls| ls.iter().all(|l| text_width(l) <= LABEL_ROOM))
        .or(v.last())
        .cloned()
        .unwrap_or_default()
}

/// A label's text: lines stacked from `y` (the first baseline), each a tspan after the first.
fn label(lines: &[String], x: f64, y: f64) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 0 {
            s.push_str(&esc(l));
        } else {
            let _ = write!(
                s,
                r#"<tspan x="{x:.0}" y="{:.0}">{}</tspan>"#,
                y + i as f64 * LINE_H,
                esc(l)
            );
        }
    }
    s
}

/// One line drawn straight, its stations evenly spaced, labels alternating above and below.
/// `highlight` marks the current card (used on card pages).
pub fn strip(book: &Book, path: usize, highlight: Option<&str>, prefix: &str) -> String {
    let p = &book.paths[path];
    let n = p.stations.len();
    if n == 0 {
        return String::new();
    }
    let titles: Vec<&str> = p
        .stations
        .iter()
        .map(|id| book.card(id).map(|c| c.title.as_str()).unwrap_or(id))
        .collect();
    let names: Vec<Vec<String>> = titles.iter().map(|t| name_lines(t)).collect();
    let extra = names.iter().map(|l| l.len()).max().unwrap_or(1).saturating_sub(1) as f64 * LINE_H;
    let gap = GAP;
    let w = gap * (n as f64 - 1.0) + 140.0;
    let h = 110.0 + 2.0 * extra;
    let y = 55.0 + extra;
    let mut s = format!(
        r#"<svg class="hdlc-strip-svg" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" role="img" aria-label="{t} 노선도" xmlns="http://www.w3.org/2000/svg"><line x1="70" y1="{y}" x2="{x2:.0}" y2="{y}" stroke="{c}" stroke-width="{LINE_W}" stroke-linecap="round"/>"#,
        t = esc(&p.title),
        c = esc(&p.color),
        x2 = 70.0 + gap * (n as f64 - 1.0)
    );
    for (i, id) in p.stations.iter().enumerate() {
        let x = 70.0 + gap * i as f64;
        let title = titles[i];
        let lines = &names[i];
        let transfer = stops(book, id).len() > 1;
        let current = highlight == Some(id.as_str());
        let class = match (current, transfer) {
            (true, _) => "hdlc-station hdlc-current",
            (false, true) => "hdlc-station hdlc-interchange-mark",
            _ => "hdlc-station",
        };
        let r = if transfer || current { 9 } else { 7 };
        let up = (lines.len().max(1) - 1) as f64 * LINE_H;
        let ty = if i % 2 == 0 { y - 18.0 - up } else { y + 28.0 };
        let _ = write!(
            s,
            r#"<a class="hdlc-stop" href="{prefix}{id}.html?line={line}"><title>{tt}</title><circle class="{class}" cx="{x:.0}" cy="{y}" r="{r}"/><text x="{x:.0}" y="{ty:.0}" text-anchor="middle"{bold}>{label}</text></a>"#,
            id = esc(id),
            line = esc(&p.id),
            tt = esc(title),
            label = label(lines, x, ty),
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
