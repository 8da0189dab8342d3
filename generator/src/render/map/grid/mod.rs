//! The octilinear grid the map is drawn on: nodes `(i, j)` one pitch apart, each joined to its
//! eight neighbours. A line can only run along grid edges, so every segment is horizontal,
//! vertical or at 45°, and a station sits on a node.
//!
//! The grid keeps what is taken: stations on nodes, grid edges used by a path (recorded at both
//! ends, per direction: a node's *ports*), nodes a path runs through, and diagonals used in each
//! cell (two diagonals of one cell would cross). Two paths may share a node only by crossing it
//! straight, at right angles; that is a line crossing and costs accordingly.
//!
//! Files: this one holds the grid and its bookkeeping; `place` puts stations on nodes,
//! `ports` chooses their ways out, `room` keeps room for names, `search` finds one path, and
//! `embed` routes every hop in turn, and `widen` makes room where a layout ran out of it.

pub mod embed;
pub mod place;
mod ports;
mod room;
mod search;
pub mod widen;

/// Unit steps of the eight directions, clockwise from east (SVG: y grows downwards).
pub const DIRS: [(i32, i32); 8] = [
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
];

/// The opposite direction.
pub fn opp(d: usize) -> usize {
    (d + 4) % 8
}

/// Turn between travelling in `a` and then in `b`, in eighths of a circle (0 straight … 4 back).
pub fn turn(a: usize, b: usize) -> usize {
    let t = (a + 8 - b) % 8;
    t.min(8 - t)
}

pub fn is_diag(d: usize) -> bool {
    d % 2 == 1
}

/// What the grid holds.
#[derive(Debug, Clone)]
pub struct Grid {
    pub w: usize,
    pub h: usize,
    /// Station on each node.
    pub station: Vec<Option<usize>>,
    /// Per node and direction: the chain using the grid edge that leaves in that direction.
    pub port: Vec<[Option<u32>; 8]>,
    /// Per node: lines of the chain running through it (0 when none).
    pub pass: Vec<u16>,
    /// Per cell (top-left node index): bit 0 the "\" diagonal is used, bit 1 the "/" one.
    pub diag: Vec<u8>,
    /// Per node: stations on its eight neighbours (set once every station stands).
    pub near: Vec<u8>,
    /// Per node: hops not routed yet whose assigned way out of their station starts here.
    pub doorway: Vec<u16>,
    /// Per node: reserved labels too close for a station there.
    pub room_node: Vec<u8>,
    /// Per node and direction: reserved labels the grid edge runs through, as one line, and as
    /// the widest bundle.
    pub room_edge: Vec<[u8; 8]>,
    pub room_fat: Vec<[u8; 8]>,
    /// Per node and direction: the most lines a path may carry along that grid edge, where
    /// its strands would pass close by a station's marker (`u8::MAX` elsewhere).
    pub narrow: Vec<[u8; 8]>,
}

impl Grid {
    pub fn new(w: usize, h: usize) -> Grid {
        Grid {
            w,
            h,
            station: vec![None; w * h],
            port: vec![[None; 8]; w * h],
            pass: vec![0; w * h],
            diag: vec![0; w * h],
            near: vec![0; w * h],
            doorway: vec![0; w * h],
            room_node: vec![0; w * h],
            room_edge: vec![[0; 8]; w * h],
            room_fat: vec![[0; 8]; w * h],
            narrow: vec![[u8::MAX; 8]; w * h],
        }
    }

    pub fn xy(&self, v: usize) -> (i32, i32) {
        ((v % self.w) as i32, (v / self.w) as i32)
    }

    pub fn node(&self, x: i32, y: i32) -> Option<usize> {
        (x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h)
            .then(|| y as usize * self.w + x as usize)
    }

    /// The neighbour of `v` in direction `d`.
    pub fn step(&self, v: usize, d: usize) -> Option<usize> {
        let (x, y) = self.xy(v);
        self.node(x + DIRS[d].0, y + DIRS[d].1)
    }

    /// The cell a diagonal step from `v` in direction `d` crosses, and its bit for that diagonal.
    pub fn cell(&self, v: usize, d: usize) -> (usize, u8) {
        let (x, y) = self.xy(v);
        let (dx, dy) = DIRS[d];
        let (cx, cy) = (x.min(x + dx), y.min(y + dy));
        let bit = if dx == dy { 1 } else { 2 };
        (cy as usize * self.w + cx as usize, bit)
    }

    /// Nothing at all on the node.
    pub fn is_free(&self, v: usize) -> bool {
        self.station[v].is_none() && self.pass[v] == 0 && self.port[v].iter().all(Option::is_none)
    }

    /// Stations on the eight neighbours of `v`.
    pub fn stations_near(&self, v: usize) -> u32 {
        (0..8)
            .filter_map(|d| self.step(v, d))
            .filter(|&u| self.station[u].is_some())
            .count() as u32
    }

    /// Record a routed path: ports at both ends of every step, diagonals, and the nodes passed.
    pub fn take(&mut self, path: &[usize], chain: usize, lines: usize) {
        for w in path.windows(2) {
            let d = self.dir(w[0], w[1]);
            self.port[w[0]][d] = Some(chain as u32);
            self.port[w[1]][opp(d)] = Some(chain as u32);
            if is_diag(d) {
                let (c, bit) = self.cell(w[0], d);
                self.diag[c] |= bit;
            }
        }
        for &v in &path[1..path.len().saturating_sub(1)] {
            if self.station[v].is_none() {
                self.pass[v] = self.pass[v].saturating_add(lines as u16);
            }
        }
    }

    /// Undo [`Grid::take`] for a path carrying `lines` lines.
    pub fn release(&mut self, path: &[usize], lines: usize) {
        for w in path.windows(2) {
            let d = self.dir(w[0], w[1]);
            self.port[w[0]][d] = None;
            self.port[w[1]][opp(d)] = None;
            if is_diag(d) {
                let (c, bit) = self.cell(w[0], d);
                self.diag[c] &= !bit;
            }
        }
        for &v in &path[1..path.len().saturating_sub(1)] {
            if self.station[v].is_none() {
                self.pass[v] = self.pass[v].saturating_sub(lines as u16);
            }
        }
    }

    /// Direction from `a` to its neighbour `b`.
    pub fn dir(&self, a: usize, b: usize) -> usize {
        let (ax, ay) = self.xy(a);
        let (bx, by) = self.xy(b);
        let d = ((bx - ax).signum(), (by - ay).signum());
        DIRS.iter().position(|&x| x == d).expect("neighbours")
    }
}
