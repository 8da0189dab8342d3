//! The error measure ‖out − ref‖ / ‖ref‖ in its forms (stored reference, reference computed on
//! the fly, sampled entries, per-part sums), the pass rule, and the percentiles of a timing.
//!
//! Why NaN is infinite here: the harness fills outputs with NaN before the check run, so an
//! element the kernel never wrote makes the error infinite and can never pass.

use super::bf16::bf16_value;
use super::parallel::threads;
use super::random::mix;
use std::thread;

/// ‖out − ref‖ / ‖ref‖ with `reference(i)` computed on the fly (so no f64 copy of a 1 GiB
/// reference is ever stored). NaN or infinity anywhere in `out` gives +∞.
pub fn rel_error_fn<T: OutElem>(out: &[T], reference: impl Fn(usize) -> f64 + Sync) -> f64 {
    crate::measure::prof::timed(crate::measure::prof::Op::Compare, || {
        let n = out.len();
        if n == 0 {
            return f64::INFINITY;
        }
        // One part per core, each a contiguous run of the output.
        let chunk = n.div_ceil(threads().max(1));
        par_sum_triple(n.div_ceil(chunk), |k| {
            let (mut num, mut den) = (0f64, 0f64);
            let start = k * chunk;
            for (j, &o) in out[start..(start + chunk).min(n)].iter().enumerate() {
                let o = o.value();
                if !o.is_finite() {
                    return (num, den, true);
                }
                let r = reference(start + j);
                let d = o as f64 - r;
                num += d * d;
                den += r * r;
            }
            (num, den, false)
        })
    })
}

/// An output element a check reads: an `f32`, or a BF16 bit pattern (`u16`) read as its value
/// where it is used, so a half-gigabyte BF16 output is never converted to a second array first.
pub trait OutElem: Copy + Sync {
    fn value(self) -> f32;
}

impl OutElem for f32 {
    fn value(self) -> f32 {
        self
    }
}

impl OutElem for u16 {
    fn value(self) -> f32 {
        bf16_value(self)
    }
}

/// ‖out − ref‖ / ‖ref‖ against a stored reference of the same length.
pub fn rel_error(out: &[f32], reference: &[f64]) -> f64 {
    if out.len() != reference.len() {
        return f64::INFINITY;
    }
    rel_error_fn(out, |i| reference[i])
}

/// ‖out − ref‖ / ‖ref‖ against an f32 reference (e.g. cuBLAS output, or an exact copy).
pub fn rel_error_f32<T: OutElem>(out: &[T], reference: &[f32]) -> f64 {
    if out.len() != reference.len() || reference.iter().any(|r| !r.is_finite()) {
        return f64::INFINITY;
    }
    rel_error_fn(out, |i| reference[i] as f64)
}

pub(super) fn rel_from(num: f64, den: f64, bad: bool) -> f64 {
    if bad || num.is_nan() || den.is_nan() {
        f64::INFINITY
    } else if den == 0.0 {
        if num == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (num / den).sqrt()
    }
}

/// Whether a verification passes: finite and within tolerance (NaN never passes).
pub fn passes(rel: f64, tol: f64) -> bool {
    rel.is_finite() && rel <= tol
}

/// ‖out − ref‖ / ‖ref‖ from per-part sums: `f(i)` for i in 0..n returns one part's (Σ (out − ref)²,
/// Σ ref², any non-finite output); the parts run on all cores. For checks that must walk the
/// output in their own order (tiles of a transpose).
pub fn par_sum_triple(n: usize, f: impl Fn(usize) -> (f64, f64, bool) + Sync) -> f64 {
    let t = threads().max(1);
    let chunk = n.div_ceil(t).max(1);
    let parts: Vec<(f64, f64, bool)> = thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|start| {
                let f = &f;
                s.spawn(move || {
                    (start..(start + chunk).min(n))
                        .map(f)
                        .fold((0.0, 0.0, false), |a, p| (a.0 + p.0, a.1 + p.1, a.2 || p.2))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or((0.0, 0.0, true)))
            .collect()
    });
    let (num, den, bad) = parts
        .iter()
        .fold((0.0, 0.0, false), |a, p| (a.0 + p.0, a.1 + p.1, a.2 || p.2));
    rel_from(num, den, bad || n == 0)
}

/// ‖c − ref‖ / ‖ref‖ over `samples` entries of an m × n row-major matrix chosen from `seed`,
/// ref = `entry(i, j)` in f64 (a GEMM check: each entry is a dot product of length K). A
/// non-finite sampled entry gives +∞.
pub fn sampled_entries_rel(
    c: &[f32],
    m: usize,
    n: usize,
    samples: usize,
    seed: u64,
    entry: impl Fn(usize, usize) -> f64,
) -> f64 {
    crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
        let (mut num, mut den) = (0f64, 0f64);
        for s in 0..samples as u64 {
            let h = mix(seed ^ mix(s));
            let (i, j) = ((h % m as u64) as usize, ((h >> 32) % n as u64) as usize);
            let (o, r) = (c[i * n + j], entry(i, j));
            if !o.is_finite() {
                return f64::INFINITY;
            }
            num += (o as f64 - r).powi(2);
            den += r * r;
        }
        if den == 0.0 {
            f64::INFINITY
        } else {
            (num / den).sqrt()
        }
    })
}

/// The median and the 10th / 90th percentiles of a sample (nearest-rank on the sorted sample).
pub fn percentiles(samples: &[f64]) -> (f64, f64, f64) {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    s.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let pos = q * (s.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
    };
    (at(0.5), at(0.1), at(0.9))
}
