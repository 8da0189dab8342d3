//! The path search: the cheapest octilinear path for one hop, by A* over states (node,
//! direction of arrival, steps so far capped at the steps the hop needs), inside a box around
//! the hop's stations.
//!
//! Costs are whole numbers so equal costs break ties the same way on every machine. A path pays
//! for its length, for every bend (a 45° turn less than a 90° one; sharper turns are not
//! allowed), for crossing another path (straight across a node, or diagonal across diagonal),
//! for running past stations (their labels need the room), and for running through room reserved
//! for a label or for another hop's first step. Its ends pay for how
//! the lines it carries continue at the stations: straight through is free.

use super::room::{HARD, INTRUDE};
use super::{is_diag, opp, turn, Grid};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub const STEP_HV: u32 = 10;
pub const STEP_DIAG: u32 = 13;
pub const BEND45: u32 = 24;
pub const BEND90: u32 = 34;
/// A line turning back by 135° at a station.
pub const BEND135: u32 = 90;
/// Each line pair crossing.
pub const CROSS: u32 = 60;
/// Running through a node next to a station, per station.
pub const NEAR: u32 = 2;
/// Running through the first node of another hop's assigned way out of its station.
pub const DOORWAY: u32 = 150;

/// Cost of a turn of `t` eighths at a station (where lines may turn sharper than on a path).
pub fn bend(t: usize) -> u32 {
    match t {
        0 => 0,
        1 => BEND45,
        2 => BEND90,
        _ => BEND135,
    }
}

/// One search.
pub struct Query<'a> {
    /// The start station's nodes, and the end station's.
    pub from: &'a [usize],
    pub to: &'a [usize],
    /// Steps the path needs at least.
    pub min_steps: usize,
    /// Lines the path carries (crossings cost per line pair).
    pub lines: u32,
    /// Cost of leaving the start in each direction (None: not allowed).
    pub leave: [Option<u32>; 8],
    /// Cost of arriving at the end travelling in each direction (None: not allowed).
    pub arrive: [Option<u32>; 8],
    /// Also cross paths where they bend, and run through other hops' first steps and labels'
    /// kept room (a last resort when nothing else gets through).
    pub relaxed: bool,
    /// The box (x0, y0, x1, y1, in nodes) the path must stay inside.
    pub corridor: (i32, i32, i32, i32),
}

/// States inside the corridor, indexed locally so a search costs what its box holds.
struct Space {
    x0: i32,
    y0: i32,
    cw: usize,
    ch: usize,
    k1: usize,
}

impl Space {
    fn local(&self, g: &Grid, v: usize) -> Option<usize> {
        let (x, y) = g.xy(v);
        let (lx, ly) = (x - self.x0, y - self.y0);
        (lx >= 0 && ly >= 0 && (lx as usize) < self.cw && (ly as usize) < self.ch)
            .then(|| ly as usize * self.cw + lx as usize)
    }

    fn id(&self, l: usize, d: usize, k: usize) -> usize {
        (l * 9 + d) * self.k1 + k
    }

    fn node(&self, g: &Grid, s: usize) -> usize {
        let l = s / self.k1 / 9;
        let (x, y) = (self.x0 + (l % self.cw) as i32, self.y0 + (l / self.cw) as i32);
        g.node(x, y).expect("inside the grid")
    }
}

/// One search under way: best costs so far, where each came from, the open states.
struct Run<'a> {
    g: &'a Grid,
    q: &'a Query<'a>,
    sp: Space,
    dist: Vec<u32>,
    prev: Vec<u32>,
    heap: BinaryHeap<Reverse<(u32, usize)>>,
    /// The state standing for "arrived", and the node it arrived at.
    sink: usize,
    sink_node: usize,
    ends: Vec<(i32, i32)>,
}

impl Run<'_> {
    /// A*: the cheapest conceivable rest of the way, straight and diagonal steps only.
    fn rest(&self, v: usize) -> u32 {
        let (x, y) = self.g.xy(v);
        self.ends
            .iter()
            .map(|&(ex, ey)| {
                let (dx, dy) = ((ex - x).unsigned_abs(), (ey - y).unsigned_abs());
                STEP_HV * dx.max(dy) + (STEP_DIAG - STEP_HV) * dx.min(dy)
            })
            .min()
            .unwrap_or(0)
    }

    fn relax(&mut self, t: usize, c: u32, from: usize, guess: u32) {
        if c < self.dist[t] {
            self.dist[t] = c;
            self.prev[t] = from as u32;
            self.heap.push(Reverse((c + guess, t)));
        }
    }

    /// What stepping from `v` (state `s`, arrived travelling in `a`) in direction `d` costs,
    /// before what the node it reaches costs; None where the step is not allowed.
    fn step_cost(&self, v: usize, a: usize, d: usize) -> Option<u32> {
        let (g, q) = (self.g, self.q);
        let mut c = if a == 8 {
            q.leave[d]?
        } else if (a < 8 && g.pass[v] > 0 && d != a) || turn(a, d) > 2 {
            return None;
        } else {
            bend(turn(a, d))
        };
        let u = g.step(v, d)?;
        if g.port[v][d].is_some() || g.port[u][opp(d)].is_some() {
            return None;
        }
        if q.lines > u32::from(g.narrow[v][d]) {
            // Its strands would run over a station's marker.
            if !q.relaxed {
                return None;
            }
            c += 8 * INTRUDE;
        }
        c += if is_diag(d) { STEP_DIAG } else { STEP_HV };
        let room = if q.lines > 1 {
            g.room_fat[v][d]
        } else {
            g.room_edge[v][d]
        };
        c += match room {
            0 => 0,
            x if x >= HARD && !q.relaxed => return None,
            x if x >= HARD => 8 * INTRUDE,
            _ => INTRUDE,
        };
        if is_diag(d) {
            let (cell, bit) = g.cell(v, d);
            if g.diag[cell] & (3 - bit) != 0 {
                c += CROSS * q.lines;
            }
        }
        Some(c)
    }

    /// What running through node `u` (entered travelling in `d`) costs; None where it may not.
    fn through(&self, u: usize, d: usize) -> Option<u32> {
        let (g, q) = (self.g, self.q);
        if g.station[u].is_some() || (g.doorway[u] > 0 && !q.relaxed) {
            return None;
        }
        if g.is_free(u) {
            Some(g.near[u] as u32 * NEAR + g.doorway[u] as u32 * DOORWAY)
        } else if crossable(g, u, d, q.relaxed) {
            Some(CROSS * q.lines * g.pass[u] as u32)
        } else {
            None
        }
    }

    /// Expand state `s` (node `v`) in every direction.
    fn expand(&mut self, s: usize, v: usize) {
        let (a, k) = ((s / self.sp.k1) % 9, s % self.sp.k1);
        for d in 0..8 {
            let Some(step) = self.step_cost(v, a, d) else {
                continue;
            };
            let c = self.dist[s] + step;
            let u = self.g.step(v, d).expect("step_cost checked it");
            let Some(lu) = self.sp.local(self.g, u) else {
                continue;
            };
            if self.q.to.contains(&u) {
                if let (true, Some(x)) = (k + 1 >= self.q.min_steps, self.q.arrive[d]) {
                    if c + x < self.dist[self.sink] {
                        self.sink_node = u;
                        self.relax(self.sink, c + x, s, 0);
                    }
                }
                continue;
            }
            if let Some(t) = self.through(u, d) {
                let next = self.sp.id(lu, d, (k + 1).min(self.sp.k1 - 1));
                let guess = self.rest(u);
                self.relax(next, c + t, s, guess);
            }
        }
    }

    /// Follow the way back from the arrival.
    fn path(&self) -> Vec<usize> {
        let mut path = vec![self.sink_node];
        let mut s = self.prev[self.sink] as usize;
        loop {
            path.push(self.sp.node(self.g, s));
            if (s / self.sp.k1) % 9 == 8 {
                break;
            }
            s = self.prev[s] as usize;
        }
        path.reverse();
        path
    }
}

/// The cheapest path (nodes from start to end) and its cost.
pub fn search(g: &Grid, q: &Query) -> Option<(Vec<usize>, u32)> {
    let (x0, y0) = (q.corridor.0.max(0), q.corridor.1.max(0));
    let (x1, y1) = (q.corridor.2.min(g.w as i32 - 1), q.corridor.3.min(g.h as i32 - 1));
    if x1 < x0 || y1 < y0 {
        return None;
    }
    let sp = Space {
        x0,
        y0,
        cw: (x1 - x0 + 1) as usize,
        ch: (y1 - y0 + 1) as usize,
        k1: q.min_steps.max(1) + 1,
    };
    let states = sp.cw * sp.ch * 9 * sp.k1;
    let mut run = Run {
        g,
        q,
        sp,
        dist: vec![u32::MAX; states + 1],
        prev: vec![u32::MAX; states + 1],
        heap: BinaryHeap::new(),
        sink: states,
        sink_node: usize::MAX,
        ends: q.to.iter().map(|&t| g.xy(t)).collect(),
    };
    for &v in q.from {
        let s = run.sp.id(run.sp.local(g, v)?, 8, 0);
        let guess = run.rest(v);
        run.relax(s, 0, s, guess);
    }
    while let Some(Reverse((f, s))) = run.heap.pop() {
        if s == run.sink {
            break;
        }
        let v = run.sp.node(g, s);
        if f <= run.dist[s].saturating_add(run.rest(v)) {
            run.expand(s, v);
        }
    }
    (run.dist[run.sink] != u32::MAX).then(|| (run.path(), run.dist[run.sink]))
}

/// Can a path travelling in `d` cross the one path through `u` there? Where that path runs
/// straight, always (on another axis); where it bends, only `relaxed`, and only if the two
/// really cross rather than touch.
fn crossable(g: &Grid, u: usize, d: usize, relaxed: bool) -> bool {
    let used: Vec<usize> = (0..8).filter(|&e| g.port[u][e].is_some()).collect();
    let [a, b] = used.as_slice() else {
        return false;
    };
    if g.port[u][d].is_some() || g.port[u][opp(d)].is_some() {
        return false;
    }
    if *b == opp(*a) {
        return true;
    }
    // Clockwise arc from a to b: exactly one of our two directions inside it.
    let inside = |x: usize| !(x + 8 - a).is_multiple_of(8) && (x + 8 - a) % 8 < (b + 8 - a) % 8;
    relaxed && inside(d) != inside(opp(d))
}
