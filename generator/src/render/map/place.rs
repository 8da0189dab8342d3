//! Coordinates: heights of items in their columns, column positions, labels and routes, grown
//! until the map measures clean.
//!
//! * **Heights** minimise the total vertical travel of all strands (an L1 objective, so most
//!   strands end up exactly level and the steps gather on few of them) under order and
//!   separation constraints in each column: iteratively reweighted least squares, each column
//!   solved exactly by isotonic regression, sweeping until nothing moves; then a few sweeps of
//!   the priority method of layered drawing snap nearly level strands to level, and a dynamic
//!   programme per run of pass-through items (long hops, stations one bundle runs through)
//!   leaves each run with the fewest steps. The separation above a station keeps room for its
//!   label, so a label above its station never meets its own column.
//! * **Labels** are placed before routing, each at the first free candidate position (above,
//!   below, beside, diagonal; see [`candidates`]), free of every station, every stroke that is
//!   already certain (lines through stations and dummies, straight hops) and every other label.
//! * **Routes** then treat labels as obstacles (see `route`).
//! * If a label finds no place, a channel is too narrow for its routes, or the finished map
//!   measures any overlap, the channels involved are widened and everything from the column
//!   positions on is done again. Heights never change, so this converges: wide enough channels
//!   separate every label and every bend.

use super::geom::{pt, simplify, Pt, Rect, EPS};
use super::net::{Input, ItemKind, Net};
use super::route::{self, Channel, Unit};
use super::stats::MapStats;
use super::text::{label_height, text_width, BASELINE};
use super::{
    Align, Anchor, Layout, LegendEntry, LineGeom, StationGeom, CLEAR, LABEL_GAP, LINE_W, MARGIN, PILL_W,
    PITCH, STUB,
};

/// Rounds of widening before giving up (then the map is drawn as it is and the stats say so).
const MAX_ROUNDS: usize = 60;
/// Widenings of one channel after which its routes may run along each other rather than fail.
const RELAX_AFTER: usize = 6;
/// Widenings after which a channel is routed whatever it touches (a layout bug; the stats
/// then report it instead of the map growing without end).
const FORCE_AFTER: usize = 12;
/// Vertical room kept above a station for a label of `lines` lines.
fn above_station(lines: usize) -> f64 {
    LABEL_GAP + label_height(lines) + 2.0 * CLEAR + 3.0
}
/// Vertical gap between items otherwise.
const ITEM_GAP: f64 = 8.0;
/// Sweeps of the priority method that snap nearly level strands to level.
const SNAP_ROUNDS: usize = 4;
/// Starting channel width as a share of what keeps centered labels of neighbouring columns apart.
const INITIAL_CHANNEL: f64 = 0.55;
/// Smallest step (px) a strand's weight is computed for in the reweighted least squares.
const IRLS_EPS: f64 = 0.1;
/// Reweighting rounds of the least squares.
const IRLS_ROUNDS: usize = 20;

/// Height of a station marker with `n` slots.
pub fn pill_h(n: usize) -> f64 {
    n.max(1) as f64 * PITCH + 6.0
}

fn half_h(net: &Net, it: usize) -> f64 {
    let n = net.items[it].slots.len();
    match net.items[it].kind {
        ItemKind::Station(_) => pill_h(n) / 2.0 + 1.5,
        ItemKind::Dummy(_) => (n.max(1) - 1) as f64 * PITCH / 2.0 + LINE_W / 2.0,
    }
}

fn sep(net: &Net, above: usize, below: usize) -> f64 {
    let gap = match net.items[below].kind {
        ItemKind::Station(_) => above_station(net.label_lines[below]),
        ItemKind::Dummy(_) => ITEM_GAP,
    };
    half_h(net, above) + half_h(net, below) + gap
}

fn slot_index(net: &Net) -> Vec<usize> {
    let mut idx = vec![0; net.slots.len()];
    for it in &net.items {
        for (k, &sl) in it.slots.iter().enumerate() {
            idx[sl] = k;
        }
    }
    idx
}

fn slot_offset(net: &Net, idx: &[usize], sl: usize) -> f64 {
    let n = net.items[net.slots[sl].item].slots.len();
    (idx[sl] as f64 - (n as f64 - 1.0) / 2.0) * PITCH
}

fn slot_ys(net: &Net, ys: &[f64]) -> Vec<f64> {
    let idx = slot_index(net);
    (0..net.slots.len())
        .map(|sl| ys[net.slots[sl].item] + slot_offset(net, &idx, sl))
        .collect()
}

/// Move items of one column toward their desired heights, highest priority first, keeping
/// order and separations (Sugiyama's priority method).
fn place_column(y: &mut [f64], seps: &[f64], desired: &[Option<f64>], prio: &[f64]) {
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
struct Links(Vec<Vec<(usize, bool, f64)>>);

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
    fn targets(&self, y: &[f64], it: usize, left: bool, right: bool) -> Vec<f64> {
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
fn isotonic(d: &[f64], w: &[f64], seps: &[f64]) -> Vec<f64> {
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

fn is_isolated(net: &Net, it: usize) -> bool {
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
fn assign_y(net: &Net) -> Vec<f64> {
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

/// Make strands level where the separations allow: move single items, and whole chains of
/// dummies (a long hop), to the height that makes the most strands run exactly level, never
/// past their neighbours in the column. Small steps of a few pixels are what this removes.
fn straighten(net: &Net, idx: &[usize], links: &Links, y: &mut [f64]) {
    // Position of every item in its column, for the free interval.
    let mut at = vec![(0usize, 0usize); net.items.len()];
    for (c, col) in net.columns.iter().enumerate() {
        for (k, &it) in col.iter().enumerate() {
            at[it] = (c, k);
        }
    }
    let free = |y: &[f64], it: usize| -> (f64, f64) {
        let (c, k) = at[it];
        let col = &net.columns[c];
        let lo = if k > 0 {
            y[col[k - 1]] + sep(net, col[k - 1], it)
        } else {
            f64::MIN
        };
        let hi = if k + 1 < col.len() {
            y[col[k + 1]] - sep(net, it, col[k + 1])
        } else {
            f64::MAX
        };
        (lo, hi)
    };
    // Strands of an item that run level at height `h`.
    let level = |y: &[f64], it: usize, h: f64, skip: &dyn Fn(usize) -> bool| -> usize {
        let c = net.items[it].col;
        let mut n = 0;
        for &sl in &net.items[it].slots {
            let s = &net.slots[sl];
            for (st, nc) in [(s.left, c.wrapping_sub(1)), (s.right, c + 1)] {
                if let Some(st) = st {
                    let nsl = net.strand_slot(st, nc);
                    let nit = net.slots[nsl].item;
                    if skip(nit) {
                        continue;
                    }
                    let want = y[nit] + slot_offset(net, idx, nsl) - slot_offset(net, idx, sl);
                    if (want - h).abs() < 0.5 {
                        n += 1;
                    }
                }
            }
        }
        n
    };
    // Chains: runs of pass-through items (every slot has a strand on both sides, all strands
    // come from one item and go to one item, as one ordered bundle): dummies of a long hop,
    // and stations that one bundle runs through. Each chain can take any heights inside its
    // items' free intervals without touching anything else.
    let nb_of = |it: usize, right: bool| -> Option<(usize, f64)> {
        let c = net.items[it].col;
        let mut found: Option<(usize, f64)> = None;
        for &sl in &net.items[it].slots {
            let s = &net.slots[sl];
            let st = if right { s.right } else { s.left }?;
            let nsl = net.strand_slot(st, if right { c + 1 } else { c - 1 });
            let nit = net.slots[nsl].item;
            let d = slot_offset(net, idx, nsl) - slot_offset(net, idx, sl);
            match found {
                None => found = Some((nit, d)),
                Some((n, d0)) if n == nit && (d - d0).abs() < 0.25 => {}
                _ => return None,
            }
        }
        found
    };
    // (left neighbour, offset), (right neighbour, offset) of each pass-through item.
    type Ends = ((usize, f64), (usize, f64));
    let simple: Vec<Option<Ends>> = (0..net.items.len())
        .map(|it| Some((nb_of(it, false)?, nb_of(it, true)?)))
        .collect();
    let linked = |a: usize, b: usize| -> bool {
        matches!((simple[a], simple[b]), (Some((_, (r, _))), Some(((l, _), _))) if r == b && l == a)
    };
    let mut chains: Vec<Vec<usize>> = Vec::new();
    for it in 0..net.items.len() {
        let Some(((l, _), _)) = simple[it] else { continue };
        if linked(l, it) {
            continue; // not the start of its chain
        }
        let mut ch = vec![it];
        let mut cur = it;
        while let Some((_, (r, _))) = simple[cur] {
            if !linked(cur, r) {
                break;
            }
            ch.push(r);
            cur = r;
        }
        chains.push(ch);
    }
    for _ in 0..6 {
        let mut changed = false;
        // Whole chains first: choose heights for a long hop's dummies (each inside its free
        // interval) with the fewest steps from the left station to the right one, by dynamic
        // programming over candidate heights; ties go to the least movement.
        for ch in &chains {
            let m = ch.len();
            let (first, last) = (ch[0], ch[m - 1]);
            let l = links
                .targets(y, first, true, false)
                .first()
                .copied()
                .map(f64::round);
            let r = links
                .targets(y, last, false, true)
                .first()
                .copied()
                .map(f64::round);
            let mut hs: Vec<f64> = ch.iter().map(|&it| y[it]).chain(l).chain(r).collect();
            hs.sort_by(|a, b| a.total_cmp(b));
            hs.dedup();
            let iv: Vec<(f64, f64)> = ch.iter().map(|&it| free(y, it)).collect();
            let ok = |k: usize, h: f64| h >= iv[k].0 - 1e-9 && h <= iv[k].1 + 1e-9;
            let step = |a: f64, b: Option<f64>| b.is_some_and(|b| (a - b).abs() > 0.25) as usize;
            // cost[k][j]: (steps, movement) with dummy k at hs[j]; back pointers.
            let inf = (usize::MAX / 4, f64::MAX);
            let mut cost = vec![vec![inf; hs.len()]; m];
            let mut back = vec![vec![0usize; hs.len()]; m];
            for (j, &h) in hs.iter().enumerate() {
                if ok(0, h) {
                    cost[0][j] = (step(h, l), (h - y[first]).abs());
                }
            }
            for k in 1..m {
                for (j, &h) in hs.iter().enumerate() {
                    if !ok(k, h) {
                        continue;
                    }
                    for (jj, &hp) in hs.iter().enumerate() {
                        let c = cost[k - 1][jj];
                        if c.0 >= inf.0 {
                            continue;
                        }
                        let cand = (c.0 + step(h, Some(hp)), c.1 + (h - y[ch[k]]).abs());
                        if cand.0 < cost[k][j].0 || (cand.0 == cost[k][j].0 && cand.1 < cost[k][j].1 - 1e-9) {
                            cost[k][j] = cand;
                            back[k][j] = jj;
                        }
                    }
                }
            }
            let mut best: Option<(usize, f64, usize)> = None;
            for (j, &h) in hs.iter().enumerate() {
                let c = cost[m - 1][j];
                if c.0 >= inf.0 {
                    continue;
                }
                let total = (c.0 + step(h, r), c.1);
                if best.is_none_or(|b| total.0 < b.0 || (total.0 == b.0 && total.1 < b.1 - 1e-9)) {
                    best = Some((total.0, total.1, j));
                }
            }
            // Steps now, for comparison.
            let mut now = step(y[first], l) + step(y[last], r);
            for k in 1..m {
                now += step(y[ch[k]], Some(y[ch[k - 1]]));
            }
            if let Some((steps, _, mut j)) = best {
                if steps < now {
                    for k in (0..m).rev() {
                        y[ch[k]] = hs[j];
                        j = back[k][j];
                    }
                    changed = true;
                }
            }
        }
        // Then single items (stations and short dummies).
        for it in 0..net.items.len() {
            let (lo, hi) = free(y, it);
            let none = |_: usize| false;
            let cur = y[it];
            let now = level(y, it, cur, &none);
            let mut best = (now, cur);
            for cand in links.targets(y, it, true, true) {
                let cand = cand.round();
                if cand < lo - 1e-9 || cand > hi + 1e-9 {
                    continue;
                }
                let sc = level(y, it, cand, &none);
                if sc > best.0 || (sc == best.0 && (cand - cur).abs() < (best.1 - cur).abs()) {
                    best = (sc, cand);
                }
            }
            if best.0 > now {
                y[it] = best.1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// Candidate label boxes around a station marker, in order of preference.
pub fn candidates(pill: Rect, w: f64, h: f64, free_left: bool, free_right: bool) -> Vec<(Rect, Anchor)> {
    let g = LABEL_GAP;
    let cx = (pill.x0 + pill.x1) / 2.0;
    let cy = (pill.y0 + pill.y1) / 2.0;
    let above = (pill.y0 - g - h, pill.y0 - g);
    let below = (pill.y1 + g, pill.y1 + g + h);
    let beside = ((cy - h / 2.0).round(), (cy - h / 2.0).round() + h);
    let level_top = (pill.y0 - h, pill.y0);
    let level_bottom = (pill.y1, pill.y1 + h);
    let centered = ((cx - w / 2.0) * 2.0).round() / 2.0;
    let mut v: Vec<(f64, (f64, f64), Align)> = vec![
        (centered, above, Align::Middle),
        (centered, below, Align::Middle),
        (pill.x0, above, Align::Start),
        (pill.x1 - w, above, Align::End),
        (pill.x1 + g, level_top, Align::Start),
        (pill.x0 - g - w, level_top, Align::End),
        (pill.x0, below, Align::Start),
        (pill.x1 - w, below, Align::End),
        (pill.x1 + g, level_bottom, Align::Start),
        (pill.x0 - g - w, level_bottom, Align::End),
    ];
    if free_right {
        v.insert(2, (pill.x1 + g, beside, Align::Start));
    }
    if free_left {
        v.push((pill.x0 - g - w, beside, Align::End));
    }
    v.into_iter()
        .map(|(x0, (y0, y1), align)| {
            let r = Rect::new(x0, y0, x0 + w, y1);
            let ax = match align {
                Align::Start => r.x0,
                Align::Middle => (r.x0 + r.x1) / 2.0,
                Align::End => r.x1,
            };
            (
                r,
                Anchor {
                    x: ax,
                    y: r.y0 + BASELINE,
                    align,
                },
            )
        })
        .collect()
}

/// Everything computed once: the network, heights and the routing units per channel.
struct Frame<'a> {
    input: &'a Input,
    net: Net,
    ys: Vec<f64>,
    sy: Vec<f64>,
    /// Per channel: (unit, its strands).
    units: Vec<Vec<(Unit, Vec<usize>)>>,
    /// Label box size (width, height) per station.
    label_w: Vec<(f64, f64)>,
}

fn channel_units(net: &Net, sy: &[f64], c: usize) -> Vec<(Unit, Vec<usize>)> {
    let idx = slot_index(net);
    let mut segs: Vec<(usize, usize, usize)> = Vec::new();
    for &it in &net.columns[c] {
        for &sl in &net.items[it].slots {
            if let Some(st) = net.slots[sl].right {
                segs.push((sl, net.strand_slot(st, c + 1), st));
            }
        }
    }
    let mut groups: Vec<Vec<(usize, usize, usize)>> = Vec::new();
    for s in segs {
        let join = groups.last().is_some_and(|g| {
            let p = g.last().expect("non-empty");
            net.slots[p.0].item == net.slots[s.0].item
                && net.slots[p.1].item == net.slots[s.1].item
                && idx[s.0] == idx[p.0] + 1
                && idx[s.1] == idx[p.1] + 1
        });
        if join {
            groups.last_mut().expect("non-empty").push(s);
        } else {
            groups.push(vec![s]);
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let n = g.len() as f64;
            let yl = g.iter().map(|s| sy[s.0]).sum::<f64>() / n;
            let yr = g.iter().map(|s| sy[s.1]).sum::<f64>() / n;
            let offsets = g.iter().map(|s| sy[s.0] - yl).collect();
            (Unit { yl, yr, offsets }, g.iter().map(|s| s.2).collect())
        })
        .collect()
}

impl<'a> Frame<'a> {
    fn new(input: &'a Input) -> Frame<'a> {
        let mut net = Net::build(input);
        let ys = assign_y(&net);
        let sy = slot_ys(&net, &ys);
        net.order_slots(Some(&sy));
        let ys = assign_y(&net);
        let sy = slot_ys(&net, &ys);
        let units = (0..net.ncols.saturating_sub(1))
            .map(|c| channel_units(&net, &sy, c))
            .collect();
        let label_w = input
            .stations
            .iter()
            .map(|s| {
                (
                    s.label.iter().map(|l| text_width(l)).fold(0.0, f64::max),
                    label_height(s.label.len()),
                )
            })
            .collect();
        Frame {
            input,
            net,
            ys,
            sy,
            units,
            label_w,
        }
    }

    fn pill(&self, xs: &[f64], s: usize) -> Rect {
        let it = self.net.station_item[s];
        let x = xs[self.net.col[s]];
        let h = pill_h(self.net.items[it].slots.len());
        Rect::new(
            x - PILL_W / 2.0,
            self.ys[it] - h / 2.0,
            x + PILL_W / 2.0,
            self.ys[it] + h / 2.0,
        )
    }

    /// Strokes that exist whatever the routing: through stations and dummies, and straight hops.
    fn fixed_strokes(&self, xs: &[f64]) -> Vec<Rect> {
        let mut out = Vec::new();
        let hw = LINE_W / 2.0;
        for (it, item) in self.net.items.iter().enumerate() {
            let x = xs[item.col];
            for &sl in &item.slots {
                let y = self.sy[sl];
                let s = &self.net.slots[sl];
                let x0 = if s.left.is_some() { x - STUB } else { x };
                let x1 = if s.right.is_some() { x + STUB } else { x };
                if x1 > x0 {
                    out.push(Rect::new(x0, y - hw, x1, y + hw));
                }
            }
            let _ = it;
        }
        for (c, us) in self.units.iter().enumerate() {
            for (u, _) in us {
                if (u.yl - u.yr).abs() < EPS {
                    for d in &u.offsets {
                        out.push(Rect::new(xs[c], u.yl + d - hw, xs[c + 1], u.yl + d + hw));
                    }
                }
            }
        }
        out
    }

    fn xs(&self, widths: &[f64]) -> Vec<f64> {
        let mut xs = Vec::with_capacity(self.net.ncols);
        let mut x = 0.0;
        for c in 0..self.net.ncols {
            if c > 0 {
                x += widths[c - 1];
            }
            xs.push(x);
        }
        xs
    }

    /// Place labels; `Err` lists the stations that found no free place.
    fn labels(&self, xs: &[f64]) -> Result<Vec<(Rect, Anchor)>, Vec<usize>> {
        let mut hard: Vec<Rect> = self.fixed_strokes(xs);
        for s in 0..self.input.stations.len() {
            hard.push(self.pill(xs, s).inflate(1.5));
        }
        let mut placed: Vec<(Rect, Anchor)> = Vec::with_capacity(self.input.stations.len());
        let mut failed = Vec::new();
        // Left to right, top to bottom.
        let mut order: Vec<usize> = (0..self.input.stations.len()).collect();
        order.sort_by(|&a, &b| {
            let (ia, ib) = (self.net.station_item[a], self.net.station_item[b]);
            self.net.col[a]
                .cmp(&self.net.col[b])
                .then(self.ys[ia].total_cmp(&self.ys[ib]))
        });
        let mut result = vec![None; self.input.stations.len()];
        for s in order {
            let it = self.net.station_item[s];
            let slots = &self.net.items[it].slots;
            let free_left = slots.iter().all(|&sl| self.net.slots[sl].left.is_none());
            let free_right = slots.iter().all(|&sl| self.net.slots[sl].right.is_none());
            let pill = self.pill(xs, s);
            let mut ok = None;
            for (r, a) in candidates(pill, self.label_w[s].0, self.label_w[s].1, free_left, free_right) {
                let g = r.inflate(CLEAR);
                if hard.iter().any(|h| h.overlaps(&g))
                    || placed.iter().any(|(p, _)| p.inflate(CLEAR).overlaps(&g))
                {
                    continue;
                }
                ok = Some((r, a));
                break;
            }
            match ok {
                Some(l) => {
                    placed.push(l);
                    result[s] = Some(l);
                }
                None => failed.push(s),
            }
        }
        if failed.is_empty() {
            Ok(result.into_iter().map(|r| r.expect("placed")).collect())
        } else {
            Err(failed)
        }
    }
}

/// Lay the whole map out.
pub fn build(input: &Input) -> Layout {
    let f = Frame::new(input);
    let nc = f.net.ncols;
    // Start with channels that keep centered labels of neighbouring columns apart.
    let mut col_w = vec![0.0f64; nc];
    for (s, w) in f.label_w.iter().enumerate() {
        let c = f.net.col[s];
        col_w[c] = col_w[c].max(w.0);
    }
    let mut widths: Vec<f64> = (0..nc.saturating_sub(1))
        .map(|c| {
            let w = (INITIAL_CHANNEL * (col_w[c] / 2.0 + col_w[c + 1] / 2.0) + 14.0).max(2.0 * STUB + 40.0);
            (w / 2.0).ceil() * 2.0
        })
        .collect();
    let mut last = None;
    let mut grown = vec![0usize; widths.len()];
    for round in 0..MAX_ROUNDS {
        let xs = f.xs(&widths);
        let mut widen = vec![false; widths.len()];
        let labels = match f.labels(&xs) {
            Ok(l) => l,
            Err(failed) => {
                for s in failed {
                    let c = f.net.col[s];
                    if c > 0 {
                        widen[c - 1] = true;
                    }
                    if c + 1 < nc {
                        widen[c] = true;
                    }
                }
                if widen.iter().any(|&w| w) {
                    grow(&mut widths, &mut grown, &widen);
                    continue;
                }
                // A single column: nothing to widen; stack labels anyway (cannot happen with
                // the room kept above every station).
                Vec::new()
            }
        };
        let label_boxes: Vec<Rect> = labels.iter().map(|l| l.0).collect();
        let mut polys: Vec<Vec<Vec<Pt>>> = f
            .net
            .strands
            .iter()
            .map(|s| vec![Vec::new(); f.net.col[s.right] - f.net.col[s.left]])
            .collect();
        for c in 0..widths.len() {
            let (xl, xr) = (xs[c], xs[c + 1]);
            let obstacles: Vec<Rect> = label_boxes
                .iter()
                .filter(|r| r.x1 > xl && r.x0 < xr)
                .copied()
                .collect();
            let units: Vec<Unit> = f.units[c].iter().map(|u| u.0.clone()).collect();
            let relaxed = grown[c] >= RELAX_AFTER;
            let forced = grown[c] >= FORCE_AFTER;
            let ch = Channel {
                relaxed,
                forced,
                xl,
                xr,
                lo: xl + STUB,
                hi: xr - STUB,
                units: &units,
                obstacles: &obstacles,
            };
            match route::route(&ch) {
                Ok(r) => {
                    for (k, strands) in r.into_iter().enumerate() {
                        for (j, p) in strands.into_iter().enumerate() {
                            let st = f.units[c][k].1[j];
                            let base = f.net.col[f.net.strands[st].left];
                            polys[st][c - base] = p;
                        }
                    }
                }
                Err(_) => widen[c] = true,
            }
        }
        if widen.iter().any(|&w| w) {
            grow(&mut widths, &mut grown, &widen);
            continue;
        }
        let layout = assemble(&f, &xs, &labels, &polys, round + 1);
        let bad = MapStats::violations(&layout);
        if bad.is_empty() {
            return layout;
        }
        for r in &bad {
            // Widen the channels the violation lies in (layout coordinates are shifted).
            let (x0, x1) = (r.x0 - layout.shift.0, r.x1 - layout.shift.0);
            for c in 0..widths.len() {
                if x1 >= xs[c] - 1.0 && x0 <= xs[c + 1] + 1.0 {
                    widen[c] = true;
                }
            }
        }
        last = Some(layout);
        if !widen.iter().any(|&w| w) {
            break;
        }
        grow(&mut widths, &mut grown, &widen);
    }
    match last {
        Some(l) => l,
        None => {
            let xs = f.xs(&widths);
            assemble(&f, &xs, &[], &[], MAX_ROUNDS)
        }
    }
}

fn grow(widths: &mut [f64], grown: &mut [usize], widen: &[bool]) {
    for ((w, n), &g) in widths.iter_mut().zip(grown.iter_mut()).zip(widen) {
        if g {
            *w = ((*w * 1.2).max(*w + 16.0) / 2.0).ceil() * 2.0;
            *n += 1;
        }
    }
}

/// Put the pieces together into the final geometry, shifted so the map starts at the margin,
/// and lay the legend out under it.
fn assemble(
    f: &Frame,
    xs: &[f64],
    labels: &[(Rect, Anchor)],
    polys: &[Vec<Vec<Pt>>],
    rounds: usize,
) -> Layout {
    let input = f.input;
    let net = &f.net;
    let mut lines: Vec<LineGeom> = Vec::new();
    for (li, l) in input.lines.iter().enumerate() {
        let mut pts: Vec<Pt> = Vec::new();
        if !polys.is_empty() {
            for &st in &net.hops[li] {
                let mut p: Vec<Pt> = polys[st].iter().flat_map(|seg| seg.iter().copied()).collect();
                if net.strands[st].reversed {
                    p.reverse();
                }
                pts.extend(p);
            }
        }
        lines.push(LineGeom {
            id: l.id.clone(),
            title: l.title.clone(),
            color: l.color.clone(),
            points: simplify(&pts),
            stations: l.stops.len(),
        });
    }
    let mut stations = Vec::new();
    for (s, st) in input.stations.iter().enumerate() {
        let it = net.station_item[s];
        let mut ls: Vec<usize> = net.items[it].slots.iter().map(|&sl| net.slots[sl].line).collect();
        ls.sort();
        ls.dedup();
        let (label_box, anchor) = labels.get(s).copied().unwrap_or_else(|| {
            let p = f.pill(xs, s);
            let c = candidates(p, f.label_w[s].0, f.label_w[s].1, false, false)[0];
            (c.0, c.1)
        });
        stations.push(StationGeom {
            id: st.id.clone(),
            title: st.title.clone(),
            label: st.label.clone(),
            marker: f.pill(xs, s),
            lines: ls,
            label_box,
            anchor,
        });
    }
    // Bounding box of everything drawn, then shift to the margin.
    let mut bb: Option<Rect> = None;
    let mut add = |r: Rect| bb = Some(bb.map_or(r, |b| b.union(&r)));
    for s in &stations {
        add(s.marker);
        add(s.label_box);
    }
    for l in &lines {
        for p in &l.points {
            add(Rect::new(p.x, p.y, p.x, p.y).inflate(LINE_W / 2.0));
        }
    }
    let bb = bb.unwrap_or(Rect::new(0.0, 0.0, 0.0, 0.0));
    let (dx, dy) = ((MARGIN - bb.x0).round(), (MARGIN - bb.y0).round());
    let mv = |r: Rect| Rect::new(r.x0 + dx, r.y0 + dy, r.x1 + dx, r.y1 + dy);
    for s in &mut stations {
        s.marker = mv(s.marker);
        s.label_box = mv(s.label_box);
        s.anchor.x += dx;
        s.anchor.y += dy;
    }
    for l in &mut lines {
        for p in &mut l.points {
            *p = pt(p.x + dx, p.y + dy);
        }
    }
    let map_w = (bb.x1 - bb.x0 + 2.0 * MARGIN).ceil();
    let map_h = (bb.y1 - bb.y0 + 2.0 * MARGIN).ceil();
    // Legend: one entry per line, in columns as wide as the longest entry.
    let entry_w = lines
        .iter()
        .map(|l| text_width(&l.title))
        .fold(140.0f64, f64::max)
        + 56.0;
    let key_w = 42.0 + text_width(super::svg::KEY_TEXT);
    let width = map_w
        .max(entry_w + 2.0 * MARGIN)
        .max(key_w + 2.0 * MARGIN)
        .max(320.0);
    let ncols = (((width - 2.0 * MARGIN) / entry_w).floor() as usize).max(1);
    let row_h = 24.0;
    let mut legend = Vec::new();
    let drawn: Vec<usize> = (0..lines.len()).collect();
    let top = map_h + 8.0;
    for (k, &li) in drawn.iter().enumerate() {
        let (r, c) = (k / ncols, k % ncols);
        legend.push(LegendEntry {
            line: li,
            x: MARGIN + c as f64 * entry_w,
            y: top + 22.0 + r as f64 * row_h,
        });
    }
    let rows = drawn.len().div_ceil(ncols) as f64;
    // One more row for the interchange symbol.
    let height = (top + 22.0 + (rows + 1.0) * row_h + MARGIN).ceil();
    Layout {
        width,
        height,
        map_height: map_h,
        legend_top: top,
        legend_entry_w: entry_w,
        stations,
        lines,
        legend,
        rounds,
        shift: (dx, dy),
    }
}
