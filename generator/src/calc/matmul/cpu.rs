//! The reader's CPU roofline, read from a results file when one was measured: the second
//! column of `calc: matmul`.
//!
//! Why only from records: the column is a measurement, so it appears when the CPU benchmark has
//! put verified triad and matmul records into a results file, and not otherwise.

use crate::measure::results::{Outcome, Record, ResultsFile, Timing};
use std::path::PathBuf;

/// A CPU roofline measured into a results file.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRoof {
    pub device: String,
    pub file: PathBuf,
    /// Triad bandwidth, B/s.
    pub bandwidth: f64,
    pub triad_label: String,
    /// Matmul baseline throughput, FLOP/s.
    pub peak: f64,
    pub matmul_label: String,
    pub date: String,
}

/// A verified, finite, positive timing.
fn good(r: &Record) -> Option<&Timing> {
    match &r.outcome {
        Outcome::Ok(t)
            if t.median_ms.is_finite()
                && t.median_ms > 0.0
                && t.rel_error.is_finite()
                && t.rel_error <= t.tolerance =>
        {
            Some(t)
        }
        _ => None,
    }
}

/// The CPU roofline in `files`, if one was measured: family "cpu", variant "triad" for bandwidth
/// (the largest problem, the one least helped by caches) and a baseline matmul for compute (the
/// largest problem). When several files hold one, the most recently measured wins; ties go to the
/// file listed first.
pub fn cpu_roof(files: &[(PathBuf, ResultsFile)]) -> Option<CpuRoof> {
    let mut best: Option<CpuRoof> = None;
    for (path, file) in files {
        let cpu: Vec<&Record> = file.records.iter().filter(|r| r.family == "cpu").collect();
        let triad = cpu
            .iter()
            .filter(|r| r.variant == "triad")
            .filter_map(|r| good(r).map(|t| (r, t)))
            .filter(|(_, t)| t.bytes > 0.0 && t.gbs().is_finite() && t.gbs() > 0.0)
            .max_by(|a, b| {
                a.1.bytes
                    .total_cmp(&b.1.bytes)
                    .then(a.1.gbs().total_cmp(&b.1.gbs()))
            });
        let mm = cpu
            .iter()
            .filter(|r| r.baseline && r.variant != "triad")
            .filter_map(|r| good(r).map(|t| (r, t)))
            .filter(|(_, t)| t.flops > 0.0 && t.gflops().is_finite() && t.gflops() > 0.0)
            .max_by(|a, b| {
                a.1.flops
                    .total_cmp(&b.1.flops)
                    .then(a.1.gflops().total_cmp(&b.1.gflops()))
            });
        let (Some((tr, tt)), Some((mr, mt))) = (triad, mm) else {
            continue;
        };
        let date = tr.provenance.date.clone().max(mr.provenance.date.clone());
        let roof = CpuRoof {
            device: file.device.name.clone(),
            file: path.clone(),
            bandwidth: tt.gbs() * 1e9,
            triad_label: tr.label.clone(),
            peak: mt.gflops() * 1e9,
            matmul_label: mr.label.clone(),
            date,
        };
        if best.as_ref().is_none_or(|b| roof.date > b.date) {
            best = Some(roof);
        }
    }
    best
}
