//! The horizontal bar chart every ladder draws (kernel ladders and lab ladders): one row per
//! record, its label wrapped beside (wide) or above (narrow) its bar, the value written where it
//! fits, failures as text in their row, and a value axis that is logarithmic when the values span
//! decades.
//!
//! Why one drawing for both kinds of ladder: the rules that make a chart trustworthy (labels
//! wrap, never truncate; nothing overlaps; a phone gets its own layout; bars of 0.01 ms and 5 ms
//! are not drawn on one linear axis) are layout rules, and they should hold for every ladder.

mod marks;
mod rows;

use super::format::{text_width, wrap};
use super::style::*;
use marks::{mesh, reference};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::RGBColor;
use rows::{draw_row, layout_rows, row_geometry};

/// One row of a bar chart.
pub(super) struct Bar {
    pub(super) label: String,
    /// The bar's value in display units; `None` draws `text` in the failure color instead.
    pub(super) value: Option<f64>,
    /// p10–p90 whisker (low, high) in display units.
    pub(super) spread: Option<(f64, f64)>,
    /// The value as text ("2,950 GB/s · 98.1%"), or the failure text ("측정하지 않음¹").
    pub(super) text: String,
    pub(super) color: RGBColor,
    /// Baselines are outlined.
    pub(super) outline: bool,
}

pub(super) struct BarChart {
    pub(super) title: String,
    pub(super) bars: Vec<Bar>,
    /// Lines under the value axis: what is measured, in which unit, which way is better.
    pub(super) axis: Vec<String>,
    /// A vertical reference (the datasheet peak): value in display units and label.
    pub(super) reference: Option<(f64, String)>,
    /// The value axis's end for the wide and the narrow layout: from [`fitted_end`], raised to
    /// the other panels' when panels share an axis. 0 lets the layout fit its own.
    pub(super) reach: [f64; 2],
    /// Whether to use a log axis (decided by the view, e.g. with [`spans_decades`]).
    pub(super) log: bool,
}

/// Whether positive values span enough decades that a linear axis would flatten the small ones.
pub(super) fn spans_decades(values: &[f64]) -> bool {
    let pos: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = pos.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pos.iter().copied().fold(0.0, f64::max);
    pos.len() >= 2 && hi / lo >= 30.0
}

/// A bar's thickness, and the space between rows.
const BAR_H: f64 = 16.0;
const GAP: f64 = 10.0;

pub(super) fn draw_bars(c: &BarChart, width: u32) -> Result<String, String> {
    let narrow = width <= NARROW;
    let w = width as f64;
    let title = wrap(&c.title, w - 16.0, HEAD);
    let axis: Vec<String> = c.axis.iter().flat_map(|a| wrap(a, w - 16.0, SMALL)).collect();
    let left = label_column(c, width);
    let plot_w = w - left - 16.0 - 8.0;
    let reach = c.reach[usize::from(narrow)];
    let (lo, fitted) = axis_range(c, plot_w);
    let hi = if reach > 0.0 { reach } else { fitted };
    let xpx = |v: f64| -> f64 {
        if c.log {
            (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * plot_w
        } else {
            v / hi * plot_w
        }
    };
    let rows = layout_rows(c, narrow, left, plot_w, &xpx);
    let title_h = title.len() as f64 * LINE_H * 1.1 + 8.0;
    let ref_h = if c.reference.is_some() { LINE_H + 2.0 } else { 0.0 };
    let top = title_h + ref_h + 4.0;
    let plot_h: f64 = rows.heights.iter().sum();
    // Tick labels sit in the 22 units under the plot; the axis words start below them.
    let tick_h = 32.0;
    let height = (top + plot_h + tick_h + axis.len() as f64 * LINE_H + 10.0).ceil() as u32;

    draw(width, height, |root| {
        title_block(root, &title)?;
        let x0 = (8.0 + left) as i32;
        let y0 = top as i32;
        mesh(
            root,
            c,
            (lo, hi),
            (x0, y0),
            (plot_w as u32, plot_h as u32),
            narrow,
        )?;
        if c.log {
            let ticks = log_ticks(lo, hi, if narrow { 4 } else { 7 });
            let at = |v: f64| x0 + xpx(v).round() as i32;
            let bottom = (top + plot_h) as i32;
            draw_log_axis(root, LogAxis::X { top: y0, bottom }, &ticks, &at)?;
        }
        let mut y = top;
        let mut blocked: Vec<(f64, f64, f64, f64)> = Vec::new();
        for (i, bar) in c.bars.iter().enumerate() {
            let (tops, bar_y) = row_geometry(&rows, i, y, narrow);
            draw_row(
                root,
                bar,
                (&rows, i, narrow),
                (x0 as f64, tops, bar_y),
                &xpx,
                &mut blocked,
            )?;
            y += rows.heights[i];
        }
        if let Some((v, label)) = &c.reference {
            reference(
                root,
                (*v, label),
                (x0 as f64, top, plot_h, title_h),
                &xpx,
                &blocked,
                w,
            )?;
        }
        let ay = top + plot_h + tick_h;
        for (i, a) in axis.iter().enumerate() {
            let py = (ay + i as f64 * LINE_H) as i32;
            text(root, a, (8, py), SMALL, INK, Pos::new(HPos::Left, VPos::Top))?;
        }
        Ok(())
    })
}

/// Width of the label column: wide, a left column sized to the longest label (within limits);
/// narrow, labels go above their bars and only a margin remains, so the first tick label is not
/// cut at the edge.
fn label_column(c: &BarChart, width: u32) -> f64 {
    if width <= NARROW {
        return 12.0;
    }
    let longest = c
        .bars
        .iter()
        .map(|b| text_width(&b.label, BODY))
        .fold(0.0, f64::max);
    (longest + 18.0).clamp(110.0, width as f64 * 0.36)
}

/// The axis end this chart needs at `width` so every value text fits beside or inside its bar.
/// Views pass it through their shared axis and back as [`BarChart::reach`], so panels side by
/// side end their axes at the same value.
pub(super) fn fitted_end(c: &BarChart, width: u32) -> f64 {
    let plot_w = width as f64 - label_column(c, width) - 24.0;
    axis_range(c, plot_w).1
}

/// The value axis: linear from 0, or log from below the smallest bar; wide enough that each
/// bar's text fits beside or inside it where possible.
fn axis_range(c: &BarChart, plot_w: f64) -> (f64, f64) {
    let vals: Vec<(f64, f64)> = c
        .bars
        .iter()
        .filter_map(|b| b.value.map(|v| (v, b.spread.map_or(v, |(_, h)| h.max(v)))))
        .filter(|(v, _)| v.is_finite() && *v > 0.0)
        .collect();
    let max = vals.iter().map(|(_, h)| *h).fold(0.0, f64::max);
    let max = c.reference.as_ref().map_or(max, |(r, _)| max.max(r * 1.06));
    if !(max.is_finite() && max > 0.0) {
        return (if c.log { 0.1 } else { 0.0 }, 1.0);
    }
    if c.log {
        let min = vals.iter().map(|(v, _)| *v).fold(f64::INFINITY, f64::min);
        let lo = 10f64.powf((min / 2.0).log10().floor());
        let mut hi = max * 1.2;
        for _ in 0..40 {
            let fits = c.bars.iter().all(|b| {
                b.value.is_none_or(|v| {
                    let px = (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * plot_w;
                    px + 8.0 + text_width(&b.text, BODY) <= plot_w || px >= text_width(&b.text, BODY) + 12.0
                })
            });
            if fits {
                break;
            }
            hi *= 1.25;
        }
        return (lo, hi);
    }
    let mut hi = max * 1.08;
    for _ in 0..40 {
        let fits = c.bars.iter().all(|b| {
            b.value.is_none_or(|v| {
                let px = v / hi * plot_w;
                let right = b.spread.map_or(v, |(_, h)| h.max(v)) / hi * plot_w;
                right + 8.0 + text_width(&b.text, BODY) <= plot_w || px >= text_width(&b.text, BODY) + 12.0
            })
        });
        if fits {
            break;
        }
        hi *= 1.06;
    }
    (0.0, hi)
}
