//! Which records a reference names, and in which machine's file to look first.
//!
//! A reference names a family, a variant (or the family's baseline) and some parameters; a
//! parameter it leaves out is free. The machine order is the figures' order: the reader's own GPU
//! when it measured the family, then the shipped H100, then the other files.

use crate::measure::results::{Record, ResultsFile};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The devices whose results ship with the repository. A claim that is false on one of them is an
/// error (the book's authors must fix the sentence); any other device's file is a reader's own
/// measurement, where a false claim is shown, never fatal.
pub const SHIPPED_DEVICES: &[&str] = &["NVIDIA H100 80GB HBM3", "NVIDIA H200"];

/// Whether `device` is one of the [`SHIPPED_DEVICES`].
pub fn is_shipped(device: &str) -> bool {
    SHIPPED_DEVICES.contains(&device)
}

/// Whether a file is of the machine `want` names (a case-insensitive part of its device name);
/// any file when `want` is `None`.
pub fn device_matches(f: &ResultsFile, want: Option<&str>) -> bool {
    want.is_none_or(|w| f.device.name.to_lowercase().contains(&w.trim().to_lowercase()))
}

/// The records of `file` that `family`/`variant` with `params` names: every given parameter must
/// match, the others are free. The variant `baseline` names the family's baseline records.
pub fn matching<'f>(
    file: &'f ResultsFile,
    family: &str,
    variant: &str,
    params: &BTreeMap<String, u64>,
) -> Vec<&'f Record> {
    file.records
        .iter()
        .filter(|r| r.family == family)
        .filter(|r| {
            if variant == "baseline" {
                r.baseline
            } else {
                r.variant == variant
            }
        })
        .filter(|r| params.iter().all(|(k, v)| r.params.get(k) == Some(v)))
        .collect()
}

/// The records of `family` that a figure keeps: those whose params match every `filter` entry
/// and whose variant is in `variants` (all when `None`), in the `variants` order when given, else
/// by rung (stable, so the file's order breaks ties).
pub fn filtered<'f>(
    file: &'f ResultsFile,
    family: &str,
    filter: Option<&BTreeMap<String, u64>>,
    variants: Option<&[String]>,
) -> Vec<&'f Record> {
    let mut v: Vec<&Record> = file
        .records
        .iter()
        .filter(|r| r.family == family)
        .filter(|r| filter.is_none_or(|w| w.iter().all(|(k, want)| r.params.get(k) == Some(want))))
        .filter(|r| variants.is_none_or(|vs| vs.contains(&r.variant)))
        .collect();
    match variants {
        Some(vs) => v.sort_by_key(|r| vs.iter().position(|x| *x == r.variant)),
        None => v.sort_by_key(|r| r.rung),
    }
    v
}

/// The file a figure draws from, among those of the machine `want` names (any, if none) that
/// `has` the records it needs: those with a verified number first (`good`), so a stale failure
/// elsewhere never hides a good measurement, but a family that only failed is still shown; then
/// the named machine, or the reader's GPU (`local`), or the H100, or the first.
pub fn pick_file<'f>(
    files: &'f [(PathBuf, ResultsFile)],
    local: Option<&str>,
    want: Option<&str>,
    has: &dyn Fn(&ResultsFile) -> bool,
    good: &dyn Fn(&ResultsFile) -> bool,
) -> Option<&'f ResultsFile> {
    let with: Vec<&ResultsFile> = files
        .iter()
        .map(|(_, f)| f)
        .filter(|f| device_matches(f, want) && has(f))
        .collect();
    let ok: Vec<&ResultsFile> = with.iter().copied().filter(|f| good(f)).collect();
    let pool = if ok.is_empty() { &with } else { &ok };
    if want.is_some() {
        return pool.first().copied();
    }
    if let Some(f) = local.and_then(|l| pool.iter().find(|f| f.device.name == l)) {
        return Some(f);
    }
    pool.iter()
        .find(|f| f.device.name.contains("H100"))
        .or_else(|| pool.first())
        .copied()
}

/// The files in the order a page reads them: the reader's GPU (`local`) first, then the shipped
/// H100, then the rest as given.
pub fn display_order<'f>(files: &'f [(PathBuf, ResultsFile)], local: Option<&str>) -> Vec<&'f ResultsFile> {
    let mut v: Vec<&ResultsFile> = files.iter().map(|(_, f)| f).collect();
    v.sort_by_key(|f| {
        if local.is_some_and(|l| l == f.device.name) {
            0
        } else if f.device.name.contains("H100") {
            1
        } else {
            2
        }
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::results::{DeviceInfo, Outcome, Provenance, Timing};

    fn file(name: &str, recs: Vec<Record>) -> ResultsFile {
        ResultsFile {
            schema: 1,
            device: DeviceInfo {
                name: name.into(),
                compute_capability: "9.0".into(),
                sm_count: 132,
                memory_bytes: 0,
                driver_version: String::new(),
                cuda_version: String::new(),
                nvrtc_version: String::new(),
                datasheet: None,
            },
            records: recs,
        }
    }

    fn rec(variant: &str, baseline: bool, n: u64) -> Record {
        Record {
            family: "f".into(),
            variant: variant.into(),
            label: variant.into(),
            rung: 1,
            baseline,
            params: [("n".to_string(), n), ("m".to_string(), 1)].into(),
            key: String::new(),
            source_hash: String::new(),
            source_file: None,
            outcome: Outcome::Ok(Timing::default()),
            provenance: Provenance {
                generator_version: String::new(),
                git_commit: String::new(),
                date: String::new(),
                frameworks: Default::default(),
                gpus: None,
                interconnect: None,
            },
            wall_s: None,
        }
    }

    #[test]
    fn given_params_filter_and_the_rest_are_free() {
        let f = file(
            "X",
            vec![rec("a", false, 1), rec("a", false, 2), rec("memcpy", true, 1)],
        );
        let p = |n: Option<u64>| n.map(|n| [("n".to_string(), n)].into()).unwrap_or_default();
        assert_eq!(matching(&f, "f", "a", &p(None)).len(), 2);
        assert_eq!(matching(&f, "f", "a", &p(Some(2))).len(), 1);
        assert_eq!(matching(&f, "f", "baseline", &p(Some(1)))[0].variant, "memcpy");
        assert!(matching(&f, "g", "a", &p(None)).is_empty());
    }

    #[test]
    fn the_readers_gpu_comes_first_then_the_h100() {
        let files = vec![
            (PathBuf::from("a"), file("NVIDIA H200", vec![])),
            (PathBuf::from("b"), file("NVIDIA H100 80GB HBM3", vec![])),
            (PathBuf::from("c"), file("RTX", vec![])),
        ];
        let names = |v: Vec<&ResultsFile>| v.iter().map(|f| f.device.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(display_order(&files, None))[0], "NVIDIA H100 80GB HBM3");
        assert_eq!(names(display_order(&files, Some("RTX")))[0], "RTX");
        assert!(is_shipped("NVIDIA H200") && !is_shipped("RTX"));
    }
}
