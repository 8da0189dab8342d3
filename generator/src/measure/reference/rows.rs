//! f64 references of the row-wise and matrix operations: sums, softmax and RMSNorm row
//! statistics, GEMV, matrix products, and RMSNorm's backward pass.

use super::parallel::{par_chunks_mut, par_sum, threads};
use std::thread;

/// Sum of all elements.
pub fn sum_f64(x: &[f32]) -> f64 {
    par_sum(x.len(), |i| x[i] as f64)
}

/// Per-row (max, Σ exp(x − max)) of a rows × cols matrix.
pub fn softmax_row_stats(x: &[f32], rows: usize, cols: usize) -> Vec<(f64, f64)> {
    let mut stats = vec![(0f64, 0f64); rows];
    par_chunks_mut(&mut stats, |start, part| {
        for (j, st) in part.iter_mut().enumerate() {
            let row = &x[(start + j) * cols..(start + j + 1) * cols];
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
            *st = (m, s);
        }
    });
    stats
}

/// Row softmax, element i, given the row stats.
pub fn softmax_at(x: &[f32], stats: &[(f64, f64)], cols: usize, i: usize) -> f64 {
    let (m, s) = stats[i / cols];
    (x[i] as f64 - m).exp() / s
}

/// Per-row scale 1 / sqrt(mean(x²) + eps) of RMSNorm.
pub fn rmsnorm_row_scale(x: &[f32], rows: usize, cols: usize, eps: f64) -> Vec<f64> {
    let mut scale = vec![0f64; rows];
    par_chunks_mut(&mut scale, |start, part| {
        for (j, sc) in part.iter_mut().enumerate() {
            let row = &x[(start + j) * cols..(start + j + 1) * cols];
            let ss: f64 = row.iter().map(|&v| v as f64 * v as f64).sum();
            *sc = 1.0 / (ss / cols as f64 + eps).sqrt();
        }
    });
    scale
}

/// y = A·x for a rows × cols row-major A.
pub fn gemv_f64(a: &[f32], x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut y = vec![0f64; rows];
    par_chunks_mut(&mut y, |start, part| {
        for (j, yr) in part.iter_mut().enumerate() {
            let row = &a[(start + j) * cols..(start + j + 1) * cols];
            *yr = row.iter().zip(x).map(|(&p, &q)| p as f64 * q as f64).sum();
        }
    });
    y
}

/// Row-major C = A·B (m×k times k×n) in f64.
pub fn matmul_f64(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    par_chunks_mut(&mut c, |start, part| {
        // `start` is a multiple of n only if chunks align to rows; handle element-wise.
        for (j, cij) in part.iter_mut().enumerate() {
            let idx = start + j;
            *cij = matmul_entry(a, b, n, k, idx / n, idx % n);
        }
    });
    c
}

/// One entry C[i][j] of row-major A·B in f64.
pub fn matmul_entry(a: &[f32], b: &[f32], n: usize, k: usize, i: usize, j: usize) -> f64 {
    (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64).sum()
}

/// Per row of RMSNorm's backward pass: (s, Σ_c w·dy·x) with s = 1 / sqrt(mean(x²) + eps).
pub fn rmsnorm_bwd_row_stats(
    x: &[f32],
    w: &[f32],
    dy: &[f32],
    rows: usize,
    cols: usize,
    eps: f64,
) -> Vec<(f64, f64)> {
    let mut stats = vec![(0f64, 0f64); rows];
    par_chunks_mut(&mut stats, |start, part| {
        for (j, st) in part.iter_mut().enumerate() {
            let r = (start + j) * cols;
            let (mut ss, mut dot) = (0f64, 0f64);
            for c in 0..cols {
                let xv = x[r + c] as f64;
                ss += xv * xv;
                dot += w[c] as f64 * dy[r + c] as f64 * xv;
            }
            *st = (1.0 / (ss / cols as f64 + eps).sqrt(), dot);
        }
    });
    stats
}

/// dx[i] of RMSNorm's backward pass in f64, given the row stats.
pub fn rmsnorm_bwd_dx_at(
    x: &[f32],
    w: &[f32],
    dy: &[f32],
    stats: &[(f64, f64)],
    cols: usize,
    i: usize,
) -> f64 {
    let (s, dot) = stats[i / cols];
    s * w[i % cols] as f64 * dy[i] as f64 - x[i] as f64 * s * s * s * dot / cols as f64
}

/// dw[c] = Σ_r dy[r][c]·x[r][c]·s_r in f64 (each thread sums a band of rows, then the bands add).
pub fn rmsnorm_bwd_dw_f64(x: &[f32], dy: &[f32], stats: &[(f64, f64)], rows: usize, cols: usize) -> Vec<f64> {
    let t = threads().max(1);
    let band = rows.div_ceil(t).max(1);
    let parts: Vec<Vec<f64>> = thread::scope(|s| {
        let handles: Vec<_> = (0..rows)
            .step_by(band)
            .map(|r0| {
                s.spawn(move || {
                    let mut acc = vec![0f64; cols];
                    for r in r0..(r0 + band).min(rows) {
                        let sr = stats[r].0;
                        for (c, a) in acc.iter_mut().enumerate() {
                            *a += dy[r * cols + c] as f64 * x[r * cols + c] as f64 * sr;
                        }
                    }
                    acc
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| vec![f64::NAN; cols]))
            .collect()
    });
    let mut dw = vec![0f64; cols];
    for p in parts {
        for (a, b) in dw.iter_mut().zip(p) {
            *a += b;
        }
    }
    dw
}
