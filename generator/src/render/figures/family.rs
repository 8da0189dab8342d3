//! One benchmark family's records in one results file: its size axis, sorted rows and colors.
//!
//! Why apart: every view starts from the same grouping (which parameter is "the size", which
//! record is the baseline, which color a variant gets), and colors must agree across views.

use super::classify::{classify, Meas, State, Unit};
use super::format::group;
use super::style::{GRAY, PALETTE};
use crate::measure::results::{Record, ResultsFile};
use crate::metric_names::{param_name, params_text};
use plotters::style::RGBColor;
use std::collections::{BTreeMap, BTreeSet};

/// Which parameter is "the size" of a family's records, and how to name it.
#[derive(Debug)]
pub(super) struct SizeAxis {
    /// The family the records belong to (parameter names depend on it).
    pub(super) family: String,
    /// The parameter read as the size (None: records have no parameters).
    pub(super) key: Option<String>,
    /// The size in words, e.g. "N", "columns" or "M = N = K".
    pub(super) label: String,
    /// Parameters that take more than one value across the family, in display order.
    pub(super) varying: Vec<String>,
    /// All varying parameters are equal within each record (m = n = k).
    pub(super) locked: bool,
}

/// The order parameters are named in, in titles and labels: shapes first (M, N, K, batch,
/// heads), then widths and lengths, then switches. Not the order the size axis is chosen by
/// ([`key_rank`]), which decides which records a view draws.
pub(super) fn display_rank(k: &str) -> (usize, &str) {
    const ORDER: [&str; 16] = [
        "m", "n", "k", "b", "batch", "h", "heads", "hq", "hkv", "rows", "cols", "seq", "ctx", "l", "d",
        "causal",
    ];
    (ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len()), k)
}

pub(super) fn key_rank(k: &str) -> (usize, &str) {
    const ORDER: [&str; 8] = ["m", "n", "k", "batch", "rows", "cols", "seq", "d"];
    (ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len()), k)
}

impl SizeAxis {
    pub(super) fn new(recs: &[&Record]) -> SizeAxis {
        let family = recs.first().map(|r| r.family.clone()).unwrap_or_default();
        let mut keys: BTreeSet<&str> = BTreeSet::new();
        for r in recs {
            keys.extend(r.params.keys().map(|k| k.as_str()));
        }
        let mut varying: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| {
                recs.iter()
                    .map(|r| r.params.get(*k))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect();
        varying.sort_by_key(|k| key_rank(k));
        let locked = varying.len() > 1
            && recs.iter().all(|r| {
                varying
                    .iter()
                    .map(|k| r.params.get(*k))
                    .collect::<BTreeSet<_>>()
                    .len()
                    == 1
            });
        let key = if varying.is_empty() {
            keys.iter().copied().min_by_key(|k| (*k != "n", key_rank(k)))
        } else if locked {
            varying.iter().copied().min_by_key(|k| (*k != "n", key_rank(k)))
        } else {
            varying
                .iter()
                .copied()
                .min_by_key(|k| (*k != "n", *k != "cols", key_rank(k)))
        };
        let label = match key {
            Some(_) if locked => varying
                .iter()
                .map(|k| param_name(&family, k))
                .collect::<Vec<_>>()
                .join(" = "),
            Some(k) => param_name(&family, k),
            None => "크기 (size)".to_string(),
        };
        SizeAxis {
            family,
            key: key.map(str::to_string),
            label,
            varying: varying.into_iter().map(str::to_string).collect(),
            locked,
        }
    }

    pub(super) fn size(&self, r: &Record) -> u64 {
        self.key
            .as_ref()
            .and_then(|k| r.params.get(k))
            .copied()
            .unwrap_or(0)
    }

    /// Whether two records agree on every varying parameter other than the size.
    pub(super) fn same_others(&self, a: &Record, b: &Record) -> bool {
        self.locked
            || self
                .varying
                .iter()
                .filter(|k| Some(*k) != self.key.as_ref())
                .all(|k| a.params.get(k) == b.params.get(k))
    }

    /// The parameters of a record as shown in a table cell.
    pub(super) fn cell(&self, r: &Record) -> String {
        if self.locked || self.varying.len() <= 1 {
            return match &self.key {
                Some(_) => group(self.size(r)),
                None => "—".to_string(),
            };
        }
        params_text(
            &self.family,
            self.varying
                .iter()
                .filter_map(|k| r.params.get(k).map(|v| (k.as_str(), *v))),
        )
    }

    pub(super) fn header(&self) -> String {
        if self.locked || self.varying.len() <= 1 {
            self.label.clone()
        } else {
            "조건 (parameters)".to_string()
        }
    }
}

pub(super) struct Row<'a> {
    pub(super) rec: &'a Record,
    pub(super) size: u64,
    pub(super) state: State,
}

impl Row<'_> {
    pub(super) fn meas(&self) -> Option<&Meas> {
        match &self.state {
            State::Ok(m) => Some(m),
            State::Failed(_) => None,
        }
    }
}

/// One benchmark family's records in one results file.
pub(super) struct Family<'a> {
    pub(super) name: String,
    pub(super) unit: Unit,
    pub(super) axis: SizeAxis,
    /// Sorted by other parameters, size, baseline last, rung, variant.
    pub(super) rows: Vec<Row<'a>>,
    /// Kernel variants (not baselines) in rung order: their index picks their color.
    pub(super) variants: Vec<&'a str>,
}

impl<'a> Family<'a> {
    pub(super) fn new(name: &str, file: &'a ResultsFile) -> Family<'a> {
        let unit = Unit::of(name);
        let recs: Vec<&Record> = file
            .records
            .iter()
            .filter(|r| r.family == name && (name != CPU || r.baseline || r.variant.starts_with("matmul")))
            .collect();
        let axis = SizeAxis::new(&recs);
        let mut rows: Vec<Row> = recs
            .iter()
            .map(|r| Row {
                rec: r,
                size: axis.size(r),
                state: classify(r, unit),
            })
            .collect();
        rows.sort_by(|a, b| {
            (&a.rec.params, a.size, a.rec.baseline, a.rec.rung, &a.rec.variant).cmp(&(
                &b.rec.params,
                b.size,
                b.rec.baseline,
                b.rec.rung,
                &b.rec.variant,
            ))
        });
        let mut v: Vec<(u32, &str)> = recs
            .iter()
            .filter(|r| !r.baseline)
            .map(|r| (r.rung, r.variant.as_str()))
            .collect();
        v.sort();
        let mut variants: Vec<&str> = Vec::new();
        for (_, name) in v {
            if !variants.contains(&name) {
                variants.push(name);
            }
        }
        Family {
            name: name.to_string(),
            unit,
            axis,
            rows,
            variants,
        }
    }

    pub(super) fn color(&self, rec: &Record) -> RGBColor {
        if rec.baseline {
            return GRAY;
        }
        let i = self.variants.iter().position(|v| *v == rec.variant).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    }

    /// The record whose parameters a single-size view draws: at the requested size, or the
    /// largest size with a valid measurement; a baseline if there is one.
    pub(super) fn reference(&self, size: Option<u64>) -> Option<&Row<'a>> {
        let target = match size {
            Some(s) => s,
            None => self
                .rows
                .iter()
                .filter(|r| r.meas().is_some())
                .map(|r| r.size)
                .max()?,
        };
        let at: Vec<&Row> = self.rows.iter().filter(|r| r.size == target).collect();
        at.iter()
            .find(|r| r.rec.baseline && r.meas().is_some())
            .or_else(|| at.iter().find(|r| r.meas().is_some()))
            .or_else(|| at.first())
            .copied()
    }

    /// Rows with exactly these parameters, baseline last, one per variant.
    pub(super) fn at_params(&self, params: &BTreeMap<String, u64>) -> Vec<&Row<'a>> {
        let mut out: Vec<&Row> = self.rows.iter().filter(|r| &r.rec.params == params).collect();
        out.sort_by(|a, b| {
            (a.rec.baseline, a.rec.rung, &a.rec.variant).cmp(&(b.rec.baseline, b.rec.rung, &b.rec.variant))
        });
        out.dedup_by(|a, b| a.rec.variant == b.rec.variant);
        out
    }
}

/// The measured baseline among rows of one parameter set.
pub(super) fn baseline_of<'r>(rows: &[&'r Row<'_>]) -> Option<(&'r Record, Meas)> {
    rows.iter()
        .filter(|r| r.rec.baseline)
        .find_map(|r| r.meas().map(|m| (r.rec, *m)))
}

/// The family the CPU roofline benchmark (`cpubench`) writes.
pub(super) const CPU: &str = crate::figspec::CPU_BENCH;

/// The CPU's memory roof: its all-core triad, in GB/s.
pub(super) fn cpu_triad(file: &ResultsFile) -> Option<(&Record, Meas)> {
    let r = file
        .records
        .iter()
        .find(|r| r.family == CPU && r.variant == "triad")?;
    let m = *Row {
        rec: r,
        size: 0,
        state: classify(r, Unit::GBs),
    }
    .meas()?;
    Some((r, m))
}

/// A measured baseline of another family in the same file (memcpy bandwidth, cuBLAS FLOP/s):
/// the valid baseline record at that family's largest size.
pub(super) fn roof_of<'f>(file: &'f ResultsFile, family: &str) -> Option<(&'f Record, Meas)> {
    let fam = Family::new(family, file);
    let r = fam
        .rows
        .iter()
        .filter(|r| r.rec.baseline && r.meas().is_some())
        .max_by_key(|r| (r.size, std::cmp::Reverse(r.rec.rung)))?;
    Some((r.rec, *r.meas()?))
}
