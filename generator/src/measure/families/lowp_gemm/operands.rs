//! The quantized inputs of each format — codes and scales on the host and on the device — and the
//! references computed from them.
//!
//! Why from the codes: the f64 reference must multiply exactly the numbers the tensor cores
//! multiplied, so it reads the codes (decoded by the same table `quant.rs` pins) and the scales,
//! never the floats they were quantized from.

use crate::measure::gpu::{DevBuf, Gpu};
use crate::measure::harness::Res;
use crate::measure::quant::{e4m3_value, quantize_rows_par, quantize_tensor_par, Format};
use crate::measure::reference::{mix, par_chunks_mut, random_bf16, random_vec};

/// How a format's inputs are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// E4M3, one scale for each whole tensor.
    Fp8Tensor,
    /// E4M3, one scale per row of A (token) and per row of Bᵀ (output channel).
    Fp8Rowwise,
    /// INT8 per-row codes (the sums are checked and output unscaled).
    Int8,
    /// BF16 values (the cuBLAS BF16 baseline).
    Bf16,
}

/// One operand: its bytes (codes, or BF16 bits as bytes), per-row scales, and device copies.
pub(super) struct Operand {
    pub(super) codes: Vec<u8>,
    pub(super) scales: Vec<f32>,
    pub(super) dev: DevBuf,
    /// The scales on the device (one per row; a per-tensor format repeats its one scale).
    pub(super) dev_scales: DevBuf,
}

/// A and Bᵀ in one format.
pub(super) struct Pair {
    pub(super) kind: Kind,
    pub(super) a: Operand,
    pub(super) bt: Operand,
    pub(super) k: usize,
}

/// Draw A (m × k) and Bᵀ (n × k) uniform in [-1, 1) from `seed`, quantize them as `kind` says,
/// and upload codes and scales.
pub(super) fn make(gpu: &Gpu, kind: Kind, m: usize, n: usize, k: usize, seed: u64) -> Res<Pair> {
    let one = |rows: usize, s: u64| -> Res<Operand> {
        let (codes, scales) = match kind {
            Kind::Bf16 => {
                let (bits, _) = random_bf16(rows * k, s, -1.0, 1.0);
                let bytes = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
                (bytes, vec![1.0; rows])
            }
            _ => {
                let w = random_vec(rows * k, s, -1.0, 1.0);
                let q = match kind {
                    Kind::Fp8Tensor => quantize_tensor_par(&w, rows, k, Format::Fp8),
                    Kind::Fp8Rowwise => quantize_rows_par(&w, rows, k, Format::Fp8),
                    _ => quantize_rows_par(&w, rows, k, Format::Int8),
                };
                (q.codes, q.scales)
            }
        };
        let dev = gpu.alloc(codes.len())?;
        gpu.upload_bytes(&dev, &codes)?;
        let dev_scales = gpu.alloc_f32(rows)?;
        gpu.upload_f32(&dev_scales, &scales)?;
        Ok(Operand {
            codes,
            scales,
            dev,
            dev_scales,
        })
    };
    Ok(Pair {
        kind,
        a: one(m, seed ^ 0xa)?,
        bt: one(n, seed ^ 0xb)?,
        k,
    })
}

/// The exact value of one input element as the tensor cores read it (scale not applied).
fn value(kind: Kind, codes: &[u8], idx: usize) -> f64 {
    match kind {
        Kind::Fp8Tensor | Kind::Fp8Rowwise => e4m3_value(codes[idx]) as f64,
        Kind::Int8 => codes[idx] as i8 as f64,
        Kind::Bf16 => {
            let bits = u16::from_le_bytes([codes[2 * idx], codes[2 * idx + 1]]);
            crate::measure::reference::bf16_value(bits) as f64
        }
    }
}

impl Pair {
    /// Σ_k a[i,k]·bt[j,k] over the values the tensor cores read (exact in f64 for INT8 and FP8:
    /// every product and partial sum fits its 53 bits).
    pub(super) fn dot(&self, i: usize, j: usize) -> f64 {
        let k = self.k;
        (0..k)
            .map(|t| value(self.kind, &self.a.codes, i * k + t) * value(self.kind, &self.bt.codes, j * k + t))
            .sum()
    }

    /// Entry (i, j) of the scaled product: s_a[i] · s_b[j] · Σ q_a q_b (INT8: the raw sum).
    pub(super) fn entry(&self, i: usize, j: usize) -> f64 {
        let s = match self.kind {
            Kind::Fp8Tensor | Kind::Fp8Rowwise => self.a.scales[i] as f64 * self.bt.scales[j] as f64,
            Kind::Int8 | Kind::Bf16 => 1.0,
        };
        s * self.dot(i, j)
    }
}

/// `samples` (i, j) positions of an m × n output drawn from `seed` (the same for every variant
/// of a check, so their errors are comparable).
pub(super) fn sample_positions(m: usize, n: usize, samples: usize, seed: u64) -> Vec<(usize, usize)> {
    (0..samples as u64)
        .map(|s| {
            let h = mix(seed ^ mix(s));
            ((h % m as u64) as usize, ((h >> 32) % n as u64) as usize)
        })
        .collect()
}

/// The reference value of every sampled position (scaled as `Pair::entry`), on all cores.
pub(super) fn sampled_refs(pair: &Pair, pairs: &[(usize, usize)]) -> Vec<f64> {
    let mut refs = vec![0f64; pairs.len()];
    par_chunks_mut(&mut refs, |start, part| {
        for (o, r) in part.iter_mut().enumerate() {
            let (i, j) = pairs[start + o];
            *r = pair.entry(i, j);
        }
    });
    refs
}

/// ‖out − ref‖ / ‖ref‖ over sampled entries, `out(i, j)` read from the downloaded output; any
/// non-finite entry makes it infinite.
pub(super) fn sampled_rel(pairs: &[(usize, usize)], refs: &[f64], out: impl Fn(usize, usize) -> f64) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (&(i, j), &r) in pairs.iter().zip(refs) {
        let o = out(i, j);
        if !o.is_finite() {
            return f64::INFINITY;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    ratio(num, den)
}

/// √(num / den), 0 for 0 / 0, infinite for x / 0.
fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 {
        (num / den).sqrt()
    } else if num == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// The worst block's ‖out − ref‖ / ‖ref‖ over `bm` × `bn` blocks of two m × n outputs: a wrong
/// tile, box or fragment stands out at O(1) however large the matrix is (a whole-matrix norm
/// would dilute one bad block of 8192 below the tolerance).
pub(super) fn worst_block_rel(
    out: &[f32],
    reference: &[f32],
    m: usize,
    n: usize,
    bm: usize,
    bn: usize,
) -> f64 {
    if out.len() != m * n || reference.len() != m * n {
        return f64::INFINITY;
    }
    let mut worst = 0f64;
    for bi in (0..m).step_by(bm) {
        for bj in (0..n).step_by(bn) {
            let (mut num, mut den) = (0f64, 0f64);
            for i in bi..(bi + bm).min(m) {
                for j in bj..(bj + bn).min(n) {
                    let (o, r) = (out[i * n + j] as f64, reference[i * n + j] as f64);
                    if !o.is_finite() || !r.is_finite() {
                        return f64::INFINITY;
                    }
                    num += (o - r) * (o - r);
                    den += r * r;
                }
            }
            worst = worst.max(ratio(num, den));
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_wrong_block_is_caught_however_large_the_output() {
        let (m, n) = (1024, 1024);
        let reference: Vec<f32> = (0..m * n).map(|i| 1.0 + (i % 7) as f32).collect();
        let mut out = reference.clone();
        assert_eq!(worst_block_rel(&out, &reference, m, n, 128, 64), 0.0);
        // One 128 × 64 block of 128 doubled: the whole-matrix error would be under 9e-2.
        for i in 128..256 {
            for j in 64..128 {
                out[i * n + j] *= 2.0;
            }
        }
        assert!((worst_block_rel(&out, &reference, m, n, 128, 64) - 1.0).abs() < 1e-12);
        out[5] = f32::NAN;
        assert!(worst_block_rel(&out, &reference, m, n, 128, 64).is_infinite());
    }

    #[test]
    fn sampled_rel_is_zero_when_equal_and_sees_a_nan() {
        let pos = sample_positions(64, 32, 100, 7);
        assert!(pos.iter().all(|&(i, j)| i < 64 && j < 32));
        let refs: Vec<f64> = pos.iter().map(|&(i, j)| (i * j + 1) as f64).collect();
        assert_eq!(sampled_rel(&pos, &refs, |i, j| (i * j + 1) as f64), 0.0);
        assert!(sampled_rel(&pos, &refs, |i, j| (i * j) as f64) > 0.0);
        assert!(sampled_rel(&pos, &refs, |_, _| f64::NAN).is_infinite());
    }
}
