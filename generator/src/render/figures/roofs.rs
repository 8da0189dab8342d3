//! The roofs of a roofline: the memory roof (measured copy bandwidth, else the datasheet's) and
//! the compute roofs (measured cuBLAS, the datasheet peak), with their labels and caption notes.
//!
//! Why apart from the view: which baselines count as roofs, what the caption says about them,
//! and where their lines and labels go (wrapped, clear of the points, apart from each other) is
//! one concern; the view only places points and their numbers.

use super::prelude::*;
use crate::measure::results::Datasheet;

/// One roof: value (GB/s for the memory roof, GFLOP/s for a compute roof), label, measured?
pub(super) struct Roof {
    pub(super) value: f64,
    pub(super) label: String,
    pub(super) measured: bool,
}

pub(super) struct Roofs<'a> {
    pub(super) bw: Option<Roof>,
    pub(super) flat: Vec<Roof>,
    /// The measured records the roofs come from.
    pub(super) bw_meas: Option<(&'a Record, Meas)>,
    pub(super) cublas: Option<(&'a Record, Meas)>,
    ds: Option<&'a Datasheet>,
}

impl Roofs<'_> {
    /// The highest compute roof (0 without one).
    pub(super) fn top(&self) -> f64 {
        self.flat.iter().map(|f| f.value).fold(0.0, f64::max)
    }

    /// Caption notes: the measured baselines and the datasheet values the roofs come from.
    pub(super) fn notes(&self, c: &Ctx) -> Vec<String> {
        let mut notes = Vec::new();
        let mut parts = Vec::new();
        if let Some((r, m)) = &self.bw_meas {
            parts.push(format!(
                "{} {} (측정)",
                esc(&r.label),
                fmt_value(Unit::GBs, m.value)
            ));
        }
        if let Some((r, m)) = &self.cublas {
            parts.push(format!(
                "{} {} (측정)",
                esc(&r.label),
                fmt_value(Unit::GFlops, m.gflops)
            ));
        }
        if !parts.is_empty() {
            notes.push(format!(
                "<span class=\"baseline\">기준선(baseline): {}</span>",
                parts.join(" · ")
            ));
        }
        if let Some(d) = self.ds {
            notes.push(format!(
                "<span class=\"datasheet\">데이터시트(datasheet, {}): 메모리 {} · {}</span>",
                esc(&d.source),
                fmt_value(Unit::GBs, d.memory_bandwidth_gbs),
                compute_peak(d, &c.spec.bench)
                    .map(|(v, n)| format!("{n} {}", fmt_value(Unit::GFlops, v)))
                    .unwrap_or_default()
            ));
        }
        notes
    }
}

/// The roofs of the figure's machine for its family.
pub(super) fn roofs<'a>(c: &Ctx<'a>) -> Roofs<'a> {
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
    let bw = match (&bw_meas, ds) {
        (Some((r, m)), _) => Some(Roof {
            value: m.value,
            label: format!("{} {} (측정)", r.label, fmt_value(Unit::GBs, m.value)),
            measured: true,
        }),
        (None, Some(d)) if d.memory_bandwidth_gbs > 0.0 => Some(Roof {
            value: d.memory_bandwidth_gbs,
            label: format!(
                "메모리 {} (datasheet)",
                fmt_value(Unit::GBs, d.memory_bandwidth_gbs)
            ),
            measured: false,
        }),
        _ => None,
    };
    let mut flat = Vec::new();
    if let Some((r, m)) = &cublas {
        flat.push(Roof {
            value: m.gflops,
            label: format!("{} {} (측정)", r.label, fmt_value(Unit::GFlops, m.gflops)),
            measured: true,
        });
    }
    if let Some((peak, name)) = ds
        .and_then(|d| compute_peak(d, &c.spec.bench))
        .filter(|p| p.0 > 0.0)
    {
        flat.push(Roof {
            value: peak,
            label: format!("{name} {} (datasheet)", fmt_value(Unit::GFlops, peak)),
            measured: false,
        });
    }
    Roofs {
        bw,
        flat,
        bw_meas,
        cublas,
        ds,
    }
}

/// Boxes of text already placed (x0, y0, x1, y1), so later labels can avoid them.
pub(super) type Boxes = Vec<(f64, f64, f64, f64)>;

pub(super) fn overlaps(b: (f64, f64, f64, f64), placed: &Boxes) -> bool {
    placed
        .iter()
        .any(|p| b.0 < p.2 && p.0 < b.2 && b.1 < p.3 && p.1 < b.3)
}

/// The memory diagonal up to the highest roof, each flat roof from its ridge on, and their labels
/// (flat ones right-aligned above their line, pushed apart when two roofs are close).
pub(super) fn draw_roofs<DB: DrawingBackend>(
    to_px: &dyn Fn((f64, f64)) -> (i32, i32),
    (plot_left, plot_right): (i32, i32),
    root: &DrawingArea<DB, plotters::coord::Shift>,
    r: &Roofs,
    (x_lo, x_hi, y_lo, y_hi): (f64, f64, f64, f64),
    placed: &mut Boxes,
) -> Result<(), String> {
    let top = r.top();
    let line = |a: (f64, f64), b: (f64, f64), measured: bool| -> Result<(), String> {
        let (pa, pb) = (to_px(a), to_px(b));
        let style = if measured {
            INK.mix(0.8).stroke_width(2)
        } else {
            INK.mix(0.6).stroke_width(2)
        };
        if measured {
            root.draw(&PathElement::new(vec![pa, pb], style)).map_err(de)
        } else {
            let pts = dashes(pa, pb);
            for seg in pts {
                root.draw(&PathElement::new(seg, style)).map_err(de)?;
            }
            Ok(())
        }
    };
    if let Some(bw) = &r.bw {
        let x_start = x_lo.max(y_lo / bw.value);
        let x_end = if top > 0.0 {
            (top / bw.value).min(x_hi)
        } else {
            x_hi.min(y_hi / bw.value)
        };
        if x_end > x_start {
            line(
                (x_start, bw.value * x_start),
                (x_end, bw.value * x_end),
                bw.measured,
            )?;
            let (sx, sy) = to_px((x_start, bw.value * x_start));
            // Under the diagonal's foot, where kernels that are memory-bound sit above it.
            let lines = wrap(&bw.label, (plot_right - sx) as f64 - 16.0, SMALL);
            let b = label_box(
                &lines,
                sx as f64 + 10.0,
                sy as f64 + 4.0 + lines.len() as f64 * ROOF_LH,
            );
            draw_label(root, &lines, b)?;
            placed.push(b);
        }
    }
    let mut flat: Vec<&Roof> = r.flat.iter().collect();
    flat.sort_by(|a, b| b.value.total_cmp(&a.value));
    let mut last_bottom = f64::NEG_INFINITY;
    let right = plot_right as f64 - 4.0;
    for roof in flat {
        let x_start = r.bw.as_ref().map_or(x_lo, |bw| (roof.value / bw.value).max(x_lo));
        if x_start >= x_hi {
            continue;
        }
        line((x_start, roof.value), (x_hi, roof.value), roof.measured)?;
        let (sx, py) = to_px((x_start, roof.value));
        // Wrapped to the plot's width; above its line at the right end, or just right of the
        // ridge when points sit there, or under the line; below the previous label when two
        // roofs are close.
        let lines = wrap(&roof.label, right - plot_left as f64 - 8.0, SMALL);
        let tw = lines.iter().map(|l| text_width(l, SMALL)).fold(0.0, f64::max);
        let h = lines.len() as f64 * ROOF_LH;
        let above = (py as f64 - 3.0).max(last_bottom + h + 1.0);
        let under = (py as f64 + 3.0 + h).max(last_bottom + h + 1.0);
        let left = (sx.max(plot_left) as f64 + 8.0).min(right - tw);
        let mut spots = vec![
            label_box(&lines, right - tw, above),
            label_box(&lines, left, above),
            label_box(&lines, right - tw, under),
            label_box(&lines, left, under),
        ];
        // Pushed down onto its own line by the label above: under the line reads better.
        if above > py as f64 - 2.0 {
            spots.rotate_left(2);
        }
        let b = spots
            .into_iter()
            .find(|b| !overlaps(*b, placed))
            .unwrap_or(label_box(&lines, right - tw, above));
        draw_label(root, &lines, b)?;
        placed.push(b);
        last_bottom = b.3;
    }
    Ok(())
}

/// Line height of roof labels.
const ROOF_LH: f64 = 16.5;

/// The box of a label of `lines` whose left edge is `x` and bottom `bottom`.
fn label_box(lines: &[String], x: f64, bottom: f64) -> (f64, f64, f64, f64) {
    let w = lines.iter().map(|l| text_width(l, SMALL)).fold(0.0, f64::max);
    (x, bottom - lines.len() as f64 * ROOF_LH, x + w, bottom)
}

fn draw_label<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    lines: &[String],
    b: (f64, f64, f64, f64),
) -> Result<(), String> {
    for (i, l) in lines.iter().enumerate() {
        let y = b.1 + (i as f64 + 0.5) * ROOF_LH;
        text(
            root,
            l,
            (b.0 as i32, y as i32),
            SMALL,
            INK,
            Pos::new(HPos::Left, VPos::Center),
        )?;
    }
    Ok(())
}

/// A dashed line as segments of 6 px with gaps of 4 px.
fn dashes(a: (i32, i32), b: (i32, i32)) -> Vec<Vec<(i32, i32)>> {
    let (dx, dy) = ((b.0 - a.0) as f64, (b.1 - a.1) as f64);
    let len = (dx * dx + dy * dy).sqrt();
    if len < 1.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut t = 0.0;
    while t < len {
        let e = (t + 6.0).min(len);
        let p = |s: f64| {
            (
                (a.0 as f64 + dx * s / len) as i32,
                (a.1 as f64 + dy * s / len) as i32,
            )
        };
        out.push(vec![p(t), p(e)]);
        t += 10.0;
    }
    out
}
