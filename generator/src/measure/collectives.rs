//! `hdlc nccl-bench`: collectives from Rust, one process driving every visible GPU through
//! cudarc's NCCL bindings (ncclCommInitAll), printed as lab records so that the runner files them
//! beside torch.distributed's (lab `dist_collectives_rust`, family `dist_collectives`, variants
//! `rust_*`).
//!
//! Why both: torch.distributed runs one process per GPU and adds its own dispatch; a busbw that
//! agrees between the two (and with an independent nccl-tests run) says the number is NCCL's and
//! the link's, not a framework's. Sizes, counts and bandwidths follow nccl-tests exactly as
//! `kernels/labs/distributed/collectives.py` does (doc/PERFORMANCE.md there): S is the buffer of
//! all-reduce and broadcast, the whole gathered output of all-gather, the whole input of
//! reduce-scatter, one rank's buffer of send/recv; busbw = S / time × the collective's factor.
//!
//! Check, before timing: every rank's input is integers in [−8, 8) stored as f32, drawn from a
//! seed per (collective, size, rank), so the expected output is exact and the tolerance is 0.

use crate::measure::gpu::nccl::Nccl;
use crate::measure::reference::{mix, percentiles};
use anyhow::Result;
use serde_json::{json, Value};
use std::io::Write;

pub use crate::measure::gpu::nccl::Coll;

/// The collectives measured, in the order they run.
pub const COLLS: &[Coll] = &[
    Coll::AllReduce,
    Coll::AllGather,
    Coll::ReduceScatter,
    Coll::Broadcast,
    Coll::SendRecv,
];

impl Coll {
    /// nccl-tests' bus bandwidth factor at n ranks.
    pub fn bus_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Coll::AllReduce => 2.0 * (n - 1.0) / n,
            Coll::AllGather | Coll::ReduceScatter => (n - 1.0) / n,
            Coll::Broadcast | Coll::SendRecv => 1.0,
        }
    }

    /// f32 elements of each rank's (send, receive) buffer for a size of `bytes` at n ranks.
    pub fn counts(self, bytes: usize, n: usize) -> (usize, usize) {
        let c = (bytes / 4).max(1);
        match self {
            Coll::AllGather => {
                let c = (c / n * n).max(n);
                (c / n, c)
            }
            Coll::ReduceScatter => {
                let c = (c / n * n).max(n);
                (c, c / n)
            }
            _ => (c, c),
        }
    }
}

/// 8 B, then ×4 steps below the largest, then the largest (1 GiB; 32 KiB in quick mode).
pub fn sizes(quick: bool) -> Vec<usize> {
    let max: usize = if quick { 1 << 15 } else { 1 << 30 };
    let mut v: Vec<usize> = (0..20)
        .map(|i| 8usize << (2 * i))
        .take_while(|&s| s < max)
        .collect();
    v.push(max);
    v
}

/// Element i of rank `rank`'s input for one (collective, size): an integer in [−8, 8).
pub fn input(seed: u64, coll: usize, size: usize, rank: usize, i: usize) -> f32 {
    let s = mix(seed ^ mix(((coll as u64) << 48) ^ ((size as u64) << 32) ^ rank as u64));
    (mix(s ^ i as u64) % 16) as f32 - 8.0
}

/// Every rank's input.
pub fn inputs(seed: u64, coll: usize, size: usize, n: usize, count: usize) -> Vec<Vec<f32>> {
    (0..n)
        .map(|r| (0..count).map(|i| input(seed, coll, size, r, i)).collect())
        .collect()
}

/// What rank `rank` must hold after the collective, from everyone's inputs.
pub fn expected(c: Coll, ins: &[Vec<f32>], rank: usize) -> Vec<f32> {
    let n = ins.len();
    match c {
        Coll::AllReduce => (0..ins[0].len())
            .map(|i| ins.iter().map(|v| v[i]).sum())
            .collect(),
        Coll::AllGather => ins.iter().flatten().copied().collect(),
        Coll::ReduceScatter => {
            let chunk = ins[0].len() / n;
            (0..chunk)
                .map(|i| ins.iter().map(|v| v[rank * chunk + i]).sum())
                .collect()
        }
        Coll::Broadcast => ins[0].clone(),
        Coll::SendRecv => ins[(rank + n - 1) % n].clone(),
    }
}

/// ‖got − want‖ / ‖want‖ over every rank's output (0 when all are exact).
pub fn error(got: &[Vec<f32>], want: &[Vec<f32>]) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (g, w) in got.iter().zip(want) {
        if g.len() != w.len() {
            return f64::INFINITY;
        }
        for (&a, &b) in g.iter().zip(w) {
            if !a.is_finite() {
                return f64::INFINITY;
            }
            num += (a as f64 - b as f64).powi(2);
            den += (b as f64).powi(2);
        }
    }
    if num == 0.0 {
        0.0
    } else if den > 0.0 {
        (num / den).sqrt()
    } else {
        f64::INFINITY
    }
}

/// Back-to-back calls per timed repetition: enough for about 10 ms, at most 200.
pub fn iters_for(one_call_ms: f64) -> usize {
    if one_call_ms > 0.0 && one_call_ms.is_finite() {
        ((10.0 / one_call_ms).ceil() as usize).clamp(1, 200)
    } else {
        1
    }
}

fn label(c: Coll) -> String {
    format!(
        "{} (Rust, cudarc NCCL, one process for all GPUs)",
        c.name().replace('_', "-")
    )
}

/// A verified, timed (collective, size): `samples` are milliseconds per call.
pub fn record_ok(c: Coll, rung: usize, bytes: usize, n: usize, samples: &[f64]) -> Value {
    let (median, p10, p90) = percentiles(samples);
    let algbw = bytes as f64 / (median * 1e6);
    json!({
        "variant": format!("rust_{}", c.name()), "label": label(c),
        "params": {"bytes": bytes, "world": n}, "status": "ok",
        "rel_error": 0.0, "tolerance": 0.0, "reps": samples.len(),
        "median_ms": median, "p10_ms": p10, "p90_ms": p90, "flops": 0.0, "bytes": bytes as f64,
        "rung": rung, "baseline": false,
        "metrics": {"algbw_gbps": algbw, "busbw_gbps": algbw * c.bus_factor(n)},
    })
}

/// A (collective, size) that could not be measured, with the stage and why.
pub fn record_failed(c: Coll, rung: usize, bytes: usize, n: usize, stage: &str, error: &str) -> Value {
    json!({
        "variant": format!("rust_{}", c.name()), "label": label(c),
        "params": {"bytes": bytes, "world": n}, "status": "failed",
        "stage": stage, "error": error, "rung": rung, "baseline": false,
    })
}

/// Timed repetitions per (collective, size).
const REPS: usize = 7;

/// Measure every collective at every size on all visible GPUs, one record per line on `out`.
/// A size that fails its check or its launch is a failed record; the others still run.
pub fn bench(quick: bool, seed: u64, out: &mut dyn Write) -> Result<()> {
    let nc = Nccl::open()?;
    let n = nc.world();
    eprintln!(
        "nccl-bench: {n} GPUs, NCCL {}",
        Nccl::version().unwrap_or_else(|| "?".into())
    );
    for (ci, &c) in COLLS.iter().enumerate() {
        for (si, &bytes) in sizes(quick).iter().enumerate() {
            let rec = match one(&nc, c, ci, si, bytes, seed, if quick { 2 } else { REPS }) {
                Ok(samples) => record_ok(c, ci + 1, bytes, n, &samples),
                Err((stage, e)) => record_failed(c, ci + 1, bytes, n, stage, &e),
            };
            writeln!(out, "{rec}")?;
            out.flush()?;
        }
    }
    Ok(())
}

/// Check one (collective, size), then time it: milliseconds per call, one sample per repetition.
fn one(
    nc: &Nccl,
    c: Coll,
    ci: usize,
    si: usize,
    bytes: usize,
    seed: u64,
    reps: usize,
) -> Result<Vec<f64>, (&'static str, String)> {
    let launch = |e: anyhow::Error| ("launch", format!("{e:#}"));
    let n = nc.world();
    let (send_n, recv_n) = c.counts(bytes, n);
    let ins = inputs(seed, ci, si, n, send_n);
    let send = nc.upload(&ins).map_err(launch)?;
    let mut recv = nc.zeros(recv_n).map_err(launch)?;
    nc.run(c, &send, &mut recv).map_err(launch)?;
    nc.sync().map_err(launch)?;
    let want: Vec<Vec<f32>> = (0..n).map(|r| expected(c, &ins, r)).collect();
    let err = error(&nc.download(&recv).map_err(launch)?, &want);
    if err != 0.0 {
        return Err((
            "verify",
            format!("rel_error {err:.3e} exceeds tolerance 0 (exact integer sums)"),
        ));
    }
    let first = nc.time(c, &send, &mut recv, 1).map_err(launch)?;
    let iters = iters_for(first);
    nc.time(c, &send, &mut recv, iters).map_err(launch)?; // warm-up
    (0..reps)
        .map(|_| nc.time(c, &send, &mut recv, iters).map_err(launch))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_follow_nccl_tests() {
        let s = sizes(false);
        assert_eq!((s[0], s[1], *s.last().unwrap()), (8, 32, 1 << 30));
        assert_eq!(Coll::AllGather.counts(1 << 20, 4), (1 << 16, 1 << 18));
        assert_eq!(Coll::ReduceScatter.counts(1 << 20, 4), (1 << 18, 1 << 16));
        // 8 B at 8 ranks: at least one element per rank.
        assert_eq!(Coll::AllGather.counts(8, 8), (1, 8));
        assert!((Coll::AllReduce.bus_factor(2) - 1.0).abs() < 1e-12);
        assert!((Coll::AllReduce.bus_factor(8) - 1.75).abs() < 1e-12);
        assert!((Coll::AllGather.bus_factor(4) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn expected_outputs_are_exact_and_a_wrong_one_is_caught() {
        let n = 3;
        for (ci, &c) in COLLS.iter().enumerate() {
            let (send, _) = c.counts(96, n);
            let ins = inputs(7, ci, 0, n, send);
            assert!(ins
                .iter()
                .flatten()
                .all(|v| (-8.0..8.0).contains(v) && v.fract() == 0.0));
            let want: Vec<Vec<f32>> = (0..n).map(|r| expected(c, &ins, r)).collect();
            assert_eq!(error(&want, &want), 0.0);
            let mut bad = want.clone();
            bad[n - 1][0] += 1.0;
            assert!(error(&bad, &want) > 0.0, "{c:?}");
        }
        // A ring: rank 0 receives rank n−1's buffer.
        let ins = inputs(1, 4, 0, n, 4);
        assert_eq!(expected(Coll::SendRecv, &ins, 0), ins[n - 1]);
    }

    #[test]
    fn records_carry_world_and_bus_bandwidth() {
        let r = record_ok(Coll::AllReduce, 1, 1 << 30, 2, &[10.0, 10.0, 10.0]);
        assert_eq!(r["params"]["world"], 2);
        let bw = r["metrics"]["busbw_gbps"].as_f64().unwrap();
        assert!((bw - (1u64 << 30) as f64 / 1e7).abs() < 1e-6);
        assert_eq!(iters_for(0.01), 200);
        assert_eq!(iters_for(20.0), 1);
    }
}
