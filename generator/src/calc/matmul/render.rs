//! The `calc: matmul` table: the machine-free counts across all columns, then one column per
//! machine (the H100 from its datasheet, the reader's CPU when measured) for the roofline
//! bound, and a caption that says which numbers are computed, which measured, which cited.

use super::{bound, counts, Bound, Dtype, MatmulCounts, MatmulSpec, Wall};
use super::{cpu_roof, CpuRoof, H100_BANDWIDTH, H100_SOURCE};
use crate::calc::fmt;
use crate::calc::html;
use crate::measure::results::ResultsFile;
use std::fmt::Write as _;
use std::path::PathBuf;

fn wall_text(b: &Bound, intensity: f64) -> String {
    let i = fmt::sig_trim(intensity, 4);
    let r = fmt::sig_trim(b.ridge, 4);
    match b.wall {
        Wall::Memory => format!("<strong>memory-bound (메모리 벽)</strong>: {i} &lt; {r}"),
        Wall::Compute => format!("<strong>compute-bound (연산 벽)</strong>: {i} ≥ {r}"),
    }
}

pub(in crate::calc) fn render(spec: &MatmulSpec, files: &[(PathBuf, ResultsFile)]) -> String {
    let c = counts(spec.m, spec.n, spec.k, spec.dtype);
    let dt = spec.dtype;
    let cpu = cpu_roof(files);
    let id = format!("calc-matmul-{}x{}x{}-{}", spec.m, spec.n, spec.k, dt.name());

    let mut h = String::new();
    html::open_figure(&mut h, &id);
    let mut headers = vec![
        "항목 (quantity)".to_string(),
        "식 (formula)".to_string(),
        "H100 SXM5 (데이터시트 datasheet)".to_string(),
    ];
    if let Some(r) = &cpu {
        headers.push(format!("CPU: {} (측정 measured)", fmt::esc(&r.device)));
    }
    html::open_table(&mut h, &headers);
    count_rows(&mut h, &c, dt, if cpu.is_some() { 2 } else { 1 });
    machine_rows(&mut h, &c, dt, cpu.as_ref());
    html::close_table(&mut h);
    if cpu.is_none() {
        h.push_str("<p class=\"hdlc-calc-note\">이 컴퓨터 CPU의 roofline(측정한 triad 대역폭과 행렬 곱 기준선)은 CPU 벤치마크를 측정하면 이 표에 한 열로 함께 나타납니다.</p>\n");
    }
    caption(&mut h, spec, cpu.as_ref());
    h
}

/// A row whose value holds for every machine: one cell spanning the `cols` machine columns.
fn shared_row(h: &mut String, cols: usize, name: &str, formula: &str, value: String) {
    let _ = writeln!(
        h,
        "<tr><td>{name}</td><td>{formula}</td><td class=\"num\" colspan=\"{cols}\">{value}</td></tr>"
    );
}

/// A row with one cell per machine: the H100's, then the CPU's when there is one.
fn machine_row(h: &mut String, name: &str, formula: &str, a: String, b: Option<String>) {
    let _ = write!(
        h,
        "<tr><td>{name}</td><td>{formula}</td><td class=\"num\">{a}</td>"
    );
    if let Some(b) = b {
        let _ = write!(h, "<td class=\"num\">{b}</td>");
    }
    h.push_str("</tr>\n");
}

/// FLOPs, fewest bytes and intensity: the same on every machine.
fn count_rows(h: &mut String, c: &MatmulCounts, dt: Dtype, cols: usize) {
    let eb = dt.bytes();
    shared_row(
        h,
        cols,
        "연산량 (FLOPs)",
        "2·m·n·k",
        format!("{} FLOP ({})", fmt::int(c.flops), fmt::sci4(c.flops as f64)),
    );
    shared_row(
        h,
        cols,
        "최소 메모리 이동량 (minimum bytes)",
        &format!("(m·k + k·n + m·n) · {eb} B"),
        format!("{} B ({})", fmt::int(c.bytes), fmt::bytes_si(c.bytes)),
    );
    shared_row(
        h,
        cols,
        "산술 강도 (arithmetic intensity)",
        "FLOPs / bytes",
        format!("{} FLOP/B", fmt::sig_trim(c.intensity, 4)),
    );
}

/// A machine's cell of a roofline row, from its bound and the product's intensity.
type BoundCell = fn(&Bound, f64) -> String;

/// The roofline rows after the two roofs: (name, formula, cell), in table order.
const BOUND_ROWS: [(&str, &str, BoundCell); 6] = [
    ("ridge point", "peak / bandwidth", |b, _| {
        format!("{} FLOP/B", fmt::sig_trim(b.ridge, 4))
    }),
    ("어느 벽 (which wall)", "intensity vs. ridge", wall_text),
    (
        "연산 시간 하한 (compute-time floor)",
        "FLOPs / peak",
        |b, _| fmt::time(b.compute_floor),
    ),
    (
        "메모리 시간 하한 (memory-time floor)",
        "bytes / bandwidth",
        |b, _| fmt::time(b.memory_floor),
    ),
    (
        "실행 시간 하한 (lower bound on time)",
        "max(두 하한)",
        |b, _| format!("<strong>{}</strong>", fmt::time(b.lower_bound)),
    ),
    (
        "도달 가능 성능 (attainable)",
        "min(peak, intensity · bandwidth)",
        |b, _| fmt::flops_rate(b.attainable),
    ),
];

/// The two roofs of each machine, then where the product lands under them.
fn machine_rows(h: &mut String, c: &MatmulCounts, dt: Dtype, cpu: Option<&CpuRoof>) {
    let h100 = bound(c, dt.h100_peak(), H100_BANDWIDTH);
    let cpu_b = cpu.map(|r| bound(c, r.peak, r.bandwidth));
    machine_row(
        h,
        "최대 연산 성능 (peak compute)",
        "—",
        format!("{} ({})", fmt::flops_rate(dt.h100_peak()), dt.h100_peak_label()),
        cpu.map(|r| format!("{} ({})", fmt::flops_rate(r.peak), fmt::esc(&r.matmul_label))),
    );
    machine_row(
        h,
        "메모리 대역폭 (memory bandwidth)",
        "—",
        format!("{} (HBM3)", fmt::bytes_rate(H100_BANDWIDTH)),
        cpu.map(|r| format!("{} ({})", fmt::bytes_rate(r.bandwidth), fmt::esc(&r.triad_label))),
    );
    for (name, formula, cell) in BOUND_ROWS {
        machine_row(
            h,
            name,
            formula,
            cell(&h100, c.intensity),
            cpu_b.map(|b| cell(&b, c.intensity)),
        );
    }
}

/// What was computed from what, and which numbers are not ours.
fn caption(h: &mut String, spec: &MatmulSpec, cpu: Option<&CpuRoof>) {
    let dt = spec.dtype;
    let eb = dt.bytes();
    html::open_caption(h, spec.caption.as_deref());
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
    if let Some(r) = cpu {
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
    html::close_figure(h);
}
