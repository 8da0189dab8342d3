//! The `calc: parallel-memory` figure: one stacked bar per ZeRO stage for one GPU, a table that
//! marks which parts each stage divides by dp, and a caption with the layout and the formulas.

use super::{layer_activations_tp, params_per_gpu, per_gpu, Layout, ParallelMemorySpec};
use crate::calc::fmt;
use crate::calc::html;
use crate::calc::memory_bars::{self, Breakdown, H100_MEMORY};
use crate::calc::models::{ModelConfig, ModelId};
use std::fmt::Write as _;

pub(in crate::calc) fn render(spec: &ParallelMemorySpec) -> String {
    let c = spec.model.config();
    let lay = spec.layout;
    let rows: Vec<(String, Breakdown)> = (0..=3u8)
        .map(|z| {
            let label = if z == 0 {
                "DP (ZeRO 없음)".to_string()
            } else if z == 3 {
                "ZeRO-3 / FSDP".to_string()
            } else {
                format!("ZeRO-{z}")
            };
            (label, per_gpu(&c, spec.batch, spec.seq, lay, z))
        })
        .collect();
    let id = format!(
        "calc-parallel-memory-{}-b{}-s{}-dp{}-tp{}-pp{}{}{}",
        spec.model.name(),
        spec.batch,
        spec.seq,
        lay.dp,
        lay.tp,
        lay.pp,
        if lay.sp { "-sp" } else { "" },
        if lay.checkpointing { "-ckpt" } else { "" }
    );
    let mut h = String::new();
    html::open_figure(&mut h, &id);
    h.push_str(&memory_bars::svg(
        &rows,
        "GPU 하나의 메모리: ZeRO 단계별 누적 막대 (GiB)",
    ));
    h.push('\n');
    let mut headers = vec!["GPU 하나당"];
    headers.extend(rows.iter().map(|(l, _)| l.as_str()));
    html::open_table(&mut h, &headers);
    let _ = writeln!(
        h,
        "<tr><td>파라미터 Ψ (가장 무거운 stage)</td><td class=\"num\" colspan=\"4\"><strong>{}</strong> (전체 {}; TP {}×, PP {}×로 나눔)</td></tr>",
        fmt::int(params_per_gpu(&c, lay.tp, lay.pp)), fmt::int(c.params().total()), lay.tp, lay.pp
    );
    part_rows(&mut h, &rows, lay);
    total_row(&mut h, &rows);
    html::close_table(&mut h);
    caption(&mut h, spec, &c);
    h
}

/// One row per part, each cell in GiB; the cells a ZeRO stage shards say "÷ dp".
fn part_rows(h: &mut String, rows: &[(String, Breakdown)], lay: Layout) {
    let names = [
        "weights 2 B·Ψ",
        "gradients 2 B·Ψ",
        "optimizer 12 B·Ψ",
        "activations",
    ];
    for (i, name) in names.iter().enumerate() {
        memory_bars::part_cell(h, i, name);
        for (z, (_, b)) in rows.iter().enumerate() {
            let sharded = matches!((i, z), (0, 3) | (1, 2..=3) | (2, 1..=3));
            let note = if sharded {
                format!("<br><small>÷ dp {}</small>", lay.dp)
            } else {
                String::new()
            };
            let _ = write!(h, "<td class=\"num\">{}{note}</td>", fmt::gib(b.parts()[i]));
        }
        h.push_str("</tr>\n");
    }
}

/// The totals, marked where they pass 80 GB.
fn total_row(h: &mut String, rows: &[(String, Breakdown)]) {
    h.push_str("<tr><td><strong>합계 total</strong></td>");
    for (_, b) in rows {
        let mark = if b.total() > H100_MEMORY {
            " <small>(&gt; 80 GB)</small>"
        } else {
            ""
        };
        let _ = write!(
            h,
            "<td class=\"num\"><strong>{}</strong>{mark}</td>",
            fmt::gib(b.total())
        );
    }
    h.push_str("</tr>\n");
}

/// The layout, the conventions with their sources, and what is left out.
fn caption(h: &mut String, spec: &ParallelMemorySpec, c: &ModelConfig) {
    let lay = spec.layout;
    let a = layer_activations_tp(c, spec.batch, spec.seq, lay.tp, lay.sp);
    let gpus = u128::from(lay.dp) * u128::from(lay.tp) * u128::from(lay.pp);
    html::open_caption(h, spec.caption.as_deref());
    let _ = write!(
        h,
        "생성기가 빌드할 때 계산한 값(측정 아님): model = {} (L = {}, h = {}, a = {}), micro-batch b = {}, seq s = {}, \
         dp = {} × tp = {} × pp = {} = GPU {}개, sequence parallel {}, activation checkpointing {}. \
         BF16 mixed precision + Adam(16 B/파라미터), ZeRO 단계별 분할은 Rajbhandari et al. 2020. \
         한 층·한 micro-batch의 activation = {} B (Korthikanti et al. 2022 Table 2의 식, {}); \
         1F1B에서 첫 stage는 micro-batch {}개를 동시에 들고 있다고 보았다. \
         임베딩·logits activation, 통신 버퍼, 단편화는 포함하지 않는다.",
        spec.model.name(), c.layers, fmt::int(c.d_model), c.heads, spec.batch, fmt::int(spec.seq.into()),
        lay.dp, lay.tp, lay.pp, fmt::int(gpus),
        if lay.sp { "on" } else { "off" }, if lay.checkpointing { "full" } else { "none" },
        fmt::int(a),
        if lay.sp { "s·b·h·(34 + 5as/h)/t" } else { "s·b·h·(10 + 24/t + 5as/(ht))" },
        lay.pp
    );
    if c.id != ModelId::Gpt2_124m {
        let _ = write!(
            h,
            " <strong>근사:</strong> activation 식은 GPT식 블록에서 유도되었고 {}에는 근사로 적용했다.",
            c.label
        );
    }
    h.push_str(" <span class=\"datasheet\">80 GB = H100 데이터시트 용량.</span> GiB = 2<sup>30</sup> B.");
    html::close_figure(h);
}
