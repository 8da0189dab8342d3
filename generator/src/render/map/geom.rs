//! Plane geometry for the map: points, boxes, thick segments and octilinear polylines.
//!
//! Everything the layout promises (no label overlaps, no station overlaps, only 0°/45°/90°
//! segments) is checked with these functions on the very coordinates that end up in the SVG, so
//! the coordinates are kept on a half-pixel lattice that the SVG prints exactly.

/// Tolerance for comparisons of lattice coordinates.
pub const EPS: f64 = 1e-6;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
}

pub fn pt(x: f64, y: f64) -> Pt {
    Pt { x, y }
}

/// An axis-aligned box, `x0 <= x1`, `y0 <= y1` (SVG coordinates: y grows downwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub fn new(x0: f64, y0: f64, x1: f64, y1: f64) -> Rect {
        Rect {
            x0: x0.min(x1),
            y0: y0.min(y1),
            x1: x0.max(x1),
            y1: y0.max(y1),
        }
    }

    pub fn inflate(&self, d: f64) -> Rect {
        Rect {
            x0: self.x0 - d,
            y0: self.y0 - d,
            x1: self.x1 + d,
            y1: self.y1 + d,
        }
    }

    /// Do the interiors overlap? Boxes that only touch do not.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 - EPS && o.x0 < self.x1 - EPS && self.y0 < o.y1 - EPS && o.y0 < self.y1 - EPS
    }

    pub fn union(&self, o: &Rect) -> Rect {
        Rect {
            x0: self.x0.min(o.x0),
            y0: self.y0.min(o.y0),
            x1: self.x1.max(o.x1),
            y1: self.y1.max(o.y1),
        }
    }

    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }
}

/// Direction class of a segment modulo 180°: 0 horizontal, 1 diagonal "\" (down-right),
/// 2 vertical, 3 diagonal "/" (up-right); `None` for a segment that is not octilinear or has
/// no length.
pub fn dir_class(a: Pt, b: Pt) -> Option<u8> {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let len = dx.abs().max(dy.abs());
    if len < EPS {
        return None;
    }
    let tol = 1e-9 * len.max(1.0);
    if dy.abs() <= tol {
        Some(0)
    } else if dx.abs() <= tol {
        Some(2)
    } else if (dx.abs() - dy.abs()).abs() <= tol {
        Some(if (dx > 0.0) == (dy > 0.0) { 1 } else { 3 })
    } else {
        None
    }
}

/// Is the segment at a multiple of 45°?
pub fn octilinear(a: Pt, b: Pt) -> bool {
    dir_class(a, b).is_some()
}

/// Does segment `a`–`b` meet the interior of box `r`? (Liang–Barsky clipping.)
pub fn seg_hits_rect(a: Pt, b: Pt, r: &Rect) -> bool {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let mut t0 = 0.0f64;
    let mut t1 = 1.0f64;
    // Shrink the box by EPS so that touching does not count.
    let (x0, x1, y0, y1) = (r.x0 + EPS, r.x1 - EPS, r.y0 + EPS, r.y1 - EPS);
    if x0 >= x1 || y0 >= y1 {
        return false;
    }
    for (p, q) in [(-dx, a.x - x0), (dx, x1 - a.x), (-dy, a.y - y0), (dy, y1 - a.y)] {
        if p.abs() < 1e-12 {
            if q < 0.0 {
                return false;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// Does a stroke of width `w` along `a`–`b` overlap box `r`? (The box is grown by half the
/// stroke: exact along the sides, slightly generous at the corners.)
pub fn stroke_hits_rect(a: Pt, b: Pt, w: f64, r: &Rect) -> bool {
    let g = r.inflate(w / 2.0);
    if a.x.max(b.x) <= g.x0 || a.x.min(b.x) >= g.x1 || a.y.max(b.y) <= g.y0 || a.y.min(b.y) >= g.y1 {
        return false;
    }
    seg_hits_rect(a, b, &g)
}

/// Does a round-capped stroke of half width `half` along `a`–`b` overlap box `r`? Exact, unlike
/// [`stroke_hits_rect`], whose square corners reach further off a diagonal by the stroke's
/// half width times √2 — for a wide bundle that is a label's height.
pub fn capsule_hits_rect(a: Pt, b: Pt, half: f64, r: &Rect) -> bool {
    if seg_hits_rect(a, b, r) {
        return true;
    }
    let to_rect = |p: Pt| {
        let dx = (r.x0 - p.x).max(p.x - r.x1).max(0.0);
        let dy = (r.y0 - p.y).max(p.y - r.y1).max(0.0);
        (dx * dx + dy * dy).sqrt()
    };
    let corners = [pt(r.x0, r.y0), pt(r.x1, r.y0), pt(r.x0, r.y1), pt(r.x1, r.y1)];
    let d = corners
        .iter()
        .map(|&c| point_seg_dist(c, a, b))
        .fold(to_rect(a).min(to_rect(b)), f64::min);
    d < half - EPS
}

/// Distance from `p` to segment `a`–`b`.
fn point_seg_dist(p: Pt, a: Pt, b: Pt) -> f64 {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let l2 = dx * dx + dy * dy;
    let t = if l2 < 1e-12 {
        0.0
    } else {
        (((p.x - a.x) * dx + (p.y - a.y) * dy) / l2).clamp(0.0, 1.0)
    };
    let (qx, qy) = (a.x + t * dx - p.x, a.y + t * dy - p.y);
    (qx * qx + qy * qy).sqrt()
}

fn cross(o: Pt, a: Pt, b: Pt) -> f64 {
    (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x)
}

/// Do two segments cross or touch at a single point (not parallel)?
pub fn segments_cross(a: Pt, b: Pt, c: Pt, d: Pt) -> bool {
    let d1 = cross(c, d, a);
    let d2 = cross(c, d, b);
    let d3 = cross(a, b, c);
    let d4 = cross(a, b, d);
    let scale =
        1e-9 * (1.0 + (b.x - a.x).abs() + (b.y - a.y).abs()) * (1.0 + (d.x - c.x).abs() + (d.y - c.y).abs());
    // Parallel (or degenerate) pairs never "cross"; their overlaps are measured separately.
    let (ux, uy, vx, vy) = (b.x - a.x, b.y - a.y, d.x - c.x, d.y - c.y);
    if (ux * vy - uy * vx).abs() <= scale {
        return false;
    }
    let s1 = if d1 > scale {
        1
    } else if d1 < -scale {
        -1
    } else {
        0
    };
    let s2 = if d2 > scale {
        1
    } else if d2 < -scale {
        -1
    } else {
        0
    };
    let s3 = if d3 > scale {
        1
    } else if d3 < -scale {
        -1
    } else {
        0
    };
    let s4 = if d4 > scale {
        1
    } else if d4 < -scale {
        -1
    } else {
        0
    };
    s1 * s2 <= 0 && s3 * s4 <= 0
}

/// Do two strokes of width `w` run along each other: parallel, closer than `min_dist` between
/// their center lines, with projections that overlap by more than a hair?
pub fn strokes_overlap_parallel(a: Pt, b: Pt, c: Pt, d: Pt, min_dist: f64) -> bool {
    let (Some(k1), Some(k2)) = (dir_class(a, b), dir_class(c, d)) else {
        return false;
    };
    if k1 != k2 {
        return false;
    }
    let len = ((b.x - a.x).powi(2) + (b.y - a.y).powi(2)).sqrt();
    let (ux, uy) = ((b.x - a.x) / len, (b.y - a.y) / len);
    // Perpendicular distance of c from line a–b.
    let dist = ((c.x - a.x) * uy - (c.y - a.y) * ux).abs();
    if dist >= min_dist - EPS {
        return false;
    }
    // Projections on the common direction.
    let p = |q: Pt| (q.x - a.x) * ux + (q.y - a.y) * uy;
    let (s0, s1) = (0.0, len);
    let (mut t0, mut t1) = (p(c), p(d));
    if t0 > t1 {
        std::mem::swap(&mut t0, &mut t1);
    }
    t0.max(s0) < t1.min(s1) - 0.5
}

/// Drop repeated points and merge collinear runs, so every vertex left is a real bend.
pub fn simplify(pts: &[Pt]) -> Vec<Pt> {
    let mut out: Vec<Pt> = Vec::with_capacity(pts.len());
    for &p in pts {
        if let Some(&l) = out.last() {
            if (l.x - p.x).abs() < EPS && (l.y - p.y).abs() < EPS {
                continue;
            }
        }
        if out.len() >= 2 {
            let a = out[out.len() - 2];
            let b = out[out.len() - 1];
            let same_dir = {
                let (ux, uy) = (b.x - a.x, b.y - a.y);
                let (vx, vy) = (p.x - b.x, p.y - b.y);
                (ux * vy - uy * vx).abs() < 1e-9 * (1.0 + ux.abs() + uy.abs()) * (1.0 + vx.abs() + vy.abs())
                    && ux * vx + uy * vy > 0.0
            };
            if same_dir {
                out.pop();
            }
        }
        out.push(p);
    }
    out
}

/// The polyline offset sideways by `d` (positive: to the right of the direction of travel in
/// SVG coordinates, i.e. below a line running left to right), with mitred joins. `None` when a
/// segment would turn around (the bend is too tight for that offset).
pub fn offset_polyline(pts: &[Pt], d: f64) -> Option<Vec<Pt>> {
    if pts.len() < 2 || d.abs() < EPS {
        return Some(pts.to_vec());
    }
    let n = pts.len();
    let dirs: Vec<(f64, f64)> = pts
        .windows(2)
        .map(|w| {
            let (dx, dy) = (w[1].x - w[0].x, w[1].y - w[0].y);
            let l = (dx * dx + dy * dy).sqrt();
            (dx / l, dy / l)
        })
        .collect();
    let normal = |u: (f64, f64)| (-u.1, u.0);
    let mut out = Vec::with_capacity(n);
    let n0 = normal(dirs[0]);
    out.push(pt(pts[0].x + d * n0.0, pts[0].y + d * n0.1));
    for i in 1..n - 1 {
        let (u, v) = (dirs[i - 1], dirs[i]);
        let (nu, nv) = (normal(u), normal(v));
        // Intersect p + d·nu + s·u with p + d·nv + t·v.
        let p = pts[i];
        let a = pt(p.x + d * nu.0, p.y + d * nu.1);
        let b = pt(p.x + d * nv.0, p.y + d * nv.1);
        let den = u.0 * v.1 - u.1 * v.0;
        if den.abs() < 1e-12 {
            out.push(a);
            continue;
        }
        let s = ((b.x - a.x) * v.1 - (b.y - a.y) * v.0) / den;
        out.push(pt(a.x + s * u.0, a.y + s * u.1));
    }
    let nl = normal(dirs[n - 2]);
    out.push(pt(pts[n - 1].x + d * nl.0, pts[n - 1].y + d * nl.1));
    // Every offset segment must keep the direction of its center segment.
    for (i, w) in out.windows(2).enumerate() {
        let (dx, dy) = (w[1].x - w[0].x, w[1].y - w[0].y);
        if dx * dirs[i].0 + dy * dirs[i].1 < 0.5 {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_keep_directions() {
        let c = vec![pt(0.0, 0.0), pt(40.0, 0.0), pt(70.0, 30.0), pt(120.0, 30.0)];
        for d in [-12.0, -6.0, 0.0, 6.0, 12.0] {
            let s = offset_polyline(&c, d).unwrap();
            assert!(s.windows(2).all(|w| octilinear(w[0], w[1])), "{s:?}");
            assert_eq!(s[0].y, d);
            assert_eq!(s[3].y, 30.0 + d);
        }
        let v = vec![
            pt(0.0, 0.0),
            pt(40.0, 0.0),
            pt(52.0, 12.0),
            pt(52.0, 80.0),
            pt(64.0, 92.0),
            pt(100.0, 92.0),
        ];
        for d in [-9.0, -3.0, 3.0, 9.0] {
            let s = offset_polyline(&v, d).unwrap();
            assert!(s.windows(2).all(|w| octilinear(w[0], w[1])), "{s:?}");
        }
        // A bend too tight for the offset is refused.
        let tight = vec![pt(0.0, 0.0), pt(10.0, 0.0), pt(12.0, 2.0), pt(12.0, 50.0)];
        assert!(offset_polyline(&tight, 20.0).is_none());
    }

    #[test]
    fn crossings_and_boxes() {
        assert!(segments_cross(
            pt(0.0, 0.0),
            pt(10.0, 10.0),
            pt(0.0, 10.0),
            pt(10.0, 0.0)
        ));
        assert!(!segments_cross(
            pt(0.0, 0.0),
            pt(10.0, 0.0),
            pt(0.0, 6.0),
            pt(10.0, 6.0)
        ));
        assert!(strokes_overlap_parallel(
            pt(0.0, 0.0),
            pt(10.0, 0.0),
            pt(5.0, 2.0),
            pt(20.0, 2.0),
            6.0
        ));
        assert!(!strokes_overlap_parallel(
            pt(0.0, 0.0),
            pt(10.0, 0.0),
            pt(5.0, 6.0),
            pt(20.0, 6.0),
            6.0
        ));
        let r = Rect::new(10.0, 10.0, 20.0, 20.0);
        assert!(seg_hits_rect(pt(0.0, 15.0), pt(30.0, 15.0), &r));
        assert!(!seg_hits_rect(pt(0.0, 5.0), pt(30.0, 5.0), &r));
        assert!(stroke_hits_rect(pt(0.0, 8.0), pt(30.0, 8.0), 5.0, &r));
        // A diagonal passing a corner 7 off: a square-cornered stroke 12 wide reaches it, a
        // round one does not; one 16 wide does.
        let k = 40.0 + 7.0 * 2f64.sqrt();
        let (a, b) = (pt(10.0, k - 10.0), pt(k - 10.0, 10.0));
        assert!(stroke_hits_rect(a, b, 12.0, &r));
        assert!(!capsule_hits_rect(a, b, 6.0, &r));
        assert!(capsule_hits_rect(a, b, 8.0, &r));
        assert!(capsule_hits_rect(pt(0.0, 15.0), pt(30.0, 15.0), 0.5, &r));
        assert!(capsule_hits_rect(pt(0.0, 21.0), pt(30.0, 21.0), 1.5, &r));
        assert!(!capsule_hits_rect(pt(0.0, 22.0), pt(30.0, 22.0), 1.5, &r));
        assert!(!octilinear(pt(0.0, 0.0), pt(10.0, 3.0)));
    }
}
