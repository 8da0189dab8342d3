//! Measuring a finished map from its geometry, the same coordinates the SVG prints.
//!
//! Label boxes are the estimated text extents (see `text`), station markers their rounded
//! boxes including the outline, lines their strokes at full width. Nothing here trusts the
//! layout's own bookkeeping: every count is a geometric test, so a layout bug shows up here.

use super::geom::{octilinear, segments_cross, stroke_hits_rect, strokes_overlap_parallel, Pt, Rect};
use super::{Layout, LINE_W};
use std::fmt;

/// The measures `hdlc graph --map-stats` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct MapStats {
    pub stations: usize,
    pub lines: usize,
    /// Label boxes overlapping another label, a station marker or a line stroke (one per pair).
    pub label_overlaps: usize,
    /// Station markers overlapping each other, or crossed by a line that does not stop there.
    pub station_overlaps: usize,
    /// Line segments not at 0°, 45° or 90°.
    pub non_octilinear: usize,
    /// Points where strokes of two different lines cross (outside station markers).
    pub line_crossings: usize,
    /// Segment pairs of two different lines whose strokes run on top of each other.
    pub line_overlaps: usize,
    /// Changes of direction along all lines.
    pub bends: usize,
    pub width: f64,
    pub height: f64,
}

/// Outline width around station markers that counts as part of the marker.
const MARKER_OUTLINE: f64 = 1.25;

fn segs(l: &[Pt]) -> impl Iterator<Item = (Pt, Pt)> + '_ {
    l.windows(2).map(|w| (w[0], w[1]))
}

fn seg_box(a: Pt, b: Pt) -> Rect {
    Rect::new(a.x, a.y, b.x, b.y).inflate(LINE_W)
}

struct Found {
    stats: MapStats,
    bad: Vec<Rect>,
}

fn find(layout: &Layout) -> Found {
    let st = &layout.stations;
    let lines = &layout.lines;
    let mut bad = Vec::new();
    let markers: Vec<Rect> = st.iter().map(|s| s.marker.inflate(MARKER_OUTLINE)).collect();
    let mut label_overlaps = 0;
    for i in 0..st.len() {
        let li = st[i].label_box;
        for other in &st[i + 1..] {
            if li.overlaps(&other.label_box) {
                label_overlaps += 1;
                bad.push(li.union(&other.label_box));
            }
        }
        for m in &markers {
            if li.overlaps(m) {
                label_overlaps += 1;
                bad.push(li.union(m));
            }
        }
        for l in lines {
            if let Some((a, b)) = segs(&l.points).find(|&(a, b)| stroke_hits_rect(a, b, LINE_W, &li)) {
                label_overlaps += 1;
                bad.push(li.union(&seg_box(a, b)));
            }
        }
    }
    let mut station_overlaps = 0;
    for i in 0..st.len() {
        for j in i + 1..st.len() {
            if markers[i].overlaps(&markers[j]) {
                station_overlaps += 1;
                bad.push(markers[i].union(&markers[j]));
            }
        }
        for (k, l) in lines.iter().enumerate() {
            if st[i].lines.contains(&k) {
                continue;
            }
            if let Some((a, b)) = segs(&l.points).find(|&(a, b)| stroke_hits_rect(a, b, LINE_W, &markers[i]))
            {
                station_overlaps += 1;
                bad.push(markers[i].union(&seg_box(a, b)));
            }
        }
    }
    let mut non_octilinear = 0;
    let mut bends = 0;
    for l in lines {
        for (a, b) in segs(&l.points) {
            if !octilinear(a, b) {
                non_octilinear += 1;
                bad.push(seg_box(a, b));
            }
        }
        bends += l.points.len().saturating_sub(2);
    }
    let boxes: Vec<Vec<Rect>> = lines
        .iter()
        .map(|l| segs(&l.points).map(|(a, b)| seg_box(a, b)).collect())
        .collect();
    // A segment entirely inside the marker of a station its line serves (where a line turns
    // back at a station, from one of its slots to another) is hidden under the marker.
    let inside = |p: Pt, r: &Rect| p.x >= r.x0 && p.x <= r.x1 && p.y >= r.y0 && p.y <= r.y1;
    let hidden: Vec<Vec<bool>> = lines
        .iter()
        .enumerate()
        .map(|(k, l)| {
            segs(&l.points)
                .map(|(a, b)| {
                    st.iter()
                        .any(|s| s.lines.contains(&k) && inside(a, &s.marker) && inside(b, &s.marker))
                })
                .collect()
        })
        .collect();
    let mut line_crossings = 0;
    let mut line_overlaps = 0;
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            for (si, (a, b)) in segs(&lines[i].points).enumerate() {
                if hidden[i][si] {
                    continue;
                }
                for (sj, (c, d)) in segs(&lines[j].points).enumerate() {
                    if hidden[j][sj] || !boxes[i][si].overlaps(&boxes[j][sj]) {
                        continue;
                    }
                    if segments_cross(a, b, c, d) {
                        line_crossings += 1;
                    } else if strokes_overlap_parallel(a, b, c, d, LINE_W) {
                        line_overlaps += 1;
                    }
                }
            }
        }
    }
    Found {
        stats: MapStats {
            stations: st.len(),
            lines: lines.iter().filter(|l| l.stations > 0).count(),
            label_overlaps,
            station_overlaps,
            non_octilinear,
            line_crossings,
            line_overlaps,
            bends,
            width: layout.width,
            height: layout.height,
        },
        bad,
    }
}

impl MapStats {
    /// Measure a laid-out map.
    pub fn measure(layout: &Layout) -> MapStats {
        find(layout).stats
    }

    /// Where the map breaks a promise (label or station overlaps, non-octilinear segments):
    /// boxes around each offence, in layout coordinates. Empty for a clean map.
    pub fn violations(layout: &Layout) -> Vec<Rect> {
        find(layout).bad
    }

    /// Does the map keep every promise the layout makes?
    pub fn is_clean(&self) -> bool {
        self.label_overlaps == 0 && self.station_overlaps == 0 && self.non_octilinear == 0
    }
}

impl fmt::Display for MapStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "stations: {}", self.stations)?;
        writeln!(f, "lines: {}", self.lines)?;
        writeln!(f, "label overlaps: {}", self.label_overlaps)?;
        writeln!(f, "station overlaps: {}", self.station_overlaps)?;
        writeln!(f, "non-octilinear segments: {}", self.non_octilinear)?;
        writeln!(f, "line crossings: {}", self.line_crossings)?;
        writeln!(f, "line overlaps: {}", self.line_overlaps)?;
        writeln!(f, "bends: {}", self.bends)?;
        write!(f, "size: {:.0}×{:.0}", self.width, self.height)
    }
}
