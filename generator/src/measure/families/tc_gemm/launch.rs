//! How each tc_gemm rung is launched: its arguments (tensor maps for the WGMMA rungs), its grid
//! and dynamic shared memory, and rung 6's stream-K schedule and workspace.

use super::{check, Problem, TOL};
use crate::measure::gpu::{Arg, DevBuf, Dtype, Gpu, Kernel, Launch, TensorMap};
use crate::measure::harness::{check_and_time, Fail, Res};
use crate::measure::results::{FailStage, Timing};

/// Dynamic shared memory of tc_mma_pipeline: 3 stages × (128 + 128) rows × (64 + 8) BF16.
const PIPELINE_SMEM: u32 = 3 * 256 * 72 * 2;
/// Dynamic shared memory of tc_wgmma: 4 stages × (16 + 32) KiB, 1 KiB of alignment slack and
/// 2 × 4 mbarriers (WG_SMEM in tc_gemm.cu).
const WGMMA_SMEM: u32 = 4 * (128 * 64 * 2 + 256 * 64 * 2) + 1024 + 2 * 4 * 8;
/// Dynamic shared memory of tc_wgmma_persistent: tc_wgmma's ring plus two 128 × 32 FP32
/// epilogue boxes (PG_SMEM in persistent_gemm.cuh).
const PERSISTENT_SMEM: u32 = 4 * (128 * 64 * 2 + 256 * 64 * 2) + 2 * 128 * 32 * 4 + 1024 + 2 * 4 * 8;

/// Dynamic shared memory of tc_wgmma_streamk: the same as rung 5 (both lay out persistent_gemm.cuh's ring).
const STREAMK_SMEM: u32 = PERSISTENT_SMEM;
/// FP32 values of one partial 128 × 256 tile in rung 6's workspace (SK_SLOT).
const STREAMK_SLOT: usize = 128 * 256;
/// Rung 6 splits tiles only when the SMs left idle by the last round of whole tiles would wait,
/// on average, at least this many k-blocks of 64. Below it the fix-up (per SM: one 128 KiB
/// partial tile written to L2 and read back by another SM, and a flag) costs more than the
/// round it removes; the threshold sits between the shapes where the standalone sweep of issue
/// 17 saw the split lose and win on an H100.
const STREAMK_MIN_IDLE_K_BLOCKS: u64 = 24;

/// How many tiles rung 6 shares out along K (`sk_tiles` of tc_gemm_streamk.cu), for `tiles`
/// output tiles of `k_blocks` k-blocks on `sms` SMs: none when whole tiles fill every round or
/// the last round leaves too little idle time to win back; else the last, partial round plus
/// one full round when there is one (so each SM's share is at least a tile's worth and a tile
/// is cut in at most two pieces).
fn stream_k_tiles(tiles: u64, k_blocks: u64, sms: u64) -> u64 {
    if sms == 0 {
        return 0;
    }
    let (rounds, rest) = (tiles / sms, tiles % sms);
    if rest == 0 || (sms - rest) * k_blocks / sms < STREAMK_MIN_IDLE_K_BLOCKS {
        return 0;
    }
    rest + if rounds >= 1 { sms } else { 0 }
}

/// Time one rung against cuBLAS's output (or sampled f64 entries), recording rung 6's split.
pub(super) fn time_kernel(p: &Problem, variant: &str, kern: &Kernel) -> Res<Timing> {
    let gpu = p.gpu;
    let c_ref = check::cublas_reference(p)?;
    let sms = gpu.sm_count().max(1) as u64;
    // Rung 6's schedule and workspace: one partial-tile slot and one flag per block, zeroed
    // once here. The kernel leaves every flag zero again (the block that consumes a partial
    // clears its flag), so no reset runs between the timed launches.
    let sk_tiles = stream_k_tiles(p.tiles(128, 256), (p.k / 64) as u64, sms);
    let (ws, ws_bytes) = workspace(gpu, variant, sk_tiles, sms)?;
    let maps = tensor_maps(p, variant)?;
    let args = kernel_args(p, variant, &maps, sk_tiles, &ws);
    let cfg = launch_config(p, kern, variant, sms, sk_tiles)?;
    let mut t = check_and_time(
        gpu,
        TOL,
        &[p.c],
        &mut || gpu.launch(kern, cfg, &args),
        &mut || check::kernel_rel(p, c_ref.as_deref()),
    )?;
    if variant == "tc_wgmma_streamk" {
        t.workspace_bytes = Some(ws_bytes as f64);
        t.metrics.insert("stream_k_tiles".to_string(), sk_tiles as f64);
    }
    Ok(t)
}

/// Rung 6's workspace when it splits tiles (zeroed once), and its size in bytes; empty otherwise.
fn workspace(gpu: &Gpu, variant: &str, sk_tiles: u64, sms: u64) -> Res<(DevBuf, usize)> {
    let ws_bytes = if variant == "tc_wgmma_streamk" && sk_tiles > 0 {
        sms as usize * (STREAMK_SLOT * 4 + 4)
    } else {
        0
    };
    let ws = gpu.alloc(ws_bytes)?;
    if ws_bytes > 0 {
        gpu.fill_zero(&ws)?;
    }
    Ok((ws, ws_bytes))
}

/// The TMA descriptors of the WGMMA rungs: A and Bᵀ, and for rungs 5 and 6 also C (an FP32 map
/// with boxes of 128 rows × 32 columns: C leaves through the TMA engine). None for the others.
fn tensor_maps(p: &Problem, variant: &str) -> Res<Vec<TensorMap>> {
    let (gpu, m, n, k, a, bt, c) = (p.gpu, p.m, p.n, p.k, p.a, p.bt, p.c);
    Ok(match variant {
        "tc_wgmma" => vec![
            gpu.tensor_map(a, Dtype::Bf16, m, k, 128, 64)?,
            gpu.tensor_map(bt, Dtype::Bf16, n, k, 256, 64)?,
        ],
        "tc_wgmma_persistent" | "tc_wgmma_streamk" => vec![
            gpu.tensor_map(a, Dtype::Bf16, m, k, 128, 64)?,
            gpu.tensor_map(bt, Dtype::Bf16, n, k, 256, 64)?,
            gpu.tensor_map(c, Dtype::F32, m, n, 128, 32)?,
        ],
        _ => Vec::new(),
    })
}

/// A rung's kernel arguments: m, n, k, then the operands (as `maps` for the WGMMA rungs, with
/// rung 6's split-tile count and workspace before them).
fn kernel_args<'a>(
    p: &Problem<'a>,
    variant: &str,
    maps: &'a [TensorMap],
    sk_tiles: u64,
    ws: &'a DevBuf,
) -> Vec<Arg<'a>> {
    let (m, n, k, a, bt, c) = (p.m, p.n, p.k, p.a, p.bt, p.c);
    match variant {
        "tc_wgmma" => vec![
            Arg::I32(m as i32),
            Arg::I32(n as i32),
            Arg::I32(k as i32),
            Arg::TensorMap(&maps[0]),
            Arg::TensorMap(&maps[1]),
            Arg::Buf(c),
        ],
        "tc_wgmma_persistent" | "tc_wgmma_streamk" => {
            let mut v = vec![Arg::I32(m as i32), Arg::I32(n as i32), Arg::I32(k as i32)];
            if variant == "tc_wgmma_streamk" {
                v.extend([Arg::I32(sk_tiles as i32), Arg::Buf(ws)]);
            }
            v.extend([
                Arg::TensorMap(&maps[0]),
                Arg::TensorMap(&maps[1]),
                Arg::TensorMap(&maps[2]),
            ]);
            v
        }
        _ => vec![
            Arg::I32(m as i32),
            Arg::I32(n as i32),
            Arg::I32(k as i32),
            Arg::Buf(a),
            Arg::Buf(bt),
            Arg::Buf(c),
        ],
    }
}

/// A rung's grid, block and dynamic shared memory (raising the kernel's shared-memory limit).
fn launch_config(p: &Problem, kern: &Kernel, variant: &str, sms: u64, sk_tiles: u64) -> Res<Launch> {
    let (gpu, m, n) = (p.gpu, p.m, p.n);
    let tiles = |bm: usize, bn: usize| p.tiles(bm, bn);
    Ok(match variant {
        "tc_wmma" => Launch::grid2((n / 64) as u32, (m / 64) as u32, 128, 1),
        "tc_smem_cpasync" => Launch::linear(tiles(128, 128), 256)?,
        "tc_mma_pipeline" => {
            gpu.set_max_dynamic_smem(kern, PIPELINE_SMEM)?;
            Launch {
                smem: PIPELINE_SMEM,
                cluster: None,
                ..Launch::linear(tiles(128, 128), 128)?
            }
        }
        "tc_wgmma" => {
            gpu.set_max_dynamic_smem(kern, WGMMA_SMEM)?;
            Launch {
                smem: WGMMA_SMEM,
                cluster: None,
                ..Launch::linear(tiles(128, 256), 384)?
            }
        }
        // Persistent: one block per SM (fewer when there are fewer tiles), each walking tiles.
        "tc_wgmma_persistent" => {
            gpu.set_max_dynamic_smem(kern, PERSISTENT_SMEM)?;
            let blocks = tiles(128, 256).min(gpu.sm_count().max(1) as u64);
            Launch {
                smem: PERSISTENT_SMEM,
                cluster: None,
                ..Launch::linear(blocks, 384)?
            }
        }
        // One block per SM when tiles are split (every block must be resident: a block finishing
        // a split tile waits for the others' partials), else as rung 5.
        "tc_wgmma_streamk" => {
            gpu.set_max_dynamic_smem(kern, STREAMK_SMEM)?;
            let blocks = if sk_tiles > 0 {
                sms
            } else {
                tiles(128, 256).min(sms)
            };
            Launch {
                smem: STREAMK_SMEM,
                cluster: None,
                ..Launch::linear(blocks, 384)?
            }
        }
        other => {
            return Err(Fail::new(
                FailStage::Unsupported,
                format!("no launch configuration for {other}"),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::stream_k_tiles;

    #[test]
    fn stream_k_splits_only_a_mostly_idle_last_round() {
        // 132 SMs (H100 SXM). 4096³: 512 tiles, the last round 116 of 132: too full to pay.
        assert_eq!(stream_k_tiles(512, 64, 132), 0);
        // 8192³: 2048 tiles, 68 left over: that round plus one full round are shared out.
        assert_eq!(stream_k_tiles(2048, 128, 132), 68 + 132);
        // Fewer tiles than SMs: all of them, or none when nearly every SM has one.
        assert_eq!(stream_k_tiles(48, 64, 132), 48);
        assert_eq!(stream_k_tiles(128, 32, 132), 0);
        // Whole rounds only: nothing to split.
        assert_eq!(stream_k_tiles(264, 64, 132), 0);
        assert_eq!(stream_k_tiles(10, 64, 0), 0);
    }
}
