//! ssm_scan: the selective scan of a Mamba-style layer (FP32, D channels, state 16): one decode
//! step (`l = 1`: constant work per token, whatever the context) and a prefill scan over `l`
//! tokens (sequential and chunked), each against a device memcpy in the same run (of the state
//! for the decode step, of x for prefill).
//!
//! Verification, for every variant: 64 channels (the first and the last among them), every
//! batch row and every token, against an f64 scan of the same FP32 inputs — y and the final
//! state — and every y must be finite. The kernels use `__expf`; 1e-3 holds that with room.

use super::super::gpu::{Arg, DevBuf, Gpu, Launch};
use super::super::harness::{check_and_time, Ctx, Fail, Res};
use super::super::kernels::kernel_file;
use super::super::plan::Item;
use super::super::plan::{ladder, params, V};
use super::super::reference::{mix, par_chunks_mut, random_vec, rel_error};
use super::super::results::{FailStage, Timing};
use super::Family;
use super::{blocks, memcpy_baseline_bytes};

pub(crate) const FAMILY: Family = Family {
    name: "ssm_scan",
    sources: &[kernel_file!("inference/ssm_scan.cu")],
    items,
    work,
    cublas: &[],
    measure,
};
const FILE: &str = FAMILY.sources[0].path;

/// D = 5120 channels (Mamba 2.8B's inner width), state 16.
pub const SSM_D: u64 = 5120;
pub const SSM_N: u64 = 16;
pub const SSM_DECODE_BATCH: &[u64] = &[1, 8, 32, 64];
pub const SSM_PREFILL_L: &[u64] = &[512, 2048, 8192, 32768];

/// One decode step at each batch (against a memcpy of the state), and prefill scans of growing
/// length (against a memcpy of x).
pub fn items() -> Vec<Item> {
    let mut out = Vec::new();
    for &b in SSM_DECODE_BATCH {
        out.extend(ladder(
            "ssm_scan",
            FILE,
            &[V("decode_step", "decode step: one token, state read and written")],
            &params(&[("b", b), ("d", SSM_D), ("n", SSM_N), ("l", 1)]),
            ("memcpy", "device memcpy of the state (cuMemcpyDtoD)"),
        ));
    }
    for &l in SSM_PREFILL_L {
        out.extend(ladder(
            "ssm_scan",
            FILE,
            &[
                V(
                    "scan_sequential",
                    "prefill: one thread per channel over all tokens",
                ),
                V(
                    "scan_chunked",
                    "prefill: chunks of 128 tokens scanned in parallel, states carried",
                ),
            ],
            &params(&[("b", 1), ("d", SSM_D), ("n", SSM_N), ("l", l)]),
            ("memcpy", "device memcpy of x (cuMemcpyDtoD)"),
        ));
    }
    out
}

/// Per token, channel and state element 7 FLOPs (Δ·A, exp, ·h, Δ·B·x as 2, C·h as 2), plus 2
/// per token and channel (the skip term) — a convention, stated for figures. Bytes (FP32): x, Δ,
/// y per token and channel; B, C per token; A, Dskip; the state (read and written by a decode
/// step, written by a prefill that starts from zero).
pub fn work(item: &Item) -> (f64, f64) {
    let f = |k: &str| item.p(k) as f64;
    let (b, d, n, l) = (f("b"), f("d"), f("n"), f("l"));
    let state = b * d * n * 4.0;
    if item.variant == "memcpy" {
        return (0.0, 2.0 * if l == 1.0 { state } else { 4.0 * b * l * d });
    }
    let flops = b * l * d * (7.0 * n + 2.0);
    let io = 4.0 * (3.0 * b * l * d + 2.0 * b * l * n + d * n + d);
    let st = if l == 1.0 { 2.0 * state } else { state };
    (flops, io + st)
}
const TOL: f64 = 1e-3;
pub const N: usize = 16;
/// Tokens per chunk of scan_chunked.
pub const CHUNK: usize = 128;

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

fn concat<'a>(head: &[Arg<'a>], tail: &[Arg<'a>]) -> Vec<Arg<'a>> {
    head.iter().chain(tail).copied().collect()
}

fn upload(gpu: &Gpu, v: &[f32]) -> anyhow::Result<DevBuf> {
    let b = gpu.alloc_f32(v.len())?;
    gpu.upload_f32(&b, v)?;
    Ok(b)
}

pub fn measure(ctx: &mut Ctx, item: &Item) -> Res<Timing> {
    let (b, l, d) = (item.p("b") as usize, item.p("l") as usize, item.p("d") as usize);
    if item.p("n") as usize != N || (l > 1 && l % CHUNK != 0) {
        return Err(Fail::new(
            FailStage::Unsupported,
            "ssm kernels need state size 16 and, for prefill, l divisible by 128",
        ));
    }
    let seed = ctx.seed(item);
    let gpu = ctx.gpu;
    if item.baseline {
        // The decode step's main traffic is the state, prefill's is x (and Δ, y alike).
        let floats = if l == 1 { b * d * N } else { b * l * d };
        return memcpy_baseline_bytes(gpu, floats * 4, seed);
    }
    let inp = Inputs::random(b, l, d, seed, l == 1);
    let (x, dt, a, bm, cm, ds) = (
        upload(gpu, &inp.x)?,
        upload(gpu, &inp.dt)?,
        upload(gpu, &inp.a)?,
        upload(gpu, &inp.bm)?,
        upload(gpu, &inp.cm)?,
        upload(gpu, &inp.dskip)?,
    );
    let h = upload(gpu, &inp.h0)?;
    let y = gpu.alloc_f32(b * l * d)?;
    let (bi, li, di) = (Arg::I32(b as i32), Arg::I32(l as i32), Arg::I32(d as i32));
    let chunks = l / CHUNK.min(l);
    let (state, dsum) = (
        gpu.alloc_f32((b * chunks * d * N).max(1))?,
        gpu.alloc_f32((b * chunks * d).max(1))?,
    );
    let t_arg = Arg::I32(CHUNK as i32);
    // x, Δ, A, B, C, Dskip: the leading arguments of the decode, sequential and local kernels.
    let ins = [&x, &dt, &a, &bm, &cm, &ds].map(Arg::Buf);
    let mut run: Box<dyn FnMut() -> anyhow::Result<()>> = match item.variant {
        "decode_step" => {
            let k = ctx.kernel(FILE, "ssm_decode_step")?;
            let cfg = Launch::linear(blocks((b * d * N) as u64, 256), 256)?;
            let args = concat(&ins, &[Arg::Buf(&h), Arg::Buf(&y), bi, di]);
            Box::new(move || gpu.launch(&k, cfg, &args))
        }
        "scan_sequential" => {
            let k = ctx.kernel(FILE, "scan_sequential")?;
            let cfg = Launch::linear(blocks((b * d) as u64, 128), 128)?;
            let args = concat(&ins, &[Arg::Buf(&y), Arg::Buf(&h), bi, li, di]);
            Box::new(move || gpu.launch(&k, cfg, &args))
        }
        "scan_chunked" => {
            let (k1, k2, k3) = (
                ctx.kernel(FILE, "scan_chunk_local")?,
                ctx.kernel(FILE, "scan_chunk_carry")?,
                ctx.kernel(FILE, "scan_chunk_fix")?,
            );
            let per_chunk = Launch::linear(blocks((b * chunks * d) as u64, 128), 128)?;
            let per_state = Launch::linear(blocks((b * d * N) as u64, 256), 256)?;
            let a1 = concat(
                &ins,
                &[Arg::Buf(&y), Arg::Buf(&state), Arg::Buf(&dsum), bi, li, di, t_arg],
            );
            let a2 = [
                Arg::Buf(&a),
                Arg::Buf(&state),
                Arg::Buf(&dsum),
                Arg::Buf(&h),
                bi,
                li,
                di,
                t_arg,
            ];
            let a3 = [
                Arg::Buf(&dt),
                Arg::Buf(&a),
                Arg::Buf(&cm),
                Arg::Buf(&state),
                Arg::Buf(&y),
                bi,
                li,
                di,
                t_arg,
            ];
            Box::new(move || {
                gpu.launch(&k1, per_chunk, &a1)?;
                gpu.launch(&k2, per_state, &a2)?;
                gpu.launch(&k3, per_chunk, &a3)
            })
        }
        other => {
            return Err(Fail::new(
                FailStage::Unsupported,
                format!("unknown ssm_scan variant {other}"),
            ))
        }
    };
    check_and_time(gpu, TOL, &[&y], &mut *run, &mut || {
        let out = gpu.download_f32(&y, b * l * d)?;
        let state = gpu.download_f32(&h, b * d * N)?;
        Ok(inp.checked_rel(&out, &state, seed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssm_prefill_lengths_divide_into_chunks() {
        for i in items() {
            assert!(i.p("l") == 1 || i.p("l") % 128 == 0);
        }
    }

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
