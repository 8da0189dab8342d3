//! Profiler tables in a reader's words: kernel names shortened to what they are, and kernels
//! grouped by kind (GEMM, attention, norm and reduction, elementwise, memory, other) with each
//! kind's time and share of the step.
//!
//! Why: a profiler prints `void at::native::vectorized_elementwise_kernel<4, at::native::
//! CUDAFunctor_add<c10::BFloat16>, …>` and `nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT`.
//! The lesson of such a table is where the time goes — how much is matrix products and how much
//! is the elementwise glue around them — and that needs kinds and shares, not template arguments.
//! The full name stays in the cell's `title` for whoever wants it.

/// What a kernel (or an op) spends its time on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Gemm,
    Attention,
    Norm,
    Elementwise,
    Memory,
    Communication,
    Other,
}

impl Kind {
    pub(super) fn words(self) -> &'static str {
        match self {
            Kind::Gemm => "GEMM (행렬 곱)",
            Kind::Attention => "attention",
            Kind::Norm => "norm·reduction",
            Kind::Elementwise => "elementwise",
            Kind::Memory => "memory (copy·index·cat)",
            Kind::Communication => "communication (collective)",
            Kind::Other => "기타 (other, fused)",
        }
    }
}

/// The kind of a kernel or op, from words in its name (case-insensitive, first match wins, so
/// an attention kernel built on wgmma counts as attention, not as a GEMM).
pub(super) fn kind_of(name: &str) -> Kind {
    let n = name.to_ascii_lowercase();
    KINDS
        .iter()
        .find(|(_, words)| words.iter().any(|w| n.contains(w)))
        .map_or(Kind::Other, |(k, _)| *k)
}

/// Words in kernel and op names, by kind, in the order they are tried.
const KINDS: &[(Kind, &[&str])] = &[
    (
        Kind::Attention,
        &["sdpa", "flash", "attention", "fmha", "paged_decode", "attn"],
    ),
    (
        Kind::Gemm,
        &[
            "gemm",
            "nvjet",
            "cutlass",
            "xmma",
            "matmul",
            "aten::mm",
            "aten::bmm",
            "aten::addmm",
            "aten::linear",
            "_dot",
            "dot_",
            "wgmma",
        ],
    ),
    (
        Kind::Communication,
        &[
            "nccl",
            "gloo",
            "all_reduce",
            "allreduce",
            "all_gather",
            "allgather",
            "reduce_scatter",
        ],
    ),
    (
        Kind::Norm,
        &[
            "norm",
            "reduce",
            "softmax",
            "aten::sum",
            "aten::mean",
            "sum_kernel",
        ],
    ),
    (
        Kind::Memory,
        &[
            "copy",
            "gather",
            "index",
            "cat",
            "transpose",
            "memcpy",
            "memset",
            "fill",
            "scatter",
            "embedding",
            "concat",
            "slice",
        ],
    ),
    (
        Kind::Elementwise,
        &[
            "elementwise",
            "functor",
            "aten::mul",
            "aten::add",
            "aten::div",
            "aten::sub",
            "silu",
            "gelu",
            "relu",
            "foreach",
            "multi_tensor",
            "loop_",
            "aten::neg",
            "aten::pow",
            "aten::exp",
            "aten::rsqrt",
            "sigmoid",
        ],
    ),
];

/// A kernel name without return type, namespaces and template arguments, with the functor of an
/// elementwise kernel kept in parentheses: `void at::native::vectorized_elementwise_kernel<4,
/// at::native::CUDAFunctor_add<…>, …>` → "vectorized_elementwise_kernel (add)". Names without
/// templates (`nvjet_sm90_tst_…`, `rmsnorm_kernel`, `aten::mm`) stay as they are.
pub(super) fn short_name(full: &str) -> String {
    let s = full
        .trim()
        .trim_start_matches("void ")
        .trim()
        .trim_end_matches('…');
    // cuDNN's generated kernels: the engine's words, without the tuning knobs and tile shapes.
    if let Some(rest) = s.strip_prefix("cudnn_generated_fort_native_") {
        let words = rest.split("_knob").next().unwrap_or(rest);
        return format!("cuDNN {}", words.replace('_', " "));
    }
    let cut = s.find(['<', '(']).unwrap_or(s.len());
    let head = &s[..cut];
    let base = if head.starts_with("aten::") || !head.contains("::") {
        head
    } else {
        head.rsplit("::").next().unwrap_or(head)
    };
    let base = base.trim().trim_end_matches('…');
    if base.is_empty() {
        return s.to_string();
    }
    match functor(&s[cut..]) {
        Some(f) => format!("{base} ({f})"),
        None => base.to_string(),
    }
}

/// The operation an elementwise kernel's functor names: `CUDAFunctor_add` → "add",
/// `MulFunctor` → "mul", `direct_copy_kernel_cuda` → "copy".
fn functor(args: &str) -> Option<String> {
    let words = args.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    for w in words {
        if let Some(op) = w.strip_prefix("CUDAFunctor_") {
            return Some(op.to_ascii_lowercase());
        }
        if let Some(op) = w
            .strip_suffix("Functor")
            .filter(|o| !o.is_empty() && *o != "Binary" && *o != "Unary")
        {
            return Some(op.to_ascii_lowercase());
        }
        if w.contains("copy_kernel") {
            return Some("copy".into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_shorten_and_kinds_group() {
        let add =
            "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat1";
        assert_eq!(short_name(add), "vectorized_elementwise_kernel (add)");
        assert_eq!(kind_of(add), Kind::Elementwise);
        let nv = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT";
        assert_eq!(short_name(nv), nv);
        assert_eq!(kind_of(nv), Kind::Gemm);
        let sdpa =
            "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1…";
        assert_eq!(kind_of(sdpa), Kind::Attention);
        assert_eq!(short_name(sdpa), "cuDNN sdpa sm90 flash bprop wgmma f16");
        assert_eq!(kind_of("rmsnorm_kernel"), Kind::Norm);
        assert_eq!(kind_of("aten::mm"), Kind::Gemm);
        assert_eq!(kind_of("aten::copy_"), Kind::Memory);
        assert_eq!(kind_of("fusion_270"), Kind::Other);
        assert_eq!(kind_of("gemm_fusion_dot_8"), Kind::Gemm);
        assert_eq!(kind_of("paged_decode_kernel"), Kind::Attention);
        assert_eq!(
            short_name(
                "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, "
            ),
            "vectorized_gather_kernel"
        );
        assert_eq!(
            short_name("aten::_cudnn_attention_backward"),
            "aten::_cudnn_attention_backward"
        );
    }
}
