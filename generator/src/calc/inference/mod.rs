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

mod render;

use super::kv::{Fields, KeyDoc, ParseError};
use super::kv_cache::{self, KvDtype, Scheme};
use super::models::{ModelConfig, ModelId};

pub(super) use render::render;

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
        doc: crate::calc::models::MODEL_DOC,
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
