//! From the book to a layered line network: which column each station goes in, which strands
//! of which lines run between columns, and in what order things are stacked in each column.
//!
//! The approach is the layered (Sugiyama) one, adapted to metro lines:
//! 1. **Columns.** Every consecutive pair of stations on a line, and every `requires` edge, asks
//!    for "left of". Conflicting requests (two paths visiting cards in opposite orders) are
//!    settled by a weighted feedback-arc ordering (Eades–Lin–Smyth) in which line edges weigh
//!    far more than `requires` edges; then columns are the longest-path layering, tightened by
//!    moving each station to the weighted median of its line neighbours, so lines run left to
//!    right from basics to advanced cards with few long hops.
//! 2. **Strands and slots.** Each hop of a line between two stations is a strand; a hop that
//!    spans several columns passes a dummy item in each column in between (one dummy per station
//!    pair, shared by all lines on that pair, so shared stretches stay together as a bundle).
//!    At a station every line visit gets a slot: lines pass through stations horizontally, side
//!    by side, which is what makes an interchange one joined marker across its lines.
//! 3. **Order.** Items in each column are ordered by barycenter sweeps that minimise strand
//!    crossings (keeping the best ordering seen); slots in each item are ordered by where their
//!    strands go next, with ties by line so bundles keep one order along their whole run.

use super::text::wrap_label;
use crate::model::Book;
use std::collections::BTreeMap;

/// What the layout needs to know about one station.
#[derive(Debug, Clone)]
pub struct StationIn {
    pub id: String,
    pub title: String,
    /// The label's lines (one or two).
    pub label: Vec<String>,
}

/// One line: its stops as station indices, consecutive repeats removed.
#[derive(Debug, Clone)]
pub struct LineIn {
    pub id: String,
    pub title: String,
    pub color: String,
    pub stops: Vec<usize>,
}

/// The layout's input: stations, lines and prerequisite edges, independent of the book types.
#[derive(Debug, Clone, Default)]
pub struct Input {
    pub stations: Vec<StationIn>,
    pub lines: Vec<LineIn>,
    /// (prerequisite, card) pairs.
    pub requires: Vec<(usize, usize)>,
    /// Line indices in reading order (start paths first).
    pub reading: Vec<usize>,
}

/// Widest label line on the map, px (labels wrap into two lines; the full title is in the
/// tooltip).
pub const LABEL_W: f64 = 100.0;

impl Input {
    pub fn from_book(book: &Book) -> Input {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut stations = Vec::new();
        for c in &book.cards {
            if index.contains_key(c.id.as_str()) {
                continue;
            }
            index.insert(&c.id, stations.len());
            stations.push(StationIn {
                id: c.id.clone(),
                title: c.title.clone(),
                label: wrap_label(&c.title, LABEL_W),
            });
        }
        let mut lines = Vec::new();
        let mut line_of_path = vec![None; book.paths.len()];
        for (pi, p) in book.paths.iter().enumerate() {
            let mut stops: Vec<usize> = Vec::new();
            for s in &p.stations {
                if let Some(&i) = index.get(s.as_str()) {
                    if stops.last() != Some(&i) {
                        stops.push(i);
                    }
                }
            }
            if stops.is_empty() {
                continue;
            }
            line_of_path[pi] = Some(lines.len());
            lines.push(LineIn {
                id: p.id.clone(),
                title: p.title.clone(),
                color: p.color.clone(),
                stops,
            });
        }
        let mut requires = Vec::new();
        for c in &book.cards {
            let to = index[c.id.as_str()];
            for r in &c.requires {
                if let Some(&from) = index.get(r.as_str()) {
                    if from != to && !requires.contains(&(from, to)) {
                        requires.push((from, to));
                    }
                }
            }
        }
        let reading = crate::render::reading_order(book)
            .into_iter()
            .filter_map(|pi| line_of_path[pi])
            .collect();
        Input {
            stations,
            lines,
            requires,
            reading,
        }
    }
}

/// A hop of a line between two consecutive stops.
#[derive(Debug, Clone)]
pub struct Strand {
    pub line: usize,
    /// Left and right station (by column).
    pub left: usize,
    pub right: usize,
    /// Does the line travel right to left on this hop?
    pub reversed: bool,
    /// The strand's slot in each column from `col[left]` to `col[right]`.
    pub slots: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Station(usize),
    /// A place holder on a long hop between two stations (edge index).
    Dummy(usize),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub col: usize,
    pub kind: ItemKind,
    /// Slots, top to bottom.
    pub slots: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Slot {
    pub item: usize,
    pub line: usize,
    /// Strand leaving to the left / to the right of the item.
    pub left: Option<usize>,
    pub right: Option<usize>,
}

/// The layered network, before coordinates.
#[derive(Debug, Clone)]
pub struct Net {
    pub col: Vec<usize>,
    pub ncols: usize,
    pub strands: Vec<Strand>,
    pub items: Vec<Item>,
    pub slots: Vec<Slot>,
    /// Item ids per column, top to bottom.
    pub columns: Vec<Vec<usize>>,
    /// Station index → its item.
    pub station_item: Vec<usize>,
    /// Per line, per stop: the slots of that visit (two for a line that turns back at a stop).
    pub visits: Vec<Vec<Vec<usize>>>,
    /// Per line, per hop: the strand.
    pub hops: Vec<Vec<usize>>,
    /// Lines of each item's label (0 for dummies).
    pub label_lines: Vec<usize>,
}

impl Net {
    pub fn build(input: &Input) -> Net {
        let col = columns(input);
        let ncols = col.iter().copied().max().map_or(1, |m| m + 1);
        let mut net = Net {
            col,
            ncols,
            strands: Vec::new(),
            items: Vec::new(),
            slots: Vec::new(),
            columns: vec![Vec::new(); ncols],
            station_item: Vec::new(),
            visits: Vec::new(),
            hops: Vec::new(),
            label_lines: Vec::new(),
        };
        for s in 0..input.stations.len() {
            net.station_item.push(net.items.len());
            net.items.push(Item {
                col: net.col[s],
                kind: ItemKind::Station(s),
                slots: Vec::new(),
            });
        }
        // Strands, grouped into edges (station pairs) in order of first appearance.
        let mut edges: Vec<(usize, usize, Vec<usize>)> = Vec::new();
        let mut edge_of: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for (li, l) in input.lines.iter().enumerate() {
            let mut hops = Vec::new();
            for w in l.stops.windows(2) {
                let (a, b) = (w[0], w[1]);
                let reversed = net.col[a] > net.col[b];
                let (left, right) = if reversed { (b, a) } else { (a, b) };
                let sid = net.strands.len();
                net.strands.push(Strand {
                    line: li,
                    left,
                    right,
                    reversed,
                    slots: Vec::new(),
                });
                let e = *edge_of.entry((left, right)).or_insert_with(|| {
                    edges.push((left, right, Vec::new()));
                    edges.len() - 1
                });
                edges[e].2.push(sid);
                hops.push(sid);
            }
            net.hops.push(hops);
        }
        // Station slots, one per visit (two when the line turns back at the stop).
        let mut left_slot = vec![usize::MAX; net.strands.len()];
        let mut right_slot = vec![usize::MAX; net.strands.len()];
        for (li, l) in input.lines.iter().enumerate() {
            let mut visits = Vec::new();
            for (k, &s) in l.stops.iter().enumerate() {
                let item = net.station_item[s];
                let prev = k.checked_sub(1).map(|h| net.hops[li][h]);
                let next = net.hops[li].get(k).copied();
                // Which side of the station each strand leaves on (true: to the right).
                let sides: Vec<(usize, bool)> = [prev, next]
                    .into_iter()
                    .flatten()
                    .map(|st| (st, net.strands[st].left == s))
                    .collect();
                let mut vs = Vec::new();
                let mut add = |net: &mut Net, left: Option<usize>, right: Option<usize>| {
                    let id = net.slots.len();
                    net.slots.push(Slot {
                        item,
                        line: li,
                        left,
                        right,
                    });
                    net.items[item].slots.push(id);
                    if let Some(st) = left {
                        right_slot[st] = id;
                    }
                    if let Some(st) = right {
                        left_slot[st] = id;
                    }
                    vs.push(id);
                };
                match sides.as_slice() {
                    [] => add(&mut net, None, None),
                    [(p, sp), (n, sn)] if sp != sn => {
                        let (lft, rgt) = if *sp { (*n, *p) } else { (*p, *n) };
                        add(&mut net, Some(lft), Some(rgt));
                    }
                    _ => {
                        for &(st, right) in &sides {
                            if right {
                                add(&mut net, None, Some(st));
                            } else {
                                add(&mut net, Some(st), None);
                            }
                        }
                    }
                }
                visits.push(vs);
            }
            net.visits.push(visits);
        }
        // Dummies on long edges, one per column in between, shared by the edge's strands.
        for (e, (left, right, strands)) in edges.iter().enumerate() {
            let (c0, c1) = (net.col[*left], net.col[*right]);
            for st in strands {
                net.strands[*st].slots.push(left_slot[*st]);
            }
            for c in c0 + 1..c1 {
                let item = net.items.len();
                net.items.push(Item {
                    col: c,
                    kind: ItemKind::Dummy(e),
                    slots: Vec::new(),
                });
                for &st in strands {
                    let id = net.slots.len();
                    net.slots.push(Slot {
                        item,
                        line: net.strands[st].line,
                        left: Some(st),
                        right: Some(st),
                    });
                    net.items[item].slots.push(id);
                    net.strands[st].slots.push(id);
                }
            }
            for st in strands {
                net.strands[*st].slots.push(right_slot[*st]);
            }
        }
        for (i, it) in net.items.iter().enumerate() {
            net.columns[it.col].push(i);
        }
        net.label_lines = net
            .items
            .iter()
            .map(|it| match it.kind {
                ItemKind::Station(s) => input.stations[s].label.len().max(1),
                ItemKind::Dummy(_) => 0,
            })
            .collect();
        net.order(input);
        net
    }

    /// The strand's slot in column `c`.
    pub fn strand_slot(&self, st: usize, c: usize) -> usize {
        let s = &self.strands[st];
        s.slots[c - self.col[s.left]]
    }

    /// Items linked to `item` in the neighbouring column on one side, with multiplicity.
    fn neighbours(&self, item: usize, right: bool) -> Vec<usize> {
        let c = self.items[item].col;
        self.items[item]
            .slots
            .iter()
            .filter_map(|&sl| {
                if right {
                    self.slots[sl].right
                } else {
                    self.slots[sl].left
                }
            })
            .map(|st| self.slots[self.strand_slot(st, if right { c + 1 } else { c - 1 })].item)
            .collect()
    }

    fn crossings(&self, pos: &[usize]) -> usize {
        let mut total = 0;
        for c in 0..self.ncols.saturating_sub(1) {
            let mut segs: Vec<(usize, usize)> = Vec::new();
            for &it in &self.columns[c] {
                for n in self.neighbours(it, true) {
                    segs.push((pos[it], pos[n]));
                }
            }
            for i in 0..segs.len() {
                for j in i + 1..segs.len() {
                    let (a, b) = (segs[i], segs[j]);
                    if (a.0 < b.0 && a.1 > b.1) || (a.0 > b.0 && a.1 < b.1) {
                        total += 1;
                    }
                }
            }
        }
        total
    }

    /// Strand crossings between column `c` and column `c + 1` for the given positions.
    fn channel_crossings(&self, pos: &[usize], c: usize) -> usize {
        let mut segs: Vec<(usize, usize)> = Vec::new();
        for &it in &self.columns[c] {
            for n in self.neighbours(it, true) {
                segs.push((pos[it], pos[n]));
            }
        }
        let mut total = 0;
        for i in 0..segs.len() {
            for j in i + 1..segs.len() {
                let (a, b) = (segs[i], segs[j]);
                if (a.0 < b.0 && a.1 > b.1) || (a.0 > b.0 && a.1 < b.1) {
                    total += 1;
                }
            }
        }
        total
    }

    /// Swap neighbouring items in a column while that removes crossings on either side
    /// (the "transpose" refinement of layered drawing).
    fn transpose(&mut self) {
        let mut pos = self.positions();
        for _ in 0..8 {
            let mut improved = false;
            for c in 0..self.ncols {
                for k in 0..self.columns[c].len().saturating_sub(1) {
                    let local = |net: &Net, pos: &[usize]| {
                        let left = if c > 0 {
                            net.channel_crossings(pos, c - 1)
                        } else {
                            0
                        };
                        let right = if c + 1 < net.ncols {
                            net.channel_crossings(pos, c)
                        } else {
                            0
                        };
                        left + right
                    };
                    let before = local(self, &pos);
                    let (a, b) = (self.columns[c][k], self.columns[c][k + 1]);
                    pos.swap(a, b);
                    if local(self, &pos) < before {
                        self.columns[c].swap(k, k + 1);
                        improved = true;
                    } else {
                        pos.swap(a, b);
                    }
                }
            }
            if !improved {
                break;
            }
        }
    }

    fn positions(&self) -> Vec<usize> {
        let mut pos = vec![0; self.items.len()];
        for col in &self.columns {
            for (i, &it) in col.iter().enumerate() {
                pos[it] = i;
            }
        }
        pos
    }

    /// Order items in columns (barycenter sweeps) and slots in items.
    fn order(&mut self, input: &Input) {
        // Initial order: stations by first appearance when reading the lines in reading order;
        // dummies right after the left station of their hop.
        let mut seen = vec![usize::MAX; input.stations.len()];
        let mut next = 0;
        for &li in &input.reading {
            for &s in &input.lines[li].stops {
                if seen[s] == usize::MAX {
                    seen[s] = next;
                    next += 1;
                }
            }
        }
        for s in seen.iter_mut().filter(|s| **s == usize::MAX) {
            *s = next;
            next += 1;
        }
        let key = |net: &Net, it: usize| -> (usize, usize) {
            match net.items[it].kind {
                ItemKind::Station(s) => (seen[s], 0),
                ItemKind::Dummy(_) => {
                    let st = net.slots[net.items[it].slots[0]].left.expect("dummy has strands");
                    (seen[net.strands[st].left], 1 + it)
                }
            }
        };
        for c in 0..self.ncols {
            let mut col = std::mem::take(&mut self.columns[c]);
            col.sort_by_key(|&it| key(self, it));
            self.columns[c] = col;
        }
        let mut pos = self.positions();
        let mut best = (self.crossings(&pos), self.columns.clone());
        for round in 0..16 {
            let forward = round % 2 == 0;
            let cols: Vec<usize> = if forward {
                (1..self.ncols).collect()
            } else {
                (0..self.ncols.saturating_sub(1)).rev().collect()
            };
            for c in cols {
                let mut keyed: Vec<(f64, usize, usize)> = self.columns[c]
                    .iter()
                    .map(|&it| {
                        let ns = self.neighbours(it, !forward);
                        let bary = if ns.is_empty() {
                            pos[it] as f64
                        } else {
                            ns.iter().map(|&n| pos[n] as f64).sum::<f64>() / ns.len() as f64
                        };
                        (bary, pos[it], it)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                self.columns[c] = keyed.into_iter().map(|k| k.2).collect();
                for (i, &it) in self.columns[c].iter().enumerate() {
                    pos[it] = i;
                }
            }
            let cr = self.crossings(&pos);
            if cr < best.0 {
                best = (cr, self.columns.clone());
            }
        }
        self.columns = best.1;
        self.transpose();
        // Items without strands go to the bottom of their column.
        for c in 0..self.ncols {
            let mut col = std::mem::take(&mut self.columns[c]);
            col.sort_by_key(|&it| {
                self.items[it]
                    .slots
                    .iter()
                    .all(|&sl| self.slots[sl].left.is_none() && self.slots[sl].right.is_none())
            });
            self.columns[c] = col;
        }
        self.order_slots(None);
    }

    /// Order the slots inside every item by where their strands lead. `ys` are slot y
    /// positions when known; otherwise ranks in the neighbouring columns are used.
    pub fn order_slots(&mut self, ys: Option<&[f64]>) {
        let pos = self.positions();
        let rank: Vec<f64> = match ys {
            Some(y) => y.to_vec(),
            None => {
                let mut r = vec![0.0; self.slots.len()];
                for col in &self.columns {
                    let n = col.len().max(1) as f64;
                    for &it in col {
                        let k = self.items[it].slots.len().max(1) as f64;
                        for (j, &sl) in self.items[it].slots.iter().enumerate() {
                            r[sl] = (pos[it] as f64 + (j as f64 + 0.5) / k) / n;
                        }
                    }
                }
                r
            }
        };
        let mut rank = rank;
        for _ in 0..4 {
            for it in 0..self.items.len() {
                let c = self.items[it].col;
                let mut keyed: Vec<(f64, usize, usize, usize)> = self.items[it]
                    .slots
                    .iter()
                    .map(|&sl| {
                        let s = &self.slots[sl];
                        let mut acc = Vec::new();
                        if let Some(st) = s.left {
                            acc.push(rank[self.strand_slot(st, c - 1)]);
                        }
                        if let Some(st) = s.right {
                            acc.push(rank[self.strand_slot(st, c + 1)]);
                        }
                        let k = if acc.is_empty() {
                            rank[sl]
                        } else {
                            acc.iter().sum::<f64>() / acc.len() as f64
                        };
                        (k, s.line, sl, sl)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
                // Keep the item's rank span; reassign ranks in the new order.
                let mut old: Vec<f64> = self.items[it].slots.iter().map(|&sl| rank[sl]).collect();
                old.sort_by(|a, b| a.total_cmp(b));
                self.items[it].slots = keyed.iter().map(|k| k.3).collect();
                for (j, &sl) in self.items[it].slots.iter().enumerate() {
                    rank[sl] = old[j];
                }
            }
        }
    }
}

/// Column of every station.
fn columns(input: &Input) -> Vec<usize> {
    let n = input.stations.len();
    // Weighted directed requests "a left of b".
    let mut w: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut line_pairs: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for l in &input.lines {
        for p in l.stops.windows(2) {
            if p[0] != p[1] {
                *w.entry((p[0], p[1])).or_default() += 8.0;
                *line_pairs.entry((p[0].min(p[1]), p[0].max(p[1]))).or_default() += 1.0;
            }
        }
    }
    for &(a, b) in &input.requires {
        *w.entry((a, b)).or_default() += 1.0;
    }
    // Eades–Lin–Smyth: sinks to the back, sources to the front, else the best out−in.
    let mut outw = vec![0.0; n];
    let mut inw = vec![0.0; n];
    let mut out_adj: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    let mut in_adj: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (&(a, b), &x) in &w {
        outw[a] += x;
        inw[b] += x;
        out_adj[a].push((b, x));
        in_adj[b].push((a, x));
    }
    let mut alive = vec![true; n];
    let mut front = Vec::new();
    let mut back = Vec::new();
    let mut left = n;
    let remove = |v: usize, alive: &mut Vec<bool>, outw: &mut Vec<f64>, inw: &mut Vec<f64>| {
        alive[v] = false;
        for &(u, x) in &in_adj[v] {
            outw[u] -= x;
        }
        for &(u, x) in &out_adj[v] {
            inw[u] -= x;
        }
    };
    while left > 0 {
        if let Some(v) = (0..n).find(|&v| alive[v] && outw[v] <= 1e-9 && inw[v] > 1e-9) {
            back.push(v);
            remove(v, &mut alive, &mut outw, &mut inw);
        } else if let Some(v) = (0..n).find(|&v| alive[v] && inw[v] <= 1e-9) {
            front.push(v);
            remove(v, &mut alive, &mut outw, &mut inw);
        } else {
            let v = (0..n)
                .filter(|&v| alive[v])
                .max_by(|&a, &b| (outw[a] - inw[a]).total_cmp(&(outw[b] - inw[b])).then(b.cmp(&a)))
                .expect("some node is left");
            front.push(v);
            remove(v, &mut alive, &mut outw, &mut inw);
        }
        left -= 1;
    }
    back.reverse();
    front.extend(back);
    let mut seq = vec![0; n];
    for (i, &v) in front.iter().enumerate() {
        seq[v] = i;
    }
    // Constraints consistent with that order: line hops in either direction, requires forwards.
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut add = |a: usize, b: usize| {
        if !succ[a].contains(&b) {
            succ[a].push(b);
            pred[b].push(a);
        }
    };
    for &(a, b) in line_pairs.keys() {
        if seq[a] < seq[b] {
            add(a, b);
        } else {
            add(b, a);
        }
    }
    for &(a, b) in &input.requires {
        if seq[a] < seq[b] {
            add(a, b);
        }
    }
    let mut rank = vec![0i64; n];
    for &v in &front {
        rank[v] = pred[v].iter().map(|&u| rank[u] + 1).max().unwrap_or(0);
    }
    // Tighten: each station to the weighted median of where its line neighbours want it.
    let mut nb: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (&(a, b), &x) in &line_pairs {
        nb[a].push((b, x));
        nb[b].push((a, x));
    }
    for round in 0..40 {
        let mut changed = false;
        let order: Vec<usize> = if round % 2 == 0 {
            front.clone()
        } else {
            front.iter().rev().copied().collect()
        };
        for &v in &order {
            if nb[v].is_empty() {
                continue;
            }
            let lo = pred[v].iter().map(|&u| rank[u] + 1).max().unwrap_or(i64::MIN);
            let hi = succ[v].iter().map(|&u| rank[u] - 1).min().unwrap_or(i64::MAX);
            let mut targets: Vec<(i64, f64)> = nb[v]
                .iter()
                .map(|&(u, x)| (if seq[u] < seq[v] { rank[u] + 1 } else { rank[u] - 1 }, x))
                .collect();
            targets.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let total: f64 = targets.iter().map(|t| t.1).sum();
            let mut acc = 0.0;
            let mut med = targets[0].0;
            for &(t, x) in &targets {
                acc += x;
                med = t;
                if acc * 2.0 >= total {
                    break;
                }
            }
            // Constraints are consistent, so lo <= hi; guard anyway.
            let new = med.min(hi).max(lo);
            if new != rank[v] {
                rank[v] = new;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let min = rank.iter().copied().min().unwrap_or(0);
    rank.iter().map(|&r| (r - min) as usize).collect()
}
