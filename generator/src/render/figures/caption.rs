//! The HTML around a drawing: figure ids, the "no data" box, captions and the provenance line.
//!
//! Why apart: every measured figure must name the machine, date, commit and repetitions it was
//! measured with, and say what its baseline and datasheet peak were, in the same words; views
//! only hand over the records they used.

use super::classify::Unit;
use super::family::{display_rank, SizeAxis};
use super::format::{esc, fmt_value, group};
use super::Ctx;
use crate::figspec::{Devices, FigureSpec};
use crate::measure::results::{DeviceInfo, Outcome, Record};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A name as a piece of an HTML id: lower-case ASCII letters, digits and dashes.
pub(super) fn figure_id_part(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

pub(super) fn figure_id(spec: &FigureSpec) -> String {
    let clean = figure_id_part;
    let id = match spec.size {
        Some(s) => format!("fig-{}-{}-{s}", clean(&spec.bench), clean(&spec.show)),
        None => format!("fig-{}-{}", clean(&spec.bench), clean(&spec.show)),
    };
    match &spec.device {
        Some(Devices::One(d)) => format!("{id}-{}", clean(d)),
        Some(Devices::List(v)) => {
            let parts: Vec<String> = v.iter().map(|d| clean(d)).collect();
            format!("{id}-{}", parts.join("-"))
        }
        Some(Devices::All) => format!("{id}-all"),
        Some(Devices::Invalid(_)) | None => id,
    }
}

pub(super) fn no_data(spec: &FigureSpec, id: &str, size: Option<u64>) -> String {
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

pub(super) fn figure(c: &Ctx, svg: &str, used: &[&Record], notes: &[String]) -> String {
    format!(
        "<figure class=\"hdlc-figure\" id=\"{}\">\n{}\n{}</figure>",
        c.id,
        svg.trim_end(),
        figcaption(c, used, notes)
    )
}

pub(super) fn figcaption(c: &Ctx, used: &[&Record], notes: &[String]) -> String {
    caption_html(
        c.spec.caption.as_deref(),
        notes,
        &provenance(&c.file.device, used, c.local),
    )
}

/// `<figcaption>`: the author's caption, the notes, then the provenance (already HTML).
pub(super) fn caption_html(caption: Option<&str>, notes: &[String], provenance: &str) -> String {
    let mut h = String::from("<figcaption>");
    if let Some(cap) = caption {
        let cap = cap.split_whitespace().collect::<Vec<_>>().join(" ");
        if !cap.is_empty() {
            let _ = write!(h, "<span class=\"hdlc-caption\">{}</span> ", esc(&cap));
        }
    }
    for n in notes {
        let _ = write!(h, "{n} ");
    }
    h.push_str(provenance);
    h.push_str("</figcaption>\n");
    h
}

/// The provenance of a figure: one short line that stays visible (which machine, and whether it
/// is this computer's own measurement or the shipped one), the rest folded under it (compute
/// capability, SMs, memory, driver and toolkit versions, dates, commits, repetitions, and
/// `extra`, e.g. framework versions). Why folded: a reader needs the machine at a glance; the
/// versions are for checking, and three grey lines under every figure drown the caption.
pub(super) fn provenance(d: &DeviceInfo, used: &[&Record], local: bool) -> String {
    provenance_with(d, used, local, "")
}

pub(super) fn provenance_with(d: &DeviceInfo, used: &[&Record], local: bool, extra: &str) -> String {
    // CPU results (`cpubench`) are always this machine's own: measured or cached on it.
    let cpu = d.compute_capability == "cpu";
    let local = local || cpu;
    let summary = format!(
        "측정: {} · {}",
        esc(&d.name),
        if local {
            "이 컴퓨터에서 측정 (measured on this machine)"
        } else {
            "저장소에 포함된 결과 (shipped)"
        }
    );
    let mut parts = provenance_parts(d, used, cpu);
    if !extra.is_empty() {
        parts.push(extra.to_string());
    }
    format!(
        "<details class=\"provenance\"><summary>{summary}</summary>{}</details>",
        parts.join(" · ")
    )
}

/// The folded details of a provenance: device, toolchain, dates, commits, repetitions.
fn provenance_parts(d: &DeviceInfo, used: &[&Record], cpu: bool) -> Vec<String> {
    let mut parts = Vec::new();
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
    parts
}

/// The baseline and, where the device has one, the matching datasheet peak, for the caption.
pub(super) fn baseline_note(c: &Ctx, base: Option<(&Record, f64)>) -> Vec<String> {
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
pub(super) fn tensor_family(family: &str) -> bool {
    family == "tc_gemm" || family == "tp_gemm" || family == "attention" || family == LOWP
}

/// The 8-bit GEMM family: its ceiling is the FP8/INT8 tensor peak, twice the BF16 one.
const LOWP: &str = "lowp_gemm";

/// The datasheet compute peak (GFLOP/s) that matches a family, with its name.
pub(super) fn compute_peak(
    ds: &crate::measure::results::Datasheet,
    family: &str,
) -> Option<(f64, &'static str)> {
    if family == LOWP {
        ds.fp8_tensor_tflops
            .map(|t| (t * 1e3, "FP8/INT8 tensor peak (dense)"))
    } else if tensor_family(family) {
        ds.bf16_tensor_tflops.map(|t| (t * 1e3, "BF16 tensor peak"))
    } else {
        Some((ds.fp32_tflops * 1e3, "FP32 peak"))
    }
}

pub(super) fn datasheet_value(d: &DeviceInfo, unit: Unit, family: &str) -> Option<f64> {
    let ds = d.datasheet.as_ref()?;
    let v = match unit {
        Unit::GBs => ds.memory_bandwidth_gbs,
        Unit::GFlops => compute_peak(ds, family)?.0,
    };
    (v.is_finite() && v > 0.0).then_some(v)
}

/// A chart title in words: the family's name, then what was fixed ("SGEMM (FP32 행렬 곱) ·
/// M = N = K = 4,096").
pub(super) fn title_of(family: &str, params: &str) -> String {
    let name = crate::metric_names::family_title(family);
    if params.is_empty() {
        name
    } else {
        format!("{name} · {params}")
    }
}

/// The parameters of a record in words, for a chart title: "M = N = K = 4,096",
/// "N = 4,096 · d = 128 · causal".
pub(super) fn size_text(axis: &SizeAxis, r: &Record) -> String {
    if r.params.is_empty() {
        return String::new();
    }
    if axis.locked {
        return format!("{} = {}", axis.label, group(axis.size(r)));
    }
    let mut keys: Vec<&String> = r.params.keys().collect();
    keys.sort_by_key(|k| display_rank(k));
    crate::metric_names::params_text(&r.family, keys.iter().map(|k| (k.as_str(), r.params[*k])))
}
