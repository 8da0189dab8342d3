//! Record classification: which measured records may be drawn as numbers, and in what unit.
//!
//! Why apart: the rule "a failed, unverified or nonsensical record is never drawn as a number" is
//! the book's honesty rule; every view (and the choice of results file) goes through this one
//! function, so no view can bypass it.

use crate::measure::results::{Outcome, Record};
use crate::measure::CPU_FAMILY as CPU;

/// What a figure plots on its value axis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Unit {
    /// Memory families: GB/s moved.
    GBs,
    /// Matrix products: GFLOP/s (shown as TFLOP/s from 1000 on).
    GFlops,
}

impl Unit {
    pub(super) fn of(family: &str) -> Unit {
        // FLOP/s for the matrix products ("…gemm") and attention: one rule, in measure::store.
        // The CPU family's figures draw its matrix-product ladder (its bandwidth runs are roofs).
        if crate::measure::uses_flops(family) || family == CPU {
            Unit::GFlops
        } else {
            Unit::GBs
        }
    }
    /// Factor from the stored unit to the drawn one, and the drawn unit's name.
    pub(super) fn display(self, max: f64) -> (f64, &'static str) {
        match self {
            Unit::GBs => (1.0, "GB/s"),
            Unit::GFlops if max >= 1000.0 => (1e-3, "TFLOP/s"),
            Unit::GFlops => (1.0, "GFLOP/s"),
        }
    }
}

/// A record judged: either a number we may draw or a failure we must not.
#[derive(Clone, Copy, Debug)]
pub(super) enum State {
    Ok(Meas),
    /// The stage in a few words. Views draw the fuller reason `notes::why` reads from the record
    /// (with a footnote); this text stays for code that only needs a label (and `Debug`).
    #[allow(dead_code)]
    Failed(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Meas {
    pub(super) median_ms: f64,
    /// p10 and p90 of the time, when they are sane.
    pub(super) spread_ms: Option<(f64, f64)>,
    /// GB/s or GFLOP/s, by the family's unit.
    pub(super) value: f64,
    /// The value at p90 and p10 time (low, high).
    pub(super) spread: Option<(f64, f64)>,
    pub(super) gflops: f64,
    pub(super) intensity: f64,
    pub(super) rel_error: f64,
}

pub(super) use crate::records::{failure_text as stage_text, INVALID, UNVERIFIED};

pub(super) fn classify(rec: &Record, unit: Unit) -> State {
    let t = match &rec.outcome {
        Outcome::Failed { stage, .. } => return State::Failed(stage_text(*stage)),
        Outcome::Ok(t) => t,
    };
    if !(t.rel_error.is_finite()
        && t.tolerance.is_finite()
        && t.rel_error >= 0.0
        && t.rel_error <= t.tolerance)
    {
        return State::Failed(UNVERIFIED);
    }
    let pos = |x: f64| x.is_finite() && x > 0.0;
    let nonneg = |x: f64| x.is_finite() && x >= 0.0;
    if !pos(t.median_ms) || !nonneg(t.flops) || !nonneg(t.bytes) || t.reps == 0 {
        return State::Failed(INVALID);
    }
    let per_s = |work: f64, ms: f64| work / (ms * 1e-3) / 1e9;
    let work = match unit {
        Unit::GBs => t.bytes,
        Unit::GFlops => t.flops,
    };
    let value = per_s(work, t.median_ms);
    let gflops = per_s(t.flops, t.median_ms);
    let intensity = t.intensity();
    if !pos(value) || !nonneg(gflops) || !nonneg(intensity) {
        return State::Failed(INVALID);
    }
    let eps = 1e-9 * t.median_ms;
    let spread_ms =
        (pos(t.p10_ms) && pos(t.p90_ms) && t.p10_ms <= t.median_ms + eps && t.p90_ms + eps >= t.median_ms)
            .then_some((t.p10_ms, t.p90_ms));
    let spread = spread_ms
        .map(|(p10, p90)| (per_s(work, p90), per_s(work, p10)))
        .filter(|(lo, hi)| pos(*lo) && pos(*hi));
    State::Ok(Meas {
        median_ms: t.median_ms,
        spread_ms,
        value,
        spread,
        gflops,
        intensity,
        rel_error: t.rel_error,
    })
}
