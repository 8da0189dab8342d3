//! Columns: which column each station goes in, from line order and `requires` edges.
//!
//! Why apart: step 1 of the network, a graph problem of its own (feedback-arc ordering, longest
//! path layering, median tightening) with no knowledge of strands or slots.

use super::*;

/// Column of every station.
pub(super) fn columns(input: &Input) -> Vec<usize> {
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
