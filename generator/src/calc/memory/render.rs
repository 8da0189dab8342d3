//! The `calc: training-memory` figure: stacked bars of the three regimes, a table that says how
//! each cell was counted, and a caption with the inputs and the sources of the conventions.

use super::{breakdown, layer_activations, layer_checkpoint, ModelRunSpec, Regime, REGIMES};
use crate::calc::fmt;
use crate::calc::html;
use crate::calc::memory_bars::{self, Breakdown, H100_MEMORY};
use crate::calc::models::{ModelConfig, ModelId, ParamCount};
use std::fmt::Write as _;

pub(in crate::calc) fn render(spec: &ModelRunSpec) -> String {
    let c = spec.model.config();
    let rows: Vec<(Regime, Breakdown)> = REGIMES
        .iter()
        .map(|&r| (r, breakdown(&c, spec.batch, spec.seq, r)))
        .collect();
    let id = format!(
        "calc-training-memory-{}-b{}-s{}",
        spec.model.name(),
        spec.batch,
        spec.seq
    );

    let mut h = String::new();
    html::open_figure(&mut h, &id);
    let labelled: Vec<(String, Breakdown)> = rows.iter().map(|(r, b)| (r.label().to_string(), *b)).collect();
    h.push_str(&memory_bars::svg(
        &labelled,
        "학습 메모리 구성: 세 가지 방식의 누적 막대 (GiB)",
    ));
    h.push('\n');
    let mut headers = vec!["항목"];
    headers.extend(rows.iter().map(|(r, _)| r.label()));
    html::open_table(&mut h, &headers);
    param_row(&mut h, &c.params());
    part_rows(&mut h, &rows);
    total_row(&mut h, &rows);
    html::close_table(&mut h);
    let over = rows.iter().any(|(_, b)| b.total() > H100_MEMORY);
    caption(&mut h, spec, &c, over);
    h
}

/// The parameter count P and the sum it comes from, read off the model's configuration so the
/// reader can check it against the model card.
fn param_row(h: &mut String, p: &ParamCount) {
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
        fmt::int(p.total()),
        parts.join(" + ")
    );
}

/// How one cell was counted, in the notation of the caption (P, L, A, s·b·h).
fn why(r: Regime, part: usize) -> &'static str {
    match (r, part) {
        (Regime::Fp32, 0) | (Regime::Fp32, 1) => "4 B × P",
        (Regime::Fp32, 2) => "m, v: 8 B × P",
        (Regime::Fp32, _) => "2 × L × A (FP32)",
        (_, 0) | (_, 1) => "2 B × P",
        (_, 2) => "master 4 B + m, v 8 B = 12 B × P",
        (Regime::Bf16Mixed, _) => "L × A",
        (_, _) => "L × 2·s·b·h + A",
    }
}

/// One row per part (with its bar colour as a swatch), each cell in bytes, GiB and how.
fn part_rows(h: &mut String, rows: &[(Regime, Breakdown)]) {
    let names = [
        "weights 가중치",
        "gradients 기울기",
        "optimizer state (Adam m·v + master)",
        "activations",
    ];
    for (i, name) in names.iter().enumerate() {
        memory_bars::part_cell(h, i, name);
        for (r, b) in rows {
            let bytes = b.parts()[i];
            let _ = write!(
                h,
                "<td class=\"num\">{} B<br>{}<br><small>{}</small></td>",
                fmt::int(bytes),
                fmt::gib(bytes),
                why(*r, i)
            );
        }
        h.push_str("</tr>\n");
    }
}

/// The totals, marked where they pass the H100's 80 GB.
fn total_row(h: &mut String, rows: &[(Regime, Breakdown)]) {
    h.push_str("<tr><td><strong>합계 total</strong></td>");
    for (_, b) in rows {
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
    h.push_str("</tr>\n");
}

/// The inputs, the conventions with their sources, what is left out, and the approximation
/// made for non-GPT blocks.
fn caption(h: &mut String, spec: &ModelRunSpec, c: &ModelConfig, over: bool) {
    html::open_caption(h, spec.caption.as_deref());
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
        fmt::int(layer_activations(c, spec.batch, spec.seq)),
        fmt::int(layer_checkpoint(c, spec.batch, spec.seq)),
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
    h.push_str(" GiB = 2<sup>30</sup> B.");
    html::close_figure(h);
}
