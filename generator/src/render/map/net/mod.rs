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
//!
//! Files: this one holds the types and `Net::build`; `columns` does step 1 and `order` step 3.

mod columns;
mod order;

use super::text::wrap_label;
use crate::model::Book;
use columns::columns;
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
}
