//! The subway map: every card a station, every learning path a colored line.
//!
//! A deterministic metro-map layout of the whole card graph on an octilinear grid, written for
//! this book (ideas from octilinear grid embedding — Bast, Brosi & Storandt's octi and loom —
//! and from Nöllenburg & Wolff's labels-as-obstacles; the code is our own):
//!
//! * [`input`] and [`areas`]: stations (each named whole, never cut), lines, the start station
//!   the start lines lead out of, and the areas (card folders) the legend and overview use.
//! * [`topo`]: the hops between consecutive stations, with the lines on each.
//! * [`seed`]: where stations would like to be (stress majorization of hop distances) on a
//!   landscape rectangle, pushed apart until each station's footprint — marker and name —
//!   has its room.
//! * [`grid`]: stations onto grid nodes, moved and swapped for straight runs and few
//!   crossings; each station's ways out chosen in circular order; room kept for every name;
//!   one octilinear path searched per hop (A*), hops that cross rerouted.
//! * [`draw`] and [`label`]: lines, markers and names; a name or hop that finds no room
//!   widens the grid right there and the map is laid out again ([`plan`]).
//! * [`stats`]: the measures of the result (`hdlc graph --map-stats`), from its geometry.
//! * [`svg`] and [`view`]: the drawing and the explorer around it (tools, legend by area,
//!   hooks for `book/assets/map.js`: overview by area, pan and zoom, search, `#line=`).
//!
//! The path pages' strip maps and the card pages' small maps ([`strip`], [`card_map`]) are
//! simple straight lines and need none of this.

mod areas;
mod bucket;
mod draw;
mod geom;
mod grid;
mod input;
mod label;
mod plan;
mod seed;
mod stats;
mod strip;
mod svg;
mod text;
mod topo;
mod view;

pub use areas::Area;
pub use geom::{Pt, Rect};
pub use input::{Input, LineIn, StationIn};
pub use stats::MapStats;
pub use strip::{card_map, strip};

use crate::graph::ConceptGraph;
use crate::model::Book;

/// Stroke width of a line.
pub const LINE_W: f64 = 5.0;
/// Distance between the center lines of neighbouring lines in a bundle.
pub const PITCH: f64 = 6.0;
/// Distance between neighbouring grid nodes.
pub const CELL: f64 = 40.0;
/// Gap between a station marker and its label.
pub const LABEL_GAP: f64 = 3.0;
/// Clearance kept around labels.
pub const CLEAR: f64 = 2.0;
/// Margin around the drawing.
pub const MARGIN: f64 = 16.0;
/// Outline around a station marker that counts as part of the marker.
pub const MARKER_OUTLINE: f64 = 1.25;
/// Font size of station labels, px (the SVG's text size; `stats` reports it on screen).
pub const FONT: f64 = 12.0;

/// Text alignment of a label at its anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Start,
    Middle,
    End,
}

/// Where a label's text is drawn: `x` per `align`, `y` the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    pub x: f64,
    pub y: f64,
    pub align: Align,
}

/// A station as drawn.
#[derive(Debug, Clone)]
pub struct StationGeom {
    pub id: String,
    pub title: String,
    /// The label's lines (one to three), the whole name.
    pub label: Vec<String>,
    /// The marker's box (a circle, or a rounded bar across the lines it serves).
    pub marker: Rect,
    /// Indices into [`Layout::lines`] of the lines that stop here.
    pub lines: Vec<usize>,
    /// The box the label's text is kept inside.
    pub label_box: Rect,
    pub anchor: Anchor,
    /// The start station (where the start lines' dashed lead-ins begin).
    pub start: bool,
    /// Key of the station's area.
    pub area: String,
}

/// An area of the map: where its stations are, for the overview's area names and for
/// opening an area at a readable size.
#[derive(Debug, Clone)]
pub struct Region {
    pub key: String,
    pub title: String,
    /// The box around its stations and their labels.
    pub bbox: Rect,
    /// Where its name goes in the overview: the middle of its stations.
    pub center: Pt,
    pub stations: usize,
}

/// A line as drawn: its dashed lead-in from the start station (may be empty), then one
/// octilinear polyline through all its stops.
#[derive(Debug, Clone)]
pub struct LineGeom {
    pub id: String,
    pub title: String,
    pub color: String,
    pub lead: Vec<Pt>,
    pub points: Vec<Pt>,
    /// Number of stops.
    pub stations: usize,
    /// Index into [`Layout::areas`].
    pub area: usize,
}

/// The laid-out map.
#[derive(Debug, Clone)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub stations: Vec<StationGeom>,
    pub lines: Vec<LineGeom>,
    /// The legend's groups of lines.
    pub areas: Vec<Area>,
    /// The map's areas, by the cards' folders.
    pub regions: Vec<Region>,
    /// Layout attempts it took (each keeps more room for labels or grows the grid).
    pub rounds: usize,
    /// Size of the grid, in nodes.
    pub grid: (usize, usize),
}

impl Layout {
    /// The map's measures.
    pub fn stats(&self) -> MapStats {
        MapStats::measure(self)
    }
}

/// Lay out the book's map.
pub fn layout(book: &Book, _graph: &ConceptGraph) -> Layout {
    layout_input(&Input::from_book(book))
}

/// Lay out a map from a plain input (tests build these directly).
pub fn layout_input(input: &Input) -> Layout {
    plan::run(input)
}

/// The whole map with its tools and legend, as one line of HTML. `prefix` is the href prefix
/// to card pages (`cards/`); path pages are linked beside it (`paths/`).
pub fn global(_book: &Book, layout: &Layout, prefix: &str) -> String {
    view::widget(layout, prefix)
}
