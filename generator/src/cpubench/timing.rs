//! The check-then-time protocol of the CPU suite, the same as the GPU harness's: poison the
//! output with NaN, run once, compare with an f64 reference (‖out − ref‖ / ‖ref‖; NaN never
//! passes); only a variant that passes is warmed up and timed. A variant that fails is an
//! `Outcome::Failed { stage: Verify }` and never timed.

use crate::measure::reference::{passes, percentiles};
use crate::measure::results::{FailStage, Outcome, Timing};
use std::time::{Duration, Instant};

/// How many timed repetitions: at least `min_reps`, and more until `min_time` of timed runs
/// have passed (never more than `max_reps`). `warmup` untimed runs come first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    pub warmup: u32,
    pub min_reps: u32,
    pub min_time: Duration,
    pub max_reps: u32,
}

impl Policy {
    /// The real suite: one warm-up, ≥ 5 repetitions and ≥ 1 s of timed runs, at most 500. A
    /// second rather than the GPU harness's 0.2 s: a desktop's clock and its other programs
    /// wander on that scale, and the whole suite still takes about 10 s.
    pub const FULL: Policy = Policy {
        warmup: 1,
        min_reps: 5,
        min_time: Duration::from_secs(1),
        max_reps: 500,
    };
    /// Tests: the same protocol, as short as it can be.
    pub const QUICK: Policy = Policy {
        warmup: 1,
        min_reps: 5,
        min_time: Duration::ZERO,
        max_reps: 5,
    };

    /// Stable text for the cache key.
    pub fn describe(&self) -> String {
        format!(
            "warmup={},min_reps={},min_time_ms={},max_reps={}",
            self.warmup,
            self.min_reps,
            self.min_time.as_millis(),
            self.max_reps
        )
    }
}

/// Work counted for one run: the FLOPs and the fewest bytes that must move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    pub flops: f64,
    pub bytes: f64,
}

/// ‖out − ref‖ / ‖ref‖ in f64; a non-finite output (NaN poison left unwritten) gives +∞, as does
/// a length mismatch.
pub fn rel_error<T: Copy + Into<f64>>(out: &[T], reference: impl Fn(usize) -> f64) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (i, &o) in out.iter().enumerate() {
        let o: f64 = o.into();
        if !o.is_finite() {
            return f64::INFINITY;
        }
        let r = reference(i);
        num += (o - r) * (o - r);
        den += r * r;
    }
    if out.is_empty() || num.is_nan() || den.is_nan() {
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

/// Time `run(state)` by the policy; returns the wall times in milliseconds.
pub fn time_runs<S: ?Sized>(policy: &Policy, state: &mut S, mut run: impl FnMut(&mut S)) -> Vec<f64> {
    for _ in 0..policy.warmup {
        run(state);
    }
    // The budget counts the timed runs themselves, not the loop around them, so the samples
    // always add up to at least `min_time` (unless `max_reps` stops them first).
    let mut samples = Vec::new();
    let mut timed = Duration::ZERO;
    while samples.len() < policy.min_reps as usize
        || (timed < policy.min_time && samples.len() < policy.max_reps as usize)
    {
        let t = Instant::now();
        run(state);
        let d = t.elapsed();
        timed += d;
        samples.push(d.as_secs_f64() * 1e3);
    }
    samples
}

/// The whole protocol for one variant. `check(state)` poisons the output, runs the variant once
/// and returns its relative error; `run(state)` is one timed run.
pub fn check_then_time<S: ?Sized>(
    policy: &Policy,
    tolerance: f64,
    work: Work,
    state: &mut S,
    check: impl FnOnce(&mut S) -> f64,
    run: impl FnMut(&mut S),
) -> Outcome {
    let rel = check(state);
    if !passes(rel, tolerance) {
        let error = if rel.is_finite() {
            format!("relative error {rel:.3e} exceeds tolerance {tolerance:.0e}")
        } else {
            "output has NaN/Inf (unwritten or overflowed elements)".to_string()
        };
        return Outcome::Failed {
            stage: FailStage::Verify,
            error,
        };
    }
    let samples = time_runs(policy, state, run);
    let (median_ms, p10_ms, p90_ms) = percentiles(&samples);
    Outcome::Ok(Timing {
        rel_error: rel,
        tolerance,
        reps: samples.len() as u32,
        median_ms,
        p10_ms,
        p90_ms,
        flops: work.flops,
        bytes: work.bytes,
        workspace_bytes: None,
        ..Default::default()
    })
}
