//! Where the suite's host time goes: wall time of the host-side operations that surround the
//! timed runs (device allocation and free, copies each way, drawing random inputs, comparing
//! outputs with references), summed per family and printed in the family's log line.
//!
//! Why: the suite's wall-time budget (90 s) is mostly host time, and the split between set-up,
//! checks and timed runs does not say which operation inside them to make cheaper.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A host-side operation whose time is summed.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    Alloc,
    Free,
    Upload,
    Download,
    Random,
    Compare,
    Reference,
    Quantize,
    Convert,
}

const NAMES: [&str; 9] = [
    "alloc",
    "free",
    "upload",
    "download",
    "random",
    "compare",
    "reference",
    "quantize",
    "convert",
];

static NS: [AtomicU64; 9] = [const { AtomicU64::new(0) }; 9];

/// Run `f`, adding its wall time to `op`'s sum.
pub fn timed<T>(op: Op, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    NS[op as usize].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    r
}

/// The sums so far, to compare with later (see [`line_since`]).
pub fn snapshot() -> [u64; 9] {
    std::array::from_fn(|i| NS[i].load(Ordering::Relaxed))
}

/// The time each operation took since `before`, as "alloc 0.1 s, upload 0.4 s, …"
/// (operations under 50 ms left out).
pub fn line_since(before: &[u64; 9]) -> String {
    let now = snapshot();
    NAMES
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let s = now[i].saturating_sub(before[i]) as f64 * 1e-9;
            (s >= 0.05).then(|| format!("{name} {s:.1} s"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_per_operation_since_a_snapshot() {
        let before = snapshot();
        timed(Op::Upload, || {
            std::thread::sleep(std::time::Duration::from_millis(120))
        });
        let line = line_since(&before);
        // At least the 120 ms slept; a busy machine may add to it, never take away.
        let secs: f64 = line
            .strip_prefix("upload ")
            .and_then(|r| r.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0);
        assert!(secs >= 0.1, "{line}");
        assert!(!line.contains("alloc"), "{line}");
        assert_eq!(line_since(&snapshot()), "");
    }
}
