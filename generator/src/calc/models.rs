//! The model configurations the calculators know, and parameter counts derived from them.
//!
//! Why counted rather than typed in: a parameter count typed into a card cannot be checked; one
//! summed here from the layer shapes is the same sum the shapes table shows, so the two figures
//! (and the training-memory bars built on it) always agree.

/// A model a `calc:` block may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelId {
    Gpt2_124m,
    Llama3_8b,
    Llama3_70b,
    Qwen3_0_6b,
    HdlcLab,
}

/// Names accepted in a block, in the order hints list them.
pub const MODEL_NAMES: &[&str] = &["gpt2-124m", "llama3-8b", "llama3-70b", "qwen3-0.6b", "hdlc-lab"];

/// The same names as a `model` key's documentation says them (`hdlc calcspec`).
pub const MODEL_DOC: &str = "gpt2-124m, llama3-8b, llama3-70b, qwen3-0.6b or hdlc-lab";

impl ModelId {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "gpt2-124m" => Some(ModelId::Gpt2_124m),
            "llama3-8b" => Some(ModelId::Llama3_8b),
            "llama3-70b" => Some(ModelId::Llama3_70b),
            "qwen3-0.6b" => Some(ModelId::Qwen3_0_6b),
            "hdlc-lab" => Some(ModelId::HdlcLab),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ModelId::Gpt2_124m => "gpt2-124m",
            ModelId::Llama3_8b => "llama3-8b",
            ModelId::Llama3_70b => "llama3-70b",
            ModelId::Qwen3_0_6b => "qwen3-0.6b",
            ModelId::HdlcLab => "hdlc-lab",
        }
    }

    pub fn config(self) -> ModelConfig {
        match self {
            ModelId::Gpt2_124m => GPT2_124M,
            ModelId::Llama3_8b => LLAMA3_8B,
            ModelId::Llama3_70b => LLAMA3_70B,
            ModelId::Qwen3_0_6b => QWEN3_0_6B,
            ModelId::HdlcLab => HDLC_LAB,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Scale γ and shift β: 2·d parameters.
    LayerNorm,
    /// Scale only: d parameters.
    RmsNorm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mlp {
    /// up [d, f] → GELU → down [f, d].
    Gelu,
    /// gate [d, f], up [d, f] → SiLU(gate) ⊙ up → down [f, d].
    SwiGlu,
}

/// A decoder-only Transformer as the calculators see it. All sizes in u128 so that products of
/// them never overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelConfig {
    pub id: ModelId,
    /// Display name, e.g. "GPT-2 124M".
    pub label: &'static str,
    /// Where the configuration comes from.
    pub source: &'static str,
    pub layers: u128,
    pub d_model: u128,
    pub heads: u128,
    pub kv_heads: u128,
    pub d_head: u128,
    pub ffn: u128,
    pub vocab: u128,
    /// Rows of a learned positional-embedding table (which also caps the sequence length).
    pub learned_positions: Option<u128>,
    pub norm: Norm,
    pub mlp: Mlp,
    /// LM head shares the token-embedding matrix.
    pub tied_embeddings: bool,
    /// Linear layers carry biases.
    pub bias: bool,
    /// An RMSNorm over d_head on every query and key head (Qwen3): 2·d_head scales per layer.
    pub qk_norm: bool,
}

pub const GPT2_124M: ModelConfig = ModelConfig {
    id: ModelId::Gpt2_124m,
    label: "GPT-2 124M",
    source: "Radford et al. 2019",
    layers: 12,
    d_model: 768,
    heads: 12,
    kv_heads: 12,
    d_head: 64,
    ffn: 3072,
    vocab: 50257,
    learned_positions: Some(1024),
    norm: Norm::LayerNorm,
    mlp: Mlp::Gelu,
    tied_embeddings: true,
    bias: true,
    qk_norm: false,
};

pub const LLAMA3_8B: ModelConfig = ModelConfig {
    id: ModelId::Llama3_8b,
    label: "Llama 3 8B",
    source: "Meta Llama 3 model card, 2024",
    layers: 32,
    d_model: 4096,
    heads: 32,
    kv_heads: 8,
    d_head: 128,
    ffn: 14336,
    vocab: 128256,
    learned_positions: None,
    norm: Norm::RmsNorm,
    mlp: Mlp::SwiGlu,
    tied_embeddings: false,
    bias: false,
    qk_norm: false,
};

pub const LLAMA3_70B: ModelConfig = ModelConfig {
    id: ModelId::Llama3_70b,
    label: "Llama 3 70B",
    source: "Meta Llama 3 model card, 2024",
    layers: 80,
    d_model: 8192,
    heads: 64,
    kv_heads: 8,
    d_head: 128,
    ffn: 28672,
    vocab: 128256,
    learned_positions: None,
    norm: Norm::RmsNorm,
    mlp: Mlp::SwiGlu,
    tied_embeddings: false,
    bias: false,
    qk_norm: false,
};

/// The shape the serving engine's random-weight model copies (no weights are downloaded).
pub const QWEN3_0_6B: ModelConfig = ModelConfig {
    id: ModelId::Qwen3_0_6b,
    label: "Qwen3 0.6B",
    source: "Qwen3 Technical Report, 2025; Qwen/Qwen3-0.6B config.json",
    layers: 28,
    d_model: 1024,
    heads: 16,
    kv_heads: 8,
    d_head: 128,
    ffn: 3072,
    vocab: 151936,
    learned_positions: None,
    norm: Norm::RmsNorm,
    mlp: Mlp::SwiGlu,
    tied_embeddings: true,
    bias: false,
    qk_norm: true,
};

/// The book's own lab model (kernels/labs/pytorch/model.py and its JAX twin): byte-level, small
/// enough to train for a few hundred steps inside a two-minute lab.
pub const HDLC_LAB: ModelConfig = ModelConfig {
    id: ModelId::HdlcLab,
    label: "hdlc-lab",
    source: "this book's lab model (kernels/labs)",
    layers: 8,
    d_model: 512,
    heads: 8,
    kv_heads: 2,
    d_head: 64,
    ffn: 1536,
    vocab: 256,
    learned_positions: None,
    norm: Norm::RmsNorm,
    mlp: Mlp::SwiGlu,
    tied_embeddings: false,
    bias: false,
    qk_norm: false,
};

/// Parameters of one Transformer layer, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerParams {
    /// Q, K, V, O projections (with biases where the model has them).
    pub attention: u128,
    pub mlp: u128,
    /// The two norms of the layer.
    pub norms: u128,
}

impl LayerParams {
    pub fn total(&self) -> u128 {
        self.attention + self.mlp + self.norms
    }
}

/// Parameters of the whole model, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamCount {
    pub token_embedding: u128,
    pub position_embedding: u128,
    pub per_layer: LayerParams,
    pub layers: u128,
    pub final_norm: u128,
    /// 0 when tied to the token embedding.
    pub lm_head: u128,
}

impl ParamCount {
    pub fn total(&self) -> u128 {
        self.token_embedding
            + self.position_embedding
            + self.layers * self.per_layer.total()
            + self.final_norm
            + self.lm_head
    }
}

impl ModelConfig {
    /// Width of the query (and attention-output) projection: H·d_head.
    pub fn q_width(&self) -> u128 {
        self.heads * self.d_head
    }

    /// Width of each of the K and V projections: H_kv·d_head.
    pub fn kv_width(&self) -> u128 {
        self.kv_heads * self.d_head
    }

    /// Parameters of one norm over `d_model`.
    pub fn norm_params(&self) -> u128 {
        match self.norm {
            Norm::LayerNorm => 2 * self.d_model,
            Norm::RmsNorm => self.d_model,
        }
    }

    pub fn layer_params(&self) -> LayerParams {
        let d = self.d_model;
        let b = u128::from(self.bias);
        let q = d * self.q_width() + b * self.q_width();
        let k = d * self.kv_width() + b * self.kv_width();
        let v = k;
        let o = self.q_width() * d + b * d;
        let mlp = match self.mlp {
            Mlp::Gelu => d * self.ffn + b * self.ffn + self.ffn * d + b * d,
            Mlp::SwiGlu => 2 * (d * self.ffn + b * self.ffn) + self.ffn * d + b * d,
        };
        LayerParams {
            attention: q + k + v + o,
            mlp,
            norms: 2 * self.norm_params() + if self.qk_norm { 2 * self.d_head } else { 0 },
        }
    }

    pub fn params(&self) -> ParamCount {
        let embed = self.vocab * self.d_model;
        ParamCount {
            token_embedding: embed,
            position_embedding: self.learned_positions.map_or(0, |p| p * self.d_model),
            per_layer: self.layer_params(),
            layers: self.layers,
            final_norm: self.norm_params(),
            lm_head: if self.tied_embeddings { 0 } else { embed },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt2_matches_the_closed_forms() {
        let c = GPT2_124M;
        let d = c.d_model;
        let l = c.layer_params();
        assert_eq!(l.attention, 4 * d * d + 4 * d);
        assert_eq!(l.mlp, 8 * d * d + 5 * d);
        assert_eq!(l.norms, 4 * d);
        assert_eq!(c.params().total(), 124_439_808);
    }

    #[test]
    fn llama_matches_the_model_card() {
        let p = LLAMA3_8B.params();
        assert_eq!(p.per_layer.total(), 218_112_000);
        assert_eq!(p.total(), 8_030_261_248);
    }

    #[test]
    fn llama_70b_matches_the_model_card() {
        // 70.55 B as summed from the published config.json shapes.
        assert_eq!(LLAMA3_70B.params().total(), 70_553_706_496);
    }

    #[test]
    fn qwen3_small_counts_qk_norm_and_ties_the_head() {
        let p = QWEN3_0_6B.params();
        assert_eq!(p.lm_head, 0);
        assert_eq!(p.per_layer.norms, 2 * 1024 + 2 * 128);
        // Qwen reports 0.6 B parameters (0.44 B without embeddings).
        assert_eq!(p.total(), 596_049_920);
        assert_eq!(p.total() - p.token_embedding, 440_467_456);
    }

    #[test]
    fn hdlc_lab_is_small() {
        let l = HDLC_LAB.layer_params();
        assert_eq!(l.attention, 512 * 512 * 2 + 512 * 128 * 2);
        assert_eq!(l.mlp, 3 * 512 * 1536);
        assert_eq!(
            HDLC_LAB.params().total(),
            8 * (655_360 + 2_359_296 + 1024) + 512 + 2 * 256 * 512
        );
    }
}
