//! `show: ladder` for labs: one bar per selected record, failures as text in their row.
//!
//! Why a file of its own: one lab view per file, registered in `LAB_VIEWS`, like the kernel views.
//! Unlike a kernel ladder, a lab ladder may set side by side things that do different work (a
//! whole model beside its embedding lookup), so when its times span decades the axis is log.

use super::super::barchart::{draw_bars, fitted_end, spans_decades, Bar, BarChart};
use super::*;

pub(super) fn ladder(c: &LabCtx) -> Result<String, String> {
    let varying = varying_params(&c.recs);
    let words = c.metric.words();
    let vals: Vec<Value> = c
        .recs
        .iter()
        .map(|r| judge(r).and_then(|t| c.metric.value(t).map(|(v, s)| (v, real_spread(t, s)))))
        .collect();
    let max = vals
        .iter()
        .filter_map(|v| v.as_ref().ok())
        .map(|(v, s)| s.map_or(*v, |(_, hi)| hi.max(*v)))
        .fold(0.0, f64::max);
    // Side by side, every panel's unit follows the largest panel's bar.
    let max = c.axis.hi("x", max);
    let scale = words.scale(max);
    let mut notes = Footnotes::default();
    let mut bars = Vec::new();
    for (i, (r, val)) in c.recs.iter().zip(&vals).enumerate() {
        let name = row_label(r, &c.recs, &varying);
        let label = if r.baseline {
            format!("{name} (기준선)")
        } else {
            name.clone()
        };
        let (v, spread) = match val {
            Ok(v) => *v,
            Err(e) => {
                let text = match judge(r) {
                    Err(_) => notes.mark(r, &name),
                    Ok(_) => notes.mark_why(missing(&words.label, e), &name),
                };
                bars.push(Bar {
                    label,
                    value: None,
                    spread: None,
                    text,
                    color: FAIL,
                    outline: false,
                });
                continue;
            }
        };
        // Each bar in its own unit: a lab ladder may hold 9.6 µs beside 4.98 ms.
        let shown = words.format(v);
        let text = match (r.baseline, baseline_for(c, r)) {
            (true, _) => shown,
            (false, Some((_, b))) => match vs_baseline(c, v, b) {
                Some(ratio) => format!("{shown} · {}", pct(ratio)),
                None => shown,
            },
            (false, None) => shown,
        };
        bars.push(Bar {
            label,
            value: Some(v * scale.factor),
            spread: spread.map(|(a, b)| (a * scale.factor, b * scale.factor)),
            text,
            color: if r.baseline {
                GRAY
            } else {
                PALETTE[i % PALETTE.len()]
            },
            outline: r.baseline,
        });
    }
    let values: Vec<f64> = bars.iter().filter_map(|b| b.value).collect();
    let log = c.metric.is_time() && spans_decades(&values);
    let mut axis = vec![words.heading(&scale)];
    if bars.iter().any(|b| b.spread.is_some()) {
        axis[0].push_str(" · 막대: 중앙값, 수염: p10–p90");
    }
    if log {
        axis.push("로그 축: 값이 여러 자릿수에 걸쳐 있다 (log scale)".into());
    }
    if let Some(b) = c.recs.iter().find(|r| r.baseline) {
        axis.push(vs_baseline_words(c, b));
    }
    let mut chart = BarChart {
        title: lab_title(c),
        bars,
        axis,
        reference: None,
        reach: [0.0; 2],
        log,
    };
    // Side by side, each layout's axis ends where the widest panel's needs it.
    chart.reach = [
        c.axis.hi_scaled("top", fitted_end(&chart, WIDE), scale.factor),
        c.axis
            .hi_scaled("top-narrow", fitted_end(&chart, NARROW), scale.factor),
    ];
    let svg = responsive(|w| draw_bars(&chart, w))?;
    Ok(lab_figure(c, &svg, &c.recs, &notes.html()))
}

/// The footnote reason of a verified record that lacks the value a figure draws.
pub(super) fn missing(what: &str, err: &str) -> Why {
    Why {
        kind: "값 없음",
        reason: format!("이 record에는 {what} 값이 없다 ({err})"),
        error: None,
    }
}
