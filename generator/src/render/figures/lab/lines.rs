//! `show: scaling` (a metric against one param, a line per variant) and `show: curve` (a named
//! series of each record, e.g. a loss curve) for labs.
//!
//! Why together: both hand lines to the shared line chart (log or linear axes chosen from the
//! data, lines that coincide drawn once and said to coincide).

use super::super::linechart::{draw_lines, merge_coincident, LineChart, Series, XAxis};
use super::bars::missing;
use super::*;

/// A line being collected: its series and the params (by footnote mark) it has no point at.
type Collecting = (Series, BTreeMap<String, Vec<u64>>);

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
    let words = c.metric.words();
    let mut notes = Footnotes::default();
    let mut lines: Vec<Collecting> = Vec::new();
    for (n, r) in c.recs.iter().enumerate() {
        let Some(x) = r.params.get(&key) else { continue };
        let idx = match lines.iter().position(|(l, _)| l.name == series_name(r)) {
            Some(i) => i,
            None => {
                lines.push((new_series(r, n), BTreeMap::new()));
                lines.len() - 1
            }
        };
        let item = format!(
            "{} ({})",
            r.label,
            param_text(&r.family, &key, *x).unwrap_or_else(|| param_value(&r.family, &key, *x))
        );
        match judge(r).map(|t| c.metric.value(t)) {
            Ok(Ok((v, _))) if v > 0.0 => lines[idx].0.points.push((*x as f64, v)),
            Ok(Ok(_)) => {
                let why = missing(&words.label, "0 이하");
                let mark = notes.mark_why(why, &item);
                lines[idx].1.entry(mark).or_default().push(*x);
            }
            Ok(Err(e)) => {
                let mark = notes.mark_why(missing(&words.label, &e), &item);
                lines[idx].1.entry(mark).or_default().push(*x);
            }
            Err(_) => {
                let mark = notes.mark(r, &item);
                lines[idx].1.entry(mark).or_default().push(*x);
            }
        }
    }
    let name = crate::metric_names::param_name(&c.spec.bench, &key);
    let lines: Vec<Series> = lines
        .into_iter()
        .map(|(mut s, failed)| {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (mark, xs) in failed {
                let xs: Vec<String> = xs.iter().map(|v| param_value(&c.spec.bench, &key, *v)).collect();
                s.notes.push(format!("{mark} ({name}: {})", xs.join(", ")));
            }
            s
        })
        .collect();
    let title = lab_title(c);
    plot(c, title, (name, words), lines, notes)
}

pub(super) fn curve(c: &LabCtx) -> Result<String, String> {
    let name = c.spec.series.clone().unwrap_or_default();
    let varying = varying_params(&c.recs);
    let words = crate::metric_names::describe(&name);
    let mut notes = Footnotes::default();
    let mut lines = Vec::new();
    for (n, r) in c.recs.iter().enumerate() {
        let label = row_label(r, &c.recs, &varying);
        let mut l = new_series(r, n);
        l.name = if r.baseline {
            format!("{label} (기준선)")
        } else {
            label.clone()
        };
        match judge(r) {
            Err(_) => l.notes.push(notes.mark(r, &label)),
            Ok(t) => match t.series.get(&name) {
                Some(pts) => {
                    l.points = pts
                        .iter()
                        .filter(|p| p[0].is_finite() && p[1].is_finite())
                        .map(|p| (p[0], p[1]))
                        .collect()
                }
                None => {
                    let why = missing(&words.label, &format!("series `{name}` 없음"));
                    l.notes.push(notes.mark_why(why, &label));
                }
            },
        }
        lines.push(l);
    }
    let title = lab_title(c);
    plot(c, title, ("step".into(), words), lines, notes)
}

/// A record's line name; a baseline says it is one.
fn series_name(r: &Record) -> String {
    if r.baseline {
        format!("{} (기준선)", r.label)
    } else {
        r.label.clone()
    }
}

fn new_series(r: &Record, n: usize) -> Series {
    Series {
        name: series_name(r),
        color: if r.baseline {
            GRAY
        } else {
            PALETTE[n % PALETTE.len()]
        },
        dashed: r.baseline,
        points: Vec::new(),
        notes: Vec::new(),
    }
}

/// Draw lines with a legend below; the x axis is logarithmic when a swept param spans ≥ 8×,
/// the y axis when it spans ≥ 30× (and every value is positive).
fn plot(
    c: &LabCtx,
    title: String,
    (xname, words): (String, crate::metric_names::Metric),
    lines: Vec<Series>,
    notes: Footnotes,
) -> Result<String, String> {
    let pts: Vec<(f64, f64)> = lines.iter().flat_map(|l| l.points.iter().copied()).collect();
    if pts.is_empty() {
        // Nothing to draw: a table of what failed says more than an empty chart.
        return super::table::table(c);
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
    // Steps of a curve read linearly (a training run); a swept param is log when it spans 8×.
    let logx = c.spec.series.is_none() && xl > 0.0 && xh / xl >= 8.0;
    let logy = yl > 0.0 && yh / yl >= 30.0;
    let scale = words.scale(yh.abs().max(yl.abs()));
    let f = scale.factor;
    let lines: Vec<Series> = lines
        .into_iter()
        .map(|mut l| {
            for p in &mut l.points {
                p.1 *= f;
            }
            l
        })
        .collect();
    let pad = |lo: f64, hi: f64| {
        if hi > lo {
            (lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo))
        } else {
            (lo - 1.0, hi + 1.0)
        }
    };
    let x_range = if logx { (xl / 1.3, xh * 1.3) } else { pad(xl, xh) };
    let y_range = if logy {
        // A little room beyond the extreme points, so none sits on the frame.
        log_range(yl * f / 1.5, yh * f * 1.5)
    } else {
        let (a, b) = pad(yl.min(0.0) * f, yh * f);
        (if yl >= 0.0 { a.max(0.0) } else { a }, b)
    };
    let span = if logy {
        (y_range.1 / y_range.0).ln()
    } else {
        y_range.1 - y_range.0
    };
    let (lines, merged) = merge_coincident(lines, span, logy, 0.005);
    let mut y_desc = words.heading(&scale);
    if logy {
        y_desc.push_str(" · 로그 축 (log scale)");
    }
    let chart = LineChart {
        title,
        series: lines,
        x: if logx { XAxis::Log } else { XAxis::Linear },
        x_desc: if logx {
            format!("{xname} (로그 눈금)")
        } else {
            xname
        },
        y_desc,
        y_log: logy,
        x_range,
        y_range,
    };
    let svg = responsive(|w| draw_lines(&chart, w))?;
    let mut caption_notes: Vec<String> = merged
        .iter()
        .map(|m| format!("<span class=\"hdlc-note\">{}</span>", esc(m)))
        .collect();
    caption_notes.extend(notes.html());
    Ok(lab_figure(c, &svg, &c.recs, &caption_notes))
}
