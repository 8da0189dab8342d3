//! Drawing the laid-out map as one line of inline SVG (a blank line would end mdBook's HTML
//! block). Colors come from CSS (`currentColor`, `var(--bg)`) except the lines' own colors, so
//! the map follows the book's light and dark themes; `data-line` / `data-lines` are the hooks
//! of the highlight script, and every station and legend entry is a link, so the map can be
//! used with the keyboard alone.

use super::geom::Pt;
use super::text::LINE_H;
use super::{Align, Layout, LINE_W, MARGIN, PILL_W};
use std::fmt::Write;

/// The legend's last row: what an interchange looks like.
pub const KEY_TEXT: &str = "환승역: 여러 노선이 서는 카드";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A lattice coordinate, printed exactly (whole or half pixels).
fn n(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

/// A label's lines: the first as text, the others as tspans below it.
fn label_text(lines: &[String], x: f64, y: f64) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 0 {
            s.push_str(&esc(l));
        } else {
            let _ = write!(
                s,
                r#"<tspan x="{}" y="{}">{}</tspan>"#,
                n(x),
                n(y + i as f64 * LINE_H),
                esc(l)
            );
        }
    }
    s
}

fn path_d(pts: &[Pt]) -> String {
    let mut d = String::new();
    for (i, p) in pts.iter().enumerate() {
        let _ = write!(d, "{}{},{}", if i == 0 { "M" } else { " L" }, n(p.x), n(p.y));
    }
    d
}

/// The whole map. `prefix` leads to card pages; path pages are beside it.
pub fn global(layout: &Layout, prefix: &str) -> String {
    let base = prefix.strip_suffix("cards/").unwrap_or("");
    let (w, h) = (layout.width, layout.height);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="hdlc-subway" viewBox="0 0 {w} {h}" width="{w}" data-width="{w}" xmlns="http://www.w3.org/2000/svg" aria-label="전체 지식 지도: 학습 경로를 지하철 노선처럼 그린 카드 그래프"><title>전체 지식 지도</title>"#,
        w = n(w),
        h = n(h)
    );
    s.push_str(r#"<g class="hdlc-routes">"#);
    for l in &layout.lines {
        if l.points.len() < 2 {
            continue;
        }
        let _ = write!(
            s,
            r#"<g class="hdlc-route" data-line="{id}"><title>{t}</title><path d="{d}" fill="none" stroke="{c}" stroke-width="{LINE_W}" stroke-linejoin="miter" stroke-linecap="butt"/></g>"#,
            id = esc(&l.id),
            t = esc(&l.title),
            c = esc(&l.color),
            d = path_d(&l.points)
        );
    }
    s.push_str("</g><g class=\"hdlc-stops\">");
    for st in &layout.stations {
        let m = st.marker;
        let interchange = st.lines.len() > 1;
        let lines: Vec<&str> = st.lines.iter().map(|&i| layout.lines[i].id.as_str()).collect();
        let (class, style) = match st.lines.as_slice() {
            [one] => (
                "hdlc-station",
                format!(r#" style="stroke:{}""#, esc(&layout.lines[*one].color)),
            ),
            _ if interchange => ("hdlc-station hdlc-interchange-mark", String::new()),
            _ => ("hdlc-station", String::new()),
        };
        let anchor = match st.anchor.align {
            Align::Start => "start",
            Align::Middle => "middle",
            Align::End => "end",
        };
        let _ = write!(
            s,
            r#"<a class="hdlc-stop{ic}" href="{prefix}{id}.html" data-lines="{lines}"><title>{t}</title>{marker}<text class="hdlc-label" x="{tx}" y="{ty}" text-anchor="{anchor}">{label}</text></a>"#,
            label = label_text(&st.label, st.anchor.x, st.anchor.y),
            ic = if interchange { " hdlc-interchange" } else { "" },
            id = esc(&st.id),
            lines = esc(&lines.join(" ")),
            t = esc(&st.title),
            marker = if interchange {
                format!(
                    r#"<rect class="{class}"{style} x="{}" y="{}" width="{}" height="{}" rx="5"/>"#,
                    n(m.x0),
                    n(m.y0),
                    n(m.x1 - m.x0),
                    n(m.y1 - m.y0)
                )
            } else {
                // One line: a ring on the line.
                format!(
                    r#"<circle class="{class}"{style} cx="{}" cy="{}" r="6"/>"#,
                    n((m.x0 + m.x1) / 2.0),
                    n((m.y0 + m.y1) / 2.0)
                )
            },
            tx = n(st.anchor.x),
            ty = n(st.anchor.y),
        );
    }
    s.push_str("</g>");
    // Legend.
    let _ = write!(
        s,
        r#"<g class="hdlc-legend"><text class="hdlc-legend-title" x="{x}" y="{y}">노선</text>"#,
        x = n(MARGIN),
        y = n(layout.legend_top + 12.0)
    );
    for e in &layout.legend {
        let l = &layout.lines[e.line];
        let _ = write!(
            s,
            r#"<a class="hdlc-legend-item" data-line="{id}" href="{base}paths/{id}.html"><rect class="hdlc-hit" x="{x}" y="{y}" width="{ew}" height="22"/><line x1="{x1}" y1="{ly}" x2="{x2}" y2="{ly}" stroke="{c}" stroke-width="{LINE_W}"/><text x="{tx}" y="{ty}">{t}</text></a>"#,
            id = esc(&l.id),
            x = n(e.x - 4.0),
            y = n(e.y),
            ew = n(layout.legend_entry_w - 8.0),
            x1 = n(e.x),
            x2 = n(e.x + 32.0),
            ly = n(e.y + 11.0),
            tx = n(e.x + 42.0),
            ty = n(e.y + 15.0),
            c = esc(&l.color),
            t = esc(&l.title)
        );
    }
    let rows = layout
        .legend
        .len()
        .div_ceil((((layout.width - 2.0 * MARGIN) / layout.legend_entry_w).floor() as usize).max(1));
    let ky = layout.legend_top + 22.0 + rows as f64 * 24.0;
    let _ = write!(
        s,
        r#"<g class="hdlc-legend-key"><line x1="{l0}" y1="{y1}" x2="{l1}" y2="{y1}" stroke="currentColor" stroke-opacity=".35" stroke-width="{LINE_W}"/><line x1="{l0}" y1="{y2}" x2="{l1}" y2="{y2}" stroke="currentColor" stroke-opacity=".35" stroke-width="{LINE_W}"/><rect class="hdlc-station hdlc-interchange-mark" x="{x}" y="{y}" width="{pw}" height="18" rx="5"/><text x="{tx}" y="{ty}">{KEY_TEXT}</text></g></g></svg>"#,
        l0 = n(MARGIN),
        l1 = n(MARGIN + 32.0),
        y1 = n(ky + 8.0),
        y2 = n(ky + 14.0),
        x = n(MARGIN + 10.0),
        y = n(ky + 2.0),
        pw = n(PILL_W),
        tx = n(MARGIN + 42.0),
        ty = n(ky + 15.0)
    );
    s
}
