//! Parameter keys and benchmark families in words (see the parent module for why).

use super::{group_i, humanize};

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
    p("d_model", "model dim", ""),
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
    p("load_pct", "부하 (포화 요청률 대비)", "%"),
    p("bucket_kib", "bucket", "KiB"),
    p("tensor_kib", "tensor", "KiB"),
    p("tensors", "tensors", ""),
    p("shards", "나눠 맡은 GPU 수", ""),
    p("microbatches", "micro-batches", ""),
    p("layers_per_stage", "stage당 block", ""),
    p("tokens_per_rank", "rank당 token", ""),
    p("experts", "experts", ""),
    p("topk", "top-k", ""),
    p("batch_per_gpu", "GPU당 batch", ""),
    p("bucket_mb", "bucket", "MB"),
    p("w_bits", "weight", "bit"),
    p("mib", "복사 크기", "MiB"),
    p("a_bits", "activation", "bit"),
    p("kv_bits", "KV cache", "bit"),
    Param {
        values: &[(0, "")],
        ..p("group", "group", "")
    },
    Param {
        values: &[(0, ""), (1, "gradient = bucket view")],
        ..p("bucket_view", "", "")
    },
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

/// Parameters whose meaning depends on the family: `d` is a head dimension in attention, a
/// channel count in the SSM scan and a model width in the distributed labs; `n` is a sequence
/// length, an element count or a state size. Looked up before [`PARAMS`].
pub const FAMILY_PARAMS: &[(&[&str], Param)] = &[
    (ATTENTION, p("d", "head dim", "")),
    (&["ssm_scan"], p("d", "channels", "")),
    (&["ssm_scan"], p("n", "state size", "")),
    (&["ssm_scan"], p("l", "tokens", "")),
    (
        &[
            "dist_ddp",
            "dist_fsdp",
            "dist_comm_profile",
            "jax_mesh",
            "dist_pipeline",
            "dist_expert_parallel",
            "dist_sharded_matmul",
            "jax_mesh_gpu",
        ],
        p("d", "model dim", ""),
    ),
    (&["bandwidth", "reduction", "cpu"], p("n", "elements", "")),
    (
        &["dist_collectives", "jax_mesh_gpu"],
        p("bytes", "메시지 크기", "B"),
    ),
    (&["quant_gemv"], p("n", "N (output)", "")),
    (&["quant_gemv"], p("k", "K (input)", "")),
];

const ATTENTION: &[&str] = &[
    "attention",
    "triton_attention",
    "decode_attention",
    "pt_attention",
];

/// The parameter with this key in this family (`""` for none), if a table has it.
pub fn param(family: &str, key: &str) -> Option<&'static Param> {
    let key = key.trim();
    FAMILY_PARAMS
        .iter()
        .find(|(fams, p)| p.key == key && fams.contains(&family))
        .map(|(_, p)| p)
        .or_else(|| PARAMS.iter().find(|p| p.key == key))
}

/// The name of a parameter on an axis or a column header: "context (tokens)", "N", "batch".
pub fn param_name(family: &str, key: &str) -> String {
    match param(family, key) {
        Some(p) if p.label.is_empty() => humanize(key),
        Some(p) if p.unit.is_empty() || p.unit.starts_with('-') => p.label.to_string(),
        Some(p) => format!("{} ({})", p.label, p.unit),
        None => humanize(key),
    }
}

/// A parameter value without its name, for a table cell or an axis tick: "4,096", "causal".
pub fn param_value(family: &str, key: &str, v: u64) -> String {
    match param(family, key).and_then(|p| p.values.iter().find(|(x, _)| *x == v)) {
        Some((_, w)) => w.to_string(),
        None => group_i(v as f64),
    }
}

/// One parameter in words, or None when it is not worth showing: "N = 4,096", "batch 32",
/// "context 4,096 tokens", "causal", "TP 8-way", "head dim 128" (`d` of an attention family).
pub fn param_text(family: &str, key: &str, v: u64) -> Option<String> {
    let Some(p) = param(family, key) else {
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
pub fn params_text<'a>(family: &str, params: impl IntoIterator<Item = (&'a str, u64)>) -> String {
    params
        .into_iter()
        .filter_map(|(k, v)| param_text(family, k, v))
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
    ("lowp_gemm", "8-bit tensor core GEMM (FP8 · INT8)"),
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
    (
        "jax_mesh_gpu",
        "JAX 실제 mesh: 학습 step과 collective (DP·FSDP·TP, shard_map)",
    ),
    ("triton_softmax", "Triton softmax"),
    ("triton_rmsnorm", "Triton RMSNorm"),
    ("triton_matmul", "Triton matmul"),
    ("triton_attention", "Triton attention"),
    ("nano_vllm", "nano-vllm serving engine"),
    ("nano_vllm_kernels", "nano-vllm kernels"),
    ("nano_vllm_scale", "nano engine (nano-vllm benchmark 규모)"),
    (
        "nano_vllm_scale_rates",
        "nano engine (Poisson 도착, 요청률 sweep)",
    ),
    ("dllm_step", "diffusion LM step"),
    ("dist_ddp", "DDP"),
    ("dist_fsdp", "FSDP2"),
    ("dist_bucketing", "gradient bucketing"),
    ("dist_comm_profile", "communication profile"),
    ("dist_collectives", "collective 통신 (torch.distributed)"),
    ("dist_scaling", "DDP·FSDP2 확장 (1 → n GPU)"),
    ("dist_tensor_parallel", "tensor parallelism (Megatron TP · SP)"),
    ("dist_pipeline", "pipeline 병렬화 (GPipe, 1F1B)"),
    ("dist_expert_parallel", "expert parallelism (MoE all-to-all)"),
    ("dist_ring_attention", "ring attention (context parallelism)"),
    (
        "dist_sharded_matmul",
        "sharded matmul (all-gather→GEMM, GEMM→reduce-scatter)",
    ),
    ("quant_decode", "양자화 serving: 8B decode TPOT과 FP8 prefill"),
    (
        "quant_accuracy",
        "양자화 형식별 정확도 (hdlc-lab, held-out perplexity)",
    ),
];

/// A benchmark family in words ("sgemm" → "SGEMM (FP32 행렬 곱)"); an unknown one humanized.
pub fn family_title(family: &str) -> String {
    FAMILIES
        .iter()
        .find(|(k, _)| *k == family)
        .map_or_else(|| humanize(family), |(_, t)| t.to_string())
}
