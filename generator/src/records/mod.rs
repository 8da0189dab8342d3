//! Choosing and judging measured records: the one place where figures, inline values and checked
//! claims decide which records of which machine they read, and whether a record is a number.
//!
//! Why one module: a sentence on a page and the figure beside it must read the same record the
//! same way (same device order, same "failed is never a number" rule, same metric), or the prose
//! can contradict the figure it describes. `select` picks records and machines, `metric` turns a
//! verified record into the number a reader sees.

pub mod metric;
pub mod select;

pub use metric::Metric;
pub use select::{device_matches, display_order, filtered, is_shipped, matching, pick_file, SHIPPED_DEVICES};

use crate::measure::results::{FailStage, Outcome, Record, Timing};

/// A record judged: its verified timing, or the words a page shows instead of a number.
pub fn judge(r: &Record) -> Result<&Timing, &'static str> {
    let t = match &r.outcome {
        Outcome::Failed { stage, .. } => return Err(failure_text(*stage)),
        Outcome::Ok(t) => t,
    };
    let verified = t.rel_error.is_finite()
        && t.tolerance.is_finite()
        && t.rel_error >= 0.0
        && t.rel_error <= t.tolerance;
    if !verified {
        Err(UNVERIFIED)
    } else if !(t.median_ms.is_finite() && t.median_ms > 0.0) {
        Err(INVALID)
    } else {
        Ok(t)
    }
}

/// What a failed record is called on a page, by the stage it failed at.
pub fn failure_text(stage: FailStage) -> &'static str {
    match stage {
        FailStage::Compile => "실패 · compile failed (compile)",
        FailStage::Launch => "실패 · launch failed (launch)",
        FailStage::Verify => UNVERIFIED,
        FailStage::Unsupported => "측정하지 않음 · skipped (unsupported)",
        FailStage::Crash => "실패 · lab crashed (crash)",
        FailStage::Timeout => "실패 · lab timed out (timeout)",
        FailStage::Output => "실패 · lab printed invalid records (output)",
    }
}

/// A record whose error exceeds its tolerance (or is not a number).
pub const UNVERIFIED: &str = "실패 · verification failed (verify)";
/// A record whose timing is not a positive number.
pub const INVALID: &str = "실패 · invalid timing (measure)";
