//! The host inputs of one scan and the f64 scan every variant is checked against.

use super::N;
use crate::measure::reference::{mix, par_chunks_mut, random_vec, rel_error};

/// Host inputs (FP32) of one scan.
pub struct Inputs {
    pub b: usize,
    pub l: usize,
    pub d: usize,
    pub x: Vec<f32>,
    pub dt: Vec<f32>,
    pub a: Vec<f32>,
    pub bm: Vec<f32>,
    pub cm: Vec<f32>,
    pub dskip: Vec<f32>,
    /// Initial state [b][d][16] (zero for prefill).
    pub h0: Vec<f32>,
}

impl Inputs {
    /// Δ in [0.001, 0.1) (after softplus), A = −(n + 1)·[0.5, 1.5) as in Mamba's S4D-real init,
    /// x, B, C, Dskip in [−1, 1).
    pub fn random(b: usize, l: usize, d: usize, seed: u64, with_state: bool) -> Inputs {
        let scale = random_vec(d * N, seed ^ 3, 0.5, 1.5);
        Inputs {
            b,
            l,
            d,
            x: random_vec(b * l * d, seed ^ 1, -1.0, 1.0),
            dt: random_vec(b * l * d, seed ^ 2, 0.001, 0.1),
            a: scale
                .iter()
                .enumerate()
                .map(|(i, s)| -((i % N) as f32 + 1.0) * s)
                .collect(),
            bm: random_vec(b * l * N, seed ^ 4, -1.0, 1.0),
            cm: random_vec(b * l * N, seed ^ 5, -1.0, 1.0),
            dskip: random_vec(d, seed ^ 6, -1.0, 1.0),
            h0: if with_state {
                random_vec(b * d * N, seed ^ 7, -1.0, 1.0)
            } else {
                vec![0.0; b * d * N]
            },
        }
    }

    /// f64 scan of channel `ch` of row `row`: y over all tokens, and the final state.
    pub fn reference(&self, row: usize, ch: usize) -> (Vec<f64>, Vec<f64>) {
        let mut h: Vec<f64> = (0..N)
            .map(|n| self.h0[(row * self.d + ch) * N + n] as f64)
            .collect();
        let mut y = Vec::with_capacity(self.l);
        for t in 0..self.l {
            let xt = (row * self.l + t) * self.d + ch;
            let (delta, xv) = (self.dt[xt] as f64, self.x[xt] as f64);
            let mut out = self.dskip[ch] as f64 * xv;
            for (n, hn) in h.iter_mut().enumerate() {
                let bc = (row * self.l + t) * N + n;
                *hn = (delta * self.a[ch * N + n] as f64).exp() * *hn + delta * self.bm[bc] as f64 * xv;
                out += self.cm[bc] as f64 * *hn;
            }
            y.push(out);
        }
        (y, h)
    }

    /// Relative error of y ([b][l][d]) and the final state ([b][d][16]) over sampled channels.
    pub fn checked_rel(&self, y: &[f32], h: &[f32], seed: u64) -> f64 {
        crate::measure::prof::timed(crate::measure::prof::Op::Reference, || {
            if y.iter().chain(h).any(|v| !v.is_finite()) {
                return f64::INFINITY;
            }
            let mut chans = vec![0, self.d - 1];
            chans.extend((0..62u64).map(|s| (mix(seed ^ mix(s)) % self.d as u64) as usize));
            // Each (row, channel) scan is sequential over the tokens; the scans run on all cores.
            let pairs: Vec<(usize, usize)> = (0..self.b)
                .flat_map(|row| chans.iter().map(move |&ch| (row, ch)))
                .collect();
            let mut refs = vec![(Vec::new(), Vec::new()); pairs.len()];
            par_chunks_mut(&mut refs, |start, part| {
                for (j, r) in part.iter_mut().enumerate() {
                    let (row, ch) = pairs[start + j];
                    *r = self.reference(row, ch);
                }
            });
            let (mut got, mut want) = (Vec::new(), Vec::new());
            for (&(row, ch), (yr, hr)) in pairs.iter().zip(refs) {
                for (t, v) in yr.into_iter().enumerate() {
                    got.push(y[(row * self.l + t) * self.d + ch]);
                    want.push(v);
                }
                for (n, v) in hr.into_iter().enumerate() {
                    got.push(h[(row * self.d + ch) * N + n]);
                    want.push(v);
                }
            }
            rel_error(&got, &want)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunked algorithm of the kernels (local scans from zero, carried states, the
    /// correction C·exp(A·ΣΔ)·h_in), run on the CPU, equals the sequential scan.
    #[test]
    #[allow(clippy::needless_range_loop)] // index arithmetic mirrors the kernels
    fn chunked_scan_identity_holds() {
        let (l, d, t) = (64, 3, 16);
        let inp = Inputs::random(1, l, d, 11, false);
        for ch in 0..d {
            let (y_ref, h_ref) = inp.reference(0, ch);
            let mut carry = [0f64; N];
            let mut y = vec![0f64; l];
            for c in 0..l / t {
                let hin = carry;
                let mut h = [0f64; N];
                let mut cum = 0.0;
                for tt in c * t..(c + 1) * t {
                    let xt = tt * d + ch;
                    let (delta, xv) = (inp.dt[xt] as f64, inp.x[xt] as f64);
                    cum += delta;
                    let mut out = inp.dskip[ch] as f64 * xv;
                    for n in 0..N {
                        let a = inp.a[ch * N + n] as f64;
                        h[n] = (delta * a).exp() * h[n] + delta * inp.bm[tt * N + n] as f64 * xv;
                        out += inp.cm[tt * N + n] as f64 * (h[n] + (a * cum).exp() * hin[n]);
                    }
                    y[tt] = out;
                }
                for n in 0..N {
                    carry[n] = (inp.a[ch * N + n] as f64 * cum).exp() * hin[n] + h[n];
                }
            }
            for (a, b) in y.iter().zip(&y_ref) {
                assert!((a - b).abs() < 1e-9, "{a} vs {b}");
            }
            for n in 0..N {
                assert!((carry[n] - h_ref[n]).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn decode_state_is_bounded_and_checked() {
        let inp = Inputs::random(2, 1, 8, 5, true);
        let (y, h) = inp.reference(1, 7);
        assert_eq!((y.len(), h.len()), (1, N));
        assert!(h.iter().all(|v| v.abs() < 2.0));
        let yb = vec![0f32; 16];
        let hb = vec![f32::NAN; 2 * 8 * N];
        assert!(inp.checked_rel(&yb, &hb, 1).is_infinite());
    }
}
