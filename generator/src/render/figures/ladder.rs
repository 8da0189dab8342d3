//! The `ladder` view: one bar per variant at one problem size, fastest rung last, with the
//! baseline and the datasheet peak as reference lines.
//!
//! Why: a card's optimisation story ("naive → tiled → vectorised") is read as a ladder of bars
//! against the ceiling the hardware allows; failed variants stay on the ladder, marked as failed
//! with the reason in a footnote. The axis is linear on purpose: every rung does the same work, so
//! bar length is speed, and a log axis would shrink the climb the card is about.

use super::barchart::{draw_bars, fitted_end, Bar, BarChart};
use super::notes::Footnotes;
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
    let mut notes = Footnotes::default();
    let bars: Vec<Bar> = rows
        .iter()
        .map(|row| {
            let label = if row.rec.baseline {
                format!("{} (기준선)", row.rec.label)
            } else {
                row.rec.label.clone()
            };
            let Some(m) = row.meas() else {
                let text = notes.mark(row.rec, &row.rec.label);
                return Bar {
                    label,
                    value: None,
                    spread: None,
                    text,
                    color: FAIL,
                    outline: false,
                };
            };
            let text = match (&base, row.rec.baseline) {
                (_, true) => fmt_value(fam.unit, m.value),
                (Some((_, b)), false) => {
                    format!("{} · {}", fmt_value(fam.unit, m.value), pct(m.value / b.value))
                }
                (None, false) => fmt_value(fam.unit, m.value),
            };
            Bar {
                label,
                value: Some(m.value * scale),
                spread: m
                    .spread
                    .filter(|(lo, hi)| hi > lo)
                    .map(|(lo, hi)| (lo * scale, hi * scale)),
                text,
                color: fam.color(row.rec),
                outline: row.rec.baseline,
            }
        })
        .collect();
    let mut axis = vec![format!(
        "달성 처리량 ({unit_name}) ↑ 높을수록 좋음 · 막대: 중앙값, 수염: p10–p90"
    )];
    if let Some((r, _)) = &base {
        axis.push(format!(
            "%: 기준선 {} 대비 처리량 (100%보다 크면 기준선보다 빠름)",
            r.label
        ));
    }
    let mut chart = BarChart {
        title: title_of(&fam.name, &size_text(&fam.axis, reference.rec)),
        bars,
        axis,
        reference: ds.map(|d| (d * scale, format!("datasheet {}", fmt_value(fam.unit, d)))),
        reach: [0.0; 2],
        log: false,
    };
    // Side by side, each layout's axis ends where the widest panel's needs it.
    chart.reach = [
        c.axis.hi_scaled("top", fitted_end(&chart, WIDE), scale),
        c.axis.hi_scaled("top-narrow", fitted_end(&chart, NARROW), scale),
    ];
    let svg = responsive(|w| draw_bars(&chart, w))?;
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let mut caption_notes = baseline_note(c, base.map(|(r, m)| (r, m.value)));
    caption_notes.extend(notes.html());
    Ok(figure(c, &svg, &used, &caption_notes))
}
