//! decode_attention: one decode step of attention over a KV cache (BF16 Q/K/V, FP32 inside,
//! d_head 128, 32 query heads over `hkv` KV heads), against a device memcpy of the KV cache's
//! bytes in the same run.
//!
//! Verification, for every variant: the outputs of the first and the last sequence (all query
//! heads) against an f64 CPU reference computed from the exact values the kernel reads — the
//! BF16 values, or the dequantized codes for kv_int8 / kv_fp8 — and every output element must be
//! finite (the output is poisoned with NaN first). BF16 output rounding puts the honest error
//! near 2e-3, hence the 1e-2 tolerance. The quantized rungs also record, in `metrics`,
//! `kv_err_vs_bf16`: their error against the f64 result on the unquantized BF16 cache, i.e. what
//! the quantization itself costs. Split rungs record their split count in `metrics.splits`.
//! The v2 rungs (tensor cores, split_kv_v2 and paged_v2) are launched by `v2.rs`.

//!
//! Files: `cache.rs` (shape, host K/V, the device layouts), `check.rs` (the f64 reference rows),
//! `launch.rs` (each rung's launch), `v2.rs` (the tensor-core rungs).

use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::{ladder, params, Item, MEMCPY, V};
use super::super::reference::{bf16_to_f32, random_bf16};
use super::super::results::{FailStage, Timing};
use super::{memcpy_baseline_bytes, Family};
use cache::{layout_slot, make_cache, Cache, HostKv, Query, Shape};
use check::{checked_rel, reference_rows};
use std::rc::Rc;

mod cache;
mod check;
mod launch;
mod v2;

pub use cache::{choose_splits, shuffled, to_pool, PAGE};

/// One timed run of a rung: everything it launches, made once and timed many times.
type Run<'a> = Box<dyn Fn() -> anyhow::Result<()> + 'a>;

pub(crate) const FAMILY: Family = Family {
    name: "decode_attention",
    sources: SOURCES,
    items,
    work,
    cublas: &[],
    measure,
};
const SOURCES: &[KernelFile] = &[
    kernel_file!("inference/decode_attention.cu"),
    kernel_file!("inference/decode_attention_v2.cu"),
];
const FILE: &str = SOURCES[0].path;
const TOL: f64 = 1e-2;
const D: usize = 128;
const TILE: usize = 32;

/// 32 query heads of d = 128, over 32 (MHA), 8 (GQA) or 1 (MQA) KV heads.
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

/// The eight rungs, in ladder order.
const RUNGS: &[V] = &[
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
];

/// The eight-rung ladder at every shape; the v2 rungs skip MQA, and the cache-layout rungs run
/// only where the cards compare them.
pub fn items() -> Vec<Item> {
    let mut out = Vec::new();
    for &(b, hkv, ctx) in DECODE_SHAPES {
        out.extend(ladder(
            "decode_attention",
            FILE,
            RUNGS,
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
        i.source_file = Some(SOURCES[1].path);
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

/// 2·d FLOPs for q·k and 2·d for p·v per key and query head; the cache in the format the variant
/// stores it in (codes and per-token scales when quantized, plus the block table when paged),
/// Q read and O written in BF16. The memcpy baseline copies the BF16 K and V.
pub fn work(item: &Item) -> (f64, f64) {
    let f = |k: &str| item.p(k) as f64;
    let (b, hq, hkv, ctx, d) = (f("b"), f("hq"), f("hkv"), f("ctx"), f("d"));
    let tokens = b * hkv * ctx;
    if item.variant == MEMCPY.0 {
        return (0.0, 2.0 * 2.0 * tokens * d * 2.0);
    }
    let kv = match item.variant {
        "kv_int8" | "kv_fp8" => 2.0 * (tokens * d + 4.0 * tokens),
        "paged" | "paged_v2" => 2.0 * tokens * d * 2.0 + 4.0 * b * ctx / 16.0,
        _ => 2.0 * tokens * d * 2.0,
    };
    (4.0 * b * hq * ctx * d, kv + 2.0 * 2.0 * b * hq * d)
}

/// The shape's inputs, shared by its variants: the query, the cache this variant reads, and the
/// f64 reference rows on the BF16 cache and (for a quantized cache) on its dequantized values.
struct Inputs {
    query: Rc<Query>,
    cache: Rc<Cache>,
    want_bf16: Rc<Vec<f64>>,
    want_quant: Option<Rc<Vec<f64>>>,
}

/// Make (or take from the shape's shared slots) what `variant` reads at shape `s`.
fn inputs(ctx: &mut Ctx, variant: &str, s: Shape) -> Res<Inputs> {
    let nq = s.b * s.hq * D;
    let key = format!("b{} hq{} hkv{} ctx{}", s.b, s.hq, s.hkv, s.ctx);
    let host = ctx.shared("decode_kv_host", &key, |_, seed| Ok(HostKv::new(s, seed)))?;
    // The query is the shape's too, so the f64 reference rows are computed once per cache form
    // (below) instead of once per variant.
    let query = ctx.shared("decode_q", &key, |gpu, seed| {
        let (qb, qh) = random_bf16(nq, seed ^ 0x51, -6.0, 6.0);
        let q = gpu.alloc(nq * 2)?;
        gpu.upload_u16(&q, &qb)?;
        Ok(Query { q, qh })
    })?;
    let want_bf16 = ctx.shared("decode_ref_bf16", &key, |_, _| {
        Ok(reference_rows(&query.qh, &host.kh, &host.vh, s))
    })?;
    let cache = ctx.shared(layout_slot(variant), &key, |gpu, seed| {
        Ok(make_cache(gpu, variant, s, &host, seed)?)
    })?;
    // A quantized cache's own reference: on the dequantized values the kernel computes with.
    let want_quant = match &cache.dequant {
        Some((kd, vd)) => Some(ctx.shared(
            "decode_ref_quant",
            &format!("{key} {}", layout_slot(variant)),
            |_, _| Ok(reference_rows(&query.qh, kd, vd, s)),
        )?),
        None => None,
    };
    Ok(Inputs {
        query,
        cache,
        want_bf16,
        want_quant,
    })
}

/// The shapes the kernels take: d = 128, a group size of 1, 4 or 32, ctx divisible by 512.
fn supported(s: Shape, item: &Item) -> Res<()> {
    let g = s.group();
    if s.hkv == 0
        || !s.hq.is_multiple_of(s.hkv)
        || ![1, 4, 32].contains(&g)
        || !s.ctx.is_multiple_of(512)
        || item.p("d") as usize != D
    {
        return Err(Fail::new(
            FailStage::Unsupported,
            "decode kernels need d = 128, a group size of 1, 4 or 32 and ctx divisible by 512",
        ));
    }
    Ok(())
}

/// Check one rung against the f64 rows (of the cache it reads) and time it.
fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let s = Shape::from(item);
    supported(s, item)?;
    let seed = ctx.seed(item);
    if item.baseline {
        return memcpy_baseline_bytes(ctx.gpu, s.kv_elems() * 4, seed); // K + V in BF16
    }
    let inp = inputs(ctx, item.variant, s)?;
    let gpu = ctx.gpu;
    let nq = s.b * s.hq * D;
    let o = gpu.alloc(nq * 2)?;
    let (run, splits) = launch::launcher(ctx, item.variant, s, &inp.query.q, &inp.cache, &o)?;
    let mut vs_bf16 = 0.0;
    let mut t = check_and_time(gpu, TOL, &[&o], &mut || run(), &mut || {
        let out = bf16_to_f32(&gpu.download_u16(&o, nq)?);
        let bf16 = checked_rel(&out, &inp.want_bf16, s);
        Ok(match &inp.want_quant {
            Some(w) => {
                vs_bf16 = bf16;
                checked_rel(&out, w, s)
            }
            None => bf16,
        })
    })?;
    if inp.want_quant.is_some() {
        t.metrics.insert("kv_err_vs_bf16".into(), vs_bf16);
    }
    if let Some(sp) = splits {
        t.metrics.insert("splits".into(), sp as f64);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECODE_HKV: &[u64] = &[32, 8, 1];
    const DECODE_CTX: &[u64] = &[512, 4096, 32768];
    /// No shape's K + V cache exceeds this (1 GiB is still twenty times an H100's L2).
    const DECODE_MAX_KV_BYTES: u64 = 1 << 30;

    fn decode_kv_bytes(b: u64, hkv: u64, ctx: u64) -> u64 {
        2 * b * hkv * ctx * 128 * 2
    }

    #[test]
    fn decode_sweep_is_bounded_and_has_long_context() {
        let items = items();
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
        let (_, mb) = work(memcpy);
        let (_, nb) = work(naive);
        let kv = decode_kv_bytes(memcpy.p("b"), memcpy.p("hkv"), memcpy.p("ctx")) as f64;
        assert_eq!(mb, 2.0 * kv);
        assert_eq!(nb, kv + 4.0 * (memcpy.p("b") * 32 * 128) as f64);
    }
}
