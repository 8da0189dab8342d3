//! Names of measured quantities in words: metric keys, parameter keys and benchmark families as a
//! reader should see them, with their units, display scale and which direction is better.
//!
//! Why one table: the records name what they measured with identifiers (`tokens_per_s`,
//! `ttft_p50_ms`, `peak_mem_bytes`, `kv_budget_tokens`), which are right for code and wrong on a
//! page. Figures, tables and inline values in prose must all say "TTFT p50, 1.2 s (↓ lower is
//! better)" the same way, so the words, the unit, the switch from ms to s and the better direction
//! live here once. Pure data and lookups: no dependency on the renderer or the harness, so any
//! stage may use it.
//!
//! Use: [`lookup`] a metric key (or [`describe`], which never fails), then [`Metric::format`] one
//! value, or [`Metric::scale`] once for a set of values (an axis, a table column) and
//! [`Scale::format`] each. [`param_text`] writes one parameter (`ctx = 4096` → "context 4,096
//! tokens"), [`family_title`] a benchmark family. Unknown keys come back readable (underscores
//! become spaces) rather than as errors, so a new lab metric shows up before it gets its row.

/// Which way a metric gets better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Descriptive: neither direction is "better" (a count, a size, a bound).
    Neither,
}

impl Better {
    /// "↑" / "↓" / "": the mark beside a metric's name.
    pub fn mark(self) -> &'static str {
        match self {
            Better::Higher => "↑",
            Better::Lower => "↓",
            Better::Neither => "",
        }
    }

    /// The words for the mark, e.g. in a legend or a caption.
    pub fn words(self) -> &'static str {
        match self {
            Better::Higher => "↑ 높을수록 좋음 (higher is better)",
            Better::Lower => "↓ 낮을수록 좋음 (lower is better)",
            Better::Neither => "",
        }
    }
}

/// What kind of number a metric is, which fixes its unit and how it is scaled for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Stored in milliseconds: shown in ms, and in s from 1,000 ms.
    Millis,
    /// Stored in microseconds: µs, ms from 1,000 µs, s from 1,000,000 µs.
    Micros,
    /// Stored in bytes: B, KiB, MiB, GiB by size.
    Bytes,
    /// A percentage (stored as percent, e.g. 45.2).
    Percent,
    /// A count (grouped digits), with an optional unit word ("steps", "tokens").
    Count(&'static str),
    /// A rate or other fixed unit: shown as is with this unit ("token/s", "TFLOP/s", "GB/s").
    Unit(&'static str),
    /// A ratio shown with "×".
    Ratio,
    /// A relative error: scientific notation.
    Error,
    /// A unitless number (a loss in nats, an entropy).
    Plain,
}

/// A metric key in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// The key as records spell it (`ttft_p50_ms`).
    pub key: &'static str,
    /// Its name in words, without unit (`TTFT p50`).
    pub label: Cow<'static, str>,
    pub quantity: Quantity,
    pub better: Better,
}

/// A display unit chosen for a set of values: multiply a stored value by `factor`, write `unit`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub factor: f64,
    pub unit: &'static str,
    quantity: Quantity,
}

use std::borrow::Cow;
use Better::{Higher, Lower, Neither};
use Quantity::*;

/// Every metric the book's records carry (and the three a lab figure may ask for by name:
/// `time`, `tflops`, `gbps`). A test keeps this in step with `kernels/results/*.json`.
pub const METRICS: &[Metric] = &[
    m("time", "중앙값 시간 (median time)", Millis, Lower),
    m("median_ms", "중앙값 시간 (median time)", Millis, Lower),
    m("tflops", "연산 처리량", Unit("TFLOP/s"), Higher),
    m("gbps", "메모리 처리량", Unit("GB/s"), Higher),
    m("achieved_tflops", "달성 연산 처리량", Unit("TFLOP/s"), Higher),
    m("mfu_pct", "MFU (peak 대비 연산 비율)", Percent, Higher),
    m("tokens_per_s", "token 처리량", Unit("token/s"), Higher),
    m("ttft_p50_ms", "TTFT p50 (첫 token까지)", Millis, Lower),
    m("ttft_p99_ms", "TTFT p99 (첫 token까지)", Millis, Lower),
    m("tpot_p50_ms", "TPOT p50 (출력 token 간격)", Millis, Lower),
    m("tpot_p99_ms", "TPOT p99 (출력 token 간격)", Millis, Lower),
    m("step_ms", "step 시간", Millis, Lower),
    m("ar_token_ms", "AR decoding token당 시간", Millis, Lower),
    m(
        "breakeven_steps",
        "AR과 같은 시간이 드는 step 수",
        Count("steps"),
        Neither,
    ),
    m("tokens", "token 수", Count("tokens"), Neither),
    m("kernel_time_us", "GPU kernel 시간 합", Micros, Lower),
    m(
        "launch_overhead_us",
        "CUDA graph로 줄인 launch 시간",
        Micros,
        Higher,
    ),
    m("peak_mem_bytes", "최대 GPU 메모리", Bytes, Lower),
    m("kv_reserved_peak_bytes", "KV cache 예약량 (최대)", Bytes, Lower),
    m("kv_used_peak_bytes", "KV cache 사용량 (최대)", Bytes, Neither),
    m("kv_used_pct", "KV cache 사용률", Percent, Higher),
    m(
        "kv_logical_pct",
        "KV cache 논리 사용률 (100% 초과 = 공유)",
        Percent,
        Higher,
    ),
    m("prefix_hit_pct", "prefix cache 적중률", Percent, Higher),
    m("param_bytes_full", "전체 parameter 크기", Bytes, Neither),
    m("param_bytes_per_rank", "rank당 parameter 크기", Bytes, Lower),
    m("params_count", "parameter 수", Count(""), Neither),
    m("grad_bytes", "gradient 크기", Bytes, Neither),
    m("collective_bytes", "collective 결과 크기", Bytes, Neither),
    m("collective_calls", "collective 호출 수", Count("calls"), Neither),
    m(
        "collective_events",
        "collective event 수",
        Count("events"),
        Neither,
    ),
    m("collectives", "collective 연산 수", Count(""), Neither),
    m("compile_over_run", "compile 시간 ÷ 실행 시간", Ratio, Neither),
    m("final_loss", "최종 validation loss", Plain, Lower),
    m("final_train_loss", "최종 학습 loss", Plain, Lower),
    m("loss_bound", "검증 기준 loss 상한", Plain, Neither),
    m("unigram_entropy", "unigram entropy (loss 기준점)", Plain, Neither),
    m("err_vs_bf16", "BF16 weight 대비 상대 오차", Error, Lower),
    m("kv_err_vs_bf16", "BF16 KV cache 대비 상대 오차", Error, Lower),
    m("splits", "KV 분할 수 (split)", Count(""), Neither),
    m(
        "stream_k_tiles",
        "Stream-K로 나눈 tile 수",
        Count("tiles"),
        Neither,
    ),
];

const fn m(key: &'static str, label: &'static str, quantity: Quantity, better: Better) -> Metric {
    Metric {
        key,
        label: Cow::Borrowed(label),
        quantity,
        better,
    }
}

/// The metric with this key, if the table has it.
pub fn lookup(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key.trim())
}

/// The metric with this key, or a readable stand-in: the key with spaces for underscores, its
/// unit guessed from the suffix (`_ms`, `_us`, `_bytes`, `_pct`, `_per_s`), no better direction.
pub fn describe(key: &str) -> Metric {
    if let Some(m) = lookup(key) {
        return m.clone();
    }
    let q = if key.ends_with("_ms") {
        Millis
    } else if key.ends_with("_us") {
        Micros
    } else if key.ends_with("_bytes") {
        Bytes
    } else if key.ends_with("_pct") {
        Percent
    } else if key.ends_with("_per_s") {
        Unit("/s")
    } else {
        Plain
    };
    Metric {
        key: "",
        label: Cow::Owned(humanize(key)),
        quantity: q,
        better: Neither,
    }
}

/// `kv_budget_tokens` → "kv budget tokens"; a unit suffix is dropped (`_ms`, `_pct`, …).
pub fn humanize(key: &str) -> String {
    let k = key.trim();
    let stem = ["_ms", "_us", "_bytes", "_pct", "_per_s"]
        .iter()
        .find_map(|s| k.strip_suffix(s))
        .unwrap_or(k);
    stem.replace('_', " ")
}

impl Metric {
    /// One value with its unit, scaled for its own size (`114076.1` ms → "114.1 s").
    pub fn format(&self, v: f64) -> String {
        self.scale(v.abs()).format(v)
    }

    /// "TTFT p50 ↓": the name with the better-direction mark.
    pub fn name_marked(&self) -> String {
        match self.better.mark() {
            "" => self.label.to_string(),
            mark => format!("{} {mark}", self.label),
        }
    }

    /// "TTFT p50 (s) ↓": the name with the unit of a scale and the mark, for an axis or column.
    pub fn heading(&self, scale: &Scale) -> String {
        let unit = if scale.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", scale.unit)
        };
        match self.better.mark() {
            "" => format!("{}{unit}", self.label),
            mark => format!("{}{unit} {mark}", self.label),
        }
    }

    /// One display unit for values up to `max_abs` (the largest of an axis or a column).
    pub fn scale(&self, max_abs: f64) -> Scale {
        let big = |x: f64| max_abs.is_finite() && max_abs >= x;
        let s = |factor: f64, unit: &'static str| Scale {
            factor,
            unit,
            quantity: self.quantity,
        };
        match self.quantity {
            Millis if big(1000.0) => s(1e-3, "s"),
            Millis => s(1.0, "ms"),
            Micros if big(1e6) => s(1e-6, "s"),
            Micros if big(1000.0) => s(1e-3, "ms"),
            Micros => s(1.0, "µs"),
            Bytes if big((1u64 << 30) as f64) => s(1.0 / (1u64 << 30) as f64, "GiB"),
            Bytes if big((1u64 << 20) as f64) => s(1.0 / (1u64 << 20) as f64, "MiB"),
            Bytes if big(1024.0) => s(1.0 / 1024.0, "KiB"),
            Bytes => s(1.0, "B"),
            Percent => s(1.0, "%"),
            Count(u) | Unit(u) => s(1.0, u),
            Ratio => s(1.0, "×"),
            Error | Plain => s(1.0, ""),
        }
    }
}

impl Scale {
    /// A stored value in this scale's unit: "1.23 GiB", "45.2%", "12,345 token/s", "3.1e-3".
    pub fn format(&self, v: f64) -> String {
        if !v.is_finite() {
            return "—".into();
        }
        let x = v * self.factor;
        let n = match self.quantity {
            Error => return format!("{x:.1e}"),
            Count(_) if (x - x.round()).abs() < 1e-9 => group_i(x.round()),
            _ => number(x),
        };
        match self.unit {
            "" => n,
            "%" | "×" => format!("{n}{}", self.unit),
            u => format!("{n} {u}"),
        }
    }
}

/// A number with as many digits as its size deserves: 12,345 · 123.4 · 12.3 · 1.23 · 1.2e-3.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        "—".into()
    } else if x.abs() >= 1000.0 {
        group_i(x.round())
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 0.01 || x == 0.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.1e}")
    }
}

fn group_i(x: f64) -> String {
    let neg = x < 0.0;
    let s = (x.abs() as u64).to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if neg {
        format!("-{out}")
    } else {
        out
    }
}

/// A parameter key in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub key: &'static str,
    /// Its name in words ("context", "KV heads"); a single capital letter is written "N = 4,096".
    pub label: &'static str,
    /// A unit after the value ("tokens", "KiB"), or "".
    pub unit: &'static str,
    /// Values that are words (causal 0/1, the tp_gemm projections); an empty word hides the
    /// parameter at that value (a `debug_build` of 0 is not worth a reader's attention).
    pub values: &'static [(u64, &'static str)],
    /// A build detail a reader never needs (cache sizes of the harness): never shown.
    pub hidden: bool,
}

const fn p(key: &'static str, label: &'static str, unit: &'static str) -> Param {
    Param {
        key,
        label,
        unit,
        values: &[],
        hidden: false,
    }
}

/// Every parameter key of the book's records. A test keeps this in step with the results.
pub const PARAMS: &[Param] = &[
    p("n", "N", ""),
    p("m", "M", ""),
    p("k", "K", ""),
    p("d", "d", ""),
    p("l", "L", ""),
    p("f", "FFN 폭", ""),
    p("b", "batch", ""),
    p("batch", "batch", ""),
    p("h", "heads", ""),
    p("heads", "heads", ""),
    p("hq", "query heads", ""),
    p("hkv", "KV heads", ""),
    p("d_head", "head dim", ""),
    p("d_model", "d_model", ""),
    p("rows", "rows", ""),
    p("cols", "columns", ""),
    p("seq", "seq", "tokens"),
    p("ctx", "context", "tokens"),
    p("canvas", "canvas", "tokens"),
    p("tokens", "tokens", ""),
    p("steps", "steps", ""),
    p("profiled_steps", "profiled steps", ""),
    p("layers", "layers", ""),
    p("tp", "TP", "-way"),
    p("world", "GPUs", ""),
    p("devices", "devices", ""),
    p("requests", "requests", ""),
    p("max_num_seqs", "동시 sequence 최대", ""),
    p("kv_budget_tokens", "KV budget", "tokens"),
    p("output_tokens", "output", "tokens"),
    p("bucket_kib", "bucket", "KiB"),
    p("tensor_kib", "tensor", "KiB"),
    p("tensors", "tensors", ""),
    Param {
        values: &[(0, "non-causal"), (1, "causal")],
        ..p("causal", "", "")
    },
    Param {
        values: &[
            (0, "QKV projection"),
            (1, "gate·up projection"),
            (2, "down projection"),
        ],
        ..p("proj", "", "")
    },
    Param {
        values: &[(0, ""), (1, "debug build (not a measurement to trust)")],
        ..p("debug_build", "", "")
    },
    Param {
        hidden: true,
        ..p("elem_bytes", "element bytes", "B")
    },
    Param {
        hidden: true,
        ..p("llc_bytes", "last-level cache", "B")
    },
    Param {
        hidden: true,
        ..p("write_allocate_counted", "write-allocate counted", "")
    },
];

/// The parameter with this key, if the table has it.
pub fn param(key: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.key == key.trim())
}

/// The name of a parameter on an axis or a column header: "context (tokens)", "N", "batch".
pub fn param_name(key: &str) -> String {
    match param(key) {
        Some(p) if p.label.is_empty() => humanize(key),
        Some(p) if p.unit.is_empty() || p.unit.starts_with('-') => p.label.to_string(),
        Some(p) => format!("{} ({})", p.label, p.unit),
        None => humanize(key),
    }
}

/// A parameter value without its name, for a table cell or an axis tick: "4,096", "causal".
pub fn param_value(key: &str, v: u64) -> String {
    match param(key).and_then(|p| p.values.iter().find(|(x, _)| *x == v)) {
        Some((_, w)) => w.to_string(),
        None => group_i(v as f64),
    }
}

/// One parameter in words, or None when it is not worth showing: "N = 4,096", "batch 32",
/// "context 4,096 tokens", "causal", "TP 8-way".
pub fn param_text(key: &str, v: u64) -> Option<String> {
    let Some(p) = param(key) else {
        return Some(format!("{} {}", humanize(key), group_i(v as f64)));
    };
    if p.hidden {
        return None;
    }
    if let Some((_, w)) = p.values.iter().find(|(x, _)| *x == v) {
        return (!w.is_empty()).then(|| w.to_string());
    }
    let value = group_i(v as f64);
    let single_letter = p.label.len() == 1 && p.label.chars().all(|c| c.is_ascii_alphabetic());
    Some(if single_letter {
        format!("{} = {value}", p.label)
    } else if p.unit.starts_with('-') {
        format!("{} {value}{}", p.label, p.unit)
    } else if p.unit.is_empty() {
        format!("{} {value}", p.label)
    } else {
        format!("{} {value} {}", p.label, p.unit)
    })
}

/// Several parameters in words, joined with " · ", skipping those not worth showing.
pub fn params_text<'a>(params: impl IntoIterator<Item = (&'a str, u64)>) -> String {
    params
        .into_iter()
        .filter_map(|(k, v)| param_text(k, v))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Benchmark families in words, for figure titles.
pub const FAMILIES: &[(&str, &str)] = &[
    ("bandwidth", "메모리 대역폭 (copy)"),
    ("transpose", "행렬 transpose"),
    ("reduction", "reduction (합)"),
    ("softmax", "softmax"),
    ("rmsnorm", "RMSNorm"),
    ("gemv", "GEMV"),
    ("sgemm", "SGEMM (FP32 행렬 곱)"),
    ("tc_gemm", "tensor core GEMM (BF16)"),
    ("attention", "attention forward (BF16)"),
    ("tp_gemm", "tensor parallel GEMM shard (BF16)"),
    ("decode_attention", "decode attention"),
    ("quant_gemv", "양자화 GEMV"),
    ("ssm_scan", "SSM selective scan"),
    ("cpu", "이 컴퓨터의 CPU"),
    ("pt_forward", "PyTorch forward (hdlc-lab)"),
    ("pt_train", "PyTorch 학습 (hdlc-lab)"),
    ("pt_profile", "PyTorch profiler (학습 step)"),
    ("pt_rmsnorm", "PyTorch RMSNorm"),
    ("pt_attention", "PyTorch SDPA attention"),
    ("pt_cuda_graphs", "PyTorch CUDA graphs (decode)"),
    ("jax_forward", "JAX forward (hdlc-lab)"),
    ("jax_train", "JAX 학습 (hdlc-lab)"),
    ("jax_profiling", "JAX profiler"),
    ("jax_pallas", "JAX Pallas kernel"),
    ("jax_mesh", "JAX mesh sharding"),
    ("triton_softmax", "Triton softmax"),
    ("triton_rmsnorm", "Triton RMSNorm"),
    ("triton_matmul", "Triton matmul"),
    ("triton_attention", "Triton attention"),
    ("nano_vllm", "nano-vllm serving engine"),
    ("nano_vllm_kernels", "nano-vllm kernels"),
    ("dllm_step", "diffusion LM step"),
    ("dist_ddp", "DDP"),
    ("dist_fsdp", "FSDP2"),
    ("dist_bucketing", "gradient bucketing"),
    ("dist_comm_profile", "communication profile"),
];

/// A benchmark family in words ("sgemm" → "SGEMM (FP32 행렬 곱)"); an unknown one humanized.
pub fn family_title(family: &str) -> String {
    FAMILIES
        .iter()
        .find(|(k, _)| *k == family)
        .map_or_else(|| humanize(family), |(_, t)| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_switch_to_seconds_and_bytes_to_gib() {
        let t = lookup("ttft_p50_ms").unwrap();
        assert_eq!(t.format(114_076.1), "114.1 s");
        assert_eq!(t.format(12.34), "12.3 ms");
        assert_eq!(t.better, Better::Lower);
        assert_eq!(t.heading(&t.scale(5000.0)), "TTFT p50 (첫 token까지) (s) ↓");
        let b = lookup("peak_mem_bytes").unwrap();
        assert_eq!(b.format(3.5 * (1u64 << 30) as f64), "3.50 GiB");
        let us = lookup("kernel_time_us").unwrap();
        assert_eq!(us.format(2500.0), "2.50 ms");
        assert_eq!(lookup("tokens_per_s").unwrap().format(12345.6), "12,346 token/s");
        assert_eq!(lookup("mfu_pct").unwrap().format(45.23), "45.2%");
        assert_eq!(lookup("err_vs_bf16").unwrap().format(0.00312), "3.1e-3");
    }

    #[test]
    fn unknown_keys_read_as_words() {
        let d = describe("queue_wait_ms");
        assert_eq!(d.label, "queue wait");
        assert_eq!(d.format(2000.0), "2.00 s");
        assert_eq!(param_text("new_knob", 3).as_deref(), Some("new knob 3"));
        assert_eq!(family_title("new_lab"), "new lab");
    }

    #[test]
    fn params_read_as_words() {
        assert_eq!(param_text("n", 4096).as_deref(), Some("N = 4,096"));
        assert_eq!(param_text("ctx", 4096).as_deref(), Some("context 4,096 tokens"));
        assert_eq!(param_text("causal", 1).as_deref(), Some("causal"));
        assert_eq!(param_text("debug_build", 0), None);
        assert_eq!(param_text("llc_bytes", 1 << 25), None);
        assert_eq!(param_text("tp", 8).as_deref(), Some("TP 8-way"));
        assert_eq!(param_name("ctx"), "context (tokens)");
        assert_eq!(
            params_text([("batch", 32), ("debug_build", 0), ("seq", 256)]),
            "batch 32 · seq 256 tokens"
        );
    }

    #[test]
    fn keys_are_unique() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(METRICS[i + 1..].iter().all(|b| b.key != a.key), "{}", a.key);
        }
        for (i, a) in PARAMS.iter().enumerate() {
            assert!(PARAMS[i + 1..].iter().all(|b| b.key != a.key), "{}", a.key);
        }
    }
}
