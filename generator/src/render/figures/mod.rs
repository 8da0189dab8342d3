//! Measured figures: benchmark results → one HTML block (inline SVG, or a table) for a card page.
//!
//! Why drawn here, at build time, as inline SVG: the book is offline and must show the numbers of
//! the machine they were measured on, in light and dark themes alike. So every figure names its
//! machine in a provenance line, text and axes are drawn in `currentColor` (the page's foreground),
//! and the background is left transparent.
//!
//! Rules the views share:
//! - A failed record (or one that is not a trustworthy number: unverified, NaN, zero time) is never
//!   drawn as a number; it appears as a row or legend entry marked "실패" with its stage.
//! - Output is deterministic (same input → same bytes) and has no blank line and no `<?xml`
//!   header, because CommonMark ends an HTML block at the first blank line.
//! - Odd input never panics: it gives the "no data" box or an `Err` naming the problem.
//!
//! Layout: one file per view (`ladder`, `roofline`, `scaling`, `table`), registered in [`VIEWS`]
//! below; the shared parts live beside them: `classify` (which records are numbers), `family`
//! (a family's rows, size axis and colors), `caption` (provenance and notes), `style` (palette and
//! SVG plumbing), `format` (numbers and text). `figspec` takes its list of views from [`VIEWS`], so
//! `check` and the renderer cannot disagree. A new view is one file plus one line in [`VIEWS`].
//! Figures of lab families (records of the Python labs) are drawn by `lab/`, whose views are
//! registered the same way in [`LAB_VIEWS`].

mod caption;
mod classify;
mod family;
mod format;
mod lab;
mod ladder;
mod prelude;
mod roofline;
mod scaling;
mod style;
mod table;

use crate::figspec::{benches, FigureSpec};
use crate::measure::results::ResultsFile;
use caption::{figure_id, no_data};
use classify::{classify, State, Unit};
use family::Family;
use std::path::PathBuf;

pub use lab::{render_lab_figure, LAB_VIEWS, LAB_VIEW_NAMES};

/// A figure view: its name as written after `show:` and the function that draws it.
pub struct View {
    pub name: &'static str,
    draw: fn(&Ctx) -> Result<String, String>,
}

/// Every view a kernel-family figure block may ask for, in the order `check` lists them (lab
/// families have their own views: [`LAB_VIEWS`]).
pub const VIEWS: &[View] = &[
    View {
        name: "ladder",
        draw: ladder::ladder,
    },
    View {
        name: "roofline",
        draw: roofline::roofline,
    },
    View {
        name: "scaling",
        draw: scaling::scaling,
    },
    View {
        name: "table",
        draw: table::table,
    },
];

/// The names of [`VIEWS`], as a constant for `figspec`.
pub const VIEW_NAMES: [&str; VIEWS.len()] = {
    let mut names = [""; VIEWS.len()];
    let mut i = 0;
    while i < VIEWS.len() {
        names[i] = VIEWS[i].name;
        i += 1;
    }
    names
};

/// Render one figure as an HTML fragment for an mdBook page.
///
/// `files` are the results files available (local measurements and the shipped ones);
/// `local_device` is the name of this machine's GPU, if it has one.
pub fn render_figure(
    spec: &FigureSpec,
    files: &[(PathBuf, ResultsFile)],
    local_device: Option<&str>,
) -> Result<String, String> {
    if !benches().contains(&spec.bench.as_str()) {
        return Err(format!(
            "unknown benchmark `{}` (known: {})",
            spec.bench,
            benches().join(", ")
        ));
    }
    let Some(view) = VIEWS.iter().find(|v| v.name == spec.show) else {
        return Err(format!(
            "unknown figure view `{}` (known: {})",
            spec.show,
            VIEW_NAMES.join(", ")
        ));
    };
    let id = figure_id(spec);
    let Some(file) = choose_file(&spec.bench, files, local_device, spec.device.as_deref()) else {
        return Ok(no_data(spec, &id, None));
    };
    let fam = Family::new(&spec.bench, file);
    let local = local_device.is_some_and(|d| d == file.device.name);
    let ctx = Ctx {
        spec,
        file,
        fam: &fam,
        local,
        id,
    };
    (view.draw)(&ctx)
}

/// Everything a view needs.
pub struct Ctx<'a> {
    spec: &'a FigureSpec,
    file: &'a ResultsFile,
    fam: &'a Family<'a>,
    local: bool,
    id: String,
}

// ---------------------------------------------------------------------------------------------
// Choosing data

/// The file to draw from: this machine's measurements if they cover the family, else the shipped
/// file of an H100, else the first file that covers it. A figure's `device:` picks the machine.
fn choose_file<'a>(
    family: &str,
    files: &'a [(PathBuf, ResultsFile)],
    local: Option<&str>,
    want: Option<&str>,
) -> Option<&'a ResultsFile> {
    let unit = Unit::of(family);
    let covers = |f: &ResultsFile| {
        f.records
            .iter()
            .any(|r| r.family == family && matches!(classify(r, unit), State::Ok(_)))
    };
    let candidates: Vec<&ResultsFile> = files
        .iter()
        .map(|(_, f)| f)
        .filter(|f| covers(f) && device_matches(f, want))
        .collect();
    if want.is_some() {
        return candidates.first().copied();
    }
    if let Some(l) = local {
        if let Some(f) = candidates.iter().find(|f| f.device.name == l) {
            return Some(f);
        }
    }
    candidates
        .iter()
        .find(|f| f.device.name.contains("H100"))
        .or_else(|| candidates.first())
        .copied()
}

/// Whether a results file is of the machine a figure's `device:` names (any, if none).
fn device_matches(f: &ResultsFile, want: Option<&str>) -> bool {
    want.is_none_or(|w| f.device.name.to_lowercase().contains(&w.trim().to_lowercase()))
}
