//! The `calc: collective` figure: time against message size for each algorithm on log-log
//! axes, a table of the α and β terms at the card's message size, and a caption that marks the
//! datasheet bandwidth and the assumed latency.

use super::{time, volume, Algo, CollectiveSpec};
use crate::calc::fmt;
use crate::calc::html;
use std::fmt::Write as _;

const ALGO_COLORS: [&str; 2] = ["#4e79a7", "#e15759"];

fn algo_label(a: Algo) -> &'static str {
    match a {
        Algo::Ring => "ring",
        Algo::Tree => "tree",
    }
}

const W: f64 = 640.0;
const H: f64 = 330.0;
const L: f64 = 70.0;
const R: f64 = 610.0;
const T: f64 = 40.0;
const B: f64 = 280.0;

/// The log-log axes: message size 2^10..2^32 B across, whole decades of time up the side.
struct Axes {
    y0: f64,
    y1: f64,
}

impl Axes {
    fn x(&self, m: f64) -> f64 {
        L + (R - L) * (m.log2() - 10.0) / 22.0
    }
    fn y(&self, t: f64) -> f64 {
        B - (B - T) * (t.log10() - self.y0) / (self.y1 - self.y0)
    }
}

/// Log-log curves of time vs message size, 1 KiB to 4 GiB, one per algorithm.
fn svg(spec: &CollectiveSpec) -> String {
    let alpha = spec.alpha_us * 1e-6;
    let sizes: Vec<f64> = (10..=32).map(|k| 2f64.powi(k)).collect();
    let algos = spec.op.algos();
    let times: Vec<Vec<f64>> = algos
        .iter()
        .map(|&a| {
            sizes
                .iter()
                .map(|&m| time(spec.op, a, spec.gpus, m, alpha, spec.link.bytes_per_s))
                .collect()
        })
        .collect();
    let tmin = times
        .iter()
        .flatten()
        .cloned()
        .fold(f64::INFINITY, f64::min)
        .max(1e-9);
    let tmax = times
        .iter()
        .flatten()
        .cloned()
        .fold(0.0, f64::max)
        .max(tmin * 10.0);
    let ax = Axes {
        y0: tmin.log10().floor(),
        y1: tmax.log10().ceil(),
    };
    let mut s = String::new();
    html::open_svg(
        &mut s,
        W,
        H,
        "12",
        &format!("{} 시간 대 메시지 크기 (α–β 모델, 로그-로그)", spec.op.label()),
    );
    grid(&mut s, &ax);
    for (i, (&a, ts)) in algos.iter().zip(&times).enumerate() {
        let pts: Vec<String> = sizes
            .iter()
            .zip(ts)
            .map(|(&m, &t)| format!("{:.1},{:.1}", ax.x(m), ax.y(t)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/><rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{} {}</text>",
            pts.join(" "), ALGO_COLORS[i], L + 10.0 + i as f64 * 150.0, T - 28.0, ALGO_COLORS[i],
            L + 27.0 + i as f64 * 150.0, T - 17.0, spec.op.label(), algo_label(a)
        );
    }
    let m = spec.bytes as f64;
    if (1024.0..=4294967296.0).contains(&m) {
        let t = time(spec.op, Algo::Ring, spec.gpus, m, alpha, spec.link.bytes_per_s);
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4.5\" fill=\"{}\"/>",
            ax.x(m),
            ax.y(t),
            ALGO_COLORS[0]
        );
    }
    s.push_str("</svg>");
    s
}

/// Grid lines and labels: a time per decade, a size per factor of four, the size axis.
fn grid(s: &mut String, ax: &Axes) {
    for e in (ax.y0 as i32)..=(ax.y1 as i32) {
        let ty = ax.y(10f64.powi(e));
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" y1=\"{ty:.1}\" x2=\"{R}\" y2=\"{ty:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            L - 6.0, ty + 4.0, fmt::time(10f64.powi(e))
        );
    }
    for k in (10..=32).step_by(2) {
        let m = 2f64.powi(k);
        let tx = ax.x(m);
        let label = match k {
            10..=19 => format!("{} KiB", 1u64 << (k - 10)),
            20..=29 => format!("{} MiB", 1u64 << (k - 20)),
            _ => format!("{} GiB", 1u64 << (k - 30)),
        };
        let _ = writeln!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{T}\" x2=\"{tx:.1}\" y2=\"{B}\" stroke=\"currentColor\" stroke-opacity=\"0.1\"/><text x=\"{tx:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10.5\">{label}</text>",
            B + 15.0
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{L}\" y1=\"{B}\" x2=\"{R}\" y2=\"{B}\" stroke=\"currentColor\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">메시지 크기 M</text>",
        (L + R) / 2.0, B + 34.0
    );
}

pub(in crate::calc) fn render(spec: &CollectiveSpec) -> String {
    let alpha = spec.alpha_us * 1e-6;
    let beta = spec.link.bytes_per_s;
    let m = spec.bytes as f64;
    let mut h = String::new();
    let id = format!(
        "calc-collective-{}-n{}-{}-m{}",
        spec.op.label(),
        spec.gpus,
        spec.link.name,
        spec.bytes
    );
    html::open_figure(&mut h, &id);
    h.push_str(&svg(spec));
    h.push('\n');
    html::open_table(
        &mut h,
        &[
            "알고리즘",
            "단계 수",
            "GPU당 송신 바이트",
            "α 항",
            "β 항",
            "합계 T",
            "M / T",
        ],
    );
    for &a in spec.op.algos() {
        let (steps, v) = volume(spec.op, a, spec.gpus, m);
        let t = time(spec.op, a, spec.gpus, m, alpha, beta);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{steps}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong></td><td class=\"num\">{}</td></tr>",
            algo_label(a), fmt::bytes_si(v.round() as u128), fmt::time(steps as f64 * alpha), fmt::time(v / beta),
            fmt::time(t), fmt::bytes_rate(m / t)
        );
    }
    html::close_table(&mut h);
    html::open_caption(&mut h, spec.caption.as_deref());
    let _ = write!(
        h,
        "α–β 모델로 생성기가 계산한 값(측정 아님): {}, GPU n = {}, 메시지 M = {} B (점). T = 단계 수·α + GPU당 송신 바이트/β. \
         <span class=\"datasheet\">β = {} ({}; 데이터시트 값).</span> α = {} µs는 입력한 가정값이다. \
         링크 하나를 모든 GPU가 동시에 양방향으로 쓴다고 보았고, 혼잡·토폴로지·프로토콜 오버헤드와 reduction 연산 시간은 넣지 않았다. \
         다중 GPU 측정값은 다른 이슈에서 이 곡선 옆에 더해진다.",
        spec.op.label(), spec.gpus, fmt::int(spec.bytes.into()), fmt::bytes_rate(beta), spec.link.source,
        fmt::sig_trim(spec.alpha_us, 4)
    );
    html::close_figure(&mut h);
    h
}
