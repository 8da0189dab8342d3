//! Measured figures: benchmark results → one HTML block (inline SVG, or a table) for a card page.
//!
//! Why drawn here, at build time, as inline SVG: the book is offline and must show the numbers of
//! the machine they were measured on, in light and dark themes alike. So every figure names its
//! machine in a provenance line, text and axes are drawn in `currentColor` (the page's foreground),
//! and the background is left transparent.
//!
//! Rules the views share (issue 28: figures a reader trusts):
//! - A failed record (or one that is not a trustworthy number: unverified, NaN, zero time) is never
//!   drawn as a number; its place says "실행 실패" / "측정하지 않음" / "검증 실패" with a footnote
//!   mark, and the footnote says why (`notes`); an exception's text is only ever folded.
//! - Words, not identifiers: titles, axes and headers come from `crate::metric_names` (units,
//!   ms → s, better-direction marks); text wraps and is never cut with "…"; labels are placed so
//!   they do not collide.
//! - Every chart is laid out twice, for a wide and a narrow column (`style::responsive`); the
//!   stylesheet shows the one that fits the figure's width, so a phone gets a layout of its own.
//! - Tables scroll in their own box and fold past 20 rows (`htmltable`); provenance is one line
//!   naming the machine, the rest folded.
//! - Output is deterministic (same input → same bytes) and has no blank line and no `<?xml`
//!   header, because CommonMark ends an HTML block at the first blank line.
//! - Odd input never panics: it gives the "no data" box or an `Err` naming the problem.
//!
//! Layout: one file per view (`ladder`, `roofline`, `scaling`, `table`, and `xdev` for the
//! cross-device table `show: devices`), registered in [`VIEWS`] below; the shared parts live
//! beside them: `barchart` and `linechart` (the two chart drawings every view uses), `roofs`
//! (a roofline's roofs), `htmltable` (scroll box and fold), `notes` (footnotes of failed points),
//! `classify` (which records are numbers), `family` (a family's rows, size axis and colors),
//! `caption` (titles, provenance and notes), `style` (palette, layouts, SVG plumbing), `format`
//! (numbers, wrapping). `check` is handed the names of [`VIEWS`] (see [`known`]), so `check` and the
//! renderer cannot disagree. A new view is one file plus one line in [`VIEWS`]. Figures of lab
//! families (records of the Python labs) are drawn by `lab/`, whose views are registered the same
//! way in [`LAB_VIEWS`]. A `device:` list (or `all`) draws any view of either kind once per
//! machine, side by side on one value axis: `panels`.

mod barchart;
mod caption;
mod classify;
mod family;
mod format;
mod htmltable;
mod lab;
mod ladder;
mod linechart;
mod notes;
mod panels;
mod prelude;
mod roofline;
mod roofs;
mod scaling;
mod style;
mod table;
mod xdev;

use crate::figspec::{benches, Devices, FigureSpec, CROSS_DEVICE_VIEW};
use crate::measure::results::ResultsFile;
use caption::{figure_id, no_data};
use classify::{classify, State, Unit};
use family::Family;
use panels::SharedAxis;
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
    View {
        name: crate::figspec::CROSS_DEVICE_VIEW,
        draw: xdev::devices,
    },
];

/// What `figspec` checks a figure block against: these views and the lab families `labs`.
pub fn known(labs: &[String]) -> crate::figspec::Known<'_> {
    crate::figspec::Known {
        labs,
        views: &VIEW_NAMES,
        lab_views: &LAB_VIEW_NAMES,
    }
}

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
    let several = spec.device.as_ref().is_some_and(Devices::several);
    if several && spec.show != CROSS_DEVICE_VIEW {
        let covers = |f: &ResultsFile| covers(&spec.bench, f);
        let draw = |s: &FigureSpec, axis: &SharedAxis, id: String| {
            render_one(view, s, files, local_device, axis, id)
        };
        return panels::side_by_side(spec, &id, files, &covers, &draw);
    }
    render_one(view, spec, files, local_device, &SharedAxis::default(), id)
}

/// One figure of one machine (or, for the cross-device table, of all of them).
fn render_one(
    view: &View,
    spec: &FigureSpec,
    files: &[(PathBuf, ResultsFile)],
    local_device: Option<&str>,
    axis: &SharedAxis,
    id: String,
) -> Result<String, String> {
    let want = spec.device.as_ref().and_then(Devices::single);
    let Some(file) = choose_file(&spec.bench, files, local_device, want) else {
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
        files,
        local_device,
        axis,
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
    /// Every results file, for views that compare machines.
    files: &'a [(PathBuf, ResultsFile)],
    local_device: Option<&'a str>,
    /// The value axis shared with the other panels of a side-by-side figure.
    axis: &'a SharedAxis,
}

// ---------------------------------------------------------------------------------------------
// Choosing data

/// The file to draw from (`records::pick_file`): the machine the figure names, else the reader's
/// GPU, else the H100, else the first file with a trustworthy record of the family.
fn choose_file<'a>(
    family: &str,
    files: &'a [(PathBuf, ResultsFile)],
    local: Option<&str>,
    want: Option<&str>,
) -> Option<&'a ResultsFile> {
    let covered = |f: &ResultsFile| covers(family, f);
    crate::records::pick_file(files, local, want, &covered, &covered)
}

/// Whether a results file has a trustworthy measurement of a kernel family.
fn covers(family: &str, f: &ResultsFile) -> bool {
    let unit = Unit::of(family);
    f.records
        .iter()
        .any(|r| r.family == family && matches!(classify(r, unit), State::Ok(_)))
}
