//! `calc: transformer-shapes` — the tensor shapes through one Transformer block of a known model,
//! with named dimensions, element counts, the weights each step uses, and the FLOPs of every
//! matrix product (2 · rows · cols · inner).
//!
//! Why the weights are listed here too: their element counts summed over the block are exactly the
//! per-layer parameter count of [`super::models`], which the table prints as a check.

use super::fmt;
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

/// Every step of one block for batch `b` and sequence length `s`.
pub fn steps(c: &ModelConfig, b: u64, s: u64) -> Vec<Step> {
    let (b, s) = (u128::from(b), u128::from(s));
    let d = c.d_model;
    let (h, hk, dh, f) = (c.heads, c.kv_heads, c.d_head, c.ffn);
    let bsd = || vec![("B", b), ("S", s), ("d", d)];
    let gqa = hk != h;
    let norm_name = match c.norm {
        Norm::LayerNorm => "LayerNorm",
        Norm::RmsNorm => "RMSNorm",
    };
    let norm_weights = |n: &str| match c.norm {
        Norm::LayerNorm => vec![
            (format!("γ{n}"), vec![("d", d)]),
            (format!("β{n}"), vec![("d", d)]),
        ],
        Norm::RmsNorm => vec![(format!("g{n}"), vec![("d", d)])],
    };
    let linear = |w: &str, inp: Dim, out: Dim| {
        let mut v = vec![(w.to_string(), vec![inp, out])];
        if c.bias {
            v.push((format!("b{}", &w[1..]), vec![out]));
        }
        v
    };
    let qw: Dim = ("H·d_h", h * dh);
    let kvw: Dim = if gqa {
        ("H_kv·d_h", hk * dh)
    } else {
        ("H·d_h", hk * dh)
    };
    let kv_heads: Dim = if gqa { ("H_kv", hk) } else { ("H", hk) };
    let rows = b * s;

    let mut v = vec![step("입력 (residual stream)", "x", bsd())];
    let mut n1 = step(format!("{norm_name} 1"), "x̂", bsd());
    n1.weights = norm_weights("₁");
    v.push(n1);
    let mut q = step("Q projection", "Q", vec![("B", b), ("S", s), qw]);
    q.weights = linear("W_Q", ("d", d), qw);
    q.matmul = Some((rows, h * dh, d));
    v.push(q);
    for (name, t) in [("K projection", "K"), ("V projection", "V")] {
        let mut k = step(name, t, vec![("B", b), ("S", s), kvw]);
        k.weights = linear(if t == "K" { "W_K" } else { "W_V" }, ("d", d), kvw);
        k.matmul = Some((rows, hk * dh, d));
        v.push(k);
    }
    v.push(step(
        "Q를 헤드로 나눔 (reshape + transpose)",
        "Q",
        vec![("B", b), ("H", h), ("S", s), ("d_h", dh)],
    ));
    v.push(step(
        if gqa {
            "K, V를 헤드로 나눔 (GQA: K/V 헤드 하나를 query 헤드 여럿이 공유)"
        } else {
            "K, V를 헤드로 나눔"
        },
        "K, V",
        vec![("B", b), kv_heads, ("S", s), ("d_h", dh)],
    ));
    let mut sc = step(
        "scores = Q·Kᵀ / √d_h (+ causal mask)",
        "scores",
        vec![("B", b), ("H", h), ("S", s), ("S", s)],
    );
    sc.matmul = Some((s, s, dh));
    sc.matmul_batches = b * h;
    v.push(sc);
    v.push(step(
        "softmax (행마다)",
        "P",
        vec![("B", b), ("H", h), ("S", s), ("S", s)],
    ));
    let mut pv = step(
        "attention 출력 = P·V",
        "O",
        vec![("B", b), ("H", h), ("S", s), ("d_h", dh)],
    );
    pv.matmul = Some((s, dh, s));
    pv.matmul_batches = b * h;
    v.push(pv);
    v.push(step(
        "헤드를 합침 (transpose + reshape)",
        "O",
        vec![("B", b), ("S", s), qw],
    ));
    let mut o = step("output projection", "attn", bsd());
    o.weights = linear("W_O", qw, ("d", d));
    o.matmul = Some((rows, d, h * dh));
    v.push(o);
    v.push(step("residual add: x + attn", "x", bsd()));
    let mut n2 = step(format!("{norm_name} 2"), "x̂", bsd());
    n2.weights = norm_weights("₂");
    v.push(n2);
    let fd: Dim = ("d_ff", f);
    match c.mlp {
        Mlp::Gelu => {
            let mut up = step("FFN up", "u", vec![("B", b), ("S", s), fd]);
            up.weights = linear("W_up", ("d", d), fd);
            up.matmul = Some((rows, f, d));
            v.push(up);
            v.push(step("GELU", "g", vec![("B", b), ("S", s), fd]));
        }
        Mlp::SwiGlu => {
            let mut gate = step("FFN gate", "g", vec![("B", b), ("S", s), fd]);
            gate.weights = linear("W_gate", ("d", d), fd);
            gate.matmul = Some((rows, f, d));
            v.push(gate);
            let mut up = step("FFN up", "u", vec![("B", b), ("S", s), fd]);
            up.weights = linear("W_up", ("d", d), fd);
            up.matmul = Some((rows, f, d));
            v.push(up);
            v.push(step("SwiGLU: SiLU(g) ⊙ u", "a", vec![("B", b), ("S", s), fd]));
        }
    }
    let mut down = step("FFN down", "mlp", bsd());
    down.weights = linear("W_down", fd, ("d", d));
    down.matmul = Some((rows, d, f));
    v.push(down);
    v.push(step("residual add: x + mlp", "x", bsd()));
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
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-calc\" id=\"{id}\">");
    h.push_str(
        "<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>연산 (op)</th><th>출력 텐서: shape (원소 수)</th>\
         <th>가중치 (weights)</th><th>행렬 곱 FLOPs</th></tr>\n</thead>\n<tbody>\n",
    );
    let mut total_flops = 0u128;
    let mut total_weights = 0u128;
    for (i, s) in st.iter().enumerate() {
        total_flops += s.flops();
        total_weights += s.weight_elements();
        let weights = if s.weights.is_empty() {
            "—".to_string()
        } else {
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
        };
        let flops = match s.matmul {
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
        };
        let _ = writeln!(
            h,
            "<tr><td>{}. {}</td><td>{} <code>{}</code><br><small>{} 개</small></td><td>{weights}</td><td class=\"num\">{flops}</td></tr>",
            i + 1,
            s.op,
            s.tensor,
            shape_html(&s.shape),
            fmt::int(s.elements()),
        );
    }
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
    h.push_str("</tbody>\n</table>\n</div>\n<figcaption>");
    if let Some(cap) = &spec.caption {
        let _ = write!(h, "{} ", fmt::esc(cap.trim()));
    }
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
    h.push_str("</figcaption>\n</figure>");
    h
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
