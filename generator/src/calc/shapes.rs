//! `calc: transformer-shapes` — the tensor shapes through one Transformer block of a known model,
//! with named dimensions, element counts, the weights each step uses, and the FLOPs of every
//! matrix product (2 · rows · cols · inner).
//!
//! Why the weights are listed here too: their element counts summed over the block are exactly the
//! per-layer parameter count of [`super::models`], which the table prints as a check.

use super::fmt;
use super::html;
use super::memory::ModelRunSpec;
use super::models::{Mlp, ModelConfig, Norm};
use std::fmt::Write as _;

/// A named dimension: `("S", 1024)`.
type Dim = (&'static str, u128);

/// One step of the block.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What happens, e.g. "Q projection".
    pub op: String,
    /// The tensor the step produces, e.g. "Q".
    pub tensor: &'static str,
    pub shape: Vec<Dim>,
    /// Weights used by the step: (name, shape).
    pub weights: Vec<(String, Vec<Dim>)>,
    /// (rows, cols, inner) of a matrix product, batched dims folded into rows.
    pub matmul: Option<(u128, u128, u128)>,
    /// A matrix product repeated over batch dims (B·H products of [rows × inner]·[inner × cols]).
    pub matmul_batches: u128,
}

impl Step {
    pub fn elements(&self) -> u128 {
        self.shape.iter().map(|d| d.1).product()
    }
    pub fn weight_elements(&self) -> u128 {
        self.weights
            .iter()
            .map(|(_, s)| s.iter().map(|d| d.1).product::<u128>())
            .sum()
    }
    pub fn flops(&self) -> u128 {
        self.matmul
            .map_or(0, |(r, c, k)| 2 * r * c * k * self.matmul_batches)
    }
}

fn step(op: impl Into<String>, tensor: &'static str, shape: Vec<Dim>) -> Step {
    Step {
        op: op.into(),
        tensor,
        shape,
        weights: Vec::new(),
        matmul: None,
        matmul_batches: 1,
    }
}

/// The dimensions of one block for a batch, and the pieces every step is built from.
struct Block<'a> {
    c: &'a ModelConfig,
    b: u128,
    s: u128,
    d: u128,
}

impl Block<'_> {
    /// [B, S, d]: the residual stream's shape.
    fn bsd(&self) -> Vec<Dim> {
        vec![("B", self.b), ("S", self.s), ("d", self.d)]
    }

    /// [B, S, last]: a per-token tensor of another width.
    fn bs(&self, last: Dim) -> Vec<Dim> {
        vec![("B", self.b), ("S", self.s), last]
    }

    /// [B, heads, S, last]: a per-head tensor.
    fn per_head(&self, heads: Dim, last: Dim) -> Vec<Dim> {
        vec![("B", self.b), heads, ("S", self.s), last]
    }

    fn gqa(&self) -> bool {
        self.c.kv_heads != self.c.heads
    }

    fn norm_name(&self) -> &'static str {
        match self.c.norm {
            Norm::LayerNorm => "LayerNorm",
            Norm::RmsNorm => "RMSNorm",
        }
    }

    /// A norm's weights, subscript `n`: γ and β for LayerNorm, g for RMSNorm.
    fn norm_weights(&self, n: &str) -> Vec<(String, Vec<Dim>)> {
        let d = self.d;
        match self.c.norm {
            Norm::LayerNorm => vec![
                (format!("γ{n}"), vec![("d", d)]),
                (format!("β{n}"), vec![("d", d)]),
            ],
            Norm::RmsNorm => vec![(format!("g{n}"), vec![("d", d)])],
        }
    }

    /// A linear layer's weights [inp, out], with its bias when the model has biases.
    fn linear(&self, w: &str, inp: Dim, out: Dim) -> Vec<(String, Vec<Dim>)> {
        let mut v = vec![(w.to_string(), vec![inp, out])];
        if self.c.bias {
            v.push((format!("b{}", &w[1..]), vec![out]));
        }
        v
    }

    /// A step computed by a linear layer over all B·S tokens.
    fn projection(&self, op: &str, tensor: &'static str, w: &str, inp: Dim, out: Dim) -> Step {
        let mut st = step(op, tensor, self.bs(out));
        st.weights = self.linear(w, inp, out);
        st.matmul = Some((self.b * self.s, out.1, inp.1));
        st
    }

    /// A norm step, numbered `k` with subscript `n`.
    fn norm(&self, k: u8, n: &str) -> Step {
        let mut st = step(format!("{} {k}", self.norm_name()), "x̂", self.bsd());
        st.weights = self.norm_weights(n);
        st
    }
}

/// Every step of one block for batch `b` and sequence length `s`.
pub fn steps(c: &ModelConfig, b: u64, s: u64) -> Vec<Step> {
    let k = Block {
        c,
        b: u128::from(b),
        s: u128::from(s),
        d: c.d_model,
    };
    let mut v = vec![step("입력 (residual stream)", "x", k.bsd()), k.norm(1, "₁")];
    v.extend(attention_steps(&k));
    v.push(step("residual add: x + attn", "x", k.bsd()));
    v.push(k.norm(2, "₂"));
    v.extend(mlp_steps(&k));
    v.push(step("residual add: x + mlp", "x", k.bsd()));
    v
}

/// Q, K, V projections, the split into heads, scores, softmax, P·V, the merge and the output
/// projection.
fn attention_steps(k: &Block) -> Vec<Step> {
    let c = k.c;
    let (b, s, d) = (k.b, k.s, k.d);
    let (h, hk, dh) = (c.heads, c.kv_heads, c.d_head);
    let qw: Dim = ("H·d_h", h * dh);
    let kvw: Dim = if k.gqa() {
        ("H_kv·d_h", hk * dh)
    } else {
        ("H·d_h", hk * dh)
    };
    let kv_heads: Dim = if k.gqa() { ("H_kv", hk) } else { ("H", hk) };
    let mut v = vec![
        k.projection("Q projection", "Q", "W_Q", ("d", d), qw),
        k.projection("K projection", "K", "W_K", ("d", d), kvw),
        k.projection("V projection", "V", "W_V", ("d", d), kvw),
        step(
            "Q를 헤드로 나눔 (reshape + transpose)",
            "Q",
            k.per_head(("H", h), ("d_h", dh)),
        ),
        step(
            if k.gqa() {
                "K, V를 헤드로 나눔 (GQA: K/V 헤드 하나를 query 헤드 여럿이 공유)"
            } else {
                "K, V를 헤드로 나눔"
            },
            "K, V",
            k.per_head(kv_heads, ("d_h", dh)),
        ),
    ];
    let mut sc = step(
        "scores = Q·Kᵀ / √d_h (+ causal mask)",
        "scores",
        k.per_head(("H", h), ("S", s)),
    );
    sc.matmul = Some((s, s, dh));
    sc.matmul_batches = b * h;
    v.push(sc);
    v.push(step("softmax (행마다)", "P", k.per_head(("H", h), ("S", s))));
    let mut pv = step("attention 출력 = P·V", "O", k.per_head(("H", h), ("d_h", dh)));
    pv.matmul = Some((s, dh, s));
    pv.matmul_batches = b * h;
    v.push(pv);
    v.push(step("헤드를 합침 (transpose + reshape)", "O", k.bs(qw)));
    v.push(k.projection("output projection", "attn", "W_O", qw, ("d", d)));
    v
}

/// The feed-forward network: up (and gate for SwiGLU), the activation, and down.
fn mlp_steps(k: &Block) -> Vec<Step> {
    let fd: Dim = ("d_ff", k.c.ffn);
    let dd: Dim = ("d", k.d);
    let mut v = match k.c.mlp {
        Mlp::Gelu => vec![
            k.projection("FFN up", "u", "W_up", dd, fd),
            step("GELU", "g", k.bs(fd)),
        ],
        Mlp::SwiGlu => vec![
            k.projection("FFN gate", "g", "W_gate", dd, fd),
            k.projection("FFN up", "u", "W_up", dd, fd),
            step("SwiGLU: SiLU(g) ⊙ u", "a", k.bs(fd)),
        ],
    };
    v.push(k.projection("FFN down", "mlp", "W_down", fd, dd));
    v
}

fn shape_html(shape: &[Dim]) -> String {
    let dims: Vec<String> = shape
        .iter()
        .map(|(n, v)| format!("{n}={}", fmt::int(*v)))
        .collect();
    format!("[{}]", dims.join(", "))
}

pub(super) fn render(spec: &ModelRunSpec) -> String {
    let c = spec.model.config();
    let st = steps(&c, spec.batch, spec.seq);
    let id = format!(
        "calc-transformer-shapes-{}-b{}-s{}",
        spec.model.name(),
        spec.batch,
        spec.seq
    );
    let mut h = String::new();
    html::open_figure(&mut h, &id);
    html::open_table(
        &mut h,
        &[
            "연산 (op)",
            "출력 텐서: shape (원소 수)",
            "가중치 (weights)",
            "행렬 곱 FLOPs",
        ],
    );
    for (i, s) in st.iter().enumerate() {
        step_row(&mut h, i + 1, s);
    }
    total_rows(&mut h, &c, &st);
    html::close_table(&mut h);
    caption(&mut h, spec, &c);
    h
}

/// The weights a step uses, each with its shape, and their element count.
fn weights_cell(s: &Step) -> String {
    if s.weights.is_empty() {
        return "—".to_string();
    }
    let w: Vec<String> = s
        .weights
        .iter()
        .map(|(n, sh)| format!("{n} <code>{}</code>", shape_html(sh)))
        .collect();
    format!(
        "{}<br><small>{} 개</small>",
        w.join("<br>"),
        fmt::int(s.weight_elements())
    )
}

/// A step's matmul FLOPs with the product they come from (× B·H when batched over heads).
fn flops_cell(s: &Step) -> String {
    match s.matmul {
        None => "—".to_string(),
        Some((r, cc, k)) if s.matmul_batches > 1 => format!(
            "{}<br><small>2·{}·{}·{} × {} (B·H)</small>",
            fmt::int(s.flops()),
            fmt::int(r),
            fmt::int(cc),
            fmt::int(k),
            fmt::int(s.matmul_batches)
        ),
        Some((r, cc, k)) => format!(
            "{}<br><small>2·{}·{}·{}</small>",
            fmt::int(s.flops()),
            fmt::int(r),
            fmt::int(cc),
            fmt::int(k)
        ),
    }
}

/// Step `n`: what it does, the tensor it makes, its weights and its FLOPs.
fn step_row(h: &mut String, n: usize, s: &Step) {
    let _ = writeln!(
        h,
        "<tr><td>{}. {}</td><td>{} <code>{}</code><br><small>{} 개</small></td><td>{}</td><td class=\"num\">{}</td></tr>",
        n,
        s.op,
        s.tensor,
        shape_html(&s.shape),
        fmt::int(s.elements()),
        weights_cell(s),
        flops_cell(s),
    );
}

/// The block's sums (its weights equal the per-layer parameter count, a check the reader can
/// see), then the same times the L layers.
fn total_rows(h: &mut String, c: &ModelConfig, st: &[Step]) {
    let total_flops: u128 = st.iter().map(|s| s.flops()).sum();
    let total_weights: u128 = st.iter().map(|s| s.weight_elements()).sum();
    let layer = c.layer_params().total();
    let _ = writeln!(
        h,
        "<tr><td colspan=\"2\"><strong>블록 하나 합계</strong></td><td class=\"num\"><strong>{}</strong> 개<br><small>= 층당 파라미터 수</small></td><td class=\"num\"><strong>{}</strong></td></tr>",
        fmt::int(total_weights),
        fmt::int(total_flops)
    );
    let _ = writeln!(
        h,
        "<tr><td colspan=\"2\"><strong>× L = {} 층</strong></td><td class=\"num\">{} 개</td><td class=\"num\">{}<br><small>{}</small></td></tr>",
        c.layers,
        fmt::int(layer * c.layers),
        fmt::int(total_flops * c.layers),
        fmt::sci4((total_flops * c.layers) as f64)
    );
}

/// The inputs, the dimensions by name, and what the FLOP count leaves out.
fn caption(h: &mut String, spec: &ModelRunSpec, c: &ModelConfig) {
    html::open_caption(h, spec.caption.as_deref());
    let gqa = if c.kv_heads != c.heads {
        format!(
            ", H_kv = {} (GQA: query 헤드 {}개가 K/V 헤드 하나를 공유)",
            c.kv_heads,
            c.heads / c.kv_heads
        )
    } else {
        String::new()
    };
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력 model = {} ({}, {}: d = {}, H = {}{gqa}, d_h = {}, d_ff = {}), batch B = {}, seq S = {}에서 계산한 값. \
         행렬 곱 FLOPs = 2 · rows · cols · inner (곱셈과 덧셈을 각각 1 FLOP); bias 덧셈, norm, softmax, 활성화 함수의 연산은 세지 않았다. \
         가중치는 [입력, 출력] 순으로 적었다.",
        spec.model.name(),
        c.label,
        c.source,
        fmt::int(c.d_model),
        c.heads,
        c.d_head,
        fmt::int(c.ffn),
        fmt::int(spec.batch.into()),
        fmt::int(spec.seq.into()),
    );
    html::close_figure(h);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calc::models::{GPT2_124M, LLAMA3_8B};

    #[test]
    fn weights_sum_to_layer_params() {
        for c in [GPT2_124M, LLAMA3_8B] {
            let w: u128 = steps(&c, 2, 1024).iter().map(|s| s.weight_elements()).sum();
            assert_eq!(w, c.layer_params().total(), "{}", c.label);
        }
    }

    #[test]
    fn gpt2_flops_by_hand() {
        let st = steps(&GPT2_124M, 2, 1024);
        let total: u128 = st.iter().map(|s| s.flops()).sum();
        // Projections: 2·(B·S)·(4d² + 2·d·4d) = 2·2048·(12·768²); attention: 2 · 2·B·H·S²·d_h.
        let proj = 2 * 2048 * 12 * 768 * 768;
        let attn = 2 * 2 * 2 * 12 * 1024 * 1024 * 64;
        assert_eq!(total, proj + attn);
        let scores = st.iter().find(|s| s.tensor == "scores").unwrap();
        assert_eq!(scores.elements(), 2 * 12 * 1024 * 1024);
    }
}
