//! The `table` view: every record of a family (or of one size) as an HTML table row with median,
//! p10–p90, throughput, % of baseline, error and verification status.
//!
//! Why: the exact numbers behind a chart, readable without a chart and searchable; failed records
//! get a row with their stage, never a number.

use super::prelude::*;

pub(super) fn table(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    let rows: Vec<&Row> = match c.spec.size {
        Some(s) => fam.rows.iter().filter(|r| r.size == s).collect(),
        None => fam.rows.iter().collect(),
    };
    if rows.is_empty() || rows.iter().all(|r| r.meas().is_none()) {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let throughput = match fam.unit {
        Unit::GBs => "GB/s",
        Unit::GFlops => "FLOP/s",
    };
    // Extra device memory a variant needs beside its inputs and outputs (attention's S and P):
    // shown beside speed wherever the harness recorded it.
    let workspace = |r: &Row| match &r.rec.outcome {
        Outcome::Ok(t) => t.workspace_bytes,
        _ => None,
    };
    let has_ws = rows.iter().any(|r| workspace(r).is_some());
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-table\" id=\"{}\">", c.id);
    h.push_str("<table>\n<thead>\n<tr>");
    let mut cols = vec![
        "variant".to_string(),
        esc(&fam.axis.header()),
        "median ms".into(),
        "p10–p90 ms".into(),
        throughput.into(),
        "% of baseline".into(),
        "rel. error".into(),
        "status".into(),
    ];
    if has_ws {
        cols.insert(7, "workspace".into());
    }
    for col in cols {
        let _ = write!(h, "<th>{col}</th>");
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
    for r in &rows {
        let base = {
            let same: Vec<&Row> = fam.rows.iter().filter(|o| o.rec.params == r.rec.params).collect();
            baseline_of(&same)
        };
        let label = if r.rec.baseline {
            format!("{} (baseline)", esc(&r.rec.label))
        } else {
            esc(&r.rec.label)
        };
        let mut cells: Vec<String> = match r.state {
            State::Ok(m) => vec![
                label,
                esc(&fam.axis.cell(r.rec)),
                fmt_ms(m.median_ms),
                m.spread_ms
                    .map_or("—".into(), |(a, b)| format!("{}–{}", fmt_ms(a), fmt_ms(b))),
                fmt_value(fam.unit, m.value),
                match (r.rec.baseline, &base) {
                    (true, _) => "baseline".into(),
                    (false, Some((_, b))) => pct(m.value / b.value),
                    (false, None) => "—".into(),
                },
                format!("{:.1e}", m.rel_error),
                "✓ 검증됨 (verified)".into(),
            ],
            State::Failed(why) => vec![
                label,
                esc(&fam.axis.cell(r.rec)),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                format!("<span class=\"fail\">{why}</span>"),
            ],
        };
        if has_ws {
            let ws = workspace(r).map_or("—".into(), |b| format!("{:.2} GiB", b / (1u64 << 30) as f64));
            cells.insert(7, ws);
        }
        h.push_str("<tr>");
        for cell in cells {
            let _ = write!(h, "<td>{cell}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let reference = fam.reference(c.spec.size);
    let base = reference.and_then(|r| baseline_of(&fam.at_params(&r.rec.params)).map(|(r, m)| (r, m.value)));
    let notes = baseline_note(c, base);
    h.push_str(&figcaption(c, &used, &notes));
    h.push_str("</figure>");
    Ok(h)
}
