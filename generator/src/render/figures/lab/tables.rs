//! `show: table` (the selected records: time, spread, the metric, ratio to the baseline, lines
//! of code) and `show: records` (a named table each record carries, e.g. a profiler's top
//! kernels, grouped by kind).
//!
//! Why together: both are HTML tables with the same escaping, folding and failure marks, no SVG.

use super::super::htmltable::HtmlTable;
use super::profile::{kind_of, short_name, Kind};
use super::*;
use crate::measure::results::Cell;
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

pub(super) fn records(c: &LabCtx) -> Result<String, String> {
    let name = c.spec.table.clone().unwrap_or_default();
    let varying = varying_params(&c.recs);
    let mut notes = Footnotes::default();
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-table\" id=\"{}\">", c.id);
    let mut tables: Vec<(String, &crate::measure::results::Table)> = Vec::new();
    for r in &c.recs {
        let label = row_label(r, &c.recs, &varying);
        let mark = match judge(r) {
            Ok(t) => match t.tables.get(&name) {
                Some(tab) => {
                    tables.push((label, tab));
                    continue;
                }
                None => {
                    let why = super::bars::missing(&format!("`{name}` 표"), "not recorded");
                    notes.mark_why(why, &label)
                }
            },
            Err(_) => notes.mark(r, &label),
        };
        let _ = writeln!(
            h,
            "<p><strong>{}</strong> — <span class=\"fail\">{}</span></p>",
            esc(&label),
            esc(&mark)
        );
    }
    match merged(&tables) {
        Some(one) => h.push_str(&record_table(&one)),
        None => {
            for (label, tab) in &tables {
                let _ = writeln!(h, "<p><strong>{}</strong></p>", esc(label));
                h.push_str(&record_table(tab));
            }
        }
    }
    h.push_str(&lab_caption(c, &c.recs, &notes.html()));
    h.push_str("</figure>");
    Ok(h)
}

/// Several records' small tables of the same columns (a row or three each, e.g. the collectives
/// of each sharding choice) as one table with a column naming the record: one comparison reads
/// better in one table than in seven one-row tables.
fn merged(tables: &[(String, &crate::measure::results::Table)]) -> Option<crate::measure::results::Table> {
    let (_, first) = tables.first()?;
    let alike = tables.len() >= 2
        && tables
            .iter()
            .all(|(_, t)| t.columns == first.columns && t.rows.len() <= 3);
    if !alike {
        return None;
    }
    let mut columns = vec!["변형 (variant)".to_string()];
    columns.extend(first.columns.iter().cloned());
    let rows = tables
        .iter()
        .flat_map(|(label, t)| {
            t.rows.iter().map(move |row| {
                let mut r = vec![Cell::Text(label.clone())];
                r.extend(row.iter().cloned());
                r
            })
        })
        .collect();
    Some(crate::measure::results::Table { columns, rows })
}

/// One recorded table: headers in words with units, numbers scaled per column; a profiler's
/// table (a name column and a time column) grouped by kind with each kind's time and share.
fn record_table(tab: &crate::measure::results::Table) -> String {
    let num_at = |row: &[Cell], i: usize| match row.get(i) {
        Some(Cell::Num(v)) => Some(*v),
        Some(Cell::Text(s)) => s.trim().parse::<f64>().ok(),
        None => None,
    };
    let scales: Vec<Option<Scale>> = (0..tab.columns.len())
        .map(|i| {
            let vals: Vec<f64> = tab.rows.iter().filter_map(|r| num_at(r, i)).collect();
            let numeric = !vals.is_empty() && vals.len() == tab.rows.len();
            numeric.then(|| describe(&tab.columns[i]).scale(vals.iter().map(|v| v.abs()).fold(0.0, f64::max)))
        })
        .collect();
    let name_col = (0..tab.columns.len()).find(|&i| scales[i].is_none());
    let time_col = ["cuda_time_us", "time_us_per_run", "device_ms_total"]
        .iter()
        .find_map(|k| tab.columns.iter().position(|c| c == k))
        .filter(|&i| tab.rows.iter().filter_map(|r| num_at(r, i)).sum::<f64>() > 0.0);
    let is_profile = name_col.is_some_and(|i| {
        let c = tab.columns[i].to_ascii_lowercase();
        c == "kernel" || c.starts_with("op")
    });
    let head: Vec<String> = tab
        .columns
        .iter()
        .zip(&scales)
        .map(|(col, s)| match s {
            Some(s) => esc(&describe(col).heading(s)),
            None => esc(&text_column(col)),
        })
        .collect();
    let cell = |row: &[Cell], i: usize| -> String {
        match (&scales[i], row.get(i)) {
            (Some(s), _) => num_at(row, i).map_or("—".into(), |v| s.number(v)),
            (None, Some(Cell::Text(t))) if Some(i) == name_col && is_profile => {
                format!(
                    "<span class=\"hdlc-name\" title=\"{}\">{}</span>",
                    esc(t),
                    esc(&short_name(t))
                )
            }
            (None, Some(Cell::Text(t))) => esc(t),
            (None, Some(Cell::Num(v))) => num(*v),
            (None, None) => "—".into(),
        }
    };
    // Grouped only when the time column is numeric throughout (its scale exists).
    let time = time_col.and_then(|tc| scales[tc].map(|s| (tc, s)));
    let (Some(nc), Some((tc, tscale)), true) = (name_col, time, is_profile) else {
        let rows: Vec<Vec<String>> = tab
            .rows
            .iter()
            .map(|r| (0..tab.columns.len()).map(|i| cell(r, i)).collect())
            .collect();
        let n = rows.len();
        return HtmlTable {
            head,
            rows,
            shown: vec![true; n],
        }
        .html();
    };
    grouped_profile(tab, (nc, tc, &tscale), head, &cell, &num_at)
}

/// A profiler table grouped by kind: a row per kind (its time and share, in bold), then its
/// kernels; kinds in order of time spent.
fn grouped_profile(
    tab: &crate::measure::results::Table,
    (name_col, time_col, tscale): (usize, usize, &Scale),
    head: Vec<String>,
    cell: &dyn Fn(&[Cell], usize) -> String,
    num_at: &dyn Fn(&[Cell], usize) -> Option<f64>,
) -> String {
    let pct_col = tab.columns.iter().position(|c| c == "pct");
    let name = |r: &[Cell]| match r.get(name_col) {
        Some(Cell::Text(t)) => t.clone(),
        _ => String::new(),
    };
    let total: f64 = tab.rows.iter().filter_map(|r| num_at(r, time_col)).sum();
    let mut kinds: Vec<(Kind, f64, f64, Vec<&Vec<Cell>>)> = Vec::new();
    for r in &tab.rows {
        let k = kind_of(&name(r));
        let t = num_at(r, time_col).unwrap_or(0.0);
        let share = pct_col.and_then(|i| num_at(r, i)).unwrap_or(100.0 * t / total);
        match kinds.iter_mut().find(|e| e.0 == k) {
            Some(e) => {
                e.1 += t;
                e.2 += share;
                e.3.push(r);
            }
            None => kinds.push((k, t, share, vec![r])),
        }
    }
    kinds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    // A heading row per kind (one cell across the table), then its kernels.
    let mut rows = Vec::new();
    for (k, t, share, members) in &kinds {
        rows.push(vec![format!(
            "<strong>{}</strong> · {}개 · {} · {share:.1}%",
            k.words(),
            members.len(),
            esc(&tscale.format(*t))
        )]);
        for m in members {
            rows.push((0..tab.columns.len()).map(|i| cell(m, i)).collect());
        }
    }
    let n = rows.len();
    let mut h = HtmlTable {
        head,
        rows,
        shown: vec![true; n],
    }
    .html();
    let share_note = if pct_col.is_some() {
        "시간 비율은 profile한 step 전체 GPU 시간에 대한 비율이다"
    } else {
        "비율은 이 표에 나온 kernel 시간의 합에 대한 비율이다"
    };
    let _ = writeln!(
        h,
        "<p class=\"hdlc-note\">종류별 합계 (kernels grouped by kind): 이름으로 분류했다 — {share_note}. 이름에 마우스를 올리면 profiler가 적은 전체 이름이 보인다.</p>"
    );
    h
}

/// A text column's header in words.
fn text_column(col: &str) -> String {
    match col {
        "kernel" => "kernel".into(),
        "op" => "연산 (op)".into(),
        "op (GPU streams)" => "연산 (GPU stream)".into(),
        "event" => "event".into(),
        "sharding" => "sharding".into(),
        "hlo_instruction" => "HLO 명령 (instruction)".into(),
        other => crate::metric_names::humanize(other),
    }
}
