//! Running a reference on all cores: disjoint chunks of an output, or a sum split by range.
//!
//! Why scoped threads and not a pool: a reference runs once per check, on inputs up to 1 GiB
//! (2^28 floats); spawning a thread costs microseconds, and scoped threads borrow the inputs
//! without copying or reference counting.

use std::thread;

pub(super) fn threads() -> usize {
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
