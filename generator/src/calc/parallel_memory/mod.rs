//! `calc: parallel-memory` — bytes per GPU when training a known model with data parallelism
//! (plain, ZeRO-1/2/3 = FSDP), tensor parallelism (Megatron, optionally with sequence
//! parallelism), pipeline parallelism (1F1B) and activation checkpointing, all at once.
//!
//! Why a calculator: the per-GPU sum mixes four divisions (ZeRO by dp, TP by t, PP by p, SP by t
//! on activations) and the stage that holds the embedding; typed by hand it drifts, here it
//! follows from the model config and is held to hand-worked cases by the tests.
//!
//! Conventions, with their sources:
//! - BF16 mixed precision with Adam: 2 B weights + 2 B gradients + 12 B optimizer state (FP32
//!   master, m, v) per parameter; ZeRO stage 1 divides the optimizer state by dp, stage 2 also
//!   the gradients, stage 3 also the weights (Rajbhandari et al. 2020).
//! - TP splits the attention and MLP matrices t ways (Shoeybi et al. 2019) and the vocabulary of
//!   embedding and LM head (padded up); norms are replicated.
//! - PP splits the L layers into p equal stages; the first stage holds the embedding, the last
//!   the final norm and the LM head; the figure reports the heavier of the two.
//! - Activations of one layer, 16-bit (Korthikanti et al. 2022, Table 2): without SP
//!   s·b·h·(10 + 24/t + 5·a·s/(h·t)), with SP s·b·h·(34 + 5·a·s/h)/t. With 1F1B the first stage
//!   keeps p micro-batches in flight, each with L/p layers (so L layers' worth). Full
//!   checkpointing keeps each layer's input (2·s·b·h, /t with SP) and one layer's activations.

mod render;

use super::kv::{Fields, KeyDoc, ParseError};
use super::memory::layer_activations;
use super::memory_bars::Breakdown;
use super::models::{ModelConfig, ModelId};

pub(super) use render::render;

const KIND: &str = "parallel-memory";

/// A parsed `calc: parallel-memory` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelMemorySpec {
    pub model: ModelId,
    /// Sequences per micro-batch on one GPU.
    pub batch: u64,
    pub seq: u64,
    pub layout: Layout,
    pub caption: Option<String>,
}

/// How the model is split (shared with `calc: parallel-explorer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub dp: u64,
    pub tp: u64,
    pub pp: u64,
    pub sp: bool,
    pub checkpointing: bool,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "model",
        doc: crate::calc::models::MODEL_DOC,
    },
    KeyDoc {
        key: "batch",
        doc: "sequences per micro-batch per GPU",
    },
    KeyDoc {
        key: "seq",
        doc: "tokens per sequence",
    },
    KeyDoc {
        key: "dp",
        doc: "data-parallel degree (ZeRO shards over it)",
    },
    KeyDoc {
        key: "tp",
        doc: "tensor-parallel degree, divides the heads and KV heads",
    },
    KeyDoc {
        key: "pp",
        doc: "pipeline stages, divides the layers",
    },
    KeyDoc {
        key: "sp",
        doc: "optional on|off: sequence parallelism with TP (default off)",
    },
    KeyDoc {
        key: "checkpointing",
        doc: "optional none|full (default none)",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

/// An optional scalar from a fixed set; `None` when absent.
pub(super) fn choice(
    f: &Fields,
    kind: &str,
    key: &str,
    allowed: &[&str],
    keys: &[KeyDoc],
) -> Result<Option<(String, usize)>, ParseError> {
    match f.scalar(kind, key, keys)? {
        None => Ok(None),
        Some((v, line)) if allowed.contains(&v.as_str()) => Ok(Some((v, line))),
        Some((v, line)) => Err((
            line,
            format!("`calc: {kind}`: `{key}: {v}` is not allowed"),
            format!("`{key}` is one of: {}", allowed.join(", ")),
        )),
    }
}

/// Why `tp`/`pp` cannot split this model, if they cannot.
pub fn layout_problem(c: &ModelConfig, tp: u64, pp: u64) -> Option<(&'static str, String)> {
    let (t, p) = (u128::from(tp), u128::from(pp));
    if !c.heads.is_multiple_of(t) || !c.kv_heads.is_multiple_of(t) {
        return Some((
            "tp",
            format!(
                "tp {tp} does not divide {}'s {} heads and {} KV heads",
                c.label, c.heads, c.kv_heads
            ),
        ));
    }
    if !c.layers.is_multiple_of(p) {
        return Some((
            "pp",
            format!("pp {pp} does not divide {}'s {} layers", c.label, c.layers),
        ));
    }
    None
}

pub(super) fn parse(f: &Fields) -> Result<ParallelMemorySpec, ParseError> {
    f.only(KIND, KEYS)?;
    let model = f.model(KIND, KEYS)?;
    let batch = f.positive(KIND, "batch", super::memory::MAX_BATCH, KEYS)?;
    let seq = f.positive(KIND, "seq", super::memory::MAX_SEQ, KEYS)?;
    let dp = f.positive(KIND, "dp", 1 << 20, KEYS)?;
    let tp = f.positive(KIND, "tp", 1024, KEYS)?;
    let pp = f.positive(KIND, "pp", 1024, KEYS)?;
    let c = model.config();
    if let Some((key, msg)) = layout_problem(&c, tp, pp) {
        let line = f.scalar(KIND, key, KEYS)?.map_or(f.calc_line, |(_, l)| l);
        return Err((
            line,
            format!("`calc: {KIND}`: {msg}"),
            format!("choose `{key}` that divides it"),
        ));
    }
    if let Some(p) = c.learned_positions {
        if u128::from(seq) > p {
            let line = f.scalar(KIND, "seq", KEYS)?.map_or(f.calc_line, |(_, l)| l);
            return Err((
                line,
                format!("`calc: {KIND}`: seq {seq} exceeds {} positions", p),
                format!("use seq ≤ {p}"),
            ));
        }
    }
    let sp = choice(f, KIND, "sp", &["on", "off"], KEYS)?.is_some_and(|(v, _)| v == "on");
    let checkpointing =
        choice(f, KIND, "checkpointing", &["none", "full"], KEYS)?.is_some_and(|(v, _)| v == "full");
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(ParallelMemorySpec {
        model,
        batch,
        seq,
        layout: Layout {
            dp,
            tp,
            pp,
            sp,
            checkpointing,
        },
        caption,
    })
}

fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

/// Parameters held by one GPU of the heavier pipeline stage (first or last).
pub fn params_per_gpu(c: &ModelConfig, tp: u64, pp: u64) -> u128 {
    let (t, p) = (u128::from(tp), u128::from(pp));
    let pc = c.params();
    let l = pc.per_layer;
    let layer = (l.attention + l.mlp) / t + l.norms;
    let layers = (c.layers / p) * layer;
    let embed = ceil_div(pc.token_embedding, t) + pc.position_embedding;
    // A tied head still needs its copy of the matrix on the last stage once the two are apart.
    let head = if c.tied_embeddings {
        if p > 1 {
            ceil_div(pc.token_embedding, t)
        } else {
            0
        }
    } else {
        ceil_div(pc.lm_head, t)
    };
    if p == 1 {
        layers + embed + head + pc.final_norm
    } else {
        (layers + embed).max(layers + head + pc.final_norm)
    }
}

/// 16-bit activation bytes of one layer for one micro-batch, split t ways as Megatron does.
pub fn layer_activations_tp(c: &ModelConfig, batch: u64, seq: u64, tp: u64, sp: bool) -> u128 {
    let (b, s, t) = (u128::from(batch), u128::from(seq), u128::from(tp));
    let sbh = s * b * c.d_model;
    let scores = 5 * c.heads * s * s * b;
    if sp {
        ceil_div(34 * sbh + scores, t)
    } else {
        10 * sbh + ceil_div(24 * sbh + scores, t)
    }
}

/// Bytes per GPU for ZeRO stage `zero` (0..=3) under `layout`.
pub fn per_gpu(c: &ModelConfig, batch: u64, seq: u64, layout: Layout, zero: u8) -> Breakdown {
    let psi = params_per_gpu(c, layout.tp, layout.pp);
    let dp = u128::from(layout.dp);
    let shard = |bytes: u128, from_stage: u8| {
        if zero >= from_stage {
            ceil_div(bytes, dp)
        } else {
            bytes
        }
    };
    let a = layer_activations_tp(c, batch, seq, layout.tp, layout.sp);
    let layers_per_stage = c.layers / u128::from(layout.pp);
    let in_flight = u128::from(layout.pp); // 1F1B: the first stage holds p micro-batches
    let activations = if layout.checkpointing {
        let input = 2 * u128::from(seq) * u128::from(batch) * c.d_model;
        let input = if layout.sp {
            ceil_div(input, u128::from(layout.tp))
        } else {
            input
        };
        in_flight * layers_per_stage * input + a
    } else {
        in_flight * layers_per_stage * a
    };
    debug_assert_eq!(
        layer_activations_tp(c, batch, seq, 1, false),
        layer_activations(c, batch, seq)
    );
    Breakdown {
        weights: shard(2 * psi, 3),
        gradients: shard(2 * psi, 2),
        optimizer: shard(12 * psi, 1),
        activations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::models::{GPT2_124M, LLAMA3_70B, LLAMA3_8B};

    fn lay(dp: u64, tp: u64, pp: u64) -> Layout {
        Layout {
            dp,
            tp,
            pp,
            sp: false,
            checkpointing: false,
        }
    }

    #[test]
    fn no_split_equals_training_memory() {
        let b = per_gpu(&GPT2_124M, 8, 1024, lay(1, 1, 1), 0);
        let r = super::super::memory::breakdown(&GPT2_124M, 8, 1024, super::super::memory::Regime::Bf16Mixed);
        assert_eq!(b, r);
    }

    #[test]
    fn zero_stages_by_hand() {
        // Llama 3 8B, P = 8,030,261,248, dp 8: ZeRO-1 optimizer 12P/8, ZeRO-3 weights 2P/8.
        let p = 8_030_261_248u128;
        let z1 = per_gpu(&LLAMA3_8B, 1, 4096, lay(8, 1, 1), 1);
        assert_eq!(
            (z1.weights, z1.gradients, z1.optimizer),
            (2 * p, 2 * p, 12 * p / 8)
        );
        let z3 = per_gpu(&LLAMA3_8B, 1, 4096, lay(8, 1, 1), 3);
        assert_eq!((z3.weights, z3.gradients), (2 * p / 8, 2 * p / 8));
    }

    #[test]
    fn tp_and_pp_split_the_params_by_hand() {
        // Llama 3 70B, tp 8, pp 4: 20 layers of (attention + mlp)/8 + norms, plus V·d/8 embedding.
        let l = LLAMA3_70B.layer_params();
        let layer = (l.attention + l.mlp) / 8 + l.norms;
        let first = 20 * layer + 128_256 * 8192 / 8;
        let last = 20 * layer + 128_256 * 8192 / 8 + 8192;
        assert_eq!(params_per_gpu(&LLAMA3_70B, 8, 4), first.max(last));
    }

    #[test]
    fn activations_by_hand() {
        // GPT-2, b 1, s 1024, t 2, no SP: 10·sbh + (24·sbh + 5·a·s²·b)/2.
        let sbh = 1024 * 768;
        let want = 10 * sbh + (24 * sbh + 5 * 12 * 1024 * 1024) / 2;
        assert_eq!(layer_activations_tp(&GPT2_124M, 1, 1024, 2, false), want);
        assert_eq!(
            layer_activations_tp(&GPT2_124M, 1, 1024, 2, true),
            (34 * sbh + 5 * 12 * 1024 * 1024) / 2
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = crate::calc::parse(
            "calc: parallel-memory\nmodel: llama3-70b\nbatch: 1\nseq: 4096\ndp: 8\ntp: 3\npp: 1\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 6);
        let e = crate::calc::parse(
            "calc: parallel-memory\nmodel: llama3-8b\nbatch: 1\nseq: 4096\ndp: 8\ntp: 1\npp: 5\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 7);
        let e = crate::calc::parse(
            "calc: parallel-memory\nmodel: llama3-8b\nbatch: 1\nseq: 4096\ndp: 8\ntp: 1\npp: 1\nsp: yes\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 8);
    }
}
