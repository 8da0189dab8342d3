//! decode_attention's v2 rungs (`split_kv_v2`, `paged_v2`; kernels/inference/decode_attention_v2.cu): how
//! many splits they use and how they are launched. Inputs, the cache (contiguous or paged) and
//! the check against the f64 reference are decode_attention's own, so the v2 rungs are verified
//! exactly like the others.

use super::cache::Shape;
use super::Run;
use crate::measure::gpu::{Arg, DevBuf, Gpu, Launch};
use crate::measure::harness::{Ctx, Fail, Res};
use crate::measure::results::FailStage;

const FILE: &str = super::SOURCES[1].path;
/// Warps per CTA (`V2_WARPS`), ring stages per warp (`V2_STAGES`), keys per warp step (`KT`)
/// and the most splits per sequence (`V2_MAX_SPLITS`).
const WARPS: usize = 8;
const STAGES: usize = 2;
const STEP: usize = 16;
const MAX_SPLITS: usize = 64;
/// Dynamic shared memory of a CTA: every warp's ring of `STAGES` steps of K and V (BF16, d = 128).
const RING_BYTES: usize = WARPS * STAGES * STEP * 128 * 2 * 2;

/// Splits per sequence: the fewest (a power of two) that put a CTA on (nearly) every SM. One
/// CTA of 8 warps per SM keeps enough K/V in flight, and a second wave of CTAs costs more than
/// leaving 1/16 of the SMs idle (4 of an H100's 132 with b · hkv = 8 and 16 splits). Each warp
/// keeps at least one 16-key step per split (a warp without keys would have no softmax state).
pub fn choose_splits_v2(s: Shape, sm_count: usize) -> usize {
    let mut splits = 1;
    while s.b * s.hkv * splits * 16 < sm_count * 15
        && s.ctx / (splits * 2) >= STEP * WARPS
        && splits * 2 <= MAX_SPLITS
    {
        splits *= 2;
    }
    splits
}

/// The split count of shape `s` on this GPU, if the v2 kernels can run it: at most 8 query heads
/// per KV head, sm_90 or later, and a full step per warp in every split.
fn supported_splits(gpu: &Gpu, s: Shape) -> Res<usize> {
    let g = s.hq / s.hkv;
    if g > 8 {
        return Err(Fail::new(
            FailStage::Unsupported,
            "the v2 kernels take at most 8 query heads per KV head",
        ));
    }
    // cp.async.bulk and mbarriers (the K/V ring) exist from sm_90 on; earlier GPUs would fail
    // to compile the file, which is a limit of the machine, not a broken kernel.
    let sm: u32 = gpu.arch().trim_start_matches("sm_").parse().unwrap_or(0);
    if sm < 90 {
        return Err(Fail::new(
            FailStage::Unsupported,
            "the v2 kernels copy K/V with cp.async.bulk and mbarriers, which need sm_90 or later",
        ));
    }
    let splits = choose_splits_v2(s, gpu.sm_count() as usize);
    if !s.ctx.is_multiple_of(STEP) || splits * STEP * WARPS > s.ctx {
        return Err(Fail::new(
            FailStage::Unsupported,
            "the v2 kernels need ctx a multiple of 16 and 16 · 8 keys per split",
        ));
    }
    Ok(splits)
}

/// A launcher of `variant` (split_kv_v2 or paged_v2) for shape `s`: the workspaces (partials and
/// the per-(sequence, KV head) tickets of the last-CTA merge) live in the closure. Returns it
/// with the split count.
pub(super) fn runner<'g: 'a, 'a>(
    ctx: &mut Ctx<'g>,
    s: Shape,
    variant: &str,
    q: &'a DevBuf,
    (k, v, table): (&'a DevBuf, &'a DevBuf, Option<&'a DevBuf>),
    o: &'a DevBuf,
    scale_log2: f32,
) -> Res<(Run<'a>, usize)> {
    let g = s.hq / s.hkv;
    let gpu = ctx.gpu;
    let splits = supported_splits(gpu, s)?;
    let cache = if variant == "paged_v2" { "paged" } else { "bf16" };
    let kern = ctx.kernel(FILE, &format!("decode_v2_{cache}_g{g}"))?;
    gpu.set_max_dynamic_smem(&kern, RING_BYTES as u32)?;
    let rows = s.b * s.hq;
    let part_acc = gpu.alloc_f32(rows * splits * 128)?;
    let part_ml = gpu.alloc_f32(rows * splits * 2)?;
    let tickets = gpu.alloc(s.b * s.hkv * 4)?;
    gpu.upload_bytes(&tickets, &vec![0u8; s.b * s.hkv * 4])?; // the kernel leaves them zero
    let cfg = Launch {
        grid: (splits as u32, s.hkv as u32, s.b as u32),
        block: ((WARPS * 32) as u32, 1, 1),
        smem: RING_BYTES as u32,
        cluster: None,
    };
    let run = move || {
        gpu.launch(
            &kern,
            cfg,
            &[
                Arg::Buf(q),
                Arg::Buf(k),
                Arg::Buf(v),
                table.map_or(Arg::U64(0), Arg::Buf),
                Arg::Buf(o),
                Arg::Buf(&part_acc),
                Arg::Buf(&part_ml),
                Arg::Buf(&tickets),
                Arg::I32(s.hq as i32),
                Arg::I32(s.hkv as i32),
                Arg::I32(s.ctx as i32),
                Arg::F32(scale_log2),
            ],
        )
    };
    Ok((Box::new(run), splits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(b: usize, hkv: usize, ctx: usize) -> Shape {
        Shape { b, hq: 32, hkv, ctx }
    }

    #[test]
    fn constants_match_the_kernel() {
        let src = crate::measure::families::source(FILE).unwrap().text;
        assert!(src.contains(&format!("#define V2_WARPS {WARPS}\n")));
        assert!(src.contains(&format!("#define V2_STAGES {STAGES}\n")));
        assert!(src.contains(&format!("#define KT {STEP} ")));
        assert!(src.contains(&format!("#define V2_MAX_SPLITS {MAX_SPLITS}\n")));
    }

    #[test]
    fn splits_put_a_cta_on_nearly_every_sm() {
        assert_eq!(choose_splits_v2(shape(1, 8, 32768), 132), 16);
        assert_eq!(choose_splits_v2(shape(1, 32, 32768), 132), 4);
        assert_eq!(choose_splits_v2(shape(8, 8, 32768), 132), 2);
        assert_eq!(choose_splits_v2(shape(64, 32, 512), 132), 1);
        // Short contexts keep a full step per warp: 512 keys over 4 splits is 128 per CTA.
        assert_eq!(choose_splits_v2(shape(1, 8, 512), 132), 4);
        for (b, hkv, ctx) in [(1, 8, 512), (1, 32, 4096), (8, 8, 4096), (1, 8, 32768)] {
            let sp = choose_splits_v2(shape(b, hkv, ctx), 132);
            assert!(sp <= MAX_SPLITS && ctx % sp == 0);
            assert!((ctx / sp).is_multiple_of(STEP * WARPS));
        }
    }
}
