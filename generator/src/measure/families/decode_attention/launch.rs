//! How each decode rung is launched: one warp per query head (naive), the split kernels of the
//! Flash-Decoding rungs with their combine pass, and the tensor-core v2 rungs (`v2.rs`).
//!
//! Why a launcher returns a closure: the harness times `run()` many times, so everything a run
//! needs (kernels, launch shapes, partial-result workspaces) is made once and moved into it.

use super::cache::{choose_splits, Cache, Shape};
use super::{Run, D, FILE, TILE};
use crate::measure::gpu::{Arg, DevBuf, Gpu, Kernel, Launch};
use crate::measure::harness::{Ctx, Res};

/// A buffer argument, or a null pointer for an unused one.
fn opt(b: Option<&DevBuf>) -> Arg<'_> {
    b.map_or(Arg::U64(0), Arg::Buf)
}

/// The leading arguments of every decode kernel: Q, the K cache, the V cache.
fn qkv_args<'a>(q: &'a DevBuf, cache: &'a Cache) -> [Arg<'a>; 3] {
    [Arg::Buf(q), Arg::Buf(&cache.k), Arg::Buf(&cache.v)]
}

/// The split kernel of a Flash-Decoding rung (its group size is appended), if it is one.
pub(super) fn split_kernel(variant: &str) -> Option<&'static str> {
    Some(match variant {
        "gqa" | "split_kv" => "decode_split_bf16",
        "paged" => "decode_split_paged",
        "kv_int8" => "decode_split_int8",
        "kv_fp8" => "decode_split_fp8",
        _ => return None,
    })
}

/// The launcher of `variant` at shape `s` reading `cache`, writing `o`, and the number of
/// splits per sequence it uses (`None` for the one-pass rungs), for the record's metrics.
pub(super) fn launcher<'g: 'a, 'a>(
    ctx: &mut Ctx<'g>,
    variant: &str,
    s: Shape,
    q: &'a DevBuf,
    cache: &'a Cache,
    o: &'a DevBuf,
) -> Res<(Run<'a>, Option<usize>)> {
    let scale_log2 = std::f32::consts::LOG2_E / (D as f32).sqrt();
    if variant.ends_with("_v2") {
        // The v2 runner owns its split count and partials.
        let kv = (&cache.k, &cache.v, cache.table.as_ref());
        let (run, splits) = super::v2::runner(ctx, s, variant, q, kv, o, scale_log2)?;
        return Ok((run, Some(splits)));
    }
    match split_kernel(variant) {
        None => Ok((naive(ctx, s, q, cache, o, scale_log2)?, None)),
        Some(base) => {
            let splits = if variant == "gqa" {
                1
            } else {
                choose_splits(s, ctx.gpu.sm_count() as usize)
            };
            let run = split(ctx, base, splits, s, (q, cache, o), scale_log2)?;
            Ok((run, Some(splits)))
        }
    }
}

/// Rung 1: one warp per query head, key by key.
fn naive<'g: 'a, 'a>(
    ctx: &mut Ctx<'g>,
    s: Shape,
    q: &'a DevBuf,
    cache: &'a Cache,
    o: &'a DevBuf,
    scale_log2: f32,
) -> Res<Run<'a>> {
    let gpu = ctx.gpu;
    let k = ctx.kernel(FILE, "decode_naive")?;
    let cfg = Launch::linear((s.b * s.hq * 32).div_ceil(128) as u64, 128)?;
    Ok(Box::new(move || {
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
    }))
}

/// The Flash-Decoding rungs: `splits` CTAs per (sequence, KV head) each take a slice of the
/// context, then (when split) a combine pass merges their partial softmax states.
fn split<'g: 'a, 'a>(
    ctx: &mut Ctx<'g>,
    base: &str,
    splits: usize,
    s: Shape,
    (q, cache, o): (&'a DevBuf, &'a Cache, &'a DevBuf),
    scale_log2: f32,
) -> Res<Run<'a>> {
    let (gpu, g) = (ctx.gpu, s.group());
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
    let nq = s.b * s.hq * D;
    let (part_acc, part_ml) = (
        gpu.alloc_f32(nq * splits)?,
        gpu.alloc_f32(s.b * s.hq * splits * 2)?,
    );
    let combine_cfg = Launch::linear((s.b * s.hq) as u64, 128)?;
    Ok(Box::new(move || {
        let null = Arg::U64(0);
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
                if splits > 1 { Arg::Buf(&part_acc) } else { null },
                if splits > 1 { Arg::Buf(&part_ml) } else { null },
                Arg::I32(s.hq as i32),
                Arg::I32(s.hkv as i32),
                Arg::I32(s.ctx as i32),
                Arg::I32((s.ctx / splits) as i32),
                Arg::F32(scale_log2),
            ],
        )?;
        if splits > 1 {
            combine_partials(gpu, (&combine, combine_cfg), (&part_acc, &part_ml), o, splits)?;
        }
        Ok(())
    }))
}

/// The combine pass of a split rung: merge each query head's `splits` partial softmax states
/// (accumulators, max and sum) into its output row.
fn combine_partials(
    gpu: &Gpu,
    (combine, combine_cfg): (&Kernel, Launch),
    (part_acc, part_ml): (&DevBuf, &DevBuf),
    o: &DevBuf,
    splits: usize,
) -> anyhow::Result<()> {
    let args = [
        Arg::Buf(part_acc),
        Arg::Buf(part_ml),
        Arg::Buf(o),
        Arg::I32(splits as i32),
    ];
    gpu.launch(combine, combine_cfg, &args)
}
