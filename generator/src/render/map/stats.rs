//! Measuring a finished map from its geometry, the same coordinates the SVG prints.
//!
//! Label boxes are the estimated text extents (see `text`), station markers their rounded
//! boxes including the outline, lines their strokes at full width. Nothing here trusts the
//! layout's own bookkeeping: every count is a geometric test, so a layout bug shows up here.
//!
//! What a reader cannot see is not counted: a piece of a line that lies wholly under the marker
//! of a station the line stops at (where lines change strands at an interchange), and lines
//! meeting under the marker of a station they both stop at — that is an interchange, not a
//! crossing.

use super::geom::{octilinear, segments_cross, stroke_hits_rect, strokes_overlap_parallel, Pt, Rect};
use super::{Layout, FONT, LINE_W, MARKER_OUTLINE};
use std::fmt;

/// Viewport width the map is fitted to when the bars are measured.
pub const FIT_WIDTH: f64 = 1400.0;
/// On-screen size (px) of the station names from which the explorer shows them (map.js); the
/// whole map fitted to the window is the overview by area, whose area names are CSS text of
/// [`AREA_NAME_PX`] (map.css).
pub const READABLE_PX: f64 = 10.0;
pub const AREA_NAME_PX: f64 = 13.0;

/// The measures `hdlc graph --map-stats` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct MapStats {
    pub stations: usize,
    pub lines: usize,
    /// Label boxes overlapping another label, a station marker or a line stroke (one per pair).
    pub label_overlaps: usize,
    /// Station markers overlapping each other, or crossed by a line that does not stop there.
    pub station_overlaps: usize,
    /// Visible line segments not at 0°, 45° or 90°.
    pub non_octilinear: usize,
    /// Points where strokes of two different lines cross (outside the stations they share).
    pub line_crossings: usize,
    /// Segment pairs of two different lines whose strokes run on top of each other.
    pub line_overlaps: usize,
    /// Changes of direction along all lines.
    pub bends: usize,
    /// Labels cut short with "…".
    pub truncated_labels: usize,
    /// Stations no line stops at.
    pub off_line: usize,
    pub width: f64,
    pub height: f64,
    /// Areas the overview names.
    pub areas: usize,
    /// Size (px) of the largest area opened at readable names.
    pub largest_area: (f64, f64),
}

/// A line's visible pieces: (a, b, hidden under a marker of a station it stops at).
fn pieces(layout: &Layout, k: usize) -> Vec<Vec<(Pt, Pt, bool)>> {
    let l = &layout.lines[k];
    let inside = |p: Pt, r: &Rect| {
        p.x >= r.x0 - 1e-6 && p.x <= r.x1 + 1e-6 && p.y >= r.y0 - 1e-6 && p.y <= r.y1 + 1e-6
    };
    [&l.lead, &l.points]
        .into_iter()
        .map(|pts| {
            pts.windows(2)
                .map(|w| {
                    let hidden = layout
                        .stations
                        .iter()
                        .any(|s| s.lines.contains(&k) && inside(w[0], &s.marker) && inside(w[1], &s.marker));
                    (w[0], w[1], hidden)
                })
                .collect()
        })
        .collect()
}

fn seg_box(a: Pt, b: Pt) -> Rect {
    Rect::new(a.x, a.y, b.x, b.y).inflate(LINE_W)
}

/// Where two crossing segments meet.
fn meet(a: Pt, b: Pt, c: Pt, d: Pt) -> Pt {
    let (r, s) = ((b.x - a.x, b.y - a.y), (d.x - c.x, d.y - c.y));
    let den = r.0 * s.1 - r.1 * s.0;
    let t = if den.abs() < 1e-12 {
        0.0
    } else {
        ((c.x - a.x) * s.1 - (c.y - a.y) * s.0) / den
    };
    Pt {
        x: a.x + t * r.0,
        y: a.y + t * r.1,
    }
}

struct Found {
    stats: MapStats,
    bad: Vec<Rect>,
}

fn label_faults(layout: &Layout, markers: &[Rect], bad: &mut Vec<Rect>) -> usize {
    let st = &layout.stations;
    let mut n = 0;
    for i in 0..st.len() {
        let li = st[i].label_box;
        for other in &st[i + 1..] {
            if li.overlaps(&other.label_box) {
                n += 1;
                bad.push(li.union(&other.label_box));
            }
        }
        for m in markers {
            if li.overlaps(m) {
                n += 1;
                bad.push(li.union(m));
            }
        }
        for l in &layout.lines {
            let segs = l.lead.windows(2).chain(l.points.windows(2));
            if let Some(w) = segs
                .into_iter()
                .find(|w| stroke_hits_rect(w[0], w[1], LINE_W, &li))
            {
                n += 1;
                bad.push(li.union(&seg_box(w[0], w[1])));
            }
        }
    }
    n
}

fn station_faults(layout: &Layout, markers: &[Rect], bad: &mut Vec<Rect>) -> usize {
    let st = &layout.stations;
    let mut n = 0;
    for i in 0..st.len() {
        for j in i + 1..st.len() {
            if markers[i].overlaps(&markers[j]) {
                n += 1;
                bad.push(markers[i].union(&markers[j]));
            }
        }
        for (k, l) in layout.lines.iter().enumerate() {
            if st[i].lines.contains(&k) {
                continue;
            }
            let mut segs = l.lead.windows(2).chain(l.points.windows(2));
            if let Some(w) = segs.find(|w| stroke_hits_rect(w[0], w[1], LINE_W, &markers[i])) {
                n += 1;
                bad.push(markers[i].union(&seg_box(w[0], w[1])));
            }
        }
    }
    n
}

/// Crossings (outside the stations both lines stop at) and overlaps between lines' visible pieces.
fn between_lines(layout: &Layout, all: &[Vec<(Pt, Pt, bool)>], bad: &mut Vec<Rect>) -> (usize, usize) {
    let shared = |i: usize, j: usize, p: Pt| {
        layout.stations.iter().any(|s| {
            let m = s.marker.inflate(1.0);
            s.lines.contains(&i)
                && s.lines.contains(&j)
                && p.x >= m.x0
                && p.x <= m.x1
                && p.y >= m.y0
                && p.y <= m.y1
        })
    };
    let (mut crossings, mut overlaps) = (0, 0);
    for i in 0..all.len() {
        for j in i + 1..all.len() {
            // Where one line meets the other at a bend it touches two of its pieces: one crossing.
            let mut seen: Vec<Pt> = Vec::new();
            for &(a, b, _) in &all[i] {
                for &(c, d, _) in &all[j] {
                    if !seg_box(a, b).overlaps(&seg_box(c, d)) {
                        continue;
                    }
                    if segments_cross(a, b, c, d) {
                        let m = meet(a, b, c, d);
                        let again = seen
                            .iter()
                            .any(|q| (q.x - m.x).abs() < 0.5 && (q.y - m.y).abs() < 0.5);
                        if !shared(i, j, m) && !again {
                            crossings += 1;
                            seen.push(m);
                            bad.push(Rect::new(m.x, m.y, m.x, m.y).inflate(6.0));
                        }
                    } else if strokes_overlap_parallel(a, b, c, d, LINE_W) {
                        overlaps += 1;
                        bad.push(seg_box(a, b).union(&seg_box(c, d)));
                    }
                }
            }
        }
    }
    (crossings, overlaps)
}

/// Crossings and overlaps between lines, and each line's non-octilinear pieces and bends.
fn line_faults(layout: &Layout, bad: &mut Vec<Rect>) -> (usize, usize, usize, usize) {
    let all: Vec<Vec<(Pt, Pt, bool)>> = (0..layout.lines.len())
        .map(|k| pieces(layout, k).into_iter().flatten().filter(|p| !p.2).collect())
        .collect();
    let (mut non_oct, mut bends) = (0, 0);
    for k in 0..layout.lines.len() {
        for run in pieces(layout, k) {
            let mut last: Option<(i8, i8)> = None;
            for (a, b, hidden) in run {
                if hidden {
                    continue;
                }
                if !octilinear(a, b) {
                    non_oct += 1;
                    bad.push(seg_box(a, b));
                    continue;
                }
                let d = ((b.x - a.x).signum() as i8, (b.y - a.y).signum() as i8);
                if last.is_some_and(|l| l != d) {
                    bends += 1;
                }
                last = Some(d);
            }
        }
    }
    let (crossings, overlaps) = between_lines(layout, &all, bad);
    (non_oct, bends, crossings, overlaps)
}

fn find(layout: &Layout) -> Found {
    let mut bad = Vec::new();
    let markers: Vec<Rect> = layout
        .stations
        .iter()
        .map(|s| s.marker.inflate(MARKER_OUTLINE))
        .collect();
    let label_overlaps = label_faults(layout, &markers, &mut bad);
    let station_overlaps = station_faults(layout, &markers, &mut bad);
    let (non_octilinear, bends, line_crossings, line_overlaps) = line_faults(layout, &mut bad);
    let st = &layout.stations;
    Found {
        stats: MapStats {
            stations: st.len(),
            lines: layout.lines.iter().filter(|l| l.stations > 0).count(),
            label_overlaps,
            station_overlaps,
            non_octilinear,
            line_crossings,
            line_overlaps,
            bends,
            truncated_labels: st
                .iter()
                .filter(|s| s.label.iter().any(|l| l.contains('…')))
                .count(),
            off_line: st.iter().filter(|s| s.lines.is_empty()).count(),
            width: layout.width,
            height: layout.height,
            areas: layout.regions.len(),
            largest_area: layout.regions.iter().fold((0.0f64, 0.0f64), |m, r| {
                let k = READABLE_PX / FONT;
                (
                    m.0.max((r.bbox.x1 - r.bbox.x0) * k),
                    m.1.max((r.bbox.y1 - r.bbox.y0) * k),
                )
            }),
        },
        bad,
    }
}

impl MapStats {
    /// Measure a laid-out map.
    pub fn measure(layout: &Layout) -> MapStats {
        find(layout).stats
    }

    /// Where the map breaks a promise: boxes around each offence. Empty for a clean map.
    pub fn violations(layout: &Layout) -> Vec<Rect> {
        find(layout).bad
    }

    /// Does the map keep every promise the layout makes?
    pub fn is_clean(&self) -> bool {
        self.label_overlaps == 0
            && self.station_overlaps == 0
            && self.non_octilinear == 0
            && self.line_overlaps == 0
            && self.truncated_labels == 0
    }

    /// Width : height.
    pub fn aspect(&self) -> f64 {
        self.width / self.height.max(1.0)
    }

    /// Height of a label's text on screen (its font size, px) when the map is fitted to the
    /// width of a [`FIT_WIDTH`]-pixel viewport.
    pub fn label_px_at_fit(&self) -> f64 {
        FONT * FIT_WIDTH / self.width.max(1.0)
    }
}

impl fmt::Display for MapStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "stations: {}", self.stations)?;
        writeln!(f, "lines: {}", self.lines)?;
        writeln!(f, "stations on no line: {}", self.off_line)?;
        writeln!(f, "label overlaps: {}", self.label_overlaps)?;
        writeln!(f, "truncated labels: {}", self.truncated_labels)?;
        writeln!(f, "station overlaps: {}", self.station_overlaps)?;
        writeln!(f, "non-octilinear segments: {}", self.non_octilinear)?;
        writeln!(f, "line crossings: {}", self.line_crossings)?;
        writeln!(f, "line overlaps: {}", self.line_overlaps)?;
        writeln!(f, "bends: {}", self.bends)?;
        writeln!(f, "size: {:.0}×{:.0}", self.width, self.height)?;
        writeln!(f, "aspect: {:.2}", self.aspect())?;
        writeln!(
            f,
            "fitted to {FIT_WIDTH:.0} px: the overview by {} areas, area names {AREA_NAME_PX:.0} px; station names (the whole sheet would be {:.1} px) show from {READABLE_PX:.0} px",
            self.areas,
            self.label_px_at_fit()
        )?;
        write!(
            f,
            "largest area opened with {READABLE_PX:.0} px names: {:.0}×{:.0} px",
            self.largest_area.0, self.largest_area.1
        )
    }
}
