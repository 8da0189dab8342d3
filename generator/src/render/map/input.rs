//! What the layout needs from the book: stations, lines and the start station, independent of
//! the book types so tests can build inputs directly.
//!
//! Two things are decided here rather than in the layout:
//! * **The start station.** The opening card (how to learn the field) is on no learning path;
//!   on the map it is where the start paths begin, joined to each of them by a dashed lead-in,
//!   so no station floats on its own.
//! * **Areas.** A line's area is where most of its cards live (`cards/<area>/…`), folded into
//!   the few groups the legend shows (see `areas`).

use super::areas::{self, Area};
use super::text::label_variants;
use crate::model::Book;
use std::collections::BTreeMap;

/// One station.
#[derive(Debug, Clone)]
pub struct StationIn {
    pub id: String,
    pub title: String,
    /// The label's possible wrappings (lines of text), shortest first.
    pub labels: Vec<Vec<String>>,
    /// Key and title of the area the card's folder belongs to (see `areas`).
    pub area: (String, String),
}

/// One line: its stops as station indices, consecutive repeats removed.
#[derive(Debug, Clone)]
pub struct LineIn {
    pub id: String,
    pub title: String,
    pub color: String,
    pub stops: Vec<usize>,
    /// The first hop is the dashed lead-in from the start station.
    pub lead_in: bool,
    /// Index into [`Input::areas`].
    pub area: usize,
}

/// The layout's input.
#[derive(Debug, Clone, Default)]
pub struct Input {
    pub stations: Vec<StationIn>,
    pub lines: Vec<LineIn>,
    /// Line indices in reading order (start paths first).
    pub reading: Vec<usize>,
    /// The start station, if the book has one.
    pub start: Option<usize>,
    /// The legend's groups, in the order they are listed.
    pub areas: Vec<Area>,
}

impl Input {
    pub fn from_book(book: &Book) -> Input {
        let (stations, folder, index) = stations(book);
        let mut lines = Vec::new();
        let mut line_of_path = vec![None; book.paths.len()];
        for (pi, p) in book.paths.iter().enumerate() {
            let mut stops: Vec<usize> = Vec::new();
            for i in p.stations.iter().filter_map(|s| index.get(s.as_str()).copied()) {
                if stops.last() != Some(&i) {
                    stops.push(i);
                }
            }
            if stops.is_empty() {
                continue;
            }
            line_of_path[pi] = Some(lines.len());
            lines.push(LineIn {
                id: p.id.clone(),
                title: p.title.clone(),
                color: p.color.clone(),
                stops,
                lead_in: false,
                area: 0,
            });
        }
        let order = crate::render::reading_order(book);
        let reading: Vec<usize> = order.iter().filter_map(|&pi| line_of_path[pi]).collect();
        let starts: Vec<usize> = order
            .iter()
            .filter(|&&pi| book.paths[pi].start.is_some())
            .filter_map(|&pi| line_of_path[pi])
            .collect();
        let mut input = Input {
            stations,
            lines,
            reading,
            start: None,
            areas: Vec::new(),
        };
        input.add_start(index.get(crate::render::OPENING_CARD).copied(), &starts);
        let stops: Vec<&[usize]> = input.lines.iter().map(|l| l.stops.as_slice()).collect();
        let (areas, of_line) = areas::group(&stops, &folder, &starts);
        for (l, a) in input.lines.iter_mut().zip(of_line) {
            l.area = a;
        }
        input.areas = areas;
        input
    }

    /// Make the opening card the start station: if it is on no line, every start line (or the
    /// first line read, when no path is marked as a start) begins there with a lead-in.
    fn add_start(&mut self, opening: Option<usize>, starts: &[usize]) {
        let Some(s) = opening else { return };
        if self.lines.iter().any(|l| l.stops.contains(&s)) {
            return;
        }
        let chosen: Vec<usize> = if starts.is_empty() {
            self.reading.first().copied().into_iter().collect()
        } else {
            starts.to_vec()
        };
        if chosen.is_empty() {
            return;
        }
        for li in chosen {
            self.lines[li].stops.insert(0, s);
            self.lines[li].lead_in = true;
        }
        self.start = Some(s);
    }
}

/// The stations (each card once, named for the map), their cards' folders, and where each id is.
fn stations(book: &Book) -> (Vec<StationIn>, Vec<String>, BTreeMap<&str, usize>) {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut stations = Vec::new();
    let mut folder = Vec::new();
    for c in &book.cards {
        if index.contains_key(c.id.as_str()) {
            continue;
        }
        index.insert(&c.id, stations.len());
        let f = areas::folder_of(&c.file);
        let (key, title, _) = areas::family(&f);
        stations.push(StationIn {
            id: c.id.clone(),
            title: c.title.clone(),
            labels: Vec::new(),
            area: (key, title),
        });
        folder.push(f);
    }
    let shorts = super::text::short_names(stations.iter().map(|s| s.title.as_str()));
    for (s, short) in stations.iter_mut().zip(shorts) {
        s.labels = label_variants(&short);
    }
    (stations, folder, index)
}
