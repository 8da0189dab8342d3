//! `calc: pipeline` — pipeline-parallel schedules simulated op by op: GPipe, 1F1B
//! (PipeDream-Flush) and interleaved 1F1B (Megatron-LM), with the bubble they leave and a
//! schedule diagram drawn from the simulation.
//!
//! Why simulate instead of drawing: the bubble formulas ((p−1)/m, and (p−1)/(v·m) interleaved;
//! Narayanan et al. 2021) are easy to state and hard to believe; a diagram computed from the
//! same op order a framework issues shows where the idle time comes from, and the tests hold
//! the simulation to the formulas.
//!
//! Model: each device runs its own op list in order, an op starts when the device is free and
//! its input is ready (a forward needs the previous virtual stage's forward of the same
//! micro-batch; a backward needs the next one's backward, or its own forward at the last
//! stage). Time unit: one chunk's forward = 1, its backward = 2 (the usual 2× of backward);
//! point-to-point transfers take no time.

mod render;

use super::kv::{Fields, KeyDoc, ParseError};
use std::collections::HashMap;

pub(super) use render::render;

const KIND: &str = "pipeline";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    GPipe,
    OneFOneB,
    Interleaved,
}

impl Schedule {
    pub fn label(self) -> &'static str {
        match self {
            Schedule::GPipe => "GPipe",
            Schedule::OneFOneB => "1F1B",
            Schedule::Interleaved => "interleaved 1F1B",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PipelineSpec {
    pub schedule: Schedule,
    pub stages: u64,
    pub micro_batches: u64,
    pub chunks: u64,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "schedule",
        doc: "gpipe, 1f1b or interleaved (the one drawn)",
    },
    KeyDoc {
        key: "stages",
        doc: "pipeline stages p (devices), 2..64",
    },
    KeyDoc {
        key: "micro_batches",
        doc: "micro-batches m per step, 1..256",
    },
    KeyDoc {
        key: "chunks",
        doc: "optional, model chunks per device v for interleaved (default 2)",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

/// One scheduled op: forward or backward of micro-batch `mb` on model chunk `chunk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Op {
    pub forward: bool,
    pub mb: u64,
    pub chunk: u64,
}

/// The op list of device `d`, in issue order.
pub fn ops(s: Schedule, p: u64, m: u64, v: u64, d: u64) -> Vec<Op> {
    let f = |mb, chunk| Op {
        forward: true,
        mb,
        chunk,
    };
    let b = |mb, chunk| Op {
        forward: false,
        mb,
        chunk,
    };
    match s {
        Schedule::GPipe => (0..m).map(|i| f(i, 0)).chain((0..m).map(|i| b(i, 0))).collect(),
        Schedule::OneFOneB => {
            let w = (p - d - 1).min(m);
            let mut out: Vec<Op> = (0..w).map(|i| f(i, 0)).collect();
            for i in 0..m - w {
                out.push(f(w + i, 0));
                out.push(b(i, 0));
            }
            out.extend((m - w..m).map(|i| b(i, 0)));
            out
        }
        Schedule::Interleaved => {
            // The k-th forward (backward) unit of a device: groups of p micro-batches per chunk.
            let mb = |k: u64| (k / (p * v)) * p + k % p;
            let fwd = |k: u64| f(mb(k), (k / p) % v);
            let bwd = |k: u64| b(mb(k), v - 1 - (k / p) % v);
            let total = m * v;
            let w = ((p - d - 1) * 2 + (v - 1) * p).min(total);
            let mut out: Vec<Op> = (0..w).map(fwd).collect();
            for i in 0..total - w {
                out.push(fwd(w + i));
                out.push(bwd(i));
            }
            out.extend((total - w..total).map(bwd));
            out
        }
    }
}

/// A simulated op: (device, op, start, end).
pub type Placed = (u64, Op, u64, u64);

/// Simulate; returns the placed ops and the makespan. `None` if the order deadlocks.
pub fn simulate(s: Schedule, p: u64, m: u64, v: u64) -> Option<(Vec<Placed>, u64)> {
    let lists: Vec<Vec<Op>> = (0..p).map(|d| ops(s, p, m, v, d)).collect();
    let mut next = vec![0usize; p as usize];
    let mut free = vec![0u64; p as usize];
    // End time of (forward?, mb, virtual stage).
    let mut done: HashMap<(bool, u64, u64), u64> = HashMap::new();
    let mut placed = Vec::new();
    let last = v * p - 1;
    loop {
        let mut progressed = false;
        for d in 0..p as usize {
            while let Some(&op) = lists[d].get(next[d]) {
                let vs = op.chunk * p + d as u64;
                let dep = if op.forward {
                    if vs == 0 {
                        Some(0)
                    } else {
                        done.get(&(true, op.mb, vs - 1)).copied()
                    }
                } else if vs == last {
                    done.get(&(true, op.mb, vs)).copied()
                } else {
                    done.get(&(false, op.mb, vs + 1)).copied()
                };
                let Some(ready) = dep else { break };
                let start = ready.max(free[d]);
                let end = start + if op.forward { 1 } else { 2 };
                free[d] = end;
                done.insert((op.forward, op.mb, vs), end);
                placed.push((d as u64, op, start, end));
                next[d] += 1;
                progressed = true;
            }
        }
        if next.iter().zip(&lists).all(|(n, l)| *n == l.len()) {
            let t = free.iter().copied().max().unwrap_or(0);
            return Some((placed, t));
        }
        if !progressed {
            return None;
        }
    }
}

/// Peak number of chunk activations device 0 holds (forwards whose backward has not ended).
pub fn peak_in_flight(placed: &[Placed]) -> u64 {
    let mut events: Vec<(u64, i64)> = placed
        .iter()
        .filter(|(d, ..)| *d == 0)
        .map(|(_, op, s, e)| if op.forward { (*s, 1) } else { (*e, -1) })
        .collect();
    events.sort_by_key(|&(t, delta)| (t, delta));
    let (mut cur, mut peak) = (0i64, 0i64);
    for (_, delta) in events {
        cur += delta;
        peak = peak.max(cur);
    }
    peak as u64
}

pub(super) fn parse(f: &Fields) -> Result<PipelineSpec, ParseError> {
    f.only(KIND, KEYS)?;
    let Some((s, line)) = f.scalar(KIND, "schedule", KEYS)? else {
        return Err((
            f.calc_line,
            format!("`calc: {KIND}`: missing key `schedule`"),
            super::kv::hint(KIND, KEYS),
        ));
    };
    let schedule = match s.as_str() {
        "gpipe" => Schedule::GPipe,
        "1f1b" => Schedule::OneFOneB,
        "interleaved" => Schedule::Interleaved,
        _ => {
            return Err((
                line,
                format!("`calc: {KIND}`: unknown schedule `{s}`"),
                "schedule is one of: gpipe, 1f1b, interleaved".into(),
            ))
        }
    };
    let stages = f.positive(KIND, "stages", 64, KEYS)?;
    if stages < 2 {
        let line = f.scalar(KIND, "stages", KEYS)?.map_or(f.calc_line, |(_, l)| l);
        return Err((
            line,
            format!("`calc: {KIND}`: a pipeline needs at least 2 stages"),
            "stages: 2..64".into(),
        ));
    }
    let micro_batches = f.positive(KIND, "micro_batches", 256, KEYS)?;
    let chunks = match f.scalar(KIND, "chunks", KEYS)? {
        None => {
            if schedule == Schedule::Interleaved {
                2
            } else {
                1
            }
        }
        Some((_, line)) => {
            let v = f.positive(KIND, "chunks", 8, KEYS)?;
            if schedule != Schedule::Interleaved && v != 1 {
                return Err((
                    line,
                    format!("`calc: {KIND}`: chunks only apply to the interleaved schedule"),
                    "remove `chunks` or use `schedule: interleaved`".into(),
                ));
            }
            v
        }
    };
    if schedule == Schedule::Interleaved && micro_batches % stages != 0 {
        let line = f
            .scalar(KIND, "micro_batches", KEYS)?
            .map_or(f.calc_line, |(_, l)| l);
        return Err((
            line,
            format!(
                "`calc: {KIND}`: interleaved 1F1B needs micro_batches to be a multiple of stages ({stages})"
            ),
            "as in Megatron-LM".into(),
        ));
    }
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(PipelineSpec {
        schedule,
        stages,
        micro_batches,
        chunks,
        caption,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makespan_matches_the_bubble_formula() {
        // T = 3·m·v + 3·(p−1): every device idles (p−1)·(t_f + t_b)/v, in chunk units 3·(p−1).
        for (s, p, m, v) in [
            (Schedule::GPipe, 4, 8, 1),
            (Schedule::OneFOneB, 4, 8, 1),
            (Schedule::OneFOneB, 8, 3, 1),
            (Schedule::Interleaved, 4, 8, 2),
            (Schedule::Interleaved, 4, 4, 4),
        ] {
            let (_, t) = simulate(s, p, m, v).unwrap();
            assert_eq!(t, 3 * m * v + 3 * (p - 1), "{s:?} p{p} m{m} v{v}");
        }
    }

    #[test]
    fn gpipe_holds_all_micro_batches_1f1b_only_p() {
        let (g, _) = simulate(Schedule::GPipe, 4, 8, 1).unwrap();
        let (o, _) = simulate(Schedule::OneFOneB, 4, 8, 1).unwrap();
        assert_eq!(peak_in_flight(&g), 8);
        assert_eq!(peak_in_flight(&o), 4);
    }

    #[test]
    fn every_op_once() {
        let (pl, _) = simulate(Schedule::Interleaved, 4, 8, 2).unwrap();
        assert_eq!(pl.len(), 4 * 8 * 2 * 2);
    }

    #[test]
    fn errors_name_the_line() {
        let e = crate::calc::parse("calc: pipeline\nschedule: interleaved\nstages: 4\nmicro_batches: 6\n")
            .unwrap_err();
        assert_eq!(e.0, 4);
        let e =
            crate::calc::parse("calc: pipeline\nschedule: 1f1b\nstages: 4\nmicro_batches: 8\nchunks: 2\n")
                .unwrap_err();
        assert_eq!(e.0, 5);
    }
}
