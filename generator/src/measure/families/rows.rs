//! How the width-adaptive row kernels (`softmax_warp`/`softmax_cluster`,
//! `rmsnorm_warp`/`rmsnorm_cluster`) split a row of `cols` floats: shared by the softmax and
//! RMSNorm families, which differ only in their arguments.
//!
//! Why these numbers: the row must live in registers (read once, written once), and each thread
//! holds at most 8 float4 (`MAX_VEC` in the kernels). The standalone sweep on the H100 ran best
//! when every thread held all 8 of them: a short row (≤ 2048 floats) goes to one warp and needs
//! no barrier at all; a longer one is cut into pieces of 8 float4 × 128 or 256 threads, one piece
//! per block, and the blocks of a row form one thread-block cluster (at most 8, the portable
//! cluster size) that exchanges its partial statistics through distributed shared memory.

use super::super::gpu::Launch;
use super::super::harness::{Fail, Res};
use super::super::results::FailStage;
use super::blocks;

/// Rows per block of the warp kernels (a warp per row).
const WARP_THREADS: u32 = 128;
/// float4 a thread holds in registers (`MAX_VEC` and `WARP_VEC`/2 in the kernels).
const VEC: usize = 8;
/// The widest row one warp takes (`WARP_VEC` = 16 float4 per lane).
pub(crate) const WARP_MAX_COLS: usize = 4 * 16 * 32;
/// The portable cluster size limit.
const MAX_CLUSTER: usize = 8;

/// Which kernel of a pair runs, and its launch.
pub(crate) enum RowSplit {
    /// `*_warp`: a warp per row.
    Warp(Launch),
    /// `*_cluster`: a cluster of blocks per row (cluster size in the launch).
    Cluster(Launch),
}

/// The split for `rows` rows of `cols` floats, or why the kernels cannot take that width.
pub(crate) fn row_split(rows: usize, cols: usize) -> Res<RowSplit> {
    if cols == 0 || !cols.is_multiple_of(4) {
        return Err(unsupported(cols));
    }
    if cols <= WARP_MAX_COLS {
        let per_block = (WARP_THREADS / 32) as u64;
        return Ok(RowSplit::Warp(Launch::linear(
            blocks(rows as u64, per_block),
            WARP_THREADS,
        )?));
    }
    let threads: usize = if cols <= 4 * VEC * 128 { 128 } else { 256 };
    let parts = cols.div_ceil(4 * VEC * threads);
    if parts > MAX_CLUSTER || !cols.is_multiple_of(4 * parts) {
        return Err(unsupported(cols));
    }
    let cfg = Launch::linear((rows * parts) as u64, threads as u32)?.with_cluster(parts as u32);
    Ok(RowSplit::Cluster(cfg))
}

fn unsupported(cols: usize) -> Fail {
    Fail::new(
        FailStage::Unsupported,
        format!(
            "the adaptive row kernels need cols divisible by 4 (and by 4 × the cluster size) and \
             at most {} (8 blocks × 256 threads × 32 floats); got {cols}",
            MAX_CLUSTER * 256 * 4 * VEC
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(cols: usize) -> (bool, u32, u32, Option<u32>) {
        let Ok(split) = row_split(1 << 10, cols) else {
            panic!("{cols} columns should be supported")
        };
        match split {
            RowSplit::Warp(l) => (true, l.grid.0, l.block.0, l.cluster),
            RowSplit::Cluster(l) => (false, l.grid.0, l.block.0, l.cluster),
        }
    }

    #[test]
    fn every_sweep_width_has_a_split_holding_8_float4_per_thread() {
        assert_eq!(shape(1024), (true, 256, 128, None));
        assert_eq!(shape(2048), (true, 256, 128, None));
        assert_eq!(shape(4096), (false, 1024, 128, Some(1)));
        assert_eq!(shape(8192), (false, 1024, 256, Some(1)));
        assert_eq!(shape(16384), (false, 2048, 256, Some(2)));
        assert_eq!(shape(32768), (false, 4096, 256, Some(4)));
        assert_eq!(shape(65536), (false, 8192, 256, Some(8)));
    }

    #[test]
    fn too_wide_or_ragged_rows_are_unsupported() {
        assert!(row_split(8, 131072).is_err());
        assert!(row_split(8, 1026).is_err());
        assert!(row_split(8, 0).is_err());
    }
}
