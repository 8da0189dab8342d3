//! The KV cache of one decode shape: its dimensions, the host K and V drawn once per shape, and
//! the device copies each cache layout needs (contiguous BF16, a paged pool behind a shuffled
//! block table, int8 or FP8 codes with per-token scales).
//!
//! Why apart: the layouts are what the ladder's rungs differ in, and building them (scattering
//! and quantizing gigabyte caches) is most of the family's host time.

use super::D;
use crate::measure::gpu::{DevBuf, Gpu};
use crate::measure::plan::Item;
use crate::measure::quant::{quantize_rows_par, Format};
use crate::measure::reference::{mix, random_bf16};

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
    pub(super) fn from(item: &Item) -> Shape {
        Shape {
            b: item.p("b") as usize,
            hq: item.p("hq") as usize,
            hkv: item.p("hkv") as usize,
            ctx: item.p("ctx") as usize,
        }
    }
    pub(super) fn group(&self) -> usize {
        self.hq / self.hkv
    }
    /// Elements of K (or V).
    pub(super) fn kv_elems(&self) -> usize {
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

/// Device copies of a (possibly quantized) cache: codes, and per-token scales when quantized.
pub(super) struct Cache {
    pub(super) k: DevBuf,
    pub(super) v: DevBuf,
    pub(super) scales: Option<(DevBuf, DevBuf)>,
    pub(super) table: Option<DevBuf>,
    /// Quantized caches: the dequantized K and V values the kernel computes with (otherwise it
    /// computes with the BF16 values themselves).
    pub(super) dequant: Option<(Vec<f32>, Vec<f32>)>,
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
pub(super) struct Query {
    pub(super) q: DevBuf,
    pub(super) qh: Vec<f32>,
}

/// K and V of one shape on the host: BF16 bits and their exact values. Shared by the shape's
/// variants (see `Ctx::shared`), as is the query.
pub(super) struct HostKv {
    pub(super) kb: Vec<u16>,
    pub(super) kh: Vec<f32>,
    pub(super) vb: Vec<u16>,
    pub(super) vh: Vec<f32>,
}

impl HostKv {
    pub(super) fn new(s: Shape, seed: u64) -> HostKv {
        let (kb, kh) = random_bf16(s.kv_elems(), seed ^ 0x4b, -1.0, 1.0);
        let (vb, vh) = random_bf16(s.kv_elems(), seed ^ 0x56, -1.0, 1.0);
        HostKv { kb, kh, vb, vh }
    }
}

/// The cache layouts, each a `Ctx::shared` slot: the variants reading the same layout of a
/// shape share one device copy.
pub(super) fn layout_slot(variant: &str) -> &'static str {
    match variant {
        "paged" | "paged_v2" => "decode_kv_paged",
        "kv_int8" => "decode_kv_int8",
        "kv_fp8" => "decode_kv_fp8",
        _ => "decode_kv_contiguous",
    }
}

/// The cache a variant reads, from the shape's host K and V.
pub(super) fn make_cache(
    gpu: &Gpu,
    variant: &str,
    s: Shape,
    host: &HostKv,
    seed: u64,
) -> anyhow::Result<Cache> {
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
            assert!(ctx % (sp * super::super::TILE) == 0);
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
}
