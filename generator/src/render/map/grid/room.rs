//! Room for labels, kept while the map is built: as soon as a station is placed, the best free
//! box beside it is reserved for its name, and the grid learns how close each node and grid
//! edge comes to a reserved box, so later paths pay to run through it.
//!
//! Why during the embedding: a station's name is wider than the gap between two grid lines, so
//! if paths were routed first and names fitted afterwards, the dense middle of the map would
//! leave names nowhere to go. Reserving early lets the paths go round them.
//!
//! The room also knows each station's marker as it will be drawn (grown by the strands that
//! end there), so it can tell the grid which grid edges near a marker are too close for a
//! bundle of lines to pass.

use super::{Grid, DIRS};
use crate::render::map::bucket::Buckets;
use crate::render::map::geom::{capsule_hits_rect, pt, seg_hits_rect, stroke_hits_rect, Pt, Rect};
use crate::render::map::label::{spots, Shape};
use crate::render::map::{CLEAR, LINE_W, MARKER_OUTLINE, PITCH};

/// Half the space a station marker takes around its node(s), outline and clearance included.
pub const MARKER_HALF: f64 = 8.0 + MARKER_OUTLINE + CLEAR;
/// Radius of a marker (an interchange's; a one-line stop is smaller).
const MARKER_R: f64 = 8.0;
/// Marks of a reservation no path may run through.
pub const HARD: u8 = 100;
/// Cost of running a path through room reserved for a label.
pub const INTRUDE: u32 = 30;

/// Most lines [`Room::narrows`] counts a grid edge as able to carry past a marker.
const MAX_PAST: u8 = 24;

/// How many lines a bundle along `a`–`b` may carry, its strands a pitch apart across it,
/// without one of them meeting `keep`.
fn lines_past(a: Pt, b: Pt, keep: &Rect) -> u8 {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let len = (dx * dx + dy * dy).sqrt();
    let (nx, ny) = (-dy / len, dx / len);
    let hits = |o: f64| {
        seg_hits_rect(
            pt(a.x + o * nx, a.y + o * ny),
            pt(b.x + o * nx, b.y + o * ny),
            keep,
        )
    };
    (1..=MAX_PAST)
        .find(|&k| {
            let o = (k - 1) as f64 * PITCH / 2.0;
            hits(o) || hits(-o)
        })
        .map_or(MAX_PAST, |k| k - 1)
}

/// Reserved label boxes and what they must avoid.
pub struct Room {
    pub cell: f64,
    /// Stroke width of the widest bundle.
    fat: f64,
    /// Strokes of routed paths: (a, b, half width including clearance).
    segs: Vec<(Pt, Pt, f64)>,
    seg_index: Buckets,
    /// Marker box of each placed station.
    pub markers: Vec<Option<Rect>>,
    marker_index: Buckets,
    /// Reserved label per station: (shape index, box).
    pub labels: Vec<Option<(usize, Rect)>>,
    /// Marks each reserved label left on the grid ([`HARD`] or 1).
    weight: Vec<u8>,
    label_index: Buckets,
}

impl Room {
    pub fn new(g: &Grid, cell: f64, stations: usize, widest: usize) -> Room {
        let area = Rect::new(
            -4.0 * cell,
            -4.0 * cell,
            (g.w + 4) as f64 * cell,
            (g.h + 4) as f64 * cell,
        );
        Room {
            cell,
            fat: LINE_W + (widest.max(1) - 1) as f64 * PITCH,
            segs: Vec::new(),
            seg_index: Buckets::new(area, 64.0),
            markers: vec![None; stations],
            marker_index: Buckets::new(area, 64.0),
            labels: vec![None; stations],
            weight: vec![0; stations],
            label_index: Buckets::new(area, 64.0),
        }
    }

    pub fn at(&self, g: &Grid, v: usize) -> Pt {
        let (x, y) = g.xy(v);
        pt(x as f64 * self.cell, y as f64 * self.cell)
    }

    /// A routed path carrying `lines` lines.
    pub fn add_path(&mut self, g: &Grid, path: &[usize], lines: usize) {
        let half = LINE_W / 2.0 + (lines.max(1) - 1) as f64 * PITCH / 2.0 + CLEAR;
        for w in path.windows(2) {
            let (a, b) = (self.at(g, w[0]), self.at(g, w[1]));
            self.seg_index
                .insert(&Rect::new(a.x, a.y, b.x, b.y).inflate(half), self.segs.len());
            self.segs.push((a, b, half));
        }
    }

    /// A placed station on `nodes`.
    pub fn add_station(&mut self, g: &Grid, s: usize, nodes: &[usize]) {
        let mut r: Option<Rect> = None;
        for &v in nodes {
            let p = self.at(g, v);
            let b = Rect::new(p.x, p.y, p.x, p.y);
            r = Some(r.map_or(b, |x| x.union(&b)));
        }
        self.markers[s] = r.map(|r| r.inflate(MARKER_R));
        if let Some(m) = self.markers[s] {
            self.marker_index.insert(&m, s);
        }
    }

    /// Chain of `lines` lines leaving station `s` from node `v` in direction `d`: its strands
    /// end beside the node, one pitch apart across the direction, and the drawn marker covers
    /// every strand end, so the marker kept here grows to cover them too (a wide bundle makes
    /// a large marker, and a name kept beside the small one would touch the drawn one).
    pub fn add_strands(&mut self, g: &Grid, s: usize, v: usize, d: usize, lines: usize) {
        let Some(m) = self.markers[s] else { return };
        let (dx, dy) = (DIRS[d].0 as f64, DIRS[d].1 as f64);
        let len = (dx * dx + dy * dy).sqrt();
        let half = (lines.max(1) - 1) as f64 * PITCH / 2.0;
        let (ox, oy) = (-dy / len * half, dx / len * half);
        let p = self.at(g, v);
        let ends = Rect::new(p.x - ox, p.y - oy, p.x + ox, p.y + oy).inflate(MARKER_R);
        let grown = m.union(&ends);
        if grown != m {
            self.markers[s] = Some(grown);
            self.marker_index.insert(&grown, s);
        }
    }

    /// Tell the grid how many lines each grid edge near a station may carry past its marker
    /// (as it will be drawn: grown by every strand ending there): a wide bundle, or a line
    /// running diagonally past the corner of a large marker, would run over it.
    pub fn narrows(&self, g: &mut Grid, stations: &[Vec<usize>]) {
        let c = self.cell;
        for (s, own) in stations.iter().enumerate() {
            let Some(m) = self.markers[s] else { continue };
            let keep = m.inflate(MARKER_OUTLINE + LINE_W / 2.0 + CLEAR / 2.0);
            let reach = keep.inflate(c + MAX_PAST as f64 * PITCH / 2.0);
            let (x0, x1) = ((reach.x0 / c).floor() as i32, (reach.x1 / c).ceil() as i32);
            let (y0, y1) = ((reach.y0 / c).floor() as i32, (reach.y1 / c).ceil() as i32);
            let (w, h) = (g.w as i32, g.h as i32);
            let xs = x0.max(0)..=x1.min(w - 1);
            for v in (y0.max(0)..=y1.min(h - 1)).flat_map(|y| xs.clone().map(move |x| (y * w + x) as usize)) {
                for d in 0..8 {
                    let Some(u) = g.step(v, d) else { continue };
                    if own.contains(&v) || own.contains(&u) {
                        continue;
                    }
                    let k = lines_past(self.at(g, v), self.at(g, u), &keep);
                    g.narrow[v][d] = g.narrow[v][d].min(k);
                }
            }
        }
    }

    /// Does box `r` touch a stroke, a marker or another station's label?
    pub fn blocked(&self, r: &Rect, own: usize) -> bool {
        let g = r.inflate(CLEAR);
        self.marker_index
            .any(&g, |m| self.markers[m].is_some_and(|m| m.overlaps(&g)))
            || self.label_index.any(&g, |s| {
                s != own && self.labels[s].is_some_and(|l| l.1.overlaps(&g))
            })
            || self.seg_index.any(&g, |i| {
                // Not one square-cornered stroke as wide as the bundle, which reaches its half
                // width times √2 off a diagonal; but each strand is measured square-cornered
                // (as `stats` does), reaching LINE_W/2 · √2 off a diagonal.
                let (a, b, half) = self.segs[i];
                let corner = LINE_W / 2.0 * (std::f64::consts::SQRT_2 - 1.0);
                capsule_hits_rect(a, b, half - CLEAR + corner, &g)
            })
    }

    /// The best free label box for station `s` (marker `m`) among its shapes, with its cost:
    /// the shape's own preference plus the grid room it takes.
    pub fn best(&self, g: &Grid, s: usize, shapes: &[Shape]) -> Option<(usize, Rect, f64)> {
        let m = self.markers[s]?;
        let mut best: Option<(usize, Rect, f64)> = None;
        for (k, sh) in shapes.iter().enumerate() {
            for (rect, _, pref) in spots(&m, sh.w, sh.h) {
                let lower = pref + sh.pref;
                if best.as_ref().is_some_and(|b| b.2 <= lower) || self.blocked(&rect, s) {
                    continue;
                }
                let cost = lower + self.taken(g, &rect) as f64 * 0.35;
                if best.as_ref().is_none_or(|b| cost < b.2) {
                    best = Some((k, rect, cost));
                }
            }
        }
        best
    }

    /// Free grid nodes and edges a box would take from paths.
    fn taken(&self, g: &Grid, r: &Rect) -> usize {
        let mut n = 0;
        self.each_near(g, r, |v, d, hit, _| {
            if hit && (d == 8 || g.port[v][d].is_none()) {
                n += 1;
            }
        });
        n
    }

    /// Call `f(node, dir, touches)` for nodes (dir 8) and grid edges around box `r`.
    /// Call `f(node, dir, thin, fat)` for nodes (dir 8) and grid edges around box `r`: does a
    /// station there (`thin`), a one-line stroke (`thin`) or the widest bundle (`fat`) touch it?
    fn each_near(&self, g: &Grid, r: &Rect, mut f: impl FnMut(usize, usize, bool, bool)) {
        let c = self.cell;
        let pass = r.inflate(self.fat / 2.0 + CLEAR);
        let (x0, x1) = ((pass.x0 / c).floor() as i32 - 1, (pass.x1 / c).ceil() as i32 + 1);
        let (y0, y1) = ((pass.y0 / c).floor() as i32 - 1, (pass.y1 / c).ceil() as i32 + 1);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let Some(v) = g.node(x, y) else { continue };
                let p = self.at(g, v);
                let m = r.inflate(MARKER_HALF);
                let inside = p.x > m.x0 && p.x < m.x1 && p.y > m.y0 && p.y < m.y1;
                f(v, 8, inside, inside);
                for (d, &(dx, dy)) in DIRS.iter().enumerate() {
                    if g.node(x + dx, y + dy).is_none() {
                        continue;
                    }
                    let q = pt(p.x + dx as f64 * c, p.y + dy as f64 * c);
                    let g = r.inflate(CLEAR);
                    f(
                        v,
                        d,
                        stroke_hits_rect(p, q, LINE_W, &g),
                        stroke_hits_rect(p, q, self.fat, &g),
                    );
                }
            }
        }
    }

    /// Reserve `rect` for station `s`'s label (shape `k`) and tell the grid; a `hard`
    /// reservation may not be run through at all.
    pub fn reserve(&mut self, g: &mut Grid, s: usize, k: usize, rect: Rect, hard: bool) {
        self.labels[s] = Some((k, rect));
        self.label_index.insert(&rect, s);
        self.weight[s] = if hard { HARD } else { 1 };
        self.mark(g, &rect, self.weight[s], true);
    }

    /// Give up station `s`'s reserved box (a path had to run through it), taking back the
    /// marks it left, as many as it made.
    pub fn release(&mut self, g: &mut Grid, s: usize) {
        if let Some((_, rect)) = self.labels[s].take() {
            self.mark(g, &rect, self.weight[s], false);
        }
    }

    fn mark(&self, g: &mut Grid, rect: &Rect, by: u8, on: bool) {
        let mut hits = Vec::new();
        self.each_near(g, rect, |v, d, thin, fat| {
            if fat {
                hits.push((v, d, thin));
            }
        });
        let bump = |x: &mut u8| {
            *x = if on {
                x.saturating_add(by)
            } else {
                x.saturating_sub(by)
            }
        };
        for (v, d, thin) in hits {
            if d == 8 {
                bump(&mut g.room_node[v]);
            } else {
                bump(&mut g.room_fat[v][d]);
                if thin {
                    bump(&mut g.room_edge[v][d]);
                }
            }
        }
    }

    /// Stations whose reserved box now touches something, near `area` (where a path was added).
    pub fn intruded(&self, area: &Rect) -> Vec<usize> {
        self.label_index
            .near(area)
            .into_iter()
            .filter(|&s| self.labels[s].is_some_and(|(_, r)| self.blocked(&r, s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_pass_a_marker_only_as_wide_as_fits() {
        // A stop's marker, as `narrows` keeps it clear.
        let keep = Rect::new(-8.0, -8.0, 8.0, 8.0).inflate(MARKER_OUTLINE + LINE_W / 2.0 + CLEAR / 2.0);
        // One grid step below it, along a grid line: ten strands pass, eleven would touch.
        assert_eq!(lines_past(pt(-20.0, 40.0), pt(20.0, 40.0), &keep), 10);
        // Diagonally past its corner: four pass, five would touch.
        assert_eq!(lines_past(pt(40.0, 0.0), pt(0.0, 40.0), &keep), 4);
        // Through it: none.
        assert_eq!(lines_past(pt(-20.0, 0.0), pt(20.0, 0.0), &keep), 0);
    }
}
