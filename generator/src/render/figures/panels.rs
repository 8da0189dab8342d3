//! One figure drawn once per machine, side by side: `device: [H100, H200]` or `device: all`.
//!
//! Why panels rather than one chart with grouped bars: every existing view then works unchanged
//! for every family (kernel and lab), each panel keeps its own provenance line and datasheet
//! line, and a machine without results is one "no data" panel instead of a hole in a legend.
//! What makes panels comparable by eye is the shared value axis ([`SharedAxis`]): the same scale
//! in every panel, so a longer bar on the H200 is a faster kernel, not a different axis. (The
//! roofline keeps each machine's own log axes: its roofs are the machine's, and they are the
//! point of that view.)

use super::caption::figure_id_part;
use super::format::esc;
use crate::figspec::{Devices, FigureSpec};
use crate::measure::results::ResultsFile;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Recorded range ends, by range name ("x", "y", "top", …).
type Ends = BTreeMap<&'static str, f64>;

/// The value ranges of panels drawn side by side. A view passes each range it would draw through
/// [`SharedAxis::hi`] / [`SharedAxis::lo`]: alone (or on the first pass) the value comes back as
/// it was and is recorded; on the second pass it comes back widened to what every panel recorded.
#[derive(Default)]
pub struct SharedAxis {
    seen_hi: RefCell<Ends>,
    seen_lo: RefCell<Ends>,
    fixed: Option<(Ends, Ends)>,
}

impl SharedAxis {
    /// The upper end `v` of the range `key`, raised to the other panels' largest.
    pub(super) fn hi(&self, key: &'static str, v: f64) -> f64 {
        if v.is_finite() {
            let mut seen = self.seen_hi.borrow_mut();
            let e = seen.entry(key).or_insert(v);
            *e = e.max(v);
        }
        match self.fixed.as_ref().and_then(|(hi, _)| hi.get(key)) {
            Some(f) if *f > v => *f,
            _ => v,
        }
    }

    /// The lower end `v` of the range `key`, lowered to the other panels' smallest.
    pub(super) fn lo(&self, key: &'static str, v: f64) -> f64 {
        if v.is_finite() {
            let mut seen = self.seen_lo.borrow_mut();
            let e = seen.entry(key).or_insert(v);
            *e = e.min(v);
        }
        match self.fixed.as_ref().and_then(|(_, lo)| lo.get(key)) {
            Some(f) if *f < v => *f,
            _ => v,
        }
    }

    /// A range in display units (`v` = raw × `scale`) raised to the shared one; unchanged alone.
    pub(super) fn hi_scaled(&self, key: &'static str, v: f64, scale: f64) -> f64 {
        let raw = v / scale;
        let shared = self.hi(key, raw);
        if shared > raw {
            shared * scale
        } else {
            v
        }
    }

    /// The axis for the second pass: fixed to everything this one recorded.
    fn frozen(&self) -> SharedAxis {
        SharedAxis {
            fixed: Some((self.seen_hi.borrow().clone(), self.seen_lo.borrow().clone())),
            ..SharedAxis::default()
        }
    }
}

/// Draws one panel: the spec (its `device:` now one machine, its caption that machine's name),
/// the shared axis and the panel's id.
pub(super) type DrawPanel<'a> = dyn Fn(&FigureSpec, &SharedAxis, String) -> Result<String, String> + 'a;

/// The machines of `device:` in panel order, each with the file of its results for the family
/// (`None`: named but not measured yet).
/// `all`: every machine whose results cover the family, H100s first (the book's reference
/// machine), then the rest in file order, so the reader's own GPU joins where it was measured.
pub(super) fn machines<'a>(
    devices: &Devices,
    files: &'a [(PathBuf, ResultsFile)],
    covers: &dyn Fn(&ResultsFile) -> bool,
) -> Vec<(String, Option<&'a ResultsFile>)> {
    let find = |want: &str| {
        files
            .iter()
            .map(|(_, f)| f)
            .find(|f| covers(f) && crate::records::device_matches(f, Some(want)))
    };
    match devices {
        Devices::All => {
            let mut found: Vec<&ResultsFile> = files.iter().map(|(_, f)| f).filter(|f| covers(f)).collect();
            found.sort_by_key(|f| !f.device.name.contains("H100"));
            let mut out: Vec<(String, Option<&ResultsFile>)> = Vec::new();
            for f in found {
                if !out.iter().any(|(o, _)| *o == f.device.name) {
                    out.push((f.device.name.clone(), Some(f)));
                }
            }
            out
        }
        Devices::List(v) => v.iter().map(|d| (d.trim().to_string(), find(d))).collect(),
        Devices::One(d) => vec![(d.trim().to_string(), find(d))],
        Devices::Invalid(_) => Vec::new(),
    }
}

/// Draw `spec` once per machine of its `device:` key, side by side, on one shared value axis.
/// `id` is the whole figure's id; `covers` says whether a file has results for the figure.
pub(super) fn side_by_side(
    spec: &FigureSpec,
    id: &str,
    files: &[(PathBuf, ResultsFile)],
    covers: &dyn Fn(&ResultsFile) -> bool,
    draw: &DrawPanel,
) -> Result<String, String> {
    let devices = spec.device.clone().unwrap_or(Devices::All);
    let list = machines(&devices, files, covers);
    if list.is_empty() {
        return Ok(super::caption::no_data(spec, id, spec.size));
    }
    let panel_spec = |name: &str, file: &ResultsFile| FigureSpec {
        device: Some(Devices::One(name.to_string())),
        caption: Some(file.device.name.clone()),
        ..spec.clone()
    };
    let panel_id = |name: &str| format!("{id}-{}", figure_id_part(name));
    let draw_all = |axis: &SharedAxis| -> Result<Vec<String>, String> {
        list.iter()
            .map(|(name, file)| match file {
                Some(f) => draw(&panel_spec(name, f), axis, panel_id(name)),
                None => Ok(no_data_for(spec, name, &panel_id(name))),
            })
            .collect()
    };
    let first = SharedAxis::default();
    draw_all(&first)?;
    let panels = draw_all(&first.frozen())?;
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-panels\" id=\"{id}\">");
    h.push_str("<div class=\"hdlc-panel-row\">\n");
    for p in panels {
        h.push_str(p.trim());
        h.push('\n');
    }
    h.push_str("</div>\n");
    let names: Vec<String> = list.iter().map(|(n, _)| esc(n)).collect();
    let mut cap = String::new();
    if let Some(c) = spec.caption.as_deref() {
        let c = c.split_whitespace().collect::<Vec<_>>().join(" ");
        if !c.is_empty() {
            let _ = write!(cap, "{} ", esc(&c));
        }
    }
    let _ = write!(
        cap,
        "<span class=\"provenance\">기계별 패널 (one panel per machine: {}), 같은 값 축 · 각 패널 아래에 측정한 기계가 적혀 있다.</span>",
        names.join(", ")
    );
    let _ = write!(h, "<figcaption>{cap}</figcaption>\n</figure>");
    Ok(h)
}

/// The panel of a machine named in `device:` that has no results for the figure (yet).
pub(super) fn no_data_for(spec: &FigureSpec, device: &str, id: &str) -> String {
    format!(
        "<div class=\"hdlc-figure hdlc-nodata\" id=\"{id}\" role=\"note\">\n<p><strong>{d}</strong>: 이 기계의 측정 결과가 아직 없습니다 \
         (no data for {d}): <code>{}</code> ({}). 이 기계에서 벤치마크를 실행해 결과 파일이 kernels/results/에 들어오면 이 자리에 그려집니다.</p>\n</div>",
        esc(&spec.bench),
        esc(&spec.show),
        d = esc(device),
    )
}
