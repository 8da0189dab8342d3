//! The `calc: inference-roofline` figure: prefill and each decode batch placed on the H100
//! roofline, a table of the intensities and floors of each step, the batch at which decode turns
//! compute-bound, and a caption that marks the datasheet peaks.

use super::{decode, linear_crossover, matmul_params, prefill, step_crossover};
use super::{InferenceSpec, Step};
use crate::calc::fmt;
use crate::calc::html;
use crate::calc::matmul::{Dtype, H100_BANDWIDTH, H100_SOURCE};
use crate::calc::models::ModelConfig;
use std::fmt::Write as _;

/// The H100 roofline on log-log axes with one dot per step, each labelled where it covers no
/// other dot or label.
fn svg(points: &[(String, f64, bool)], peak: f64, bw: f64) -> String {
    let (x0, x1, y0, y1) = (0.1f64.log10(), 1e4f64.log10(), 1e11f64.log10(), 1e15f64.log10());
    let (l, r, t, b) = (70.0, 610.0, 16.0, 250.0);
    let px = |i: f64| l + (r - l) * (i.clamp(0.1, 1e4).log10() - x0) / (x1 - x0);
    let py = |f: f64| b - (b - t) * (f.clamp(1e11, 1e15).log10() - y0) / (y1 - y0);
    let mut s = String::new();
    let _ = writeln!(s, "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 640 290\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"12\" fill=\"currentColor\" role=\"img\" aria-label=\"H100 roofline 위의 prefill과 decode\">");
    for e in -1..=4 {
        let x = px(10f64.powi(e));
        let _ = writeln!(s, "<line x1=\"{x:.1}\" y1=\"{t}\" x2=\"{x:.1}\" y2=\"{b}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">10<tspan baseline-shift=\"super\" font-size=\"8\">{e}</tspan></text>", b + 16.0);
    }
    for e in 11..=15 {
        let y = py(10f64.powi(e));
        let _ = writeln!(s, "<line x1=\"{l}\" y1=\"{y:.1}\" x2=\"{r}\" y2=\"{y:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">10<tspan baseline-shift=\"super\" font-size=\"8\">{e}</tspan></text>", l - 6.0, y + 4.0);
    }
    let ridge = peak / bw;
    let _ = writeln!(s, "<polyline points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\"/>", px(0.1), py(0.1 * bw), px(ridge), py(peak), px(1e4), py(peak));
    let _ = writeln!(s, "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">FLOP/B (산술 강도)</text><text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">FLOP/s</text>", (l + r) / 2.0, b + 34.0, (t + b) / 2.0, (t + b) / 2.0);
    // Dots first; then each label at the first spot around its dot that covers no dot and no
    // earlier label (points of near batch sizes sit close together on the roof).
    let at: Vec<(f64, f64)> = points
        .iter()
        .map(|(_, inten, _)| (px(*inten), py(peak.min(inten * bw))))
        .collect();
    let mut placed: Vec<(f64, f64, f64, f64)> = at
        .iter()
        .map(|&(x, y)| (x - 5.0, y - 5.0, x + 5.0, y + 5.0))
        .collect();
    for ((label, _, is_prefill), &(x, y)) in points.iter().zip(&at) {
        let color = if *is_prefill { "#e15759" } else { "#4e79a7" };
        let w = 6.6 * label.chars().count() as f64;
        let spots = [
            (0.0, -9.0),
            (0.0, 19.0),
            (0.0, -23.0),
            (0.0, 33.0),
            (w / 2.0 + 8.0, 4.0),
            (-w / 2.0 - 8.0, 4.0),
        ];
        let boxes: Vec<(f64, f64, f64, f64)> = spots
            .iter()
            .map(|(dx, dy)| (x + dx - w / 2.0, y + dy - 10.0, x + dx + w / 2.0, y + dy + 2.0))
            .collect();
        let free = |b: &(f64, f64, f64, f64)| {
            b.0 >= 0.0
                && b.2 <= 640.0
                && !placed
                    .iter()
                    .any(|p| b.0 < p.2 && p.0 < b.2 && b.1 < p.3 && p.1 < b.3)
        };
        let b = boxes.iter().copied().find(free).unwrap_or(boxes[0]);
        placed.push(b);
        let _ = writeln!(s, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{color}\">{}</text>", (b.0 + b.2) / 2.0, b.3 - 2.0, fmt::esc(label));
    }
    s.push_str("</svg>");
    s
}

pub(in crate::calc) fn render(spec: &InferenceSpec) -> String {
    let c = spec.model.config();
    let peak = Dtype::Bf16.h100_peak();
    let bw = H100_BANDWIDTH;
    let ctx = u128::from(spec.context);
    let (w, kv) = (spec.weights, spec.kv);
    let id = format!(
        "calc-inference-roofline-{}-c{}-{}-{}",
        spec.model.name(),
        spec.context,
        w.name(),
        kv.name()
    );
    let mut points = Vec::new();
    let mut rows = String::new();
    for &b in &spec.batches {
        let st = decode(&c, u128::from(b), ctx, w, kv);
        points.push((format!("B={b}"), st.intensity(), false));
        let label = format!("decode, B = {}", fmt::int(b.into()));
        step_row(&mut rows, &label, &st, b as f64, peak, bw);
    }
    let p = prefill(&c, ctx, w, kv);
    points.push(("prefill".into(), p.intensity(), true));
    let label = format!("prefill, 1 × {} tokens", fmt::int(ctx));
    step_row(&mut rows, &label, &p, ctx as f64, peak, bw);

    let mut h = String::new();
    html::open_figure(&mut h, &id);
    h.push_str(&svg(&points, peak, bw));
    h.push('\n');
    html::open_table(
        &mut h,
        &[
            "단계",
            "linear FLOP/B",
            "attention FLOP/B",
            "step FLOP/B",
            "가중치 읽기 시간",
            "KV 시간",
            "연산 시간",
            "시간 하한 (lower bound)",
            "tokens/s 상한",
        ],
    );
    h.push_str(&rows);
    crossover_row(&mut h, spec, &c, peak, bw);
    html::close_table(&mut h);
    caption(&mut h, spec, &c, peak, bw);
    h
}

/// One step's row: the intensities of its linear layers, its attention and the whole step, the
/// three time floors, the bound (with the wall it hits) and the tokens/s ceiling for the
/// `tokens` the step produces.
fn step_row(rows: &mut String, label: &str, st: &Step, tokens: f64, peak: f64, bw: f64) {
    let t = st.lower_bound(peak, bw);
    let wall = if st.intensity() < peak / bw {
        "memory"
    } else {
        "compute"
    };
    let _ = writeln!(
        rows,
        "<tr><td>{label}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong> ({wall})</td><td class=\"num\">{}</td></tr>",
        fmt::sig_trim(st.linear_flops as f64 / st.weight_bytes as f64, 4),
        fmt::sig_trim(st.attention_flops as f64 / st.kv_bytes as f64, 4),
        fmt::sig_trim(st.intensity(), 4),
        fmt::time(st.weight_bytes as f64 / bw),
        fmt::time(st.kv_bytes as f64 / bw),
        fmt::time(st.flops() as f64 / peak),
        fmt::time(t),
        fmt::sig(tokens / t, 4),
    );
}

/// The batch from which the linear layers alone, and the whole decode step at this context,
/// are compute-bound (or that the step never is).
fn crossover_row(h: &mut String, spec: &InferenceSpec, c: &ModelConfig, peak: f64, bw: f64) {
    let ridge = peak / bw;
    let ctx = u128::from(spec.context);
    let w = spec.weights;
    let _ = writeln!(
        h,
        "<tr><td colspan=\"9\">linear 층만 compute-bound가 되는 batch: 2·B·8/{} ≥ {} → <strong>B ≥ {}</strong>. context {}에서 attention까지 합친 decode step 전체: {}</td></tr>",
        w.bits(),
        fmt::sig_trim(ridge, 4),
        fmt::int(linear_crossover(ridge, w)),
        fmt::int(ctx),
        match step_crossover(c, ctx, w, spec.kv, peak, bw) {
            Some(b) => format!("<strong>B ≥ {}</strong>", fmt::int(b)),
            None => "<strong>어떤 batch에서도 memory-bound</strong> (attention의 FLOP/B가 batch와 무관하게 ridge보다 낮다)".into(),
        }
    );
}

/// The inputs, what the counts include and leave out, and the datasheet peaks.
fn caption(h: &mut String, spec: &InferenceSpec, c: &ModelConfig, peak: f64, bw: f64) {
    let w = spec.weights;
    html::open_caption(h, spec.caption.as_deref());
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력 model = {} ({}), context = {}, weights = {} ({} bit), KV = {}에서 계산한 값. \
         matmul에 참여하는 파라미터 P = L·(attention + MLP) + V·d = {} (임베딩 gather와 norm 제외); decode step의 linear FLOPs = 2·B·P, \
         attention FLOPs = B·L·4·H·d<sub>head</sub>·context; 바이트 = 가중치 P·{}/8 B (한 step에 한 번) + B·context·(토큰당 KV) B. \
         activation 읽기·쓰기, 양자화 scale, 커널 실행 오버헤드는 세지 않았으므로 시간은 하한이고 tokens/s는 상한이다. \
         weight-only 양자화는 BF16 행렬 곱으로 역양자화된다고 보고 연산 peak는 BF16을 썼다. \
         <span class=\"datasheet\">데이터시트 수치(측정값 아님): H100 SXM5 HBM3 {} · BF16 Tensor Core dense {} (ridge {} FLOP/B) — {H100_SOURCE}.</span>",
        spec.model.name(),
        c.label,
        fmt::int(u128::from(spec.context)),
        w.name(),
        w.bits(),
        spec.kv.name(),
        fmt::int(matmul_params(c)),
        w.bits(),
        fmt::bytes_rate(bw),
        fmt::flops_rate(peak),
        fmt::sig_trim(peak / bw, 4),
    );
    html::close_figure(h);
}
