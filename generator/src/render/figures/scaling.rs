//! The `scaling` view: one line per variant over problem size (log-2 x axis).
//!
//! Why: small problems underfill the GPU and large ones leave the caches; the shape of the curve
//! is the lesson, so every measured size is drawn, and sizes that were not measured or failed are
//! named under the variant in the legend, with the reason in a footnote.

use super::linechart::{draw_lines, merge_coincident, LineChart, Series, XAxis};
use super::notes::Footnotes;
use super::prelude::*;
use std::collections::BTreeMap;

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
    let mut notes = Footnotes::default();
    let series = collect(fam, &rows, &mut notes);
    let max = series
        .iter()
        .flat_map(|(s, _)| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    if max <= 0.0 {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    // Side by side, every panel takes its unit and its axes from the largest panel.
    let max = c.axis.hi("y", max);
    let (scale, unit_name) = fam.unit.display(max);
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|(s, _)| s.points.iter().map(|p| p.0))
        .collect();
    let (mut x0, mut x1) = (
        c.axis.lo("x", xs.iter().copied().fold(f64::INFINITY, f64::min)),
        c.axis
            .hi("x", xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    );
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let ymax = max * scale * 1.12;
    let series: Vec<Series> = series
        .into_iter()
        .map(|(mut s, failed)| {
            for p in &mut s.points {
                p.1 *= scale;
            }
            for (mark, sizes) in failed {
                let sizes: Vec<String> = sizes.iter().map(|v| group(*v)).collect();
                s.notes
                    .push(format!("{mark} ({}: {})", fam.axis.label, sizes.join(", ")));
            }
            s
        })
        .collect();
    let (series, merged) = merge_coincident(series, ymax, false, 0.005);
    let chart = LineChart {
        title: title_of(&fam.name, &fixed_text(fam, reference.rec)),
        series,
        x: XAxis::Log2Sizes,
        x_desc: format!("{} (log₂ 눈금)", fam.axis.label),
        y_desc: format!("달성 처리량 ({unit_name}) ↑ 높을수록 좋음"),
        y_log: false,
        x_range: (x0 - 0.35, x1 + 0.35),
        y_range: (0.0, ymax),
    };
    let svg = responsive(|w| draw_lines(&chart, w))?;
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let at_ref = fam.at_params(&reference.rec.params);
    let mut caption_notes = baseline_note(c, baseline_of(&at_ref).map(|(r, m)| (r, m.value)));
    caption_notes.extend(
        merged
            .into_iter()
            .map(|m| format!("<span class=\"hdlc-note\">{}</span>", esc(&m))),
    );
    caption_notes.extend(notes.html());
    Ok(figure(c, &svg, &used, &caption_notes))
}

/// A series being collected, and the sizes (by footnote mark) where it has no point.
type Collecting = (Series, BTreeMap<String, Vec<u64>>);

/// One series per variant, kernels in rung order, baselines last; failed sizes noted by mark.
fn collect(fam: &Family, rows: &[&Row], notes: &mut Footnotes) -> Vec<Collecting> {
    // One series per variant, kernels in rung order, baselines last.
    let mut order: Vec<&Row> = rows.to_vec();
    order.sort_by(|a, b| {
        (a.rec.baseline, a.rec.rung, &a.rec.variant, a.size).cmp(&(
            b.rec.baseline,
            b.rec.rung,
            &b.rec.variant,
            b.size,
        ))
    });
    let mut series: Vec<Collecting> = Vec::new();
    for r in order {
        if series.last().is_none_or(|(s, _)| s.name != series_name(r.rec)) {
            series.push((
                Series {
                    name: series_name(r.rec),
                    color: fam.color(r.rec),
                    dashed: r.rec.baseline,
                    points: Vec::new(),
                    notes: Vec::new(),
                },
                BTreeMap::new(),
            ));
        }
        let (s, failed) = series.last_mut().expect("pushed above");
        match r.state {
            State::Ok(m) => {
                let x = (r.size as f64).log2();
                if s.points.last().is_none_or(|p| p.0 != x) {
                    s.points.push((x, m.value));
                }
            }
            State::Failed(_) => {
                let item = format!("{} ({} = {})", r.rec.label, fam.axis.label, group(r.size));
                let mark = notes.mark(r.rec, &item);
                failed.entry(mark).or_default().push(r.size);
            }
        }
    }
    series
}

/// A variant's legend name; a baseline says it is one.
fn series_name(r: &Record) -> String {
    if r.baseline {
        format!("{} (기준선)", r.label)
    } else {
        r.label.clone()
    }
}

/// The parameters every drawn record shares beside the size, in words.
fn fixed_text(fam: &Family, reference: &Record) -> String {
    if fam.axis.locked {
        return String::new();
    }
    let mut keys: Vec<&String> = reference
        .params
        .keys()
        .filter(|k| Some(*k) != fam.axis.key.as_ref())
        .collect();
    keys.sort_by_key(|k| display_rank(k));
    crate::metric_names::params_text(
        &fam.name,
        keys.into_iter().map(|k| (k.as_str(), reference.params[k])),
    )
}
