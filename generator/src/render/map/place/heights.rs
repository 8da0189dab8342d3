//! Heights of items in their columns: the vertical travel of all strands, minimised.
//!
//! Why apart: this is the one numerical part of the layout (reweighted least squares, isotonic
//! regression per column); it runs once, before anything is widened, and its result never
//! changes afterwards, which is what makes the growth loop converge.

use super::straighten::straighten;
use super::*;

/// Vertical room kept above a station for a label of `lines` lines.
pub(super) fn above_station(lines: usize) -> f64 {
    LABEL_GAP + label_height(lines) + 2.0 * CLEAR + 3.0
}
/// Vertical gap between items otherwise.
pub(super) const ITEM_GAP: f64 = 8.0;
/// Sweeps of the priority method that snap nearly level strands to level.
pub(super) const SNAP_ROUNDS: usize = 4;
/// Smallest step (px) a strand's weight is computed for in the reweighted least squares.
pub(super) const IRLS_EPS: f64 = 0.1;
/// Reweighting rounds of the least squares.
pub(super) const IRLS_ROUNDS: usize = 20;

/// Height of a station marker with `n` slots.
pub(super) fn pill_h(n: usize) -> f64 {
    n.max(1) as f64 * PITCH + 6.0
}

pub(super) fn half_h(net: &Net, it: usize) -> f64 {
    let n = net.items[it].slots.len();
    match net.items[it].kind {
        ItemKind::Station(_) => pill_h(n) / 2.0 + 1.5,
        ItemKind::Dummy(_) => (n.max(1) - 1) as f64 * PITCH / 2.0 + LINE_W / 2.0,
    }
}

pub(super) fn sep(net: &Net, above: usize, below: usize) -> f64 {
    let gap = match net.items[below].kind {
        ItemKind::Station(_) => above_station(net.label_lines[below]),
        ItemKind::Dummy(_) => ITEM_GAP,
    };
    half_h(net, above) + half_h(net, below) + gap
}

pub(super) fn slot_index(net: &Net) -> Vec<usize> {
    let mut idx = vec![0; net.slots.len()];
    for it in &net.items {
        for (k, &sl) in it.slots.iter().enumerate() {
            idx[sl] = k;
        }
    }
    idx
}

pub(super) fn slot_offset(net: &Net, idx: &[usize], sl: usize) -> f64 {
    let n = net.items[net.slots[sl].item].slots.len();
    (idx[sl] as f64 - (n as f64 - 1.0) / 2.0) * PITCH
}

pub(super) fn slot_ys(net: &Net, ys: &[f64]) -> Vec<f64> {
    let idx = slot_index(net);
    (0..net.slots.len())
        .map(|sl| ys[net.slots[sl].item] + slot_offset(net, &idx, sl))
        .collect()
}

/// Move items of one column toward their desired heights, highest priority first, keeping
/// order and separations (Sugiyama's priority method).
pub(super) fn place_column(y: &mut [f64], seps: &[f64], desired: &[Option<f64>], prio: &[f64]) {
    let m = y.len();
    let mut order: Vec<usize> = (0..m).filter(|&i| desired[i].is_some()).collect();
    order.sort_by(|&a, &b| prio[b].total_cmp(&prio[a]).then(a.cmp(&b)));
    let mut fixed = vec![false; m];
    for i in order {
        let target = desired[i].expect("filtered");
        if target < y[i] {
            let mut lim = f64::MIN;
            let mut acc = 0.0;
            for j in (0..i).rev() {
                acc += seps[j];
                if fixed[j] {
                    lim = y[j] + acc;
                    break;
                }
            }
            y[i] = target.max(lim);
            for j in (0..i).rev() {
                if y[j] > y[j + 1] - seps[j] {
                    y[j] = y[j + 1] - seps[j];
                } else {
                    break;
                }
            }
        } else if target > y[i] {
            let mut lim = f64::MAX;
            let mut acc = 0.0;
            for j in i + 1..m {
                acc += seps[j - 1];
                if fixed[j] {
                    lim = y[j] - acc;
                    break;
                }
            }
            y[i] = target.min(lim);
            for j in i + 1..m {
                if y[j] < y[j - 1] + seps[j - 1] {
                    y[j] = y[j - 1] + seps[j - 1];
                } else {
                    break;
                }
            }
        }
        fixed[i] = true;
    }
}

/// For every item, its strands as (item at the other end, side, offset): the strand runs
/// level when `y[item] == y[other] + offset`. Fixed once slots are ordered.
pub(super) struct Links(Vec<Vec<(usize, bool, f64)>>);

impl Links {
    fn new(net: &Net, idx: &[usize]) -> Links {
        Links(
            (0..net.items.len())
                .map(|it| {
                    let c = net.items[it].col;
                    let mut v = Vec::new();
                    for &sl in &net.items[it].slots {
                        let s = &net.slots[sl];
                        for (st, right) in [(s.left, false), (s.right, true)] {
                            if let Some(st) = st {
                                let nsl = net.strand_slot(st, if right { c + 1 } else { c - 1 });
                                let d = slot_offset(net, idx, nsl) - slot_offset(net, idx, sl);
                                v.push((net.slots[nsl].item, right, d));
                            }
                        }
                    }
                    v
                })
                .collect(),
        )
    }

    /// Heights of `it` that would make each of its strands (on the chosen sides) level.
    pub(super) fn targets(&self, y: &[f64], it: usize, left: bool, right: bool) -> Vec<f64> {
        self.0[it]
            .iter()
            .filter(|l| if l.1 { right } else { left })
            .map(|&(n, _, d)| y[n] + d)
            .collect()
    }
}

/// Weighted least squares for one column under order and separation constraints:
/// minimise Σ w·(y − d)² with y[i+1] − y[i] ≥ sep[i]. With z = y − (prefix sum of seps) this
/// is isotonic regression, solved exactly by pooling adjacent violators.
pub(super) fn isotonic(d: &[f64], w: &[f64], seps: &[f64]) -> Vec<f64> {
    let m = d.len();
    let mut pre = vec![0.0; m];
    for i in 1..m {
        pre[i] = pre[i - 1] + seps[i - 1];
    }
    // Blocks: (weight, weighted sum, count).
    let mut blocks: Vec<(f64, f64, usize)> = Vec::new();
    for i in 0..m {
        blocks.push((w[i], w[i] * (d[i] - pre[i]), 1));
        while blocks.len() >= 2 {
            let b = blocks[blocks.len() - 1];
            let a = blocks[blocks.len() - 2];
            if a.1 / a.0 > b.1 / b.0 {
                blocks.pop();
                let last = blocks.last_mut().expect("two blocks");
                *last = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
            } else {
                break;
            }
        }
    }
    let mut out = Vec::with_capacity(m);
    for (wt, sum, n) in blocks {
        for _ in 0..n {
            let i = out.len();
            out.push(sum / wt + pre[i]);
        }
    }
    out
}

pub(super) fn is_isolated(net: &Net, it: usize) -> bool {
    net.items[it]
        .slots
        .iter()
        .all(|&sl| net.slots[sl].left.is_none() && net.slots[sl].right.is_none())
}

/// Heights of all items (item centers), on whole pixels.
///
/// First the balanced least-squares heights (every strand pulls both of its ends level, all
/// columns at once, by sweeping exact per-column solves until nothing moves); then a few sweeps
/// of the priority method snap strands that are nearly level to exactly level.
pub(super) fn assign_y(net: &Net) -> Vec<f64> {
    let idx = slot_index(net);
    let links = Links::new(net, &idx);
    let mut y = vec![0.0; net.items.len()];
    for col in &net.columns {
        let mut acc = 0.0;
        for (k, &it) in col.iter().enumerate() {
            if k > 0 {
                acc += sep(net, col[k - 1], it);
            }
            y[it] = acc;
        }
    }
    let nc = net.ncols;
    // Iteratively reweighted least squares toward the L1 optimum (least total vertical travel
    // of all strands): each strand weighs 1/max(|its step|, IRLS_EPS), so strands that are level
    // stay level and the steps gather on few strands instead of spreading as small jogs.
    let col_seps: Vec<Vec<f64>> = net
        .columns
        .iter()
        .map(|col| col.windows(2).map(|p| sep(net, p[0], p[1])).collect())
        .collect();
    let mut weights: Vec<Vec<f64>> = links.0.iter().map(|l| vec![1.0; l.len()]).collect();
    let (mut d, mut w) = (Vec::new(), Vec::new());
    for outer in 0..IRLS_ROUNDS {
        let sweeps = if outer == 0 { 200 } else { 60 };
        if outer > 0 {
            // Reweigh: each strand by 1 / its current step.
            for (it, ls) in links.0.iter().enumerate() {
                for (k, &(n, _, dd)) in ls.iter().enumerate() {
                    weights[it][k] = 1.0 / (y[n] + dd - y[it]).abs().max(IRLS_EPS);
                }
            }
        }
        for round in 0..sweeps {
            let mut moved = 0.0f64;
            for step in 0..nc {
                let c = if round % 2 == 0 { step } else { nc - 1 - step };
                let col = &net.columns[c];
                if col.is_empty() {
                    continue;
                }
                d.clear();
                w.clear();
                for &it in col {
                    let (mut sw, mut swt) = (0.0, 0.0);
                    for (k, &(n, _, dd)) in links.0[it].iter().enumerate() {
                        sw += weights[it][k];
                        swt += weights[it][k] * (y[n] + dd);
                    }
                    if sw > 0.0 {
                        d.push(swt / sw);
                        w.push(sw);
                    } else {
                        d.push(y[it]);
                        w.push(1e-3);
                    }
                }
                let ys = isotonic(&d, &w, &col_seps[c]);
                for (k, &it) in col.iter().enumerate() {
                    moved = moved.max((ys[k] - y[it]).abs());
                    y[it] = ys[k];
                }
            }
            if moved < 0.02 {
                break;
            }
        }
    }
    for v in y.iter_mut() {
        *v = v.round();
    }
    // Snap: move items to the median of what their strands ask for (exact alignment), the
    // items with more strands first.
    for round in 0..SNAP_ROUNDS {
        let cols: Vec<usize> = if round % 2 == 0 {
            (0..nc).collect()
        } else {
            (0..nc).rev().collect()
        };
        for c in cols {
            let col = net.columns[c].clone();
            if col.is_empty() {
                continue;
            }
            let mut desired = Vec::with_capacity(col.len());
            let mut prio = Vec::with_capacity(col.len());
            for &it in &col {
                let mut t = links.targets(&y, it, true, true);
                t.sort_by(|a, b| a.total_cmp(b));
                // The median strand's wish, or the nearest to the current height on ties.
                let want = if t.is_empty() {
                    None
                } else if t.len() % 2 == 1 {
                    Some(t[t.len() / 2])
                } else {
                    let (a, b) = (t[t.len() / 2 - 1], t[t.len() / 2]);
                    Some(if (a - y[it]).abs() <= (b - y[it]).abs() {
                        a
                    } else {
                        b
                    })
                };
                desired.push(want);
                prio.push(match net.items[it].kind {
                    ItemKind::Dummy(_) => 1000.0 + net.items[it].slots.len() as f64,
                    ItemKind::Station(_) => t.len() as f64,
                });
            }
            let seps: Vec<f64> = col.windows(2).map(|p| sep(net, p[0], p[1])).collect();
            let mut ys: Vec<f64> = col.iter().map(|&it| y[it]).collect();
            place_column(&mut ys, &seps, &desired, &prio);
            for (k, &it) in col.iter().enumerate() {
                y[it] = ys[k].round();
            }
        }
    }
    straighten(net, &idx, &links, &mut y);
    // Items without strands (cards on no line) sit right under the item above them.
    for col in &net.columns {
        for k in 1..col.len() {
            if is_isolated(net, col[k]) {
                y[col[k]] = y[col[k - 1]] + sep(net, col[k - 1], col[k]);
            }
        }
    }
    y
}
