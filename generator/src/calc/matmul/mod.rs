//! `calc: matmul` — FLOPs, fewest bytes, arithmetic intensity, and which roofline wall one
//! matrix product hits on the H100 (datasheet peaks) and, once measured, on the reader's CPU.
//!
//! Why the H100 column is the datasheet and not a measurement: this is a back-of-the-envelope
//! bound the reader can redo by hand from the printed peaks. The measured figures of the book
//! (`bench:` blocks) are where measured numbers live; the CPU column appears only when a CPU
//! roofline has actually been measured into a results file, and says so.

use super::fmt;
use super::kv::{Fields, KeyDoc, ParseError};
use crate::measure::results::{Outcome, Record, ResultsFile, Timing};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Element type of A, B and C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

pub const DTYPE_NAMES: &[&str] = &["fp32", "tf32", "bf16", "fp16", "fp8"];

impl Dtype {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fp32" => Some(Dtype::Fp32),
            "tf32" => Some(Dtype::Tf32),
            "bf16" => Some(Dtype::Bf16),
            "fp16" => Some(Dtype::Fp16),
            "fp8" => Some(Dtype::Fp8),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }

    /// Bytes per stored element (TF32 is stored in 32-bit words).
    pub fn bytes(self) -> u128 {
        match self {
            Dtype::Fp32 | Dtype::Tf32 => 4,
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp8 => 1,
        }
    }

    /// H100 SXM5 datasheet peak for this type, FLOP/s (dense, no sparsity).
    pub fn h100_peak(self) -> f64 {
        match self {
            Dtype::Fp32 => 67e12,
            Dtype::Tf32 => 494e12,
            Dtype::Bf16 | Dtype::Fp16 => 989e12,
            Dtype::Fp8 => 1979e12,
        }
    }

    /// Which unit of the H100 that peak belongs to.
    pub fn h100_peak_label(self) -> &'static str {
        match self {
            Dtype::Fp32 => "FP32 CUDA core, non-tensor",
            Dtype::Tf32 => "TF32 Tensor Core, dense",
            Dtype::Bf16 => "BF16 Tensor Core, dense",
            Dtype::Fp16 => "FP16 Tensor Core, dense",
            Dtype::Fp8 => "FP8 Tensor Core, dense",
        }
    }
}

/// H100 SXM5 HBM3 bandwidth, B/s (datasheet).
pub const H100_BANDWIDTH: f64 = 3.35e12;
/// Where the H100 numbers come from.
pub const H100_SOURCE: &str = "NVIDIA H100 Tensor Core GPU datasheet (SXM5)";

/// A parsed `calc: matmul` block.
#[derive(Debug, Clone, PartialEq)]
pub struct MatmulSpec {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub dtype: Dtype,
    pub caption: Option<String>,
}

/// Largest accepted dimension: keeps every product far inside u128 and f64's exact range.
pub const MAX_DIM: u64 = 1 << 40;

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "m",
        doc: "rows of A and C, positive integer",
    },
    KeyDoc {
        key: "n",
        doc: "columns of B and C, positive integer",
    },
    KeyDoc {
        key: "k",
        doc: "inner dimension, positive integer",
    },
    KeyDoc {
        key: "dtype",
        doc: "optional: fp32 (default), tf32, bf16, fp16, fp8",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

pub(super) fn parse(f: &Fields) -> Result<MatmulSpec, ParseError> {
    const KIND: &str = "matmul";
    f.only(KIND, KEYS)?;
    let m = f.positive(KIND, "m", MAX_DIM, KEYS)?;
    let n = f.positive(KIND, "n", MAX_DIM, KEYS)?;
    let k = f.positive(KIND, "k", MAX_DIM, KEYS)?;
    let dtype = match f.scalar(KIND, "dtype", KEYS)? {
        None => Dtype::Fp32,
        Some((s, line)) => Dtype::parse(&s).ok_or_else(|| {
            (
                line,
                format!("`calc: matmul`: unknown dtype `{s}`"),
                format!("dtype is one of: {}", DTYPE_NAMES.join(", ")),
            )
        })?,
    };
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(MatmulSpec {
        m,
        n,
        k,
        dtype,
        caption,
    })
}

/// The counts that do not depend on the machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulCounts {
    /// 2·m·n·k.
    pub flops: u128,
    /// (m·k + k·n + m·n)·bytes(dtype): read A and B once, write C once.
    pub bytes: u128,
    /// FLOP per byte.
    pub intensity: f64,
}

pub fn counts(m: u64, n: u64, k: u64, dtype: Dtype) -> MatmulCounts {
    let (m, n, k) = (u128::from(m), u128::from(n), u128::from(k));
    let flops = 2 * m * n * k;
    let bytes = (m * k + k * n + m * n) * dtype.bytes();
    MatmulCounts {
        flops,
        bytes,
        intensity: flops as f64 / bytes as f64,
    }
}

/// Which wall bounds the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wall {
    Memory,
    Compute,
}

/// One machine's roofline applied to the counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// FLOP/B at which the two roofs meet.
    pub ridge: f64,
    pub wall: Wall,
    /// FLOPs / peak, seconds.
    pub compute_floor: f64,
    /// bytes / bandwidth, seconds.
    pub memory_floor: f64,
    /// The larger of the two: no run can be faster.
    pub lower_bound: f64,
    /// min(peak, intensity·bandwidth), FLOP/s.
    pub attainable: f64,
}

pub fn bound(c: &MatmulCounts, peak_flops: f64, bandwidth: f64) -> Bound {
    let ridge = peak_flops / bandwidth;
    let compute_floor = c.flops as f64 / peak_flops;
    let memory_floor = c.bytes as f64 / bandwidth;
    Bound {
        ridge,
        wall: if c.intensity < ridge {
            Wall::Memory
        } else {
            Wall::Compute
        },
        compute_floor,
        memory_floor,
        lower_bound: compute_floor.max(memory_floor),
        attainable: peak_flops.min(c.intensity * bandwidth),
    }
}

/// A CPU roofline measured into a results file.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRoof {
    pub device: String,
    pub file: PathBuf,
    /// Triad bandwidth, B/s.
    pub bandwidth: f64,
    pub triad_label: String,
    /// Matmul baseline throughput, FLOP/s.
    pub peak: f64,
    pub matmul_label: String,
    pub date: String,
}

/// A verified, finite, positive timing.
fn good(r: &Record) -> Option<&Timing> {
    match &r.outcome {
        Outcome::Ok(t)
            if t.median_ms.is_finite()
                && t.median_ms > 0.0
                && t.rel_error.is_finite()
                && t.rel_error <= t.tolerance =>
        {
            Some(t)
        }
        _ => None,
    }
}

/// The CPU roofline in `files`, if one was measured: family "cpu", variant "triad" for bandwidth
/// (the largest problem, the one least helped by caches) and a baseline matmul for compute (the
/// largest problem). When several files hold one, the most recently measured wins; ties go to the
/// file listed first.
pub fn cpu_roof(files: &[(PathBuf, ResultsFile)]) -> Option<CpuRoof> {
    let mut best: Option<CpuRoof> = None;
    for (path, file) in files {
        let cpu: Vec<&Record> = file.records.iter().filter(|r| r.family == "cpu").collect();
        let triad = cpu
            .iter()
            .filter(|r| r.variant == "triad")
            .filter_map(|r| good(r).map(|t| (r, t)))
            .filter(|(_, t)| t.bytes > 0.0 && t.gbs().is_finite() && t.gbs() > 0.0)
            .max_by(|a, b| {
                a.1.bytes
                    .total_cmp(&b.1.bytes)
                    .then(a.1.gbs().total_cmp(&b.1.gbs()))
            });
        let mm = cpu
            .iter()
            .filter(|r| r.baseline && r.variant != "triad")
            .filter_map(|r| good(r).map(|t| (r, t)))
            .filter(|(_, t)| t.flops > 0.0 && t.gflops().is_finite() && t.gflops() > 0.0)
            .max_by(|a, b| {
                a.1.flops
                    .total_cmp(&b.1.flops)
                    .then(a.1.gflops().total_cmp(&b.1.gflops()))
            });
        let (Some((tr, tt)), Some((mr, mt))) = (triad, mm) else {
            continue;
        };
        let date = tr.provenance.date.clone().max(mr.provenance.date.clone());
        let roof = CpuRoof {
            device: file.device.name.clone(),
            file: path.clone(),
            bandwidth: tt.gbs() * 1e9,
            triad_label: tr.label.clone(),
            peak: mt.gflops() * 1e9,
            matmul_label: mr.label.clone(),
            date,
        };
        if best.as_ref().is_none_or(|b| roof.date > b.date) {
            best = Some(roof);
        }
    }
    best
}

fn wall_text(b: &Bound, intensity: f64) -> String {
    let i = fmt::sig_trim(intensity, 4);
    let r = fmt::sig_trim(b.ridge, 4);
    match b.wall {
        Wall::Memory => format!("<strong>memory-bound (메모리 벽)</strong>: {i} &lt; {r}"),
        Wall::Compute => format!("<strong>compute-bound (연산 벽)</strong>: {i} ≥ {r}"),
    }
}

pub(super) fn render(spec: &MatmulSpec, files: &[(PathBuf, ResultsFile)]) -> String {
    let c = counts(spec.m, spec.n, spec.k, spec.dtype);
    let dt = spec.dtype;
    let h100 = bound(&c, dt.h100_peak(), H100_BANDWIDTH);
    let cpu = cpu_roof(files);
    let cpu_b = cpu.as_ref().map(|r| bound(&c, r.peak, r.bandwidth));
    let cols = if cpu.is_some() { 2 } else { 1 };
    let id = format!("calc-matmul-{}x{}x{}-{}", spec.m, spec.n, spec.k, dt.name());
    let eb = dt.bytes();

    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-calc\" id=\"{id}\">");
    h.push_str(
        "<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>항목 (quantity)</th><th>식 (formula)</th>",
    );
    let _ = write!(h, "<th>H100 SXM5 (데이터시트 datasheet)</th>");
    if let Some(r) = &cpu {
        let _ = write!(h, "<th>CPU: {} (측정 measured)</th>", fmt::esc(&r.device));
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
    let shared = |h: &mut String, name: &str, formula: &str, value: String| {
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{formula}</td><td class=\"num\" colspan=\"{cols}\">{value}</td></tr>"
        );
    };
    let per = |h: &mut String, name: &str, formula: &str, a: String, b: Option<String>| {
        let _ = write!(
            h,
            "<tr><td>{name}</td><td>{formula}</td><td class=\"num\">{a}</td>"
        );
        if let Some(b) = b {
            let _ = write!(h, "<td class=\"num\">{b}</td>");
        }
        h.push_str("</tr>\n");
    };
    shared(
        &mut h,
        "연산량 (FLOPs)",
        "2·m·n·k",
        format!("{} FLOP ({})", fmt::int(c.flops), fmt::sci4(c.flops as f64)),
    );
    shared(
        &mut h,
        "최소 메모리 이동량 (minimum bytes)",
        &format!("(m·k + k·n + m·n) · {eb} B"),
        format!("{} B ({})", fmt::int(c.bytes), fmt::bytes_si(c.bytes)),
    );
    shared(
        &mut h,
        "산술 강도 (arithmetic intensity)",
        "FLOPs / bytes",
        format!("{} FLOP/B", fmt::sig_trim(c.intensity, 4)),
    );
    per(
        &mut h,
        "최대 연산 성능 (peak compute)",
        "—",
        format!("{} ({})", fmt::flops_rate(dt.h100_peak()), dt.h100_peak_label()),
        cpu.as_ref()
            .map(|r| format!("{} ({})", fmt::flops_rate(r.peak), fmt::esc(&r.matmul_label))),
    );
    per(
        &mut h,
        "메모리 대역폭 (memory bandwidth)",
        "—",
        format!("{} (HBM3)", fmt::bytes_rate(H100_BANDWIDTH)),
        cpu.as_ref()
            .map(|r| format!("{} ({})", fmt::bytes_rate(r.bandwidth), fmt::esc(&r.triad_label))),
    );
    per(
        &mut h,
        "ridge point",
        "peak / bandwidth",
        format!("{} FLOP/B", fmt::sig_trim(h100.ridge, 4)),
        cpu_b.map(|b| format!("{} FLOP/B", fmt::sig_trim(b.ridge, 4))),
    );
    per(
        &mut h,
        "어느 벽 (which wall)",
        "intensity vs. ridge",
        wall_text(&h100, c.intensity),
        cpu_b.map(|b| wall_text(&b, c.intensity)),
    );
    per(
        &mut h,
        "연산 시간 하한 (compute-time floor)",
        "FLOPs / peak",
        fmt::time(h100.compute_floor),
        cpu_b.map(|b| fmt::time(b.compute_floor)),
    );
    per(
        &mut h,
        "메모리 시간 하한 (memory-time floor)",
        "bytes / bandwidth",
        fmt::time(h100.memory_floor),
        cpu_b.map(|b| fmt::time(b.memory_floor)),
    );
    per(
        &mut h,
        "실행 시간 하한 (lower bound on time)",
        "max(두 하한)",
        format!("<strong>{}</strong>", fmt::time(h100.lower_bound)),
        cpu_b.map(|b| format!("<strong>{}</strong>", fmt::time(b.lower_bound))),
    );
    per(
        &mut h,
        "도달 가능 성능 (attainable)",
        "min(peak, intensity · bandwidth)",
        fmt::flops_rate(h100.attainable),
        cpu_b.map(|b| fmt::flops_rate(b.attainable)),
    );
    h.push_str("</tbody>\n</table>\n</div>\n");
    if cpu.is_none() {
        h.push_str("<p class=\"hdlc-calc-note\">이 컴퓨터 CPU의 roofline(측정한 triad 대역폭과 행렬 곱 기준선)은 CPU 벤치마크를 측정하면 이 표에 한 열로 함께 나타납니다.</p>\n");
    }
    // Caption: what was computed from what, and which numbers are not ours.
    h.push_str("<figcaption>");
    if let Some(cap) = &spec.caption {
        let _ = write!(h, "{} ", fmt::esc(cap.trim()));
    }
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력 m = {}, n = {}, k = {}, dtype = {} (원소당 {eb} B{})에서 계산한 값. \
         가정: C[m×n] = A[m×k]·B[k×n], 세 행렬 모두 dtype으로 저장하고, A와 B를 한 번씩 읽고 C를 한 번 쓰는 것을 최소 이동량으로 셌다. \
         <span class=\"datasheet\">데이터시트 수치(측정값 아님): H100 SXM5 HBM3 {} · {} {} — {H100_SOURCE}.</span>",
        fmt::int(spec.m.into()),
        fmt::int(spec.n.into()),
        fmt::int(spec.k.into()),
        dt.name(),
        if dt == Dtype::Tf32 { ", TF32는 32비트 워드에 저장" } else { "" },
        fmt::bytes_rate(H100_BANDWIDTH),
        dt.h100_peak_label(),
        fmt::flops_rate(dt.h100_peak()),
    );
    if let Some(r) = &cpu {
        let _ = write!(
            h,
            " <span class=\"provenance\">CPU 열은 측정값: {} — 대역폭은 {}, 연산 성능은 {} 측정값 (그 커널의 정밀도에서; {}, {}).</span>",
            fmt::esc(&r.device),
            fmt::esc(&r.triad_label),
            fmt::esc(&r.matmul_label),
            fmt::esc(&r.file.display().to_string()),
            fmt::esc(&r.date),
        );
    }
    h.push_str("</figcaption>\n</figure>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp32_4096_cubed() {
        let c = counts(4096, 4096, 4096, Dtype::Fp32);
        assert_eq!(c.flops, 137_438_953_472);
        assert_eq!(c.bytes, 201_326_592);
        assert!((c.intensity - 682.666_666).abs() < 1e-3);
        let b = bound(&c, Dtype::Fp32.h100_peak(), H100_BANDWIDTH);
        assert_eq!(b.wall, Wall::Compute);
        assert!((b.ridge - 67.0 / 3.35).abs() < 1e-9);
        assert!((b.compute_floor - 137_438_953_472.0 / 67e12).abs() < 1e-15);
    }

    #[test]
    fn skinny_product_is_memory_bound() {
        // A matrix-vector product: intensity about 2 FLOP per 2-byte weight = ~1 FLOP/B.
        let c = counts(4096, 1, 4096, Dtype::Bf16);
        let b = bound(&c, Dtype::Bf16.h100_peak(), H100_BANDWIDTH);
        assert_eq!(b.wall, Wall::Memory);
        assert_eq!(b.lower_bound, b.memory_floor);
    }
}
