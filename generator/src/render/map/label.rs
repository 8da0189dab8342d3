//! Station labels: every name set whole, beside its station, touching nothing.
//!
//! Each station offers candidates: its name on one, two or three lines, to the right, left,
//! above or below its marker, or off a corner. Candidates that touch a line or a marker are
//! dropped at once. The rest are chosen greedily, most constrained station first (the one with
//! the fewest candidates left), each taking the candidate that costs least: its own preference
//! plus how much it would take from stations still waiting (a candidate that blocks the only
//! candidates of a neighbour costs most). Stations left with no candidate are reported; the
//! caller then keeps room around them on the grid and lays the map out again.

use super::bucket::Buckets;
use super::geom::{stroke_hits_rect, Pt, Rect};
use super::text::{label_height, text_width, BASELINE};
use super::{Align, Anchor, CLEAR, LABEL_GAP, LINE_W};

/// A chosen label: which wrapping, its box and where its text is anchored.
#[derive(Debug, Clone)]
pub struct Placed {
    pub variant: usize,
    pub rect: Rect,
    pub anchor: Anchor,
}

struct Cand {
    station: usize,
    /// The box kept for this station while the map was built.
    kept: bool,
    variant: usize,
    rect: Rect,
    anchor: Anchor,
    pref: f64,
}

/// Labels that found no place (the stations) and those placed (per station).
pub type Unplaced = (Vec<usize>, Vec<Option<Placed>>);

/// What labels must not touch.
pub struct Scene<'a> {
    pub segments: Vec<(Pt, Pt)>,
    pub markers: &'a [Rect],
    /// Per station: its label's wrappings.
    pub labels: Vec<Vec<Vec<String>>>,
    /// Per station: the box kept for its label while the map was built (shape, box).
    pub reserved: Vec<Option<(usize, Rect)>>,
    /// Labels reaching out of this box pay for it (it keeps the map's size).
    pub frame: Rect,
}

/// A way to set a label: its size and how much less it is liked than the first.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub w: f64,
    pub h: f64,
    pub pref: f64,
}

/// The shapes of a station's label wrappings.
pub fn shapes(variants: &[Vec<String>]) -> Vec<Shape> {
    variants
        .iter()
        .map(|lines| Shape {
            w: lines.iter().map(|l| text_width(l)).fold(0.0, f64::max),
            h: label_height(lines.len()),
            pref: 0.4 * (lines.len() - 1) as f64,
        })
        .collect()
}

/// Candidate boxes around a marker for a `w × h` label, with their preference (lower first).
pub fn spots(m: &Rect, w: f64, h: f64) -> Vec<(Rect, Align, f64)> {
    let g = LABEL_GAP;
    let (cx, cy) = ((m.x0 + m.x1) / 2.0, (m.y0 + m.y1) / 2.0);
    let mut v = Vec::new();
    // Beside: vertically centred, then slid up and down as long as the station stays level
    // with the text.
    let mid = (cy - h / 2.0).round();
    let mut ys = vec![(mid, 0.0)];
    let mut y = cy - h + 7.0;
    while y <= cy - 7.0 {
        if (y - mid).abs() > 1.0 {
            ys.push((y.round(), 0.3 + (y - mid).abs() / 40.0));
        }
        y += 7.0;
    }
    // (A station on a diagonal line needs its label a little further off.)
    for (g, q) in [(g, 0.0), (g + 7.0, 0.3), (g + 18.0, 0.9)] {
        for &(y0, p) in &ys {
            v.push((Rect::new(m.x1 + g, y0, m.x1 + g + w, y0 + h), Align::Start, p + q));
            v.push((
                Rect::new(m.x0 - g - w, y0, m.x0 - g, y0 + h),
                Align::End,
                0.6 + p + q,
            ));
        }
    }
    // Above and below: centred, then slid sideways as long as the text stays over the station.
    let xc = ((cx - w / 2.0) * 2.0).round() / 2.0;
    let mut xs = vec![(xc, Align::Middle, 0.0)];
    for (x0, a) in [(m.x0, Align::Start), (m.x1 - w, Align::End)] {
        xs.push((x0, a, 0.4));
    }
    let mut x = m.x0 - w + 10.0;
    while x <= m.x1 - 10.0 {
        if (x - xc).abs() > 4.0 && (x - m.x0).abs() > 4.0 && (x - (m.x1 - w)).abs() > 4.0 {
            xs.push((x.round(), Align::Middle, 0.5 + (x - xc).abs() / 60.0));
        }
        x += 16.0;
    }
    for (y0, p) in [(m.y0 - g - h, 0.4), (m.y1 + g, 0.55)] {
        for &(x0, a, q) in &xs {
            v.push((Rect::new(x0, y0, x0 + w, y0 + h), a, p + q));
        }
    }
    // Off a corner, where a diagonal line leaves the other corners free.
    for k in [1.0, 6.0, 14.0] {
        for (x0, y0, a) in [
            (m.x1 + k, m.y0 - h - k, Align::Start),
            (m.x0 - w - k, m.y0 - h - k, Align::End),
            (m.x1 + k, m.y1 + k, Align::Start),
            (m.x0 - w - k, m.y1 + k, Align::End),
        ] {
            v.push((Rect::new(x0, y0, x0 + w, y0 + h), a, 0.8 + k / 12.0));
        }
    }
    v
}

fn anchor(r: &Rect, align: Align) -> Anchor {
    let x = match align {
        Align::Start => r.x0,
        Align::Middle => (r.x0 + r.x1) / 2.0,
        Align::End => r.x1,
    };
    Anchor {
        x,
        y: r.y0 + BASELINE,
        align,
    }
}

impl Scene<'_> {
    fn blocked(&self, r: &Rect, segs: &Buckets, marks: &Buckets) -> bool {
        let g = r.inflate(CLEAR);
        marks.any(&g, |m| self.markers[m].overlaps(&g))
            || segs.any(&g, |i| {
                let (a, b) = self.segments[i];
                stroke_hits_rect(a, b, LINE_W, &g)
            })
    }

    fn candidates(&self, area: Rect) -> Vec<Cand> {
        let mut segs = Buckets::new(area, 64.0);
        for (i, (a, b)) in self.segments.iter().enumerate() {
            segs.insert(&Rect::new(a.x, a.y, b.x, b.y).inflate(LINE_W), i);
        }
        let mut marks = Buckets::new(area, 64.0);
        for (i, m) in self.markers.iter().enumerate() {
            marks.insert(m, i);
        }
        let mut out = Vec::new();
        for (s, variants) in self.labels.iter().enumerate() {
            for (vi, lines) in variants.iter().enumerate() {
                let w = lines.iter().map(|l| text_width(l)).fold(0.0, f64::max);
                let h = label_height(lines.len());
                for (rect, align, p) in spots(&self.markers[s], w, h) {
                    if self.blocked(&rect, &segs, &marks) {
                        continue;
                    }
                    let f = &self.frame;
                    let out_x = (f.x0 - rect.x0).max(0.0) + (rect.x1 - f.x1).max(0.0);
                    let out_y = (f.y0 - rect.y0).max(0.0) + (rect.y1 - f.y1).max(0.0);
                    let kept = self.reserved[s].is_some_and(|(k, r)| k == vi && r == rect);
                    let pref = p + 0.4 * (lines.len() - 1) as f64 + (out_x + out_y) / 12.0
                        - if kept { 3.0 } else { 0.0 };
                    out.push(Cand {
                        station: s,
                        kept,
                        variant: vi,
                        rect,
                        anchor: anchor(&rect, align),
                        pref,
                    });
                }
            }
        }
        out
    }

    /// Place every label. `Err` lists the stations left without a place (the others placed).
    pub fn place(&self) -> Result<Vec<Placed>, Unplaced> {
        let n = self.labels.len();
        let area = self
            .markers
            .iter()
            .fold(self.frame, |a, m| a.union(m))
            .inflate(400.0);
        let mut gr = Greedy::new(self.candidates(area), n, area);
        let mut result: Vec<Option<Placed>> = vec![None; n];
        let mut failed = Vec::new();
        // First every name whose room, kept while the map was built, is still free (those
        // rooms never overlap); then the rest, most constrained first.
        for i in 0..gr.cands.len() {
            let s = gr.cands[i].station;
            if gr.cands[i].kept && gr.alive[i] && gr.waiting[s] {
                gr.waiting[s] = false;
                let c = &gr.cands[i];
                result[s] = Some(Placed {
                    variant: c.variant,
                    rect: c.rect,
                    anchor: c.anchor,
                });
                gr.take(s, i);
            }
        }
        while let Some(s) = (0..n)
            .filter(|&s| gr.waiting[s])
            .min_by_key(|&s| (gr.count[s], s))
        {
            gr.waiting[s] = false;
            let best = gr.of[s]
                .iter()
                .filter(|&&i| gr.alive[i])
                .map(|&i| (gr.cost(i), i))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            match best {
                Some((_, i)) => {
                    let c = &gr.cands[i];
                    result[s] = Some(Placed {
                        variant: c.variant,
                        rect: c.rect,
                        anchor: c.anchor,
                    });
                    gr.take(s, i);
                }
                None => failed.push(s),
            }
        }
        if failed.is_empty() {
            Ok(result.into_iter().map(|r| r.expect("placed")).collect())
        } else {
            Err((failed, result))
        }
    }
}

/// The greedy choice's state: candidates still possible, how many each station has left,
/// and which stations still wait.
struct Greedy {
    cands: Vec<Cand>,
    index: Buckets,
    alive: Vec<bool>,
    count: Vec<usize>,
    of: Vec<Vec<usize>>,
    waiting: Vec<bool>,
}

impl Greedy {
    fn new(cands: Vec<Cand>, n: usize, area: Rect) -> Greedy {
        let mut index = Buckets::new(area, 64.0);
        let mut count = vec![0usize; n];
        let mut of: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, c) in cands.iter().enumerate() {
            index.insert(&c.rect.inflate(CLEAR), i);
            count[c.station] += 1;
            of[c.station].push(i);
        }
        Greedy {
            alive: vec![true; cands.len()],
            cands,
            index,
            count,
            of,
            waiting: vec![true; n],
        }
    }

    fn conflicts(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.cands[i], &self.cands[j]);
        a.station != b.station && a.rect.inflate(CLEAR).overlaps(&b.rect)
    }

    /// A candidate's preference plus what it would take from stations still waiting (a
    /// candidate that blocks the last candidates of a neighbour costs most).
    fn cost(&self, i: usize) -> f64 {
        let mut c = self.cands[i].pref;
        self.index.each(&self.cands[i].rect.inflate(CLEAR), |j| {
            let t = self.cands[j].station;
            if self.alive[j] && self.waiting[t] && self.conflicts(i, j) {
                c += 3.0 / self.count[t].max(1) as f64;
            }
        });
        c
    }

    /// Station `s` takes candidate `i`: its other candidates and those it overlaps go.
    fn take(&mut self, s: usize, i: usize) {
        for j in self.index.near(&self.cands[i].rect.inflate(CLEAR)) {
            if self.alive[j] && (self.cands[j].station == s || self.conflicts(i, j)) {
                self.alive[j] = false;
                self.count[self.cands[j].station] -= 1;
            }
        }
    }
}
