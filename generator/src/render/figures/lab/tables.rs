//! `show: table` (the selected records: time, spread, the metric, % of baseline, lines of code)
//! and `show: records` (a named table each record carries, e.g. a profiler's top kernels).
//!
//! Why together: both are HTML tables with the same escaping and failure cells, no SVG.

use super::*;
use crate::measure::results::Cell;

pub(super) fn table(c: &LabCtx) -> Result<String, String> {
    let varying = varying_params(&c.recs);
    let has_base = c.recs.iter().any(|r| r.baseline);
    let named = !matches!(c.metric, Metric::Time);
    let mut cols: Vec<String> = vec!["variant".into()];
    cols.extend(varying.iter().map(|k| esc(k)));
    cols.extend(["median ms".to_string(), "p10–p90 ms".into()]);
    if named {
        cols.push(c.metric.header());
    }
    if has_base {
        cols.push("% of baseline".into());
    }
    if !c.loc.is_empty() {
        cols.push("lines of code".into());
    }
    cols.extend(["rel. error".to_string(), "status".into()]);
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-table\" id=\"{}\">", c.id);
    h.push_str("<table>\n<thead>\n<tr>");
    for col in &cols {
        let _ = write!(h, "<th>{col}</th>");
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
    for r in &c.recs {
        let mut cells = vec![if r.baseline {
            format!("{} (baseline)", esc(&r.label))
        } else {
            esc(&r.label)
        }];
        cells.extend(
            varying
                .iter()
                .map(|k| r.params.get(k).map_or("—".into(), |v| group(*v))),
        );
        let judged = judge(r);
        match judged {
            Ok(t) => {
                cells.push(fmt_ms(t.median_ms));
                cells.push(if t.p10_ms > 0.0 && t.p90_ms >= t.p10_ms {
                    format!("{}–{}", fmt_ms(t.p10_ms), fmt_ms(t.p90_ms))
                } else {
                    "—".into()
                });
                let val = c.metric.value(t);
                if named {
                    cells.push(match &val {
                        Ok((v, _)) => c.metric.fmt(*v),
                        Err(e) => format!("<span class=\"fail\">{}</span>", esc(e)),
                    });
                }
                if has_base {
                    cells.push(match (r.baseline, &val, baseline_for(c, r)) {
                        (true, _, _) => "baseline".into(),
                        (false, Ok((v, _)), Some((_, b))) => vs_baseline(c, *v, b).map_or("—".into(), pct),
                        _ => "—".into(),
                    });
                }
            }
            Err(_) => {
                cells.extend(["—".to_string(), "—".into()]);
                if named {
                    cells.push("—".into());
                }
                if has_base {
                    cells.push("—".into());
                }
            }
        }
        if !c.loc.is_empty() {
            cells.push(c.loc.get(&r.variant).map_or("—".into(), |n| n.to_string()));
        }
        match judged {
            Ok(t) => {
                cells.push(format!("{:.1e}", t.rel_error));
                cells.push("✓ 검증됨 (verified)".into());
            }
            Err(why) => {
                cells.push("—".into());
                let err = error_of(r).map_or(String::new(), |e| format!(": {}", esc(&short(e, 160))));
                cells.push(format!("<span class=\"fail\">{why}{err}</span>"));
            }
        }
        h.push_str("<tr>");
        for cell in cells {
            let _ = write!(h, "<td>{cell}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
    let mut notes = Vec::new();
    if has_base {
        let how = if c.metric.lower_is_better() {
            "baseline ÷ this"
        } else {
            "this ÷ baseline"
        };
        notes.push(format!(
            "% of baseline = {how}, at the same params, on {}.",
            esc(&c.metric.header())
        ));
    }
    if !c.loc.is_empty() {
        notes.push("Lines of code: non-blank, non-comment lines of each variant's kernel, counted from the source at build time.".into());
    }
    h.push_str(&lab_caption(c, &c.recs, &notes));
    h.push_str("</figure>");
    Ok(h)
}

pub(super) fn records(c: &LabCtx) -> Result<String, String> {
    let name = c.spec.table.clone().unwrap_or_default();
    let varying = varying_params(&c.recs);
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-table\" id=\"{}\">", c.id);
    for r in &c.recs {
        let label = esc(&row_label(r, &c.recs, &varying));
        let t = match judge(r) {
            Ok(t) => t,
            Err(why) => {
                let err = error_of(r).map_or(String::new(), |e| format!(": {}", esc(&short(e, 160))));
                let _ = writeln!(
                    h,
                    "<p><strong>{label}</strong> — <span class=\"fail\">{why}{err}</span></p>"
                );
                continue;
            }
        };
        let Some(tab) = t.tables.get(&name) else {
            let _ = writeln!(
                h,
                "<p><strong>{label}</strong> — <span class=\"fail\">no table `{}` recorded</span></p>",
                esc(&name)
            );
            continue;
        };
        let _ = writeln!(h, "<p><strong>{label}</strong></p>");
        h.push_str("<table>\n<thead>\n<tr>");
        for col in &tab.columns {
            let _ = write!(h, "<th>{}</th>", esc(col));
        }
        h.push_str("</tr>\n</thead>\n<tbody>\n");
        for row in &tab.rows {
            h.push_str("<tr>");
            for cell in row {
                let s = match cell {
                    Cell::Num(v) => num(*v),
                    Cell::Text(s) => esc(s),
                };
                let _ = write!(h, "<td>{s}</td>");
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h.push_str(&lab_caption(c, &c.recs, &[]));
    h.push_str("</figure>");
    Ok(h)
}
