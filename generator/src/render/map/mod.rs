//! The subway map: every card a station, every learning path a colored line.
//!
//! A deterministic metro-map layout of the whole card graph, written for this book (ideas from
//! layered graph drawing and from metro-map work such as Nöllenburg & Wolff's octilinear
//! layouts and Bast, Brosi & Storandt's loom; the code is our own):
//!
//! * [`net`]: stations go into columns so lines run left to right from basics to advanced
//!   cards; hops that span columns get dummies; orders in columns minimise crossings.
//! * [`place`]: heights, labels, column spacing; grown until the map measures clean.
//! * [`route`]: between two columns every bundle of strands bends once, octilinearly, with
//!   its lines drawn side by side as parallel offset strokes.
//! * [`stats`]: the measures of the result (`hdlc graph --map-stats`), from its geometry.
//! * [`svg`]: the drawing — links on stations, `data-line` hooks for the highlight script,
//!   colors from CSS variables so light and dark themes both work.
//!
//! The path pages' strip maps and the card pages' small maps ([`strip`], [`card_map`]) are
//! simple straight lines and need none of this.

mod geom;
mod net;
mod place;
mod route;
mod stats;
mod strip;
mod svg;
mod text;

pub use geom::{Pt, Rect};
pub use net::Input;
pub use stats::MapStats;
pub use strip::{card_map, strip};
pub use text::{short_label, text_width};

use crate::graph::ConceptGraph;
use crate::model::Book;

/// Stroke width of a line.
pub const LINE_W: f64 = 5.0;
/// Distance between the center lines of neighbouring lines in a bundle.
pub const PITCH: f64 = 6.0;
/// Width of a station marker.
pub const PILL_W: f64 = 14.0;
/// Lines run straight for at least this far on each side of a column's center.
pub const STUB: f64 = 12.0;
/// Gap between a station marker and its label.
pub const LABEL_GAP: f64 = 4.0;
/// Clearance kept around labels.
pub const CLEAR: f64 = 2.0;
/// Margin around the drawing.
pub const MARGIN: f64 = 24.0;

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
    /// The label's lines (one or two).
    pub label: Vec<String>,
    /// The marker's box (a rounded bar across the lines it serves; a circle for one line).
    pub marker: Rect,
    /// Indices into [`Layout::lines`] of the lines that stop here.
    pub lines: Vec<usize>,
    /// The box the label's text is kept inside.
    pub label_box: Rect,
    pub anchor: Anchor,
}

/// A line as drawn: one octilinear polyline through all its stops.
#[derive(Debug, Clone)]
pub struct LineGeom {
    pub id: String,
    pub title: String,
    pub color: String,
    pub points: Vec<Pt>,
    /// Number of stops.
    pub stations: usize,
}

/// A legend entry: the line and the top-left corner of its row.
#[derive(Debug, Clone)]
pub struct LegendEntry {
    pub line: usize,
    pub x: f64,
    pub y: f64,
}

/// The laid-out map.
#[derive(Debug, Clone)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    /// Height of the map above the legend.
    pub map_height: f64,
    pub legend_top: f64,
    pub legend_entry_w: f64,
    pub stations: Vec<StationGeom>,
    pub lines: Vec<LineGeom>,
    pub legend: Vec<LegendEntry>,
    /// Layout rounds it took (each round widens what was too tight).
    pub rounds: usize,
    /// Translation applied at the end (internal coordinates → drawing).
    pub shift: (f64, f64),
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
    place::build(input)
}

/// The whole map as an inline SVG. `prefix` is the href prefix to card pages (`cards/`); path
/// pages are linked beside it (`paths/`).
pub fn global(_book: &Book, layout: &Layout, prefix: &str) -> String {
    svg::global(layout, prefix)
}
