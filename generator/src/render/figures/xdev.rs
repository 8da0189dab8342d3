//! The `devices` view: one family's items measured on several machines, as a table with one
//! column per machine, each machine's measured ratio to the first, the datasheet ratio and a
//! verdict.
//!
//! Why a table of ratios: an H200 is an H100 chip with 4.8 instead of 3.35 TB/s of HBM and the
//! same SMs, clocks and peaks. So the ratio of the two measurements says what limits a kernel:
//! a memory-bound kernel speeds up by about the bandwidth ratio, a compute-bound one by about the
//! (equal) peak ratio. The view states both ratios beside the measured one and says which the
//! measurement follows; a failed record shows as failed, and every number comes from the
//! results files or the datasheet table in `measure::device`.

use super::htmltable::HtmlTable;
use super::notes::Footnotes;
use super::panels::machines;
use super::prelude::*;
use crate::figspec::Devices;
use crate::measure::device::datasheet_for;
use crate::measure::results::{Datasheet, ResultsFile};

/// A measured ratio "follows" a datasheet ratio when it is within this fraction of it.
const FOLLOWS: f64 = 0.10;

/// One machine of the table: its name as `device:` matched it, and its results if it has any.
struct Machine<'a> {
    name: String,
    fam: Option<Family<'a>>,
    file: Option<&'a ResultsFile>,
}

pub(super) fn devices(c: &Ctx) -> Result<String, String> {
    let ms = table_machines(c);
    let items = shown_items(c, &ms);
    let any_number = items
        .iter()
        .any(|i| ms.iter().any(|m| matches!(state_of(m, i), Some(State::Ok(_)))));
    if !any_number {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let axis = SizeAxis::new(&items);
    let sheets: Vec<Option<Datasheet>> = ms
        .iter()
        .map(|m| {
            m.file
                .and_then(|f| f.device.datasheet.clone())
                .or_else(|| datasheet_for(&m.name))
        })
        .collect();

    let mut notes = Footnotes::default();
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<figure class=\"hdlc-figure hdlc-table hdlc-xdev\" id=\"{}\">",
        c.id
    );
    // Parameters that every row shares go to the caption; the column shows only what varies.
    let params_col = !axis.varying.is_empty();
    let head = columns(c, &ms, params_col.then_some(&axis));
    let mut rows = Vec::new();
    for item in &items {
        let label = if item.baseline {
            format!("{} (기준선)", esc(&item.label))
        } else {
            esc(&item.label)
        };
        let mut cells = vec![label];
        if params_col {
            cells.push(esc(&axis.cell(item)));
        }
        let states: Vec<Option<State>> = ms.iter().map(|m| state_of(m, item)).collect();
        cells.extend(value_cells(&ms, &states, item, c.fam.unit, &mut notes));
        cells.extend(ratio_cells(&states, &sheets, c.fam.unit, &c.spec.bench));
        rows.push(cells);
    }
    let n = rows.len();
    let table = HtmlTable {
        head,
        rows,
        shown: vec![true; n],
    };
    h.push_str(&table.html());
    let shared = (!params_col)
        .then(|| items.first().map(|r| size_text(&axis, r)))
        .flatten();
    h.push_str(&caption(c, &ms, &sheets, &items, shared, &notes.html()));
    h.push_str("</figure>");
    Ok(h)
}

/// The machines `device:` asks for, each with its results for this family when it has any.
fn table_machines<'a>(c: &Ctx<'a>) -> Vec<Machine<'a>> {
    let want = c.spec.device.clone().unwrap_or(Devices::All);
    let covers = |f: &ResultsFile| super::covers(&c.spec.bench, f);
    machines(&want, c.files, &covers)
        .into_iter()
        .map(|(name, file)| Machine {
            name: file.map_or(name, |f| f.device.name.clone()),
            fam: file.map(|f| Family::new(&c.spec.bench, f)),
            file,
        })
        .collect()
}

/// The items the figure asks for (size, filter, variants), in the first machine's order, then
/// any only a later machine has; in the order of `variants:` when it lists them.
fn shown_items<'a>(c: &Ctx, ms: &[Machine<'a>]) -> Vec<&'a Record> {
    let keep = |r: &Record| {
        c.spec
            .filter
            .as_ref()
            .is_none_or(|w| w.iter().all(|(k, v)| r.params.get(k) == Some(v)))
            && c.spec.variants.as_ref().is_none_or(|vs| vs.contains(&r.variant))
    };
    let mut items: Vec<&Record> = Vec::new();
    for fam in ms.iter().filter_map(|m| m.fam.as_ref()) {
        for row in &fam.rows {
            let sized = c.spec.size.is_none_or(|s| row.size == s);
            if sized && keep(row.rec) && !items.iter().any(|i| same_item(i, row.rec)) {
                items.push(row.rec);
            }
        }
    }
    if let Some(vs) = &c.spec.variants {
        items.sort_by_key(|r| vs.iter().position(|v| *v == r.variant));
    }
    items
}

/// How one machine's run of one item went, if the machine measured it.
fn state_of(m: &Machine, item: &Record) -> Option<State> {
    let fam = m.fam.as_ref()?;
    fam.rows.iter().find(|r| same_item(r.rec, item)).map(|r| r.state)
}

/// The header: the variant, the varying parameters (when some vary), one value column per
/// machine, then measured ratio, datasheet ratio and verdict for each machine after the first.
fn columns(c: &Ctx, ms: &[Machine], axis: Option<&SizeAxis>) -> Vec<String> {
    let unit = c.fam.unit;
    let unit_name = match unit {
        Unit::GBs => "GB/s",
        Unit::GFlops => "FLOP/s",
    };
    let mut cols = vec!["변형 (variant)".to_string()];
    if let Some(axis) = axis {
        cols.push(esc(&axis.header()));
    }
    for m in ms {
        let nodata = if m.fam.is_none() { " (no data)" } else { "" };
        cols.push(format!(
            "{}{nodata}<br>중앙값 {unit_name} ↑",
            esc(&short_name(&m.name))
        ));
    }
    for m in ms.iter().skip(1) {
        cols.push(format!(
            "{} ÷ {}<br>측정 (measured)",
            esc(&short_name(&m.name)),
            esc(&short_name(&ms[0].name))
        ));
        cols.push(format!(
            "데이터시트 비율<br>(datasheet, {})",
            ratio_kind(unit, &c.spec.bench)
        ));
        cols.push("판정 (verdict)".into());
    }
    cols
}

/// Each machine's value of one item, or its footnote mark where it failed.
fn value_cells(
    ms: &[Machine],
    states: &[Option<State>],
    item: &Record,
    unit: Unit,
    notes: &mut Footnotes,
) -> Vec<String> {
    ms.iter()
        .zip(states)
        .map(|(m, s)| match s {
            Some(State::Ok(v)) => fmt_value(unit, v.value),
            Some(State::Failed(_)) => {
                let rec = m
                    .fam
                    .as_ref()
                    .and_then(|f| f.rows.iter().find(|r| same_item(r.rec, item)))
                    .map_or(item, |r| r.rec);
                let what = format!("{}, {}", item.label, short_name(&m.name));
                format!("<span class=\"fail\">{}</span>", esc(&notes.mark(rec, &what)))
            }
            None => "—".into(),
        })
        .collect()
}

/// For each machine after the first: the measured ratio, the datasheet ratio and the verdict.
fn ratio_cells(
    states: &[Option<State>],
    sheets: &[Option<Datasheet>],
    unit: Unit,
    family: &str,
) -> Vec<String> {
    let mut cells = Vec::new();
    for (j, s) in states.iter().enumerate().skip(1) {
        let measured = match (&states[0], s) {
            (Some(State::Ok(a)), Some(State::Ok(b))) => Some(b.value / a.value),
            _ => None,
        };
        let ratios = datasheet_ratios(sheets[0].as_ref(), sheets[j].as_ref(), family);
        let shown = ratios.map(|(bw, peak)| match unit {
            Unit::GBs => bw,
            Unit::GFlops => peak,
        });
        cells.push(measured.map_or("—".into(), ratio));
        cells.push(shown.map_or("—".into(), ratio));
        cells.push(match (measured, ratios) {
            (Some(m), Some((bw, peak))) => verdict(m, bw, peak, family).into(),
            _ => "—".into(),
        });
    }
    cells
}

/// Whether two records are the same item of a family (variant and parameters).
fn same_item(a: &Record, b: &Record) -> bool {
    a.variant == b.variant && a.params == b.params
}

/// "NVIDIA H100 80GB HBM3" → "H100 80GB HBM3": table headers are narrow.
fn short_name(name: &str) -> String {
    name.strip_prefix("NVIDIA ").unwrap_or(name).to_string()
}

fn ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.2}×")
    } else {
        "—".into()
    }
}

/// Which datasheet ratio a family's unit is compared with, for the header.
fn ratio_kind(unit: Unit, family: &str) -> &'static str {
    match unit {
        Unit::GBs => "memory bandwidth",
        Unit::GFlops if tensor_family(family) => "BF16 tensor peak",
        Unit::GFlops => "FP32 peak",
    }
}

/// (memory bandwidth ratio, compute peak ratio) of machine `b` to machine `a`.
fn datasheet_ratios(a: Option<&Datasheet>, b: Option<&Datasheet>, family: &str) -> Option<(f64, f64)> {
    let (a, b) = (a?, b?);
    let bw = b.memory_bandwidth_gbs / a.memory_bandwidth_gbs;
    let peak = compute_peak(b, family)?.0 / compute_peak(a, family)?.0;
    (bw.is_finite() && bw > 0.0 && peak.is_finite() && peak > 0.0).then_some((bw, peak))
}

/// Which datasheet ratio a measured ratio follows (within [`FOLLOWS`]).
fn verdict(measured: f64, bw: f64, peak: f64, family: &str) -> &'static str {
    let near = |r: f64| (measured / r - 1.0).abs() <= FOLLOWS;
    match (near(bw), near(peak)) {
        (true, true) => "두 비율이 가까워 구별 불가 (ratios too close to tell)",
        (true, false) => "대역폭 비율을 따름 (follows bandwidth)",
        (false, true) if tensor_family(family) => "BF16 peak 비율을 따름 (follows BF16 peak)",
        (false, true) => "FP32 peak 비율을 따름 (follows FP32 peak)",
        (false, false) => "어느 비율도 아님 (follows neither)",
    }
}

/// The caption: the author's text, the verdict rule, each machine's datasheet, "no data" for a
/// machine without results, and one provenance line per machine measured.
fn caption(
    c: &Ctx,
    ms: &[Machine],
    sheets: &[Option<Datasheet>],
    items: &[&Record],
    shared_params: Option<String>,
    footnotes: &[String],
) -> String {
    let mut notes: Vec<String> = shared_params
        .map(|p| format!("<span class=\"params\">{}.</span>", esc(&p)))
        .into_iter()
        .collect();
    notes.push(format!(
        "<span class=\"datasheet\">판정: 측정 비율이 데이터시트 비율의 ±{:.0}% 안이면 그 비율을 따른다고 본다 \
         (memory-bound kernels follow the bandwidth ratio, compute-bound ones the peak ratio).</span>",
        FOLLOWS * 100.0
    ));
    for (m, ds) in ms.iter().zip(sheets) {
        let text = match ds {
            Some(d) => {
                let peak = compute_peak(d, &c.spec.bench)
                    .map(|(v, what)| format!(", {what} {}", fmt_value(Unit::GFlops, v)))
                    .unwrap_or_default();
                format!(
                    "{}: 데이터시트(datasheet, {}) {}{peak}",
                    esc(&m.name),
                    esc(&d.source),
                    fmt_value(Unit::GBs, d.memory_bandwidth_gbs)
                )
            }
            None => format!("{}: 데이터시트 값 없음 (no datasheet)", esc(&m.name)),
        };
        notes.push(format!("<span class=\"datasheet\">{text}.</span>"));
        if m.fam.is_none() {
            notes.push(format!(
                "<span class=\"nodata\">{}: 이 기계의 측정 결과가 아직 없습니다 (no data for {}).</span>",
                esc(&m.name),
                esc(&m.name)
            ));
        }
    }
    let mut h = String::from("<figcaption>");
    if let Some(cap) = c.spec.caption.as_deref() {
        let cap = cap.split_whitespace().collect::<Vec<_>>().join(" ");
        if !cap.is_empty() {
            let _ = write!(h, "{} ", esc(&cap));
        }
    }
    for n in notes.iter().chain(footnotes) {
        let _ = write!(h, "{n} ");
    }
    for m in ms {
        let (Some(file), Some(fam)) = (m.file, m.fam.as_ref()) else {
            continue;
        };
        let used: Vec<&Record> = fam
            .rows
            .iter()
            .filter(|r| items.iter().any(|i| same_item(i, r.rec)))
            .map(|r| r.rec)
            .collect();
        let local = c.local_device.is_some_and(|d| d == file.device.name);
        let _ = write!(
            h,
            "<span class=\"provenance\">{}</span>",
            provenance(&file.device, &used, local)
        );
    }
    h.push_str("</figcaption>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_tells_bandwidth_from_compute() {
        // The H200-to-H100 datasheet ratios: 4.8 / 3.35 for memory, 1 for the peaks.
        let (bw, peak) = (4800.0 / 3350.0, 1.0);
        assert!(verdict(1.40, bw, peak, "bandwidth").contains("follows bandwidth"));
        assert!(verdict(1.02, bw, peak, "tc_gemm").contains("follows BF16 peak"));
        assert!(verdict(1.02, bw, peak, "sgemm").contains("follows FP32 peak"));
        assert!(verdict(1.20, bw, peak, "bandwidth").contains("follows neither"));
        assert!(verdict(1.0, 1.05, 1.0, "bandwidth").contains("too close"));
    }
}
