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
//!
//! Files: `check.rs` (the host operands, cuBLAS, the references and checks), `launch.rs` (each
//! rung's arguments, launch shape and stream-K workspace).

use super::super::gpu::{DevBuf, Gpu};
use super::super::harness::{Ctx, Fail, Res};
use super::super::kernels::{kernel_file, KernelFile};
use super::super::plan::Item;
use super::super::plan::{ladder, params, run_last, V};
use super::super::reference::random_bf16;
use super::super::results::{FailStage, Timing};
use super::Family;
use check::Operands;

mod check;
mod launch;

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

/// The rungs built from sm_90a-only instructions (wgmma, setmaxnreg).
fn hopper_only(variant: &str) -> bool {
    matches!(variant, "tc_wgmma" | "tc_wgmma_persistent" | "tc_wgmma_streamk")
}

/// One item's shape and operands, on the device and (exact BF16 values) on the host, with its
/// seed: what the cuBLAS baseline and every rung read.
struct Problem<'a> {
    gpu: &'a Gpu,
    m: usize,
    n: usize,
    k: usize,
    a: &'a DevBuf,
    bt: &'a DevBuf,
    c: &'a DevBuf,
    ops: Operands<'a>,
    seed: u64,
}

impl Problem<'_> {
    /// Output tiles of `bm` × `bn`.
    fn tiles(&self, bm: usize, bn: usize) -> u64 {
        ((self.m / bm) * (self.n / bn)) as u64
    }
}

/// The host A and Bᵀ and their device copies, shared by a shape's variants.
type SharedAb = (Vec<f32>, DevBuf, Vec<f32>, DevBuf);

/// Draw A (m × k) and Bᵀ (n × k) as BF16 from `seed` and upload them.
fn upload_operands(gpu: &Gpu, seed: u64, m: usize, n: usize, k: usize) -> Res<SharedAb> {
    let (a_bits, a_host) = random_bf16(m * k, seed ^ 0xa, -1.0, 1.0);
    let (b_bits, bt_host) = random_bf16(n * k, seed ^ 0xb, -1.0, 1.0);
    let (a, bt) = (gpu.alloc(m * k * 2)?, gpu.alloc(n * k * 2)?);
    gpu.upload_u16(&a, &a_bits)?;
    gpu.upload_u16(&bt, &b_bits)?;
    Ok((a_host, a, bt_host, bt))
}

/// Refuse sizes the tiles do not divide, and the Hopper-only rungs elsewhere.
fn supported(ctx: &Ctx, item: &Item, m: usize, n: usize, k: usize) -> Res<()> {
    if !m.is_multiple_of(128) || !n.is_multiple_of(256) || !k.is_multiple_of(64) {
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
    Ok(())
}

/// Set up (operands shared by the shape's variants), check and time one item.
pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (m, n, k) = (item.p("m") as usize, item.p("n") as usize, item.p("k") as usize);
    supported(ctx, item, m, n, k)?;
    let seed = ctx.seed(item);
    let kernel = ctx.variant_kernel(item.source_file.unwrap_or(FILE), item)?;
    let gpu = ctx.gpu;
    // The variants of a shape share A and Bᵀ (see `Ctx::shared`).
    let ab = ctx.shared("tc_gemm_ab", &format!("{:?}", item.params), |gpu, seed| {
        upload_operands(gpu, seed, m, n, k)
    })?;
    let (a_host, a, bt_host, bt) = (&ab.0, &ab.1, &ab.2, &ab.3);
    let c = gpu.alloc_f32(m * n)?;
    let ops = Operands {
        a: a_host,
        bt: bt_host,
        n,
        k,
    };
    let p = Problem {
        gpu,
        m,
        n,
        k,
        a,
        bt,
        c: &c,
        ops,
        seed,
    };
    match kernel {
        None => check::time_cublas(&p),
        Some(kern) => launch::time_kernel(&p, item.variant, &kern),
    }
}
