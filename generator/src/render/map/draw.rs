//! From the embedding to drawn geometry: each line's polyline through its stops, and each
//! station's marker.
//!
//! A chain that several lines share is drawn as parallel strands, one pitch apart, offset from
//! its path with mitred corners, so a bundle stays a bundle through its bends. At a station the
//! strands of different chains meet under the station's marker, which is drawn large enough to
//! cover every strand end: a line changing strands there is hidden under the marker, as on a
//! printed map.

use super::geom::{offset_polyline, pt, simplify, Pt, Rect};
use super::grid::embed::Embedding;
use super::input::{Input, LineIn};
use super::topo::Topo;
use super::PITCH;
use std::collections::BTreeMap;

/// Radius of a one-line station's marker, and of an interchange's.
pub const STOP_R: f64 = 6.0;
pub const INTERCHANGE_R: f64 = 8.0;

/// The drawn network, in grid-pixel coordinates (node `(i, j)` at `(i·pitch, j·pitch)`).
pub struct Drawn {
    /// Per line: the dashed lead-in from the start station (may be empty) and the rest.
    pub lines: Vec<(Vec<Pt>, Vec<Pt>)>,
    /// Per station: its marker box and the lines that stop there.
    pub markers: Vec<Rect>,
    pub station_lines: Vec<Vec<usize>>,
}

/// The hop (chain) joining each station pair.
fn edge_chains(topo: &Topo) -> BTreeMap<(usize, usize), usize> {
    let mut out = BTreeMap::new();
    for (c, ch) in topo.chains.iter().enumerate() {
        let (a, b) = ch.ends();
        out.insert((a.min(b), a.max(b)), c);
    }
    out
}

struct Ctx<'a> {
    topo: &'a Topo,
    emb: &'a Embedding,
    pitch: f64,
    chains: BTreeMap<(usize, usize), usize>,
}

impl Ctx<'_> {
    fn at(&self, v: usize) -> Pt {
        let (x, y) = self.emb.grid.xy(v);
        pt(x as f64 * self.pitch, y as f64 * self.pitch)
    }

    /// The strand of line `l` from station `s` to station `t` (consecutive on the line).
    fn hop(&self, l: usize, s: usize, t: usize) -> Vec<Pt> {
        let Some(&c) = self.chains.get(&(s.min(t), s.max(t))) else {
            return Vec::new();
        };
        let ch = &self.topo.chains[c];
        let mut pts: Vec<Pt> = self.emb.paths[c].iter().map(|&v| self.at(v)).collect();
        let n = ch.lines.len();
        let idx = ch.lines.iter().position(|&x| x == l).unwrap_or(0);
        let mut off = (idx as f64 - (n as f64 - 1.0) / 2.0) * PITCH;
        if ch.stations[0] != s {
            pts.reverse();
            off = -off;
        }
        if off != 0.0 && pts.len() >= 2 {
            if let Some(o) = offset_polyline(&pts, off) {
                pts = o;
            }
        }
        pts
    }
}

impl Ctx<'_> {
    /// Line `li`'s dashed lead-in and the rest; the ends of every hop are noted in `ends`.
    /// Each hop is simplified on its own, so a vertex stays at every station: where a line
    /// changes strands under a marker, that short piece stays hidden under it.
    fn line(&self, li: usize, l: &LineIn, ends: &mut [Vec<Pt>]) -> (Vec<Pt>, Vec<Pt>) {
        let (mut lead, mut rest): (Vec<Pt>, Vec<Pt>) = (Vec::new(), Vec::new());
        for (k, w) in l.stops.windows(2).enumerate() {
            let h = simplify(&self.hop(li, w[0], w[1]));
            if let (Some(&a), Some(&b)) = (h.first(), h.last()) {
                ends[w[0]].push(a);
                ends[w[1]].push(b);
            }
            let into = if k == 0 && l.lead_in {
                &mut lead
            } else {
                if rest.is_empty() {
                    rest.extend(lead.last().copied());
                }
                &mut rest
            };
            for p in h {
                if into
                    .last()
                    .is_none_or(|q| (q.x - p.x).abs() > 1e-9 || (q.y - p.y).abs() > 1e-9)
                {
                    into.push(p);
                }
            }
        }
        (lead, rest)
    }

    /// A station's marker: around its nodes and every strand end there, an interchange larger.
    fn marker(&self, s: usize, lines: usize, ends: &[Pt]) -> Rect {
        let r = if lines > 1 { INTERCHANGE_R } else { STOP_R };
        let nodes = &self.emb.nodes[s];
        let mut b: Option<Rect> = None;
        for p in nodes.iter().map(|&v| self.at(v)).chain(ends.iter().copied()) {
            let q = Rect::new(p.x, p.y, p.x, p.y);
            b = Some(b.map_or(q, |b| b.union(&q)));
        }
        b.unwrap_or(Rect::new(0.0, 0.0, 0.0, 0.0)).inflate(r)
    }
}

/// Draw every line and marker.
pub fn draw(input: &Input, topo: &Topo, emb: &Embedding, pitch: f64) -> Drawn {
    let cx = Ctx {
        topo,
        emb,
        pitch,
        chains: edge_chains(topo),
    };
    let n = input.stations.len();
    let mut ends: Vec<Vec<Pt>> = vec![Vec::new(); n];
    let mut station_lines: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut lines = Vec::new();
    for (li, l) in input.lines.iter().enumerate() {
        lines.push(cx.line(li, l, &mut ends));
        for &s in &l.stops {
            if !station_lines[s].contains(&li) {
                station_lines[s].push(li);
            }
        }
    }
    for sl in &mut station_lines {
        sl.sort();
    }
    let markers = (0..n)
        .map(|s| cx.marker(s, station_lines[s].len(), &ends[s]))
        .collect();
    Drawn {
        lines,
        markers,
        station_lines,
    }
}
