//! Ordering: items in each column and slots in each item, to minimise strand crossings.
//!
//! Why apart: the barycenter sweeps, the transposition pass and the crossing counts are one
//! self-contained heuristic (step 3 of the network), tuned and measured on its own.

use super::*;

impl Net {
    /// Items linked to `item` in the neighbouring column on one side, with multiplicity.
    pub(super) fn neighbours(&self, item: usize, right: bool) -> Vec<usize> {
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

    pub(super) fn crossings(&self, pos: &[usize]) -> usize {
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
    pub(super) fn channel_crossings(&self, pos: &[usize], c: usize) -> usize {
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
    pub(super) fn transpose(&mut self) {
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

    pub(super) fn positions(&self) -> Vec<usize> {
        let mut pos = vec![0; self.items.len()];
        for col in &self.columns {
            for (i, &it) in col.iter().enumerate() {
                pos[it] = i;
            }
        }
        pos
    }

    /// Order items in columns (barycenter sweeps) and slots in items.
    pub(super) fn order(&mut self, input: &Input) {
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
