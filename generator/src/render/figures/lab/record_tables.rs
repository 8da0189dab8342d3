//! `show: records`: a named table each record carries (e.g. a profiler's top kernels), merged
//! over the selected records and, for a profile, grouped by kind of kernel.
//!
//! Why HTML and not SVG: like `show: table`, these are rows to read and compare, folded when
//! long, with failures marked the same way.

use super::super::htmltable::HtmlTable;
use super::profile::{kind_of, short_name, Kind};
use super::*;
use crate::measure::results::Cell;
use crate::metric_names::{describe, Scale};

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
