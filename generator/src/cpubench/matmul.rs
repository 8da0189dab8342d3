//! The CPU matrix-product ladder, C = A·B on square row-major f32 matrices, each rung adding
//! one idea:
//!
//! 1. `naive` — the textbook i-j-k triple loop: B is read down a column, one cache line per
//!    multiply-add, and every add waits for the previous one. One core.
//! 2. `blocked` — i-k-j order (the inner loop walks rows of B and C, so it vectorizes) inside
//!    cache blocks, so a block of B is reused from L2 by many rows of A. One core.
//! 3. `simd` — the BLIS/GotoBLAS structure: A and B are packed into contiguous panels and a
//!    register-tiled micro-kernel keeps an MR × NR tile of C in vector registers for a whole
//!    K-panel. The micro-kernel is plain Rust on fixed-size arrays (`[[f32; NR]; MR]`, panels
//!    viewed with `as_chunks`, so no bounds checks) that LLVM turns into vector FMAs; on x86-64
//!    the whole loop nest is compiled a second time with AVX2+FMA enabled and picked at run
//!    time. Rows of C are split over all cores.
//! 4. baseline — the `matrixmultiply` crate's sgemm (the same structure with hand-written
//!    intrinsics kernels; used by ndarray), multi-threaded.
//!
//! Every rung is checked against an f64 reference before it is timed.

use super::timing::{check_then_time, rel_error, Policy, Work};
use crate::measure::reference::uniform;
use crate::measure::results::Outcome;
use std::thread;

/// f32 results of an n = 1024 product are within ~1e-6 of f64; 1e-4 leaves room for any order
/// of summation and still catches a wrong element.
pub const TOLERANCE: f64 = 1e-4;

/// A matrix-product kernel: `c = a·b` for n × n row-major matrices, on `threads` threads.
pub type MatmulFn = fn(a: &[f32], b: &[f32], c: &mut [f32], n: usize, threads: usize);

/// A kernel under test as the harness calls it: `c = a·b` at the problem's size.
pub type Kernel<'a> = dyn FnMut(&[f32], &[f32], &mut [f32]) + 'a;

/// Inputs of one size, their f64 reference, and an output buffer.
pub struct Problem {
    pub n: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub c: Vec<f32>,
    pub reference: Vec<f64>,
}

impl Problem {
    /// Fresh random inputs in [-1, 1) from `seed`, and their f64 product.
    pub fn new(n: usize, seed: u64, threads: usize) -> Problem {
        let a: Vec<f32> = (0..n * n).map(|i| uniform(seed, i as u64, -1.0, 1.0)).collect();
        let b: Vec<f32> = (0..n * n)
            .map(|i| uniform(seed ^ 0xB, i as u64, -1.0, 1.0))
            .collect();
        let reference = reference_f64(&a, &b, n, threads);
        Problem {
            n,
            a,
            b,
            c: vec![0.0; n * n],
            reference,
        }
    }

    /// Poison C, run `kernel` once, and return ‖C − ref‖ / ‖ref‖.
    pub fn check(&mut self, kernel: &mut Kernel) -> f64 {
        self.c.fill(f32::NAN);
        kernel(&self.a, &self.b, &mut self.c);
        rel_error(&self.c, |i| self.reference[i])
    }

    /// Check, then time `kernel` on this problem (flops = 2n³, bytes = 3n²·4: read A and B,
    /// write C once, the fewest a matrix product can move).
    pub fn measure(&mut self, policy: &Policy, kernel: &mut Kernel) -> Outcome {
        let n = self.n as f64;
        let work = Work {
            flops: 2.0 * n * n * n,
            bytes: 3.0 * n * n * 4.0,
        };
        check_then_time(
            policy,
            TOLERANCE,
            work,
            &mut (self, kernel),
            |(p, kernel)| p.check(*kernel),
            |(p, kernel)| kernel(&p.a, &p.b, &mut p.c),
        )
    }
}

/// C = A·B in f64, i-k-j order, rows split over threads.
pub fn reference_f64(a: &[f32], b: &[f32], n: usize, threads: usize) -> Vec<f64> {
    let mut c = vec![0f64; n * n];
    if n == 0 {
        return c;
    }
    let rows = n.div_ceil(threads.max(1));
    thread::scope(|s| {
        for (t, part) in c.chunks_mut(rows * n).enumerate() {
            s.spawn(move || {
                for (r, crow) in part.chunks_mut(n).enumerate() {
                    let i = t * rows + r;
                    for (k, &aik) in a[i * n..(i + 1) * n].iter().enumerate() {
                        let aik = aik as f64;
                        for (cv, &bv) in crow.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                            *cv += aik * bv as f64;
                        }
                    }
                }
            });
        }
    });
    c
}

// ---- rung 1: naive ---------------------------------------------------------------------------

/// The textbook triple loop, i-j-k, one core.
pub fn naive(a: &[f32], b: &[f32], c: &mut [f32], n: usize, _threads: usize) {
    for i in 0..n {
        for j in 0..n {
            let mut sum = 0f32;
            for k in 0..n {
                sum += a[i * n + k] * b[k * n + j];
            }
            c[i * n + j] = sum;
        }
    }
}

// ---- rung 2: cache-blocked, i-k-j --------------------------------------------------------------

/// Rows of A per block.
const BI: usize = 64;
/// Depth per block: a BK × BJ block of B (128 KiB) stays in L2 while BI rows use it.
const BK: usize = 128;
/// Columns per block: a BJ-long row piece of C (1 KiB) stays in L1 over the k loop.
const BJ: usize = 256;

/// Cache blocking with an i-k-j inner order, one core.
pub fn blocked(a: &[f32], b: &[f32], c: &mut [f32], n: usize, _threads: usize) {
    c.fill(0.0);
    for i0 in (0..n).step_by(BI) {
        let i1 = (i0 + BI).min(n);
        for k0 in (0..n).step_by(BK) {
            let k1 = (k0 + BK).min(n);
            for j0 in (0..n).step_by(BJ) {
                let j1 = (j0 + BJ).min(n);
                for i in i0..i1 {
                    let crow = &mut c[i * n + j0..i * n + j1];
                    for k in k0..k1 {
                        let aik = a[i * n + k];
                        let brow = &b[k * n + j0..k * n + j1];
                        for (cv, &bv) in crow.iter_mut().zip(brow) {
                            *cv += aik * bv;
                        }
                    }
                }
            }
        }
    }
}

// ---- rung 3: packed panels + register-tiled micro-kernel ----------------------------------------

/// Rows of the register tile: 6 × 16 f32 = 12 AVX2 registers of accumulators (of 16), leaving
/// room for one row of B (2 registers) and a broadcast of A.
pub const MR: usize = 6;
/// Columns of the register tile (two 8-wide AVX2 vectors, four 4-wide NEON vectors).
pub const NR: usize = 16;
/// Depth of a packed panel: an MR × KC sliver of A plus a KC × NR sliver of B (≈ 22 KiB) fit L1.
const KC: usize = 256;
/// Rows of A packed at once: MC × KC floats (144 KiB) stay in L2.
const MC: usize = 144;
/// Columns of B packed at once: KC × NC floats (1 MiB) stay in L2/L3.
const NC: usize = 1024;

/// The instruction set the micro-kernel was compiled for on this machine.
pub fn simd_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return "AVX2+FMA";
        }
        "SSE2"
    }
    #[cfg(target_arch = "aarch64")]
    {
        "NEON"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "portable"
    }
}

/// c += a·b, fused where the target has FMA (`mul_add` without hardware FMA is a slow libm call).
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        c + a * b
    }
}

/// The micro-kernel: `acc += A·B` for one MR × NR tile over one packed panel pair; `a[p]` is
/// column p of the A sliver, `b[p]` row p of the B sliver. With everything a fixed-size array
/// the two inner loops unroll completely and the tile lives in vector registers (12 on AVX2).
#[inline(always)]
fn micro_tile<const FMA: bool>(a: &[[f32; MR]], b: &[[f32; NR]], tile: &mut [[f32; NR]; MR]) {
    let mut acc = *tile;
    for (ap, bp) in a.iter().zip(b) {
        for (row, &ai) in acc.iter_mut().zip(ap) {
            for (c, &bj) in row.iter_mut().zip(bp) {
                *c = madd::<FMA>(ai, bj, *c);
            }
        }
    }
    *tile = acc;
}

/// Pack rows `i0..i0+mc`, columns `p0..p0+kc` of the row-major `a` (row length `lda`) into
/// MR-row slivers, each `kc` columns of MR values; rows past `mc` are zero.
#[inline(always)]
fn pack_a(a: &[f32], lda: usize, i0: usize, mc: usize, p0: usize, kc: usize, out: &mut [[f32; MR]]) {
    for (s, sliver) in out.chunks_mut(kc).take(mc.div_ceil(MR)).enumerate() {
        let rows: [&[f32]; MR] = std::array::from_fn(|r| {
            let i = s * MR + r;
            if i < mc {
                &a[(i0 + i) * lda + p0..][..kc]
            } else {
                &[]
            }
        });
        for (p, col) in sliver.iter_mut().enumerate() {
            for (v, row) in col.iter_mut().zip(rows) {
                *v = row.get(p).copied().unwrap_or(0.0);
            }
        }
    }
}

/// Pack rows `p0..p0+kc`, columns `j0..j0+nc` of the row-major `b` (row length `ldb`) into
/// NR-column slivers, each `kc` rows of NR values; columns past `nc` are zero.
#[inline(always)]
fn pack_b(b: &[f32], ldb: usize, p0: usize, kc: usize, j0: usize, nc: usize, out: &mut [[f32; NR]]) {
    for (s, sliver) in out.chunks_mut(kc).take(nc.div_ceil(NR)).enumerate() {
        let j = s * NR;
        let w = NR.min(nc - j);
        for (p, row) in sliver.iter_mut().enumerate() {
            let src = &b[(p0 + p) * ldb + j0 + j..][..w];
            match <&[f32; NR]>::try_from(src) {
                Ok(full) => *row = *full,
                Err(_) => {
                    row[..w].copy_from_slice(src);
                    row[w..].fill(0.0);
                }
            }
        }
    }
}

/// The top-left mr × nr corner of `tile` from C (or zeros: the first K-panel starts from
/// nothing, so C's old contents, poison included, are never read), `c` starting at the tile's
/// corner with rows `ldc` apart. Full tiles copy fixed-size rows (vector moves, no memcpy call).
#[inline(always)]
fn load_tile(c: &[f32], ldc: usize, mr: usize, nr: usize, tile: &mut [[f32; NR]; MR], first: bool) {
    for (r, row) in tile.iter_mut().enumerate() {
        if first || r >= mr {
            *row = [0.0; NR];
        } else if let Ok(full) = <&[f32; NR]>::try_from(&c[r * ldc..][..nr]) {
            *row = *full;
        } else {
            row[..nr].copy_from_slice(&c[r * ldc..][..nr]);
            row[nr..].fill(0.0);
        }
    }
}

/// Write the top-left mr × nr corner of `tile` back to C.
#[inline(always)]
fn store_tile(c: &mut [f32], ldc: usize, mr: usize, nr: usize, tile: &[[f32; NR]; MR]) {
    for (r, row) in tile.iter().enumerate().take(mr) {
        let dst = &mut c[r * ldc..][..nr];
        match <&mut [f32; NR]>::try_from(&mut *dst) {
            Ok(full) => *full = *row,
            Err(_) => dst.copy_from_slice(&row[..nr]),
        }
    }
}

/// C (m × n) = A (m × k) · B (k × n), all row-major and contiguous, on one thread.
#[inline(always)]
fn gemm_body<const FMA: bool>(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) {
    let mut apack = vec![[0f32; MR]; MC.div_ceil(MR) * KC];
    // Each packed row of B is one 64-byte cache line; aligned, no vector load straddles two.
    let mut bbuf = vec![0f32; NC.div_ceil(NR) * KC * NR + NR];
    let skip = bbuf.as_ptr().align_offset(64).min(NR);
    let bpack = bbuf[skip..].as_chunks_mut::<NR>().0;
    for j0 in (0..n).step_by(NC) {
        let nc = NC.min(n - j0);
        for p0 in (0..k).step_by(KC) {
            let kc = KC.min(k - p0);
            pack_b(b, n, p0, kc, j0, nc, bpack);
            for i0 in (0..m).step_by(MC) {
                let mc = MC.min(m - i0);
                pack_a(a, k, i0, mc, p0, kc, &mut apack);
                for (sj, bs) in bpack.chunks(kc).take(nc.div_ceil(NR)).enumerate() {
                    let nr = NR.min(nc - sj * NR);
                    for (si, asl) in apack.chunks(kc).take(mc.div_ceil(MR)).enumerate() {
                        let mr = MR.min(mc - si * MR);
                        let corner = (i0 + si * MR) * n + j0 + sj * NR;
                        let mut tile = [[0f32; NR]; MR];
                        load_tile(&c[corner..], n, mr, nr, &mut tile, p0 == 0);
                        micro_tile::<FMA>(asl, bs, &mut tile);
                        store_tile(&mut c[corner..], n, mr, nr, &tile);
                    }
                }
            }
        }
    }
    if k == 0 {
        c.fill(0.0);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn gemm_avx2_fma(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) {
    gemm_body::<true>(a, b, c, m, n, k)
}

/// One thread's share: the best compiled copy of the loop nest this CPU can run.
fn gemm_rows(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if simd_isa() == "AVX2+FMA" {
            // SAFETY: the CPU supports AVX2 and FMA (checked at run time just above).
            unsafe { gemm_avx2_fma(a, b, c, m, n, k) };
        } else {
            gemm_body::<false>(a, b, c, m, n, k);
        }
    }
    #[cfg(target_arch = "aarch64")]
    gemm_body::<true>(a, b, c, m, n, k);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    gemm_body::<false>(a, b, c, m, n, k);
}

/// Packed panels and a register-tiled micro-kernel, rows of C split over `threads` threads.
pub fn simd(a: &[f32], b: &[f32], c: &mut [f32], n: usize, threads: usize) {
    simd_mnk(a, b, c, n, n, n, threads);
}

/// `simd` for C (m × n) = A (m × k) · B (k × n), row-major (tests use it to cross every
/// blocking edge at small cost).
pub fn simd_mnk(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize, threads: usize) {
    assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    // Whole MR-row slivers per thread, so no thread packs a half-empty sliver in the middle.
    let rows = m.div_ceil(threads.max(1)).next_multiple_of(MR).min(m);
    thread::scope(|s| {
        for (t, cpart) in c.chunks_mut(rows * n).enumerate() {
            let mt = cpart.len() / n;
            let apart = &a[t * rows * k..(t * rows + mt) * k];
            s.spawn(move || gemm_rows(apart, b, cpart, mt, n, k));
        }
    });
}

// ---- baseline: the matrixmultiply crate -------------------------------------------------------

/// `matrixmultiply::sgemm` (threads: its own pool; MATMUL_NUM_THREADS, default physical cores).
pub fn library(a: &[f32], b: &[f32], c: &mut [f32], n: usize, _threads: usize) {
    assert!(a.len() == n * n && b.len() == n * n && c.len() == n * n);
    let ld = n as isize;
    // SAFETY: a, b and c hold n × n f32 each (asserted), row-major with row stride n and column
    // stride 1, so every index sgemm forms is in bounds; c does not alias a or b (it is a
    // `&mut`); with beta = 0 sgemm never reads c, so its NaN poison does not leak in.
    unsafe {
        matrixmultiply::sgemm(
            n,
            n,
            n,
            1.0,
            a.as_ptr(),
            ld,
            1,
            b.as_ptr(),
            ld,
            1,
            0.0,
            c.as_mut_ptr(),
            ld,
            1,
        );
    }
}
