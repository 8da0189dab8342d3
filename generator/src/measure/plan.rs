//! What the harness measures: families, their variants (the teaching ladder) and problem sizes,
//! and how much work each run does. Pure data, no GPU: the cache check and the tests use it.
//!
//! Sizes are chosen so that the memory-bound families move at least 512 MiB each way, ten times
//! an H100's 50 MB L2, so the cache cannot flatter them (the L2 is also flushed between runs).

use super::plan_rows::with_sweep;
use std::collections::BTreeMap;

/// Every benchmark family, in the order the harness runs them.
pub const FAMILIES: &[&str] = &[
    "bandwidth",
    "transpose",
    "reduction",
    "softmax",
    "rmsnorm",
    "gemv",
    "sgemm",
    "tc_gemm",
    "attention",
    "tp_gemm",
    "decode_attention",
    "quant_gemv",
    "ssm_scan",
];

/// Square SGEMM sizes.
pub const SGEMM_SIZES: &[u64] = &[1024, 2048, 4096, 8192];

/// Square tensor-core GEMM sizes (multiples of 256: the WGMMA rung's block tile is 128 × 256).
pub const TC_GEMM_SIZES: &[u64] = &[2048, 4096, 8192];

/// Attention: batch and heads are fixed (B·H = 64 heads fill the 132 SMs of an H100 from
/// N = 1024 on: flash_tc runs N/128 · 64 blocks) while the sequence grows, so the N² score
/// matrix of the naive and standard variants grows with it until it no longer fits.
pub const ATTN_BATCH: u64 = 4;
pub const ATTN_HEADS: u64 = 16;
pub const ATTN_SEQS: &[u64] = &[512, 1024, 2048, 4096, 8192, 16384];
pub const ATTN_HEAD_DIMS: &[u64] = &[64, 128];

/// One (variant, parameters) point to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub family: &'static str,
    pub variant: &'static str,
    pub label: &'static str,
    pub rung: u32,
    pub baseline: bool,
    /// The kernels/*.cu file (None for library baselines: memcpy, cuBLAS).
    pub source_file: Option<&'static str>,
    pub params: BTreeMap<String, u64>,
    /// Deliberately not measured, with the reason (recorded as `FailStage::Unsupported`).
    pub skip: Option<&'static str>,
}

impl Item {
    /// A parameter that the plan guarantees is present.
    pub fn p(&self, name: &str) -> u64 {
        self.params.get(name).copied().unwrap_or(0)
    }

    /// "sgemm/sgemm_naive m=1024 n=1024 k=1024"
    pub fn describe(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}/{} {}", self.family, self.variant, params.join(" "))
    }
}

pub(crate) fn params(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

pub(crate) struct V(pub &'static str, pub &'static str);

pub(crate) fn ladder(
    family: &'static str,
    file: &'static str,
    variants: &[V],
    p: &BTreeMap<String, u64>,
    baseline: (&'static str, &'static str),
) -> Vec<Item> {
    let mut out: Vec<Item> = variants
        .iter()
        .enumerate()
        .map(|(i, V(variant, label))| Item {
            family,
            variant,
            label,
            rung: i as u32 + 1,
            baseline: false,
            source_file: Some(file),
            params: p.clone(),
            skip: None,
        })
        .collect();
    out.push(Item {
        family,
        variant: baseline.0,
        label: baseline.1,
        rung: variants.len() as u32 + 1,
        baseline: true,
        source_file: None,
        params: p.clone(),
        skip: None,
    });
    out
}

pub(crate) const MEMCPY: (&str, &str) = ("memcpy", "device memcpy (cuMemcpyDtoD)");

/// 2^28 floats: 1 GiB per array.
pub const N_1GIB: u64 = 1 << 28;

/// The persistent tensor-core GEMM rung (tc_gemm and tp_gemm ladders), after tc_wgmma.
pub(crate) const TC_PERSISTENT: (&str, &str) = (
    "tc_wgmma_persistent",
    "persistent blocks, TMA-store epilogue overlapped with the next tile",
);

/// The stream-K rung (tc_gemm and tp_gemm ladders), after the persistent one.
pub(crate) const TC_STREAMK: (&str, &str) = (
    "tc_wgmma_streamk",
    "stream-K: the last round's tiles split along K over every SM",
);

/// The persistent and stream-K rungs have their own files, so the shipped results of the rungs
/// before them stay valid.
pub(crate) fn tc_persistent_file(mut item: Item) -> Item {
    if item.variant == TC_PERSISTENT.0 {
        item.source_file = Some("tc_gemm_persistent.cu");
    } else if item.variant == TC_STREAMK.0 {
        item.source_file = Some("tc_gemm_streamk.cu");
    }
    item
}

/// Move the items of `variants` to the end of the run order, keeping their own order (shape by
/// shape, so the inputs a shape's variants share are made once for them). A device fault (a bad
/// address, a trapped deadlock) poisons the whole CUDA context for the rest of the process, so
/// the rungs built from the most intricate machinery (TMA and mbarriers, hand-laid tensor-core
/// fragments) run after every other number is safe. Results files sort their records, so the
/// order leaves no trace there.
pub(crate) fn run_last(items: Vec<Item>, variants: &[&str]) -> Vec<Item> {
    let (last, mut first): (Vec<Item>, Vec<Item>) =
        items.into_iter().partition(|i| variants.contains(&i.variant));
    first.extend(last);
    first
}

/// Whether an item's number depends on the cuBLAS library (its version joins the cache key).
pub fn uses_cublas(item: &Item) -> bool {
    item.variant == "cublas" || (item.family == "attention" && item.variant == "standard")
}

/// The items of one family (empty for an unknown family).
pub fn items(family: &str) -> Vec<Item> {
    match family {
        "bandwidth" => ladder(
            "bandwidth",
            "bandwidth.cu",
            &[
                V("copy_naive", "copy, one element per thread"),
                V("copy_grid_stride", "copy, grid-stride loop"),
                V("copy_vec4", "copy, float4 per thread"),
                V("copy_vec4_ilp", "copy, 4 × float4 in flight per thread"),
                V("vector_add_naive", "vector add c = a + b, one element per thread"),
                V("vector_add_vec4", "vector add c = a + b, float4"),
            ],
            &params(&[("n", N_1GIB)]),
            MEMCPY,
        ),
        "transpose" => ladder(
            "transpose",
            "transpose.cu",
            &[
                V("transpose_naive", "naive (strided writes)"),
                V("transpose_tiled", "shared-memory tile 32 × 32"),
                V(
                    "transpose_padded",
                    "shared-memory tile, +1 padding (no bank conflicts)",
                ),
            ],
            &params(&[("rows", 16384), ("cols", 16384)]),
            MEMCPY,
        ),
        "reduction" => ladder(
            "reduction",
            "reduction.cu",
            &[
                V(
                    "reduce_atomic",
                    "atomicAdd per element into a shared float, per block",
                ),
                V("reduce_shared_tree", "shared-memory tree"),
                V("reduce_warp_shuffle", "warp shuffles"),
                V("reduce_vec4", "float4, many elements per thread + shuffles"),
            ],
            &params(&[("n", N_1GIB)]),
            MEMCPY,
        ),
        "softmax" => with_sweep(
            ladder(
                "softmax",
                "softmax.cu",
                &[
                    V("softmax_three_pass", "three passes (max, sum, normalize)"),
                    V("softmax_online", "online softmax, two passes"),
                    V("softmax_fused", "one pass, row in registers (float4)"),
                    V(
                        "softmax_adaptive",
                        "one pass: a warp per short row, a block cluster per long row",
                    ),
                ],
                &params(&[("rows", 32768), ("cols", 4096)]),
                MEMCPY,
            ),
            &["softmax_fused", "softmax_adaptive"],
            "softmax_fused",
            8192,
            "unsupported: softmax_fused holds a row in one block's registers, at most 8192 floats",
        ),
        "rmsnorm" => with_sweep(
            ladder(
                "rmsnorm",
                "rmsnorm.cu",
                &[
                    V("rmsnorm_naive", "one thread per row"),
                    V(
                        "rmsnorm_block_vec4",
                        "one block per row, float4, row in registers",
                    ),
                    V(
                        "rmsnorm_adaptive",
                        "a warp per short row, a block cluster per long row",
                    ),
                    V(
                        "rmsnorm_bwd_atomic",
                        "backward (dx, dw): dw by atomicAdd per element",
                    ),
                    V(
                        "rmsnorm_bwd",
                        "backward (dx, dw): per-block dw partials + reduce kernel",
                    ),
                ],
                &params(&[("rows", 32768), ("cols", 4096)]),
                MEMCPY,
            ),
            &["rmsnorm_block_vec4", "rmsnorm_adaptive"],
            "rmsnorm_block_vec4",
            8192,
            "unsupported: rmsnorm_block_vec4 holds a row in one block's registers, at most 8192 \
             floats",
        ),
        "gemv" => ladder(
            "gemv",
            "gemv.cu",
            &[
                V("gemv_naive", "one thread per row"),
                V("gemv_warp_vec4", "one warp per row, float4"),
            ],
            &params(&[("rows", 16384), ("cols", 16384)]),
            MEMCPY,
        ),
        "sgemm" => {
            let mut out = Vec::new();
            for &s in SGEMM_SIZES {
                let mut items = ladder(
                    "sgemm",
                    "sgemm.cu",
                    &[
                        V("sgemm_naive", "naive"),
                        V("sgemm_coalesced", "coalesced"),
                        V("sgemm_smem", "shared-memory tiling"),
                        V("sgemm_blocktile_1d", "1D register blocking (8 per thread)"),
                        V("sgemm_blocktile_2d", "2D register blocking (8 × 8 per thread)"),
                        V("sgemm_vectorized", "vectorized (float4, transposed A tile)"),
                        V("sgemm_warptile", "warp tiling + double buffering"),
                        V("sgemm_tuned", "register prefetch, swept tile shape"),
                        V("sgemm_ring", "cuBLAS's tile: 128 × 256, 3-stage cp.async ring"),
                    ],
                    &params(&[("m", s), ("n", s), ("k", s)]),
                    ("cublas", "cuBLAS SGEMM (FP32)"),
                );
                // Rungs 8 and 9 have their own files (templates over the tile shape).
                for item in items.iter_mut() {
                    match item.variant {
                        "sgemm_tuned" => item.source_file = Some("sgemm_tuned.cu"),
                        "sgemm_ring" => item.source_file = Some("sgemm_ring.cu"),
                        _ => {}
                    }
                }
                if s > 4096 {
                    items[0].skip = Some("skipped: naive kernel too slow at 8192 (seconds per run)");
                    // The next two rungs are the slowest left at 8192 and show nothing 4096 does
                    // not (issue 17: the suite's 90 s).
                    for it in &mut items[1..3] {
                        it.skip = Some(
                            "skipped: slow at 8192 (8× the work of 4096 at the same low \
                             efficiency); its place on the ladder is clear by 4096",
                        );
                    }
                }
                out.extend(items);
            }
            out
        }
        "tc_gemm" => run_last(
            TC_GEMM_SIZES
                .iter()
                .flat_map(|&s| {
                    ladder(
                        "tc_gemm",
                        "tc_gemm.cu",
                        &[
                            V("tc_wmma", "WMMA 16×16×16 from global memory"),
                            V("tc_smem_cpasync", "shared-memory tiles, cp.async double buffer"),
                            V(
                                "tc_mma_pipeline",
                                "mma.sync + ldmatrix, 3-stage cp.async pipeline",
                            ),
                            V("tc_wgmma", "Hopper WGMMA + TMA, warp-specialized"),
                            V(TC_PERSISTENT.0, TC_PERSISTENT.1),
                            V(TC_STREAMK.0, TC_STREAMK.1),
                        ],
                        &params(&[("m", s), ("n", s), ("k", s)]),
                        ("cublas", "cuBLAS gemm_ex (BF16, FP32 accumulate)"),
                    )
                })
                .map(tc_persistent_file)
                .collect(),
            &["tc_wgmma", TC_PERSISTENT.0, TC_STREAMK.0],
        ),
        "attention" => {
            let mut out = Vec::new();
            // Causal innermost: both masks of a shape run on the same Q, K, V (see
            // families::attention), made once.
            for &d in ATTN_HEAD_DIMS {
                for &n in ATTN_SEQS {
                    for causal in [0, 1] {
                        let mut items = ladder(
                            "attention",
                            "attention.cu",
                            &[
                                V("naive", "naive: S in FP32, softmax, P·V (SIMT)"),
                                V("flash_simt", "FlashAttention tiling, CUDA cores"),
                                V("flash_tc", "FlashAttention-2, tensor cores (mma.sync)"),
                                V(
                                    "flash_wgmma",
                                    "WGMMA + TMA, producer and 2 consumer warpgroups (Hopper)",
                                ),
                                V(
                                    "flash_wgmma_pipe",
                                    "+ softmax overlapped with the next Q·Kᵀ (FlashAttention-3)",
                                ),
                                V(
                                    "flash_wgmma_pingpong",
                                    "+ ping-pong: the 2 warpgroups take turns on the tensor cores",
                                ),
                            ],
                            &params(&[
                                ("b", ATTN_BATCH),
                                ("h", ATTN_HEADS),
                                ("n", n),
                                ("d", d),
                                ("causal", causal),
                            ]),
                            ("standard", "standard: cuBLAS Q·Kᵀ, softmax, cuBLAS P·V"),
                        );
                        // The baseline's softmax kernel lives in attention.cu too; the Hopper
                        // rung has a file of its own (compiled for sm_90a).
                        for it in items.iter_mut() {
                            if it.baseline {
                                it.source_file = Some("attention.cu");
                            } else if it.variant.starts_with("flash_wgmma") {
                                it.source_file = Some("attention_hopper.cu");
                            }
                        }
                        // The slowest rungs stop where they stop teaching: their shape is
                        // clear by N = 4096, and each larger size would cost the suite seconds
                        // (issue 17: a 90-second suite).
                        if n >= 16384 {
                            items[0].skip = Some(
                                "skipped: too slow — the SIMT score and P·V products take over a \
                                 second per run at N = 16384, and S alone is 64 GiB",
                            );
                        } else if n >= 8192 {
                            items[0].skip = Some(
                                "skipped: slow — the naive kernel writes and reads a 16 GiB S at \
                                 N = 8192; its trend is clear by 4096",
                            );
                        }
                        if n >= 8192 {
                            items[1].skip = Some(
                                "skipped: slow — CUDA-core FlashAttention's time grows as N², so \
                                 from N = 8192 it costs the suite seconds; its trend is clear by \
                                 4096",
                            );
                        }
                        out.extend(items);
                    }
                }
            }
            // Shape by shape, every rung: unlike the GEMM families (see `run_last`), moving the
            // intricate rungs to a second pass here would make every shape's inputs twice — up to
            // 1.5 GB of Q, K, V and a standard-attention reference each — about a twentieth of
            // the suite's time budget. A device fault in a Hopper rung would fail the items after
            // it (recorded as failed, never drawn), a cost paid only when something is broken.
            out
        }
        "tp_gemm" | "decode_attention" | "quant_gemv" | "ssm_scan" => super::plan_infer::items(family),
        _ => Vec::new(),
    }
}

/// Floating-point operations and the fewest bytes one run must move, for an item.
///
/// Bytes count every input read once and every output written once. The memcpy baseline of a
/// family copies that family's main input (so its bytes are read + write of that size).
/// Softmax counts 5 operations per element (max, subtract, exp, add, scale), RMSNorm 4
/// (square, add, two multiplies); these are conventions, stated so figures can say so.
pub fn work(item: &Item) -> (f64, f64) {
    let f = |k: &str| item.p(k) as f64;
    if let Some(w) = super::plan_infer::work(item) {
        return w;
    }
    if item.variant == "memcpy" {
        let elems = match item.family {
            "bandwidth" | "reduction" => f("n"),
            _ => f("rows") * f("cols"),
        };
        return (0.0, 8.0 * elems);
    }
    match item.family {
        "bandwidth" => {
            let n = f("n");
            if item.variant.starts_with("vector_add") {
                (n, 12.0 * n)
            } else {
                (0.0, 8.0 * n)
            }
        }
        "transpose" => (0.0, 8.0 * f("rows") * f("cols")),
        "reduction" => (f("n"), 4.0 * f("n")),
        "softmax" => (5.0 * f("rows") * f("cols"), 8.0 * f("rows") * f("cols")),
        // Backward: read x and dy, write dx (12 bytes per element), read w and write dw; 9
        // operations per element (w·dy, ·x and add; s·g, k·x, subtract; dy·x·s and add).
        "rmsnorm" if item.variant.starts_with("rmsnorm_bwd") => (
            9.0 * f("rows") * f("cols"),
            12.0 * f("rows") * f("cols") + 8.0 * f("cols"),
        ),
        "rmsnorm" => (
            4.0 * f("rows") * f("cols"),
            8.0 * f("rows") * f("cols") + 4.0 * f("cols"),
        ),
        "gemv" => (
            2.0 * f("rows") * f("cols"),
            4.0 * (f("rows") * f("cols") + f("rows") + f("cols")),
        ),
        "sgemm" => {
            let (m, n, k) = (f("m"), f("n"), f("k"));
            (2.0 * m * n * k, 4.0 * (m * k + k * n + m * n))
        }
        // BF16 A and B read once, FP32 C written once.
        "tc_gemm" => {
            let (m, n, k) = (f("m"), f("n"), f("k"));
            (2.0 * m * n * k, 2.0 * (m * k + k * n) + 4.0 * m * n)
        }
        // 4·N²·d per head (two products of 2·N²·d), half of it when causal; the fewest bytes
        // are Q, K, V read and O written once, BF16.
        "attention" => {
            let (heads, n, d) = (f("b") * f("h"), f("n"), f("d"));
            let causal = if item.p("causal") != 0 { 0.5 } else { 1.0 };
            (causal * 4.0 * n * n * d * heads, 8.0 * heads * n * d)
        }
        _ => (0.0, 0.0),
    }
}
