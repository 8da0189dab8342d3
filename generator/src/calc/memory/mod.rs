//! `calc: training-memory` — bytes of weights, gradients, optimizer state and activations for
//! training a known model with Adam, in three regimes: FP32, BF16 mixed precision, and BF16 mixed
//! precision with full activation checkpointing.
//!
//! Conventions (the authoring brief's, with their sources):
//! - States per parameter (ZeRO, Rajbhandari et al. 2020): FP32 = 4 B weights + 4 B gradients +
//!   8 B Adam moments; BF16 mixed = 2 B weights + 2 B gradients + 4 B FP32 master weights + 8 B
//!   moments. Master weights are counted with the optimizer state.
//! - Activations of one layer, 16-bit, no recomputation: s·b·h·(34 + 5·a·s/h) bytes (Korthikanti
//!   et al. 2022), multiplied out here as 34·s·b·h + 5·a·s²·b so it stays an exact integer.
//!   FP32 training keeps them in 4 bytes: twice that. Full checkpointing keeps each layer's input
//!   (2·s·b·h bytes) plus one layer's full activations during its recomputation.
//! - The formula was derived for GPT-style blocks; for Llama it is applied as an approximation and
//!   the caption says so. Embedding, logits and loss activations are not counted.

use super::fmt;
use super::kv::{Fields, KeyDoc, ParseError};
use super::models::{ModelConfig, ModelId};
use std::fmt::Write as _;

/// A parsed `calc: training-memory` or `calc: transformer-shapes` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRunSpec {
    pub model: ModelId,
    pub batch: u64,
    pub seq: u64,
    pub caption: Option<String>,
}

/// Upper limits that keep every product far inside u128 and every f64 well-behaved.
pub const MAX_BATCH: u64 = 1 << 20;
pub const MAX_SEQ: u64 = 1 << 24;

pub(super) const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "model",
        doc: "gpt2-124m or llama3-8b",
    },
    KeyDoc {
        key: "batch",
        doc: "sequences per step, positive integer",
    },
    KeyDoc {
        key: "seq",
        doc: "tokens per sequence, positive integer",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

/// Parse the keys shared by the model calculators.
pub(super) fn parse_run(kind: &str, f: &Fields) -> Result<ModelRunSpec, ParseError> {
    f.only(kind, KEYS)?;
    let model = f.model(kind, KEYS)?;
    let batch = f.positive(kind, "batch", MAX_BATCH, KEYS)?;
    let seq = f.positive(kind, "seq", MAX_SEQ, KEYS)?;
    if let Some(p) = model.config().learned_positions {
        if u128::from(seq) > p {
            let (_, line) = f.scalar(kind, "seq", KEYS)?.unwrap_or_default();
            return Err((
                line,
                format!("`calc: {kind}`: seq {seq} is longer than {}'s positional-embedding table ({p} positions)", model.config().label),
                format!("use seq ≤ {p} for {}", model.name()),
            ));
        }
    }
    let caption = f.scalar(kind, "caption", KEYS)?.map(|(s, _)| s);
    Ok(ModelRunSpec {
        model,
        batch,
        seq,
        caption,
    })
}

/// The three training set-ups compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    Fp32,
    Bf16Mixed,
    Bf16MixedCheckpointing,
}

pub const REGIMES: [Regime; 3] = [Regime::Fp32, Regime::Bf16Mixed, Regime::Bf16MixedCheckpointing];

impl Regime {
    pub fn label(self) -> &'static str {
        match self {
            Regime::Fp32 => "FP32 Adam",
            Regime::Bf16Mixed => "BF16 mixed + Adam",
            Regime::Bf16MixedCheckpointing => "BF16 mixed + checkpointing",
        }
    }
}

/// Bytes of one regime, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakdown {
    pub weights: u128,
    pub gradients: u128,
    /// Adam moments, plus FP32 master weights in mixed precision.
    pub optimizer: u128,
    pub activations: u128,
}

impl Breakdown {
    pub fn total(&self) -> u128 {
        self.weights + self.gradients + self.optimizer + self.activations
    }
    pub fn parts(&self) -> [u128; 4] {
        [self.weights, self.gradients, self.optimizer, self.activations]
    }
}

/// 16-bit activation bytes of one layer without recomputation: s·b·h·(34 + 5·a·s/h).
pub fn layer_activations(c: &ModelConfig, batch: u64, seq: u64) -> u128 {
    let (b, s) = (u128::from(batch), u128::from(seq));
    34 * s * b * c.d_model + 5 * c.heads * s * s * b
}

/// Bytes a layer keeps under full checkpointing: its 16-bit input, 2·s·b·h.
pub fn layer_checkpoint(c: &ModelConfig, batch: u64, seq: u64) -> u128 {
    2 * u128::from(seq) * u128::from(batch) * c.d_model
}

pub fn breakdown(c: &ModelConfig, batch: u64, seq: u64, regime: Regime) -> Breakdown {
    let p = c.params().total();
    let act = layer_activations(c, batch, seq);
    let l = c.layers;
    match regime {
        Regime::Fp32 => Breakdown {
            weights: 4 * p,
            gradients: 4 * p,
            optimizer: 8 * p,
            activations: 2 * l * act,
        },
        Regime::Bf16Mixed => Breakdown {
            weights: 2 * p,
            gradients: 2 * p,
            optimizer: 12 * p,
            activations: l * act,
        },
        Regime::Bf16MixedCheckpointing => Breakdown {
            weights: 2 * p,
            gradients: 2 * p,
            optimizer: 12 * p,
            activations: l * layer_checkpoint(c, batch, seq) + act,
        },
    }
}

/// H100 80 GB memory, bytes (datasheet capacity, decimal GB).
pub const H100_MEMORY: u128 = 80_000_000_000;

pub(super) const COLORS: [&str; 4] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"];
const PARTS: [&str; 4] = [
    "weights 가중치",
    "gradients 기울기",
    "optimizer state (Adam m·v + FP32 master)",
    "activations",
];

/// 1, 2 or 5 × 10^k, chosen so that `max` spans at most about six ticks.
pub(super) fn tick_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / 6.0;
    let mag = 10f64.powi(raw.log10().floor() as i32);
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

/// The stacked bars, one per labelled row, in GiB (also drawn by `calc: parallel-memory`).
pub(super) fn svg(rows: &[(String, Breakdown)], aria: &str) -> String {
    const W: f64 = 640.0;
    const LEFT: f64 = 178.0;
    const RIGHT: f64 = 560.0;
    const TOP0: f64 = 64.0;
    const BAR: f64 = 28.0;
    const GAP: f64 = 20.0;
    let max_total = rows.iter().map(|(_, b)| b.total()).max().unwrap_or(0);
    let over = max_total > H100_MEMORY;
    // The "H100 80 GB" line's label needs a row of its own under the legend.
    let top = if over { TOP0 + 16.0 } else { TOP0 };
    let max_gib = (max_total.max(if over { H100_MEMORY } else { 0 }) as f64 / fmt::GIB).max(1e-9);
    let step = tick_step(max_gib);
    let axis_max = (max_gib / step).ceil() * step;
    let x = |gib: f64| LEFT + (RIGHT - LEFT) * gib / axis_max;
    let bars_bottom = top + rows.len() as f64 * (BAR + GAP) - GAP;
    let axis_y = bars_bottom + 10.0;
    let height = axis_y + 40.0;

    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 {W} {height}\" preserveAspectRatio=\"xMidYMid meet\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"12.5\" fill=\"currentColor\" \
         role=\"img\" aria-label=\"{aria}\">"
    );
    // Legend, two rows.
    for (i, (name, color)) in PARTS.iter().zip(COLORS).enumerate() {
        let (lx, ly) = if i < 2 {
            (LEFT - 160.0 + i as f64 * 170.0, 14.0)
        } else {
            (LEFT - 160.0 + (i - 2) as f64 * 290.0, 32.0)
        };
        let _ = writeln!(
            s,
            "<rect x=\"{lx}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{name}</text>",
            ly - 10.0,
            lx + 17.0,
            ly
        );
    }
    // Grid and axis.
    let mut t = 0.0;
    while t <= axis_max + step * 1e-9 {
        let tx = x(t);
        let _ = writeln!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{}\" x2=\"{tx:.1}\" y2=\"{axis_y}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/>\
             <text x=\"{tx:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11.5\">{}</text>",
            top - 8.0,
            axis_y + 16.0,
            fmt::sig_trim(t, 6)
        );
        t += step;
    }
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{axis_y}\" x2=\"{RIGHT}\" y2=\"{axis_y}\" stroke=\"currentColor\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11.5\">GiB (2<tspan baseline-shift=\"super\" font-size=\"8\">30</tspan> B)</text>",
        (LEFT + RIGHT) / 2.0,
        axis_y + 34.0
    );
    // Bars.
    for (i, (label, b)) in rows.iter().enumerate() {
        let y = top + i as f64 * (BAR + GAP);
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 8.0,
            y + BAR / 2.0 + 4.5,
            label
        );
        let mut acc = 0u128;
        for (part, color) in b.parts().into_iter().zip(COLORS) {
            if part == 0 {
                continue;
            }
            let x0 = x(acc as f64 / fmt::GIB);
            acc += part;
            let x1 = x(acc as f64 / fmt::GIB);
            let w = x1 - x0;
            let _ = writeln!(
                s,
                "<rect x=\"{x0:.2}\" y=\"{y}\" width=\"{w:.2}\" height=\"{BAR}\" fill=\"{color}\"><title>{} GiB</title></rect>",
                fmt::fixed(part as f64 / fmt::GIB, 2)
            );
            let label = fmt::fixed(part as f64 / fmt::GIB, 1);
            if w >= 8.0 * label.len() as f64 + 6.0 {
                let _ = writeln!(
                    s,
                    "<text x=\"{:.2}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11.5\" fill=\"#1a1a1a\">{label}</text>",
                    x0 + w / 2.0,
                    y + BAR / 2.0 + 4.0
                );
            }
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.2}\" y=\"{:.1}\" font-weight=\"bold\">{} GiB</text>",
            x(acc as f64 / fmt::GIB) + 5.0,
            y + BAR / 2.0 + 4.5,
            fmt::fixed(acc as f64 / fmt::GIB, 1)
        );
    }
    if over {
        let rx = x(H100_MEMORY as f64 / fmt::GIB);
        let _ = writeln!(
            s,
            "<line x1=\"{rx:.2}\" y1=\"{}\" x2=\"{rx:.2}\" y2=\"{axis_y}\" stroke=\"currentColor\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/>\
             <text x=\"{rx:.2}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11.5\">H100 80 GB</text>",
            top - 14.0,
            top - 18.0
        );
    }
    s.push_str("</svg>");
    s
}

pub(super) fn render(spec: &ModelRunSpec) -> String {
    let c = spec.model.config();
    let p = c.params();
    let total_p = p.total();
    let rows: Vec<(Regime, Breakdown)> = REGIMES
        .iter()
        .map(|&r| (r, breakdown(&c, spec.batch, spec.seq, r)))
        .collect();
    let act = layer_activations(&c, spec.batch, spec.seq);
    let ckpt = layer_checkpoint(&c, spec.batch, spec.seq);
    let over = rows.iter().any(|(_, b)| b.total() > H100_MEMORY);
    let id = format!(
        "calc-training-memory-{}-b{}-s{}",
        spec.model.name(),
        spec.batch,
        spec.seq
    );

    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-calc\" id=\"{id}\">");
    let labelled: Vec<(String, Breakdown)> = rows.iter().map(|(r, b)| (r.label().to_string(), *b)).collect();
    h.push_str(&svg(
        &labelled,
        "학습 메모리 구성: 세 가지 방식의 누적 막대 (GiB)",
    ));
    h.push('\n');
    h.push_str("<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>항목</th>");
    for (r, _) in &rows {
        let _ = write!(h, "<th>{}</th>", r.label());
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
    // Parameter count, summed from the configuration.
    let mut parts = vec![format!("token embedding V·d {}", fmt::int(p.token_embedding))];
    if p.position_embedding > 0 {
        parts.push(format!("position embedding {}", fmt::int(p.position_embedding)));
    }
    parts.push(format!("{} layers × {}", p.layers, fmt::int(p.per_layer.total())));
    parts.push(format!("final norm {}", fmt::int(p.final_norm)));
    if p.lm_head > 0 {
        parts.push(format!("LM head {}", fmt::int(p.lm_head)));
    } else {
        parts.push("LM head (embedding과 공유 tied) 0".into());
    }
    let _ = writeln!(
        h,
        "<tr><td>파라미터 수 P</td><td class=\"num\" colspan=\"3\"><strong>{}</strong> = {}</td></tr>",
        fmt::int(total_p),
        parts.join(" + ")
    );
    let cell = |b: u128, why: &str| {
        format!(
            "<td class=\"num\">{} B<br>{}<br><small>{why}</small></td>",
            fmt::int(b),
            fmt::gib(b)
        )
    };
    let names = [
        "weights 가중치",
        "gradients 기울기",
        "optimizer state (Adam m·v + master)",
        "activations",
    ];
    let why = |r: Regime, part: usize| -> String {
        match (r, part) {
            (Regime::Fp32, 0) | (Regime::Fp32, 1) => "4 B × P".into(),
            (Regime::Fp32, 2) => "m, v: 8 B × P".into(),
            (Regime::Fp32, _) => "2 × L × A (FP32)".into(),
            (_, 0) | (_, 1) => "2 B × P".into(),
            (_, 2) => "master 4 B + m, v 8 B = 12 B × P".into(),
            (Regime::Bf16Mixed, _) => "L × A".into(),
            (_, _) => "L × 2·s·b·h + A".into(),
        }
    };
    for (i, name) in names.iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td><span style=\"color:{}\">■</span> {name}</td>",
            COLORS[i]
        );
        for (r, b) in &rows {
            h.push_str(&cell(b.parts()[i], &why(*r, i)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("<tr><td><strong>합계 total</strong></td>");
    for (_, b) in &rows {
        let t = b.total();
        let mark = if t > H100_MEMORY {
            " <small>(&gt; H100 80 GB)</small>"
        } else {
            ""
        };
        let _ = write!(
            h,
            "<td class=\"num\"><strong>{} B<br>{}</strong>{mark}</td>",
            fmt::int(t),
            fmt::gib(t)
        );
    }
    h.push_str("</tr>\n</tbody>\n</table>\n</div>\n");

    h.push_str("<figcaption>");
    if let Some(cap) = &spec.caption {
        let _ = write!(h, "{} ", fmt::esc(cap.trim()));
    }
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력 model = {} ({}: L = {}, h = {}, a = {}, V = {}), batch b = {}, seq s = {}에서 계산한 값; \
         P는 모델 설정의 층 모양에서 센 값이다. 상태 바이트는 ZeRO(Rajbhandari et al. 2020)의 관례. \
         한 층의 16-bit activation A = s·b·h·(34 + 5·a·s/h) = {} B (Korthikanti et al. 2022, GPT 구조 기준); FP32는 그 2배. \
         checkpointing은 층마다 입력 2·s·b·h = {} B만 남기고 한 층의 A를 다시 계산한다. \
         임베딩·logits·loss의 activation과 임시 버퍼, 메모리 단편화는 포함하지 않는다.",
        spec.model.name(),
        c.label,
        c.layers,
        fmt::int(c.d_model),
        c.heads,
        fmt::int(c.vocab),
        fmt::int(spec.batch.into()),
        fmt::int(spec.seq.into()),
        fmt::int(act),
        fmt::int(ckpt),
    );
    if c.id != ModelId::Gpt2_124m {
        let _ = write!(
            h,
            " <strong>근사:</strong> activation 식은 GPT식 블록(MHA, 4h GELU MLP, LayerNorm)에서 유도된 것으로, {}의 GQA·SwiGLU·RMSNorm 블록에는 근사로 적용했다.",
            c.label
        );
    }
    if over {
        h.push_str(" <span class=\"datasheet\">점선: H100 80 GB = 8 × 10<sup>10</sup> B ≈ 74.5 GiB (데이터시트 용량, GB = 10<sup>9</sup> B).</span>");
    }
    h.push_str(" GiB = 2<sup>30</sup> B.</figcaption>\n</figure>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::models::{GPT2_124M, LLAMA3_8B};

    #[test]
    fn gpt2_layer_activations_by_hand() {
        // 34·1024·8·768 + 5·12·1024²·8
        assert_eq!(layer_activations(&GPT2_124M, 8, 1024), 213_909_504 + 503_316_480);
    }

    #[test]
    fn llama_regimes_exceed_80_gb() {
        let b = breakdown(&LLAMA3_8B, 1, 8192, Regime::Bf16Mixed);
        assert_eq!(b.weights, 2 * 8_030_261_248);
        assert!(b.total() > H100_MEMORY);
    }

    #[test]
    fn ticks() {
        assert_eq!(tick_step(19.5), 5.0);
        assert_eq!(tick_step(600.0), 100.0);
        assert_eq!(tick_step(3.0), 0.5);
    }
}
