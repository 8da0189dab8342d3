//! The f64 reference of attention, row by row, and the rows a check samples.
//!
//! Why rows and not the whole output: each row is a pass over all keys, so a full reference at
//! long sequence lengths would cost more than the kernels it checks; a spread of rows that
//! includes the first and last (fewest and most keys when causal) catches what a full one would.

use super::compare::{rel_from, OutElem};
use super::parallel::par_chunks_mut;
use super::random::mix;

/// One output row of attention in f64: O[head][i] = softmax(q_i·Kᵀ / √d) · V over the keys
/// j ≤ i when causal, all keys otherwise. Q, K, V are [heads][n][d] row-major.
#[allow(clippy::too_many_arguments)]
pub fn attention_row_f64(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n: usize,
    d: usize,
    head: usize,
    i: usize,
    causal: bool,
) -> Vec<f64> {
    let base = head * n * d;
    let qi = &q[base + i * d..base + (i + 1) * d];
    let keys = if causal { i + 1 } else { n };
    let scale = 1.0 / (d as f64).sqrt();
    let scores: Vec<f64> = (0..keys)
        .map(|j| {
            let kj = &k[base + j * d..base + (j + 1) * d];
            qi.iter().zip(kj).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() * scale
        })
        .collect();
    let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
    let l: f64 = p.iter().sum();
    let mut out = vec![0f64; d];
    for (j, pj) in p.iter().enumerate() {
        let vj = &v[base + j * d..base + (j + 1) * d];
        for (o, &x) in out.iter_mut().zip(vj) {
            *o += pj * x as f64;
        }
    }
    out.iter_mut().for_each(|o| *o /= l);
    out
}

/// The f64 reference of the listed (head, row) pairs, concatenated, on all cores. Kept apart from
/// the comparison so a shape's variants can share it (each row is a pass over all keys).
#[allow(clippy::too_many_arguments)]
pub fn attention_rows_f64(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n: usize,
    d: usize,
    causal: bool,
    rows: &[(usize, usize)],
) -> Vec<f64> {
    crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
        let mut want_rows = vec![Vec::new(); rows.len()];
        par_chunks_mut(&mut want_rows, |start, part| {
            for (j, w) in part.iter_mut().enumerate() {
                let (head, i) = rows[start + j];
                *w = attention_row_f64(q, k, v, n, d, head, i, causal);
            }
        });
        want_rows.into_iter().flatten().collect()
    })
}

/// ‖out − want‖ / ‖want‖ over the listed (head, row) pairs of an attention output, `want` from
/// [`attention_rows_f64`]. NaN or infinity in a checked row gives +∞.
pub fn attention_rows_vs<T: OutElem>(
    out: &[T],
    n: usize,
    d: usize,
    rows: &[(usize, usize)],
    want: &[f64],
) -> f64 {
    if want.len() != rows.len() * d {
        return f64::INFINITY;
    }
    let (mut num, mut den, mut bad) = (0f64, 0f64, false);
    for (r, &(head, i)) in rows.iter().enumerate() {
        let o = &out[(head * n + i) * d..(head * n + i + 1) * d];
        for (&x, y) in o.iter().zip(&want[r * d..(r + 1) * d]) {
            let x = x.value();
            bad |= !x.is_finite();
            num += (x as f64 - y).powi(2);
            den += y * y;
        }
    }
    rel_from(num, den, bad || rows.is_empty())
}

/// `count` (head, row) pairs spread over a [heads][n] attention output from `seed`, always
/// including the first row of the first head and the last row of the last head (the rows that
/// see the fewest and the most keys when causal).
pub fn sample_rows(heads: usize, n: usize, count: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rows = vec![(0, 0), (heads - 1, n - 1)];
    for s in 0..count.saturating_sub(2) as u64 {
        let h = mix(seed ^ mix(s));
        rows.push(((h % heads as u64) as usize, ((h >> 32) % n as u64) as usize));
    }
    rows
}
