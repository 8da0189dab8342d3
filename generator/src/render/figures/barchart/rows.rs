//! One row of the chart: where its label lines, bar and value text go (beside, inside or below
//! the bar, decided per layout so nothing overlaps), and drawing them.

use super::{Bar, BarChart, BAR_H, GAP};
use crate::render::figures::format::{text_width, wrap};
use crate::render::figures::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Where a row's value text goes.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Place {
    Right,
    Inside,
    Below,
}

/// Geometry of one layout: row tops and heights, label lines, text placement.
pub(super) struct Rows {
    pub(super) labels: Vec<Vec<String>>,
    pub(super) heights: Vec<f64>,
    pub(super) places: Vec<Place>,
}

/// Label lines, row heights and where each value text goes.
pub(super) fn layout_rows(
    c: &BarChart,
    narrow: bool,
    left: f64,
    plot_w: f64,
    xpx: &dyn Fn(f64) -> f64,
) -> Rows {
    let mut out = Rows {
        labels: Vec::new(),
        heights: Vec::new(),
        places: Vec::new(),
    };
    for b in &c.bars {
        let label_w = if narrow { plot_w } else { left - 14.0 };
        let lines = wrap(&b.label, label_w, BODY);
        let tw = text_width(&b.text, BODY);
        let place = match b.value {
            None => Place::Right,
            Some(v) => {
                let right = xpx(b.spread.map_or(v, |(_, h)| h.max(v)));
                if right + 8.0 + tw <= plot_w {
                    Place::Right
                } else if xpx(v) >= tw + 12.0 {
                    Place::Inside
                } else {
                    Place::Below
                }
            }
        };
        let fail_lines = if b.value.is_none() {
            wrap(&b.text, plot_w - 8.0, BODY).len() as f64
        } else {
            1.0
        };
        let label_h = lines.len() as f64 * LINE_H;
        let below = if place == Place::Below { LINE_H } else { 0.0 };
        let h = if narrow {
            label_h + BAR_H.max(fail_lines * LINE_H) + below + GAP + 4.0
        } else {
            label_h.max(BAR_H.max(fail_lines * LINE_H) + below) + GAP + 4.0
        };
        out.labels.push(lines);
        out.heights.push(h.max(28.0));
        out.places.push(place);
    }
    out
}

/// The y of a row's first label line and of its bar's top.
pub(super) fn row_geometry(rows: &Rows, i: usize, y: f64, narrow: bool) -> (f64, f64) {
    let label_h = rows.labels[i].len() as f64 * LINE_H;
    if narrow {
        (y + GAP / 2.0, y + GAP / 2.0 + label_h + 1.0)
    } else {
        let h = rows.heights[i];
        let below = if rows.places[i] == Place::Below {
            LINE_H
        } else {
            0.0
        };
        let bar_y = y + (h - BAR_H - below) / 2.0;
        (y + (h - label_h) / 2.0, bar_y)
    }
}

/// One row: its label lines, its bar and whisker (or its failure text), its value text. Every
/// text's box goes to `blocked`, so the reference line can pass around it.
pub(super) fn draw_row<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    bar: &Bar,
    (rows, i, narrow): (&Rows, usize, bool),
    (x0, label_y, bar_y): (f64, f64, f64),
    xpx: &dyn Fn(f64) -> f64,
    blocked: &mut Vec<(f64, f64, f64, f64)>,
) -> Result<(), String> {
    for (k, line) in rows.labels[i].iter().enumerate() {
        let ly = (label_y + k as f64 * LINE_H + LINE_H / 2.0) as i32;
        let (lx, anchor) = if narrow {
            (x0 as i32, HPos::Left)
        } else {
            (x0 as i32 - 8, HPos::Right)
        };
        text(root, line, (lx, ly), BODY, INK, Pos::new(anchor, VPos::Center))?;
    }
    let mid = bar_y + BAR_H / 2.0;
    let Some(v) = bar.value else {
        return failure(root, &bar.text, (x0, bar_y), blocked);
    };
    let end = x0 + xpx(v);
    let rect = [
        (x0 as i32, bar_y as i32),
        (end.round() as i32, (bar_y + BAR_H) as i32),
    ];
    root.draw(&Rectangle::new(rect, bar.color.filled())).map_err(de)?;
    if bar.outline {
        root.draw(&Rectangle::new(rect, INK.mix(0.5).stroke_width(1)))
            .map_err(de)?;
    }
    let mut right = end;
    if let Some((lo, hi)) = bar.spread {
        let (a, b) = (x0 + xpx(lo), x0 + xpx(hi));
        whisker(root, (a, b), mid)?;
        right = right.max(b);
    }
    let tw = text_width(&bar.text, BODY);
    let (tx, ty, color) = match rows.places[i] {
        Place::Right => (right + 6.0, mid, INK),
        Place::Inside => (x0 + 6.0, mid, on_bar(bar.color)),
        Place::Below => (x0 + 6.0, bar_y + BAR_H + LINE_H / 2.0 + 1.0, INK),
    };
    text(
        root,
        &bar.text,
        (tx as i32, ty as i32),
        BODY,
        color,
        Pos::new(HPos::Left, VPos::Center),
    )?;
    blocked.push((tx, tx + tw, ty - 8.0, ty + 8.0));
    Ok(())
}

/// A row that has no value: its failure text in the bar's place, wrapped to the canvas, each
/// line's box added to `blocked`.
fn failure<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fail_text: &str,
    (x0, bar_y): (f64, f64),
    blocked: &mut Vec<(f64, f64, f64, f64)>,
) -> Result<(), String> {
    let lines = wrap(fail_text, root.dim_in_pixel().0 as f64 - x0 - 24.0, BODY);
    for (k, l) in lines.iter().enumerate() {
        let py = (bar_y + LINE_H / 2.0 + k as f64 * LINE_H) as i32;
        text(
            root,
            l,
            (x0 as i32 + 6, py),
            BODY,
            FAIL,
            Pos::new(HPos::Left, VPos::Center),
        )?;
        let tw = text_width(l, BODY);
        blocked.push((x0 + 6.0, x0 + 6.0 + tw, py as f64 - 8.0, py as f64 + 8.0));
    }
    Ok(())
}

/// The p10–p90 whisker from x `a` to `b` at height `mid`, with end caps.
fn whisker<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    (a, b): (f64, f64),
    mid: f64,
) -> Result<(), String> {
    let st = INK.mix(0.75).stroke_width(1);
    let y = mid as i32;
    root.draw(&PathElement::new(vec![(a as i32, y), (b as i32, y)], st))
        .map_err(de)?;
    for x in [a, b] {
        root.draw(&PathElement::new(vec![(x as i32, y - 4), (x as i32, y + 4)], st))
            .map_err(de)?;
    }
    Ok(())
}
