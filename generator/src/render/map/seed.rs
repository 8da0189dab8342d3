//! Seed positions: where each station would like to be before the grid has its say.
//!
//! The book has no geography, so the map's "geography" is the network itself: stations are
//! placed so that distances on the drawing follow hop counts on the lines (stress
//! majorization, started from classical MDS so it is deterministic), then turned so the long
//! axis runs left to right, the start station on the left, and stretched onto the grid's
//! rectangle. Stretching blends a linear map with rank order, which evens out the density: a
//! stress layout crowds its middle, and the grid has a fixed number of nodes to give out.

use super::topo::Topo;
use std::collections::VecDeque;

/// Sweeps of overlap removal at most.
const SPREAD_ROUNDS: usize = 400;

/// Hop distances between all stations; unreachable pairs get one more than the largest.
fn distances(topo: &Topo, n: usize) -> Vec<Vec<f64>> {
    let mut d = vec![vec![f64::INFINITY; n]; n];
    for (s, row) in d.iter_mut().enumerate() {
        row[s] = 0.0;
        let mut q = VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            for &e in &topo.incident[u] {
                let ed = &topo.edges[e];
                let v = if ed.a == u { ed.b } else { ed.a };
                if row[v].is_infinite() {
                    row[v] = row[u] + 1.0;
                    q.push_back(v);
                }
            }
        }
    }
    let max = d
        .iter()
        .flatten()
        .filter(|x| x.is_finite())
        .fold(1.0f64, |a, &b| a.max(b));
    for x in d.iter_mut().flatten() {
        if x.is_infinite() {
            *x = max + 1.0;
        }
    }
    d
}

/// The two leading eigenvectors of classical MDS's double-centred matrix, by power iteration.
fn classical_mds(d: &[Vec<f64>]) -> Vec<[f64; 2]> {
    let n = d.len();
    let sq: Vec<Vec<f64>> = d.iter().map(|r| r.iter().map(|x| x * x).collect()).collect();
    let row: Vec<f64> = sq.iter().map(|r| r.iter().sum::<f64>() / n as f64).collect();
    let all = row.iter().sum::<f64>() / n as f64;
    let b: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| -0.5 * (sq[i][j] - row[i] - row[j] + all))
                .collect()
        })
        .collect();
    let mut vecs: Vec<Vec<f64>> = Vec::new();
    for k in 0..2 {
        let mut v: Vec<f64> = (0..n).map(|i| ((i * (k + 2) + 1) as f64).sin()).collect();
        let mut lambda = 0.0;
        for _ in 0..100 {
            let mut w: Vec<f64> = (0..n).map(|i| (0..n).map(|j| b[i][j] * v[j]).sum()).collect();
            for u in &vecs {
                let dot: f64 = w.iter().zip(u).map(|(a, b)| a * b).sum();
                for (x, y) in w.iter_mut().zip(u) {
                    *x -= dot * y;
                }
            }
            let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm < 1e-12 {
                break;
            }
            lambda = norm;
            v = w.into_iter().map(|x| x / norm).collect();
        }
        vecs.push(v.clone());
        let s = lambda.max(0.0).sqrt();
        vecs.last_mut().expect("pushed").iter_mut().for_each(|x| *x *= s);
    }
    (0..n).map(|i| [vecs[0][i], vecs[1][i]]).collect()
}

/// Stress majorization (SMACOF) with weights 1/d².
fn stress(d: &[Vec<f64>], mut x: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    let n = d.len();
    for _ in 0..150 {
        let mut next = vec![[0.0; 2]; n];
        let mut moved = 0.0f64;
        for i in 0..n {
            let (mut acc, mut wsum) = ([0.0; 2], 0.0);
            for j in 0..n {
                if i == j {
                    continue;
                }
                let w = 1.0 / (d[i][j] * d[i][j]);
                let (dx, dy) = (x[i][0] - x[j][0], x[i][1] - x[j][1]);
                let dist = (dx * dx + dy * dy).sqrt().max(1e-9);
                acc[0] += w * (x[j][0] + d[i][j] * dx / dist);
                acc[1] += w * (x[j][1] + d[i][j] * dy / dist);
                wsum += w;
            }
            next[i] = if wsum > 0.0 {
                [acc[0] / wsum, acc[1] / wsum]
            } else {
                x[i]
            };
            moved = moved.max((next[i][0] - x[i][0]).abs() + (next[i][1] - x[i][1]).abs());
        }
        x = next;
        if moved < 1e-3 {
            break;
        }
    }
    x
}

/// Turn so the long axis is horizontal, with `left` (the start station) on the left.
fn orient(x: &mut [[f64; 2]], left: Option<usize>) {
    let n = x.len() as f64;
    let (mx, my) = (
        x.iter().map(|p| p[0]).sum::<f64>() / n,
        x.iter().map(|p| p[1]).sum::<f64>() / n,
    );
    let (mut sxx, mut syy, mut sxy) = (0.0, 0.0, 0.0);
    for p in x.iter() {
        let (a, b) = (p[0] - mx, p[1] - my);
        sxx += a * a;
        syy += b * b;
        sxy += a * b;
    }
    let angle = 0.5 * (2.0 * sxy).atan2(sxx - syy);
    let (c, s) = (angle.cos(), angle.sin());
    for p in x.iter_mut() {
        let (a, b) = (p[0] - mx, p[1] - my);
        *p = [a * c + b * s, -a * s + b * c];
    }
    if let Some(l) = left {
        if x[l][0] > 0.0 {
            x.iter_mut().for_each(|p| p[0] = -p[0]);
        }
        if x[l][1] > 0.0 {
            x.iter_mut().for_each(|p| p[1] = -p[1]);
        }
    }
}

/// Map one coordinate onto [0, span]: half linear, half by rank.
fn stretch(vals: &[f64], span: f64) -> Vec<f64> {
    let n = vals.len();
    let (lo, hi) = vals
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| vals[a].total_cmp(&vals[b]).then(a.cmp(&b)));
    let mut rank = vec![0.0; n];
    for (r, &i) in idx.iter().enumerate() {
        rank[i] = if n > 1 { r as f64 / (n - 1) as f64 } else { 0.5 };
    }
    (0..n)
        .map(|i| {
            let lin = if hi - lo > 1e-9 {
                (vals[i] - lo) / (hi - lo)
            } else {
                0.5
            };
            span * (0.5 * lin + 0.5 * rank[i])
        })
        .collect()
}

/// Push footprints apart (each station a box of half extents `foot`, grid units) until none
/// overlap, inside the `w × h` box: each pair moves apart along the axis where it overlaps
/// less, so the drawing keeps its order and shape while making room.
fn remove_overlaps(x: &mut [[f64; 2]], foot: &[[f64; 2]], w: f64, h: f64) {
    let n = x.len();
    for _ in 0..SPREAD_ROUNDS {
        let mut moved = false;
        for i in 0..n {
            for j in i + 1..n {
                let (dx, dy) = (x[j][0] - x[i][0], x[j][1] - x[i][1]);
                let ox = foot[i][0] + foot[j][0] - dx.abs();
                let oy = foot[i][1] + foot[j][1] - dy.abs();
                if ox <= 1e-9 || oy <= 1e-9 {
                    continue;
                }
                moved = true;
                let side = |d: f64| {
                    if d.abs() > 1e-9 {
                        d.signum()
                    } else if (i + j) % 2 == 0 {
                        1.0
                    } else {
                        -1.0
                    }
                };
                if ox * (foot[i][1] + foot[j][1]) < oy * (foot[i][0] + foot[j][0]) {
                    let m = side(dx) * (ox / 2.0 + 1e-3);
                    x[i][0] -= m;
                    x[j][0] += m;
                } else {
                    let m = side(dy) * (oy / 2.0 + 1e-3);
                    x[i][1] -= m;
                    x[j][1] += m;
                }
            }
        }
        for (p, f) in x.iter_mut().zip(foot) {
            p[0] = p[0].clamp(f[0].min(w / 2.0), (w - f[0]).max(w / 2.0));
            p[1] = p[1].clamp(f[1].min(h / 2.0), (h - f[1]).max(h / 2.0));
        }
        if !moved {
            break;
        }
    }
}

/// The network's own shape: stress majorization of hop distances, turned so the long axis is
/// horizontal. Computed once; fitted to grids of different sizes by [`Shape::fit`].
pub struct Shape(Vec<[f64; 2]>);

impl Shape {
    /// `flip` mirrors the shape top to bottom (another start for the placement's search).
    pub fn new(topo: &Topo, n: usize, start: Option<usize>, flip: bool) -> Shape {
        if n == 0 {
            return Shape(Vec::new());
        }
        let d = distances(topo, n);
        let mut x = stress(&d, classical_mds(&d));
        orient(&mut x, start);
        if flip {
            x.iter_mut().for_each(|p| p[1] = -p[1]);
        }
        Shape(x)
    }

    /// Seed positions in grid units inside `[0, w-1] × [0, h-1]`, with room for each
    /// station's footprint (`foot`: half extents in grid units).
    pub fn fit(&self, foot: &[[f64; 2]], w: usize, h: usize) -> Vec<[f64; 2]> {
        if self.0.is_empty() {
            return Vec::new();
        }
        let x = &self.0;
        let xs = stretch(&x.iter().map(|p| p[0]).collect::<Vec<_>>(), (w - 1) as f64);
        let ys = stretch(&x.iter().map(|p| p[1]).collect::<Vec<_>>(), (h - 1) as f64);
        let mut x: Vec<[f64; 2]> = xs.into_iter().zip(ys).map(|(a, b)| [a, b]).collect();
        remove_overlaps(&mut x, foot, (w - 1) as f64, (h - 1) as f64);
        x
    }
}
