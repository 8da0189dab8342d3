//! transpose: out = inᵀ for a 16384 × 16384 matrix (1 GiB each way), against cuMemcpyDtoD.
//!
//! Why memcpy is the baseline: a transpose moves the same bytes as a copy; the gap is the cost of
//! its access pattern.

use super::super::gpu::{Arg, Launch};
use super::super::harness::{check_and_time, Ctx, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, MEMCPY, V};
use super::super::reference::{par_sum_triple, rel_error_f32};
use super::super::results::Timing;
use super::shared_input;
use super::Family;

pub(crate) const FAMILY: Family = Family {
    name: "transpose",
    sources: &[kernel_file!("memory/transpose.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// Naive, tiled and padded transposes of a 16384 × 16384 matrix.
pub fn items() -> Vec<Item> {
    ladder(
        "transpose",
        FILE,
        &[
            V("transpose_naive", "naive (strided writes)"),
            V("transpose_tiled", "shared-memory tile 32 × 32"),
            V(
                "transpose_padded",
                "shared-memory tile, +1 padding (no bank conflicts)",
            ),
        ],
        &params(&[("rows", 16384), ("cols", 16384)]),
        MEMCPY,
    )
}

/// Every element read once and written once, no arithmetic (the memcpy baseline likewise).
pub fn work(item: &Item) -> (f64, f64) {
    (0.0, 8.0 * item.p("rows") as f64 * item.p("cols") as f64)
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (rows, cols) = (item.p("rows") as usize, item.p("cols") as usize);
    let kernel = ctx.variant_kernel(FILE, item)?;
    let gpu = ctx.gpu;
    // The variants share the input matrix (see `Ctx::shared`).
    let shared = shared_input(ctx, "transpose_input", item, rows * cols, (-1.0, 1.0))?;
    let (x, input) = (&shared.host, &shared.dev);
    let out = gpu.alloc_f32(rows * cols)?;
    let cfg = Launch::grid2(cols.div_ceil(32) as u32, rows.div_ceil(32) as u32, 32, 8);
    let mut run = || match &kernel {
        None => gpu.memcpy_dtod(&out, input, rows * cols * 4),
        Some(k) => gpu.launch(
            k,
            cfg,
            &[
                Arg::Buf(input),
                Arg::Buf(&out),
                Arg::I32(rows as i32),
                Arg::I32(cols as i32),
            ],
        ),
    };
    let baseline = item.baseline;
    check_and_time(gpu, 0.0, &[&out], &mut run, &mut || {
        let o = gpu.download_f32(&out, rows * cols)?;
        Ok(if baseline {
            rel_error_f32(&o, x)
        } else {
            transposed_rel(&o, x, rows, cols)
        })
    })
}

/// ‖out − xᵀ‖ / ‖xᵀ‖ for out (cols × rows) against x (rows × cols), walking both in 64 × 64
/// tiles on all cores: element by element, one of the two matrices is read with a stride of a
/// whole row, a cache miss per element that made this check the family's slowest step.
fn transposed_rel(out: &[f32], x: &[f32], rows: usize, cols: usize) -> f64 {
    const T: usize = 64;
    super::super::prof::timed(super::super::prof::Op::Compare, || {
        par_sum_triple(cols.div_ceil(T), |tile_c| {
            let (mut num, mut den, mut bad) = (0f64, 0f64, false);
            let cs = tile_c * T..((tile_c + 1) * T).min(cols);
            for r0 in (0..rows).step_by(T) {
                for c in cs.clone() {
                    for r in r0..(r0 + T).min(rows) {
                        let (o, want) = (out[c * rows + r], x[r * cols + c] as f64);
                        bad |= !o.is_finite();
                        num += (o as f64 - want).powi(2);
                        den += want * want;
                    }
                }
            }
            (num, den, bad)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::transposed_rel;

    #[test]
    fn tiled_check_is_exact_and_catches_a_wrong_or_unwritten_element() {
        // Sizes that are not multiples of the 64 tile, so the edge tiles are walked too.
        let (rows, cols) = (70, 131);
        let x: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.5 - 3.0).collect();
        let mut out = vec![0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                out[c * rows + r] = x[r * cols + c];
            }
        }
        assert_eq!(transposed_rel(&out, &x, rows, cols), 0.0);
        let mut wrong = out.clone();
        wrong[130 * rows + 69] += 1.0; // the very last element
        assert!(transposed_rel(&wrong, &x, rows, cols) > 0.0);
        wrong[5] = f32::NAN;
        assert_eq!(transposed_rel(&wrong, &x, rows, cols), f64::INFINITY);
        // The untransposed matrix is not its transpose.
        assert!(transposed_rel(&x, &x, rows, cols) > 0.1);
    }
}
