//! `show: ladder` for labs: one bar per selected record, failures as text in their row.
//!
//! Why a file of its own: one lab view per file, registered in `LAB_VIEWS`, like the kernel views.

use super::*;

pub(super) fn ladder(c: &LabCtx) -> Result<String, String> {
    let varying = varying_params(&c.recs);
    let vals: Vec<Value> = c
        .recs
        .iter()
        .map(|r| judge(r).and_then(|t| c.metric.value(t)))
        .collect();
    let max = vals
        .iter()
        .filter_map(|v| v.as_ref().ok())
        .map(|(v, s)| s.map_or(*v, |(_, hi)| hi.max(*v)))
        .fold(0.0, f64::max);
    // Side by side, every panel's axis reaches the largest panel's bar.
    let max = c.axis.hi("x", max);
    let n = c.recs.len();
    const LEFT: u32 = 230;
    const TOP: u32 = 40;
    const ROW: u32 = 30;
    const BOTTOM: u32 = 46;
    let height = TOP + ROW * n as u32 + BOTTOM + 6;
    let mut xmax = max * 1.6;
    if !(xmax.is_finite() && xmax > 0.0) {
        xmax = 1.0;
    }
    let header = match c.spec.filter.as_ref().filter(|w| !w.is_empty()) {
        Some(w) => {
            let ps: Vec<String> = w.iter().map(|(k, v)| format!("{k} = {}", group(*v))).collect();
            format!("{} · {}", c.spec.bench, ps.join(", "))
        }
        None => c.spec.bench.clone(),
    };
    let x_desc = c.metric.axis();
    let svg = draw(height, |root| {
        text(root, &header, (8, 4), HEAD, INK, Pos::new(HPos::Left, VPos::Top))?;
        let mut chart = bar_frame(root, xmax, n, &x_desc, (TOP, LEFT, BOTTOM))?;
        for (i, (r, val)) in c.recs.iter().zip(&vals).enumerate() {
            let yc = n as f64 - i as f64 - 0.5;
            let (x0, py) = chart.backend_coord(&(0.0, yc));
            let name = row_label(r, &c.recs, &varying);
            text(
                root,
                &short(&name, 30),
                (x0 - 8, py),
                BODY,
                INK,
                Pos::new(HPos::Right, VPos::Center),
            )?;
            let (v, spread) = match val {
                Ok(v) => *v,
                Err(why) => {
                    text(
                        root,
                        &short(why, 60),
                        (x0 + 6, py),
                        BODY,
                        FAIL,
                        Pos::new(HPos::Left, VPos::Center),
                    )?;
                    continue;
                }
            };
            let color = PALETTE[i % PALETTE.len()];
            let color = if r.baseline { GRAY } else { color };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, yc - 0.3), (v, yc + 0.3)],
                    color.filled(),
                )))
                .map_err(de)?;
            let mut right = v;
            if let Some((lo, hi)) = spread {
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
            }
            let (pr, _) = chart.backend_coord(&(right, yc));
            let label = match (r.baseline, baseline_for(c, r)) {
                (true, _) => format!("{} · baseline", c.metric.fmt(v)),
                (false, Some((_, b))) => match vs_baseline(c, v, b) {
                    Some(ratio) => format!("{} · {}", c.metric.fmt(v), pct(ratio)),
                    None => c.metric.fmt(v),
                },
                (false, None) => c.metric.fmt(v),
            };
            text(
                root,
                &label,
                (pr + 6, py),
                BODY,
                INK,
                Pos::new(HPos::Left, VPos::Center),
            )?;
        }
        Ok(())
    })?;
    let mut notes = Vec::new();
    if let Some(b) = c.recs.iter().find(|r| r.baseline) {
        let how = if c.metric.lower_is_better() {
            "baseline ÷ this"
        } else {
            "this ÷ baseline"
        };
        notes.push(format!("% = {how}, baseline: {}.", esc(&b.label)));
    }
    notes.extend(failure_notes(&c.recs, false));
    Ok(lab_figure(c, &svg, &c.recs, &notes))
}
