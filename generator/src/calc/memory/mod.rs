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

mod render;

use super::kv::{Fields, KeyDoc, ParseError};
use super::models::{ModelConfig, ModelId};

pub use super::memory_bars::{Breakdown, H100_MEMORY};
pub(super) use render::render;

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
}
