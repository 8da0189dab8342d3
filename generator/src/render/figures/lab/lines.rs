//! `show: scaling` (a metric against one param, a line per variant) and `show: curve` (a named
//! series of each record, e.g. a loss curve) for labs.
//!
//! Why together: both draw lines on the same axes code (log or linear x, a line per variant).

use super::*;

/// One drawn line: its name, points, whether it is the baseline, and its failures.
struct Line {
    name: String,
    baseline: bool,
    points: Vec<(f64, f64)>,
    failed: Vec<String>,
}

pub(super) fn scaling(c: &LabCtx) -> Result<String, String> {
    let varying = varying_params(&c.recs);
    let key = match &c.spec.x {
        Some(x) => x.clone(),
        None => match varying.as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(format!(
                    "`{}`: every selected record has the same params; nothing to scale",
                    c.spec.bench
                ))
            }
            more => {
                return Err(format!(
                "`{}`: several params vary ({}); name the x axis with `x:` and fix the others with `where:`",
                c.spec.bench,
                more.join(", ")
            ))
            }
        },
    };
    let mut lines: Vec<Line> = Vec::new();
    for r in &c.recs {
        let Some(x) = r.params.get(&key) else { continue };
        let idx = match lines.iter().position(|l| l.name == r.label) {
            Some(i) => i,
            None => {
                lines.push(Line {
                    name: r.label.clone(),
                    baseline: r.baseline,
                    points: vec![],
                    failed: vec![],
                });
                lines.len() - 1
            }
        };
        match judge(r).and_then(|t| c.metric.value(t)) {
            Ok((v, _)) if v > 0.0 => lines[idx].points.push((*x as f64, v)),
            Ok(_) => lines[idx].failed.push(format!("{key}={}: ≤ 0", group(*x))),
            Err(why) => lines[idx].failed.push(format!("{key}={}: {why}", group(*x))),
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let header = format!("{} · {} vs {key}", c.spec.bench, c.metric.header());
    plot(c, &header, &key, lines)
}

pub(super) fn curve(c: &LabCtx) -> Result<String, String> {
    let name = c.spec.series.clone().unwrap_or_default();
    let varying = varying_params(&c.recs);
    let mut lines = Vec::new();
    for r in &c.recs {
        let label = row_label(r, &c.recs, &varying);
        let mut l = Line {
            name: label,
            baseline: r.baseline,
            points: vec![],
            failed: vec![],
        };
        match judge(r) {
            Err(why) => l.failed.push(why),
            Ok(t) => match t.series.get(&name) {
                Some(pts) => {
                    l.points = pts
                        .iter()
                        .filter(|p| p[0].is_finite() && p[1].is_finite())
                        .map(|p| (p[0], p[1]))
                        .collect()
                }
                None => l.failed.push(format!("no series `{name}` recorded")),
            },
        }
        lines.push(l);
    }
    let header = format!("{} · {name}", c.spec.bench);
    plot(c, &header, "x", lines)
}

/// Draw lines with a legend below; the x axis is logarithmic when it spans ≥ 8×, the y axis
/// when it spans ≥ 30× (and every value is positive).
fn plot(c: &LabCtx, header: &str, xname: &str, lines: Vec<Line>) -> Result<String, String> {
    let pts: Vec<(f64, f64)> = lines.iter().flat_map(|l| l.points.iter().copied()).collect();
    if pts.is_empty() {
        // Nothing to draw: a table of what failed says more than an empty chart.
        return super::tables::table(c);
    }
    let (xl, xh) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let (yl, yh) = pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    // Side by side, every panel's axes span every panel's points.
    let (xl, xh) = (c.axis.lo("x", xl), c.axis.hi("x", xh));
    let (yl, yh) = (c.axis.lo("y", yl), c.axis.hi("y", yh));
    let logx = xl > 0.0 && xh / xl >= 8.0;
    let logy = yl > 0.0 && yh / yl >= 30.0;
    let xname = match (&c.spec.series, c.spec.x.as_deref()) {
        (Some(_), _) => "step".to_string(),
        (None, Some(x)) => x.to_string(),
        (None, None) => xname.to_string(),
    };
    const PLOT_H: u32 = 340;
    const LINE: u32 = 20;
    let legend_lines: u32 = lines.iter().map(|l| 1 + l.failed.len() as u32).sum();
    let height = PLOT_H + LINE * legend_lines + 10;
    let ydesc = c.metric_or_series();
    let svg = draw(height, |root| {
        let (upper, lower) = root.split_vertically(PLOT_H);
        text(&upper, header, (8, 4), HEAD, INK, Pos::new(HPos::Left, VPos::Top))?;
        let mut b = ChartBuilder::on(&upper);
        b.margin_top(28)
            .margin_right(20)
            .margin_left(8)
            .x_label_area_size(44)
            .y_label_area_size(72);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_labels(8)
                    .y_labels(6)
                    .x_label_formatter(&|v| if logx { log_tick(*v) } else { tick(*v) })
                    .y_label_formatter(&|v| if logy { log_tick(*v) } else { tick(*v) })
                    .x_desc(xname.as_str())
                    .y_desc(ydesc.as_str())
                    .draw_styled()
                    .map_err(de)?;
                for (i, l) in lines.iter().enumerate() {
                    let color = if l.baseline {
                        GRAY
                    } else {
                        PALETTE[i % PALETTE.len()]
                    };
                    if l.baseline {
                        chart
                            .draw_series(DashedLineSeries::new(
                                l.points.clone(),
                                6,
                                4,
                                color.stroke_width(2),
                            ))
                            .map_err(de)?;
                    } else {
                        chart
                            .draw_series(LineSeries::new(l.points.clone(), color.stroke_width(2)))
                            .map_err(de)?;
                    }
                    if l.points.len() <= 40 {
                        chart
                            .draw_series(l.points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                            .map_err(de)?;
                    }
                }
            }};
        }
        let pad = |lo: f64, hi: f64| {
            if hi > lo {
                (lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo))
            } else {
                (lo - 1.0, hi + 1.0)
            }
        };
        let (x0, x1) = if logx { (xl / 1.3, xh * 1.3) } else { pad(xl, xh) };
        let (y0, y1) = if logy {
            log_range(yl, yh)
        } else {
            let (a, b) = pad(yl.min(0.0), yh);
            (a.max(if yl >= 0.0 { 0.0 } else { a }), b)
        };
        match (logx, logy) {
            (true, true) => body!(b
                .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                .map_err(de)?),
            (true, false) => body!(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1).map_err(de)?),
            (false, true) => body!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale()).map_err(de)?),
            (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(de)?),
        }
        let mut y = 10 - LINE as i32;
        for (i, l) in lines.iter().enumerate() {
            y += LINE as i32;
            let color = if l.baseline {
                GRAY
            } else {
                PALETTE[i % PALETTE.len()]
            };
            lower
                .draw(&PathElement::new(vec![(80, y), (100, y)], color.stroke_width(2)))
                .map_err(de)?;
            let name = if l.baseline {
                format!("{} (baseline)", short(&l.name, 40))
            } else {
                short(&l.name, 48)
            };
            text(
                &lower,
                &name,
                (108, y),
                BODY,
                INK,
                Pos::new(HPos::Left, VPos::Center),
            )?;
            for f in &l.failed {
                y += LINE as i32;
                text(
                    &lower,
                    &short(f, 80),
                    (108, y),
                    SMALL,
                    FAIL,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
            }
        }
        Ok(())
    })?;
    let notes = failure_notes(&c.recs, true);
    Ok(lab_figure(c, &svg, &c.recs, &notes))
}

impl LabCtx<'_> {
    /// The y-axis description: the series name for curves, else the metric.
    fn metric_or_series(&self) -> String {
        match &self.spec.series {
            Some(s) => s.clone(),
            None => self.metric.axis(),
        }
    }
}
