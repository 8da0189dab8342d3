//! The width sweep of the row-wise families (softmax, RMSNorm forward): the one-pass kernels
//! from 1024 to 65536 columns, each beside the memcpy of the same bytes.
//!
//! Why a sweep: a kernel that keeps its row in registers is only as good as the widths it takes.
//! One block per row stops at 8192 floats; the adaptive variant (a warp per short row, a
//! thread-block cluster per long one) should stay near memcpy at every width.
//!
//! Every point holds 2^27 floats (512 MiB each way, at least the 256 MiB the issue asks): the
//! same as the families' 32768 × 4096 ladder, so the ladder's items are the sweep's 4096 point
//! and every (variant, width) is measured once.

use super::super::plan::{params, Item};

/// The swept widths.
pub const ROW_SWEEP_COLS: &[u64] = &[1024, 2048, 4096, 8192, 16384, 32768, 65536];
/// Elements of every sweep matrix (rows = this / cols).
pub const ROW_SWEEP_ELEMS: u64 = 1 << 27;
/// The ladder's width: its items already stand for this point of the sweep.
const LADDER_COLS: u64 = 4096;

/// Add the sweep to a family's 32768 × 4096 ladder: the items of the variants in `swept` (and
/// the baseline) again at every other width, with their ladder rungs. `widest` is the widest
/// row that `narrow` (a kernel with a fixed width limit) takes; wider points of it are skipped
/// with `why`.
pub(crate) fn with_sweep(
    ladder: Vec<Item>,
    swept: &[&str],
    narrow: &str,
    widest: u64,
    why: &'static str,
) -> Vec<Item> {
    let mut out = ladder.clone();
    for &cols in ROW_SWEEP_COLS.iter().filter(|&&c| c != LADDER_COLS) {
        let p = params(&[("rows", ROW_SWEEP_ELEMS / cols), ("cols", cols)]);
        for item in ladder.iter().filter(|i| i.baseline || swept.contains(&i.variant)) {
            let mut it = item.clone();
            it.params = p.clone();
            if it.variant == narrow && cols > widest {
                it.skip = Some(why);
            }
            out.push(it);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::items;
    use super::*;

    #[test]
    fn each_row_family_sweeps_seven_widths_of_512_mib_with_memcpy_at_each() {
        for (family, adaptive) in [("softmax", "softmax_adaptive"), ("rmsnorm", "rmsnorm_adaptive")] {
            let all = items(family);
            for &cols in ROW_SWEEP_COLS {
                let at: Vec<&Item> = all.iter().filter(|i| i.p("cols") == cols).collect();
                assert!(
                    at.iter().all(|i| i.p("rows") * cols == ROW_SWEEP_ELEMS),
                    "{family} {cols}"
                );
                for v in [adaptive, "memcpy"] {
                    let n = at.iter().filter(|i| i.variant == v && i.skip.is_none()).count();
                    assert_eq!(n, 1, "{family}/{v} at {cols}");
                }
            }
            // No (variant, params) twice.
            for (i, a) in all.iter().enumerate() {
                assert!(!all[i + 1..]
                    .iter()
                    .any(|b| b.variant == a.variant && b.params == a.params));
            }
        }
    }

    #[test]
    fn register_row_kernels_are_skipped_beyond_8192_columns() {
        for (family, v) in [("softmax", "softmax_fused"), ("rmsnorm", "rmsnorm_block_vec4")] {
            for i in items(family).iter().filter(|i| i.variant == v) {
                assert_eq!(
                    i.skip.is_some(),
                    i.p("cols") > 8192,
                    "{family}/{v} {}",
                    i.p("cols")
                );
            }
        }
    }
}
