//! The `calc: pipeline` figure: the simulated schedule drawn device by device, a table of the
//! bubble each schedule leaves against the formula, and a caption on the time model.

use super::{peak_in_flight, simulate, PipelineSpec, Placed, Schedule};
use crate::calc::fmt;
use crate::calc::html;
use std::fmt::Write as _;

/// The schedule as a timeline: one row per device, one box per op (forward blue, backward
/// orange, later chunks lighter), the micro-batch written in each box that has room.
fn svg(placed: &[Placed], p: u64, v: u64, t: u64) -> String {
    const L: f64 = 70.0;
    const R: f64 = 620.0;
    const TOP: f64 = 30.0;
    const ROW: f64 = 24.0;
    let scale = (R - L) / t as f64;
    let height = TOP + p as f64 * ROW + 34.0;
    let mut s = String::new();
    html::open_svg(
        &mut s,
        640.0,
        height,
        "11",
        "파이프라인 스케줄: 장치별 forward/backward 시간축",
    );
    let _ = writeln!(
        s,
        "<rect x=\"{L}\" y=\"6\" width=\"12\" height=\"12\" fill=\"#4e79a7\"/><text x=\"{}\" y=\"16\">forward (1)</text>\
         <rect x=\"{}\" y=\"6\" width=\"12\" height=\"12\" fill=\"#f28e2b\"/><text x=\"{}\" y=\"16\">backward (2)</text><text x=\"{}\" y=\"16\">숫자 = micro-batch{}</text>",
        L + 16.0, L + 110.0, L + 126.0, L + 230.0, if v > 1 { ", 옅은 색 = 두 번째 이후 chunk" } else { "" }
    );
    for d in 0..p {
        let y = TOP + d as f64 * ROW;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">GPU {d}</text><rect x=\"{L}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"currentColor\" fill-opacity=\"0.06\"/>",
            L - 6.0, y + ROW / 2.0 + 4.0, R - L, ROW - 4.0
        );
    }
    for (d, op, st, en) in placed {
        let y = TOP + *d as f64 * ROW;
        let x0 = L + *st as f64 * scale;
        let w = (*en - *st) as f64 * scale;
        let color = if op.forward { "#4e79a7" } else { "#f28e2b" };
        let opacity = if op.chunk == 0 { 1.0 } else { 0.55 };
        let _ = write!(
            s,
            "<rect x=\"{x0:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{}\" fill=\"{color}\" fill-opacity=\"{opacity}\" stroke=\"#fff\" stroke-width=\"0.5\"><title>{} mb {} chunk {} [{}, {})</title></rect>",
            w, ROW - 4.0, if op.forward { "F" } else { "B" }, op.mb, op.chunk, st, en
        );
        if w >= 11.0 {
            let _ = write!(
                s,
                "<text x=\"{:.2}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"9.5\" fill=\"#fff\">{}</text>",
                x0 + w / 2.0, y + ROW / 2.0 + 2.0, op.mb
            );
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"middle\">시간 (chunk forward = 1 단위), 전체 {t} 단위</text>",
        (L + R) / 2.0, TOP + p as f64 * ROW + 18.0
    );
    s.push_str("</svg>");
    s
}

pub(in crate::calc) fn render(spec: &PipelineSpec) -> Result<String, String> {
    let (p, m, v) = (spec.stages, spec.micro_batches, spec.chunks);
    let (placed, t) =
        simulate(spec.schedule, p, m, v).ok_or("calc: pipeline: internal error: schedule deadlocked")?;
    let mut h = String::new();
    let id = format!(
        "calc-pipeline-{}-p{p}-m{m}-v{v}",
        spec.schedule.label().replace(' ', "-").to_lowercase()
    );
    html::open_figure(&mut h, &id);
    h.push_str(&svg(&placed, p, v, t));
    h.push('\n');
    html::open_table(
        &mut h,
        &[
            "스케줄",
            "v",
            "시뮬레이션 시간 T",
            "계산 3·m·v",
            "bubble (T − 3mv)/T",
            "식 (p−1)/(v·m)",
            "GPU 0 최대 in-flight",
        ],
    );
    let mut rows = vec![(Schedule::GPipe, 1), (Schedule::OneFOneB, 1)];
    if m % p == 0 {
        rows.push((
            Schedule::Interleaved,
            if spec.schedule == Schedule::Interleaved {
                v
            } else {
                2
            },
        ));
    }
    for (s, vv) in rows {
        let Some((pl, tt)) = simulate(s, p, m, vv) else {
            continue;
        };
        let busy = 3 * m * vv;
        let peak = peak_in_flight(&pl);
        let mark = if s == spec.schedule { " (그림)" } else { "" };
        let _ = writeln!(
            h,
            "<tr><td>{}{mark}</td><td class=\"num\">{vv}</td><td class=\"num\">{tt}</td><td class=\"num\">{busy}</td><td class=\"num\">{}</td><td class=\"num\">{}/{} = {}</td><td class=\"num\">{peak} chunk = {} micro-batch</td></tr>",
            s.label(), fmt::fixed(100.0 * (tt - busy) as f64 / tt as f64, 1) + " %", p - 1, vv * m,
            fmt::fixed((p - 1) as f64 / (vv * m) as f64, 3), fmt::sig_trim(peak as f64 / vv as f64, 3)
        );
    }
    html::close_table(&mut h);
    html::open_caption(&mut h, spec.caption.as_deref());
    let _ = write!(
        h,
        "생성기가 스케줄을 op 단위로 시뮬레이션한 결과(측정 아님): stages p = {p}, micro-batches m = {m}{}. \
         chunk 하나의 forward = 1, backward = 2 단위, stage 사이 전송 시간 0. 식의 bubble 비율은 이상적 계산 시간 대비(Narayanan et al. 2021)이고, \
         표의 bubble %는 전체 시간 대비라서 (p−1)/(v·m+p−1)과 같다. in-flight: forward는 끝났지만 backward가 아직인 chunk 수(activation을 들고 있는 수).",
        if spec.schedule == Schedule::Interleaved { format!(", chunks v = {v}") } else { String::new() }
    );
    html::close_figure(&mut h);
    Ok(h)
}
