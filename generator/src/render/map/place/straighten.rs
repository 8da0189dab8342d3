//! Straightening: nearly level strands snapped to level after the least-squares heights.
//!
//! Why apart: a discrete clean-up with its own rules (single items, chains of dummies, never past
//! a neighbour); the heights solver hands it a near-optimum and it removes the last small steps.

use super::heights::{sep, Links};
use super::*;

/// Make strands level where the separations allow: move single items, and whole chains of
/// dummies (a long hop), to the height that makes the most strands run exactly level, never
/// past their neighbours in the column. Small steps of a few pixels are what this removes.
pub(super) fn straighten(net: &Net, idx: &[usize], links: &Links, y: &mut [f64]) {
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
