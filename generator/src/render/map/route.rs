//! Routing the strands between two neighbouring columns ("channel routing").
//!
//! Everything that runs from column `c` to column `c + 1` is a set of *units*: bundles of
//! strands that leave one item from consecutive slots and arrive at one item in consecutive
//! slots, in the same order. A unit runs horizontally out of its left slot, changes height once
//! — one 45° diagonal, or 45°–vertical–45° for long drops — and runs horizontally into its right
//! slot; its strands are drawn as mitred parallel offsets of one center line, so a bundle stays
//! a bundle through the bend. Only horizontal, vertical and 45° pieces are ever made, and the
//! result is snapped to the half-pixel lattice without changing a direction.
//!
//! Where each unit bends is searched, not assumed: units are placed in an order that avoids
//! needless crossings (a unit whose start height another unit arrives at must leave first;
//! of two units dropping the same way the outer one bends first), each at the first position
//! where none of its strokes runs along another unit's stroke and none touches an obstacle
//! (station labels). When no position is left the channel is reported too narrow and the
//! caller widens it. Crossings where order must swap stay, as clean transversal crossings.

use super::geom::{
    offset_polyline, pt, snap_polyline, stroke_hits_rect, strokes_overlap_parallel, Pt, Rect, EPS,
};
use super::{CLEAR, LINE_W, PITCH};

/// A bundle to route: center heights at both ends and each strand's offset from the center
/// (top to bottom; the same at both ends).
#[derive(Debug, Clone)]
pub struct Unit {
    pub yl: f64,
    pub yr: f64,
    pub offsets: Vec<f64>,
}

/// One channel: column centers, the x range bends must stay in, units and obstacles.
pub struct Channel<'a> {
    pub xl: f64,
    pub xr: f64,
    pub lo: f64,
    pub hi: f64,
    pub units: &'a [Unit],
    pub obstacles: &'a [Rect],
    /// Accept a bend position whose strokes run along another unit's when no clean one is
    /// left (set once widening has stopped helping); obstacles are never crossed.
    pub relaxed: bool,
    /// Accept the least bad position even if it touches an obstacle (last resort).
    pub forced: bool,
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Straight,
    /// Diagonal starting at x.
    Diag(f64),
    /// 45° in at x, vertical, 45° out; chamfer size k.
    Chamfer(f64, f64),
}

/// Preferred longest single diagonal; longer drops use a vertical with 45° corners.
const DIAG_PREF: f64 = 84.0;

fn centerline(ch: &Channel, u: &Unit, s: Shape) -> Vec<Pt> {
    let d = u.yr - u.yl;
    let sg = d.signum();
    match s {
        Shape::Straight => vec![pt(ch.xl, u.yl), pt(ch.xr, u.yr)],
        Shape::Diag(t) => vec![
            pt(ch.xl, u.yl),
            pt(t, u.yl),
            pt(t + d.abs(), u.yr),
            pt(ch.xr, u.yr),
        ],
        Shape::Chamfer(t, k) => vec![
            pt(ch.xl, u.yl),
            pt(t, u.yl),
            pt(t + k, u.yl + sg * k),
            pt(t + k, u.yr - sg * k),
            pt(t + 2.0 * k, u.yr),
            pt(ch.xr, u.yr),
        ],
    }
}

/// Each strand's polyline for a shape, or `None` if a strand would fold or leave the channel.
fn strands(ch: &Channel, u: &Unit, s: Shape) -> Option<Vec<Vec<Pt>>> {
    let c = centerline(ch, u, s);
    let mut out = Vec::with_capacity(u.offsets.len());
    for &d in &u.offsets {
        let o = offset_polyline(&c, d)?;
        let p = snap_polyline(&o)?;
        if p.len() > 2
            && p[1..p.len() - 1]
                .iter()
                .any(|q| q.x < ch.lo - EPS || q.x > ch.hi + EPS)
        {
            return None;
        }
        out.push(p);
    }
    Some(out)
}

/// Bounding box of a set of polylines, grown by half a stroke.
fn bbox(ps: &[Vec<Pt>]) -> Rect {
    let mut r = Rect {
        x0: f64::MAX,
        y0: f64::MAX,
        x1: f64::MIN,
        y1: f64::MIN,
    };
    for p in ps {
        for q in p {
            r.x0 = r.x0.min(q.x);
            r.x1 = r.x1.max(q.x);
            r.y0 = r.y0.min(q.y);
            r.y1 = r.y1.max(q.y);
        }
    }
    r.inflate(PITCH)
}

fn hits_obstacle(ps: &[Vec<Pt>], obstacles: &[Rect]) -> bool {
    ps.iter().any(|p| {
        p.windows(2).any(|w| {
            obstacles
                .iter()
                .any(|r| stroke_hits_rect(w[0], w[1], LINE_W + 2.0 * CLEAR, r))
        })
    })
}

/// Does any stroke of `a` run along a stroke of `b`, closer than the bundle pitch?
fn runs_along(a: &[Vec<Pt>], b: &[Vec<Pt>]) -> bool {
    a.iter().any(|p| {
        p.windows(2).any(|s| {
            b.iter().any(|q| {
                q.windows(2)
                    .any(|t| strokes_overlap_parallel(s[0], s[1], t[0], t[1], PITCH))
            })
        })
    })
}

/// A routed unit before it is committed: strands, their box, the shape and its start.
type Candidate = (Vec<Vec<Pt>>, Rect, Shape, f64);

struct Placed {
    strands: Vec<Vec<Pt>>,
    bbox: Rect,
}

fn fits(cand: &[Vec<Pt>], bb: &Rect, placed: &[Option<Placed>], skip: usize, obstacles: &[Rect]) -> bool {
    if hits_obstacle(cand, obstacles) {
        return false;
    }
    placed.iter().enumerate().all(|(i, p)| match p {
        Some(p) if i != skip => !bb.overlaps(&p.bbox) || !runs_along(cand, &p.strands),
        _ => true,
    })
}

/// How many placed units a candidate runs along (`None` if it hits an obstacle).
fn along_count(
    cand: &[Vec<Pt>],
    bb: &Rect,
    placed: &[Option<Placed>],
    skip: usize,
    obstacles: &[Rect],
) -> Option<usize> {
    if hits_obstacle(cand, obstacles) {
        return None;
    }
    Some(
        placed
            .iter()
            .enumerate()
            .filter(|(i, p)| match p {
                Some(p) if *i != skip => bb.overlaps(&p.bbox) && runs_along(cand, &p.strands),
                _ => false,
            })
            .count(),
    )
}

fn band(y: f64, offs: &[f64]) -> (f64, f64) {
    let lo = offs.iter().copied().fold(f64::MAX, f64::min);
    let hi = offs.iter().copied().fold(f64::MIN, f64::max);
    (y + lo - PITCH / 2.0, y + hi + PITCH / 2.0)
}

fn overlap(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 < b.1 - EPS && b.0 < a.1 - EPS
}

/// Route a channel. `Ok`: for every unit, every strand's polyline from `xl` to `xr`.
/// `Err(i)`: unit `i` found no place; the channel is too narrow.
pub fn route(ch: &Channel) -> Result<Vec<Vec<Vec<Pt>>>, usize> {
    let units = ch.units;
    let n = units.len();
    let mut placed: Vec<Option<Placed>> = (0..n).map(|_| None).collect();
    let mut shapes = vec![Shape::Straight; n];
    // Straight units first: they have no choice.
    let straight: Vec<bool> = units.iter().map(|u| (u.yr - u.yl).abs() < EPS).collect();
    for i in (0..n).filter(|&i| straight[i]) {
        let s = strands(ch, &units[i], Shape::Straight).ok_or(i)?;
        let bb = bbox(&s);
        if !ch.forced && !fits(&s, &bb, &placed, i, ch.obstacles) {
            return Err(i);
        }
        placed[i] = Some(Placed { strands: s, bbox: bb });
    }
    // Precedence among the others: hard (a unit arriving where another starts must wait for
    // it), then soft (outer bend first among units dropping the same way).
    let movable: Vec<usize> = (0..n).filter(|&i| !straight[i]).collect();
    let m = movable.len();
    let mut reach = vec![vec![false; m]; m];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); m];
    let add_edge = |a: usize, b: usize, reach: &mut Vec<Vec<bool>>, preds: &mut Vec<Vec<usize>>| {
        if a == b || reach[b][a] || reach[a][b] {
            return;
        }
        let from: Vec<usize> = (0..m).filter(|&x| x == a || reach[x][a]).collect();
        let to: Vec<usize> = (0..m).filter(|&y| y == b || reach[b][y]).collect();
        for &x in &from {
            for &y in &to {
                reach[x][y] = true;
            }
        }
        preds[b].push(a);
    };
    let bl: Vec<(f64, f64)> = movable
        .iter()
        .map(|&i| band(units[i].yl, &units[i].offsets))
        .collect();
    let br: Vec<(f64, f64)> = movable
        .iter()
        .map(|&i| band(units[i].yr, &units[i].offsets))
        .collect();
    for (a, la) in bl.iter().enumerate() {
        for (b, rb) in br.iter().enumerate() {
            if a != b && overlap(*la, *rb) {
                add_edge(a, b, &mut reach, &mut preds);
            }
        }
    }
    for a in 0..m {
        for b in 0..m {
            if a == b {
                continue;
            }
            let (ua, ub) = (&units[movable[a]], &units[movable[b]]);
            let (da, db) = (ua.yr - ua.yl, ub.yr - ub.yl);
            let span = |u: &Unit| (u.yl.min(u.yr), u.yl.max(u.yr));
            if da * db > 0.0 && overlap(span(ua), span(ub)) {
                let first = if da > 0.0 { ua.yl > ub.yl } else { ua.yl < ub.yl };
                if first {
                    add_edge(a, b, &mut reach, &mut preds);
                }
            }
        }
    }
    // Topological order (Kahn), ties by height at the left.
    let mut indeg: Vec<usize> = preds.iter().map(|p| p.len()).collect();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); m];
    for (b, ps) in preds.iter().enumerate() {
        for &a in ps {
            succs[a].push(b);
        }
    }
    let mut order = Vec::with_capacity(m);
    let mut ready: Vec<usize> = (0..m).filter(|&i| indeg[i] == 0).collect();
    while !ready.is_empty() {
        ready.sort_by(|&a, &b| {
            units[movable[b]]
                .yl
                .total_cmp(&units[movable[a]].yl)
                .then(b.cmp(&a))
        });
        let v = ready.pop().expect("non-empty");
        order.push(v);
        for &w in &succs[v] {
            indeg[w] -= 1;
            if indeg[w] == 0 {
                ready.push(w);
            }
        }
    }
    let mut start = vec![ch.lo; m];
    for &v in &order {
        let i = movable[v];
        let u = &units[i];
        let dy = (u.yr - u.yl).abs();
        let dmax = u.offsets.iter().fold(0.0f64, |a, &d| a.max(d.abs()));
        let k = (0.6 * dmax + 6.0).ceil().max(8.0);
        let chamfer_ok = dy >= 2.0 * k + 0.9 * dmax + 2.0;
        let lo_t = preds[v].iter().map(|&p| start[p] + 2.0).fold(ch.lo, f64::max);
        let shapes_at = |t: f64| -> Vec<Shape> {
            if dy <= DIAG_PREF || !chamfer_ok {
                if chamfer_ok {
                    vec![Shape::Diag(t), Shape::Chamfer(t, k)]
                } else {
                    vec![Shape::Diag(t)]
                }
            } else {
                vec![Shape::Chamfer(t, k), Shape::Diag(t)]
            }
        };
        // Strands above the center bend later than the center line: start a little early.
        let first = |from: f64| (from / 2.0).ceil() * 2.0 - 8.0;
        // First where the preferred order puts it, then anywhere in the channel.
        let mut found = None;
        'scan: for from in [lo_t, ch.lo] {
            let mut t = first(from);
            while t <= ch.hi {
                for s in shapes_at(t) {
                    if let Some(st) = strands(ch, u, s) {
                        let bb = bbox(&st);
                        if fits(&st, &bb, &placed, i, ch.obstacles) {
                            found = Some((st, bb, s, t));
                            break 'scan;
                        }
                    }
                }
                t += 2.0;
            }
            if lo_t <= ch.lo {
                break;
            }
        }
        if found.is_none() && ch.relaxed {
            let mut best: Option<(usize, Candidate)> = None;
            let mut t = first(ch.lo);
            while t <= ch.hi {
                for s in shapes_at(t) {
                    if let Some(st) = strands(ch, u, s) {
                        let bb = bbox(&st);
                        if let Some(n) = along_count(&st, &bb, &placed, i, ch.obstacles) {
                            if best.as_ref().is_none_or(|b| n < b.0) {
                                best = Some((n, (st, bb, s, t)));
                            }
                        }
                    }
                }
                t += 2.0;
            }
            found = best.map(|b| b.1);
        }
        if found.is_none() && ch.forced {
            // Last resort: the first shape that exists, wherever it runs.
            let mut t = first(ch.lo);
            'forced: while t <= ch.hi {
                for s in shapes_at(t) {
                    if let Some(st) = strands(ch, u, s) {
                        let bb = bbox(&st);
                        found = Some((st, bb, s, t));
                        break 'forced;
                    }
                }
                t += 2.0;
            }
        }
        match found {
            Some((st, bb, s, t)) => {
                placed[i] = Some(Placed {
                    strands: st,
                    bbox: bb,
                });
                shapes[i] = s;
                start[v] = t;
            }
            None => return Err(i),
        }
    }
    // Center the bends in the channel as far as the obstacles allow.
    if m > 0 {
        let (mut a, mut b) = (f64::MAX, f64::MIN);
        for &i in &movable {
            for p in &placed[i].as_ref().expect("placed").strands {
                for q in &p[1..p.len() - 1] {
                    a = a.min(q.x);
                    b = b.max(q.x);
                }
            }
        }
        let ideal = (((ch.lo + ch.hi) - (a + b)) / 4.0).round() * 2.0;
        for frac in [1.0, 0.75, 0.5, 0.25] {
            let delta = (ideal * frac / 2.0).round() * 2.0;
            if delta.abs() < 1.0 {
                break;
            }
            if let Some(moved) = shifted(ch, &movable, &shapes, delta, &placed) {
                for (j, &i) in movable.iter().enumerate() {
                    placed[i] = Some(moved[j].clone_placed());
                }
                break;
            }
        }
    }
    Ok(placed
        .into_iter()
        .map(|p| p.expect("every unit placed").strands)
        .collect())
}

impl Placed {
    fn clone_placed(&self) -> Placed {
        Placed {
            strands: self.strands.clone(),
            bbox: self.bbox,
        }
    }
}

/// All movable units moved by `delta`, if the result is still clean.
fn shifted(
    ch: &Channel,
    movable: &[usize],
    shapes: &[Shape],
    delta: f64,
    placed: &[Option<Placed>],
) -> Option<Vec<Placed>> {
    let mut out: Vec<Option<Placed>> = placed
        .iter()
        .map(|p| p.as_ref().map(|p| p.clone_placed()))
        .collect();
    for &i in movable {
        out[i] = None;
    }
    for &i in movable {
        let s = match shapes[i] {
            Shape::Diag(t) => Shape::Diag(t + delta),
            Shape::Chamfer(t, k) => Shape::Chamfer(t + delta, k),
            Shape::Straight => Shape::Straight,
        };
        let st = strands(ch, &ch.units[i], s)?;
        let bb = bbox(&st);
        if !fits(&st, &bb, &out, i, ch.obstacles) {
            return None;
        }
        out[i] = Some(Placed {
            strands: st,
            bbox: bb,
        });
    }
    Some(movable.iter().map(|&i| out[i].take().expect("placed")).collect())
}
