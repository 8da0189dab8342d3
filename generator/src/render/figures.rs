//! Measured figures: benchmark results → one HTML block (inline SVG, or a table) for a card page.
//!
//! Why drawn here, at build time, as inline SVG: the book is offline and must show the numbers of
//! the machine they were measured on, in light and dark themes alike. So every figure names its
//! machine in a provenance line, text and axes are drawn in `currentColor` (the page's foreground),
//! and the background is left transparent.
//!
//! Rules the views share:
//! - A failed record (or one that is not a trustworthy number: unverified, NaN, zero time) is never
//!   drawn as a number; it appears as a row or legend entry marked "실패" with its stage.
//! - Output is deterministic (same input → same bytes) and has no blank line and no `<?xml`
//!   header, because CommonMark ends an HTML block at the first blank line.
//! - Odd input never panics: it gives the "no data" box or an `Err` naming the problem.

mod lab;

pub use lab::render_lab_figure;

use crate::figspec::{benches, FigureSpec, VIEWS};
use crate::measure::results::{DeviceInfo, FailStage, Outcome, Record, ResultsFile};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Width of every chart in SVG user units; the SVG scales down with the page.
const WIDTH: u32 = 640;
/// Colors that read on both light and dark backgrounds (Tableau 10).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x9c, 0x75, 0x5f),
];
/// Baselines (memcpy, cuBLAS) and datasheet references.
const GRAY: RGBColor = RGBColor(0x9a, 0x9a, 0x9a);
/// Failure marks.
const FAIL: RGBColor = RGBColor(0xe1, 0x57, 0x59);
/// Text and axes are drawn in this color and rewritten to `currentColor` afterwards.
const INK: RGBColor = BLACK;
const FONT: &str = "sans-serif";
/// Text sizes in SVG user units (≈ CSS px at full width).
const BODY: f64 = 12.5;
const SMALL: f64 = 11.5;
const HEAD: f64 = 13.5;
/// plotters writes `font-size` as the requested size / 1.24; ask for this much more.
const PLOTTERS_FONT_SCALE: f64 = 1.24;
/// Text drawn on top of a colored bar: fixed, since the bar colors are fixed.
const ON_BAR_DARK: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
const ON_BAR_LIGHT: RGBColor = RGBColor(0xff, 0xff, 0xff);

/// The text color with the higher WCAG contrast on a bar color.
fn on_bar(bar: RGBColor) -> RGBColor {
    let lum = |c: RGBColor| {
        let ch = |v: u8| {
            let v = v as f64 / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * ch(c.0) + 0.7152 * ch(c.1) + 0.0722 * ch(c.2)
    };
    let b = lum(bar);
    let contrast = |t: RGBColor| {
        let l = lum(t);
        (l.max(b) + 0.05) / (l.min(b) + 0.05)
    };
    if contrast(ON_BAR_LIGHT) > contrast(ON_BAR_DARK) {
        ON_BAR_LIGHT
    } else {
        ON_BAR_DARK
    }
}

/// Render one figure as an HTML fragment for an mdBook page.
///
/// `files` are the results files available (local measurements and the shipped ones);
/// `local_device` is the name of this machine's GPU, if it has one.
pub fn render_figure(
    spec: &FigureSpec,
    files: &[(PathBuf, ResultsFile)],
    local_device: Option<&str>,
) -> Result<String, String> {
    if !benches().contains(&spec.bench.as_str()) {
        return Err(format!(
            "unknown benchmark `{}` (known: {})",
            spec.bench,
            benches().join(", ")
        ));
    }
    if !VIEWS.contains(&spec.show.as_str()) {
        return Err(format!(
            "unknown figure view `{}` (known: {})",
            spec.show,
            VIEWS.join(", ")
        ));
    }
    let id = figure_id(spec);
    let Some(file) = choose_file(&spec.bench, files, local_device) else {
        return Ok(no_data(spec, &id, None));
    };
    let fam = Family::new(&spec.bench, file);
    let local = local_device.is_some_and(|d| d == file.device.name);
    let ctx = Ctx {
        spec,
        file,
        fam: &fam,
        local,
        id,
    };
    match spec.show.as_str() {
        "ladder" => ladder(&ctx),
        "roofline" => roofline(&ctx),
        "scaling" => scaling(&ctx),
        _ => table(&ctx),
    }
}

/// Everything a view needs.
struct Ctx<'a> {
    spec: &'a FigureSpec,
    file: &'a ResultsFile,
    fam: &'a Family<'a>,
    local: bool,
    id: String,
}

// ---------------------------------------------------------------------------------------------
// Choosing data

/// The file to draw from: this machine's measurements if they cover the family, else the shipped
/// file of an H100, else the first file that covers it.
fn choose_file<'a>(
    family: &str,
    files: &'a [(PathBuf, ResultsFile)],
    local: Option<&str>,
) -> Option<&'a ResultsFile> {
    let unit = Unit::of(family);
    let covers = |f: &ResultsFile| {
        f.records
            .iter()
            .any(|r| r.family == family && matches!(classify(r, unit), State::Ok(_)))
    };
    let candidates: Vec<&ResultsFile> = files.iter().map(|(_, f)| f).filter(|f| covers(f)).collect();
    if let Some(l) = local {
        if let Some(f) = candidates.iter().find(|f| f.device.name == l) {
            return Some(f);
        }
    }
    candidates
        .iter()
        .find(|f| f.device.name.contains("H100"))
        .or_else(|| candidates.first())
        .copied()
}

/// What a figure plots on its value axis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    /// Memory families: GB/s moved.
    GBs,
    /// Matrix products: GFLOP/s (shown as TFLOP/s from 1000 on).
    GFlops,
}

impl Unit {
    fn of(family: &str) -> Unit {
        // FLOP/s for the matrix products ("…gemm") and attention: one rule, in measure::store.
        // The CPU family's figures draw its matrix-product ladder (its bandwidth runs are roofs).
        if crate::measure::uses_flops(family) || family == CPU {
            Unit::GFlops
        } else {
            Unit::GBs
        }
    }
    /// Factor from the stored unit to the drawn one, and the drawn unit's name.
    fn display(self, max: f64) -> (f64, &'static str) {
        match self {
            Unit::GBs => (1.0, "GB/s"),
            Unit::GFlops if max >= 1000.0 => (1e-3, "TFLOP/s"),
            Unit::GFlops => (1.0, "GFLOP/s"),
        }
    }
}

/// A record judged: either a number we may draw or a failure we must not.
#[derive(Clone, Copy, Debug)]
enum State {
    Ok(Meas),
    Failed(&'static str),
}

#[derive(Clone, Copy, Debug)]
struct Meas {
    median_ms: f64,
    /// p10 and p90 of the time, when they are sane.
    spread_ms: Option<(f64, f64)>,
    /// GB/s or GFLOP/s, by the family's unit.
    value: f64,
    /// The value at p90 and p10 time (low, high).
    spread: Option<(f64, f64)>,
    gflops: f64,
    intensity: f64,
    rel_error: f64,
}

fn stage_text(stage: FailStage) -> &'static str {
    match stage {
        FailStage::Compile => "실패 · compile failed (compile)",
        FailStage::Launch => "실패 · launch failed (launch)",
        FailStage::Verify => "실패 · verification failed (verify)",
        FailStage::Unsupported => "측정하지 않음 · skipped (unsupported)",
        FailStage::Crash => "실패 · lab crashed (crash)",
        FailStage::Timeout => "실패 · lab timed out (timeout)",
        FailStage::Output => "실패 · lab printed invalid records (output)",
    }
}
const UNVERIFIED: &str = "실패 · verification failed (verify)";
const INVALID: &str = "실패 · invalid timing (measure)";

fn classify(rec: &Record, unit: Unit) -> State {
    let t = match &rec.outcome {
        Outcome::Failed { stage, .. } => return State::Failed(stage_text(*stage)),
        Outcome::Ok(t) => t,
    };
    if !(t.rel_error.is_finite()
        && t.tolerance.is_finite()
        && t.rel_error >= 0.0
        && t.rel_error <= t.tolerance)
    {
        return State::Failed(UNVERIFIED);
    }
    let pos = |x: f64| x.is_finite() && x > 0.0;
    let nonneg = |x: f64| x.is_finite() && x >= 0.0;
    if !pos(t.median_ms) || !nonneg(t.flops) || !nonneg(t.bytes) || t.reps == 0 {
        return State::Failed(INVALID);
    }
    let per_s = |work: f64, ms: f64| work / (ms * 1e-3) / 1e9;
    let work = match unit {
        Unit::GBs => t.bytes,
        Unit::GFlops => t.flops,
    };
    let value = per_s(work, t.median_ms);
    let gflops = per_s(t.flops, t.median_ms);
    let intensity = t.intensity();
    if !pos(value) || !nonneg(gflops) || !nonneg(intensity) {
        return State::Failed(INVALID);
    }
    let eps = 1e-9 * t.median_ms;
    let spread_ms =
        (pos(t.p10_ms) && pos(t.p90_ms) && t.p10_ms <= t.median_ms + eps && t.p90_ms + eps >= t.median_ms)
            .then_some((t.p10_ms, t.p90_ms));
    let spread = spread_ms
        .map(|(p10, p90)| (per_s(work, p90), per_s(work, p10)))
        .filter(|(lo, hi)| pos(*lo) && pos(*hi));
    State::Ok(Meas {
        median_ms: t.median_ms,
        spread_ms,
        value,
        spread,
        gflops,
        intensity,
        rel_error: t.rel_error,
    })
}

/// Which parameter is "the size" of a family's records, and how to name it.
#[derive(Debug)]
struct SizeAxis {
    /// The parameter read as the size (None: records have no parameters).
    key: Option<String>,
    /// e.g. "n" or "m = n = k".
    label: String,
    /// Parameters that take more than one value across the family, in display order.
    varying: Vec<String>,
    /// All varying parameters are equal within each record (m = n = k).
    locked: bool,
}

fn key_rank(k: &str) -> (usize, &str) {
    const ORDER: [&str; 8] = ["m", "n", "k", "batch", "rows", "cols", "seq", "d"];
    (ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len()), k)
}

impl SizeAxis {
    fn new(recs: &[&Record]) -> SizeAxis {
        let mut keys: BTreeSet<&str> = BTreeSet::new();
        for r in recs {
            keys.extend(r.params.keys().map(|k| k.as_str()));
        }
        let mut varying: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| {
                recs.iter()
                    .map(|r| r.params.get(*k))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect();
        varying.sort_by_key(|k| key_rank(k));
        let locked = varying.len() > 1
            && recs.iter().all(|r| {
                varying
                    .iter()
                    .map(|k| r.params.get(*k))
                    .collect::<BTreeSet<_>>()
                    .len()
                    == 1
            });
        let key = if varying.is_empty() {
            keys.iter().copied().min_by_key(|k| (*k != "n", key_rank(k)))
        } else if locked {
            varying.iter().copied().min_by_key(|k| (*k != "n", key_rank(k)))
        } else {
            varying
                .iter()
                .copied()
                .min_by_key(|k| (*k != "n", *k != "cols", key_rank(k)))
        };
        let label = match key {
            Some(_) if locked => varying.join(" = "),
            Some(k) => k.to_string(),
            None => "size".to_string(),
        };
        SizeAxis {
            key: key.map(str::to_string),
            label,
            varying: varying.into_iter().map(str::to_string).collect(),
            locked,
        }
    }

    fn size(&self, r: &Record) -> u64 {
        self.key
            .as_ref()
            .and_then(|k| r.params.get(k))
            .copied()
            .unwrap_or(0)
    }

    /// Whether two records agree on every varying parameter other than the size.
    fn same_others(&self, a: &Record, b: &Record) -> bool {
        self.locked
            || self
                .varying
                .iter()
                .filter(|k| Some(*k) != self.key.as_ref())
                .all(|k| a.params.get(k) == b.params.get(k))
    }

    /// The parameters of a record as shown in a table cell.
    fn cell(&self, r: &Record) -> String {
        if self.locked || self.varying.len() <= 1 {
            return match &self.key {
                Some(_) => group(self.size(r)),
                None => "—".to_string(),
            };
        }
        self.varying
            .iter()
            .map(|k| {
                format!(
                    "{k}={}",
                    r.params.get(k).map(|v| group(*v)).unwrap_or_else(|| "—".into())
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn header(&self) -> String {
        if self.locked || self.varying.len() <= 1 {
            self.label.clone()
        } else {
            "params".to_string()
        }
    }
}

struct Row<'a> {
    rec: &'a Record,
    size: u64,
    state: State,
}

impl Row<'_> {
    fn meas(&self) -> Option<&Meas> {
        match &self.state {
            State::Ok(m) => Some(m),
            State::Failed(_) => None,
        }
    }
}

/// One benchmark family's records in one results file.
struct Family<'a> {
    name: String,
    unit: Unit,
    axis: SizeAxis,
    /// Sorted by other parameters, size, baseline last, rung, variant.
    rows: Vec<Row<'a>>,
    /// Kernel variants (not baselines) in rung order: their index picks their color.
    variants: Vec<&'a str>,
}

impl<'a> Family<'a> {
    fn new(name: &str, file: &'a ResultsFile) -> Family<'a> {
        let unit = Unit::of(name);
        let recs: Vec<&Record> = file
            .records
            .iter()
            .filter(|r| r.family == name && (name != CPU || r.baseline || r.variant.starts_with("matmul")))
            .collect();
        let axis = SizeAxis::new(&recs);
        let mut rows: Vec<Row> = recs
            .iter()
            .map(|r| Row {
                rec: r,
                size: axis.size(r),
                state: classify(r, unit),
            })
            .collect();
        rows.sort_by(|a, b| {
            (&a.rec.params, a.size, a.rec.baseline, a.rec.rung, &a.rec.variant).cmp(&(
                &b.rec.params,
                b.size,
                b.rec.baseline,
                b.rec.rung,
                &b.rec.variant,
            ))
        });
        let mut v: Vec<(u32, &str)> = recs
            .iter()
            .filter(|r| !r.baseline)
            .map(|r| (r.rung, r.variant.as_str()))
            .collect();
        v.sort();
        let mut variants: Vec<&str> = Vec::new();
        for (_, name) in v {
            if !variants.contains(&name) {
                variants.push(name);
            }
        }
        Family {
            name: name.to_string(),
            unit,
            axis,
            rows,
            variants,
        }
    }

    fn color(&self, rec: &Record) -> RGBColor {
        if rec.baseline {
            return GRAY;
        }
        let i = self.variants.iter().position(|v| *v == rec.variant).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    }

    /// The record whose parameters a single-size view draws: at the requested size, or the
    /// largest size with a valid measurement; a baseline if there is one.
    fn reference(&self, size: Option<u64>) -> Option<&Row<'a>> {
        let target = match size {
            Some(s) => s,
            None => self
                .rows
                .iter()
                .filter(|r| r.meas().is_some())
                .map(|r| r.size)
                .max()?,
        };
        let at: Vec<&Row> = self.rows.iter().filter(|r| r.size == target).collect();
        at.iter()
            .find(|r| r.rec.baseline && r.meas().is_some())
            .or_else(|| at.iter().find(|r| r.meas().is_some()))
            .or_else(|| at.first())
            .copied()
    }

    /// Rows with exactly these parameters, baseline last, one per variant.
    fn at_params(&self, params: &BTreeMap<String, u64>) -> Vec<&Row<'a>> {
        let mut out: Vec<&Row> = self.rows.iter().filter(|r| &r.rec.params == params).collect();
        out.sort_by(|a, b| {
            (a.rec.baseline, a.rec.rung, &a.rec.variant).cmp(&(b.rec.baseline, b.rec.rung, &b.rec.variant))
        });
        out.dedup_by(|a, b| a.rec.variant == b.rec.variant);
        out
    }
}

/// The measured baseline among rows of one parameter set.
fn baseline_of<'r>(rows: &[&'r Row<'_>]) -> Option<(&'r Record, Meas)> {
    rows.iter()
        .filter(|r| r.rec.baseline)
        .find_map(|r| r.meas().map(|m| (r.rec, *m)))
}

/// A measured baseline of another family in the same file (memcpy bandwidth, cuBLAS FLOP/s):
/// the valid baseline record at that family's largest size.
/// The family the CPU roofline benchmark (`cpubench`) writes.
const CPU: &str = crate::figspec::CPU_BENCH;

/// The CPU's memory roof: its all-core triad, in GB/s.
fn cpu_triad(file: &ResultsFile) -> Option<(&Record, Meas)> {
    let r = file
        .records
        .iter()
        .find(|r| r.family == CPU && r.variant == "triad")?;
    let m = *Row {
        rec: r,
        size: 0,
        state: classify(r, Unit::GBs),
    }
    .meas()?;
    Some((r, m))
}

fn roof_of<'f>(file: &'f ResultsFile, family: &str) -> Option<(&'f Record, Meas)> {
    let fam = Family::new(family, file);
    let r = fam
        .rows
        .iter()
        .filter(|r| r.rec.baseline && r.meas().is_some())
        .max_by_key(|r| (r.size, std::cmp::Reverse(r.rec.rung)))?;
    Some((r.rec, *r.meas()?))
}

// ---------------------------------------------------------------------------------------------
// Views

fn ladder(c: &Ctx) -> Result<String, String> {
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
    let (scale, unit_name) = fam.unit.display(max.max(ds.unwrap_or(0.0)));

    let n = rows.len().max(1);
    const LEFT: u32 = 215;
    const TOP: u32 = 40;
    const ROW: u32 = 30;
    const BOTTOM: u32 = 46;
    let height = TOP + ROW * n as u32 + BOTTOM + 6;
    let mut xmax = max * scale * 1.45;
    if let Some(d) = ds {
        xmax = xmax.max(d * scale * 1.12);
    }
    if !(xmax.is_finite() && xmax > 0.0) {
        xmax = 1.0;
    }
    let header = format!("{} · {}", fam.name, size_text(&fam.axis, reference.rec));
    let x_desc = match &base {
        Some((r, _)) => format!(
            "achieved {unit_name} (median; whisker p10–p90; % of {})",
            short(&r.label, 24)
        ),
        None => format!("achieved {unit_name} (median; whisker p10–p90)"),
    };

    let svg = draw(height, |root| {
        text(root, &header, (8, 4), HEAD, INK, Pos::new(HPos::Left, VPos::Top))?;
        let mut chart = ChartBuilder::on(root)
            .margin_top(TOP)
            .margin_right(16)
            .margin_bottom(6)
            .x_label_area_size(BOTTOM)
            .y_label_area_size(LEFT)
            .build_cartesian_2d(0f64..xmax, 0f64..n as f64)
            .map_err(de)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(6)
            .x_label_formatter(&|v| tick(*v))
            .x_desc(x_desc.as_str())
            .axis_style(INK.mix(0.6))
            .bold_line_style(INK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .label_style(font(BODY))
            .axis_desc_style(font(BODY))
            .draw()
            .map_err(de)?;
        // Pixel extent of the text written in each row, so the datasheet line can pass around it.
        let mut texts: Vec<(usize, i32, i32)> = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let yc = n as f64 - i as f64 - 0.5;
            let (x0, py) = chart.backend_coord(&(0.0, yc));
            text(
                root,
                &short(&row.rec.label, 28),
                (x0 - 8, py),
                BODY,
                INK,
                Pos::new(HPos::Right, VPos::Center),
            )?;
            let Some(m) = row.meas() else {
                let State::Failed(why) = row.state else { continue };
                text(
                    root,
                    why,
                    (x0 + 6, py),
                    BODY,
                    FAIL,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
                texts.push((i, x0 + 6, x0 + 6 + text_width(why, BODY).ceil() as i32));
                continue;
            };
            let color = fam.color(row.rec);
            let v = m.value * scale;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, yc - 0.3), (v, yc + 0.3)],
                    color.filled(),
                )))
                .map_err(de)?;
            if row.rec.baseline {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, yc - 0.3), (v, yc + 0.3)],
                        INK.mix(0.5).stroke_width(1),
                    )))
                    .map_err(de)?;
            }
            let mut right = v;
            let mut left = v;
            if let Some((lo, hi)) = m.spread {
                let (lo, hi) = (lo * scale, hi * scale);
                let w = INK.mix(0.75).stroke_width(1);
                chart
                    .draw_series(std::iter::once(PathElement::new(vec![(lo, yc), (hi, yc)], w)))
                    .map_err(de)?;
                for x in [lo, hi] {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(x, yc - 0.14), (x, yc + 0.14)],
                            w,
                        )))
                        .map_err(de)?;
                }
                right = right.max(hi);
                left = left.min(lo);
            }
            let (pr, _) = chart.backend_coord(&(right, yc));
            let (pl, _) = chart.backend_coord(&(left, yc));
            let label = match (&base, row.rec.baseline) {
                (_, true) => format!("{} · baseline", fmt_value(fam.unit, m.value)),
                (Some((_, b)), false) => {
                    format!("{} · {}", fmt_value(fam.unit, m.value), pct(m.value / b.value))
                }
                (None, false) => fmt_value(fam.unit, m.value),
            };
            let w = text_width(&label, BODY).ceil() as i32;
            if pl - x0 >= w + 16 {
                // On the bar when it fits (keeps the right side clear for the datasheet line), in
                // whichever fixed color reads better on the bar's fixed color.
                text(
                    root,
                    &label,
                    (x0 + 6, py),
                    BODY,
                    on_bar(color),
                    Pos::new(HPos::Left, VPos::Center),
                )?;
                texts.push((i, x0 + 6, x0 + 6 + w));
            } else {
                text(
                    root,
                    &label,
                    (pr + 6, py),
                    BODY,
                    INK,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
                texts.push((i, pr + 6, pr + 6 + w));
            }
        }
        if let Some(d) = ds {
            let x = d * scale;
            let (px, py) = chart.backend_coord(&(x, n as f64));
            for i in 0..n {
                if texts
                    .iter()
                    .any(|&(row, a, b)| row == i && a - 4 <= px && px <= b + 4)
                {
                    continue;
                }
                let (y0, y1) = (n as f64 - i as f64 - 1.0, n as f64 - i as f64);
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x, y0), (x, y1)],
                        5,
                        4,
                        GRAY.stroke_width(1),
                    ))
                    .map_err(de)?;
            }
            let label = format!("datasheet {}", fmt_value(fam.unit, d));
            let half = (text_width(&label, SMALL) / 2.0).ceil() as i32;
            let px = px.min(WIDTH as i32 - 4 - half);
            text(
                root,
                &label,
                (px, py - 4),
                SMALL,
                INK,
                Pos::new(HPos::Center, VPos::Bottom),
            )?;
        }
        Ok(())
    })?;
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let notes = baseline_note(c, base.map(|(r, m)| (r, m.value)));
    Ok(figure(c, &svg, &used, &notes))
}

fn roofline(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    if fam
        .rows
        .iter()
        .filter_map(|r| r.meas())
        .all(|m| m.gflops <= 0.0 || m.intensity <= 0.0)
    {
        return Err(format!(
            "benchmark `{}` counts no floating-point operations, so it has no place on a roofline; use `show: ladder` or `show: scaling`",
            fam.name
        ));
    }
    let Some(reference) = fam.reference(c.spec.size) else {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    };
    let rows = fam.at_params(&reference.rec.params);
    let points: Vec<(&Row, Meas)> = rows
        .iter()
        .filter_map(|r| r.meas().map(|m| (*r, *m)))
        .filter(|(_, m)| m.gflops > 0.0 && m.intensity > 0.0)
        .collect();
    if points.is_empty() {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let dev = &c.file.device;
    let cpu = c.spec.bench == CPU;
    let bw_meas = if cpu {
        cpu_triad(c.file)
    } else {
        roof_of(c.file, "bandwidth")
    };
    let tensor = tensor_family(&c.spec.bench);
    let cublas = roof_of(
        c.file,
        if cpu {
            CPU
        } else if tensor {
            "tc_gemm"
        } else {
            "sgemm"
        },
    );
    let ds = dev
        .datasheet
        .as_ref()
        .filter(|d| d.memory_bandwidth_gbs.is_finite() && d.fp32_tflops.is_finite());
    // (GB/s, label, measured?)
    let bw_roof: Option<(f64, String, bool)> = match (&bw_meas, ds) {
        (Some((r, m)), _) => Some((
            m.value,
            format!(
                "{} {} (measured)",
                short(&r.label, 24),
                fmt_value(Unit::GBs, m.value)
            ),
            true,
        )),
        (None, Some(d)) if d.memory_bandwidth_gbs > 0.0 => Some((
            d.memory_bandwidth_gbs,
            format!(
                "memory {} (datasheet)",
                fmt_value(Unit::GBs, d.memory_bandwidth_gbs)
            ),
            false,
        )),
        _ => None,
    };
    let mut flat: Vec<(f64, String, bool)> = Vec::new();
    if let Some((r, m)) = &cublas {
        flat.push((
            m.gflops,
            format!(
                "{} {} (measured)",
                short(&r.label, 24),
                fmt_value(Unit::GFlops, m.gflops)
            ),
            true,
        ));
    }
    if let Some((peak, name)) = ds
        .and_then(|d| compute_peak(d, &c.spec.bench))
        .filter(|p| p.0 > 0.0)
    {
        flat.push((
            peak,
            format!("{name} {} (datasheet)", fmt_value(Unit::GFlops, peak)),
            false,
        ));
    }

    let imin = points
        .iter()
        .map(|(_, m)| m.intensity)
        .fold(f64::INFINITY, f64::min);
    let imax = points.iter().map(|(_, m)| m.intensity).fold(0.0, f64::max);
    let top = flat.iter().map(|f| f.0).fold(0.0, f64::max);
    let ridge = match (&bw_roof, top > 0.0) {
        (Some((bw, ..)), true) => top / bw,
        _ => imax,
    };
    let (x_lo, x_hi) = log_range(imin.min(ridge) / 3.0, imax.max(ridge) * 3.0);
    let ymin_pt = points.iter().map(|(_, m)| m.gflops).fold(f64::INFINITY, f64::min);
    let ymax_pt = points.iter().map(|(_, m)| m.gflops).fold(0.0, f64::max);
    let (y_lo, y_hi) = log_range(ymin_pt / 2.5, ymax_pt.max(top) * 2.5);
    if ![x_lo, x_hi, y_lo, y_hi].iter().all(|v| v.is_finite() && *v > 0.0) {
        return Err(format!(
            "benchmark `{}`: results give no finite range for a roofline",
            fam.name
        ));
    }

    let failed: Vec<&Row> = rows.iter().copied().filter(|r| r.meas().is_none()).collect();
    const PLOT_H: u32 = 400;
    let height = PLOT_H + 20 * failed.len() as u32 + 8;
    let header = format!(
        "{} · {} · FLOP/s vs arithmetic intensity (log–log)",
        fam.name,
        size_text(&fam.axis, reference.rec)
    );

    let svg = draw(height, |root| {
        let (upper, lower) = root.split_vertically(PLOT_H);
        text(
            &upper,
            &header,
            (8, 4),
            HEAD,
            INK,
            Pos::new(HPos::Left, VPos::Top),
        )?;
        let mut chart = ChartBuilder::on(&upper)
            .margin_top(28)
            .margin_right(20)
            .margin_left(8)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_labels(10)
            .y_labels(10)
            .x_label_formatter(&|v| log_tick(*v))
            .y_label_formatter(&|v| log_tick(*v))
            .x_desc("arithmetic intensity (FLOP/byte)")
            .y_desc("GFLOP/s")
            .axis_style(INK.mix(0.6))
            .bold_line_style(INK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .label_style(font(BODY))
            .axis_desc_style(font(BODY))
            .draw()
            .map_err(de)?;

        // Roofs: the memory diagonal up to the highest ceiling, each ceiling from its ridge on.
        if let Some((bw, label, measured)) = &bw_roof {
            let x_start = x_lo.max(y_lo / bw);
            let x_end = if top > 0.0 {
                (top / bw).min(x_hi)
            } else {
                x_hi.min(y_hi / bw)
            };
            if x_end > x_start {
                let pts = [(x_start, bw * x_start), (x_end, bw * x_end)];
                if *measured {
                    chart
                        .draw_series(LineSeries::new(pts, INK.mix(0.8).stroke_width(2)))
                        .map_err(de)?;
                } else {
                    chart
                        .draw_series(DashedLineSeries::new(pts, 6, 4, INK.mix(0.6).stroke_width(2)))
                        .map_err(de)?;
                }
                // Above the diagonal, ending on it: kernels sit below their roofs, not here.
                let (sx, sy) = chart.backend_coord(&(x_start, bw * x_start));
                let (ex, ey) = chart.backend_coord(&(x_end, bw * x_end));
                let w = text_width(label, SMALL).ceil() as i32;
                if sx + w + 12 <= ex {
                    let px = (sx + w + 12).max((sx + ex) / 2);
                    let py = if ex > sx {
                        sy + (ey - sy) * (px - sx) / (ex - sx)
                    } else {
                        sy
                    };
                    text(
                        &upper,
                        label,
                        (px - 6, py - 6),
                        SMALL,
                        INK,
                        Pos::new(HPos::Right, VPos::Bottom),
                    )?;
                } else {
                    // A short diagonal (compute-bound view): below its foot, where the line rises away.
                    text(
                        &upper,
                        label,
                        (sx + 10, sy + 4),
                        SMALL,
                        INK,
                        Pos::new(HPos::Left, VPos::Top),
                    )?;
                }
            }
        }
        for (gf, label, measured) in &flat {
            let x_start = bw_roof.as_ref().map_or(x_lo, |(bw, ..)| (gf / bw).max(x_lo));
            if x_start >= x_hi {
                continue;
            }
            let pts = [(x_start, *gf), (x_hi, *gf)];
            // Labels start just right of the ridge point: kernels sit far right (compute-bound)
            // or left of the ridge (memory-bound), rarely here.
            let (px, py) = chart.backend_coord(&(x_start, *gf));
            let px = px.min(WIDTH as i32 - 24 - text_width(label, SMALL).ceil() as i32);
            if *measured {
                chart
                    .draw_series(LineSeries::new(pts, INK.mix(0.8).stroke_width(2)))
                    .map_err(de)?;
                text(
                    &upper,
                    label,
                    (px + 8, py + 4),
                    SMALL,
                    INK,
                    Pos::new(HPos::Left, VPos::Top),
                )?;
            } else {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, INK.mix(0.6).stroke_width(2)))
                    .map_err(de)?;
                text(
                    &upper,
                    label,
                    (px + 8, py - 4),
                    SMALL,
                    INK,
                    Pos::new(HPos::Left, VPos::Bottom),
                )?;
            }
        }

        // Points, labels spread apart vertically so they do not overlap.
        let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
        let mid = (plot_x.start + plot_x.end) / 2;
        // A baseline that is itself a roof (cuBLAS on the sgemm roofline) is labelled by its roof.
        let is_roof = |r: &Record| {
            bw_meas
                .iter()
                .chain(cublas.iter())
                .any(|(b, _)| std::ptr::eq(*b, r))
        };
        for (r, m) in points.iter().filter(|(r, _)| is_roof(r.rec)) {
            let p = chart.backend_coord(&(m.intensity, m.gflops));
            upper
                .draw(&Circle::new(p, 5, fam.color(r.rec).filled()))
                .map_err(de)?;
            upper
                .draw(&Circle::new(p, 5, INK.mix(0.7).stroke_width(1)))
                .map_err(de)?;
        }
        let mut placed: Vec<(i32, i32, i32, String, RGBColor, bool)> = points
            .iter()
            .filter(|(r, _)| !is_roof(r.rec))
            .map(|(r, m)| {
                let (px, py) = chart.backend_coord(&(m.intensity, m.gflops));
                (px, py, py, short(&r.rec.label, 28), fam.color(r.rec), px > mid)
            })
            .collect();
        placed.sort_by_key(|p| (p.1, p.0));
        for side in [false, true] {
            let idx: Vec<usize> = (0..placed.len()).filter(|&i| placed[i].5 == side).collect();
            let mut last: Option<i32> = None;
            for &i in &idx {
                placed[i].2 = last.map_or(placed[i].2, |l| placed[i].2.max(l + 14));
                last = Some(placed[i].2);
            }
            let Some(last) = last else { continue };
            let overflow = last - (plot_y.end - 8);
            if overflow > 0 {
                for &i in &idx {
                    placed[i].2 -= overflow;
                }
            }
        }
        for (px, py, ly, label, color, left) in &placed {
            upper
                .draw(&Circle::new((*px, *py), 5, color.filled()))
                .map_err(de)?;
            upper
                .draw(&Circle::new((*px, *py), 5, INK.mix(0.7).stroke_width(1)))
                .map_err(de)?;
            let lx = if *left { px - 12 } else { px + 12 };
            if (ly - py).abs() > 3 {
                let ex = if *left { px - 6 } else { px + 6 };
                upper
                    .draw(&PathElement::new(
                        vec![(ex, *py), (lx, *ly)],
                        INK.mix(0.4).stroke_width(1),
                    ))
                    .map_err(de)?;
            }
            let anchor = if *left { HPos::Right } else { HPos::Left };
            text(
                &upper,
                label,
                (lx + if *left { -2 } else { 2 }, *ly),
                BODY,
                INK,
                Pos::new(anchor, VPos::Center),
            )?;
        }
        for (i, r) in failed.iter().enumerate() {
            let y = 10 + 20 * i as i32;
            let State::Failed(why) = r.state else { continue };
            text(
                &lower,
                &format!("{} — {} (not plotted)", short(&r.rec.label, 30), why),
                (80, y),
                BODY,
                FAIL,
                Pos::new(HPos::Left, VPos::Center),
            )?;
        }
        Ok(())
    })?;

    let mut used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    used.extend(bw_meas.iter().map(|(r, _)| *r));
    used.extend(cublas.iter().map(|(r, _)| *r));
    let mut notes = Vec::new();
    let mut ref_parts = Vec::new();
    if let Some((r, m)) = &bw_meas {
        ref_parts.push(format!(
            "{} {} (측정)",
            esc(&r.label),
            fmt_value(Unit::GBs, m.value)
        ));
    }
    if let Some((r, m)) = &cublas {
        ref_parts.push(format!(
            "{} {} (측정)",
            esc(&r.label),
            fmt_value(Unit::GFlops, m.gflops)
        ));
    }
    if !ref_parts.is_empty() {
        notes.push(format!(
            "<span class=\"baseline\">기준선(baseline): {}</span>",
            ref_parts.join(" · ")
        ));
    }
    if let Some(d) = ds {
        notes.push(format!(
            "<span class=\"datasheet\">데이터시트(datasheet, {}): 메모리 {} · {}</span>",
            esc(&d.source),
            fmt_value(Unit::GBs, d.memory_bandwidth_gbs),
            compute_peak(d, &c.spec.bench)
                .map(|(v, n)| format!("{n} {}", fmt_value(Unit::GFlops, v)))
                .unwrap_or_default()
        ));
    }
    Ok(figure(c, &svg, &used, &notes))
}

/// One line of the scaling view: a variant's points (log2 size, value) and its failures.
struct Series<'a> {
    rec: &'a Record,
    points: Vec<(f64, f64)>,
    failed: Vec<(u64, &'static str)>,
}

fn scaling(c: &Ctx) -> Result<String, String> {
    let fam = c.fam;
    let Some(reference) = fam.reference(c.spec.size) else {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    };
    let rows: Vec<&Row> = fam
        .rows
        .iter()
        .filter(|r| r.size > 0 && fam.axis.same_others(r.rec, reference.rec))
        .collect();
    // One series per variant, kernels in rung order, baselines last.
    let mut series: Vec<Series> = Vec::new();
    let mut order: Vec<&Row> = rows.clone();
    order.sort_by(|a, b| {
        (a.rec.baseline, a.rec.rung, &a.rec.variant, a.size).cmp(&(
            b.rec.baseline,
            b.rec.rung,
            &b.rec.variant,
            b.size,
        ))
    });
    for r in order {
        if series.last().is_none_or(|s| s.rec.variant != r.rec.variant) {
            series.push(Series {
                rec: r.rec,
                points: Vec::new(),
                failed: Vec::new(),
            });
        }
        let s = series.last_mut().expect("pushed above");
        match r.state {
            State::Ok(m) => {
                if s.points.last().is_none_or(|p| p.0 != (r.size as f64).log2()) {
                    s.points.push(((r.size as f64).log2(), m.value));
                }
            }
            State::Failed(why) => s.failed.push((r.size, why)),
        }
    }
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    if max <= 0.0 {
        return Ok(no_data(c.spec, &c.id, c.spec.size));
    }
    let (scale, unit_name) = fam.unit.display(max);
    let xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let (mut x0, mut x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let (x0, x1) = (x0 - 0.35, x1 + 0.35);
    let ymax = max * scale * 1.12;
    const PLOT_H: u32 = 340;
    const LINE: u32 = 20;
    // Legend: one line per variant, one more per kind of failure it had.
    let legend: Vec<(&Record, Vec<String>)> = series
        .iter()
        .map(|s| {
            let mut by_why: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for (size, why) in &s.failed {
                by_why.entry(why).or_default().push(group(*size));
            }
            (
                s.rec,
                by_why
                    .into_iter()
                    .map(|(why, sizes)| format!("{why} — {} = {}", fam.axis.label, sizes.join(", ")))
                    .collect(),
            )
        })
        .collect();
    let lines: u32 = legend.iter().map(|(_, f)| 1 + f.len() as u32).sum();
    let height = PLOT_H + LINE * lines + 10;
    let fixed: Vec<String> = fam
        .axis
        .varying
        .iter()
        .filter(|k| !fam.axis.locked && Some(*k) != fam.axis.key.as_ref())
        .filter_map(|k| {
            reference
                .rec
                .params
                .get(k)
                .map(|v| format!("{k} = {}", group(*v)))
        })
        .collect();
    let header = if fixed.is_empty() {
        format!("{} · {} vs {}", fam.name, unit_name, fam.axis.label)
    } else {
        format!(
            "{} · {} vs {} ({})",
            fam.name,
            unit_name,
            fam.axis.label,
            fixed.join(", ")
        )
    };

    let svg = draw(height, |root| {
        let (upper, lower) = root.split_vertically(PLOT_H);
        text(
            &upper,
            &header,
            (8, 4),
            HEAD,
            INK,
            Pos::new(HPos::Left, VPos::Top),
        )?;
        let mut chart = ChartBuilder::on(&upper)
            .margin_top(28)
            .margin_right(20)
            .margin_left(8)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x0..x1, 0f64..ymax)
            .map_err(de)?;
        chart
            .configure_mesh()
            .x_labels((x1 - x0).ceil() as usize + 1)
            .y_labels(6)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-6 {
                    size_tick(2f64.powf(v.round()))
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| tick(*v))
            .x_desc(fam.axis.label.clone())
            .y_desc(unit_name)
            .axis_style(INK.mix(0.6))
            .bold_line_style(INK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .label_style(font(BODY))
            .axis_desc_style(font(BODY))
            .draw()
            .map_err(de)?;
        for Series { rec, points: pts, .. } in &series {
            let color = fam.color(rec);
            let pts: Vec<(f64, f64)> = pts.iter().map(|(x, y)| (*x, y * scale)).collect();
            if rec.baseline {
                chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, color.stroke_width(2)))
                    .map_err(de)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(de)?;
            }
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(de)?;
        }
        let mut y = 10 - LINE as i32;
        for (rec, failed) in &legend {
            y += LINE as i32;
            let color = fam.color(rec);
            if rec.baseline {
                lower
                    .draw(&PathElement::new(vec![(80, y), (88, y)], color.stroke_width(2)))
                    .map_err(de)?;
                lower
                    .draw(&PathElement::new(vec![(92, y), (100, y)], color.stroke_width(2)))
                    .map_err(de)?;
            } else {
                lower
                    .draw(&PathElement::new(vec![(80, y), (100, y)], color.stroke_width(2)))
                    .map_err(de)?;
            }
            lower.draw(&Circle::new((90, y), 3, color.filled())).map_err(de)?;
            let name = if rec.baseline {
                format!("{} (baseline)", short(&rec.label, 30))
            } else {
                short(&rec.label, 30)
            };
            text(
                &lower,
                &name,
                (108, y),
                BODY,
                INK,
                Pos::new(HPos::Left, VPos::Center),
            )?;
            for note in failed {
                y += LINE as i32;
                text(
                    &lower,
                    note,
                    (108, y),
                    SMALL,
                    FAIL,
                    Pos::new(HPos::Left, VPos::Center),
                )?;
            }
        }
        Ok(())
    })?;
    let used: Vec<&Record> = rows.iter().map(|r| r.rec).collect();
    let at_ref = fam.at_params(&reference.rec.params);
    let notes = baseline_note(c, baseline_of(&at_ref).map(|(r, m)| (r, m.value)));
    Ok(figure(c, &svg, &used, &notes))
}

fn table(c: &Ctx) -> Result<String, String> {
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

// ---------------------------------------------------------------------------------------------
// HTML around the drawings

fn figure_id(spec: &FigureSpec) -> String {
    let clean = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>()
    };
    match spec.size {
        Some(s) => format!("fig-{}-{}-{s}", clean(&spec.bench), clean(&spec.show)),
        None => format!("fig-{}-{}", clean(&spec.bench), clean(&spec.show)),
    }
}

fn no_data(spec: &FigureSpec, id: &str, size: Option<u64>) -> String {
    let what = match size {
        Some(s) => format!(
            "<code>{}</code> ({}, size = {s})",
            esc(&spec.bench),
            esc(&spec.show)
        ),
        None => format!("<code>{}</code> ({})", esc(&spec.bench), esc(&spec.show)),
    };
    format!(
        "<div class=\"hdlc-figure hdlc-nodata\" id=\"{id}\" role=\"note\">\n<p>이 그림의 측정 결과가 아직 없습니다: {what}. \
         GPU가 있는 컴퓨터에서 벤치마크를 실행하면 이 자리에 측정값이 그려집니다.</p>\n</div>"
    )
}

fn figure(c: &Ctx, svg: &str, used: &[&Record], notes: &[String]) -> String {
    format!(
        "<figure class=\"hdlc-figure\" id=\"{}\">\n{}\n{}</figure>",
        c.id,
        svg.trim_end(),
        figcaption(c, used, notes)
    )
}

fn figcaption(c: &Ctx, used: &[&Record], notes: &[String]) -> String {
    let mut h = String::from("<figcaption>");
    if let Some(cap) = &c.spec.caption {
        let cap = cap.split_whitespace().collect::<Vec<_>>().join(" ");
        if !cap.is_empty() {
            let _ = write!(h, "{} ", esc(&cap));
        }
    }
    for n in notes {
        let _ = write!(h, "{n} ");
    }
    let _ = write!(
        h,
        "<span class=\"provenance\">{}</span>",
        provenance(&c.file.device, used, c.local)
    );
    h.push_str("</figcaption>\n");
    h
}

fn provenance(d: &DeviceInfo, used: &[&Record], local: bool) -> String {
    // CPU results (`cpubench`) are always this machine's own: measured or cached on it.
    let cpu = d.compute_capability == "cpu";
    let local = local || cpu;
    let mut parts = vec![format!("측정: {}", esc(&d.name))];
    if !d.compute_capability.is_empty() && !cpu {
        parts.push(format!("CC {}", esc(&d.compute_capability)));
    }
    if d.sm_count > 0 {
        parts.push(if cpu {
            format!("{} cores", d.sm_count)
        } else {
            format!("{} SMs", d.sm_count)
        });
    }
    if d.memory_bytes > 0 {
        parts.push(format!("{:.1} GiB", d.memory_bytes as f64 / (1u64 << 30) as f64));
    }
    for (name, v) in [
        ("driver", &d.driver_version),
        ("CUDA", &d.cuda_version),
        ("NVRTC", &d.nvrtc_version),
    ] {
        if !v.is_empty() && v != "n/a" {
            parts.push(format!("{name} {}", esc(v)));
        }
    }
    let dates: BTreeSet<&str> = used
        .iter()
        .map(|r| r.provenance.date.get(..10).unwrap_or(&r.provenance.date))
        .filter(|s| !s.is_empty())
        .collect();
    match (dates.first(), dates.last()) {
        (Some(a), Some(b)) if a == b => parts.push(esc(a)),
        (Some(a), Some(b)) => parts.push(format!("{}–{}", esc(a), esc(b))),
        _ => {}
    }
    let commits: BTreeSet<&str> = used
        .iter()
        .map(|r| {
            r.provenance
                .git_commit
                .get(..7)
                .unwrap_or(&r.provenance.git_commit)
        })
        .filter(|s| !s.is_empty())
        .collect();
    if !commits.is_empty() {
        let list: Vec<String> = commits.iter().take(3).map(|c| esc(c)).collect();
        let more = if commits.len() > 3 {
            format!(" +{}", commits.len() - 3)
        } else {
            String::new()
        };
        parts.push(format!("commit {}{more}", list.join(", ")));
    }
    let reps: BTreeSet<u32> = used
        .iter()
        .filter_map(|r| {
            if let Outcome::Ok(t) = &r.outcome {
                Some(t.reps)
            } else {
                None
            }
        })
        .filter(|r| *r > 0)
        .collect();
    match (reps.first(), reps.last()) {
        (Some(a), Some(b)) if a == b => parts.push(format!("{a} reps")),
        (Some(a), Some(b)) => parts.push(format!("{a}–{b} reps")),
        _ => {}
    }
    parts.push(if local {
        "이 컴퓨터에서 측정 (measured on this machine)".into()
    } else {
        "저장소에 포함된 결과 (shipped)".into()
    });
    parts.join(" · ")
}

/// The baseline and, where the device has one, the matching datasheet peak, for the caption.
fn baseline_note(c: &Ctx, base: Option<(&Record, f64)>) -> Vec<String> {
    let mut out = Vec::new();
    let unit = c.fam.unit;
    let ds = datasheet_value(&c.file.device, unit, &c.spec.bench);
    let ds_text = c.file.device.datasheet.as_ref().zip(ds).map(|(d, v)| {
        format!(
            "데이터시트(datasheet, {}): {}",
            esc(&d.source),
            fmt_value(unit, v)
        )
    });
    match (base, ds_text) {
        (Some((r, v)), Some(d)) => out.push(format!(
            "<span class=\"baseline\">기준선(baseline): {} {} (측정) · {d}</span>",
            esc(&r.label),
            fmt_value(unit, v)
        )),
        (Some((r, v)), None) => out.push(format!(
            "<span class=\"baseline\">기준선(baseline): {} {} (측정)</span>",
            esc(&r.label),
            fmt_value(unit, v)
        )),
        (None, Some(d)) => out.push(format!("<span class=\"datasheet\">{d}</span>")),
        (None, None) => {}
    }
    out
}

/// The datasheet peak matching a unit: memory bandwidth (GB/s) or FP32 (GFLOP/s).
/// Families that run on the tensor cores in BF16: their compute ceiling is the BF16 tensor
/// peak and cuBLAS BF16 GEMM, not the FP32 CUDA-core peak and SGEMM.
fn tensor_family(family: &str) -> bool {
    family == "tc_gemm" || family == "attention"
}

/// The datasheet compute peak (GFLOP/s) that matches a family, with its name.
fn compute_peak(ds: &crate::measure::results::Datasheet, family: &str) -> Option<(f64, &'static str)> {
    if tensor_family(family) {
        ds.bf16_tensor_tflops.map(|t| (t * 1e3, "BF16 tensor peak"))
    } else {
        Some((ds.fp32_tflops * 1e3, "FP32 peak"))
    }
}

fn datasheet_value(d: &DeviceInfo, unit: Unit, family: &str) -> Option<f64> {
    let ds = d.datasheet.as_ref()?;
    let v = match unit {
        Unit::GBs => ds.memory_bandwidth_gbs,
        Unit::GFlops => compute_peak(ds, family)?.0,
    };
    (v.is_finite() && v > 0.0).then_some(v)
}

fn size_text(axis: &SizeAxis, r: &Record) -> String {
    if r.params.is_empty() {
        return "no parameters".into();
    }
    if axis.locked {
        return format!("{} = {}", axis.label, group(axis.size(r)));
    }
    let mut keys: Vec<&String> = r.params.keys().collect();
    keys.sort_by_key(|k| key_rank(k));
    keys.iter()
        .map(|k| format!("{k} = {}", group(r.params[*k])))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------
// SVG plumbing

fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("figure drawing failed: {e:?}")
}

fn font(size: f64) -> TextStyle<'static> {
    (FONT, size * PLOTTERS_FONT_SCALE).into_font().color(&INK)
}

fn text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    at: (i32, i32),
    size: f64,
    color: RGBColor,
    pos: Pos,
) -> Result<(), String> {
    let style = (FONT, size * PLOTTERS_FONT_SCALE)
        .into_font()
        .color(&color)
        .pos(pos);
    area.draw(&Text::new(s.to_string(), at, style)).map_err(de)
}

/// Draw onto a fresh SVG canvas and post-process the result for an mdBook page.
fn draw<F>(height: u32, f: F) -> Result<String, String>
where
    F: FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
{
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        f(&root)?;
        root.present().map_err(de)?;
    }
    Ok(finish_svg(&buf, height))
}

/// Theme-proof, responsive, blank-line-free SVG: the ink color becomes `currentColor`, the fixed
/// width becomes `width="100%"` with a max-width, and any `<?xml` line or empty line goes.
fn finish_svg(raw: &str, height: u32) -> String {
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with("<?xml") {
            continue;
        }
        if line.starts_with("<svg") {
            let _ = writeln!(
                out,
                "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 {WIDTH} {height}\" preserveAspectRatio=\"xMidYMid meet\" \
                 style=\"max-width:{WIDTH}px;height:auto;color:var(--fg)\" font-family=\"{FONT}\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">"
            );
            continue;
        }
        out.push_str(&round_font_size(&line.replace("#000000", "currentColor")));
        out.push('\n');
    }
    out
}

/// `font-size="10.080645161290322"` → `font-size="10.1"`: shorter, and what was asked for.
fn round_font_size(line: &str) -> String {
    const KEY: &str = "font-size=\"";
    let Some(start) = line.find(KEY).map(|i| i + KEY.len()) else {
        return line.to_string();
    };
    let Some(len) = line[start..].find('"') else {
        return line.to_string();
    };
    match line[start..start + len].parse::<f64>() {
        Ok(v) => format!(
            "{}{}{}",
            &line[..start],
            trim_num(&format!("{v:.1}")),
            &line[start + len..]
        ),
        Err(_) => line.to_string(),
    }
}

fn trim_num(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------
// Numbers and text

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Rough width of a line of text in SVG units: no font metrics without font-kit, so
/// an average Latin glyph is taken as 0.6 em and a Hangul/CJK one as 1 em.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| {
            if c.is_ascii() {
                0.6
            } else if c < '\u{1100}' {
                0.7
            } else {
                1.0
            }
        })
        .sum::<f64>()
        * size
}

/// One line of text, at most `max` characters.
fn short(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= max {
        s
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Thousands separators: 268435456 → "268,435,456".
fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A value with its unit and fixed precision.
fn fmt_value(unit: Unit, v: f64) -> String {
    let num = |x: f64| {
        if !x.is_finite() {
            "—".to_string()
        } else if x >= 100.0 {
            group(x.round() as u64)
        } else if x >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.2}")
        }
    };
    match unit {
        Unit::GBs => format!("{} GB/s", num(v)),
        Unit::GFlops if v >= 1000.0 => format!("{} TFLOP/s", num(v / 1e3)),
        Unit::GFlops => format!("{} GFLOP/s", num(v)),
    }
}

fn pct(ratio: f64) -> String {
    let p = ratio * 100.0;
    if !p.is_finite() {
        "—".into()
    } else if p >= 1000.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 10.0 {
        format!("{v:.2}")
    } else if v >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// An axis tick: integers grouped, fractions with as few decimals as they need.
/// Log-axis label: only 1, 2 and 5 times a power of ten, so labels never crowd a decade.
fn log_tick(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6 * m)
    {
        tick(v)
    } else {
        String::new()
    }
}

fn tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 1.0 && (v - v.round()).abs() < 1e-9 * v.abs().max(1.0) {
        let r = v.round();
        return if r < 0.0 {
            format!("-{}", group((-r) as u64))
        } else {
            group(r as u64)
        };
    }
    for d in 1..=6 {
        let s = format!("{v:.d$}");
        if (s.parse::<f64>().unwrap_or(f64::NAN) - v).abs() <= 1e-9 * v.abs().max(1e-12) {
            return s;
        }
    }
    format!("{v:.2e}")
}

/// A problem size on an axis: small ones in full, large powers of two as 2^k.
fn size_tick(v: f64) -> String {
    if !v.is_finite() || v < 1.0 {
        return String::new();
    }
    let n = v.round() as u64;
    if n >= 100_000 && n.is_power_of_two() {
        const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
        let exp: String = n
            .trailing_zeros()
            .to_string()
            .chars()
            .map(|d| SUP[d.to_digit(10).unwrap_or(0) as usize])
            .collect();
        format!("2{exp}")
    } else {
        group(n)
    }
}

/// A log-axis range around [lo, hi] spanning at least two decades, so that it has ticks.
fn log_range(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = (lo.max(1e-6), hi.max(lo * 10.0));
    let span = hi / lo;
    if span >= 100.0 {
        (lo, hi)
    } else {
        let k = (100.0 / span).sqrt();
        (lo / k, hi * k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_fixed_precision() {
        assert_eq!(group(268_435_456), "268,435,456");
        assert_eq!(group(12), "12");
        assert_eq!(fmt_value(Unit::GBs, 2949.6), "2,950 GB/s");
        assert_eq!(fmt_value(Unit::GFlops, 51234.0), "51.2 TFLOP/s");
        assert_eq!(fmt_value(Unit::GFlops, 512.4), "512 GFLOP/s");
        assert_eq!(pct(0.8173), "81.7%");
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(1000.0), "1,000");
        assert_eq!(size_tick(268_435_456.0), "2²⁸");
        assert_eq!(tick(0.0), "0");
        assert_eq!(size_tick(4096.0), "4,096");
        assert_eq!(short("a  very\nlong label", 8), "a very …");
    }
}
