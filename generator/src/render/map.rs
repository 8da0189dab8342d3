//! The subway map: every card a station, every learning path a colored line.
//!
//! Layout: a card's column is its depth in the prerequisite graph (longest chain of
//! `requires` above it), so lines run left to right from basics to advanced; within a column,
//! cards are ordered by the first path that visits them. Lines are routed octilinearly
//! (diagonal first, then straight) and lines that share a station are offset side by side.
//! Output is plain SVG text, deterministic, with links to card pages and hooks for the
//! highlight script (`data-line`).

use crate::graph::{stops, ConceptGraph};
use crate::model::Book;
use crate::render::reading_order;
use std::collections::HashMap;
use std::fmt::Write;

const COL_W: f64 = 180.0;
const ROW_H: f64 = 64.0;
const MARGIN: f64 = 40.0;
const LINE_W: f64 = 5.0;

/// Station positions on the global map.
pub struct Layout {
    pub pos: HashMap<String, (f64, f64)>,
    pub width: f64,
    pub height: f64,
}

/// Compute the global layout.
pub fn layout(book: &Book, graph: &ConceptGraph) -> Layout {
    // Depth: longest chain of prerequisites (cycles were rejected by validation; guard anyway).
    let mut depth: HashMap<String, usize> = HashMap::new();
    fn depth_of(
        id: &str,
        book: &Book,
        g: &ConceptGraph,
        memo: &mut HashMap<String, usize>,
        guard: usize,
    ) -> usize {
        if let Some(&d) = memo.get(id) {
            return d;
        }
        if guard > 512 {
            return 0;
        }
        let d = g
            .prerequisites(id)
            .iter()
            .map(|p| depth_of(p, book, g, memo, guard + 1) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(id.to_string(), d);
        d
    }
    for c in &book.cards {
        depth_of(&c.id, book, graph, &mut depth, 0);
    }
    // Order key: (first path in reading order, position on it); cards on no path last.
    let order = reading_order(book);
    let mut key: HashMap<&str, (usize, usize)> = HashMap::new();
    for (rank, &pi) in order.iter().enumerate() {
        for (pos, s) in book.paths[pi].stations.iter().enumerate() {
            key.entry(s.as_str()).or_insert((rank, pos));
        }
    }
    let mut columns: Vec<Vec<&str>> = Vec::new();
    for c in &book.cards {
        let d = depth[&c.id];
        if columns.len() <= d {
            columns.resize(d + 1, Vec::new());
        }
        columns[d].push(&c.id);
    }
    let mut pos = HashMap::new();
    let mut max_rows = 0;
    for (x, col) in columns.iter_mut().enumerate() {
        col.sort_by_key(|id| {
            (
                key.get(id).copied().unwrap_or((usize::MAX, 0)),
                id.to_string(),
            )
        });
        max_rows = max_rows.max(col.len());
        for (y, id) in col.iter().enumerate() {
            pos.insert(
                id.to_string(),
                (
                    MARGIN + x as f64 * COL_W + 40.0,
                    MARGIN + y as f64 * ROW_H + 20.0,
                ),
            );
        }
    }
    Layout {
        pos,
        width: MARGIN * 2.0 + columns.len().max(1) as f64 * COL_W + 40.0,
        height: MARGIN * 2.0 + max_rows.max(1) as f64 * ROW_H + 20.0,
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Short label: the Korean title without its parenthesised English gloss, cut to fit.
pub fn short_label(title: &str, max_chars: usize) -> String {
    let base = title.split(" (").next().unwrap_or(title).trim();
    if base.chars().count() <= max_chars {
        base.to_string()
    } else {
        let cut: String = base.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Octilinear route between two points: diagonal first, then straight.
fn octi(a: (f64, f64), b: (f64, f64)) -> Vec<(f64, f64)> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let d = dx.abs().min(dy.abs());
    if d < 1e-9 || (dx.abs() - dy.abs()).abs() < 1e-9 {
        return vec![a, b];
    }
    let mid = (a.0 + d * dx.signum(), a.1 + d * dy.signum());
    vec![a, mid, b]
}

/// The whole map as an inline SVG. `prefix` is the href prefix to card pages.
pub fn global(book: &Book, layout: &Layout, prefix: &str) -> String {
    let mut s = String::new();
    let legend_h =
        22.0 * (book.paths.iter().filter(|p| !p.stations.is_empty()).count() as f64) + 30.0;
    let (w, h) = (layout.width.max(480.0), layout.height + legend_h);
    let _ = write!(
        s,
        r#"<svg class="hdlc-subway" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" role="img" aria-label="전체 지식 지도: 학습 경로를 지하철 노선처럼 그린 카드 그래프" xmlns="http://www.w3.org/2000/svg">"#
    );
    // How many lines pass through each station, for side-by-side offsets.
    let mut through: HashMap<&str, Vec<usize>> = HashMap::new();
    for (pi, p) in book.paths.iter().enumerate() {
        for st in &p.stations {
            through.entry(st.as_str()).or_default().push(pi);
        }
    }
    for (pi, p) in book.paths.iter().enumerate() {
        let pts: Vec<(f64, f64)> = p
            .stations
            .iter()
            .filter_map(|id| {
                let &(x, y) = layout.pos.get(id)?;
                let lines = &through[id.as_str()];
                let k = lines.iter().position(|&l| l == pi).unwrap_or(0) as f64;
                let off = (k - (lines.len() as f64 - 1.0) / 2.0) * (LINE_W + 1.0);
                Some((x, y + off))
            })
            .collect();
        if pts.len() < 2 {
            continue;
        }
        let mut d = format!("M{:.1},{:.1}", pts[0].0, pts[0].1);
        for w2 in pts.windows(2) {
            for q in octi(w2[0], w2[1]).into_iter().skip(1) {
                let _ = write!(d, " L{:.1},{:.1}", q.0, q.1);
            }
        }
        let _ = write!(
            s,
            r#"<g class="hdlc-route" data-line="{id}"><title>{t}</title><path d="{d}" fill="none" stroke="{c}" stroke-width="{LINE_W}" stroke-linejoin="round" stroke-linecap="round"/></g>"#,
            id = esc(&p.id),
            t = esc(&p.title),
            c = esc(&p.color)
        );
    }
    for c in &book.cards {
        let Some(&(x, y)) = layout.pos.get(&c.id) else {
            continue;
        };
        let n = through.get(c.id.as_str()).map(|v| v.len()).unwrap_or(0);
        let lines: Vec<&str> = through
            .get(c.id.as_str())
            .map(|v| v.iter().map(|&i| book.paths[i].id.as_str()).collect())
            .unwrap_or_default();
        let marker = if n > 1 {
            let hh = (n as f64) * (LINE_W + 1.0) / 2.0 + 4.0;
            format!(
                r#"<rect class="hdlc-station hdlc-interchange-mark" x="{:.1}" y="{:.1}" width="14" height="{:.1}" rx="7"/>"#,
                x - 7.0,
                y - hh,
                hh * 2.0
            )
        } else {
            format!(r#"<circle class="hdlc-station" cx="{x:.1}" cy="{y:.1}" r="6"/>"#)
        };
        let label = short_label(&c.title, 12);
        let ly = y + 10.0 + (n.max(1) as f64) * (LINE_W + 1.0) / 2.0 + 10.0;
        let _ = write!(
            s,
            r#"<a class="hdlc-stop" href="{prefix}{id}.html" data-lines="{lines}"><title>{t}</title>{marker}<text x="{x:.1}" y="{ly:.1}" text-anchor="middle">{label}</text></a>"#,
            id = esc(&c.id),
            t = esc(&c.title),
            lines = lines.join(" "),
            label = esc(&label)
        );
    }
    // Legend: one row per line with stations.
    let mut ly = layout.height + 10.0;
    let _ = write!(s, r#"<g class="hdlc-legend">"#);
    for p in book.paths.iter().filter(|p| !p.stations.is_empty()) {
        let _ = write!(
            s,
            r#"<a class="hdlc-legend-item" data-line="{id}" href="{base}paths/{id}.html"><line x1="{x1}" y1="{ly:.1}" x2="{x2}" y2="{ly:.1}" stroke="{c}" stroke-width="{LINE_W}" stroke-linecap="round"/><text x="{tx}" y="{ty:.1}">{t}</text></a>"#,
            id = esc(&p.id),
            base = prefix.trim_end_matches("cards/"),
            c = esc(&p.color),
            t = esc(&p.title),
            x1 = MARGIN,
            x2 = MARGIN + 30.0,
            tx = MARGIN + 40.0,
            ty = ly + 4.0
        );
        ly += 22.0;
    }
    s.push_str("</g></svg>");
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
            bold = if current {
                r#" font-weight="bold""#
            } else {
                ""
            }
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
