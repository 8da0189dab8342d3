//! Ports: which direction each hop leaves each station in, chosen before any path is routed.
//!
//! Why: a path that takes whatever direction is free at a busy station soon has to cross the
//! paths of its neighbours right next to it. Assigning every station's directions at once, in
//! the circular order of the stations they lead to (as octilinear embedding keeps a node's
//! circular order), removes those crossings; the choice also weighs how far a direction is from
//! where the hop is going, whether lines run straight through the station, and how many bends
//! the hop needs given the direction chosen at its other end (a few rounds of each station
//! choosing given its neighbours).

use super::{turn, Grid, DIRS};
use crate::render::map::input::Input;
use crate::render::map::topo::Topo;

/// Rounds of stations choosing again given their neighbours' choices.
const ROUNDS: usize = 4;
/// Cost of a line turning by 0, 45, 90, 135 and 180 degrees at a station.
const TURN: [f64; 5] = [0.0, 0.5, 0.9, 1.6, 4.0];
/// Cost per bend a hop needs.
const BEND: f64 = 1.0;
/// Cost per 45° between a hop's direction and its port's, and for more than 45°.
const DEVIATE: f64 = 0.6;
const FAR_OFF: f64 = 2.0;
/// A station whose lines leave no two neighbouring directions free, for its label.
const NO_LABEL_ROOM: f64 = 100.0;

/// A port: the node of the station it leaves from and the direction.
pub type Port = (usize, usize);

/// The ports around a station's row of nodes, clockwise from east. Diagonals from inner nodes
/// of a row are left out: they would cross those of the next node.
fn perimeter(g: &Grid, row: &[usize]) -> Vec<Port> {
    let (first, last) = (row[0], *row.last().expect("a station has a node"));
    let mut out: Vec<Port> = if row.len() == 1 {
        (0..8).map(|d| (first, d)).collect()
    } else {
        let mut v = vec![(last, 0), (last, 1), (last, 2)];
        v.extend(row[1..row.len() - 1].iter().rev().map(|&u| (u, 2)));
        v.extend([(first, 2), (first, 3), (first, 4), (first, 5), (first, 6)]);
        v.extend(row[1..row.len() - 1].iter().map(|&u| (u, 6)));
        v.extend([(last, 6), (last, 7)]);
        v
    };
    out.retain(|&(u, d)| g.step(u, d).is_some());
    out
}

/// Angle of a direction (clockwise from east, SVG coordinates).
fn angle(d: usize) -> f64 {
    d as f64 * std::f64::consts::FRAC_PI_4
}

/// Difference of two angles in eighths of a turn, 0..=4.
fn off(a: f64, b: f64) -> f64 {
    let t = (a - b).rem_euclid(std::f64::consts::TAU);
    t.min(std::f64::consts::TAU - t) / std::f64::consts::FRAC_PI_4
}

/// Bends an octilinear path needs from `p` leaving in `d` to `q` arriving travelling in `e`.
fn bends(p: (i32, i32), d: usize, q: (i32, i32), e: usize) -> f64 {
    let (vx, vy) = ((q.0 - p.0) as f64, (q.1 - p.1) as f64);
    let (a, b) = (DIRS[d], DIRS[e]);
    if d == e {
        let cross = vx * a.1 as f64 - vy * a.0 as f64;
        let along = vx * a.0 as f64 + vy * a.1 as f64;
        return if cross.abs() < 1e-9 && along > 0.0 {
            0.0
        } else {
            2.0
        };
    }
    if turn(d, e) > 2 {
        return 3.0;
    }
    // v = s·a + t·b with s, t > 0: one bend.
    let det = (a.0 * b.1 - a.1 * b.0) as f64;
    let s = (vx * b.1 as f64 - vy * b.0 as f64) / det;
    let t = (a.0 as f64 * vy - a.1 as f64 * vx) / det;
    if s > 1e-9 && t > 1e-9 {
        1.0
    } else {
        3.0
    }
}

struct Ctx<'a> {
    g: &'a Grid,
    topo: &'a Topo,
    nodes: &'a [Vec<usize>],
    /// Per station: lines through it as pairs of its chains.
    through: Vec<Vec<(usize, usize)>>,
}

impl Ctx<'_> {
    fn center(&self, s: usize) -> (f64, f64) {
        let row = &self.nodes[s];
        let (a, b) = (self.g.xy(row[0]), self.g.xy(*row.last().expect("a node")));
        ((a.0 + b.0) as f64 / 2.0, (a.1 + b.1) as f64 / 2.0)
    }

    fn other(&self, c: usize, s: usize) -> usize {
        let (a, b) = self.topo.chains[c].ends();
        if a == s {
            b
        } else {
            a
        }
    }

    /// Cost of station `s` giving its chains `ports` (in the order of `chains`, which lead
    /// at angles `want`).
    fn cost(
        &self,
        s: usize,
        chains: &[usize],
        want: &[f64],
        ports: &[Port],
        all: &[Vec<Option<Port>>],
    ) -> f64 {
        let mut total = 0.0;
        for (k, &c) in chains.iter().enumerate() {
            let t = self.other(c, s);
            let dev = off(want[k], angle(ports[k].1));
            total += DEVIATE * dev + if dev > 1.01 { FAR_OFF } else { 0.0 };
            let slot = self.topo.chains_at[t].iter().position(|&x| x == c);
            if let Some(Some((u, e))) = slot.map(|i| all[t][i]) {
                let back = (e + 4) % 8;
                total += BEND * bends(self.g.xy(ports[k].0), ports[k].1, self.g.xy(u), back);
            }
        }
        // Keep room beside a busy station for its label: east of its last node or west of
        // its first (a label beside a station fits between lines leaving at 45°).
        if ports.len() >= 3 {
            let row = &self.nodes[s];
            let (first, last) = (row[0], row[row.len() - 1]);
            if ports.contains(&(last, 0)) && ports.contains(&(first, 4)) {
                total += NO_LABEL_ROOM;
            }
        }
        for &(c1, c2) in &self.through[s] {
            let (i, j) = (
                chains.iter().position(|&x| x == c1),
                chains.iter().position(|&x| x == c2),
            );
            if let (Some(i), Some(j)) = (i, j) {
                total += TURN[turn((ports[i].1 + 4) % 8, ports[j].1)];
            }
        }
        total
    }

    /// The best circular-order-keeping assignment of ports to the chains at `s`.
    fn choose(&self, s: usize, all: &[Vec<Option<Port>>]) -> Vec<Option<Port>> {
        let chains = &self.topo.chains_at[s];
        let me = self.center(s);
        let per = perimeter(self.g, &self.nodes[s]);
        let d = chains.len();
        if d == 0 || d > per.len() {
            return vec![None; d];
        }
        // Chains in clockwise order of where they lead.
        let mut by_angle: Vec<usize> = (0..d).collect();
        let ang: Vec<f64> = chains
            .iter()
            .map(|&c| {
                let o = self.center(self.other(c, s));
                (o.1 - me.1).atan2(o.0 - me.0).rem_euclid(std::f64::consts::TAU)
            })
            .collect();
        by_angle.sort_by(|&a, &b| ang[a].total_cmp(&ang[b]).then(a.cmp(&b)));
        let mut best: Option<(f64, Vec<Port>)> = None;
        let mut pick = Vec::with_capacity(d);
        // Busy stations on long rows have too many choices to try them all: their ports are
        // then the ones nearest each chain's direction, in order, and only the rotation varies.
        let all_choices = binomial(per.len(), d).saturating_mul(d);
        let near: Vec<usize> = nearest_ports(&per, &by_angle, &ang);
        let mut each = |comb: &[usize]| {
            for r in 0..d {
                let mut ports = vec![(0, 0); d];
                for (i, &k) in by_angle.iter().enumerate() {
                    ports[k] = per[comb[(i + r) % d]];
                }
                let c = self.cost(s, chains, &ang, &ports, all);
                if best.as_ref().is_none_or(|b| c < b.0 - 1e-9) {
                    best = Some((c, ports));
                }
            }
        };
        if all_choices <= MAX_CHOICES {
            combos(per.len(), d, 0, &mut pick, &mut each);
        } else {
            each(&near);
        }
        best.map_or(vec![None; d], |b| b.1.into_iter().map(Some).collect())
    }
}

/// Choices of ports tried per station at most.
const MAX_CHOICES: usize = 4000;

fn binomial(n: usize, k: usize) -> usize {
    (0..k.min(n - k)).fold(1usize, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// For chains in clockwise order (`by_angle`, at angles `ang`), increasing perimeter indices:
/// each chain the free port nearest its direction after the previous chain's.
fn nearest_ports(per: &[Port], by_angle: &[usize], ang: &[f64]) -> Vec<usize> {
    let (n, d) = (per.len(), by_angle.len());
    let mut out = Vec::with_capacity(d);
    let mut from = 0;
    for (i, &k) in by_angle.iter().enumerate() {
        let last = n - (d - i);
        let pick = (from..=last)
            .min_by(|&a, &b| off(ang[k], angle(per[a].1)).total_cmp(&off(ang[k], angle(per[b].1))))
            .unwrap_or(from);
        out.push(pick);
        from = pick + 1;
    }
    out
}

/// Call `f` with every increasing choice of `k` of `0..n`.
fn combos(n: usize, k: usize, from: usize, pick: &mut Vec<usize>, f: &mut impl FnMut(&[usize])) {
    if pick.len() == k {
        f(pick);
        return;
    }
    for i in from..n {
        if n - i < k - pick.len() {
            break;
        }
        pick.push(i);
        combos(n, k, i + 1, pick, f);
        pick.pop();
    }
}

/// Ports of every station, per chain in the order of `topo.chains_at`.
pub fn assign(g: &Grid, topo: &Topo, input: &Input, nodes: &[Vec<usize>]) -> Vec<Vec<Option<Port>>> {
    let n = nodes.len();
    let mut through = vec![Vec::new(); n];
    let chain_of = |a: usize, b: usize| {
        topo.chains.iter().position(|ch| {
            let (x, y) = ch.ends();
            (x == a && y == b) || (x == b && y == a)
        })
    };
    for l in &input.lines {
        for w in l.stops.windows(3) {
            if let (Some(c1), Some(c2)) = (chain_of(w[0], w[1]), chain_of(w[1], w[2])) {
                through[w[1]].push((c1, c2));
            }
        }
    }
    let cx = Ctx {
        g,
        topo,
        nodes,
        through,
    };
    let mut all: Vec<Vec<Option<Port>>> = (0..n).map(|s| vec![None; topo.chains_at[s].len()]).collect();
    let mut order: Vec<usize> = (0..n).filter(|&s| !nodes[s].is_empty()).collect();
    order.sort_by_key(|&s| (std::cmp::Reverse(topo.chains_at[s].len()), s));
    for _ in 0..ROUNDS {
        for &s in &order {
            all[s] = cx.choose(s, &all);
        }
    }
    all
}
