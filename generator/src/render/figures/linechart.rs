//! The line chart the scaling views and the lab curves draw: one line per series, the axis
//! titles written out in words above and below the plot, and a legend under it that wraps.
//!
//! Why one drawing: the same rules hold for every line chart — labels wrap and never overlap,
//! a phone gets its own layout with fewer ticks, and lines that lie on top of each other are
//! drawn once and said to coincide instead of hiding each other under a legend that lists them
//! all ([`merge_coincident`]).

use super::format::{size_tick, text_width, tick, wrap};
use super::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One line: its legend name, color, style, points and the legend notes under it (which points
/// were not measured and why, as footnote marks).
pub(super) struct Series {
    pub(super) name: String,
    pub(super) color: RGBColor,
    pub(super) dashed: bool,
    pub(super) points: Vec<(f64, f64)>,
    pub(super) notes: Vec<String>,
}

/// How x values are read and labelled.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum XAxis {
    /// x is log2 of a problem size; ticks at whole powers of two, labelled as sizes.
    Log2Sizes,
    Log,
    Linear,
}

pub(super) struct LineChart {
    pub(super) title: String,
    pub(super) series: Vec<Series>,
    pub(super) x: XAxis,
    /// The x axis in words, written under the ticks.
    pub(super) x_desc: String,
    /// The y axis in words (with unit and better mark), written above the plot.
    pub(super) y_desc: String,
    pub(super) y_log: bool,
    /// Axis ranges (data units; x as given, i.e. log2 for [`XAxis::Log2Sizes`]).
    pub(super) x_range: (f64, f64),
    pub(super) y_range: (f64, f64),
}

/// Lines whose points agree everywhere within `frac` of the y axis span are drawn as one, named
/// "A = B = C"; returns the merged series and a caption note for each merge.
pub(super) fn merge_coincident(
    series: Vec<Series>,
    y_span: f64,
    log: bool,
    frac: f64,
) -> (Vec<Series>, Vec<String>) {
    let t = |y: f64| if log { y.max(1e-300).ln() } else { y };
    let mut out: Vec<Series> = Vec::new();
    let mut merged: Vec<(usize, Vec<String>, f64)> = Vec::new();
    'next: for s in series {
        for (i, o) in out.iter().enumerate() {
            let same_x = o.points.len() == s.points.len()
                && !s.points.is_empty()
                && o.points.iter().zip(&s.points).all(|(a, b)| a.0 == b.0);
            if !same_x || o.dashed != s.dashed {
                continue;
            }
            let diff = o
                .points
                .iter()
                .zip(&s.points)
                .map(|(a, b)| (t(a.1) - t(b.1)).abs())
                .fold(0.0, f64::max);
            if diff <= frac * y_span {
                match merged.iter_mut().find(|m| m.0 == i) {
                    Some(m) => {
                        m.1.push(s.name.clone());
                        m.2 = m.2.max(diff);
                    }
                    None => merged.push((i, vec![o.name.clone(), s.name.clone()], diff)),
                }
                let target = &mut out[i];
                target.notes.extend(s.notes);
                continue 'next;
            }
        }
        out.push(s);
    }
    let mut notes = Vec::new();
    for (i, names, diff) in merged {
        out[i].name = format!("{} (겹침)", names.join(" = "));
        let d = if log {
            format!("{:.2}%", (diff.exp() - 1.0) * 100.0)
        } else {
            super::format::tick(diff)
        };
        notes.push(format!(
            "{}: {}개 선이 겹쳐 하나로 그렸다 — 어느 점에서도 차이가 축 범위의 {:.1}% 이하 (최대 {d}).",
            names.join(", "),
            names.len(),
            frac * 100.0
        ));
    }
    (out, notes)
}

const SWATCH: i32 = 26;

pub(super) fn draw_lines(c: &LineChart, width: u32) -> Result<String, String> {
    let narrow = width <= NARROW;
    let w = width as f64;
    let title = wrap(&c.title, w - 16.0, HEAD);
    let y_desc = wrap(&c.y_desc, w - 16.0, SMALL);
    let x_desc = wrap(&c.x_desc, w - 24.0, SMALL);
    let legend = legend_lines(c, w);
    let title_h = title.len() as f64 * LINE_H * 1.1 + 4.0;
    let top = title_h + y_desc.len() as f64 * LINE_H + 6.0;
    let plot_h = if narrow { 230.0 } else { 300.0 };
    let ticks_h = 24.0;
    let legend_top = top + plot_h + ticks_h + 8.0 + x_desc.len() as f64 * LINE_H + 8.0;
    let height = (legend_top + legend.len() as f64 * LINE_H + 8.0).ceil() as u32;
    draw(width, height, |root| {
        title_block(root, &title)?;
        for (i, t) in y_desc.iter().enumerate() {
            let y = (title_h + 4.0 + i as f64 * LINE_H) as i32;
            text(root, t, (8, y), SMALL, INK, Pos::new(HPos::Left, VPos::Top))?;
        }
        let area = root.margin(top as u32, 0, 0, 0);
        let (_, ah) = area.dim_in_pixel();
        let mut b = ChartBuilder::on(&area);
        b.margin_left(6)
            .margin_right(if narrow { 14 } else { 20 })
            .margin_bottom(ah.saturating_sub((plot_h + ticks_h) as u32))
            .x_label_area_size(ticks_h as u32)
            .y_label_area_size(y_label_width(c, narrow));
        plot(c, b, root, narrow)?;
        let xy = (top + plot_h + ticks_h + 8.0) as i32;
        for (i, t) in x_desc.iter().enumerate() {
            let y = xy + (i as f64 * LINE_H) as i32;
            text(
                root,
                t,
                ((w / 2.0) as i32, y),
                SMALL,
                INK,
                Pos::new(HPos::Center, VPos::Top),
            )?;
        }
        draw_legend(root, c, &legend, legend_top)
    })
}

/// Room for the y tick labels: the widest label plus a gap.
fn y_label_width(c: &LineChart, narrow: bool) -> u32 {
    let (lo, hi) = c.y_range;
    let widest = [lo, hi, (lo + hi) / 2.0]
        .iter()
        .map(|v| text_width(&tick(*v), BODY))
        .fold(0.0, f64::max);
    (widest + if narrow { 10.0 } else { 14.0 }).clamp(30.0, 90.0) as u32
}

/// One line of the legend: the series whose swatch it starts (first line of an entry only), its
/// text, and whether it is a note (drawn small, in the failure color).
struct LegendLine {
    swatch: Option<usize>,
    text: String,
    note: bool,
}

/// The legend, one entry per series and one per note under it, each wrapped to the width.
fn legend_lines(c: &LineChart, w: f64) -> Vec<LegendLine> {
    let room = w - 16.0 - SWATCH as f64 - 14.0;
    let mut out = Vec::new();
    for (i, s) in c.series.iter().enumerate() {
        for (k, l) in wrap(&s.name, room, BODY).into_iter().enumerate() {
            out.push(LegendLine {
                swatch: (k == 0).then_some(i),
                text: l,
                note: false,
            });
        }
        for n in &s.notes {
            for l in wrap(n, room, SMALL) {
                out.push(LegendLine {
                    swatch: None,
                    text: l,
                    note: true,
                });
            }
        }
    }
    out
}

fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &LineChart,
    legend: &[LegendLine],
    top: f64,
) -> Result<(), String> {
    let x = 12;
    for (k, line) in legend.iter().enumerate() {
        let y = (top + k as f64 * LINE_H + LINE_H / 2.0) as i32;
        if let Some(i) = line.swatch {
            let s = &c.series[i];
            let style = s.color.stroke_width(2);
            if s.dashed {
                root.draw(&PathElement::new(vec![(x, y), (x + 10, y)], style))
                    .map_err(de)?;
                root.draw(&PathElement::new(vec![(x + 15, y), (x + SWATCH, y)], style))
                    .map_err(de)?;
            } else {
                root.draw(&PathElement::new(vec![(x, y), (x + SWATCH, y)], style))
                    .map_err(de)?;
            }
            root.draw(&Circle::new((x + SWATCH / 2, y), 3, s.color.filled()))
                .map_err(de)?;
        }
        let (size, color) = if line.note { (SMALL, FAIL) } else { (BODY, INK) };
        text(
            root,
            &line.text,
            (x + SWATCH + 8, y),
            size,
            color,
            Pos::new(HPos::Left, VPos::Center),
        )?;
    }
    Ok(())
}

/// Build the coordinate system (log or linear on each axis) and draw the mesh and lines.
fn plot<DB: DrawingBackend>(
    c: &LineChart,
    b: ChartBuilder<DB>,
    root: &DrawingArea<DB, Shift>,
    narrow: bool,
) -> Result<(), String> {
    let (x0, x1) = c.x_range;
    let (y0, y1) = c.y_range;
    let log_x = c.x == XAxis::Log;
    let mut b = b;
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            let xs = x_ticks(c, narrow);
            let xfmt = |v: &f64| xs.1(*v);
            let yfmt = |v: &f64| tick(*v);
            let blank = |_: &f64| String::new();
            // Log axes get their own ticks (`log_ticks`): plotters repeats decade labels.
            let mut mesh = chart.configure_mesh();
            if log_x {
                mesh.disable_x_mesh().x_labels(0).x_label_formatter(&blank);
            } else {
                mesh.x_labels(xs.0).x_label_formatter(&xfmt);
            }
            if c.y_log {
                mesh.disable_y_mesh().y_labels(0).y_label_formatter(&blank);
            } else {
                mesh.y_labels(if narrow { 5 } else { 6 }).y_label_formatter(&yfmt);
            }
            mesh.draw_styled().map_err(de)?;
            let (px, py) = chart.plotting_area().get_pixel_range();
            let most = if narrow { 5 } else { 8 };
            if log_x {
                let at = |v: f64| chart.backend_coord(&(v, y0)).0;
                let ticks = log_ticks(x0, x1, most);
                draw_log_axis(
                    root,
                    LogAxis::X {
                        top: py.start,
                        bottom: py.end,
                    },
                    &ticks,
                    &at,
                )?;
            }
            if c.y_log {
                let at = |v: f64| chart.backend_coord(&(x0, v)).1;
                let ticks = log_ticks(y0, y1, most);
                draw_log_axis(
                    root,
                    LogAxis::Y {
                        left: px.start,
                        right: px.end,
                    },
                    &ticks,
                    &at,
                )?;
            }
            for s in &c.series {
                let style = s.color.stroke_width(2);
                if s.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(s.points.clone(), 6, 4, style))
                        .map_err(de)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(s.points.clone(), style))
                        .map_err(de)?;
                }
                if s.points.len() <= 40 {
                    chart
                        .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, s.color.filled())))
                        .map_err(de)?;
                }
            }
        }};
    }
    match (log_x, c.y_log) {
        (true, true) => body!(b
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(de)?),
        (true, false) => body!(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1).map_err(de)?),
        (false, true) => body!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale()).map_err(de)?),
        (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(de)?),
    }
    Ok(())
}

/// How many x labels to ask plotters for, and how to write each.
type TickFmt = Box<dyn Fn(f64) -> String>;

fn x_ticks(c: &LineChart, narrow: bool) -> (usize, TickFmt) {
    match c.x {
        XAxis::Log2Sizes => {
            let (x0, x1) = c.x_range;
            let first = x0.ceil() as i64;
            let n = (x1.floor() as i64 - first + 1).max(1) as usize;
            let most = if narrow { 5 } else { 9 };
            let step = n.div_ceil(most).max(1) as i64;
            let fmt = move |v: f64| {
                let r = v.round();
                if (v - r).abs() < 1e-6 && (r as i64 - first).rem_euclid(step) == 0 {
                    size_tick(2f64.powf(r))
                } else {
                    String::new()
                }
            };
            (n + 1, Box::new(fmt))
        }
        XAxis::Log => (0, Box::new(|_| String::new())),
        XAxis::Linear => (if narrow { 5 } else { 8 }, Box::new(tick)),
    }
}
