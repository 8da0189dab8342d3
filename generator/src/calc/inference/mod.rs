//! `calc: inference-roofline` — where prefill and decode sit on the H100 roofline, per batch size,
//! and the lower bound on a decode step's time: max(FLOPs / peak, (weight bytes + KV bytes) /
//! bandwidth).
//!
//! Why separate the linear layers from attention: in a decode step every weight is read once and
//! used by all B sequences (intensity 2·B / bytes-per-weight, growing with the batch), while each
//! sequence's KV cache is read for that sequence alone (intensity 2·H / (H_kv · bytes), fixed by
//! the model's head layout whatever the batch). The step's intensity mixes the two, which is why a
//! large batch at long context still does not reach the ridge. The H100 peaks are the datasheet's
//! (`matmul::H100_BANDWIDTH`, BF16 dense Tensor Core), marked as such in the caption.

use super::fmt;
use super::kv::{Fields, KeyDoc, ParseError};
use super::kv_cache::{self, KvDtype, Scheme};
use super::matmul::{Dtype, H100_BANDWIDTH, H100_SOURCE};
use super::models::{ModelConfig, ModelId};
use std::fmt::Write as _;

/// Stored type of the weights (weight-only quantization dequantizes into BF16 matmuls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightType {
    Bf16,
    Fp8,
    Int8,
    Int4,
}

const WEIGHT_NAMES: &[&str] = &["bf16", "fp8", "int8", "int4"];

impl WeightType {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "bf16" => Some(Self::Bf16),
            "fp8" => Some(Self::Fp8),
            "int8" => Some(Self::Int8),
            "int4" => Some(Self::Int4),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        WEIGHT_NAMES[self as usize]
    }
    pub fn bits(self) -> u128 {
        match self {
            Self::Bf16 => 16,
            Self::Fp8 | Self::Int8 => 8,
            Self::Int4 => 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InferenceSpec {
    pub model: ModelId,
    pub context: u64,
    pub batches: Vec<u64>,
    pub weights: WeightType,
    pub kv: KvDtype,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "model",
        doc: "gpt2-124m, llama3-8b, llama3-70b, qwen3-0.6b or hdlc-lab",
    },
    KeyDoc {
        key: "context",
        doc: "tokens in each sequence's KV cache (decode) = prompt length (prefill)",
    },
    KeyDoc {
        key: "batches",
        doc: "decode batch sizes, e.g. [1, 8, 64, 256]",
    },
    KeyDoc {
        key: "weights",
        doc: "optional: bf16 (default), fp8, int8, int4 — stored weight type",
    },
    KeyDoc {
        key: "kv",
        doc: "optional: bf16 (default), fp8, int8 — KV-cache type",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

pub(super) fn parse(f: &Fields) -> Result<InferenceSpec, ParseError> {
    const KIND: &str = "inference-roofline";
    f.only(KIND, KEYS)?;
    let model = f.model(KIND, KEYS)?;
    let context = f.positive(KIND, "context", 1 << 24, KEYS)?;
    let Some(items) = f.list(KIND, "batches", KEYS)? else {
        return Err((
            f.calc_line,
            format!("`calc: {KIND}`: missing key `batches`"),
            super::kv::hint(KIND, KEYS),
        ));
    };
    let mut batches = Vec::new();
    for (s, line) in items {
        match s.replace('_', "").parse::<u64>() {
            Ok(v) if (1..=1 << 20).contains(&v) && !batches.contains(&v) => batches.push(v),
            _ => {
                return Err((
                    line,
                    format!("`calc: {KIND}`: batch `{s}` is not a new positive integer up to 1,048,576"),
                    "write distinct batch sizes, e.g. `batches: [1, 8, 64, 256]`".into(),
                ))
            }
        }
    }
    if batches.len() > 12 {
        return Err((
            f.calc_line,
            format!("`calc: {KIND}`: at most 12 batch sizes"),
            "keep the table readable".into(),
        ));
    }
    let weights = match f.scalar(KIND, "weights", KEYS)? {
        None => WeightType::Bf16,
        Some((s, line)) => WeightType::parse(&s).ok_or_else(|| {
            (
                line,
                format!("`calc: {KIND}`: unknown weights `{s}`"),
                format!("weights is one of: {}", WEIGHT_NAMES.join(", ")),
            )
        })?,
    };
    let kv = kv_cache::parse_kv_dtype(KIND, "kv", f, KEYS)?.unwrap_or(KvDtype::Bf16);
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(InferenceSpec {
        model,
        context,
        batches,
        weights,
        kv,
        caption,
    })
}

/// Parameters that take part in a matmul per token: every layer's projections and MLP, and the
/// LM head (the embedding lookup is a gather, the norms are vectors; both left out).
pub fn matmul_params(c: &ModelConfig) -> u128 {
    let l = c.layer_params();
    c.layers * (l.attention + l.mlp) + c.vocab * c.d_model
}

/// One step's counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub linear_flops: u128,
    pub attention_flops: u128,
    pub weight_bytes: u128,
    pub kv_bytes: u128,
}

impl Step {
    pub fn flops(&self) -> u128 {
        self.linear_flops + self.attention_flops
    }
    pub fn bytes(&self) -> u128 {
        self.weight_bytes + self.kv_bytes
    }
    pub fn intensity(&self) -> f64 {
        self.flops() as f64 / self.bytes() as f64
    }
    /// max(compute floor, memory floor), seconds.
    pub fn lower_bound(&self, peak: f64, bw: f64) -> f64 {
        (self.flops() as f64 / peak).max(self.bytes() as f64 / bw)
    }
}

fn weight_bytes(c: &ModelConfig, w: WeightType) -> u128 {
    matmul_params(c) * w.bits() / 8
}

/// One decode step: B sequences each add one token, attending over `ctx` cached tokens.
pub fn decode(c: &ModelConfig, b: u128, ctx: u128, w: WeightType, kv: KvDtype) -> Step {
    Step {
        linear_flops: 2 * b * matmul_params(c),
        attention_flops: b * c.layers * 4 * c.heads * c.d_head * ctx,
        weight_bytes: weight_bytes(c, w),
        kv_bytes: b * ctx * kv_cache::bytes_per_token(c, Scheme::Gqa(c.kv_heads), kv),
    }
}

/// Prefill of one prompt of `s` tokens (causal: position t attends to t + 1 positions); the KV
/// bytes are the cache written once.
pub fn prefill(c: &ModelConfig, s: u128, w: WeightType, kv: KvDtype) -> Step {
    Step {
        linear_flops: 2 * s * matmul_params(c),
        attention_flops: c.layers * 4 * c.heads * c.d_head * s * (s + 1) / 2,
        weight_bytes: weight_bytes(c, w),
        kv_bytes: s * kv_cache::bytes_per_token(c, Scheme::Gqa(c.kv_heads), kv),
    }
}

/// Smallest batch at which the linear layers alone reach the ridge: 2·B / bytes-per-weight ≥ ridge.
pub fn linear_crossover(ridge: f64, w: WeightType) -> u128 {
    (ridge * w.bits() as f64 / 16.0).ceil() as u128
}

/// Smallest batch at which the whole decode step (linear + attention at `ctx`) is compute-bound,
/// or None when attention's fixed intensity keeps it below the ridge at any batch.
pub fn step_crossover(
    c: &ModelConfig,
    ctx: u128,
    w: WeightType,
    kv: KvDtype,
    peak: f64,
    bw: f64,
) -> Option<u128> {
    let one = decode(c, 1, ctx, w, kv);
    // B·F1/peak ≥ (W + B·K)/bw  ⇔  B·(F1·bw − K·peak) ≥ W·peak.
    let denom = one.flops() as f64 * bw - one.kv_bytes as f64 * peak;
    if denom <= 0.0 {
        return None;
    }
    Some((one.weight_bytes as f64 * peak / denom).ceil() as u128)
}

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

pub(super) fn render(spec: &InferenceSpec) -> String {
    let c = spec.model.config();
    let peak = Dtype::Bf16.h100_peak();
    let bw = H100_BANDWIDTH;
    let ridge = peak / bw;
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
        let lin_i = st.linear_flops as f64 / st.weight_bytes as f64;
        let att_i = st.attention_flops as f64 / st.kv_bytes as f64;
        let t = st.lower_bound(peak, bw);
        let wall = if st.intensity() < ridge {
            "memory"
        } else {
            "compute"
        };
        points.push((format!("B={b}"), st.intensity(), false));
        let _ = writeln!(
            rows,
            "<tr><td>decode, B = {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong> ({wall})</td><td class=\"num\">{}</td></tr>",
            fmt::int(b.into()),
            fmt::sig_trim(lin_i, 4),
            fmt::sig_trim(att_i, 4),
            fmt::sig_trim(st.intensity(), 4),
            fmt::time(st.weight_bytes as f64 / bw),
            fmt::time(st.kv_bytes as f64 / bw),
            fmt::time(st.flops() as f64 / peak),
            fmt::time(t),
            fmt::sig(b as f64 / t, 4),
        );
    }
    let p = prefill(&c, ctx, w, kv);
    let pt = p.lower_bound(peak, bw);
    points.push(("prefill".into(), p.intensity(), true));
    let _ = writeln!(
        rows,
        "<tr><td>prefill, 1 × {} tokens</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"><strong>{}</strong> ({})</td><td class=\"num\">{}</td></tr>",
        fmt::int(ctx),
        fmt::sig_trim(p.linear_flops as f64 / p.weight_bytes as f64, 4),
        fmt::sig_trim(p.attention_flops as f64 / p.kv_bytes as f64, 4),
        fmt::sig_trim(p.intensity(), 4),
        fmt::time(p.weight_bytes as f64 / bw),
        fmt::time(p.kv_bytes as f64 / bw),
        fmt::time(p.flops() as f64 / peak),
        fmt::time(pt),
        if p.intensity() < ridge { "memory" } else { "compute" },
        fmt::sig(ctx as f64 / pt, 4),
    );
    let lin_b = linear_crossover(ridge, w);
    let step_b = step_crossover(&c, ctx, w, kv, peak, bw);

    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-calc\" id=\"{id}\">");
    h.push_str(&svg(&points, peak, bw));
    h.push_str("\n<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>단계</th><th>linear FLOP/B</th><th>attention FLOP/B</th><th>step FLOP/B</th><th>가중치 읽기 시간</th><th>KV 시간</th><th>연산 시간</th><th>시간 하한 (lower bound)</th><th>tokens/s 상한</th></tr>\n</thead>\n<tbody>\n");
    h.push_str(&rows);
    let _ = writeln!(
        h,
        "<tr><td colspan=\"9\">linear 층만 compute-bound가 되는 batch: 2·B·8/{} ≥ {} → <strong>B ≥ {}</strong>. context {}에서 attention까지 합친 decode step 전체: {}</td></tr>",
        w.bits(),
        fmt::sig_trim(ridge, 4),
        fmt::int(lin_b),
        fmt::int(ctx),
        match step_b {
            Some(b) => format!("<strong>B ≥ {}</strong>", fmt::int(b)),
            None => "<strong>어떤 batch에서도 memory-bound</strong> (attention의 FLOP/B가 batch와 무관하게 ridge보다 낮다)".into(),
        }
    );
    h.push_str("</tbody>\n</table>\n</div>\n<figcaption>");
    if let Some(cap) = &spec.caption {
        let _ = write!(h, "{} ", fmt::esc(cap.trim()));
    }
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력 model = {} ({}), context = {}, weights = {} ({} bit), KV = {}에서 계산한 값. \
         matmul에 참여하는 파라미터 P = L·(attention + MLP) + V·d = {} (임베딩 gather와 norm 제외); decode step의 linear FLOPs = 2·B·P, \
         attention FLOPs = B·L·4·H·d<sub>head</sub>·context; 바이트 = 가중치 P·{}/8 B (한 step에 한 번) + B·context·(토큰당 KV) B. \
         activation 읽기·쓰기, 양자화 scale, 커널 실행 오버헤드는 세지 않았으므로 시간은 하한이고 tokens/s는 상한이다. \
         weight-only 양자화는 BF16 행렬 곱으로 역양자화된다고 보고 연산 peak는 BF16을 썼다. \
         <span class=\"datasheet\">데이터시트 수치(측정값 아님): H100 SXM5 HBM3 {} · BF16 Tensor Core dense {} (ridge {} FLOP/B) — {H100_SOURCE}.</span></figcaption>\n</figure>",
        spec.model.name(),
        c.label,
        fmt::int(ctx),
        w.name(),
        w.bits(),
        kv.name(),
        fmt::int(matmul_params(&c)),
        w.bits(),
        fmt::bytes_rate(bw),
        fmt::flops_rate(peak),
        fmt::sig_trim(ridge, 4),
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::models::LLAMA3_8B;

    #[test]
    fn llama3_8b_decode_by_hand() {
        // 32 · 218,112,000 − norms 32 · 8,192 ... counted without norms: per layer
        // attention 2·4096² + 2·4096·1024 = 41,943,040, MLP 3·4096·14336 = 176,160,768;
        // LM head 128,256 · 4096 = 525,336,576.
        let p = matmul_params(&LLAMA3_8B);
        assert_eq!(p, 32 * (41_943_040 + 176_160_768) + 525_336_576);
        let s = decode(&LLAMA3_8B, 1, 4096, WeightType::Bf16, KvDtype::Bf16);
        assert_eq!(s.weight_bytes, 2 * p);
        assert_eq!(s.kv_bytes, 4096 * 131_072);
        // Linear intensity at batch 1, BF16: exactly 1 FLOP/B.
        assert_eq!(s.linear_flops, s.weight_bytes);
        // Attention intensity: 4·32·128·32·4096 / (4096·131,072) = 4 FLOP/B (GQA group 4, 2 B).
        assert_eq!(s.attention_flops, 4 * s.kv_bytes);
    }

    #[test]
    fn crossovers() {
        let ridge = 989e12 / 3.35e12; // 295.22
        assert_eq!(linear_crossover(ridge, WeightType::Bf16), 296);
        assert_eq!(linear_crossover(ridge, WeightType::Int8), 148);
        assert_eq!(linear_crossover(ridge, WeightType::Int4), 74);
        // With a 4096-token context, attention at 4 FLOP/B never lets the step reach 295.
        assert_eq!(
            step_crossover(&LLAMA3_8B, 4096, WeightType::Bf16, KvDtype::Bf16, 989e12, 3.35e12),
            None
        );
        // A 1-token context is almost pure linear: just above the linear crossover.
        let b = step_crossover(&LLAMA3_8B, 1, WeightType::Bf16, KvDtype::Bf16, 989e12, 3.35e12).unwrap();
        assert!((296..=300).contains(&b), "{b}");
    }

    #[test]
    fn prefill_is_compute_bound() {
        let p = prefill(&LLAMA3_8B, 4096, WeightType::Bf16, KvDtype::Bf16);
        assert!(p.intensity() > 989e12 / 3.35e12);
        assert_eq!(p.attention_flops, 32 * 4 * 32 * 128 * 4096 * 4097 / 2);
    }

    #[test]
    fn parse_errors() {
        use crate::calc::kv::{entries, Fields};
        let f = |s: &str| parse(&Fields::new(entries(s).unwrap()));
        assert_eq!(
            f("calc: inference-roofline\nmodel: llama3-8b\ncontext: 8\nbatches: [1, x]\n")
                .unwrap_err()
                .0,
            4
        );
        assert_eq!(
            f("calc: inference-roofline\nmodel: llama3-8b\ncontext: 8\nbatches: [1]\nweights: int3\n")
                .unwrap_err()
                .0,
            5
        );
        assert_eq!(
            f("calc: inference-roofline\nmodel: llama3-8b\ncontext: 8\n")
                .unwrap_err()
                .0,
            1
        );
        assert!(
            f("calc: inference-roofline\nmodel: llama3-8b\ncontext: 8\nbatches: [1, 64]\nkv: fp8\n").is_ok()
        );
    }
}
