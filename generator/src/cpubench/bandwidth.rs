//! Memory bandwidth with every core: STREAM-style copy and triad on f64 arrays far larger than
//! the last-level cache, each thread streaming its own contiguous chunk (the same chunk it
//! first touched, so its pages are local to it on multi-socket machines).
//!
//! Bytes are counted as STREAM counts them: the bytes the loop reads plus the bytes it writes
//! (copy 2 × 8 B per element, triad 3 × 8 B). Write-allocate traffic is NOT counted: a plain
//! store first reads its cache line from memory, so the triad loop really moves about 4 × 8 B per
//! element and the memory system is busier than the figure says (copy: 3 × 8 B). Both loops use
//! ordinary stores: copy is a plain load/store loop, not the C library's memcpy, whose
//! large-copy path (non-temporal stores, `rep movsb`) differs from machine to machine.

use super::timing::{check_then_time, rel_error, Policy, Work};
use crate::measure::reference::uniform;
use crate::measure::results::{FailStage, Outcome};
use std::thread;

/// Bytes per element: the arrays are f64, as in STREAM.
pub const ELEM_BYTES: usize = 8;

/// The triad's scalar s in a = b + s·c.
pub const TRIAD_SCALAR: f64 = 3.0;

/// Per-thread chunk length for `len` elements over `threads` threads.
fn chunk_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).max(1)
}

/// `len` f64, zeroed lazily by the OS (the first write, done per thread below, maps the pages);
/// an allocation failure is a `Failed { Launch }`, not an abort.
fn alloc(len: usize) -> Result<Vec<f64>, String> {
    let mut v: Vec<f64> = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|e| format!("cannot allocate {} MiB: {e}", (len * ELEM_BYTES) >> 20))?;
    v.resize(len, 0.0);
    Ok(v)
}

/// Fill with uniform values in [1, 2) from stream `seed`, each thread its own chunk.
fn fill_random(v: &mut [f64], seed: u64, threads: usize) {
    let chunk = chunk_len(v.len(), threads);
    thread::scope(|s| {
        for (k, part) in v.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                for (j, x) in part.iter_mut().enumerate() {
                    *x = uniform(seed, (k * chunk + j) as u64, 1.0, 2.0) as f64;
                }
            });
        }
    });
}

fn fill(v: &mut [f64], value: f64, threads: usize) {
    let chunk = chunk_len(v.len(), threads);
    thread::scope(|s| {
        for part in v.chunks_mut(chunk) {
            s.spawn(move || part.fill(value));
        }
    });
}

/// dst = src with `threads` threads, each its own chunk.
pub fn copy(dst: &mut [f64], src: &[f64], threads: usize) {
    assert_eq!(dst.len(), src.len());
    let chunk = chunk_len(dst.len(), threads);
    thread::scope(|s| {
        for (d, x) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
            s.spawn(move || copy_loop(d, x));
        }
    });
}

/// A plain load/store copy, 64 bytes (one cache line) a step. LLVM would turn the obvious loop
/// into a call to memcpy, whose large-copy path (non-temporal stores or `rep movsb`, chosen by
/// the C library per CPU) is a different experiment from triad's ordinary stores; the empty
/// `black_box(())` after each line keeps the loop a loop and costs nothing measurable.
fn copy_loop(dst: &mut [f64], src: &[f64]) {
    let (d_lines, d_tail) = dst.as_chunks_mut::<8>();
    let (s_lines, s_tail) = src.as_chunks::<8>();
    for (d, s) in d_lines.iter_mut().zip(s_lines) {
        *d = *s;
        std::hint::black_box(());
    }
    d_tail.copy_from_slice(s_tail);
}

/// a = b + s·c with `threads` threads, each its own chunk.
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64, threads: usize) {
    assert!(a.len() == b.len() && a.len() == c.len());
    let chunk = chunk_len(a.len(), threads);
    thread::scope(|sc| {
        for ((a, b), c) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
            sc.spawn(move || {
                for ((x, &y), &z) in a.iter_mut().zip(b).zip(c) {
                    *x = y + s * z;
                }
            });
        }
    });
}

/// Outcomes of (copy, triad) on arrays of `len` f64 each.
pub fn run(len: usize, threads: usize, seed: u64, policy: &Policy) -> (Outcome, Outcome) {
    let arrays = (|| Ok::<_, String>((alloc(len)?, alloc(len)?, alloc(len)?)))();
    let (mut a, mut b, mut c) = match arrays {
        Ok(v) => v,
        Err(error) => {
            let failed = Outcome::Failed {
                stage: FailStage::Launch,
                error,
            };
            return (failed.clone(), failed);
        }
    };
    fill_random(&mut b, seed, threads);
    fill_random(&mut c, seed ^ 0x5eed, threads);
    fill(&mut a, f64::NAN, threads);

    let n = len as f64;
    let bytes = (ELEM_BYTES as f64) * n;
    // Both are exact in f64: the only acceptable error is none (up to rounding of ‖·‖).
    let tol = 1e-12;

    let mut st = (&mut a, &b, &c);
    let copied = check_then_time(
        policy,
        tol,
        Work {
            flops: 0.0,
            bytes: 2.0 * bytes,
        },
        &mut st,
        |(a, b, _)| {
            fill(a, f64::NAN, threads);
            copy(a, b, threads);
            rel_error(a, |i| b[i])
        },
        |(a, b, _)| copy(a, b, threads),
    );
    let triaded = check_then_time(
        policy,
        tol,
        Work {
            flops: 2.0 * n,
            bytes: 3.0 * bytes,
        },
        &mut st,
        |(a, b, c)| {
            fill(a, f64::NAN, threads);
            triad(a, b, c, TRIAD_SCALAR, threads);
            rel_error(a, |i| b[i] + TRIAD_SCALAR * c[i])
        },
        |(a, b, c)| triad(a, b, c, TRIAD_SCALAR, threads),
    );
    (copied, triaded)
}
