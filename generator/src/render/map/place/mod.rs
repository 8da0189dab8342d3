//! Coordinates: heights of items in their columns, column positions, labels and routes, grown
//! until the map measures clean.
//!
//! * **Heights** minimise the total vertical travel of all strands (an L1 objective, so most
//!   strands end up exactly level and the steps gather on few of them) under order and
//!   separation constraints in each column: iteratively reweighted least squares, each column
//!   solved exactly by isotonic regression, sweeping until nothing moves; then a few sweeps of
//!   the priority method of layered drawing snap nearly level strands to level, and a dynamic
//!   programme per run of pass-through items (long hops, stations one bundle runs through)
//!   leaves each run with the fewest steps. The separation above a station keeps room for its
//!   label, so a label above its station never meets its own column.
//! * **Labels** are placed before routing, each at the first free candidate position (above,
//!   below, beside, diagonal; see [`candidates`]), free of every station, every stroke that is
//!   already certain (lines through stations and dummies, straight hops) and every other label.
//! * **Routes** then treat labels as obstacles (see `route`).
//! * If a label finds no place, a channel is too narrow for its routes, or the finished map
//!   measures any overlap, the channels involved are widened and everything from the column
//!   positions on is done again. Heights never change, so this converges: wide enough channels
//!   separate every label and every bend.
//!
//! Files: `heights` (the least-squares heights) and `straighten` (snapping to level), `labels`
//! (candidate boxes and placement), `assemble` (final geometry and legend); this file holds the
//! frame computed once and the growth loop that widens channels.

mod assemble;
mod heights;
mod labels;
mod straighten;

use super::geom::{pt, simplify, Pt, Rect, EPS};
use super::net::{Input, ItemKind, Net};
use super::route::{self, Channel, Unit};
use super::stats::MapStats;
use super::text::{label_height, text_width, BASELINE};
use super::{
    Align, Anchor, Layout, LegendEntry, LineGeom, StationGeom, CLEAR, LABEL_GAP, LINE_W, MARGIN, PILL_W,
    PITCH, STUB,
};
use assemble::assemble;
use heights::*;
use labels::candidates;

/// Rounds of widening before giving up (then the map is drawn as it is and the stats say so).
const MAX_ROUNDS: usize = 60;
/// Widenings of one channel after which its routes may run along each other rather than fail.
const RELAX_AFTER: usize = 6;
/// Widenings after which a channel is routed whatever it touches (a layout bug; the stats
/// then report it instead of the map growing without end).
const FORCE_AFTER: usize = 12;
/// Starting channel width as a share of what keeps centered labels of neighbouring columns apart.
const INITIAL_CHANNEL: f64 = 0.55;

/// Everything computed once: the network, heights and the routing units per channel.
struct Frame<'a> {
    input: &'a Input,
    net: Net,
    ys: Vec<f64>,
    sy: Vec<f64>,
    /// Per channel: (unit, its strands).
    units: Vec<Vec<(Unit, Vec<usize>)>>,
    /// Label box size (width, height) per station.
    label_w: Vec<(f64, f64)>,
}

fn channel_units(net: &Net, sy: &[f64], c: usize) -> Vec<(Unit, Vec<usize>)> {
    let idx = slot_index(net);
    let mut segs: Vec<(usize, usize, usize)> = Vec::new();
    for &it in &net.columns[c] {
        for &sl in &net.items[it].slots {
            if let Some(st) = net.slots[sl].right {
                segs.push((sl, net.strand_slot(st, c + 1), st));
            }
        }
    }
    let mut groups: Vec<Vec<(usize, usize, usize)>> = Vec::new();
    for s in segs {
        let join = groups.last().is_some_and(|g| {
            let p = g.last().expect("non-empty");
            net.slots[p.0].item == net.slots[s.0].item
                && net.slots[p.1].item == net.slots[s.1].item
                && idx[s.0] == idx[p.0] + 1
                && idx[s.1] == idx[p.1] + 1
        });
        if join {
            groups.last_mut().expect("non-empty").push(s);
        } else {
            groups.push(vec![s]);
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let n = g.len() as f64;
            let yl = g.iter().map(|s| sy[s.0]).sum::<f64>() / n;
            let yr = g.iter().map(|s| sy[s.1]).sum::<f64>() / n;
            let offsets = g.iter().map(|s| sy[s.0] - yl).collect();
            (Unit { yl, yr, offsets }, g.iter().map(|s| s.2).collect())
        })
        .collect()
}

impl<'a> Frame<'a> {
    fn new(input: &'a Input) -> Frame<'a> {
        let mut net = Net::build(input);
        let ys = assign_y(&net);
        let sy = slot_ys(&net, &ys);
        net.order_slots(Some(&sy));
        let ys = assign_y(&net);
        let sy = slot_ys(&net, &ys);
        let units = (0..net.ncols.saturating_sub(1))
            .map(|c| channel_units(&net, &sy, c))
            .collect();
        let label_w = input
            .stations
            .iter()
            .map(|s| {
                (
                    s.label.iter().map(|l| text_width(l)).fold(0.0, f64::max),
                    label_height(s.label.len()),
                )
            })
            .collect();
        Frame {
            input,
            net,
            ys,
            sy,
            units,
            label_w,
        }
    }

    fn pill(&self, xs: &[f64], s: usize) -> Rect {
        let it = self.net.station_item[s];
        let x = xs[self.net.col[s]];
        let h = pill_h(self.net.items[it].slots.len());
        Rect::new(
            x - PILL_W / 2.0,
            self.ys[it] - h / 2.0,
            x + PILL_W / 2.0,
            self.ys[it] + h / 2.0,
        )
    }

    /// Strokes that exist whatever the routing: through stations and dummies, and straight hops.
    fn fixed_strokes(&self, xs: &[f64]) -> Vec<Rect> {
        let mut out = Vec::new();
        let hw = LINE_W / 2.0;
        for (it, item) in self.net.items.iter().enumerate() {
            let x = xs[item.col];
            for &sl in &item.slots {
                let y = self.sy[sl];
                let s = &self.net.slots[sl];
                let x0 = if s.left.is_some() { x - STUB } else { x };
                let x1 = if s.right.is_some() { x + STUB } else { x };
                if x1 > x0 {
                    out.push(Rect::new(x0, y - hw, x1, y + hw));
                }
            }
            let _ = it;
        }
        for (c, us) in self.units.iter().enumerate() {
            for (u, _) in us {
                if (u.yl - u.yr).abs() < EPS {
                    for d in &u.offsets {
                        out.push(Rect::new(xs[c], u.yl + d - hw, xs[c + 1], u.yl + d + hw));
                    }
                }
            }
        }
        out
    }

    fn xs(&self, widths: &[f64]) -> Vec<f64> {
        let mut xs = Vec::with_capacity(self.net.ncols);
        let mut x = 0.0;
        for c in 0..self.net.ncols {
            if c > 0 {
                x += widths[c - 1];
            }
            xs.push(x);
        }
        xs
    }
}

/// Lay the whole map out.
pub fn build(input: &Input) -> Layout {
    let f = Frame::new(input);
    let nc = f.net.ncols;
    // Start with channels that keep centered labels of neighbouring columns apart.
    let mut col_w = vec![0.0f64; nc];
    for (s, w) in f.label_w.iter().enumerate() {
        let c = f.net.col[s];
        col_w[c] = col_w[c].max(w.0);
    }
    let mut widths: Vec<f64> = (0..nc.saturating_sub(1))
        .map(|c| {
            let w = (INITIAL_CHANNEL * (col_w[c] / 2.0 + col_w[c + 1] / 2.0) + 14.0).max(2.0 * STUB + 40.0);
            (w / 2.0).ceil() * 2.0
        })
        .collect();
    let mut last = None;
    let mut grown = vec![0usize; widths.len()];
    for round in 0..MAX_ROUNDS {
        let xs = f.xs(&widths);
        let mut widen = vec![false; widths.len()];
        let labels = match f.labels(&xs) {
            Ok(l) => l,
            Err(failed) => {
                for s in failed {
                    let c = f.net.col[s];
                    if c > 0 {
                        widen[c - 1] = true;
                    }
                    if c + 1 < nc {
                        widen[c] = true;
                    }
                }
                if widen.iter().any(|&w| w) {
                    grow(&mut widths, &mut grown, &widen);
                    continue;
                }
                // A single column: nothing to widen; stack labels anyway (cannot happen with
                // the room kept above every station).
                Vec::new()
            }
        };
        let label_boxes: Vec<Rect> = labels.iter().map(|l| l.0).collect();
        let mut polys: Vec<Vec<Vec<Pt>>> = f
            .net
            .strands
            .iter()
            .map(|s| vec![Vec::new(); f.net.col[s.right] - f.net.col[s.left]])
            .collect();
        for c in 0..widths.len() {
            let (xl, xr) = (xs[c], xs[c + 1]);
            let obstacles: Vec<Rect> = label_boxes
                .iter()
                .filter(|r| r.x1 > xl && r.x0 < xr)
                .copied()
                .collect();
            let units: Vec<Unit> = f.units[c].iter().map(|u| u.0.clone()).collect();
            let relaxed = grown[c] >= RELAX_AFTER;
            let forced = grown[c] >= FORCE_AFTER;
            let ch = Channel {
                relaxed,
                forced,
                xl,
                xr,
                lo: xl + STUB,
                hi: xr - STUB,
                units: &units,
                obstacles: &obstacles,
            };
            match route::route(&ch) {
                Ok(r) => {
                    for (k, strands) in r.into_iter().enumerate() {
                        for (j, p) in strands.into_iter().enumerate() {
                            let st = f.units[c][k].1[j];
                            let base = f.net.col[f.net.strands[st].left];
                            polys[st][c - base] = p;
                        }
                    }
                }
                Err(_) => widen[c] = true,
            }
        }
        if widen.iter().any(|&w| w) {
            grow(&mut widths, &mut grown, &widen);
            continue;
        }
        let layout = assemble(&f, &xs, &labels, &polys, round + 1);
        let bad = MapStats::violations(&layout);
        if bad.is_empty() {
            return layout;
        }
        for r in &bad {
            // Widen the channels the violation lies in (layout coordinates are shifted).
            let (x0, x1) = (r.x0 - layout.shift.0, r.x1 - layout.shift.0);
            for c in 0..widths.len() {
                if x1 >= xs[c] - 1.0 && x0 <= xs[c + 1] + 1.0 {
                    widen[c] = true;
                }
            }
        }
        last = Some(layout);
        if !widen.iter().any(|&w| w) {
            break;
        }
        grow(&mut widths, &mut grown, &widen);
    }
    match last {
        Some(l) => l,
        None => {
            let xs = f.xs(&widths);
            assemble(&f, &xs, &[], &[], MAX_ROUNDS)
        }
    }
}

fn grow(widths: &mut [f64], grown: &mut [usize], widen: &[bool]) {
    for ((w, n), &g) in widths.iter_mut().zip(grown.iter_mut()).zip(widen) {
        if g {
            *w = ((*w * 1.2).max(*w + 16.0) / 2.0).ceil() * 2.0;
            *n += 1;
        }
    }
}
