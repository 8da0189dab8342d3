//! The final geometry: lines, stations and labels shifted to the margin, and the legend under it.
//!
//! Why apart: it turns the layout's working data into the `Layout` the SVG writer and the
//! statistics read, and is only run once the growth loop has settled.

use super::*;

/// Put the pieces together into the final geometry, shifted so the map starts at the margin,
/// and lay the legend out under it.
pub(super) fn assemble(
    f: &Frame,
    xs: &[f64],
    labels: &[(Rect, Anchor)],
    polys: &[Vec<Vec<Pt>>],
    rounds: usize,
) -> Layout {
    let input = f.input;
    let net = &f.net;
    let mut lines: Vec<LineGeom> = Vec::new();
    for (li, l) in input.lines.iter().enumerate() {
        let mut pts: Vec<Pt> = Vec::new();
        if !polys.is_empty() {
            for &st in &net.hops[li] {
                let mut p: Vec<Pt> = polys[st].iter().flat_map(|seg| seg.iter().copied()).collect();
                if net.strands[st].reversed {
                    p.reverse();
                }
                pts.extend(p);
            }
        }
        lines.push(LineGeom {
            id: l.id.clone(),
            title: l.title.clone(),
            color: l.color.clone(),
            points: simplify(&pts),
            stations: l.stops.len(),
        });
    }
    let mut stations = Vec::new();
    for (s, st) in input.stations.iter().enumerate() {
        let it = net.station_item[s];
        let mut ls: Vec<usize> = net.items[it].slots.iter().map(|&sl| net.slots[sl].line).collect();
        ls.sort();
        ls.dedup();
        let (label_box, anchor) = labels.get(s).copied().unwrap_or_else(|| {
            let p = f.pill(xs, s);
            let c = candidates(p, f.label_w[s].0, f.label_w[s].1, false, false)[0];
            (c.0, c.1)
        });
        stations.push(StationGeom {
            id: st.id.clone(),
            title: st.title.clone(),
            label: st.label.clone(),
            marker: f.pill(xs, s),
            lines: ls,
            label_box,
            anchor,
        });
    }
    // Bounding box of everything drawn, then shift to the margin.
    let mut bb: Option<Rect> = None;
    let mut add = |r: Rect| bb = Some(bb.map_or(r, |b| b.union(&r)));
    for s in &stations {
        add(s.marker);
        add(s.label_box);
    }
    for l in &lines {
        for p in &l.points {
            add(Rect::new(p.x, p.y, p.x, p.y).inflate(LINE_W / 2.0));
        }
    }
    let bb = bb.unwrap_or(Rect::new(0.0, 0.0, 0.0, 0.0));
    let (dx, dy) = ((MARGIN - bb.x0).round(), (MARGIN - bb.y0).round());
    let mv = |r: Rect| Rect::new(r.x0 + dx, r.y0 + dy, r.x1 + dx, r.y1 + dy);
    for s in &mut stations {
        s.marker = mv(s.marker);
        s.label_box = mv(s.label_box);
        s.anchor.x += dx;
        s.anchor.y += dy;
    }
    for l in &mut lines {
        for p in &mut l.points {
            *p = pt(p.x + dx, p.y + dy);
        }
    }
    let map_w = (bb.x1 - bb.x0 + 2.0 * MARGIN).ceil();
    let map_h = (bb.y1 - bb.y0 + 2.0 * MARGIN).ceil();
    // Legend: one entry per line, in columns as wide as the longest entry.
    let entry_w = lines
        .iter()
        .map(|l| text_width(&l.title))
        .fold(140.0f64, f64::max)
        + 56.0;
    let key_w = 42.0 + text_width(super::super::svg::KEY_TEXT);
    let width = map_w
        .max(entry_w + 2.0 * MARGIN)
        .max(key_w + 2.0 * MARGIN)
        .max(320.0);
    let ncols = (((width - 2.0 * MARGIN) / entry_w).floor() as usize).max(1);
    let row_h = 24.0;
    let mut legend = Vec::new();
    let drawn: Vec<usize> = (0..lines.len()).collect();
    let top = map_h + 8.0;
    for (k, &li) in drawn.iter().enumerate() {
        let (r, c) = (k / ncols, k % ncols);
        legend.push(LegendEntry {
            line: li,
            x: MARGIN + c as f64 * entry_w,
            y: top + 22.0 + r as f64 * row_h,
        });
    }
    let rows = drawn.len().div_ceil(ncols) as f64;
    // One more row for the interchange symbol.
    let height = (top + 22.0 + (rows + 1.0) * row_h + MARGIN).ceil();
    Layout {
        width,
        height,
        map_height: map_h,
        legend_top: top,
        legend_entry_w: entry_w,
        stations,
        lines,
        legend,
        rounds,
        shift: (dx, dy),
    }
}
