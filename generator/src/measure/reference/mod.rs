//! CPU side of verification: random inputs, f64 references, and the error measure.
//!
//! Every variant is checked before it is timed, on fresh random inputs, against a reference
//! computed here in f64 (or, for large matrix products, against cuBLAS — itself checked against
//! f64 at a small size). The measure is ‖out − ref‖ / ‖ref‖ over all elements; a NaN anywhere
//! (the harness fills outputs with NaN before the check run) makes it infinite, so an unwritten
//! element can never pass.
//!
//! The large references run on all CPU cores with scoped threads: a 1 GiB input is 2^28 floats.

use std::thread;

/// splitmix64: a tiny, good-enough 64-bit mixer. Counter-based use (element i of stream `seed`
/// is `mix(seed + i·γ)`) makes parallel generation trivially reproducible.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform float in [lo, hi) for element `i` of stream `seed` (24 random bits).
pub fn uniform(seed: u64, i: u64, lo: f32, hi: f32) -> f32 {
    let u = (mix(seed ^ mix(i)) >> 40) as f32 * (1.0 / (1u64 << 24) as f32);
    lo + (hi - lo) * u
}

/// Derive a seed from a base seed and a label (e.g. "sgemm/sgemm_naive/m=1024").
pub fn seed_for(base: u64, label: &str) -> u64 {
    let mut h = mix(base);
    for b in label.bytes() {
        h = mix(h ^ b as u64);
    }
    h
}

fn threads() -> usize {
    thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(64)
}

/// Run `f(start, chunk)` over disjoint chunks of `data` on all cores. Split even when `data` is
/// short: an element may stand for a whole row (row statistics, a GEMV row), so its length says
/// nothing about the work; a thread costs microseconds.
pub fn par_chunks_mut<T: Send>(data: &mut [T], f: impl Fn(usize, &mut [T]) + Sync) {
    let n = data.len();
    let t = threads();
    if t <= 1 || n < 2 * t {
        f(0, data);
        return;
    }
    let chunk = n.div_ceil(t);
    thread::scope(|s| {
        for (k, part) in data.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || f(k * chunk, part));
        }
    });
}

/// Sum `f(i)` for i in 0..n on all cores (each thread sums its range, then the partial sums add).
pub fn par_sum(n: usize, f: impl Fn(usize) -> f64 + Sync) -> f64 {
    let t = threads();
    if t <= 1 || n < 1 << 16 {
        return (0..n).map(&f).sum();
    }
    let chunk = n.div_ceil(t);
    thread::scope(|s| {
        let handles: Vec<_> = (0..t)
            .map(|k| {
                let f = &f;
                s.spawn(move || (k * chunk..((k + 1) * chunk).min(n)).map(f).sum::<f64>())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(f64::NAN)).sum()
    })
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

/// `n` uniform floats in [lo, hi) from stream `seed`.
pub fn random_vec(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    super::prof::timed(super::prof::Op::Random, || {
        let mut v = vec![0f32; n];
        par_chunks_mut(&mut v, |start, part| {
            for (j, x) in part.iter_mut().enumerate() {
                *x = uniform(seed, (start + j) as u64, lo, hi);
            }
        });
        v
    })
}

/// ‖out − ref‖ / ‖ref‖ with `reference(i)` computed on the fly (so no f64 copy of a 1 GiB
/// reference is ever stored). NaN or infinity anywhere in `out` gives +∞.
pub fn rel_error_fn<T: OutElem>(out: &[T], reference: impl Fn(usize) -> f64 + Sync) -> f64 {
    super::prof::timed(super::prof::Op::Compare, || {
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

fn rel_from(num: f64, den: f64, bad: bool) -> f64 {
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

// ---- references, f64 -------------------------------------------------------------------------

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
    super::prof::timed(super::prof::Op::Reference, || {
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

// ---- BF16 ------------------------------------------------------------------------------------

/// The BF16 bit pattern nearest to `x` (round to nearest, ties to even; NaN stays NaN).
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x0040;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

/// The value of a BF16 bit pattern.
pub fn bf16_value(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// `n` BF16 numbers drawn uniformly from [lo, hi) (stream `seed`): the bit patterns for the
/// device and their exact values for the references, so a reference sees precisely the inputs
/// the kernel sees and the error measures only the kernel's arithmetic.
pub fn random_bf16(n: usize, seed: u64, lo: f32, hi: f32) -> (Vec<u16>, Vec<f32>) {
    super::prof::timed(super::prof::Op::Random, || {
        let mut vals = vec![0f32; n];
        let mut bits = vec![0u16; n];
        // One pass writing both arrays (the host's memory bandwidth is what these cost).
        let t = threads();
        let chunk = n.div_ceil(t.max(1)).max(1);
        thread::scope(|s| {
            for (c, (vp, bp)) in vals.chunks_mut(chunk).zip(bits.chunks_mut(chunk)).enumerate() {
                s.spawn(move || {
                    for (j, (v, b)) in vp.iter_mut().zip(bp.iter_mut()).enumerate() {
                        *b = bf16_bits(uniform(seed, (c * chunk + j) as u64, lo, hi));
                        *v = bf16_value(*b);
                    }
                });
            }
        });
        (bits, vals)
    })
}

/// [`bf16_to_f32`] into a buffer the caller keeps (a check that converts a half-gigabyte output
/// per variant would otherwise fault in fresh pages every time).
pub fn bf16_to_f32_into(bits: &[u16], out: &mut Vec<f32>) {
    crate::measure::prof::timed(crate::measure::prof::Op::Convert, || {
        out.resize(bits.len(), 0.0);
        par_chunks_mut(&mut out[..], |start, part| {
            for (j, v) in part.iter_mut().enumerate() {
                *v = bf16_value(bits[start + j]);
            }
        });
    })
}

/// BF16 outputs as f32 (NaN patterns stay NaN, so unwritten elements still fail).
pub fn bf16_to_f32(bits: &[u16]) -> Vec<f32> {
    let mut out = Vec::new();
    bf16_to_f32_into(bits, &mut out);
    out
}

// ---- attention -------------------------------------------------------------------------------

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

// ---- RMSNorm backward --------------------------------------------------------------------------

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
