//! `show: table`: the selected records with time, spread, the metric, ratio to the baseline
//! and lines of code, one row each; the family's other records folded underneath.
//!
//! Why HTML and not SVG: a table is read cell by cell, copied and searched; its rows fold and
//! wrap with the page (`show: records` in `record_tables.rs` is the same kind of figure).

use super::super::htmltable::HtmlTable;
use super::*;
use crate::metric_names::{describe, Scale};

pub(super) fn table(c: &LabCtx) -> Result<String, String> {
    let mut notes = Footnotes::default();
    let (head, cells) = rows_of(c, &c.recs, &mut notes);
    let groups: Vec<&BTreeMap<String, u64>> = c.recs.iter().map(|r| &r.params).collect();
    let main = HtmlTable::new(head, cells, &groups, |_| 0);
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-table\" id=\"{}\">", c.id);
    h.push_str(&main.html());
    h.push_str(&rest_of_family(c, &mut notes));
    let mut caption_notes = Vec::new();
    if let Some(b) = c.recs.iter().find(|r| r.baseline) {
        caption_notes.push(format!(
            "<span class=\"hdlc-note\">기준선 대비 {}.</span>",
            esc(&vs_baseline_words(c, b))
        ));
    }
    if !c.loc.is_empty() {
        caption_notes.push("<span class=\"hdlc-note\">코드 줄 수: 각 변형의 kernel에서 빈 줄과 주석을 뺀 줄 수, build 때 source에서 센다.</span>".into());
    }
    caption_notes.extend(notes.html());
    h.push_str(&lab_caption(c, &c.recs, &caption_notes));
    h.push_str("</figure>");
    Ok(h)
}

/// A family measured over more than [`htmltable::VISIBLE_ROWS`] items whose figure picks some
/// with `where:` or `variants:`: its other records, folded under the table, so the whole
/// measurement stays one click away from the rows the card discusses.
fn rest_of_family(c: &LabCtx, notes: &mut Footnotes) -> String {
    use super::super::htmltable::VISIBLE_ROWS;
    if c.spec.filter.is_none() && c.spec.variants.is_none() {
        return String::new();
    }
    let family: Vec<&Record> = c
        .file
        .records
        .iter()
        .filter(|r| r.family == c.spec.bench)
        .collect();
    if family.len() <= VISIBLE_ROWS {
        return String::new();
    }
    let mut rest: Vec<&Record> = family
        .into_iter()
        .filter(|r| !c.recs.iter().any(|s| std::ptr::eq(*s, *r)))
        .collect();
    if rest.is_empty() {
        return String::new();
    }
    rest.sort_by(|a, b| (&a.params, a.rung, &a.variant).cmp(&(&b.params, b.rung, &b.variant)));
    let (head, cells) = rows_of(c, &rest, notes);
    let n = cells.len();
    let table = HtmlTable {
        head,
        rows: cells,
        shown: vec![true; n],
    };
    format!(
        "<details class=\"hdlc-fold\"><summary>같은 측정의 다른 {n}행 보기 (the family's other {n} rows)</summary>\n{}</details>\n",
        table.html()
    )
}

/// The columns of a lab table over some records: which optional ones it has, the params that
/// vary, and the units of its time and metric columns.
struct Columns {
    varying: Vec<String>,
    base: bool,
    named: bool,
    spread: bool,
    time: Scale,
    metric: Scale,
}

/// A timing's p10–p90 spread, where there is one (several repetitions, distinct ends).
fn spread_of(t: &Timing) -> Option<(f64, f64)> {
    let raw = Some((t.p10_ms, t.p90_ms)).filter(|(a, b)| a.is_finite() && b.is_finite() && *a > 0.0);
    real_spread(t, raw)
}

/// Header and cells of a lab table over `recs`: variant, the params that vary, time, spread
/// (only where there is one), the metric, the ratio to the baseline, lines of code, error, status.
fn rows_of(c: &LabCtx, recs: &[&Record], notes: &mut Footnotes) -> (Vec<String>, Vec<Vec<String>>) {
    let ok: Vec<&Timing> = recs.iter().filter_map(|r| judge(r).ok()).collect();
    let cols = Columns {
        varying: varying_params(recs),
        base: recs.iter().any(|r| r.baseline),
        named: !c.metric.is_time(),
        spread: ok.iter().any(|t| spread_of(t).is_some()),
        time: describe("time").scale(ok.iter().map(|t| t.median_ms).fold(0.0, f64::max)),
        metric: c.metric.words().scale(
            ok.iter()
                .filter_map(|t| c.metric.value(t).ok())
                .map(|(v, _)| v.abs())
                .fold(0.0, f64::max),
        ),
    };
    let cells = recs.iter().map(|r| row_of(c, r, recs, &cols, notes)).collect();
    (head_of(c, &cols), cells)
}

fn head_of(c: &LabCtx, cols: &Columns) -> Vec<String> {
    let mut head: Vec<String> = vec!["변형 (variant)".into()];
    head.extend(
        cols.varying
            .iter()
            .map(|k| esc(&crate::metric_names::param_name(&c.spec.bench, k))),
    );
    head.push(format!("중앙값 시간 ({}) ↓", cols.time.unit));
    if cols.spread {
        head.push(format!("p10–p90 ({})", cols.time.unit));
    }
    if cols.named {
        head.push(esc(&c.metric.words().heading(&cols.metric)));
    }
    if cols.base {
        head.push("기준선 대비 ↑".into());
    }
    if !c.loc.is_empty() {
        head.push("코드 줄 수".into());
    }
    head.push("검증 (상대 오차)".into());
    head
}

/// One record's cells; a failed one gets dashes and its footnote mark in the status cell.
fn row_of(c: &LabCtx, r: &Record, recs: &[&Record], cols: &Columns, notes: &mut Footnotes) -> Vec<String> {
    let mut row = vec![if r.baseline {
        format!("{} (기준선)", esc(&r.label))
    } else {
        esc(&r.label)
    }];
    row.extend(cols.varying.iter().map(|k| {
        r.params
            .get(k)
            .map_or("—".into(), |v| esc(&param_value(&r.family, k, *v)))
    }));
    let item = row_label(r, recs, &cols.varying);
    let judged = judge(r);
    match judged {
        Ok(t) => {
            row.push(cols.time.number(t.median_ms));
            if cols.spread {
                row.push(spread_of(t).map_or("—".into(), |(a, b)| {
                    format!("{}–{}", cols.time.number(a), cols.time.number(b))
                }));
            }
            let val = c.metric.value(t);
            if cols.named {
                row.push(match &val {
                    Ok((v, _)) => cols.metric.number(*v),
                    Err(e) => {
                        let why = super::bars::missing(&c.metric.words().label, e);
                        format!("<span class=\"fail\">{}</span>", esc(&notes.mark_why(why, &item)))
                    }
                });
            }
            if cols.base {
                row.push(match (r.baseline, &val, baseline_for(c, r)) {
                    (true, _, _) => "기준선".into(),
                    (false, Ok((v, _)), Some((_, b))) => vs_baseline(c, *v, b).map_or("—".into(), pct),
                    _ => "—".into(),
                });
            }
        }
        Err(_) => {
            let n = 1 + cols.spread as usize + cols.named as usize + cols.base as usize;
            row.extend(std::iter::repeat_n("—".to_string(), n));
        }
    }
    if !c.loc.is_empty() {
        row.push(c.loc.get(&r.variant).map_or("—".into(), |n| n.to_string()));
    }
    row.push(match judged {
        Ok(t) => format!("✓ {:.1e}", t.rel_error),
        Err(_) => format!("<span class=\"fail\">{}</span>", esc(&notes.mark(r, &item))),
    });
    row
}
