//! The `ladder` view: one bar per variant at one problem size, fastest rung last, with the
//! baseline and the datasheet peak as reference lines.
//!
//! Why: a card's optimisation story ("naive → tiled → vectorised") is read as a ladder of bars
//! against the ceiling the hardware allows; failed variants stay on the ladder, marked as failed.

use super::prelude::*;

pub(super) fn ladder(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    let Some(reference) = fam.reference(c.spec.size) else {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    };
    let rows = fam.at_params(&reference.rec.params);
    let base = baseline_of(&rows);
    let max = rows
        .iter()
        .filter_map(|r| r.meas())
        .map(|m| m.spread.map_or(m.value, |(_, hi)| hi.max(m.value)))
        .fold(0.0, f64::max);
    let ds = datasheet_value(&c.file.device, fam.unit, &c.spec.bench);
    // Side by side, every panel takes its unit and its axis end from the largest panel.
    let (scale, unit_name) = fam.unit.display(c.axis.hi("basis", max.max(ds.unwrap_or(0.0))));

    let n = rows.len().max(1);
    const LEFT: u32 = 215;
    const TOP: u32 = 40;
    const ROW: u32 = 30;
    const BOTTOM: u32 = 46;
    let height = TOP + ROW * n as u32 + BOTTOM + 6;
    let mut xmax = max * scale * 1.45;
    if let Some(d) = ds {
        xmax = xmax.max(d * scale * 1.12);
    }
    if !(xmax.is_finite() && xmax > 0.0) {
        xmax = 1.0;
    }
    let xmax = c.axis.hi_scaled("top", xmax, scale);
    let header = format!("{} · {}", fam.name, size_text(&fam.axis, reference.rec));
    let x_desc = match &base {
        Some((r, _)) => format!(
            "achieved {unit_name} (median; whisker p10–p90; % of {})",
            short(&r.label, 24)
        ),
        None => format!("achieved {unit_name} (median; whisker p10–p90)"),
    };

    let svg = draw(height, |root| {
        text(root, &header, (8, 4), HEAD, INK, Pos::new(HPos::Left, VPos::Top))?;
        let mut chart = bar_frame(root, xmax, n, &x_desc, (TOP, LEFT, BOTTOM))?;
        // Pixel extent of the text written in each row, so the datasheet line can pass around it.
        let mut texts: Vec<(usize, i32, i32)> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let yc = n as f64 - i as f64 - 0.5;
            let (x0, py) = chart.backend_coord(&(0.0, yc));
            text(
                root,
                &short(&row.rec.label, 28),
                (x0 - 8, py),
                BODY,
                INK,
                Pos::new(HPos::Right, VPos::Center),
            )?;
            let Some(m) = row.meas() else {
                let State::Failed(why) = row.state else { continue };
                text(
                    root,
                    why,
                    (x0 + 6, py),
                    BODY,
                    FAIL,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
                texts.push((i, x0 + 6, x0 + 6 + text_width(why, BODY).ceil() as i32));
                continue;
            };
            let color = fam.color(row.rec);
            let v = m.value * scale;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, yc - 0.3), (v, yc + 0.3)],
                    color.filled(),
                )))
                .map_err(de)?;
            if row.rec.baseline {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, yc - 0.3), (v, yc + 0.3)],
                        INK.mix(0.5).stroke_width(1),
                    )))
                    .map_err(de)?;
            }
            let mut right = v;
            let mut left = v;
            if let Some((lo, hi)) = m.spread {
                let (lo, hi) = (lo * scale, hi * scale);
                let w = INK.mix(0.75).stroke_width(1);
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(lo, yc), (hi, yc)], w)))
                    .map_err(de)?;
                for x in [lo, hi] {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(x, yc - 0.14), (x, yc + 0.14)],
                            w,
                        )))
                        .map_err(de)?;
                }
                right = right.max(hi);
                left = left.min(lo);
            }
            let (pr, _) = chart.backend_coord(&(right, yc));
            let (pl, _) = chart.backend_coord(&(left, yc));
            let label = match (&base, row.rec.baseline) {
                (_, true) => format!("{} · baseline", fmt_value(fam.unit, m.value)),
                (Some((_, b)), false) => {
                    format!("{} · {}", fmt_value(fam.unit, m.value), pct(m.value / b.value))
                }
                (None, false) => fmt_value(fam.unit, m.value),
            };
            let w = text_width(&label, BODY).ceil() as i32;
            if pl - x0 >= w + 16 {
                // On the bar when it fits (keeps the right side clear for the datasheet line), in
                // whichever fixed color reads better on the bar's fixed color.
                text(
                    root,
                    &label,
                    (x0 + 6, py),
                    BODY,
                    on_bar(color),
                    Pos::new(HPos::Left, VPos::Center),
                )?;
                texts.push((i, x0 + 6, x0 + 6 + w));
            } else {
                text(
                    root,
                    &label,
                    (pr + 6, py),
                    BODY,
                    INK,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
                texts.push((i, pr + 6, pr + 6 + w));
            }
        }
        if let Some(d) = ds {
            let x = d * scale;
            let (px, py) = chart.backend_coord(&(x, n as f64));
            for i in 0..n {
                if texts
                    .iter()
                    .any(|&(row, a, b)| row == i && a - 4 <= px && px <= b + 4)
                {
                    continue;
                }
                let (y0, y1) = (n as f64 - i as f64 - 1.0, n as f64 - i as f64);
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x, y0), (x, y1)],
                        5,
                        4,
                        GRAY.stroke_width(1),
                    ))
                    .map_err(de)?;
            }
            let label = format!("datasheet {}", fmt_value(fam.unit, d));
            let half = (text_width(&label, SMALL) / 2.0).ceil() as i32;
            let px = px.min(WIDTH as i32 - 4 - half);
            text(
                root,
                &label,
                (px, py - 4),
                SMALL,
                INK,
                Pos::new(HPos::Center, VPos::Bottom),
            )?;
        }
        Ok(())
    })?;
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let notes = baseline_note(c, base.map(|(r, m)| (r, m.value)));
    Ok(figure(c, &svg, &used, &notes))
}
