//! The f64 reference of a decode step and the comparison every rung is checked by: every query
//! head of the first and the last sequence, against the exact values the kernel reads.

use super::cache::Shape;
use super::D;
use crate::measure::reference::{par_chunks_mut, rel_error};

/// f64 decode attention of query head `qh` of sequence `seq`: softmax(q·Kᵀ/√d)·V.
pub fn reference_row(q: &[f32], k: &[f32], v: &[f32], s: Shape, seq: usize, qh: usize) -> Vec<f64> {
    let kvh = qh / s.group();
    let qr = &q[(seq * s.hq + qh) * D..][..D];
    let base = (seq * s.hkv + kvh) * s.ctx * D;
    let scale = 1.0 / (D as f64).sqrt();
    let scores: Vec<f64> = (0..s.ctx)
        .map(|t| {
            let kr = &k[base + t * D..][..D];
            qr.iter().zip(kr).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() * scale
        })
        .collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|x| (x - m).exp()).collect();
    let l: f64 = p.iter().sum();
    let mut o = vec![0f64; D];
    for (t, pt) in p.iter().enumerate() {
        for (j, oj) in o.iter_mut().enumerate() {
            *oj += pt * v[base + t * D + j] as f64;
        }
    }
    o.iter().map(|x| x / l).collect()
}

/// The (sequence, query head) rows a check compares: every query head of the first and the last
/// sequence.
fn checked_rows(s: Shape) -> Vec<(usize, usize)> {
    let mut seqs = vec![0, s.b - 1];
    seqs.dedup();
    seqs.iter()
        .flat_map(|&seq| (0..s.hq).map(move |qh| (seq, qh)))
        .collect()
}

/// The f64 reference of the [`checked_rows`], concatenated. Computed once per shape and cache
/// (BF16 or a dequantized one) and shared by the variants reading it: each row is a full pass
/// over the context, and recomputing them for every variant was a tenth of the suite's time.
pub(super) fn reference_rows(q: &[f32], k: &[f32], v: &[f32], s: Shape) -> Vec<f64> {
    crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
        let rows = checked_rows(s);
        let mut want_rows = vec![Vec::new(); rows.len()];
        par_chunks_mut(&mut want_rows, |start, part| {
            for (j, w) in part.iter_mut().enumerate() {
                let (seq, qh) = rows[start + j];
                *w = reference_row(q, k, v, s, seq, qh);
            }
        });
        want_rows.into_iter().flatten().collect()
    })
}

/// ‖out − ref‖ / ‖ref‖ over the [`checked_rows`] against their reference `want`; +∞ if any output
/// element is not finite.
pub(super) fn checked_rel(out: &[f32], want: &[f64], s: Shape) -> f64 {
    if out.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let got: Vec<f32> = checked_rows(s)
        .iter()
        .flat_map(|&(seq, qh)| out[(seq * s.hq + qh) * D..][..D].iter().copied())
        .collect();
    rel_error(&got, want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_is_a_weighted_mean_of_values() {
        // One key dominates: the output is (nearly) its value row; equal scores give the mean.
        let s = Shape {
            b: 1,
            hq: 1,
            hkv: 1,
            ctx: 2,
        };
        let q = vec![1.0f32; D];
        let mut k = vec![0.0f32; 2 * D];
        let v: Vec<f32> = (0..2 * D).map(|i| if i < D { 1.0 } else { 3.0 }).collect();
        let o = reference_row(&q, &k, &v, s, 0, 0);
        assert!(o.iter().all(|&x| (x - 2.0).abs() < 1e-12));
        k[D..].iter_mut().for_each(|x| *x = 1.0); // score √128 ≈ 11.3 for key 1
        let o = reference_row(&q, &k, &v, s, 0, 0);
        assert!(o.iter().all(|&x| (x - 3.0).abs() < 1e-4));
    }
}
