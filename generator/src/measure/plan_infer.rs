//! The inference-side families of the plan (decode attention, weight-only quantized GEMV, the
//! SSM scan) and the tensor-parallel shard GEMMs: their items and their work accounting, kept
//! apart from `plan` so each file stays one screenful of data.
//!
//! Byte counts follow the plan's convention: the fewest bytes one run must move — every input
//! read once, every output written once, in the format the variant stores it in (so a quantized
//! cache or weight counts its codes and scales), workspaces (split partials, chunk states) not
//! counted.

use super::plan::{ladder, params, run_last, tc_persistent_file, Item, MEMCPY, TC_PERSISTENT, TC_STREAMK, V};

/// decode_attention: 32 query heads of d = 128, KV heads 32 (MHA), 8 (GQA) and 1 (MQA).
pub const DECODE_HQ: u64 = 32;
/// The decode shapes (b, hkv, ctx): two slices through batch × KV heads × context, each drawn by
/// the cards — context swept at 8 KV heads for batch 1 and 8 (Flash-Decoding, paging, KV
/// quantization, the SSM comparison), KV heads swept (MHA / GQA / MQA) at batch 1 with a long
/// context and at batch 8 with a medium one. Batch 64 and the other corners of the full grid
/// taught nothing those slices do not, and each shape costs the suite seconds of host set-up
/// (a fresh cache of up to 1 GiB, paged and quantized copies of it).
pub const DECODE_SHAPES: &[(u64, u64, u64)] = &[
    (1, 8, 512),
    (1, 8, 4096),
    (1, 8, 32768),
    (1, 32, 32768),
    (1, 1, 32768),
    (8, 8, 512),
    (8, 8, 4096),
    (8, 8, 32768),
    (8, 32, 4096),
    (8, 1, 4096),
];
/// The largest group of query heads per KV head that the v2 decode kernels serve (the MMA
/// tile's 8 columns).
pub const DECODE_V2_MAX_GROUP: u64 = 8;

/// quant_gemv: the 28672 × 8192 weight (Llama 3 70B's fused gate/up projection shape, N × K).
pub const QGEMV_N: u64 = 28672;
pub const QGEMV_K: u64 = 8192;
pub const QGEMV_BATCH: &[u64] = &[1, 4, 16, 64];

/// ssm_scan: D = 5120 channels (Mamba 2.8B's inner width), state 16.
pub const SSM_D: u64 = 5120;
pub const SSM_N: u64 = 16;
pub const SSM_DECODE_BATCH: &[u64] = &[1, 8, 32, 64];
pub const SSM_PREFILL_L: &[u64] = &[512, 2048, 8192, 32768];

/// tp_gemm: Llama 3 8B projections at 4096 batch tokens, split 1/2/4/8 ways. `proj`: 0 = QKV
/// (N = 4096 + 2·1024 split, column-parallel), 1 = MLP up (N = 14336 split, column-parallel),
/// 2 = MLP down (K = 14336 split, row-parallel).
pub const TP_TOKENS: u64 = 4096;
pub const TP_WAYS: &[u64] = &[1, 2, 4, 8];
/// (proj, full N, full K, split K instead of N)
pub const TP_PROJS: &[(u64, u64, u64, bool)] = &[
    (0, 6144, 4096, false),
    (1, 14336, 4096, false),
    (2, 4096, 14336, true),
];

#[cfg(test)]
fn decode_kv_bytes(b: u64, hkv: u64, ctx: u64) -> u64 {
    2 * b * hkv * ctx * 128 * 2
}

pub fn items(family: &str) -> Vec<Item> {
    match family {
        "decode_attention" => {
            let mut out = Vec::new();
            for &(b, hkv, ctx) in DECODE_SHAPES {
                out.extend(ladder(
                    "decode_attention",
                    "decode_attention.cu",
                    &[
                        V("naive", "one warp per query head, key by key"),
                        V(
                            "gqa",
                            "one CTA per KV head serves its query heads (K/V read once)",
                        ),
                        V("split_kv", "Flash-Decoding: context split over CTAs + combine"),
                        V(
                            "paged",
                            "split_kv through a block table (16-token blocks, shuffled)",
                        ),
                        V("kv_int8", "split_kv, int8 KV cache (per-token scales)"),
                        V("kv_fp8", "split_kv, FP8 E4M3 KV cache (per-token scales)"),
                        V(
                            "split_kv_v2",
                            "split_kv on tensor cores, K/V bulk-copied into a per-warp shared-memory ring",
                        ),
                        V(
                            "paged_v2",
                            "split_kv_v2 through the block table (one page per step)",
                        ),
                    ],
                    &params(&[
                        ("b", b),
                        ("hq", DECODE_HQ),
                        ("hkv", hkv),
                        ("ctx", ctx),
                        ("d", 128),
                    ]),
                    MEMCPY,
                ));
            }
            for i in out.iter_mut().filter(|i| i.variant.ends_with("_v2")) {
                i.source_file = Some("decode_attention_v2.cu");
                if DECODE_HQ / i.p("hkv") > DECODE_V2_MAX_GROUP {
                    i.skip = Some(
                        "skipped: the v2 kernels hold one 16-row MMA tile of query heads per KV \
                         head (G ≤ 8); MQA (G = 32) is compute-bound on the split_kv rung",
                    );
                }
            }
            // The cache-layout rungs (paged, quantized) are drawn at batch 8 with 8 KV heads, where
            // they are compared with split_kv; elsewhere they would cost the suite seconds of
            // quantizing and scattering gigabyte caches and teach nothing new (issue 17: 90 s).
            for i in out.iter_mut().filter(|i| {
                ["paged", "paged_v2", "kv_int8", "kv_fp8"].contains(&i.variant)
                    && (i.p("b"), i.p("hkv")) != (8, 8)
                    && i.skip.is_none()
            }) {
                i.skip = Some(
                    "skipped: the paged and quantized caches are measured at batch 8 with 8 KV \
                     heads, where the cards compare them with split_kv",
                );
            }
            out
        }
        "quant_gemv" => {
            let mut memcpy = ladder(
                "quant_gemv",
                "quant_gemv.cu",
                &[],
                &params(&[("batch", 0), ("n", QGEMV_N), ("k", QGEMV_K)]),
                ("memcpy", "device memcpy of the BF16 weight (cuMemcpyDtoD)"),
            );
            memcpy[0].label = "device memcpy of the BF16 weight (cuMemcpyDtoD)";
            for &batch in QGEMV_BATCH {
                memcpy.extend(ladder(
                    "quant_gemv",
                    "quant_gemv.cu",
                    &[
                        V("bf16", "BF16 weight (the book's GEMV)"),
                        V("int8", "int8 weight, per-channel scale"),
                        V(
                            "int8_fast",
                            "int8 (per channel), reordered codes, coalesced X, 4 rows per warp",
                        ),
                        V("int4", "int4 weight, group-wise scale (g = 128)"),
                        V(
                            "int4_fast",
                            "int4 (g = 128), reordered codes, coalesced X, 4 rows per warp",
                        ),
                        V("fp8", "FP8 E4M3 weight, per-channel scale"),
                        V(
                            "int4_mma",
                            "int4 (g = 128) on tensor cores: LOP3 dequant into mma.sync fragments",
                        ),
                    ],
                    &params(&[("batch", batch), ("n", QGEMV_N), ("k", QGEMV_K)]),
                    ("cublas", "cuBLAS gemm_ex (BF16, FP32 accumulate)"),
                ));
            }
            for i in memcpy.iter_mut().filter(|i| i.variant == "int4_mma") {
                i.source_file = Some("quant_gemv_mma.cu");
            }
            memcpy
        }
        "ssm_scan" => {
            let mut out = Vec::new();
            for &b in SSM_DECODE_BATCH {
                out.extend(ladder(
                    "ssm_scan",
                    "ssm_scan.cu",
                    &[V("decode_step", "decode step: one token, state read and written")],
                    &params(&[("b", b), ("d", SSM_D), ("n", SSM_N), ("l", 1)]),
                    ("memcpy", "device memcpy of the state (cuMemcpyDtoD)"),
                ));
            }
            for &l in SSM_PREFILL_L {
                out.extend(ladder(
                    "ssm_scan",
                    "ssm_scan.cu",
                    &[
                        V(
                            "scan_sequential",
                            "prefill: one thread per channel over all tokens",
                        ),
                        V(
                            "scan_chunked",
                            "prefill: chunks of 128 tokens scanned in parallel, states carried",
                        ),
                    ],
                    &params(&[("b", 1), ("d", SSM_D), ("n", SSM_N), ("l", l)]),
                    ("memcpy", "device memcpy of x (cuMemcpyDtoD)"),
                ));
            }
            out
        }
        "tp_gemm" => {
            let mut out = Vec::new();
            for &(proj, n, k, split_k) in TP_PROJS {
                for &tp in TP_WAYS {
                    let (n, k) = if split_k { (n, k / tp) } else { (n / tp, k) };
                    out.extend(ladder(
                        "tp_gemm",
                        "tc_gemm.cu",
                        &[
                            V(
                                "tc_mma_pipeline",
                                "mma.sync + ldmatrix, 3-stage cp.async pipeline",
                            ),
                            V("tc_wgmma", "Hopper WGMMA + TMA, warp-specialized"),
                            V(TC_PERSISTENT.0, TC_PERSISTENT.1),
                            V(TC_STREAMK.0, TC_STREAMK.1),
                        ],
                        &params(&[("m", TP_TOKENS), ("n", n), ("k", k), ("tp", tp), ("proj", proj)]),
                        ("cublas", "cuBLAS gemm_ex (BF16, FP32 accumulate)"),
                    ));
                }
            }
            let out = out.into_iter().map(tc_persistent_file).collect();
            run_last(out, &["tc_wgmma", TC_PERSISTENT.0, TC_STREAMK.0])
        }
        _ => Vec::new(),
    }
}

/// (FLOPs, fewest bytes) of an item of these families; None for the other families.
pub fn work(item: &Item) -> Option<(f64, f64)> {
    let f = |k: &str| item.p(k) as f64;
    let v = item.variant;
    Some(match item.family {
        // 2·d FLOPs for q·k and 2·d for p·v per key and query head; Q read and O written in BF16.
        "decode_attention" => {
            let (b, hq, hkv, ctx, d) = (f("b"), f("hq"), f("hkv"), f("ctx"), f("d"));
            let tokens = b * hkv * ctx;
            if v == "memcpy" {
                return Some((0.0, 2.0 * 2.0 * tokens * d * 2.0));
            }
            let kv = match v {
                "kv_int8" | "kv_fp8" => 2.0 * (tokens * d + 4.0 * tokens),
                "paged" | "paged_v2" => 2.0 * tokens * d * 2.0 + 4.0 * b * ctx / 16.0,
                _ => 2.0 * tokens * d * 2.0,
            };
            (4.0 * b * hq * ctx * d, kv + 2.0 * 2.0 * b * hq * d)
        }
        // 2·M·N·K FLOPs; X (BF16), Y (FP32) and the weight in its stored format.
        "quant_gemv" => {
            let (m, n, k) = (f("batch"), f("n"), f("k"));
            if v == "memcpy" {
                return Some((0.0, 2.0 * n * k * 2.0));
            }
            let w = match v {
                "int8" | "int8_fast" | "fp8" => n * k + 4.0 * n,
                "int4" | "int4_fast" | "int4_mma" => n * k / 2.0 + 4.0 * n * k / 128.0,
                _ => 2.0 * n * k,
            };
            (2.0 * m * n * k, w + 2.0 * m * k + 4.0 * m * n)
        }
        // Per token, channel and state element 7 FLOPs (Δ·A, exp, ·h, Δ·B·x as 2, C·h as 2),
        // plus 2 per token and channel (the skip term) — a convention, stated for figures.
        // Bytes (FP32): x, Δ, y per token and channel; B, C per token; A, Dskip; the state.
        "ssm_scan" => {
            let (b, d, n, l) = (f("b"), f("d"), f("n"), f("l"));
            let state = b * d * n * 4.0;
            if v == "memcpy" {
                return Some((0.0, 2.0 * if l == 1.0 { state } else { 4.0 * b * l * d }));
            }
            let flops = b * l * d * (7.0 * n + 2.0);
            let io = 4.0 * (3.0 * b * l * d + 2.0 * b * l * n + d * n + d);
            // The decode step reads and writes the state; prefill starts from zero and writes it.
            let st = if l == 1.0 { 2.0 * state } else { state };
            (flops, io + st)
        }
        // As tc_gemm: BF16 A and B read once, FP32 C written once.
        "tp_gemm" => {
            let (m, n, k) = (f("m"), f("n"), f("k"));
            (2.0 * m * n * k, 2.0 * (m * k + k * n) + 4.0 * m * n)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECODE_HKV: &[u64] = &[32, 8, 1];
    const DECODE_CTX: &[u64] = &[512, 4096, 32768];
    /// No shape's K + V cache exceeds this (1 GiB is still twenty times an H100's L2).
    const DECODE_MAX_KV_BYTES: u64 = 1 << 30;

    #[test]
    fn decode_sweep_is_bounded_and_has_long_context() {
        let items = items("decode_attention");
        assert!(items
            .iter()
            .all(|i| decode_kv_bytes(i.p("b"), i.p("hkv"), i.p("ctx")) <= DECODE_MAX_KV_BYTES));
        for hkv in DECODE_HKV {
            assert!(items
                .iter()
                .any(|i| i.p("hkv") == *hkv && i.p("ctx") == 32768 && i.p("b") == 1));
            assert!(items
                .iter()
                .any(|i| i.p("hkv") == *hkv && i.p("ctx") == 4096 && i.p("b") == 8));
        }
        for ctx in DECODE_CTX {
            for b in [1, 8] {
                assert!(items
                    .iter()
                    .any(|i| i.p("hkv") == 8 && i.p("ctx") == *ctx && i.p("b") == b));
            }
        }
        let memcpy = items.iter().find(|i| i.variant == "memcpy").unwrap();
        let naive = items
            .iter()
            .find(|i| i.variant == "naive" && i.params == memcpy.params)
            .unwrap();
        // memcpy moves the bf16 K+V bytes twice (read + write); naive's fewest bytes add Q and O.
        let (_, mb) = work(memcpy).unwrap();
        let (_, nb) = work(naive).unwrap();
        let kv = decode_kv_bytes(memcpy.p("b"), memcpy.p("hkv"), memcpy.p("ctx")) as f64;
        assert_eq!(mb, 2.0 * kv);
        assert_eq!(nb, kv + 4.0 * (memcpy.p("b") * 32 * 128) as f64);
    }

    #[test]
    fn quantized_weights_count_fewer_bytes() {
        let items = items("quant_gemv");
        let at = |v: &str| {
            work(
                items
                    .iter()
                    .find(|i| i.variant == v && i.p("batch") == 1)
                    .unwrap(),
            )
            .unwrap()
        };
        let (bf, i8, i4, f8) = (at("bf16").1, at("int8").1, at("int4").1, at("fp8").1);
        assert!(i4 < i8 && i8 == f8 && i8 < bf);
        // int4 + group scales: a little over a quarter of BF16's weight bytes.
        let ratio = i4 / bf;
        assert!(ratio > 0.25 && ratio < 0.28, "{ratio}");
        assert_eq!(items.iter().filter(|i| i.variant == "memcpy").count(), 1);
    }

    #[test]
    fn tp_shards_keep_the_tile_multiples() {
        for i in items("tp_gemm") {
            assert!(
                i.p("m") % 128 == 0 && i.p("n") % 256 == 0 && i.p("k") % 64 == 0,
                "{}",
                i.describe()
            );
        }
        let up8 = items("tp_gemm")
            .into_iter()
            .find(|i| i.p("proj") == 1 && i.p("tp") == 8)
            .unwrap();
        assert_eq!((up8.p("n"), up8.p("k")), (1792, 4096));
    }

    #[test]
    fn ssm_prefill_lengths_divide_into_chunks() {
        for i in items("ssm_scan") {
            assert!(i.p("l") == 1 || i.p("l") % 128 == 0);
        }
    }
}
