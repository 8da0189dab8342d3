//! The `table` view: every record of a family (or of one size) as an HTML table row with median,
//! p10–p90, throughput, ratio to the baseline, error and verification status.
//!
//! Why: the exact numbers behind a chart, readable without a chart and searchable; a record that
//! was not measured or failed gets its row with a footnote mark, never a number. A family measured
//! at many sizes shows the rows at the figure's size (or the largest) and folds the rest.

use super::htmltable::HtmlTable;
use super::notes::Footnotes;
use super::prelude::*;
use crate::metric_names::{describe, Scale};
use std::collections::BTreeMap;

/// Which optional columns a table has, and the unit of its time columns.
struct Columns {
    time: Scale,
    spread: bool,
    workspace: bool,
}

pub(super) fn table(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    let rows: Vec<&Row> = match c.spec.size {
        Some(s) => fam.rows.iter().filter(|r| r.size == s).collect(),
        None => fam.rows.iter().collect(),
    };
    if rows.is_empty() || rows.iter().all(|r| r.meas().is_none()) {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let cols = Columns {
        time: describe("time").scale(
            rows.iter()
                .filter_map(|r| r.meas())
                .map(|m| m.median_ms)
                .fold(0.0, f64::max),
        ),
        spread: rows.iter().any(|r| r.meas().is_some_and(|m| spread(m).is_some())),
        workspace: rows.iter().any(|r| workspace(r).is_some()),
    };
    let mut notes = Footnotes::default();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| row_cells(fam, r, &cols, &mut notes))
        .collect();
    // Past the fold: rows at other sizes than the figure's (or the largest measured), so the rows
    // the card is about come first.
    let reference = fam.reference(c.spec.size);
    let groups: Vec<&BTreeMap<String, u64>> = rows.iter().map(|r| &r.rec.params).collect();
    let prefer = |p: &&BTreeMap<String, u64>| {
        if reference.is_some_and(|r| &r.rec.params == *p) {
            return i64::MIN;
        }
        let size = fam.axis.key.as_ref().and_then(|k| p.get(k)).copied().unwrap_or(0);
        -(size.min(i64::MAX as u64) as i64)
    };
    let table = HtmlTable::new(head(fam, &cols), cells, &groups, prefer);
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-table\" id=\"{}\">", c.id);
    h.push_str(&table.html());
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let base = reference.and_then(|r| baseline_of(&fam.at_params(&r.rec.params)).map(|(r, m)| (r, m.value)));
    let mut caption_notes = baseline_note(c, base);
    caption_notes.push(
        "<span class=\"hdlc-note\">기준선 대비: 같은 조건에서 잰 기준선 처리량에 대한 비율 — 100%보다 크면 기준선보다 빠르다.</span>"
            .into(),
    );
    caption_notes.extend(notes.html());
    h.push_str(&figcaption(c, &used, &caption_notes));
    h.push_str("</figure>");
    Ok(h)
}

/// Extra device memory a variant needs beside its inputs and outputs (attention's S and P),
/// shown beside speed wherever the harness recorded it.
fn workspace(r: &Row) -> Option<f64> {
    match &r.rec.outcome {
        Outcome::Ok(t) => t.workspace_bytes,
        _ => None,
    }
}

fn head(fam: &Family, cols: &Columns) -> Vec<String> {
    let mut head = vec![
        "변형 (variant)".to_string(),
        esc(&fam.axis.header()),
        format!("중앙값 ({}) ↓", cols.time.unit),
    ];
    if cols.spread {
        head.push(format!("p10–p90 ({})", cols.time.unit));
    }
    head.extend(["처리량 ↑".to_string(), "기준선 대비 ↑".into()]);
    if cols.workspace {
        head.push("작업 공간 (GiB)".into());
    }
    head.push("검증 (상대 오차)".into());
    head
}

/// One record's cells; a failed one gets dashes and its footnote mark in the status cell.
fn row_cells(fam: &Family, r: &Row, cols: &Columns, notes: &mut Footnotes) -> Vec<String> {
    let same: Vec<&Row> = fam.rows.iter().filter(|o| o.rec.params == r.rec.params).collect();
    let base = baseline_of(&same);
    let mut row = vec![
        if r.rec.baseline {
            format!("{} (기준선)", esc(&r.rec.label))
        } else {
            esc(&r.rec.label)
        },
        esc(&fam.axis.cell(r.rec)),
    ];
    match r.state {
        State::Ok(m) => {
            row.push(cols.time.number(m.median_ms));
            if cols.spread {
                row.push(spread(&m).map_or("—".into(), |(a, b)| {
                    format!("{}–{}", cols.time.number(a), cols.time.number(b))
                }));
            }
            row.push(fmt_value(fam.unit, m.value));
            row.push(match (r.rec.baseline, &base) {
                (true, _) => "기준선".into(),
                (false, Some((_, b))) => pct(m.value / b.value),
                (false, None) => "—".into(),
            });
        }
        State::Failed(_) => {
            let n = if cols.spread { 4 } else { 3 };
            row.extend(std::iter::repeat_n("—".to_string(), n));
        }
    }
    if cols.workspace {
        row.push(workspace(r).map_or("—".into(), |b| format!("{:.2}", b / (1u64 << 30) as f64)));
    }
    row.push(match r.state {
        State::Ok(m) => format!("✓ {:.1e}", m.rel_error),
        State::Failed(_) => {
            let item = format!("{} ({})", r.rec.label, fam.axis.cell(r.rec));
            format!("<span class=\"fail\">{}</span>", esc(&notes.mark(r.rec, &item)))
        }
    });
    row
}

/// A p10–p90 spread worth showing: one whose ends differ.
fn spread(m: &Meas) -> Option<(f64, f64)> {
    m.spread_ms.filter(|(a, b)| b > a)
}
