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
//! The v2 rungs (tensor cores, split_kv_v2 and paged_v2) are launched by decode_attention_v2.

use super::super::gpu::{Arg, DevBuf, Gpu, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::plan::Item;
use super::super::quant::{quantize_rows_par, Format};
use super::super::reference::{bf16_to_f32, mix, par_chunks_mut, random_bf16, rel_error};
use super::super::results::{FailStage, Timing};
use super::memcpy_baseline_bytes;

const FILE: &str = "decode_attention.cu";
const TOL: f64 = 1e-2;
const D: usize = 128;
const TILE: usize = 32;
/// Paged-cache block size (tokens).
pub const PAGE: usize = 16;

#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub b: usize,
    pub hq: usize,
    pub hkv: usize,
    pub ctx: usize,
}

impl Shape {
    fn from(item: &Item) -> Shape {
        Shape {
            b: item.p("b") as usize,
            hq: item.p("hq") as usize,
            hkv: item.p("hkv") as usize,
            ctx: item.p("ctx") as usize,
        }
    }
    fn group(&self) -> usize {
        self.hq / self.hkv
    }
    /// Elements of K (or V).
    fn kv_elems(&self) -> usize {
        self.b * self.hkv * self.ctx * D
    }
}

/// Splits per sequence for the Flash-Decoding rungs: the fewest (a power of two) that give at
/// least four CTAs per SM (each keeps 16 KB of K/V in flight, so four or more hide the memory
/// latency), while each split keeps at least 256 keys.
pub fn choose_splits(s: Shape, sm_count: usize) -> usize {
    let mut splits = 1;
    while s.b * s.hkv * splits < 4 * sm_count && s.ctx / (splits * 2) >= 256 {
        splits *= 2;
    }
    splits
}

/// A seeded shuffle of 0..n (Fisher–Yates with splitmix64): the pool order of a paged cache.
pub fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (mix(seed ^ mix(i as u64)) % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// Scatter a contiguous [b][hkv][ctx][D] cache into a pool [blocks][hkv][16][D] following
/// `perm` (logical block j of sequence s goes to pool block perm[s·ctx/16 + j]).
pub fn to_pool(kv: &[u16], s: Shape, perm: &[u32]) -> Vec<u16> {
    let nb = s.ctx / PAGE;
    let block = s.hkv * PAGE * D;
    // Pool block p holds logical block inv[p]; each thread fills whole pool blocks (a 1 GiB cache
    // copied on one core took seconds of the suite).
    let mut inv = vec![0usize; perm.len()];
    for (logical, &p) in perm.iter().enumerate() {
        inv[p as usize] = logical;
    }
    let mut pool = vec![0u16; kv.len()];
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(64);
    let per = perm.len().div_ceil(threads).max(1) * block;
    std::thread::scope(|sc| {
        for (t, part) in pool.chunks_mut(per).enumerate() {
            let inv = &inv;
            sc.spawn(move || {
                for (i, dst) in part.chunks_mut(block).enumerate() {
                    let logical = inv[t * (per / block) + i];
                    let (seq, j) = (logical / nb, logical % nb);
                    for h in 0..s.hkv {
                        let src = ((seq * s.hkv + h) * s.ctx + j * PAGE) * D;
                        dst[h * PAGE * D..][..PAGE * D].copy_from_slice(&kv[src..src + PAGE * D]);
                    }
                }
            });
        }
    });
    pool
}

/// f64 decode attention of query head `qh` of sequence `seq`: softmax(q·Kᵀ/√d)·V.
pub fn reference_row(q: &[f32], k: &[f32], v: &[f32], s: Shape, seq: usize, qh: usize) -> Vec<f64> {
    let kvh = qh / s.group();
    let qr = &q[(seq * s.hq + qh) * D..][..D];
    let base = (seq * s.hkv + kvh) * s.ctx * D;
    let scale = 1.0 / (D as f64).sqrt();
    let scores: Vec<f64> = (0..s.ctx)
        .map(|t| {
            let kr = &k[base + t * D..][..D];
            qr.iter().zip(kr).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() * scale
        })
        .collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
    let l: f64 = p.iter().sum();
    let mut o = vec![0f64; D];
    for (t, pt) in p.iter().enumerate() {
        for (j, oj) in o.iter_mut().enumerate() {
            *oj += pt * v[base + t * D + j] as f64;
        }
    }
    o.iter().map(|x| x / l).collect()
}

/// The (sequence, query head) rows a check compares: every query head of the first and the last
/// sequence.
fn checked_rows(s: Shape) -> Vec<(usize, usize)> {
    let mut seqs = vec![0, s.b - 1];
    seqs.dedup();
    seqs.iter()
        .flat_map(|&seq| (0..s.hq).map(move |qh| (seq, qh)))
        .collect()
}

/// The f64 reference of the [`checked_rows`], concatenated. Computed once per shape and cache
/// (BF16 or a dequantized one) and shared by the variants reading it: each row is a full pass
/// over the context, and recomputing them for every variant was a tenth of the suite's time.
fn reference_rows(q: &[f32], k: &[f32], v: &[f32], s: Shape) -> Vec<f64> {
    crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
        let rows = checked_rows(s);
        let mut want_rows = vec![Vec::new(); rows.len()];
        par_chunks_mut(&mut want_rows, |start, part| {
            for (j, w) in part.iter_mut().enumerate() {
                let (seq, qh) = rows[start + j];
                *w = reference_row(q, k, v, s, seq, qh);
            }
        });
        want_rows.into_iter().flatten().collect()
    })
}

/// ‖out − ref‖ / ‖ref‖ over the [`checked_rows`] against their reference `want`; +∞ if any output
/// element is not finite.
fn checked_rel(out: &[f32], want: &[f64], s: Shape) -> f64 {
    if out.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let got: Vec<f32> = checked_rows(s)
        .iter()
        .flat_map(|&(seq, qh)| out[(seq * s.hq + qh) * D..][..D].iter().copied())
        .collect();
    rel_error(&got, want)
}

/// Device copies of a (possibly quantized) cache: codes, and per-token scales when quantized.
struct Cache {
    k: DevBuf,
    v: DevBuf,
    scales: Option<(DevBuf, DevBuf)>,
    table: Option<DevBuf>,
    /// Quantized caches: the dequantized K and V values the kernel computes with (otherwise it
    /// computes with the BF16 values themselves).
    dequant: Option<(Vec<f32>, Vec<f32>)>,
}

fn upload_quantized(
    gpu: &Gpu,
    x: &[f32],
    rows: usize,
    fmt: Format,
) -> anyhow::Result<(DevBuf, DevBuf, Vec<f32>)> {
    let q = quantize_rows_par(x, rows, D, fmt);
    let (codes, scales) = (gpu.alloc(q.codes.len())?, gpu.alloc_f32(q.scales.len())?);
    gpu.upload_bytes(&codes, &q.codes)?;
    gpu.upload_f32(&scales, &q.scales)?;
    Ok((codes, scales, q.dequant))
}

/// The query of one shape, on the device (BF16) and its exact values on the host; shared by the
/// shape's variants.
struct Query {
    q: DevBuf,
    qh: Vec<f32>,
}

/// K and V of one shape on the host: BF16 bits and their exact values. Shared by the shape's
/// variants (see `Ctx::shared`), as is the query.
struct HostKv {
    kb: Vec<u16>,
    kh: Vec<f32>,
    vb: Vec<u16>,
    vh: Vec<f32>,
}

impl HostKv {
    fn new(s: Shape, seed: u64) -> HostKv {
        let (kb, kh) = random_bf16(s.kv_elems(), seed ^ 0x4b, -1.0, 1.0);
        let (vb, vh) = random_bf16(s.kv_elems(), seed ^ 0x56, -1.0, 1.0);
        HostKv { kb, kh, vb, vh }
    }
}

/// The cache layouts, each a `Ctx::shared` slot: the variants reading the same layout of a
/// shape share one device copy.
fn layout_slot(variant: &str) -> &'static str {
    match variant {
        "paged" | "paged_v2" => "decode_kv_paged",
        "kv_int8" => "decode_kv_int8",
        "kv_fp8" => "decode_kv_fp8",
        _ => "decode_kv_contiguous",
    }
}

/// The cache a variant reads, from the shape's host K and V.
fn make_cache(gpu: &Gpu, variant: &str, s: Shape, host: &HostKv, seed: u64) -> anyhow::Result<Cache> {
    let (kb, kh, vb, vh) = (&host.kb, &host.kh, &host.vb, &host.vh);
    let rows = s.b * s.hkv * s.ctx;
    let fmt = match variant {
        "kv_int8" => Some(Format::Int8),
        "kv_fp8" => Some(Format::Fp8),
        _ => None,
    };
    if let Some(fmt) = fmt {
        let (k, ks, kd) = upload_quantized(gpu, kh, rows, fmt)?;
        let (v, vs, vd) = upload_quantized(gpu, vh, rows, fmt)?;
        return Ok(Cache {
            k,
            v,
            scales: Some((ks, vs)),
            table: None,
            dequant: Some((kd, vd)),
        });
    }
    let (k, v) = (gpu.alloc(kb.len() * 2)?, gpu.alloc(vb.len() * 2)?);
    let mut table = None;
    if variant.starts_with("paged") {
        let perm = shuffled(s.b * s.ctx / PAGE, seed ^ 0x9a);
        gpu.upload_u16(&k, &to_pool(kb, s, &perm))?;
        gpu.upload_u16(&v, &to_pool(vb, s, &perm))?;
        let bytes: Vec<u8> = perm.iter().flat_map(|p| (*p as i32).to_le_bytes()).collect();
        let t = gpu.alloc(bytes.len())?;
        gpu.upload_bytes(&t, &bytes)?;
        table = Some(t);
    } else {
        gpu.upload_u16(&k, kb)?;
        gpu.upload_u16(&v, vb)?;
    }
    Ok(Cache {
        k,
        v,
        scales: None,
        table,
        dequant: None,
    })
}

/// A buffer argument, or a null pointer for an unused one.
fn opt(b: Option<&DevBuf>) -> Arg<'_> {
    b.map_or(Arg::U64(0), Arg::Buf)
}

/// The leading arguments of every decode kernel: Q, the K cache, the V cache.
fn qkv_args<'a>(q: &'a DevBuf, cache: &'a Cache) -> [Arg<'a>; 3] {
    [Arg::Buf(q), Arg::Buf(&cache.k), Arg::Buf(&cache.v)]
}

fn split_kernel(variant: &str) -> Option<&'static str> {
    Some(match variant {
        "gqa" | "split_kv" => "decode_split_bf16",
        "paged" => "decode_split_paged",
        "kv_int8" => "decode_split_int8",
        "kv_fp8" => "decode_split_fp8",
        _ => return None,
    })
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let s = Shape::from(item);
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
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    if item.baseline {
        return memcpy_baseline_bytes(gpu, item, s.kv_elems() * 4, seed); // K + V in BF16
    }
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
    let variant = item.variant;
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
    let (q, o) = (&query.q, gpu.alloc(nq * 2)?);
    let scale_log2 = std::f32::consts::LOG2_E / (D as f32).sqrt();
    let v2 = item.variant.ends_with("_v2");
    let splits = match item.variant {
        "naive" | "gqa" => 1,
        _ if v2 => 1, // the v2 runner owns its split count and partials
        _ => choose_splits(s, gpu.sm_count() as usize),
    };
    let (part_acc, part_ml) = (
        gpu.alloc_f32(nq * splits)?,
        gpu.alloc_f32(s.b * s.hq * splits * 2)?,
    );
    let null = Arg::U64(0);
    let mut v2_splits = None;
    let run: Box<dyn Fn() -> anyhow::Result<()>> = match split_kernel(item.variant) {
        None if v2 => {
            let kv = (&cache.k, &cache.v, cache.table.as_ref());
            let (run, sp) = super::decode_attention_v2::runner(ctx, s, item.variant, q, kv, &o, scale_log2)?;
            v2_splits = Some(sp);
            run
        }
        None => {
            let k = ctx.kernel(FILE, "decode_naive")?;
            let cfg = Launch::linear((s.b * s.hq * 32).div_ceil(128) as u64, 128)?;
            let (cache, q, o) = (&cache, &q, &o);
            Box::new(move || {
                let [q, k_cache, v_cache] = qkv_args(q, cache);
                gpu.launch(
                    &k,
                    cfg,
                    &[
                        q,
                        k_cache,
                        v_cache,
                        Arg::Buf(o),
                        Arg::I32(s.b as i32),
                        Arg::I32(s.hq as i32),
                        Arg::I32(s.hkv as i32),
                        Arg::I32(s.ctx as i32),
                        Arg::F32(scale_log2),
                    ],
                )
            })
        }
        Some(base) => {
            let k = ctx.kernel(FILE, &format!("{base}_g{g}"))?;
            let combine = ctx.kernel(FILE, "decode_combine")?;
            let smem = ((TILE * (D + 1) + TILE * D + g * D + g * TILE) * 4) as u32;
            gpu.set_max_dynamic_smem(&k, smem)?;
            let cfg = Launch {
                grid: (splits as u32, s.hkv as u32, s.b as u32),
                block: (128, 1, 1),
                smem,
                cluster: None,
            };
            let (cache, q, o, part_acc, part_ml) = (&cache, &q, &o, &part_acc, &part_ml);
            Box::new(move || {
                let sc = cache.scales.as_ref();
                let [q, k_cache, v_cache] = qkv_args(q, cache);
                gpu.launch(
                    &k,
                    cfg,
                    &[
                        q,
                        k_cache,
                        v_cache,
                        opt(sc.map(|x| &x.0)),
                        opt(sc.map(|x| &x.1)),
                        opt(cache.table.as_ref()),
                        Arg::Buf(o),
                        if splits > 1 { Arg::Buf(part_acc) } else { null },
                        if splits > 1 { Arg::Buf(part_ml) } else { null },
                        Arg::I32(s.hq as i32),
                        Arg::I32(s.hkv as i32),
                        Arg::I32(s.ctx as i32),
                        Arg::I32((s.ctx / splits) as i32),
                        Arg::F32(scale_log2),
                    ],
                )?;
                if splits > 1 {
                    gpu.launch(
                        &combine,
                        Launch::linear((s.b * s.hq) as u64, 128)?,
                        &[
                            Arg::Buf(part_acc),
                            Arg::Buf(part_ml),
                            Arg::Buf(o),
                            Arg::I32(splits as i32),
                        ],
                    )?;
                }
                Ok(())
            })
        }
    };
    let quantized = want_quant.is_some();
    let mut vs_bf16 = 0.0;
    let mut t = check_and_time(gpu, item, TOL, &[&o], &mut || run(), &mut || {
        let out = bf16_to_f32(&gpu.download_u16(&o, nq)?);
        let bf16 = checked_rel(&out, &want_bf16, s);
        Ok(match &want_quant {
            Some(w) => {
                vs_bf16 = bf16;
                checked_rel(&out, w, s)
            }
            None => bf16,
        })
    })?;
    if quantized {
        t.metrics.insert("kv_err_vs_bf16".into(), vs_bf16);
    }
    if let Some(sp) = v2_splits {
        t.metrics.insert("splits".into(), sp as f64);
    } else if split_kernel(item.variant).is_some() {
        t.metrics.insert("splits".into(), splits as f64);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(b: usize, hkv: usize, ctx: usize) -> Shape {
        Shape { b, hq: 32, hkv, ctx }
    }

    #[test]
    fn splits_fill_the_gpu_but_keep_256_keys() {
        assert_eq!(choose_splits(shape(64, 32, 512), 132), 1);
        let s = choose_splits(shape(1, 8, 32768), 132);
        assert!(8 * s >= 528 && 32768 / s >= 256, "{s}");
        assert_eq!(choose_splits(shape(1, 1, 512), 132), 2);
        for &(b, hkv, ctx) in &[(1, 1, 512), (8, 8, 4096), (1, 32, 32768)] {
            let sp = choose_splits(shape(b, hkv, ctx), 132);
            assert!(ctx % (sp * TILE) == 0);
        }
    }

    #[test]
    fn pool_scatter_follows_the_table() {
        let s = shape(2, 2, 64);
        let kv: Vec<u16> = (0..s.kv_elems()).map(|i| (i % 65521) as u16).collect();
        let perm = shuffled(s.b * s.ctx / PAGE, 7);
        let mut sorted = perm.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<u32>>());
        let pool = to_pool(&kv, s, &perm);
        // token t of (seq, h) lives at pool[((perm[seq·nb + t/16]·hkv + h)·16 + t%16)·D]
        for (seq, h, t) in [(0, 0, 0), (1, 1, 63), (1, 0, 17), (0, 1, 40)] {
            let p = perm[seq * 4 + t / PAGE] as usize;
            let src = ((seq * s.hkv + h) * s.ctx + t) * D;
            let dst = ((p * s.hkv + h) * PAGE + t % PAGE) * D;
            assert_eq!(&pool[dst..dst + D], &kv[src..src + D]);
        }
    }

    #[test]
    fn reference_is_a_weighted_mean_of_values() {
        // One key dominates: the output is (nearly) its value row; equal scores give the mean.
        let s = Shape {
            b: 1,
            hq: 1,
            hkv: 1,
            ctx: 2,
        };
        let q = vec![1.0f32; D];
        let mut k = vec![0.0f32; 2 * D];
        let v: Vec<f32> = (0..2 * D).map(|i| if i < D { 1.0 } else { 3.0 }).collect();
        let o = reference_row(&q, &k, &v, s, 0, 0);
        assert!(o.iter().all(|&x| (x - 2.0).abs() < 1e-12));
        k[D..].iter_mut().for_each(|x| *x = 1.0); // score √128 ≈ 11.3 for key 1
        let o = reference_row(&q, &k, &v, s, 0, 0);
        assert!(o.iter().all(|&x| (x - 3.0).abs() < 1e-4));
    }
}
