//! Routing the network on the grid once every station has its node: label room is reserved
//! for every station first, then one octilinear path is searched per hop.
//!
//! Order matters (a path routed early takes the straight way, later ones go round it): hops
//! whose stations already line up go first, shortest first, so the straight runs the station
//! placement made are kept; the rest follow, shortest first. A path that must run through room
//! kept for a label pays for it, and that label looks for new room right away.

use super::ports::{assign, Port};
use super::room::Room;
use super::search::{bend, search, Query};
use super::{opp, turn, Grid};
use crate::render::map::geom::Rect;
use crate::render::map::label::Shape;
use crate::render::map::topo::Topo;

/// Margins (nodes) around the box of a hop's stations its path is first kept inside.
const CORRIDORS: [i32; 3] = [1, 3, 1 << 20];
/// Rounds of rerouting hops that cross others.
const UNTANGLE_ROUNDS: usize = 3;
/// A port taken inside a long interchange.
const INSIDE: u32 = u32::MAX - 1;

/// The embedded network.
#[derive(Debug, Clone)]
pub struct Embedding {
    pub grid: Grid,
    /// Per station: its nodes (one, or a row of them for a long interchange).
    pub nodes: Vec<Vec<usize>>,
    /// Per chain: the path from its first station to its last.
    pub paths: Vec<Vec<usize>>,
    /// Per station: the label box reserved for it (shape index, box), if one was found.
    pub labels: Vec<Option<(usize, Rect)>>,
    pub cost: u64,
}

/// What the embedding is given.
pub struct Task<'a> {
    pub topo: &'a Topo,
    /// Per station: its label's shapes.
    pub shapes: &'a [Vec<Shape>],
    pub w: usize,
    pub h: usize,
    pub cell: f64,
    /// Stations whose label room no path may run through (their labels found none before).
    pub hard: &'a [bool],
    /// Draw a hop that finds no path as a straight segment rather than fail (the last try).
    pub force: bool,
}

struct Embedder<'a> {
    topo: &'a Topo,
    /// Per chain: what its path cost in the search.
    costs: Vec<u32>,
    hard: &'a [bool],
    /// Per station, per chain at it (in `topo.chains_at` order): its port.
    ports: Vec<Vec<Option<Port>>>,
    shapes: &'a [Vec<Shape>],
    e: Embedding,
    room: Room,
}

/// Route every chain between stations standing on `nodes`. `Err` names a chain that found no
/// path.
pub fn embed(
    t: &Task,
    input: &crate::render::map::input::Input,
    nodes: &[Vec<usize>],
) -> Result<Embedding, usize> {
    let topo = t.topo;
    let n = nodes.len();
    let grid = Grid::new(t.w, t.h);
    let widest = topo.chains.iter().map(|c| c.lines.len()).max().unwrap_or(1);
    let room = Room::new(&grid, t.cell, n, widest);
    let ports = assign(&grid, topo, input, nodes);
    let mut em = Embedder {
        topo,
        costs: vec![u32::MAX; topo.chains.len()],
        hard: t.hard,
        ports,
        shapes: t.shapes,
        room,
        e: Embedding {
            grid,
            nodes: vec![Vec::new(); n],
            paths: vec![Vec::new(); topo.chains.len()],
            labels: Vec::new(),
            cost: 0,
        },
    };
    for (s, row) in nodes.iter().enumerate() {
        em.settle(s, row);
    }
    let g = &mut em.e.grid;
    g.near = (0..g.w * g.h).map(|v| g.stations_near(v) as u8).collect();
    for c in 0..topo.chains.len() {
        em.doorways(c, true);
        em.stubs(c);
    }
    em.room.narrows(&mut em.e.grid, nodes);
    let mut first: Vec<usize> = (0..n).collect();
    first.sort_by_key(|&s| (std::cmp::Reverse(topo.chains_at[s].len()), s));
    em.label(&first, None);
    for c in em.order() {
        if let Err(c) = em.route(c) {
            if !t.force {
                return Err(c);
            }
            let (a, b) = topo.chains[c].ends();
            em.e.paths[c] = vec![em.e.nodes[a][0], em.e.nodes[b][0]];
        }
    }
    em.untangle();
    em.e.labels = em.room.labels;
    Ok(em.e)
}

impl Embedder<'_> {
    /// Grid distance between two stations' nodes, and whether they line up octilinearly.
    fn span(&self, a: usize, b: usize) -> (i32, bool) {
        let g = &self.e.grid;
        let mut best = (i32::MAX, false);
        for &u in &self.e.nodes[a] {
            for &v in &self.e.nodes[b] {
                let ((x0, y0), (x1, y1)) = (g.xy(u), g.xy(v));
                let (dx, dy) = ((x1 - x0).abs(), (y1 - y0).abs());
                let cand = (dx.max(dy), dx == 0 || dy == 0 || dx == dy);
                if (!cand.1, cand.0) < (!best.1, best.0) {
                    best = cand;
                }
            }
        }
        best
    }

    /// Chains in routing order: lined-up ones first, shorter before longer.
    fn order(&self) -> Vec<usize> {
        let mut cs: Vec<usize> = (0..self.topo.chains.len()).collect();
        cs.sort_by_key(|&c| {
            let (a, b) = self.topo.chains[c].ends();
            let (len, straight) = self.span(a, b);
            (
                !straight,
                len,
                std::cmp::Reverse(self.topo.chains[c].lines.len()),
                c,
            )
        });
        cs
    }

    /// Record station `s` on its row of nodes.
    fn settle(&mut self, s: usize, row: &[usize]) {
        let g = &mut self.e.grid;
        for (i, &u) in row.iter().enumerate() {
            g.station[u] = Some(s);
            if i + 1 < row.len() {
                g.port[u][0] = Some(INSIDE);
                g.port[row[i + 1]][4] = Some(INSIDE);
            }
        }
        self.room.add_station(&self.e.grid, s, row);
        self.e.nodes[s] = row.to_vec();
    }

    /// Count (or uncount) the first node of every assigned way out of chain `c`'s stations.
    fn doorways(&mut self, c: usize, on: bool) {
        let (a, b) = self.topo.chains[c].ends();
        for s in [a, b] {
            if let Some((u, d)) = self.port(c, s) {
                if let Some(v) = self.e.grid.step(u, d) {
                    let x = &mut self.e.grid.doorway[v];
                    *x = if on {
                        x.saturating_add(1)
                    } else {
                        x.saturating_sub(1)
                    };
                }
            }
        }
    }

    /// Tell the label room the first step of chain `c` out of each of its stations (known once
    /// ports are assigned), so no label is reserved across it, and where its strands end.
    fn stubs(&mut self, c: usize) {
        let (a, b) = self.topo.chains[c].ends();
        for s in [a, b] {
            if let Some((u, d)) = self.port(c, s) {
                let lines = self.topo.chains[c].lines.len();
                self.room.add_strands(&self.e.grid, s, u, d, lines);
                if let Some(v) = self.e.grid.step(u, d) {
                    self.room.add_path(&self.e.grid, &[u, v], lines);
                }
            }
        }
    }

    /// Reserve label room for `new` stations, and again for any near `area` whose room was
    /// run through.
    fn label(&mut self, new: &[usize], area: Option<Rect>) {
        let mut todo = area.map_or(Vec::new(), |a| self.room.intruded(&a));
        for &s in &todo {
            self.room.release(&mut self.e.grid, s);
        }
        todo.splice(0..0, new.iter().copied());
        for s in todo {
            if let Some((k, rect, _)) = self.room.best(&self.e.grid, s, &self.shapes[s]) {
                self.room.reserve(&mut self.e.grid, s, k, rect, self.hard[s]);
            }
        }
    }

    /// Cost of the lines of chain `c` continuing at station `s`, per direction a path leaves
    /// `s` in (`leaving`) or arrives at it travelling in.
    fn continuity(&self, c: usize, s: usize, leaving: bool) -> [Option<u32>; 8] {
        let mut out = [Some(0u32); 8];
        let lines = &self.topo.chains[c].lines;
        for &o in &self.topo.chains_at[s] {
            let p = &self.e.paths[o];
            if o == c || p.len() < 2 {
                continue;
            }
            let shared = self.topo.chains[o]
                .lines
                .iter()
                .filter(|l| lines.contains(l))
                .count() as u32;
            if shared == 0 {
                continue;
            }
            let g = &self.e.grid;
            let (first, second) = if self.e.nodes[s].contains(&p[0]) {
                (p[0], p[1])
            } else {
                (p[p.len() - 1], p[p.len() - 2])
            };
            let into = g.dir(first, second);
            for (d, slot) in out.iter_mut().enumerate() {
                let t = if leaving {
                    turn(opp(into), d)
                } else {
                    turn(d, into)
                };
                *slot = slot.map(|x| x + shared * bend(t));
            }
        }
        out
    }

    /// The port chain `c` was given at station `s`.
    fn port(&self, c: usize, s: usize) -> Option<Port> {
        let i = self.topo.chains_at[s].iter().position(|&x| x == c)?;
        self.ports[s][i]
    }

    /// Search a path for chain `c` from `from` to `to`, inside boxes around them that widen.
    fn find(&self, c: usize, q: Query, margins: &[i32]) -> Option<(Vec<usize>, u32)> {
        let g = &self.e.grid;
        let bb = q.from.iter().chain(q.to).fold(
            (i32::MAX, i32::MAX, i32::MIN, i32::MIN),
            |(x0, y0, x1, y1), &v| {
                let (x, y) = g.xy(v);
                (x0.min(x), y0.min(y), x1.max(x), y1.max(y))
            },
        );
        let _ = c;
        margins.iter().find_map(|&m| {
            let q = Query {
                corridor: (bb.0 - m, bb.1 - m, bb.2 + m, bb.3 + m),
                ..q
            };
            search(g, &q)
        })
    }

    /// Route chain `c` between its two placed stations: through its assigned ports if that
    /// stays near the straight line, else through any free ones.
    fn route(&mut self, c: usize) -> Result<(), usize> {
        self.doorways(c, false);
        let found = self.search_for(c);
        if found.is_err() {
            self.doorways(c, true);
        }
        self.commit(c, found?)
    }

    /// The path for chain `c`: through its assigned ports near the straight line, else through
    /// any free ports, else crossing where other paths bend.
    fn search_for(&self, c: usize) -> Result<(Vec<usize>, u32), usize> {
        let ch = &self.topo.chains[c];
        let (a, b) = ch.ends();
        let base = Query {
            from: &[],
            to: &[],
            min_steps: 1,
            lines: ch.lines.len() as u32,
            leave: [None; 8],
            arrive: [None; 8],
            relaxed: false,
            corridor: (0, 0, 0, 0),
        };
        if let (Some((u, d)), Some((v, e)), true) = (self.port(c, a), self.port(c, b), a != b) {
            let (mut leave, mut arrive) = ([None; 8], [None; 8]);
            leave[d] = Some(0);
            arrive[opp(e)] = Some(0);
            let q = Query {
                from: &[u],
                to: &[v],
                leave,
                arrive,
                ..base
            };
            if let Some(found) = self.find(c, q, &CORRIDORS[..2]) {
                return Ok(found);
            }
        }
        let (from, to) = (self.e.nodes[a].clone(), self.e.nodes[b].clone());
        let (leave, arrive) = (self.continuity(c, a, true), self.continuity(c, b, false));
        let q = Query {
            from: &from,
            to: &to,
            leave,
            arrive,
            ..base
        };
        let found = self
            .find(c, Query { ..q }, &CORRIDORS)
            .or_else(|| self.find(c, Query { relaxed: true, ..q }, &CORRIDORS[2..]));
        found.ok_or(c)
    }

    /// Rip up and reroute: each hop is searched again with everything else in place (and the
    /// first steps other hops were owed now taken or free), and keeps the new path if it costs
    /// less: fewer crossings, bends and steps.
    fn untangle(&mut self) {
        for _ in 0..UNTANGLE_ROUNDS {
            let mut better = false;
            for c in self.order() {
                let lines = self.topo.chains[c].lines.len();
                let old = std::mem::take(&mut self.e.paths[c]);
                if old.len() < 3 {
                    self.e.paths[c] = old;
                    continue;
                }
                self.e.grid.release(&old, lines);
                match self.search_for(c) {
                    Ok((path, cost)) if cost < self.costs[c] => {
                        self.e.grid.take(&path, c, lines);
                        self.e.paths[c] = path;
                        self.costs[c] = cost;
                        better = true;
                    }
                    _ => {
                        self.e.grid.take(&old, c, lines);
                        self.e.paths[c] = old;
                    }
                }
            }
            if !better {
                break;
            }
        }
    }

    /// Record chain `c`'s path.
    fn commit(&mut self, c: usize, (path, cost): (Vec<usize>, u32)) -> Result<(), usize> {
        let lines = self.topo.chains[c].lines.len();
        self.room.add_path(&self.e.grid, &path, lines);
        self.e.grid.take(&path, c, lines);
        let area = path.iter().fold(None::<Rect>, |r, &v| {
            let p = self.room.at(&self.e.grid, v);
            let b = Rect::new(p.x, p.y, p.x, p.y);
            Some(r.map_or(b, |r| r.union(&b)))
        });
        self.e.paths[c] = path;
        self.e.cost += cost as u64;
        self.costs[c] = cost;
        self.label(&[], area.map(|a| a.inflate(2.0 * self.room.cell)));
        Ok(())
    }
}
