//! The `roofline` view: each variant as a point (arithmetic intensity, FLOP/s) under the
//! device's measured memory and compute roofs (and the reader's CPU where it was measured).
//!
//! Why: it shows which wall a kernel hits, with roofs taken from baselines measured in the same
//! run (memcpy bandwidth, cuBLAS), not only from a datasheet.

use super::prelude::*;

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
    let points: Vec<(&Row, Meas)> = rows
        .iter()
        .filter_map(|r| r.meas().map(|m| (*r, *m)))
        .filter(|(_, m)| m.gflops > 0.0 && m.intensity > 0.0)
        .collect();
    if points.is_empty() {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let dev = &c.file.device;
    let cpu = c.spec.bench == CPU;
    let bw_meas = if cpu {
        cpu_triad(c.file)
    } else {
        roof_of(c.file, "bandwidth")
    };
    let tensor = tensor_family(&c.spec.bench);
    let cublas = roof_of(
        c.file,
        if cpu {
            CPU
        } else if tensor {
            "tc_gemm"
        } else {
            "sgemm"
        },
    );
    let ds = dev
        .datasheet
        .as_ref()
        .filter(|d| d.memory_bandwidth_gbs.is_finite() && d.fp32_tflops.is_finite());
    // (GB/s, label, measured?)
    let bw_roof: Option<(f64, String, bool)> = match (&bw_meas, ds) {
        (Some((r, m)), _) => Some((
            m.value,
            format!(
                "{} {} (measured)",
                short(&r.label, 24),
                fmt_value(Unit::GBs, m.value)
            ),
            true,
        )),
        (None, Some(d)) if d.memory_bandwidth_gbs > 0.0 => Some((
            d.memory_bandwidth_gbs,
            format!(
                "memory {} (datasheet)",
                fmt_value(Unit::GBs, d.memory_bandwidth_gbs)
            ),
            false,
        )),
        _ => None,
    };
    let mut flat: Vec<(f64, String, bool)> = Vec::new();
    if let Some((r, m)) = &cublas {
        flat.push((
            m.gflops,
            format!(
                "{} {} (measured)",
                short(&r.label, 24),
                fmt_value(Unit::GFlops, m.gflops)
            ),
            true,
        ));
    }
    if let Some((peak, name)) = ds
        .and_then(|d| compute_peak(d, &c.spec.bench))
        .filter(|p| p.0 > 0.0)
    {
        flat.push((
            peak,
            format!("{name} {} (datasheet)", fmt_value(Unit::GFlops, peak)),
            false,
        ));
    }

    let imin = points
        .iter()
        .map(|(_, m)| m.intensity)
        .fold(f64::INFINITY, f64::min);
    let imax = points.iter().map(|(_, m)| m.intensity).fold(0.0, f64::max);
    let top = flat.iter().map(|f| f.0).fold(0.0, f64::max);
    let ridge = match (&bw_roof, top > 0.0) {
        (Some((bw, ..)), true) => top / bw,
        _ => imax,
    };
    let (x_lo, x_hi) = log_range(imin.min(ridge) / 3.0, imax.max(ridge) * 3.0);
    let ymin_pt = points.iter().map(|(_, m)| m.gflops).fold(f64::INFINITY, f64::min);
    let ymax_pt = points.iter().map(|(_, m)| m.gflops).fold(0.0, f64::max);
    let (y_lo, y_hi) = log_range(ymin_pt / 2.5, ymax_pt.max(top) * 2.5);
    if ![x_lo, x_hi, y_lo, y_hi].iter().all(|v| v.is_finite() && *v > 0.0) {
        return Err(format!(
            "benchmark `{}`: results give no finite range for a roofline",
            fam.name
        ));
    }

    let failed: Vec<&Row> = rows.iter().copied().filter(|r| r.meas().is_none()).collect();
    const PLOT_H: u32 = 400;
    let height = PLOT_H + 20 * failed.len() as u32 + 8;
    let header = format!(
        "{} · {} · FLOP/s vs arithmetic intensity (log–log)",
        fam.name,
        size_text(&fam.axis, reference.rec)
    );

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
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_labels(10)
            .y_labels(10)
            .x_label_formatter(&|v| log_tick(*v))
            .y_label_formatter(&|v| log_tick(*v))
            .x_desc("arithmetic intensity (FLOP/byte)")
            .y_desc("GFLOP/s")
            .draw_styled()
            .map_err(de)?;

        // Roofs: the memory diagonal up to the highest ceiling, each ceiling from its ridge on.
        if let Some((bw, label, measured)) = &bw_roof {
            let x_start = x_lo.max(y_lo / bw);
            let x_end = if top > 0.0 {
                (top / bw).min(x_hi)
            } else {
                x_hi.min(y_hi / bw)
            };
            if x_end > x_start {
                let pts = [(x_start, bw * x_start), (x_end, bw * x_end)];
                if *measured {
                    chart
                        .draw_series(LineSeries::new(pts, INK.mix(0.8).stroke_width(2)))
                        .map_err(de)?;
                } else {
                    chart
                        .draw_series(DashedLineSeries::new(pts, 6, 4, INK.mix(0.6).stroke_width(2)))
                        .map_err(de)?;
                }
                // Above the diagonal, ending on it: kernels sit below their roofs, not here.
                let (sx, sy) = chart.backend_coord(&(x_start, bw * x_start));
                let (ex, ey) = chart.backend_coord(&(x_end, bw * x_end));
                let w = text_width(label, SMALL).ceil() as i32;
                if sx + w + 12 <= ex {
                    let px = (sx + w + 12).max((sx + ex) / 2);
                    let py = if ex > sx {
                        sy + (ey - sy) * (px - sx) / (ex - sx)
                    } else {
                        sy
                    };
                    text(
                        &upper,
                        label,
                        (px - 6, py - 6),
                        SMALL,
                        INK,
                        Pos::new(HPos::Right, VPos::Bottom),
                    )?;
                } else {
                    // A short diagonal (compute-bound view): below its foot, where the line rises away.
                    text(
                        &upper,
                        label,
                        (sx + 10, sy + 4),
                        SMALL,
                        INK,
                        Pos::new(HPos::Left, VPos::Top),
                    )?;
                }
            }
        }
        for (gf, label, measured) in &flat {
            let x_start = bw_roof.as_ref().map_or(x_lo, |(bw, ..)| (gf / bw).max(x_lo));
            if x_start >= x_hi {
                continue;
            }
            let pts = [(x_start, *gf), (x_hi, *gf)];
            // Labels start just right of the ridge point: kernels sit far right (compute-bound)
            // or left of the ridge (memory-bound), rarely here.
            let (px, py) = chart.backend_coord(&(x_start, *gf));
            let px = px.min(WIDTH as i32 - 24 - text_width(label, SMALL).ceil() as i32);
            if *measured {
                chart
                    .draw_series(LineSeries::new(pts, INK.mix(0.8).stroke_width(2)))
                    .map_err(de)?;
                text(
                    &upper,
                    label,
                    (px + 8, py + 4),
                    SMALL,
                    INK,
                    Pos::new(HPos::Left, VPos::Top),
                )?;
            } else {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, INK.mix(0.6).stroke_width(2)))
                    .map_err(de)?;
                text(
                    &upper,
                    label,
                    (px + 8, py - 4),
                    SMALL,
                    INK,
                    Pos::new(HPos::Left, VPos::Bottom),
                )?;
            }
        }

        // Points, labels spread apart vertically so they do not overlap.
        let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
        let mid = (plot_x.start + plot_x.end) / 2;
        // A baseline that is itself a roof (cuBLAS on the sgemm roofline) is labelled by its roof.
        let is_roof = |r: &Record| {
            bw_meas
                .iter()
                .chain(cublas.iter())
                .any(|(b, _)| std::ptr::eq(*b, r))
        };
        for (r, m) in points.iter().filter(|(r, _)| is_roof(r.rec)) {
            let p = chart.backend_coord(&(m.intensity, m.gflops));
            upper
                .draw(&Circle::new(p, 5, fam.color(r.rec).filled()))
                .map_err(de)?;
            upper
                .draw(&Circle::new(p, 5, INK.mix(0.7).stroke_width(1)))
                .map_err(de)?;
        }
        let mut placed: Vec<(i32, i32, i32, String, RGBColor, bool)> = points
            .iter()
            .filter(|(r, _)| !is_roof(r.rec))
            .map(|(r, m)| {
                let (px, py) = chart.backend_coord(&(m.intensity, m.gflops));
                (px, py, py, short(&r.rec.label, 28), fam.color(r.rec), px > mid)
            })
            .collect();
        placed.sort_by_key(|p| (p.1, p.0));
        for side in [false, true] {
            let idx: Vec<usize> = (0..placed.len()).filter(|&i| placed[i].5 == side).collect();
            let mut last: Option<i32> = None;
            for &i in &idx {
                placed[i].2 = last.map_or(placed[i].2, |l| placed[i].2.max(l + 14));
                last = Some(placed[i].2);
            }
            let Some(last) = last else { continue };
            let overflow = last - (plot_y.end - 8);
            if overflow > 0 {
                for &i in &idx {
                    placed[i].2 -= overflow;
                }
            }
        }
        for (px, py, ly, label, color, left) in &placed {
            upper
                .draw(&Circle::new((*px, *py), 5, color.filled()))
                .map_err(de)?;
            upper
                .draw(&Circle::new((*px, *py), 5, INK.mix(0.7).stroke_width(1)))
                .map_err(de)?;
            let lx = if *left { px - 12 } else { px + 12 };
            if (ly - py).abs() > 3 {
                let ex = if *left { px - 6 } else { px + 6 };
                upper
                    .draw(&PathElement::new(
                        vec![(ex, *py), (lx, *ly)],
                        INK.mix(0.4).stroke_width(1),
                    ))
                    .map_err(de)?;
            }
            let anchor = if *left { HPos::Right } else { HPos::Left };
            text(
                &upper,
                label,
                (lx + if *left { -2 } else { 2 }, *ly),
                BODY,
                INK,
                Pos::new(anchor, VPos::Center),
            )?;
        }
        for (i, r) in failed.iter().enumerate() {
            let y = 10 + 20 * i as i32;
            let State::Failed(why) = r.state else { continue };
            text(
                &lower,
                &format!("{} — {} (not plotted)", short(&r.rec.label, 30), why),
                (80, y),
                BODY,
                FAIL,
                Pos::new(HPos::Left, VPos::Center),
            )?;
        }
        Ok(())
    })?;

    let mut used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    used.extend(bw_meas.iter().map(|(r, _)| *r));
    used.extend(cublas.iter().map(|(r, _)| *r));
    let mut notes = Vec::new();
    let mut ref_parts = Vec::new();
    if let Some((r, m)) = &bw_meas {
        ref_parts.push(format!(
            "{} {} (측정)",
            esc(&r.label),
            fmt_value(Unit::GBs, m.value)
        ));
    }
    if let Some((r, m)) = &cublas {
        ref_parts.push(format!(
            "{} {} (측정)",
            esc(&r.label),
            fmt_value(Unit::GFlops, m.gflops)
        ));
    }
    if !ref_parts.is_empty() {
        notes.push(format!(
            "<span class=\"baseline\">기준선(baseline): {}</span>",
            ref_parts.join(" · ")
        ));
    }
    if let Some(d) = ds {
        notes.push(format!(
            "<span class=\"datasheet\">데이터시트(datasheet, {}): 메모리 {} · {}</span>",
            esc(&d.source),
            fmt_value(Unit::GBs, d.memory_bandwidth_gbs),
            compute_peak(d, &c.spec.bench)
                .map(|(v, n)| format!("{n} {}", fmt_value(Unit::GFlops, v)))
                .unwrap_or_default()
        ));
    }
    Ok(figure(c, &svg, &used, &notes))
}
