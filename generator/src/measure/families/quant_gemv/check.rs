//! quant_gemv's check: sampled output rows of every token against f64 on the exact weight values
//! the kernel multiplies.

use crate::measure::reference::{mix, par_chunks_mut, rel_error};

const SAMPLE_ROWS: usize = 256;

/// The output rows checked against f64: the first, the last and the rest spread by `seed`.
pub fn sample_rows(n: usize, seed: u64) -> Vec<usize> {
    let mut rows = vec![0, n - 1];
    rows.extend((0..SAMPLE_ROWS as u64 - 2).map(|s| (mix(seed ^ mix(s)) % n as u64) as usize));
    rows
}

/// ‖Y − ref‖ / ‖ref‖ over the sampled rows of every token, with ref in f64 from `w` (N × K);
/// +∞ if any element of `y` is not finite.
pub fn sampled_rel(y: &[f32], x: &[f32], w: &[f32], m: usize, n: usize, k: usize, rows: &[usize]) -> f64 {
    crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
        if y.iter().any(|v| !v.is_finite()) {
            return f64::INFINITY;
        }
        let got: Vec<f32> = (0..m)
            .flat_map(|t| rows.iter().map(move |&r| y[t * n + r]))
            .collect();
        // Tokens × sampled rows dot products of length K, on all cores (at batch 64 they are a
        // hundred million multiply-adds per check).
        let mut want = vec![0f64; m * rows.len()];
        par_chunks_mut(&mut want, |start, part| {
            for (j, out) in part.iter_mut().enumerate() {
                let (t, r) = ((start + j) / rows.len(), rows[(start + j) % rows.len()]);
                let (xr, wr) = (&x[t * k..][..k], &w[r * k..][..k]);
                *out = xr.iter().zip(wr).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>();
            }
        });
        rel_error(&got, &want)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_rows_include_the_ends_and_the_error_sees_nan() {
        let rows = sample_rows(1000, 3);
        assert_eq!(rows.len(), SAMPLE_ROWS);
        assert!(rows.contains(&0) && rows.contains(&999) && rows.iter().all(|&r| r < 1000));
        let (m, n, k) = (2, 4, 3);
        let x = vec![1.0, 2.0, 3.0, -1.0, 0.5, 2.0];
        let w: Vec<f32> = (0..n * k).map(|i| i as f32 * 0.25).collect();
        let y: Vec<f32> = (0..m * n)
            .map(|i| (0..k).map(|j| x[(i / n) * k + j] * w[(i % n) * k + j]).sum())
            .collect();
        let all: Vec<usize> = (0..n).collect();
        assert!(sampled_rel(&y, &x, &w, m, n, k, &all) < 1e-7);
        let mut bad = y.clone();
        bad[5] = f32::NAN;
        assert!(sampled_rel(&bad, &x, &w, m, n, k, &all).is_infinite());
    }
}
