//! The `scaling` view: one line per variant over problem size (log-2 x axis).
//!
//! Why: small problems underfill the GPU and large ones leave the caches; the shape of the curve
//! is the lesson, so every measured size is drawn, and failed sizes are listed under the chart.

use super::prelude::*;
use std::collections::BTreeMap;

/// One line of the scaling view: a variant's points (log2 size, value) and its failures.
struct Series<'a> {
    rec: &'a Record,
    points: Vec<(f64, f64)>,
    failed: Vec<(u64, &'static str)>,
}

pub(super) fn scaling(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    let Some(reference) = fam.reference(c.spec.size) else {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    };
    let rows: Vec<&Row> = fam
        .rows
        .iter()
        .filter(|r| r.size > 0 && fam.axis.same_others(r.rec, reference.rec))
        .collect();
    // One series per variant, kernels in rung order, baselines last.
    let mut series: Vec<Series> = Vec::new();
    let mut order: Vec<&Row> = rows.clone();
    order.sort_by(|a, b| {
        (a.rec.baseline, a.rec.rung, &a.rec.variant, a.size).cmp(&(
            b.rec.baseline,
            b.rec.rung,
            &b.rec.variant,
            b.size,
        ))
    });
    for r in order {
        if series.last().is_none_or(|s| s.rec.variant != r.rec.variant) {
            series.push(Series {
                rec: r.rec,
                points: Vec::new(),
                failed: Vec::new(),
            });
        }
        let s = series.last_mut().expect("pushed above");
        match r.state {
            State::Ok(m) => {
                if s.points.last().is_none_or(|p| p.0 != (r.size as f64).log2()) {
                    s.points.push(((r.size as f64).log2(), m.value));
                }
            }
            State::Failed(why) => s.failed.push((r.size, why)),
        }
    }
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    if max <= 0.0 {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    // Side by side, every panel takes its unit and its axes from the largest panel.
    let max = c.axis.hi("y", max);
    let (scale, unit_name) = fam.unit.display(max);
    let xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let (mut x0, mut x1) = (
        c.axis.lo("x", xs.iter().copied().fold(f64::INFINITY, f64::min)),
        c.axis
            .hi("x", xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    );
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let (x0, x1) = (x0 - 0.35, x1 + 0.35);
    let ymax = max * scale * 1.12;
    const PLOT_H: u32 = 340;
    const LINE: u32 = 20;
    // Legend: one line per variant, one more per kind of failure it had.
    let legend: Vec<(&Record, Vec<String>)> = series
        .iter()
        .map(|s| {
            let mut by_why: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for (size, why) in &s.failed {
                by_why.entry(why).or_default().push(group(*size));
            }
            (
                s.rec,
                by_why
                    .into_iter()
                    .map(|(why, sizes)| format!("{why} — {} = {}", fam.axis.label, sizes.join(", ")))
                    .collect(),
            )
        })
        .collect();
    let lines: u32 = legend.iter().map(|(_, f)| 1 + f.len() as u32).sum();
    let height = PLOT_H + LINE * lines + 10;
    let fixed: Vec<String> = fam
        .axis
        .varying
        .iter()
        .filter(|k| !fam.axis.locked && Some(*k) != fam.axis.key.as_ref())
        .filter_map(|k| {
            reference
                .rec
                .params
                .get(k)
                .map(|v| format!("{k} = {}", group(*v)))
        })
        .collect();
    let header = if fixed.is_empty() {
        format!("{} · {} vs {}", fam.name, unit_name, fam.axis.label)
    } else {
        format!(
            "{} · {} vs {} ({})",
            fam.name,
            unit_name,
            fam.axis.label,
            fixed.join(", ")
        )
    };

    let svg = draw(height, |root| {
        let (upper, lower) = root.split_vertically(PLOT_H);
        text(
            &upper,
            &header,
            (8, 4),
            HEAD,
            INK,
            Pos::new(HPos::Left, VPos::Top),
        )?;
        let mut chart = ChartBuilder::on(&upper)
            .margin_top(28)
            .margin_right(20)
            .margin_left(8)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, 0f64..ymax)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_labels((x1 - x0).ceil() as usize + 1)
            .y_labels(6)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-6 {
                    size_tick(2f64.powf(v.round()))
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| tick(*v))
            .x_desc(fam.axis.label.clone())
            .y_desc(unit_name)
            .draw_styled()
            .map_err(de)?;
        for Series { rec, points: pts, .. } in &series {
            let color = fam.color(rec);
            let pts: Vec<(f64, f64)> = pts.iter().map(|(x, y)| (*x, y * scale)).collect();
            if rec.baseline {
                chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, color.stroke_width(2)))
                    .map_err(de)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(de)?;
            }
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(de)?;
        }
        let mut y = 10 - LINE as i32;
        for (rec, failed) in &legend {
            y += LINE as i32;
            let color = fam.color(rec);
            if rec.baseline {
                lower
                    .draw(&PathElement::new(vec![(80, y), (88, y)], color.stroke_width(2)))
                    .map_err(de)?;
                lower
                    .draw(&PathElement::new(vec![(92, y), (100, y)], color.stroke_width(2)))
                    .map_err(de)?;
            } else {
                lower
                    .draw(&PathElement::new(vec![(80, y), (100, y)], color.stroke_width(2)))
                    .map_err(de)?;
            }
            lower.draw(&Circle::new((90, y), 3, color.filled())).map_err(de)?;
            let name = if rec.baseline {
                format!("{} (baseline)", short(&rec.label, 30))
            } else {
                short(&rec.label, 30)
            };
            text(
                &lower,
                &name,
                (108, y),
                BODY,
                INK,
                Pos::new(HPos::Left, VPos::Center),
            )?;
            for note in failed {
                y += LINE as i32;
                text(
                    &lower,
                    note,
                    (108, y),
                    SMALL,
                    FAIL,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
            }
        }
        Ok(())
    })?;
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let at_ref = fam.at_params(&reference.rec.params);
    let notes = baseline_note(c, baseline_of(&at_ref).map(|(r, m)| (r, m.value)));
    Ok(figure(c, &svg, &used, &notes))
}
