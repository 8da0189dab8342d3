//! How long a measuring run will take, said before it starts: from the wall time each record
//! carries (`Record::wall_s`, the item's whole time in its run: set-up, checks and timed runs),
//! scaled by this GPU's memcpy bandwidth against the bandwidth of the machine that record was
//! measured on. Items whose records carry no time are counted apart, never guessed.

use super::labs::Planned;
use super::plan::Item;
use super::progress::duration;
use super::results::{Outcome, Record, ResultsFile};
use std::path::PathBuf;

/// An estimate over some items.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// Expected seconds of the items with a recorded time.
    pub seconds: f64,
    /// Items with a recorded time.
    pub known: usize,
    /// Items without one.
    pub unknown: usize,
}

impl Estimate {
    fn add(&mut self, s: Option<f64>) {
        match s {
            Some(s) => {
                self.seconds += s;
                self.known += 1;
            }
            None => self.unknown += 1,
        }
    }

    /// "~1.5 min", or what is unknown: for the announcement line.
    pub fn text(&self) -> String {
        match (self.known, self.unknown) {
            (0, 0) => "nothing".into(),
            (0, _) => "time unknown: no recorded time for these yet".into(),
            (_, 0) => format!("~{}", duration(self.seconds)),
            (_, u) => format!("~{} + {u} without a recorded time", duration(self.seconds)),
        }
    }
}

/// The memcpy bandwidth (GB/s) a results file measured: its bandwidth family's baseline.
pub fn memcpy_gbs(f: &ResultsFile) -> Option<f64> {
    f.records
        .iter()
        .filter(|r| r.family == "bandwidth" && r.baseline)
        .find_map(|r| match &r.outcome {
            Outcome::Ok(t) if t.median_ms > 0.0 && t.bytes > 0.0 => Some(t.gbs()),
            _ => None,
        })
}

/// The recorded time of the first record (in `files` order) that `pick` accepts, scaled to this
/// GPU: a machine with half the memcpy bandwidth is taken to need twice the time.
fn recorded(
    files: &[(PathBuf, ResultsFile)],
    reader_gbs: Option<f64>,
    pick: &dyn Fn(&Record) -> bool,
) -> Option<f64> {
    files.iter().find_map(|(_, f)| {
        let r = f.records.iter().find(|r| pick(r) && r.wall_s.is_some())?;
        let scale = match (reader_gbs, memcpy_gbs(f)) {
            (Some(mine), Some(theirs)) if mine > 0.0 => theirs / mine,
            _ => 1.0,
        };
        r.wall_s.map(|s| s * scale)
    })
}

/// The kernel items to measure.
pub fn kernels(
    todo: &[(Item, String, String)],
    files: &[(PathBuf, ResultsFile)],
    reader_gbs: Option<f64>,
) -> Estimate {
    let mut e = Estimate::default();
    for (item, _, _) in todo {
        if item.skip.is_some() {
            continue;
        }
        e.add(item_seconds(item, files, reader_gbs));
    }
    e
}

/// One kernel item's expected seconds.
pub fn item_seconds(item: &Item, files: &[(PathBuf, ResultsFile)], reader_gbs: Option<f64>) -> Option<f64> {
    recorded(files, reader_gbs, &|r| {
        r.family == item.family && r.variant == item.variant && r.params == item.params
    })
}

/// One lab's expected seconds: the time its last run took (every record of a lab carries it).
pub fn lab_seconds(p: &Planned, files: &[(PathBuf, ResultsFile)], reader_gbs: Option<f64>) -> Option<f64> {
    let world = p.world.as_ref().map(|w| u64::from(w.size));
    recorded(files, reader_gbs, &|r| {
        r.family == p.lab.family
            && r.source_file.as_deref() == Some(p.lab.source_file.as_str())
            && world.is_none_or(|w| r.params.get("world") == Some(&w))
    })
}

/// The labs to run.
pub fn labs(planned: &[Planned], files: &[(PathBuf, ResultsFile)], reader_gbs: Option<f64>) -> Estimate {
    let mut e = Estimate::default();
    for p in planned {
        e.add(lab_seconds(p, files, reader_gbs));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(44.6), "45 s");
        assert_eq!(duration(90.0), "1.5 min");
        assert_eq!(duration(1200.0), "20 min");
        assert_eq!(duration(7200.0), "2.0 h");
        let e = Estimate {
            seconds: 90.0,
            known: 3,
            unknown: 2,
        };
        assert_eq!(e.text(), "~1.5 min + 2 without a recorded time");
        assert_eq!(Estimate::default().text(), "nothing");
    }
}
