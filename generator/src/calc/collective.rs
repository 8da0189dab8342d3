//! `calc: collective` — the α–β cost of a collective: how many bytes each GPU sends, and how
//! long that takes on a stated link, as a function of the message size.
//!
//! Why a model and not a measurement: the multi-GPU machines that would measure NCCL are not
//! available yet, and the model is what one reasons with anyway (the measured points will be
//! drawn beside it later). T = steps·α + (bytes each GPU sends)/β, with
//! (Thakur, Rabenseifner & Gropp 2005; NCCL's performance notes for the bus-bandwidth factors):
//! - ring all-reduce: 2(n−1) steps, 2(n−1)/n·M bytes per GPU;
//! - ring all-gather, reduce-scatter (M = the full gathered buffer): n−1 steps, (n−1)/n·M;
//! - all-to-all (pairwise exchange, M = each GPU's buffer): n−1 steps, (n−1)/n·M;
//! - tree all-reduce (reduce up a binary tree, broadcast down, pipelined in chunks):
//!   2·⌈log2 n⌉ steps, about 2·M per GPU.
//!
//! β is the link's per-direction bandwidth per GPU from the vendor's datasheet and α is an input
//! (an assumed latency per step), so the caption marks both.

use super::fmt;
use super::kv::{Fields, KeyDoc, ParseError};
use std::fmt::Write as _;

const KIND: &str = "collective";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algo {
    Ring,
    Tree,
}

/// Links with their datasheet per-direction bandwidth per GPU (bytes/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub name: &'static str,
    pub label: &'static str,
    pub bytes_per_s: f64,
    pub source: &'static str,
}

pub const LINKS: &[Link] = &[
    Link {
        name: "nvlink4",
        label: "NVLink 4 / NVSwitch (H100 SXM)",
        bytes_per_s: 450e9,
        source: "NVIDIA H100 datasheet: 900 GB/s NVLink per GPU, both directions → 450 GB/s each way",
    },
    Link {
        name: "ib-ndr",
        label: "InfiniBand NDR 400 Gb/s, one NIC per GPU",
        bytes_per_s: 50e9,
        source: "NVIDIA ConnectX-7 / Quantum-2 NDR datasheet: 400 Gb/s per port = 50 GB/s each way",
    },
    Link {
        name: "pcie5",
        label: "PCIe 5.0 x16",
        bytes_per_s: 64e9,
        source: "PCI-SIG PCIe 5.0: 32 GT/s × 16 lanes ≈ 64 GB/s each way (before protocol overhead)",
    },
];

#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveSpec {
    pub op: Op,
    pub gpus: u64,
    pub link: Link,
    pub alpha_us: f64,
    /// The message size the table is computed at, bytes.
    pub bytes: u64,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "op",
        doc: "all-reduce, all-gather, reduce-scatter or all-to-all",
    },
    KeyDoc {
        key: "gpus",
        doc: "GPUs in the group, 2 or more",
    },
    KeyDoc {
        key: "link",
        doc: "nvlink4, ib-ndr or pcie5 (datasheet bandwidths)",
    },
    KeyDoc {
        key: "alpha_us",
        doc: "assumed latency per step in µs, e.g. 5",
    },
    KeyDoc {
        key: "bytes",
        doc: "message size in bytes for the table (M)",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

impl Op {
    pub fn label(self) -> &'static str {
        match self {
            Op::AllReduce => "all-reduce",
            Op::AllGather => "all-gather",
            Op::ReduceScatter => "reduce-scatter",
            Op::AllToAll => "all-to-all",
        }
    }
    /// Algorithms the model covers for this op.
    pub fn algos(self) -> &'static [Algo] {
        match self {
            Op::AllReduce => &[Algo::Ring, Algo::Tree],
            _ => &[Algo::Ring],
        }
    }
}

/// (steps, bytes each GPU sends) for `m` bytes on `n` GPUs.
pub fn volume(op: Op, algo: Algo, n: u64, m: f64) -> (u64, f64) {
    let nf = n as f64;
    match (op, algo) {
        (Op::AllReduce, Algo::Ring) => (2 * (n - 1), 2.0 * (nf - 1.0) / nf * m),
        (Op::AllReduce, Algo::Tree) => (2 * u64::from(n.next_power_of_two().trailing_zeros()), 2.0 * m),
        (_, _) => (n - 1, (nf - 1.0) / nf * m),
    }
}

/// α–β time in seconds.
pub fn time(op: Op, algo: Algo, n: u64, m: f64, alpha_s: f64, beta: f64) -> f64 {
    let (steps, v) = volume(op, algo, n, m);
    steps as f64 * alpha_s + v / beta
}

pub(super) fn parse(f: &Fields) -> Result<CollectiveSpec, ParseError> {
    f.only(KIND, KEYS)?;
    let need = |key: &str| -> Result<(String, usize), ParseError> {
        f.scalar(KIND, key, KEYS)?.ok_or_else(|| {
            (
                f.calc_line,
                format!("`calc: {KIND}`: missing key `{key}`"),
                super::kv::hint(KIND, KEYS),
            )
        })
    };
    let (op_s, line) = need("op")?;
    let op = match op_s.as_str() {
        "all-reduce" => Op::AllReduce,
        "all-gather" => Op::AllGather,
        "reduce-scatter" => Op::ReduceScatter,
        "all-to-all" => Op::AllToAll,
        _ => {
            return Err((
                line,
                format!("`calc: {KIND}`: unknown op `{op_s}`"),
                "op is one of: all-reduce, all-gather, reduce-scatter, all-to-all".into(),
            ))
        }
    };
    let gpus = f.positive(KIND, "gpus", 1 << 20, KEYS)?;
    if gpus < 2 {
        let line = need("gpus")?.1;
        return Err((
            line,
            format!("`calc: {KIND}`: a collective needs at least 2 GPUs"),
            "gpus: 2 or more".into(),
        ));
    }
    let (link_s, line) = need("link")?;
    let link = *LINKS.iter().find(|l| l.name == link_s).ok_or_else(|| {
        (
            line,
            format!("`calc: {KIND}`: unknown link `{link_s}`"),
            "link is one of: nvlink4, ib-ndr, pcie5".into(),
        )
    })?;
    let (a_s, line) = need("alpha_us")?;
    let alpha_us: f64 = match a_s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1e6).contains(&v) => v,
        _ => {
            return Err((
                line,
                format!("`calc: {KIND}`: `alpha_us: {a_s}` is not a latency in µs"),
                "alpha_us is a number ≥ 0, e.g. `alpha_us: 5`".into(),
            ))
        }
    };
    let bytes = f.positive(KIND, "bytes", 1 << 40, KEYS)?;
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(CollectiveSpec {
        op,
        gpus,
        link,
        alpha_us,
        bytes,
        caption,
    })
}

const ALGO_COLORS: [&str; 2] = ["#4e79a7", "#e15759"];

fn algo_label(a: Algo) -> &'static str {
    match a {
        Algo::Ring => "ring",
        Algo::Tree => "tree",
    }
}

/// Log-log curves of time vs message size, 1 KiB to 4 GiB, one per algorithm.
fn svg(spec: &CollectiveSpec) -> String {
    const W: f64 = 640.0;
    const H: f64 = 330.0;
    const L: f64 = 70.0;
    const R: f64 = 610.0;
    const T: f64 = 40.0;
    const B: f64 = 280.0;
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
    let (y0, y1) = (tmin.log10().floor(), tmax.log10().ceil());
    let x = |m: f64| L + (R - L) * (m.log2() - 10.0) / 22.0;
    let y = |t: f64| B - (B - T) * (t.log10() - y0) / (y1 - y0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 {W} {H}\" preserveAspectRatio=\"xMidYMid meet\" xmlns=\"http://www.w3.org/2000/svg\" \
         font-family=\"sans-serif\" font-size=\"12\" fill=\"currentColor\" role=\"img\" aria-label=\"{} 시간 대 메시지 크기 (α–β 모델, 로그-로그)\">",
        spec.op.label()
    );
    for e in (y0 as i32)..=(y1 as i32) {
        let ty = y(10f64.powi(e));
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" y1=\"{ty:.1}\" x2=\"{R}\" y2=\"{ty:.1}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            L - 6.0, ty + 4.0, fmt::time(10f64.powi(e))
        );
    }
    for k in (10..=32).step_by(2) {
        let m = 2f64.powi(k);
        let tx = x(m);
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
    for (i, (&a, ts)) in algos.iter().zip(&times).enumerate() {
        let pts: Vec<String> = sizes
            .iter()
            .zip(ts)
            .map(|(&m, &t)| format!("{:.1},{:.1}", x(m), y(t)))
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
            x(m),
            y(t),
            ALGO_COLORS[0]
        );
    }
    s.push_str("</svg>");
    s
}

pub(super) fn render(spec: &CollectiveSpec) -> String {
    let alpha = spec.alpha_us * 1e-6;
    let beta = spec.link.bytes_per_s;
    let m = spec.bytes as f64;
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<figure class=\"hdlc-figure hdlc-calc\" id=\"calc-collective-{}-n{}-{}-m{}\">",
        spec.op.label(),
        spec.gpus,
        spec.link.name,
        spec.bytes
    );
    h.push_str(&svg(spec));
    h.push_str("\n<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>알고리즘</th><th>단계 수</th><th>GPU당 송신 바이트</th><th>α 항</th><th>β 항</th><th>합계 T</th><th>M / T</th></tr>\n</thead>\n<tbody>\n");
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
    h.push_str("</tbody>\n</table>\n</div>\n<figcaption>");
    if let Some(c) = &spec.caption {
        let _ = write!(h, "{} ", fmt::esc(c.trim()));
    }
    let _ = write!(
        h,
        "α–β 모델로 생성기가 계산한 값(측정 아님): {}, GPU n = {}, 메시지 M = {} B (점). T = 단계 수·α + GPU당 송신 바이트/β. \
         <span class=\"datasheet\">β = {} ({}; 데이터시트 값).</span> α = {} µs는 입력한 가정값이다. \
         링크 하나를 모든 GPU가 동시에 양방향으로 쓴다고 보았고, 혼잡·토폴로지·프로토콜 오버헤드와 reduction 연산 시간은 넣지 않았다. \
         다중 GPU 측정값은 다른 이슈에서 이 곡선 옆에 더해진다.",
        spec.op.label(), spec.gpus, fmt::int(spec.bytes.into()), fmt::bytes_rate(beta), spec.link.source,
        fmt::sig_trim(spec.alpha_us, 4)
    );
    h.push_str("</figcaption>\n</figure>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_all_reduce_by_hand() {
        // 8 GPUs, 1 GB, 450 GB/s, α 5 µs: 14 steps, 2·7/8 GB = 1.75 GB; 70 µs + 3.888… ms.
        let (steps, v) = volume(Op::AllReduce, Algo::Ring, 8, 1e9);
        assert_eq!((steps, v), (14, 1.75e9));
        let t = time(Op::AllReduce, Algo::Ring, 8, 1e9, 5e-6, 450e9);
        assert!((t - (70e-6 + 1.75e9 / 450e9)).abs() < 1e-12);
    }

    #[test]
    fn gather_scatter_and_tree() {
        assert_eq!(volume(Op::AllGather, Algo::Ring, 4, 4e6), (3, 3e6));
        assert_eq!(volume(Op::ReduceScatter, Algo::Ring, 4, 4e6), (3, 3e6));
        assert_eq!(volume(Op::AllToAll, Algo::Ring, 4, 4e6), (3, 3e6));
        assert_eq!(volume(Op::AllReduce, Algo::Tree, 8, 1e6), (6, 2e6));
        assert_eq!(volume(Op::AllReduce, Algo::Tree, 5, 1e6).0, 6);
        // all-reduce = reduce-scatter + all-gather in volume.
        let ar = volume(Op::AllReduce, Algo::Ring, 16, 1e6).1;
        let rs = volume(Op::ReduceScatter, Algo::Ring, 16, 1e6).1;
        assert!((ar - 2.0 * rs).abs() < 1e-6);
    }

    #[test]
    fn errors_name_the_line() {
        let e = crate::calc::parse(
            "calc: collective\nop: all-reduce\ngpus: 8\nlink: nvlink5\nalpha_us: 5\nbytes: 1000\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 4);
        let e = crate::calc::parse("calc: collective\nop: broadcast\n").unwrap_err();
        assert_eq!(e.0, 2);
        let e = crate::calc::parse(
            "calc: collective\nop: all-reduce\ngpus: 8\nlink: nvlink4\nalpha_us: x\nbytes: 1000\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 5);
    }
}
