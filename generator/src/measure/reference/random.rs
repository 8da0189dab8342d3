//! Reproducible random inputs: a counter-based generator, so element i of a stream is the same
//! whichever thread writes it, and a seed per item derived from a label.

use super::parallel::par_chunks_mut;

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

/// The run's input seed: `$HDLC_SEED` if set (to reproduce a failure), else the clock, so
/// every run draws fresh inputs.
pub fn base_seed() -> u64 {
    std::env::var("HDLC_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// Derive a seed from a base seed and a label (e.g. "sgemm/sgemm_naive/m=1024").
pub fn seed_for(base: u64, label: &str) -> u64 {
    let mut h = mix(base);
    for b in label.bytes() {
        h = mix(h ^ b as u64);
    }
    h
}

/// `n` uniform floats in [lo, hi) from stream `seed`.
pub fn random_vec(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    crate::measure::prof::timed(crate::measure::prof::Op::Random, || {
        let mut v = vec![0f32; n];
        par_chunks_mut(&mut v, |start, part| {
            for (j, x) in part.iter_mut().enumerate() {
                *x = uniform(seed, (start + j) as u64, lo, hi);
            }
        });
        v
    })
}
