//! Drawing the laid-out map as one line of inline SVG (a blank line would end mdBook's HTML
//! block). Colors come from CSS (`currentColor`, `var(--bg)`) except the lines' own colors, so
//! the map follows the book's light and dark themes; `data-line` / `data-lines` are the hooks
//! of the explorer script (highlight, toggles, search), and every station is a link, so the map
//! can be used with the keyboard alone.

use super::geom::Pt;
use super::text::LINE_H;
use super::{Align, Layout, LineGeom, StationGeom, FONT, LINE_W};
use std::fmt::Write;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A lattice coordinate, printed exactly (whole or half pixels).
pub fn n(v: f64) -> String {
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

fn route(l: &LineGeom) -> String {
    let mut s = format!(
        r#"<g class="hdlc-route" data-line="{id}"><title>{t}</title>"#,
        id = esc(&l.id),
        t = esc(&l.title)
    );
    for (pts, class) in [(&l.lead, "hdlc-lead"), (&l.points, "hdlc-track")] {
        if pts.len() >= 2 {
            let _ = write!(
                s,
                r#"<path class="{class}" d="{d}" stroke="{c}" stroke-width="{LINE_W}"/>"#,
                d = path_d(pts),
                c = esc(&l.color)
            );
        }
    }
    s.push_str("</g>");
    s
}

fn station(layout: &Layout, st: &StationGeom, prefix: &str) -> String {
    let m = st.marker;
    let lines: Vec<&str> = st.lines.iter().map(|&i| layout.lines[i].id.as_str()).collect();
    let (class, style) = match st.lines.as_slice() {
        [one] if !st.start => (
            "hdlc-station",
            format!(r#" style="stroke:{}""#, esc(&layout.lines[*one].color)),
        ),
        _ => ("hdlc-station hdlc-interchange-mark", String::new()),
    };
    let r = ((m.x1 - m.x0).min(m.y1 - m.y0) / 2.0).min(8.0);
    let anchor = match st.anchor.align {
        Align::Start => "start",
        Align::Middle => "middle",
        Align::End => "end",
    };
    let mut cls = String::from("hdlc-stop");
    if st.lines.len() > 1 {
        cls.push_str(" hdlc-interchange");
    }
    if st.start {
        cls.push_str(" hdlc-start-stop");
    }
    format!(
        r#"<a class="{cls}" href="{prefix}{id}.html" data-id="{id}" data-area="{area}" data-lines="{lines}"><title>{t}</title><rect class="{class}"{style} x="{x}" y="{y}" width="{w}" height="{h}" rx="{r}"/><text class="hdlc-label" x="{tx}" y="{ty}" text-anchor="{anchor}">{label}</text></a>"#,
        id = esc(&st.id),
        area = esc(&st.area),
        lines = esc(&lines.join(" ")),
        t = esc(&st.title),
        x = n(m.x0),
        y = n(m.y0),
        w = n(m.x1 - m.x0),
        h = n(m.y1 - m.y0),
        r = n(r),
        tx = n(st.anchor.x),
        ty = n(st.anchor.y),
        label = label_text(&st.label, st.anchor.x, st.anchor.y),
    )
}

/// The map. `prefix` leads to card pages.
pub fn global(layout: &Layout, prefix: &str) -> String {
    let (w, h) = (layout.width, layout.height);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="hdlc-subway" viewBox="0 0 {w} {h}" width="{w}" height="{h}" data-width="{w}" data-height="{h}" data-font="{FONT}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="전체 지식 지도: 학습 경로를 지하철 노선처럼 그린 카드 그래프"><title>전체 지식 지도</title>"#,
        w = n(w),
        h = n(h)
    );
    s.push_str(r#"<g class="hdlc-routes" fill="none" stroke-linejoin="round" stroke-linecap="round">"#);
    for l in &layout.lines {
        s.push_str(&route(l));
    }
    s.push_str(r#"</g><g class="hdlc-stops">"#);
    for st in &layout.stations {
        s.push_str(&station(layout, st, prefix));
    }
    // The areas, invisible: the explorer script names them in the overview and opens them.
    s.push_str(r#"</g><g class="hdlc-regions">"#);
    for r in &layout.regions {
        let b = r.bbox;
        let _ = write!(
            s,
            r#"<rect class="hdlc-region" data-area="{k}" data-title="{t}" data-n="{count}" data-cx="{cx}" data-cy="{cy}" x="{x}" y="{y}" width="{w}" height="{h}"/>"#,
            k = esc(&r.key),
            t = esc(&r.title),
            count = r.stations,
            cx = n(r.center.x),
            cy = n(r.center.y),
            x = n(b.x0),
            y = n(b.y0),
            w = n(b.x1 - b.x0),
            h = n(b.y1 - b.y0)
        );
    }
    s.push_str("</g></svg>");
    s
}
