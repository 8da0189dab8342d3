//! tp_gemm: the GEMMs one GPU runs under tensor parallelism — Llama 3 8B's projections at 4096
//! batch tokens, split 1, 2, 4 and 8 ways — on the tensor-core GEMM ladder's rungs 3-6 and cuBLAS.
//!
//! Why a family of its own: the shard shapes are where a GEMM kernel's efficiency falls off (fewer
//! tiles per wave, shorter K loops), which is TP's cost on the compute side even when its
//! communication is hidden. The kernels, set-up and checks are `tc_gemm`'s.

use super::super::plan::{ladder, params, run_last, Item, V};
use super::tc_gemm::{self, CUBLAS, RUN_LAST, TC_PERSISTENT, TC_STREAMK};
use super::Family;

pub(crate) const FAMILY: Family = Family {
    name: "tp_gemm",
    sources: tc_gemm::SOURCES,
    items,
    work: tc_gemm::work,
    cublas: &["cublas"],
    measure: tc_gemm::measure,
};

/// Batch tokens of every shard GEMM (its M).
pub const TP_TOKENS: u64 = 4096;
/// The TP degrees.
pub const TP_WAYS: &[u64] = &[1, 2, 4, 8];
/// (proj, full N, full K, split K instead of N). `proj`: 0 = QKV (N = 4096 + 2·1024 split,
/// column-parallel), 1 = MLP up (N = 14336 split, column-parallel), 2 = MLP down (K = 14336
/// split, row-parallel).
pub const TP_PROJS: &[(u64, u64, u64, bool)] = &[
    (0, 6144, 4096, false),
    (1, 14336, 4096, false),
    (2, 4096, 14336, true),
];

/// Every projection at every TP degree, rungs 3-6 and cuBLAS.
pub fn items() -> Vec<Item> {
    let mut out = Vec::new();
    for &(proj, n, k, split_k) in TP_PROJS {
        for &tp in TP_WAYS {
            let (n, k) = if split_k { (n, k / tp) } else { (n / tp, k) };
            out.extend(ladder(
                "tp_gemm",
                tc_gemm::SOURCES[0].path,
                &[
                    V(
                        "tc_mma_pipeline",
                        "mma.sync + ldmatrix, 3-stage cp.async pipeline",
                    ),
                    V("tc_wgmma", "Hopper WGMMA + TMA, warp-specialized"),
                    TC_PERSISTENT,
                    TC_STREAMK,
                ],
                &params(&[("m", TP_TOKENS), ("n", n), ("k", k), ("tp", tp), ("proj", proj)]),
                CUBLAS,
            ));
        }
    }
    let out = out.into_iter().map(tc_gemm::own_files).collect();
    run_last(out, RUN_LAST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tp_shards_keep_the_tile_multiples() {
        for i in items() {
            assert!(
                i.p("m") % 128 == 0 && i.p("n") % 256 == 0 && i.p("k") % 64 == 0,
                "{}",
                i.describe()
            );
        }
        let up8 = items()
            .into_iter()
            .find(|i| i.p("proj") == 1 && i.p("tp") == 8)
            .unwrap();
        assert_eq!((up8.p("n"), up8.p("k")), (1792, 4096));
    }
}
