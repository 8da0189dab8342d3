//! BF16 bit patterns: rounding to them, reading them, random BF16 inputs with their exact
//! values, and BF16 outputs as f32.

use super::parallel::{par_chunks_mut, threads};
use super::random::uniform;
use std::thread;

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
    crate::measure::prof::timed(crate::measure::prof::Op::Random, || {
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
