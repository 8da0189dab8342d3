//! The layout's plan: seed, place, embed, draw, label — and where a name or a hop finds no
//! room, widen the grid right there (an empty column and row beside the station, everything
//! beyond moved over), keep that station's name room closed to paths, and embed again.
//!
//! Why this converges: widening only adds room, and a name whose room is closed to paths gets
//! it once the paths have room to go round; after a few local rounds room is made everywhere.
//! The placement settles in a local optimum, so a few variants of it are tried and the first
//! that keeps the bars with room to spare is taken. The grid starts at the size the stations'
//! footprints fill by half, in a landscape rectangle.

use super::draw::{draw, Drawn};
use super::geom::{pt, Pt, Rect};
use super::grid::embed::{embed, Embedding, Task};
use super::grid::place::{place, Shape as PlaceShape};
use super::grid::widen::{widen, Need};
use super::grid::Grid;
use super::input::Input;
use super::label::{shapes, Placed, Scene, Shape};
use super::seed::Shape as SeedShape;
use super::topo::Topo;
use super::{Layout, LineGeom, Region, StationGeom, CELL, MARGIN};

/// Share of the grid's area the stations' footprints may cover at the start.
const FILL: f64 = 0.5;
/// Width : height of the grid.
const ASPECT: f64 = 1.75;
/// Layouts tried before the map is drawn as it is (the stats then report the overlaps).
const ATTEMPTS: usize = 12;
/// Variants of the placement tried in turn: (weight of a crossing against a bend, seed
/// mirrored top to bottom). Each settles in a different local optimum; the first that keeps
/// the bars with room to spare is taken.
const VARIANTS: [(f64, bool); 4] = [(4.5, false), (4.0, true), (3.5, false), (5.0, true)];
/// Crossings and bends a variant may have to be taken at once (the bars are 40 and 250).
const GOOD_CROSSINGS: usize = 36;
const GOOD_BENDS: usize = 240;
const HOPELESS: usize = 80;
/// Room (grid units) a footprint keeps on each side per line beyond two leaving the station.
const BUSY: f64 = 0.2;
/// Room (grid units) a footprint keeps on each side for the lines passing by.
const PAD: f64 = 0.3;

/// Half extents (grid units) of what a station needs: its marker and its most compact label
/// beside it, and a little room for lines.
fn footprint(shapes: &[Shape]) -> [f64; 2] {
    let best = shapes
        .iter()
        .min_by(|a, b| ((a.w + 20.0) * (a.h + 8.0)).total_cmp(&((b.w + 20.0) * (b.h + 8.0))))
        .copied()
        .unwrap_or(Shape {
            w: 0.0,
            h: 0.0,
            pref: 0.0,
        });
    [
        (best.w + 19.0) / 2.0 / CELL + PAD,
        best.h.max(16.0) / 2.0 / CELL + PAD,
    ]
}

/// A grid whose area the footprints fill to [`FILL`], in a landscape rectangle.
fn grid_size(foot: &[[f64; 2]]) -> (usize, usize) {
    let area: f64 = foot.iter().map(|f| 4.0 * f[0] * f[1]).sum::<f64>() / FILL;
    let h = (area.max(12.0) / ASPECT).sqrt().ceil().max(3.0);
    let w = (h * ASPECT).ceil();
    (w as usize, h as usize)
}

/// What every attempt at a layout shares.
struct Ground<'a> {
    input: &'a Input,
    topo: Topo,
    shapes: Vec<Vec<Shape>>,
    width: Vec<usize>,
    foot: Vec<[f64; 2]>,
}

/// Lay the map out: the first variant whose map keeps the bars with room to spare, else the
/// best of them (clean first, then fewest crossings and bends).
pub fn run(input: &Input) -> Layout {
    let topo = Topo::build(input);
    let n = input.stations.len();
    let shapes: Vec<Vec<Shape>> = input.stations.iter().map(|s| shapes(&s.labels)).collect();
    let width: Vec<usize> = (0..n).map(|s| row_width(topo.chains_at[s].len())).collect();
    let foot: Vec<[f64; 2]> = (0..n)
        .map(|s| {
            let f = footprint(&shapes[s]);
            let busy = topo.chains_at[s].len().saturating_sub(2) as f64 * BUSY;
            [f[0] + busy + (width[s] - 1) as f64 / 2.0, f[1] + busy]
        })
        .collect();
    let ground = Ground {
        input,
        topo,
        shapes,
        width,
        foot,
    };
    let mut best: Option<(bool, usize, Layout)> = None;
    for (i, &(crossing, flip)) in VARIANTS.iter().enumerate() {
        let layout = attempt(&ground, crossing, flip);
        let st = layout.stats();
        let score = st.line_crossings * 10 + st.bends;
        // Far past the bars, another variant will not bring the map back to them.
        let done = st.is_clean()
            && ((st.line_crossings <= GOOD_CROSSINGS && st.bends <= GOOD_BENDS)
                || st.line_crossings > HOPELESS);
        if best
            .as_ref()
            .is_none_or(|b| (!st.is_clean(), score) < (!b.0, b.1))
        {
            best = Some((
                st.is_clean(),
                score,
                Layout {
                    rounds: layout.rounds + i,
                    ..layout
                },
            ));
        }
        if done {
            break;
        }
    }
    best.map(|b| b.2).unwrap_or_else(|| empty(input, 0))
}

/// One layout: seed, place and straighten, then embed and label, widening where room ran
/// out, until everything fits.
fn attempt(gr: &Ground, crossing: f64, flip: bool) -> Layout {
    let (input, topo, n) = (gr.input, &gr.topo, gr.input.stations.len());
    let (mut w, mut h) = grid_size(&gr.foot);
    let seeds = SeedShape::new(topo, n, input.start, flip).fit(&gr.foot, w, h);
    let place_shape = PlaceShape {
        topo,
        input,
        seeds: &seeds,
        foot: &gr.foot,
        width: &gr.width,
        crossing,
    };
    let mut pos = place(&Grid::new(w, h), &place_shape);
    let mut last = None;
    let mut hard = vec![false; n];
    for round in 1..=ATTEMPTS {
        let task = Task {
            topo,
            shapes: &gr.shapes,
            w,
            h,
            cell: CELL,
            hard: &hard,
            force: round == ATTEMPTS,
        };
        let crowded = match round_of(gr, &task, &pos) {
            Ok(layout) => {
                return Layout {
                    rounds: round,
                    ..layout
                }
            }
            Err((crowded, layout)) => {
                last = layout.map(|l| Layout { rounds: round, ..*l });
                crowded
            }
        };
        for need in &crowded {
            hard[need.station] = true;
        }
        // Room next to the stations that lacked it.
        (w, h) = widen(&mut pos, w, h, &crowded);
    }
    last.unwrap_or_else(|| empty(input, ATTEMPTS))
}

/// Where room ran out (the ends of a hop that found no path, or stations whose names found no
/// place), and the map as drawn with them, if it could be drawn.
type Crowded = (Vec<Need>, Option<Box<Layout>>);

/// Embed, draw and label once; `Err` says where room ran out.
fn round_of(gr: &Ground, task: &Task, pos: &[(i32, i32)]) -> Result<Layout, Crowded> {
    let (input, topo) = (gr.input, &gr.topo);
    let g = Grid::new(task.w, task.h);
    let nodes: Vec<Vec<usize>> = pos
        .iter()
        .zip(&gr.width)
        .map(|(p, &k)| (0..k as i32).filter_map(|i| g.node(p.0 + i, p.1)).collect())
        .collect();
    let emb = embed(task, input, &nodes).map_err(|c| {
        let (a, b) = topo.chains[c].ends();
        ([Need::path(a), Need::path(b)].concat(), None)
    })?;
    let drawn = draw(input, topo, &emb, CELL);
    let size = (task.w, task.h);
    match scene(input, &drawn, &emb, task.w, task.h).place() {
        Ok(labels) => Ok(assemble(input, &drawn, &labels, 0, size)),
        Err((failed, partial)) => {
            let labels: Vec<Placed> = partial
                .into_iter()
                .enumerate()
                .map(|(s, p)| p.unwrap_or_else(|| fallback(&drawn, s)))
                .collect();
            let needs = failed
                .iter()
                .map(|&s| Need::name(&emb.grid, s, &emb.nodes[s]))
                .collect();
            Err((needs, Some(Box::new(assemble(input, &drawn, &labels, 0, size)))))
        }
    }
}

/// Nodes a station with `chains` chains needs in a row, so each has a direction to leave in
/// and one is left for its label (a row of k nodes has 2k + 6 directions out).
fn row_width(chains: usize) -> usize {
    if chains <= 7 {
        1
    } else {
        (chains + 1 - 6).div_ceil(2)
    }
}

/// What labels must avoid, and the frame they should stay in.
fn scene<'a>(input: &Input, d: &'a Drawn, emb: &Embedding, w: usize, h: usize) -> Scene<'a> {
    let mut segments = Vec::new();
    for (lead, rest) in &d.lines {
        for p in [lead, rest] {
            segments.extend(p.windows(2).map(|s| (s[0], s[1])));
        }
    }
    Scene {
        segments,
        markers: &d.markers,
        labels: input.stations.iter().map(|s| s.labels.clone()).collect(),
        reserved: emb.labels.clone(),
        frame: Rect::new(
            -CELL * 0.6,
            -CELL * 0.6,
            (w - 1) as f64 * CELL + CELL * 0.6,
            (h - 1) as f64 * CELL + CELL * 0.6,
        ),
    }
}

/// A label that found no room: put it right of its marker anyway (the stats will say so).
fn fallback(d: &Drawn, s: usize) -> Placed {
    let m = d.markers[s];
    let r = Rect::new(m.x1 + 3.0, m.y0, m.x1 + 43.0, m.y0 + 15.0);
    Placed {
        variant: 0,
        rect: r,
        anchor: super::Anchor {
            x: r.x0,
            y: r.y0 + super::text::BASELINE,
            align: super::Align::Start,
        },
    }
}

fn empty(input: &Input, rounds: usize) -> Layout {
    Layout {
        width: 2.0 * MARGIN,
        height: 2.0 * MARGIN,
        stations: Vec::new(),
        lines: Vec::new(),
        areas: input.areas.clone(),
        regions: Vec::new(),
        rounds,
        grid: (0, 0),
    }
}

/// The final geometry, moved so the drawing starts at the margin.
fn assemble(input: &Input, d: &Drawn, labels: &[Placed], rounds: usize, grid: (usize, usize)) -> Layout {
    let mut bb: Option<Rect> = None;
    let mut add = |r: Rect| bb = Some(bb.map_or(r, |b| b.union(&r)));
    d.markers.iter().for_each(|m| add(*m));
    labels.iter().for_each(|l| add(l.rect));
    for (lead, rest) in &d.lines {
        for p in lead.iter().chain(rest) {
            add(Rect::new(p.x, p.y, p.x, p.y).inflate(super::LINE_W / 2.0));
        }
    }
    let Some(bb) = bb else {
        return empty(input, rounds);
    };
    let shift = ((MARGIN - bb.x0).round(), (MARGIN - bb.y0).round());
    let stations = station_geoms(input, d, labels, shift);
    let regions = regions(input, &stations);
    let mp = |p: &Pt| pt(p.x + shift.0, p.y + shift.1);
    let lines = input
        .lines
        .iter()
        .zip(&d.lines)
        .map(|(l, (lead, rest))| LineGeom {
            id: l.id.clone(),
            title: l.title.clone(),
            color: l.color.clone(),
            lead: lead.iter().map(mp).collect(),
            points: rest.iter().map(mp).collect(),
            stations: l.stops.len(),
            area: l.area,
        })
        .collect();
    Layout {
        width: (bb.x1 - bb.x0 + 2.0 * MARGIN).ceil(),
        height: (bb.y1 - bb.y0 + 2.0 * MARGIN).ceil(),
        stations,
        lines,
        areas: input.areas.clone(),
        regions,
        rounds,
        grid,
    }
}

/// The stations as drawn, moved by `(dx, dy)`.
fn station_geoms(input: &Input, d: &Drawn, labels: &[Placed], (dx, dy): (f64, f64)) -> Vec<StationGeom> {
    let mv = |r: Rect| Rect::new(r.x0 + dx, r.y0 + dy, r.x1 + dx, r.y1 + dy);
    input
        .stations
        .iter()
        .enumerate()
        .map(|(s, st)| {
            let l = &labels[s];
            StationGeom {
                id: st.id.clone(),
                title: st.title.clone(),
                label: st.labels.get(l.variant).cloned().unwrap_or_default(),
                marker: mv(d.markers[s]),
                lines: d.station_lines[s].clone(),
                label_box: mv(l.rect),
                anchor: super::Anchor {
                    x: l.anchor.x + dx,
                    y: l.anchor.y + dy,
                    align: l.anchor.align,
                },
                start: input.start == Some(s),
                area: st.area.0.clone(),
            }
        })
        .collect()
}

/// The map's areas: per area key, the box of its stations and their middle.
fn regions(input: &Input, stations: &[StationGeom]) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::new();
    for (st, s) in input.stations.iter().zip(stations) {
        let (key, title) = &st.area;
        let c = pt(
            (s.marker.x0 + s.marker.x1) / 2.0,
            (s.marker.y0 + s.marker.y1) / 2.0,
        );
        let b = s.marker.union(&s.label_box);
        match out.iter_mut().find(|r| &r.key == key) {
            Some(r) => {
                r.bbox = r.bbox.union(&b);
                r.center = pt(r.center.x + c.x, r.center.y + c.y);
                r.stations += 1;
            }
            None => out.push(Region {
                key: key.clone(),
                title: title.clone(),
                bbox: b,
                center: c,
                stations: 1,
            }),
        }
    }
    for r in &mut out {
        r.center = pt(
            (r.center.x / r.stations as f64).round(),
            (r.center.y / r.stations as f64).round(),
        );
    }
    out
}
