//! tc_gemm: C = A·B on the tensor cores — BF16 inputs, FP32 accumulate, FP32 output — at square
//! sizes, against cuBLAS gemm_ex (BF16 in, CUBLAS_COMPUTE_32F, FP32 out) in the same run. B is
//! handed to every variant as Bᵀ (N × K row-major, K contiguous; see kernels/gemm/tc_gemm.cu). Rungs
//! 1-4 live in tc_gemm.cu; the persistent rung 5 and the stream-K rung 6 name their own files in
//! the plan.
//!
//! Verification: the inputs are drawn as BF16, and the references use exactly those values.
//! cuBLAS is checked against an f64 CPU product at 256³ and on 256 sampled entries at the timed
//! size; each kernel is then compared with cuBLAS's output over all M·N entries (without cuBLAS,
//! with 4096 sampled f64 entries). Both accumulate in FP32, so they agree to ~1e-6; the tolerance
//! 1e-3 still catches any fragment-layout or pipeline mistake, which costs O(1).

use super::super::gpu::{Arg, DevBuf, Dtype, Gpu, Launch, RowMajorGemm};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::Item;
use super::super::plan::{ladder, params, run_last, V};
use super::super::reference::{random_bf16, rel_error, rel_error_f32, sampled_entries_rel};
use super::super::results::{FailStage, Timing};
use super::Family;

pub(crate) const FAMILY: Family = Family {
    name: "tc_gemm",
    sources: SOURCES,
    items,
    work,
    cublas: &["cublas"],
    measure,
};
/// Rungs 1-4, then the persistent rung 5 and the stream-K rung 6 in files of their own, so the
/// shipped results of the rungs before them stay valid (the tp_gemm family runs them too).
pub(crate) const SOURCES: &[KernelFile] = &[
    kernel_file!("gemm/tc_gemm.cu", arch_specific),
    kernel_file!("gemm/tc_gemm_persistent.cu", arch_specific),
    kernel_file!("gemm/tc_gemm_streamk.cu", arch_specific),
];
const FILE: &str = SOURCES[0].path;

/// Square tensor-core GEMM sizes (multiples of 256: the WGMMA rung's block tile is 128 × 256).
pub const TC_GEMM_SIZES: &[u64] = &[2048, 4096, 8192];

/// The persistent tensor-core GEMM rung (tc_gemm and tp_gemm ladders), after tc_wgmma.
pub(crate) const TC_PERSISTENT: V = V(
    "tc_wgmma_persistent",
    "persistent blocks, TMA-store epilogue overlapped with the next tile",
);
/// The stream-K rung (tc_gemm and tp_gemm ladders), after the persistent one.
pub(crate) const TC_STREAMK: V = V(
    "tc_wgmma_streamk",
    "stream-K: the last round's tiles split along K over every SM",
);
/// The cuBLAS baseline of both GEMM families.
pub(crate) const CUBLAS: (&str, &str) = ("cublas", "cuBLAS gemm_ex (BF16, FP32 accumulate)");
/// The rungs built from the most intricate machinery (TMA and mbarriers, hand-laid fragments):
/// run after every other number is safe (see `plan::run_last`).
pub(crate) const RUN_LAST: &[&str] = &["tc_wgmma", TC_PERSISTENT.0, TC_STREAMK.0];

/// Point the persistent and stream-K rungs at their own files.
pub(crate) fn own_files(mut item: Item) -> Item {
    if item.variant == TC_PERSISTENT.0 {
        item.source_file = Some(SOURCES[1].path);
    } else if item.variant == TC_STREAMK.0 {
        item.source_file = Some(SOURCES[2].path);
    }
    item
}

/// The six-rung ladder from WMMA to stream-K at each square size.
pub fn items() -> Vec<Item> {
    let all = TC_GEMM_SIZES
        .iter()
        .flat_map(|&s| {
            ladder(
                "tc_gemm",
                FILE,
                &[
                    V("tc_wmma", "WMMA 16×16×16 from global memory"),
                    V("tc_smem_cpasync", "shared-memory tiles, cp.async double buffer"),
                    V(
                        "tc_mma_pipeline",
                        "mma.sync + ldmatrix, 3-stage cp.async pipeline",
                    ),
                    V("tc_wgmma", "Hopper WGMMA + TMA, warp-specialized"),
                    TC_PERSISTENT,
                    TC_STREAMK,
                ],
                &params(&[("m", s), ("n", s), ("k", s)]),
                CUBLAS,
            )
        })
        .map(own_files)
        .collect();
    run_last(all, RUN_LAST)
}

/// 2·m·n·k FLOPs; BF16 A and B read once, FP32 C written once.
pub fn work(item: &Item) -> (f64, f64) {
    let (m, n, k) = (item.p("m") as f64, item.p("n") as f64, item.p("k") as f64);
    (2.0 * m * n * k, 2.0 * (m * k + k * n) + 4.0 * m * n)
}
const TOL: f64 = 1e-3;

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

/// The rungs built from sm_90a-only instructions (wgmma, setmaxnreg).
fn hopper_only(variant: &str) -> bool {
    matches!(variant, "tc_wgmma" | "tc_wgmma_persistent" | "tc_wgmma_streamk")
}

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

/// Host copies of the operands (exact BF16 values): A is m × k, Bt is n × k, both row-major.
struct Operands<'a> {
    a: &'a [f32],
    bt: &'a [f32],
    n: usize,
    k: usize,
}

impl Operands<'_> {
    fn entry(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (&self.a[i * self.k..][..self.k], &self.bt[j * self.k..][..self.k]);
        a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
    }
}

/// ‖c − ref‖ / ‖ref‖ over `samples` entries chosen from `seed`, ref in f64.
fn sampled_rel(c: &[f32], ops: &Operands, m: usize, samples: usize, seed: u64) -> f64 {
    sampled_entries_rel(c, m, ops.n, samples, seed, |i, j| ops.entry(i, j))
}

fn cublas(
    gpu: &Gpu,
    m: usize,
    n: usize,
    k: usize,
    a: &DevBuf,
    bt: &DevBuf,
    c: &DevBuf,
) -> anyhow::Result<()> {
    gpu.gemm_bf16(&RowMajorGemm {
        m,
        n,
        k,
        batch: 1,
        alpha: 1.0,
        a,
        stride_a: 0,
        b: bt,
        stride_b: 0,
        b_is_nk: true,
        c,
        stride_c: 0,
        c_type: Dtype::F32,
    })
}

/// cuBLAS against f64 at 256³ on fresh inputs.
fn cublas_small_check(gpu: &Gpu, seed: u64) -> anyhow::Result<f64> {
    let s = 256;
    let (a_bits, a) = random_bf16(s * s, seed ^ 1, -1.0, 1.0);
    let (b_bits, bt) = random_bf16(s * s, seed ^ 2, -1.0, 1.0);
    let (da, db, dc) = (
        gpu.alloc(s * s * 2)?,
        gpu.alloc(s * s * 2)?,
        gpu.alloc_f32(s * s)?,
    );
    gpu.upload_u16(&da, &a_bits)?;
    gpu.upload_u16(&db, &b_bits)?;
    gpu.fill_nan(&dc)?;
    cublas(gpu, s, s, s, &da, &db, &dc)?;
    let c = gpu.download_f32(&dc, s * s)?;
    let ops = Operands {
        a: &a,
        bt: &bt,
        n: s,
        k: s,
    };
    let reference: Vec<f64> = (0..s * s).map(|idx| ops.entry(idx / s, idx % s)).collect();
    Ok(rel_error(&c, &reference))
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (m, n, k) = (item.p("m") as usize, item.p("n") as usize, item.p("k") as usize);
    if m % 128 != 0 || n % 256 != 0 || k % 64 != 0 {
        return Err(Fail::new(
            FailStage::Unsupported,
            "sizes must be multiples of 128 (m), 256 (n) and 64 (k)",
        ));
    }
    if hopper_only(item.variant) && ctx.gpu.arch_specific() != "sm_90a" {
        return Err(Fail::new(
            FailStage::Unsupported,
            "WGMMA and TMA need a Hopper GPU (sm_90a)",
        ));
    }
    let seed = ctx.seed(item);
    let kernel = ctx.variant_kernel(item.source_file.unwrap_or(FILE), item)?;
    let gpu = ctx.gpu;
    // The variants of a shape share A and Bᵀ (see `Ctx::shared`).
    let ab = ctx.shared("tc_gemm_ab", &format!("{:?}", item.params), |gpu, seed| {
        let (a_bits, a_host) = random_bf16(m * k, seed ^ 0xa, -1.0, 1.0);
        let (b_bits, bt_host) = random_bf16(n * k, seed ^ 0xb, -1.0, 1.0);
        let (a, bt) = (gpu.alloc(m * k * 2)?, gpu.alloc(n * k * 2)?);
        gpu.upload_u16(&a, &a_bits)?;
        gpu.upload_u16(&bt, &b_bits)?;
        Ok((a_host, a, bt_host, bt))
    })?;
    let (a_host, a, bt_host, bt) = (&ab.0, &ab.1, &ab.2, &ab.3);
    let c = gpu.alloc_f32(m * n)?;
    let ops = Operands {
        a: a_host,
        bt: bt_host,
        n,
        k,
    };

    let Some(kern) = kernel else {
        if !gpu.has_cublas() {
            return Err(Fail::new(FailStage::Unsupported, "cuBLAS library not found"));
        }
        return check_and_time(
            gpu,
            TOL,
            &[&c],
            &mut || cublas(gpu, m, n, k, a, bt, &c),
            &mut || {
                let small = cublas_small_check(gpu, seed)?;
                let out = gpu.download_f32(&c, m * n)?;
                Ok(small.max(sampled_rel(&out, &ops, m, 256, seed)))
            },
        );
    };

    let c_ref = if gpu.has_cublas() {
        let r = gpu.alloc_f32(m * n)?;
        gpu.fill_nan(&r)?;
        cublas(gpu, m, n, k, a, bt, &r)?;
        Some(gpu.download_f32(&r, m * n)?)
    } else {
        None
    };
    let tiles = |bm: usize, bn: usize| ((m / bm) * (n / bn)) as u64;
    let sms = gpu.sm_count().max(1) as u64;
    // Rung 6's schedule and workspace: one partial-tile slot and one flag per block, zeroed
    // once here. The kernel leaves every flag zero again (the block that consumes a partial
    // clears its flag), so no reset runs between the timed launches.
    let sk_tiles = stream_k_tiles(tiles(128, 256), (k / 64) as u64, sms);
    let ws_bytes = if item.variant == "tc_wgmma_streamk" && sk_tiles > 0 {
        sms as usize * (STREAMK_SLOT * 4 + 4)
    } else {
        0
    };
    let ws = gpu.alloc(ws_bytes)?;
    if ws_bytes > 0 {
        gpu.fill_zero(&ws)?;
    }
    let (maps, maps3);
    let args: Vec<Arg> = match item.variant {
        "tc_wgmma" => {
            maps = (
                gpu.tensor_map(a, Dtype::Bf16, m, k, 128, 64)?,
                gpu.tensor_map(bt, Dtype::Bf16, n, k, 256, 64)?,
            );
            vec![
                Arg::I32(m as i32),
                Arg::I32(n as i32),
                Arg::I32(k as i32),
                Arg::TensorMap(&maps.0),
                Arg::TensorMap(&maps.1),
                Arg::Buf(&c),
            ]
        }
        // C leaves through the TMA engine: an FP32 map with boxes of 128 rows × 32 columns.
        "tc_wgmma_persistent" | "tc_wgmma_streamk" => {
            maps3 = (
                gpu.tensor_map(a, Dtype::Bf16, m, k, 128, 64)?,
                gpu.tensor_map(bt, Dtype::Bf16, n, k, 256, 64)?,
                gpu.tensor_map(&c, Dtype::F32, m, n, 128, 32)?,
            );
            let mut v = vec![Arg::I32(m as i32), Arg::I32(n as i32), Arg::I32(k as i32)];
            if item.variant == "tc_wgmma_streamk" {
                v.extend([Arg::I32(sk_tiles as i32), Arg::Buf(&ws)]);
            }
            v.extend([
                Arg::TensorMap(&maps3.0),
                Arg::TensorMap(&maps3.1),
                Arg::TensorMap(&maps3.2),
            ]);
            v
        }
        _ => vec![
            Arg::I32(m as i32),
            Arg::I32(n as i32),
            Arg::I32(k as i32),
            Arg::Buf(a),
            Arg::Buf(bt),
            Arg::Buf(&c),
        ],
    };
    let cfg = match item.variant {
        "tc_wmma" => Launch::grid2((n / 64) as u32, (m / 64) as u32, 128, 1),
        "tc_smem_cpasync" => Launch::linear(tiles(128, 128), 256)?,
        "tc_mma_pipeline" => {
            gpu.set_max_dynamic_smem(&kern, PIPELINE_SMEM)?;
            Launch {
                smem: PIPELINE_SMEM,
                cluster: None,
                ..Launch::linear(tiles(128, 128), 128)?
            }
        }
        "tc_wgmma" => {
            gpu.set_max_dynamic_smem(&kern, WGMMA_SMEM)?;
            Launch {
                smem: WGMMA_SMEM,
                cluster: None,
                ..Launch::linear(tiles(128, 256), 384)?
            }
        }
        // Persistent: one block per SM (fewer when there are fewer tiles), each walking tiles.
        "tc_wgmma_persistent" => {
            gpu.set_max_dynamic_smem(&kern, PERSISTENT_SMEM)?;
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
            gpu.set_max_dynamic_smem(&kern, STREAMK_SMEM)?;
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
    };
    let mut t = check_and_time(
        gpu,
        TOL,
        &[&c],
        &mut || gpu.launch(&kern, cfg, &args),
        &mut || {
            let out = gpu.download_f32(&c, m * n)?;
            Ok(match &c_ref {
                Some(r) => rel_error_f32(&out, r),
                None => {
                    if out.iter().any(|v| !v.is_finite()) {
                        f64::INFINITY
                    } else {
                        sampled_rel(&out, &ops, m, 4096, seed)
                    }
                }
            })
        },
    )?;
    if item.variant == "tc_wgmma_streamk" {
        t.workspace_bytes = Some(ws_bytes as f64);
        t.metrics.insert("stream_k_tiles".to_string(), sk_tiles as f64);
    }
    Ok(t)
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
