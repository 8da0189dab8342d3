//! `calc: parallel-explorer` — every (DP, TP, PP) split of a model over a number of GPUs, with
//! the memory each GPU needs, the communication each GPU does per step, the pipeline bubble,
//! and a rough step time; the fastest split that fits in an H100's memory is marked.
//!
//! Why: the choice of a 3D-parallel layout is a trade between these columns (TP is cheap in
//! memory but talks every layer; PP talks little but idles; DP talks once per step but holds
//! everything), and seeing all candidates side by side is the lesson. Everything here is the
//! model of the other calculators, not a measurement:
//! - memory: `calc: parallel-memory` (sequence parallelism on whenever tp > 1);
//! - TP: per layer and micro-batch 4 all-reduces of the 16-bit activations s·b·h (2 forward,
//!   2 backward; 6 with full checkpointing, whose recomputed forward repeats them),
//!   Shoeybi et al. 2019; with SP the all-gather/reduce-scatter pairs move the same bytes;
//! - DP: a ring all-reduce of the 16-bit gradients 2·Ψ per step (ZeRO-1/2 move the same
//!   volume as reduce-scatter + all-gather; ZeRO-3 1.5×, Rajbhandari et al. 2020);
//! - PP: per micro-batch one activation forward and one gradient backward of s·b·h 16-bit values;
//! - 8 GPUs per node: TP stays inside a node (NVLink), DP and PP cross nodes over InfiniBand
//!   once the group does; bandwidths are datasheet figures (see `calc: collective`);
//! - step time ≈ compute at the H100's datasheet dense BF16 peak × (1 + (p−1)/m) + all
//!   communication time, nothing overlapped — a comparison figure, not a prediction.

use super::collective::LINKS;
use super::fmt;
use super::html;
use super::kv::{Fields, KeyDoc, ParseError};
use super::memory_bars::H100_MEMORY;
use super::models::{ModelConfig, ModelId};
use super::parallel_memory::{choice, layout_problem, params_per_gpu, per_gpu, Layout};
use std::fmt::Write as _;

const KIND: &str = "parallel-explorer";
/// H100 SXM dense BF16 tensor-core peak, FLOP/s (datasheet).
pub const H100_BF16_PEAK: f64 = 989.4e12;
pub const GPUS_PER_NODE: u64 = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct ExplorerSpec {
    pub model: ModelId,
    pub gpus: u64,
    pub global_batch: u64,
    pub seq: u64,
    pub micro_batch: u64,
    pub zero: u8,
    pub checkpointing: bool,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "model",
        doc: "llama3-8b, llama3-70b, … (the calculators' models)",
    },
    KeyDoc {
        key: "gpus",
        doc: "GPUs in all, e.g. 8 to 1024",
    },
    KeyDoc {
        key: "global_batch",
        doc: "sequences per optimizer step",
    },
    KeyDoc {
        key: "seq",
        doc: "tokens per sequence",
    },
    KeyDoc {
        key: "micro_batch",
        doc: "optional, sequences per micro-batch (default 1)",
    },
    KeyDoc {
        key: "zero",
        doc: "optional ZeRO stage 0..3 over DP (default 1)",
    },
    KeyDoc {
        key: "checkpointing",
        doc: "optional none|full (default full)",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

pub(super) fn parse(f: &Fields) -> Result<ExplorerSpec, ParseError> {
    f.only(KIND, KEYS)?;
    let model = f.model(KIND, KEYS)?;
    let gpus = f.positive(KIND, "gpus", 1 << 16, KEYS)?;
    let global_batch = f.positive(KIND, "global_batch", 1 << 24, KEYS)?;
    let seq = f.positive(KIND, "seq", 1 << 20, KEYS)?;
    let micro_batch = if f.scalar(KIND, "micro_batch", KEYS)?.is_some() {
        f.positive(KIND, "micro_batch", 1 << 16, KEYS)?
    } else {
        1
    };
    let zero =
        choice(f, KIND, "zero", &["0", "1", "2", "3"], KEYS)?.map_or(1, |(z, _)| z.parse().unwrap_or(1));
    let checkpointing =
        choice(f, KIND, "checkpointing", &["none", "full"], KEYS)?.is_none_or(|(v, _)| v == "full");
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    let spec = ExplorerSpec {
        model,
        gpus,
        global_batch,
        seq,
        micro_batch,
        zero,
        checkpointing,
        caption,
    };
    if candidates(&spec).is_empty() {
        return Err((f.calc_line, format!("`calc: {KIND}`: no (dp, tp, pp) splits {gpus} GPUs with global_batch {global_batch} and micro_batch {micro_batch}"), "gpus should be a multiple of a power of two; global_batch a multiple of dp × micro_batch".into()));
    }
    Ok(spec)
}

/// One candidate split and what it costs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub layout: Layout,
    pub micro_batches: u64,
    pub mem: u128,
    pub tp_bytes: f64,
    pub dp_bytes: f64,
    pub pp_bytes: f64,
    pub bubble: f64,
    pub compute_s: f64,
    pub comm_s: f64,
}

impl Row {
    pub fn fits(&self) -> bool {
        self.mem <= H100_MEMORY
    }
    pub fn step_s(&self) -> f64 {
        self.compute_s * (1.0 + self.bubble) + self.comm_s
    }
}

fn link(name: &str) -> f64 {
    LINKS
        .iter()
        .find(|l| l.name == name)
        .map_or(1.0, |l| l.bytes_per_s)
}

pub fn evaluate(c: &ModelConfig, spec: &ExplorerSpec, dp: u64, tp: u64, pp: u64) -> Row {
    let layout = Layout {
        dp,
        tp,
        pp,
        sp: tp > 1,
        checkpointing: spec.checkpointing,
    };
    let m = spec.global_batch / (dp * spec.micro_batch);
    let mem = per_gpu(c, spec.micro_batch, spec.seq, layout, spec.zero).total();
    let act = 2.0 * (spec.seq * spec.micro_batch) as f64 * c.d_model as f64; // s·b·h 16-bit values
    let ring = |n: u64| {
        if n > 1 {
            2.0 * (n - 1) as f64 / n as f64
        } else {
            0.0
        }
    };
    let per_layer = if spec.checkpointing { 6.0 } else { 4.0 };
    let tp_bytes = m as f64 * (c.layers / u128::from(pp)) as f64 * per_layer * ring(tp) * act;
    let psi = params_per_gpu(c, tp, pp) as f64;
    let dp_bytes = ring(dp) * 2.0 * psi * if spec.zero == 3 { 1.5 } else { 1.0 };
    let pp_bytes = if pp > 1 { m as f64 * 2.0 * act } else { 0.0 };
    let (nvlink, ib) = (link("nvlink4"), link("ib-ndr"));
    let dp_link = if dp * tp * pp > GPUS_PER_NODE { ib } else { nvlink };
    let pp_link = if tp * pp > GPUS_PER_NODE { ib } else { nvlink };
    let tokens = (spec.global_batch * spec.seq) as f64;
    let flops_per_param_token = if spec.checkpointing { 8.0 } else { 6.0 };
    let total_flops = flops_per_param_token * c.params().total() as f64 * tokens;
    Row {
        layout,
        micro_batches: m,
        mem,
        tp_bytes,
        dp_bytes,
        pp_bytes,
        bubble: (pp - 1) as f64 / m as f64,
        compute_s: total_flops / (spec.gpus as f64 * H100_BF16_PEAK),
        comm_s: tp_bytes / nvlink + dp_bytes / dp_link + pp_bytes / pp_link,
    }
}

/// All valid (dp, tp, pp): tp ∈ {1, 2, 4, 8} inside a node, pp a power of two dividing the layers.
pub fn candidates(spec: &ExplorerSpec) -> Vec<Row> {
    let c = spec.model.config();
    let mut out = Vec::new();
    for tp in [1u64, 2, 4, 8] {
        for pp in (0..7).map(|k| 1u64 << k) {
            if layout_problem(&c, tp, pp).is_some() || !spec.gpus.is_multiple_of(tp * pp) {
                continue;
            }
            let dp = spec.gpus / (tp * pp);
            if !spec.global_batch.is_multiple_of(dp * spec.micro_batch) {
                continue;
            }
            out.push(evaluate(&c, spec, dp, tp, pp));
        }
    }
    out.sort_by(|a, b| b.fits().cmp(&a.fits()).then(a.step_s().total_cmp(&b.step_s())));
    out
}

pub(super) fn render(spec: &ExplorerSpec) -> String {
    let c = spec.model.config();
    let rows = candidates(spec);
    let mut h = String::new();
    let id = format!(
        "calc-parallel-explorer-{}-g{}-b{}-s{}",
        spec.model.name(),
        spec.gpus,
        spec.global_batch,
        spec.seq
    );
    html::open_figure(&mut h, &id);
    html::open_table(
        &mut h,
        &[
            "",
            "dp",
            "tp",
            "pp",
            "m",
            "메모리/GPU",
            "bubble (p−1)/m",
            "TP 통신/GPU",
            "DP 통신/GPU",
            "PP 통신/GPU",
            "추정 step",
        ],
    );
    for (i, r) in rows.iter().enumerate() {
        let best = i == 0 && r.fits();
        let l = r.layout;
        let mark = if best {
            "★"
        } else if r.fits() {
            ""
        } else {
            "✗"
        };
        let _ = writeln!(
            h,
            "<tr{}><td>{mark}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            if best { " style=\"font-weight:bold\"" } else { "" },
            l.dp, l.tp, l.pp, r.micro_batches, fmt::gib(r.mem), fmt::fixed(r.bubble, 3),
            fmt::bytes_si(r.tp_bytes as u128), fmt::bytes_si(r.dp_bytes as u128), fmt::bytes_si(r.pp_bytes as u128),
            fmt::time(r.step_s())
        );
    }
    html::close_table(&mut h);
    html::open_caption(&mut h, spec.caption.as_deref());
    let _ = write!(
        h,
        "생성기가 모델 식으로 계산한 표(측정 아님): model = {} (P = {}), GPU {}개, global batch {} × seq {}, micro-batch {}, ZeRO-{}, checkpointing {}, tp &gt; 1이면 sequence parallel. \
         ★ = 80 GB에 들어가는 것 중 추정 step이 가장 짧은 배치, ✗ = 80 GB 초과. 메모리는 calc: parallel-memory와 같은 식. \
         통신은 GPU 하나가 step마다 보내는 바이트(ring): TP는 층·micro-batch마다 activation all-reduce {}회, DP는 16-bit gradient all-reduce{}, PP는 micro-batch마다 activation·gradient 한 번씩. \
         <span class=\"datasheet\">시간: 계산은 H100 SXM dense BF16 989.4 TFLOP/s(데이터시트 peak)로 {}·P·토큰 FLOP, 통신은 NVLink 450 GB/s(노드 안, TP)와 InfiniBand NDR 50 GB/s(노드 8 GPU를 넘는 DP·PP) 데이터시트 대역폭.</span> \
         계산 × (1 + bubble) + 통신, 겹침 없음: 배치끼리 비교하기 위한 어림이지 예측이 아니다. 다중 GPU 측정값은 다른 이슈에서 더해진다.",
        spec.model.name(), fmt::int(c.params().total()), spec.gpus, spec.global_batch, fmt::int(spec.seq.into()), spec.micro_batch,
        spec.zero, if spec.checkpointing { "full" } else { "none" },
        if spec.checkpointing { 6 } else { 4 },
        if spec.zero == 3 { " × 1.5 (ZeRO-3)" } else { "" },
        if spec.checkpointing { 8 } else { 6 }
    );
    html::close_figure(&mut h);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(model: ModelId, gpus: u64, gb: u64) -> ExplorerSpec {
        ExplorerSpec {
            model,
            gpus,
            global_batch: gb,
            seq: 4096,
            micro_batch: 1,
            zero: 1,
            checkpointing: true,
            caption: None,
        }
    }

    #[test]
    fn candidates_multiply_to_gpus() {
        let s = spec(ModelId::Llama3_70b, 64, 256);
        let rows = candidates(&s);
        assert!(!rows.is_empty());
        for r in &rows {
            assert_eq!(r.layout.dp * r.layout.tp * r.layout.pp, 64);
            assert_eq!(r.micro_batches * r.layout.dp, 256);
        }
    }

    #[test]
    fn llama70b_does_not_fit_on_one_gpu_per_replica_but_does_with_tp8() {
        let s = spec(ModelId::Llama3_70b, 8, 64);
        let c = s.model.config();
        assert!(!evaluate(&c, &s, 8, 1, 1).fits());
        // 70.55 B params / 8 ways × 16 B = ~141 GB: still too much without ZeRO-1 over dp = 1.
        assert!(!evaluate(&c, &s, 1, 8, 1).fits());
    }

    #[test]
    fn dp_volume_by_hand() {
        // Llama 3 8B, dp 8 (one node), tp 1, pp 1: 2·7/8 · 2 B · P bytes.
        let s = spec(ModelId::Llama3_8b, 8, 8);
        let r = evaluate(&s.model.config(), &s, 8, 1, 1);
        assert_eq!(r.dp_bytes, 1.75 * 2.0 * 8_030_261_248.0);
        assert_eq!((r.tp_bytes, r.pp_bytes, r.bubble), (0.0, 0.0, 0.0));
    }

    #[test]
    fn bad_batch_names_the_block() {
        let e = crate::calc::parse(
            "calc: parallel-explorer\nmodel: llama3-8b\ngpus: 6\nglobal_batch: 7\nseq: 4096\n",
        )
        .unwrap_err();
        assert_eq!(e.0, 1);
    }
}
