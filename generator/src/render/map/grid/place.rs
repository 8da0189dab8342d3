//! Stations onto grid nodes: each to the free node nearest its seed (the busiest first; a
//! long interchange takes a row of nodes), then moved node by node while that makes more hops
//! run at 0°, 45° or 90°, fewer hops cross, more lines run straight through their stations,
//! and the stations' footprints (marker and label) stay out of each other.
//!
//! Why before routing: a hop between two stations on one octilinear line is a straight path;
//! any other hop needs a bend, and a hop that crosses another as a straight segment will cross
//! it as a path too. Choosing positions for straightness first keeps bends and crossings few.

use super::{turn, Grid, DIRS};
use crate::render::map::bucket::Buckets;
use crate::render::map::geom::{pt, segments_cross, Rect};
use crate::render::map::input::Input;
use crate::render::map::topo::Topo;

/// Rounds of moving stations at most.
const ROUNDS: usize = 24;
/// How far (nodes) a station may move in one step.
const REACH: i32 = 2;
/// Costs (in bends) of the objective.
const OFF_OCTILINEAR: f64 = 1.0;
const TURN: [f64; 5] = [0.0, 0.45, 0.8, 1.4, 2.0];
const COLLIDE: f64 = 6.0;
const DRIFT: f64 = 0.03;
const LENGTH: f64 = 0.04;
/// Bucket size (nodes) of the spatial indexes, and the slack for stations moving in a round.
const BUCKET: f64 = 4.0;
const SLACK: f64 = 2.0 * REACH as f64;

/// What the placement is given.
pub struct Shape<'a> {
    pub topo: &'a Topo,
    pub input: &'a Input,
    pub seeds: &'a [[f64; 2]],
    /// Half extents of each station's footprint, grid units.
    pub foot: &'a [[f64; 2]],
    /// Nodes each station takes in a row.
    pub width: &'a [usize],
    /// Weight of two hops crossing (per pair of lines), against a bend.
    pub crossing: f64,
}

/// Octilinear direction of a step, if it is one.
fn octi(dx: f64, dy: f64) -> Option<usize> {
    let (ax, ay) = (dx.abs(), dy.abs());
    if (ax < 1e-9 && ay < 1e-9) || !(ay < 1e-9 || ax < 1e-9 || (ax - ay).abs() < 1e-9) {
        return None;
    }
    let d = (
        dx.signum() as i32 * (ax > 1e-9) as i32,
        dy.signum() as i32 * (ay > 1e-9) as i32,
    );
    DIRS.iter().position(|&x| x == d)
}

/// The state of one placement: positions (row starts) and indexes rebuilt every round.
struct State<'a> {
    sh: &'a Shape<'a>,
    pos: Vec<(i32, i32)>,
    /// Per station: consecutive stop triples of lines that include it.
    triples: Vec<Vec<[usize; 3]>>,
    near: Buckets,
    edges: Buckets,
    max_foot: [f64; 2],
}

impl State<'_> {
    fn center(&self, s: usize, p: (i32, i32)) -> [f64; 2] {
        [p.0 as f64 + (self.sh.width[s] - 1) as f64 / 2.0, p.1 as f64]
    }

    fn at(&self, s: usize, t: usize, p: (i32, i32)) -> [f64; 2] {
        if t == s {
            self.center(s, p)
        } else {
            self.center(t, self.pos[t])
        }
    }

    fn reindex(&mut self, w: usize, h: usize) {
        let area = Rect::new(-8.0, -8.0, w as f64 + 8.0, h as f64 + 8.0);
        self.near = Buckets::new(area, BUCKET);
        self.edges = Buckets::new(area, BUCKET);
        for s in 0..self.pos.len() {
            let c = self.center(s, self.pos[s]);
            self.near.insert(&Rect::new(c[0], c[1], c[0], c[1]), s);
        }
        for (e, ed) in self.sh.topo.edges.iter().enumerate() {
            let (a, b) = (
                self.center(ed.a, self.pos[ed.a]),
                self.center(ed.b, self.pos[ed.b]),
            );
            self.edges
                .insert(&Rect::new(a[0], a[1], b[0], b[1]).inflate(SLACK), e);
        }
    }

    /// What hop `e` (of `s`, standing at `p`) crossing other hops costs.
    fn crossed(&self, s: usize, p: (i32, i32), e: usize, exact: bool) -> f64 {
        let sh = self.sh;
        let ed = &sh.topo.edges[e];
        let (a, b) = (self.at(s, ed.a, p), self.at(s, ed.b, p));
        let mut total = 0.0;
        let mut each_edge = |f: usize| {
            let fd = &sh.topo.edges[f];
            if [fd.a, fd.b].iter().any(|x| *x == ed.a || *x == ed.b) {
                return;
            }
            let (c, d) = (self.at(s, fd.a, p), self.at(s, fd.b, p));
            if segments_cross(pt(a[0], a[1]), pt(b[0], b[1]), pt(c[0], c[1]), pt(d[0], d[1])) {
                total += sh.crossing * (ed.lines.len() * fd.lines.len()) as f64;
            }
        };
        if exact {
            (0..sh.topo.edges.len()).for_each(&mut each_edge);
        } else {
            self.edges.each(&Rect::new(a[0], a[1], b[0], b[1]), each_edge);
        }
        total
    }

    /// Everything in the objective that involves station `s` at `p` (neighbours found through
    /// the indexes, which may lag a round behind).
    fn score(&self, s: usize, p: (i32, i32)) -> f64 {
        self.score_with(s, p, false)
    }

    /// The objective's terms for `s` at `p`; `exact` looks at every hop and station rather than
    /// the indexes (for moves that jump farther than the indexes' slack).
    fn score_with(&self, s: usize, p: (i32, i32), exact: bool) -> f64 {
        let sh = self.sh;
        let me = self.center(s, p);
        let seed = sh.seeds[s];
        let mut total = DRIFT * ((me[0] - seed[0]).powi(2) + (me[1] - seed[1]).powi(2));
        for &e in &sh.topo.incident[s] {
            let ed = &sh.topo.edges[e];
            let (a, b) = (self.at(s, ed.a, p), self.at(s, ed.b, p));
            let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
            if octi(dx, dy).is_none() {
                total += OFF_OCTILINEAR;
            }
            total += LENGTH * (dx.abs().max(dy.abs()) - 2.0).powi(2);
            total += self.crossed(s, p, e, exact);
        }
        for t in &self.triples[s] {
            let (a, b, d) = (self.at(s, t[0], p), self.at(s, t[1], p), self.at(s, t[2], p));
            if let (Some(d1), Some(d2)) = (octi(b[0] - a[0], b[1] - a[1]), octi(d[0] - b[0], d[1] - b[1])) {
                total += TURN[turn(d1, d2)];
            }
        }
        let f = sh.foot[s];
        let reach = Rect::new(me[0], me[1], me[0], me[1]).inflate(0.0);
        let reach = Rect::new(
            reach.x0 - f[0] - self.max_foot[0] - SLACK,
            reach.y0 - f[1] - self.max_foot[1] - SLACK,
            reach.x1 + f[0] + self.max_foot[0] + SLACK,
            reach.y1 + f[1] + self.max_foot[1] + SLACK,
        );
        let mut each_station = |t: usize| {
            if t == s {
                return;
            }
            let o = self.center(t, self.pos[t]);
            let ox = f[0] + sh.foot[t][0] - (o[0] - me[0]).abs();
            let oy = f[1] + sh.foot[t][1] - (o[1] - me[1]).abs();
            if ox > 0.0 && oy > 0.0 {
                total += COLLIDE * ox.min(1.0) * oy.min(1.0);
            }
        };
        if exact {
            (0..self.pos.len()).for_each(&mut each_station);
        } else {
            self.near.each(&reach, each_station);
        }
        total
    }
}

/// Can station `s` (a row of `k` nodes) stand at `p`? Never on the grid's edge, where it would
/// lose ways out, nor right next to another station when either is busy (three lines or
/// more), whose ways out the other would block.
fn fits(g: &Grid, taken: &[Option<usize>], busy: &[bool], s: usize, k: usize, p: (i32, i32)) -> bool {
    let k = k as i32;
    if p.0 < 1 || p.1 < 1 || p.0 + k > g.w as i32 - 1 || p.1 > g.h as i32 - 2 {
        return false;
    }
    (-1..=k).all(|i| {
        (-1..=1).all(|j| {
            let on_row = (0..k).contains(&i) && j == 0;
            match g.node(p.0 + i, p.1 + j).and_then(|v| taken[v]) {
                Some(t) if t != s => !(on_row || busy[s] || busy[t]),
                _ => true,
            }
        })
    })
}

fn mark(g: &Grid, taken: &mut [Option<usize>], s: usize, k: usize, p: (i32, i32), on: bool) {
    for i in 0..k as i32 {
        if let Some(v) = g.node(p.0 + i, p.1) {
            taken[v] = on.then_some(s);
        }
    }
}

/// Each station on the free node nearest its seed, busiest and largest first.
fn snap(
    g: &Grid,
    sh: &Shape,
    busy: &[bool],
    order: &[usize],
    taken: &mut [Option<usize>],
) -> Vec<(i32, i32)> {
    let mut pos = vec![(0i32, 0i32); sh.seeds.len()];
    for &s in order {
        let [sx, sy] = sh.seeds[s];
        let k = sh.width[s];
        let dist =
            |p: (i32, i32)| (p.0 as f64 + (k - 1) as f64 / 2.0 - sx).powi(2) + (p.1 as f64 - sy).powi(2);
        let best = (0..(g.w * g.h) as i32)
            .map(|v| (v % g.w as i32, v / g.w as i32))
            .filter(|&p| fits(g, taken, busy, s, k, p))
            .min_by(|&p, &q| {
                dist(p)
                    .total_cmp(&dist(q))
                    .then(p.1.cmp(&q.1))
                    .then(p.0.cmp(&q.0))
            });
        if let Some(p) = best {
            pos[s] = p;
            mark(g, taken, s, k, p, true);
        }
    }
    pos
}

/// Per station: the consecutive stop triples of lines that include it.
fn triples(input: &Input, n: usize) -> Vec<Vec<[usize; 3]>> {
    let mut out = vec![Vec::new(); n];
    for l in &input.lines {
        for w in l.stops.windows(3) {
            let t = [w[0], w[1], w[2]];
            for &s in w {
                if !out[s].contains(&t) {
                    out[s].push(t);
                }
            }
        }
    }
    out
}

/// One round of single moves: each station to the best free node within reach.
fn moves(st: &mut State, g: &Grid, taken: &mut [Option<usize>], busy: &[bool], order: &[usize]) -> bool {
    let mut improved = false;
    for &s in order {
        let (cur, k) = (st.pos[s], st.sh.width[s]);
        let mut best = (st.score(s, cur), cur);
        for dy in -REACH..=REACH {
            for dx in -REACH..=REACH {
                let p = (cur.0 + dx, cur.1 + dy);
                if (dx, dy) == (0, 0) || !fits(g, taken, busy, s, k, p) {
                    continue;
                }
                let sc = st.score(s, p);
                if sc < best.0 - 1e-9 {
                    best = (sc, p);
                }
            }
        }
        if best.1 != cur {
            mark(g, taken, s, k, cur, false);
            st.pos[s] = best.1;
            mark(g, taken, s, k, best.1, true);
            improved = true;
        }
    }
    improved
}

/// Where every station stands: the grid position of the first node of its row.
pub fn place(g: &Grid, sh: &Shape) -> Vec<(i32, i32)> {
    let n = sh.seeds.len();
    let mut taken: Vec<Option<usize>> = vec![None; g.w * g.h];
    let mut order: Vec<usize> = (0..n).collect();
    let area = |s: usize| sh.foot[s][0] * sh.foot[s][1];
    order.sort_by(|&a, &b| {
        (sh.topo.incident[b].len(), area(b))
            .partial_cmp(&(sh.topo.incident[a].len(), area(a)))
            .expect("finite")
            .then(a.cmp(&b))
    });
    let busy: Vec<bool> = (0..n).map(|s| sh.topo.incident[s].len() >= 3).collect();
    let pos = snap(g, sh, &busy, &order, &mut taken);
    let max_foot = sh
        .foot
        .iter()
        .fold([0.0f64; 2], |m, f| [m[0].max(f[0]), m[1].max(f[1])]);
    let empty = Rect::new(0.0, 0.0, 1.0, 1.0);
    let mut st = State {
        sh,
        pos,
        triples: triples(sh.input, n),
        near: Buckets::new(empty, 1.0),
        edges: Buckets::new(empty, 1.0),
        max_foot,
    };
    for _ in 0..ROUNDS {
        st.reindex(g.w, g.h);
        let improved = moves(&mut st, g, &mut taken, &busy, &order);
        if !improved && !swap_crossed(&mut st, g, &mut taken, &busy) {
            break;
        }
    }
    st.pos
}

/// Where two hops cross, try swapping an end of one with an end of the other; keep a swap
/// that lowers the objective. (A crossing often comes from two stations each on the other's
/// side, further apart than single steps can mend.)
fn swap_crossed(st: &mut State, g: &Grid, taken: &mut [Option<usize>], busy: &[bool]) -> bool {
    let es = &st.sh.topo.edges;
    let c = |st: &State, s: usize| {
        let v = st.center(s, st.pos[s]);
        pt(v[0], v[1])
    };
    let mut pairs = Vec::new();
    for i in 0..es.len() {
        for j in i + 1..es.len() {
            let (e, f) = (&es[i], &es[j]);
            if [f.a, f.b].iter().any(|x| *x == e.a || *x == e.b) {
                continue;
            }
            if segments_cross(c(st, e.a), c(st, e.b), c(st, f.a), c(st, f.b)) {
                pairs.push((i, j));
            }
        }
    }
    let mut improved = false;
    for (i, j) in pairs {
        let (e, f) = (es[i].clone(), es[j].clone());
        for (s, t) in [(e.a, f.a), (e.a, f.b), (e.b, f.a), (e.b, f.b)] {
            if st.sh.width[s] != 1 || st.sh.width[t] != 1 {
                continue;
            }
            let (ps, pt_) = (st.pos[s], st.pos[t]);
            let before = st.score_with(s, ps, true) + st.score_with(t, pt_, true);
            mark(g, taken, s, 1, ps, false);
            mark(g, taken, t, 1, pt_, false);
            let ok = fits(g, taken, busy, s, 1, pt_) && {
                mark(g, taken, s, 1, pt_, true);
                fits(g, taken, busy, t, 1, ps)
            };
            mark(g, taken, s, 1, pt_, false);
            st.pos[s] = pt_;
            st.pos[t] = ps;
            let after = if ok {
                st.score_with(s, pt_, true) + st.score_with(t, ps, true)
            } else {
                f64::INFINITY
            };
            if after < before - 1e-9 {
                improved = true;
            } else {
                st.pos[s] = ps;
                st.pos[t] = pt_;
            }
            mark(g, taken, s, 1, st.pos[s], true);
            mark(g, taken, t, 1, st.pos[t], true);
            if after < before - 1e-9 {
                break;
            }
        }
    }
    improved
}
