//! The `roofline` view: each variant as a point (arithmetic intensity, FLOP/s) under the
//! device's measured memory and compute roofs (and the reader's CPU where it was measured).
//!
//! Why: it shows which wall a kernel hits, with roofs taken from baselines measured in the same
//! run (memcpy bandwidth, cuBLAS), not only from a datasheet. Points carry a circled number and
//! are named in a legend under the plot: names next to points collide with each other and with
//! the roof labels as soon as two kernels sit close, and a phone has no room for them at all.

use super::notes::Footnotes;
use super::prelude::*;
use super::roofs::{draw_roofs, overlaps, roofs, Boxes, Roofs};

/// A point of the roofline: its number, label, color, position (intensity, GFLOP/s).
struct Point {
    label: String,
    color: RGBColor,
    at: (f64, f64),
}

pub(super) fn roofline(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    if fam
        .rows
        .iter()
        .filter_map(|r| r.meas())
        .all(|m| m.gflops <= 0.0 || m.intensity <= 0.0)
    {
        return Err(format!(
            "benchmark `{}` counts no floating-point operations, so it has no place on a roofline; use `show: ladder` or `show: scaling`",
            fam.name
        ));
    }
    let Some(reference) = fam.reference(c.spec.size) else {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    };
    let rows = fam.at_params(&reference.rec.params);
    let measured: Vec<(&Row, Meas)> = rows
        .iter()
        .filter_map(|r| r.meas().map(|m| (*r, *m)))
        .filter(|(_, m)| m.gflops > 0.0 && m.intensity > 0.0)
        .collect();
    if measured.is_empty() {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let r = roofs(c);
    let points: Vec<Point> = measured
        .iter()
        .map(|(row, m)| Point {
            label: format!(
                "{} — {}, {} FLOP/B",
                row.rec.label,
                fmt_value(Unit::GFlops, m.gflops),
                tick_sig(m.intensity)
            ),
            color: fam.color(row.rec),
            at: (m.intensity, m.gflops),
        })
        .collect();
    let ranges = ranges(&points, &r)?;
    let mut notes = Footnotes::default();
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.meas().is_none())
        .map(|r| {
            format!(
                "{} — {} (그리지 않음)",
                r.rec.label,
                notes.mark(r.rec, &r.rec.label)
            )
        })
        .collect();
    let title = format!(
        "{} — 연산 처리량 대 산술 강도 (log–log)",
        title_of(&fam.name, &size_text(&fam.axis, reference.rec))
    );
    let svg = responsive(|w| draw_roofline(w, &title, &points, &r, ranges, &failed))?;

    let mut used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    used.extend(r.bw_meas.iter().map(|(r, _)| *r));
    used.extend(r.cublas.iter().map(|(r, _)| *r));
    let mut caption_notes = r.notes(c);
    caption_notes.extend(notes.html());
    Ok(figure(c, &svg, &used, &caption_notes))
}

/// Intensity with three significant digits.
fn tick_sig(v: f64) -> String {
    if v >= 100.0 {
        group(v.round() as u64)
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Log ranges of both axes: every point, the ridge and the highest roof inside.
/// An axis range (low, high).
type Span = (f64, f64);

fn ranges(points: &[Point], r: &Roofs) -> Result<(Span, Span), String> {
    let imin = points.iter().map(|p| p.at.0).fold(f64::INFINITY, f64::min);
    let imax = points.iter().map(|p| p.at.0).fold(0.0, f64::max);
    let top = r.top();
    let ridge = match (&r.bw, top > 0.0) {
        (Some(bw), true) => top / bw.value,
        _ => imax,
    };
    let x = log_range(imin.min(ridge) / 3.0, imax.max(ridge) * 3.0);
    let ymin = points.iter().map(|p| p.at.1).fold(f64::INFINITY, f64::min);
    let ymax = points.iter().map(|p| p.at.1).fold(0.0, f64::max);
    let y = log_range(ymin / 2.5, ymax.max(top) * 2.5);
    if ![x.0, x.1, y.0, y.1].iter().all(|v| v.is_finite() && *v > 0.0) {
        return Err("results give no finite range for a roofline".into());
    }
    Ok((x, y))
}

fn draw_roofline(
    width: u32,
    title: &str,
    points: &[Point],
    r: &Roofs,
    ((x_lo, x_hi), (y_lo, y_hi)): ((f64, f64), (f64, f64)),
    failed: &[String],
) -> Result<String, String> {
    let narrow = width <= NARROW;
    let w = width as f64;
    let title = wrap(title, w - 16.0, HEAD);
    let legend = legend_lines(points, failed, w);
    let title_h = title.len() as f64 * LINE_H * 1.1 + 4.0;
    let top = title_h + LINE_H + 6.0;
    let plot_h = if narrow { 260.0 } else { 340.0 };
    let legend_top = top + plot_h + 24.0 + 8.0 + LINE_H + 10.0;
    let height = (legend_top + legend.len() as f64 * LINE_H + 8.0).ceil() as u32;
    draw(width, height, |root| {
        title_block(root, &title)?;
        let y_desc = "달성 연산 처리량 (GFLOP/s) ↑ · 로그 축";
        text(
            root,
            y_desc,
            (8, (title_h + 4.0) as i32),
            SMALL,
            INK,
            Pos::new(HPos::Left, VPos::Top),
        )?;
        let area = root.margin(top as u32, 0, 0, 0);
        let (_, ah) = area.dim_in_pixel();
        let mut chart = ChartBuilder::on(&area)
            .margin_left(6)
            .margin_right(if narrow { 12 } else { 20 })
            .margin_bottom(ah.saturating_sub(plot_h as u32 + 24))
            .x_label_area_size(24)
            .y_label_area_size(if narrow { 58 } else { 66 })
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(de)?;
        // Axis lines from plotters; ticks from `log_ticks` (plotters repeats decade labels).
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|_| String::new())
            .draw_styled()
            .map_err(de)?;
        let (px, py) = chart.plotting_area().get_pixel_range();
        let plot = (px.start, py.start, px.end, py.end);
        let to_px = |p: (f64, f64)| chart.backend_coord(&p);
        let most = if narrow { 5 } else { 9 };
        let xt = log_ticks(x_lo, x_hi, most);
        let yt = log_ticks(y_lo, y_hi, most);
        draw_log_axis(
            root,
            LogAxis::X {
                top: plot.1,
                bottom: plot.3,
            },
            &xt,
            &|v| to_px((v, y_lo)).0,
        )?;
        draw_log_axis(
            root,
            LogAxis::Y {
                left: plot.0,
                right: plot.2,
            },
            &yt,
            &|v| to_px((x_lo, v)).1,
        )?;
        let x_desc = "산술 강도 (FLOP/byte, 로그 눈금)";
        let xd = (top + plot_h + 24.0 + 8.0) as i32;
        text(
            root,
            x_desc,
            ((w / 2.0) as i32, xd),
            SMALL,
            INK,
            Pos::new(HPos::Center, VPos::Top),
        )?;
        draw_points(root, points, r, (&to_px, plot), (x_lo, x_hi, y_lo, y_hi))?;
        draw_legend(root, &legend, points, legend_top)
    })
}

/// Legend lines: (the point whose dot starts the line, text, whether it names a failure).
type LegendLine = (Option<usize>, String, bool);

fn legend_lines(points: &[Point], failed: &[String], w: f64) -> Vec<LegendLine> {
    let mut legend = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let lines = wrap(&format!("{} {}", circled(i), p.label), w - 40.0, BODY);
        for (k, l) in lines.into_iter().enumerate() {
            legend.push(((k == 0).then_some(i), l, false));
        }
    }
    for f in failed {
        legend.extend(wrap(f, w - 40.0, SMALL).into_iter().map(|l| (None, l, true)));
    }
    legend
}

fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    legend: &[LegendLine],
    points: &[Point],
    top: f64,
) -> Result<(), String> {
    for (k, (dot, line, fail)) in legend.iter().enumerate() {
        let y = (top + k as f64 * LINE_H + LINE_H / 2.0) as i32;
        if let Some(i) = dot {
            root.draw(&Circle::new((16, y), 5, points[*i].color.filled()))
                .map_err(de)?;
        }
        let (size, ink) = if *fail { (SMALL, FAIL) } else { (BODY, INK) };
        text(root, line, (28, y), size, ink, Pos::new(HPos::Left, VPos::Center))?;
    }
    Ok(())
}

/// The plot's pixel mapping and box (left, top, right, bottom).
type Plot<'a> = (&'a dyn Fn((f64, f64)) -> (i32, i32), (i32, i32, i32, i32));

/// Roofs, then the points, then their numbers: dots are placed first so that roof labels and
/// numbers go where they cover none.
fn draw_points<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    points: &[Point],
    r: &Roofs,
    (to_px, plot): Plot,
    ranges: (f64, f64, f64, f64),
) -> Result<(), String> {
    let px: Vec<(i32, i32)> = points.iter().map(|p| to_px(p.at)).collect();
    let mut placed: Boxes = px
        .iter()
        .map(|&(x, y)| (x as f64 - 6.0, y as f64 - 6.0, x as f64 + 6.0, y as f64 + 6.0))
        .collect();
    draw_roofs(to_px, (plot.0, plot.2), root, r, ranges, &mut placed)?;
    for (p, &(x, y)) in points.iter().zip(&px) {
        root.draw(&Circle::new((x, y), 5, p.color.filled())).map_err(de)?;
        root.draw(&Circle::new((x, y), 5, INK.mix(0.7).stroke_width(1)))
            .map_err(de)?;
    }
    let bounds = (plot.0 as f64, plot.1 as f64, plot.2 as f64, plot.3 as f64);
    for (i, &(x, y)) in px.iter().enumerate() {
        place_number(root, &circled(i), (x as f64, y as f64), bounds, &mut placed)?;
    }
    Ok(())
}

/// A point's number at the first free spot on rings around it (nearest first), inside the plot,
/// with a thin leader line when it had to go further than beside the dot: kernels of one ladder
/// share an intensity and stack up on one vertical line.
fn place_number<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    label: &str,
    (x, y): (f64, f64),
    (left, top, right, bottom): (f64, f64, f64, f64),
    placed: &mut Boxes,
) -> Result<(), String> {
    let (tw, th) = (text_width(label, BODY), 17.0);
    let mut best = None;
    'rings: for r in [11.0, 20.0, 30.0, 42.0, 56.0] {
        for deg in [
            -30.0f64, 30.0, -60.0, 60.0, 0.0, -90.0, 90.0, 150.0, 210.0, 180.0, 120.0, 240.0,
        ] {
            let (dx, dy) = (r * deg.to_radians().cos(), r * deg.to_radians().sin());
            let (cx, cy) = (x + dx, y + dy);
            let b = (cx - tw / 2.0, cy - th / 2.0, cx + tw / 2.0, cy + th / 2.0);
            let inside = b.0 >= left && b.2 <= right && b.1 >= top && b.3 <= bottom;
            if inside && !overlaps(b, placed) {
                best = Some((b, r));
                break 'rings;
            }
        }
    }
    let (b, r) = best.unwrap_or(((x + 8.0, y - th, x + 8.0 + tw, y), 0.0));
    if r > 12.0 {
        let (cx, cy) = ((b.0 + b.2) / 2.0, (b.1 + b.3) / 2.0);
        let k = 6.0 / r;
        root.draw(&PathElement::new(
            vec![
                ((x + (cx - x) * k) as i32, (y + (cy - y) * k) as i32),
                ((cx - (cx - x) * 7.0 / r) as i32, (cy - (cy - y) * 7.0 / r) as i32),
            ],
            INK.mix(0.45).stroke_width(1),
        ))
        .map_err(de)?;
    }
    placed.push(b);
    text(
        root,
        label,
        (((b.0 + b.2) / 2.0) as i32, ((b.1 + b.3) / 2.0) as i32),
        BODY,
        INK,
        Pos::new(HPos::Center, VPos::Center),
    )
}

/// "①", "②", …: a point's number on the plot and in the legend.
fn circled(i: usize) -> String {
    char::from_u32(0x2460 + i as u32)
        .filter(|_| i < 20)
        .map_or_else(|| format!("({})", i + 1), |c| c.to_string())
}
