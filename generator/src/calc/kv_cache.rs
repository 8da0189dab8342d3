//! `calc: kv-cache` — bytes of the KV cache per token and for batch × context, for one model's
//! layer count and head width under MHA, GQA, MQA and an MLA-style latent cache, and how many
//! tokens fit in a given HBM once the weights are loaded.
//!
//! Why a calculator: the KV cache is the number that decides how many requests an inference
//! server can hold, and it is pure arithmetic on the configuration (2 · L · H_kv · d_head · bytes
//! per token). Printing the rows side by side from one formula keeps a card's worked example and
//! its table in agreement. The MLA row uses DeepSeek-V2's published latent width
//! (kv_lora_rank 512 plus a 64-wide decoupled RoPE key per layer) on this model's layer count; the
//! caption says it is that hypothetical, not the model's own design.

use super::fmt;
use super::html;
use super::kv::{Fields, KeyDoc, ParseError};
use super::models::{ModelConfig, ModelId};
use std::fmt::Write as _;

/// Element type of the cached keys and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvDtype {
    Bf16,
    Fp8,
    Int8,
}

pub const KV_DTYPE_NAMES: &[&str] = &["bf16", "fp8", "int8"];

impl KvDtype {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "bf16" => Some(KvDtype::Bf16),
            "fp8" => Some(KvDtype::Fp8),
            "int8" => Some(KvDtype::Int8),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Int8 => "int8",
        }
    }
    pub fn bytes(self) -> u128 {
        match self {
            KvDtype::Bf16 => 2,
            KvDtype::Fp8 | KvDtype::Int8 => 1,
        }
    }
}

/// DeepSeek-V2's compressed KV width per layer: kv_lora_rank d_c = 512 plus the decoupled RoPE
/// key d_h^R = 64 (DeepSeek-AI 2024, "DeepSeek-V2", §2.1).
pub const MLA_LATENT: u128 = 512;
pub const MLA_ROPE: u128 = 64;

/// One way of caching attention state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// One K and one V head per query head.
    Mha,
    /// The model's own number of KV heads (when it is neither H nor 1).
    Gqa(u128),
    /// One K and one V head shared by all query heads.
    Mqa,
    /// A latent vector (plus a RoPE key) per layer, up-projected at attention time.
    Mla,
}

impl Scheme {
    pub fn label(self) -> String {
        match self {
            Scheme::Mha => "MHA".into(),
            Scheme::Gqa(g) => format!("GQA ({g} KV heads)"),
            Scheme::Mqa => "MQA".into(),
            Scheme::Mla => "MLA-style latent".into(),
        }
    }
}

/// Cached elements per token per layer.
pub fn elems_per_layer(c: &ModelConfig, s: Scheme) -> u128 {
    match s {
        Scheme::Mha => 2 * c.heads * c.d_head,
        Scheme::Gqa(g) => 2 * g * c.d_head,
        Scheme::Mqa => 2 * c.d_head,
        Scheme::Mla => MLA_LATENT + MLA_ROPE,
    }
}

/// Bytes per token over all layers.
pub fn bytes_per_token(c: &ModelConfig, s: Scheme, dt: KvDtype) -> u128 {
    c.layers * elems_per_layer(c, s) * dt.bytes()
}

/// The rows a model gets: MHA, its own GQA when it has one, MQA, MLA.
pub fn schemes(c: &ModelConfig) -> Vec<Scheme> {
    let mut v = vec![Scheme::Mha];
    if c.kv_heads != c.heads && c.kv_heads != 1 {
        v.push(Scheme::Gqa(c.kv_heads));
    }
    v.push(Scheme::Mqa);
    v.push(Scheme::Mla);
    v
}

/// BF16 weight bytes of the model (2 B per parameter).
pub fn weight_bytes(c: &ModelConfig) -> u128 {
    2 * c.params().total()
}

/// Tokens of cache that fit in `hbm` bytes after the weights, or None when the weights alone
/// do not fit.
pub fn tokens_fit(hbm: u128, weights: u128, per_token: u128) -> Option<u128> {
    hbm.checked_sub(weights).map(|free| free / per_token)
}

#[derive(Debug, Clone, PartialEq)]
pub struct KvCacheSpec {
    pub model: ModelId,
    pub batch: u64,
    pub context: u64,
    pub dtype: KvDtype,
    /// Memory of the device(s), decimal GB.
    pub hbm_gb: u64,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "model",
        doc: crate::calc::models::MODEL_DOC,
    },
    KeyDoc {
        key: "batch",
        doc: "sequences held at once, positive integer",
    },
    KeyDoc {
        key: "context",
        doc: "tokens per sequence, positive integer",
    },
    KeyDoc {
        key: "dtype",
        doc: "optional: bf16 (default), fp8, int8 — the cached K/V type",
    },
    KeyDoc {
        key: "hbm_gb",
        doc: "optional: device memory in decimal GB, default 80 (H100)",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

pub(super) fn parse(f: &Fields) -> Result<KvCacheSpec, ParseError> {
    const KIND: &str = "kv-cache";
    f.only(KIND, KEYS)?;
    let model = f.model(KIND, KEYS)?;
    let batch = f.positive(KIND, "batch", 1 << 20, KEYS)?;
    let context = f.positive(KIND, "context", 1 << 24, KEYS)?;
    let dtype = parse_kv_dtype(KIND, "dtype", f, KEYS)?.unwrap_or(KvDtype::Bf16);
    let hbm_gb = match f.scalar(KIND, "hbm_gb", KEYS)? {
        None => 80,
        Some(_) => f.positive(KIND, "hbm_gb", 1 << 20, KEYS)?,
    };
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(KvCacheSpec {
        model,
        batch,
        context,
        dtype,
        hbm_gb,
        caption,
    })
}

/// An optional KV dtype key.
pub(super) fn parse_kv_dtype(
    kind: &str,
    key: &str,
    f: &Fields,
    keys: &[KeyDoc],
) -> Result<Option<KvDtype>, ParseError> {
    match f.scalar(kind, key, keys)? {
        None => Ok(None),
        Some((s, line)) => KvDtype::parse(&s).map(Some).ok_or_else(|| {
            (
                line,
                format!("`calc: {kind}`: unknown {key} `{s}`"),
                format!("{key} is one of: {}", KV_DTYPE_NAMES.join(", ")),
            )
        }),
    }
}

pub(super) fn render(spec: &KvCacheSpec) -> String {
    let c = spec.model.config();
    let dt = spec.dtype;
    let (b, s) = (u128::from(spec.batch), u128::from(spec.context));
    let hbm = u128::from(spec.hbm_gb) * 1_000_000_000;
    let w = weight_bytes(&c);
    let id = format!(
        "calc-kv-cache-{}-b{}-c{}-{}",
        spec.model.name(),
        spec.batch,
        spec.context,
        dt.name()
    );
    let mut h = String::new();
    html::open_figure(&mut h, &id);
    html::open_table(
        &mut h,
        &[
            "방식 (scheme)",
            "층당 원소/토큰 (elements per token per layer)",
            "토큰당 바이트 (bytes per token, all layers)",
            &format!("batch {} × context {}", fmt::int(b), fmt::int(s)),
            "가중치 뒤 남는 HBM에 들어가는 토큰 (tokens that fit)",
            "MHA 대비",
        ],
    );
    for sc in schemes(&c) {
        scheme_row(&mut h, spec, &c, sc, hbm, w);
    }
    html::close_table(&mut h);
    caption(&mut h, spec, &c, hbm, w);
    h
}

/// One scheme's row: elements and bytes per token (with the formula), the whole batch × context,
/// how many tokens fit in the HBM left after the weights, and the saving against MHA.
fn scheme_row(h: &mut String, spec: &KvCacheSpec, c: &ModelConfig, sc: Scheme, hbm: u128, w: u128) {
    let dt = spec.dtype;
    let (b, s) = (u128::from(spec.batch), u128::from(spec.context));
    let mha = bytes_per_token(c, Scheme::Mha, dt);
    let e = elems_per_layer(c, sc);
    let per = bytes_per_token(c, sc, dt);
    let total = per * b * s;
    let formula = match sc {
        Scheme::Mha => format!("2·H·d<sub>head</sub> = 2·{}·{}", c.heads, c.d_head),
        Scheme::Gqa(g) => format!("2·H<sub>kv</sub>·d<sub>head</sub> = 2·{g}·{}", c.d_head),
        Scheme::Mqa => format!("2·1·d<sub>head</sub> = 2·{}", c.d_head),
        Scheme::Mla => format!("d<sub>c</sub> + d<sub>h</sub><sup>R</sup> = {MLA_LATENT} + {MLA_ROPE}"),
    };
    let fit = match tokens_fit(hbm, w, per) {
        Some(t) => format!(
            "{} tokens<br><small>= {} × {} context</small>",
            fmt::int(t),
            fmt::fixed(t as f64 / s as f64, 1),
            fmt::int(s)
        ),
        None => "— (가중치만으로 초과)".into(),
    };
    let _ = writeln!(
        h,
        "<tr><td>{}</td><td class=\"num\">{} <small>({formula})</small></td><td class=\"num\">{} B<br><small>= {} layers × {} × {} B</small></td>\
         <td class=\"num\">{} B<br>{}</td><td class=\"num\">{fit}</td><td class=\"num\">{}</td></tr>",
        sc.label(),
        fmt::int(e),
        fmt::int(per),
        c.layers,
        fmt::int(e),
        dt.bytes(),
        fmt::int(total),
        fmt::gib(total),
        if sc == Scheme::Mha {
            "1".to_string()
        } else {
            format!("1/{}", fmt::sig_trim(mha as f64 / per as f64, 4))
        }
    );
}

/// The inputs, the formula, what "fits" leaves out, and the MLA row's assumption.
fn caption(h: &mut String, spec: &KvCacheSpec, c: &ModelConfig, hbm: u128, w: u128) {
    let dt = spec.dtype;
    let (b, s) = (u128::from(spec.batch), u128::from(spec.context));
    html::open_caption(h, spec.caption.as_deref());
    let over = if w > hbm {
        format!(
            " 가중치({} B)가 이미 HBM {} GB를 넘는다.",
            fmt::int(w),
            spec.hbm_gb
        )
    } else {
        String::new()
    };
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력 model = {} ({}: L = {}, H = {}, H<sub>kv</sub> = {}, d<sub>head</sub> = {}), batch = {}, context = {}, KV dtype = {} (원소당 {} B), HBM = {} GB (10<sup>9</sup> B)에서 계산한 값. \
         토큰당 KV 바이트 = L × 층당 원소 × 원소 바이트. 남는 HBM = HBM − BF16 가중치 2 B × {} 파라미터 = {} B; activation·작업 버퍼·단편화는 빼지 않았으므로 들어가는 토큰 수는 상한이다.{over} \
         MLA 행은 DeepSeek-V2(DeepSeek-AI 2024)의 잠재 폭 d<sub>c</sub> = 512와 분리된 RoPE 키 d<sub>h</sub><sup>R</sup> = 64를 이 모델의 층 수에 적용한 가정이다(이 모델의 실제 설계가 아님). \
         int8/fp8 KV의 scale 값은 세지 않았다. GiB = 2<sup>30</sup> B.",
        spec.model.name(),
        c.label,
        c.layers,
        c.heads,
        c.kv_heads,
        c.d_head,
        fmt::int(b),
        fmt::int(s),
        dt.name(),
        dt.bytes(),
        spec.hbm_gb,
        fmt::int(c.params().total()),
        fmt::int(hbm.saturating_sub(w)),
    );
    html::close_figure(h);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::models::{LLAMA3_70B, LLAMA3_8B};

    #[test]
    fn llama3_8b_by_hand() {
        // 2 · 32 layers · 8 KV heads · 128 · 2 B = 131,072 B = 128 KiB per token.
        assert_eq!(
            bytes_per_token(&LLAMA3_8B, Scheme::Gqa(8), KvDtype::Bf16),
            131_072
        );
        // MHA: 2 · 32 · 32 · 128 · 2 = 524,288 B.
        assert_eq!(bytes_per_token(&LLAMA3_8B, Scheme::Mha, KvDtype::Bf16), 524_288);
        assert_eq!(
            bytes_per_token(&LLAMA3_8B, Scheme::Mqa, KvDtype::Fp8),
            2 * 32 * 128
        );
        // MLA latent: (512 + 64) · 32 layers · 2 B.
        assert_eq!(bytes_per_token(&LLAMA3_8B, Scheme::Mla, KvDtype::Bf16), 36_864);
        assert_eq!(schemes(&LLAMA3_8B).len(), 4);
    }

    #[test]
    fn what_fits_in_80_gb() {
        let w = weight_bytes(&LLAMA3_8B);
        assert_eq!(w, 16_060_522_496);
        // (80e9 − 16,060,522,496) / 131,072 = 63,939,477,504 / 131,072 = 487,819.5 → 487,819.
        assert_eq!(tokens_fit(80_000_000_000, w, 131_072), Some(487_819));
        // 70B in BF16 (141 GB) does not fit in one 80 GB device at all.
        assert_eq!(tokens_fit(80_000_000_000, weight_bytes(&LLAMA3_70B), 1), None);
        // 70B: 2 · 80 · 8 · 128 · 2 = 327,680 B per token.
        assert_eq!(
            bytes_per_token(&LLAMA3_70B, Scheme::Gqa(8), KvDtype::Bf16),
            327_680
        );
    }

    #[test]
    fn parse_errors_name_lines() {
        use crate::calc::kv::{entries, Fields};
        let f = Fields::new(
            entries("calc: kv-cache\nmodel: llama3-8b\nbatch: 1\ncontext: 8\ndtype: fp4\n").unwrap(),
        );
        assert_eq!(parse(&f).unwrap_err().0, 5);
        let f = Fields::new(entries("calc: kv-cache\nmodel: llama9\n").unwrap());
        assert_eq!(parse(&f).unwrap_err().0, 2);
        let f = Fields::new(entries("calc: kv-cache\nmodel: llama3-8b\nbatch: 1\n").unwrap());
        assert_eq!(parse(&f).unwrap_err().0, 1);
        let f = Fields::new(
            entries("calc: kv-cache\nmodel: llama3-8b\nbatch: 4\ncontext: 8192\nhbm_gb: 0\n").unwrap(),
        );
        assert_eq!(parse(&f).unwrap_err().0, 5);
        let s = parse(&Fields::new(
            entries("calc: kv-cache\nmodel: llama3-8b\nbatch: 4\ncontext: 8192\n").unwrap(),
        ))
        .unwrap();
        assert_eq!((s.hbm_gb, s.dtype), (80, KvDtype::Bf16));
    }
}
