//! Areas: the groups the map's legend lists its lines in ("처음이라면 여기부터", CUDA, 추론, …).
//!
//! Why derived, not declared: cards already live in area folders (`cards/<area>/<id>.md`), so a
//! line's area is the folder most of its cards are in (ties go to the folder of its later
//! cards, where the line is heading). Start paths form their own first group. Folder names are
//! short ids; the few this book uses get a reader-facing name and a place in the legend here,
//! and any other folder is listed under its own name after them.

use std::collections::BTreeMap;
use std::path::Path;

/// A legend group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Area {
    pub key: String,
    pub title: String,
    /// Line indices, in reading order.
    pub lines: Vec<usize>,
}

/// Known folders: (folder or folder prefix followed by '-', area key, title). Earlier rows list
/// first in the legend.
const KNOWN: &[(&str, &str, &str)] = &[
    ("roofline", START.0, START.1),
    ("training", START.0, START.1),
    ("transformer", START.0, START.1),
    ("numerics", "numerics", "수치 형식과 양자화"),
    ("cuda-attention", "attention", "Attention"),
    ("cuda", "cuda", "CUDA"),
    ("pytorch", "frameworks", "PyTorch와 Triton"),
    ("triton", "frameworks", "PyTorch와 Triton"),
    ("inference", "inference", "추론"),
    ("serving", "serving", "서빙"),
    ("vllm", "serving", "서빙"),
    ("parallelism", "parallelism", "병렬화"),
    ("jax", "jax", "JAX"),
];

/// The start paths' group (their cards are the basics folders' too).
const START: (&str, &str) = ("start", "처음이라면 여기부터");

/// The area folder of a card file (`cards/<area>/<id>.md`), or "" for a card outside folders.
pub fn folder_of(file: &Path) -> String {
    let parts: Vec<&str> = file
        .iter()
        .filter_map(|p| p.to_str())
        .filter(|p| !p.is_empty())
        .collect();
    match parts.iter().position(|&p| p == "cards") {
        Some(i) if parts.len() > i + 2 => parts[parts.len() - 2].to_string(),
        _ => String::new(),
    }
}

/// (area key, title, rank) of a folder; the start station's empty folder is the start area.
pub fn family(folder: &str) -> (String, String, usize) {
    for (f, key, title) in KNOWN {
        if folder == *f || folder.strip_prefix(f).is_some_and(|r| r.starts_with('-')) {
            // An area listed by several folders ranks where it is first listed.
            let rank = KNOWN.iter().position(|r| r.1 == *key).unwrap_or(0);
            return (key.to_string(), title.to_string(), rank + 1);
        }
    }
    if folder.is_empty() {
        (START.0.into(), START.1.into(), 0)
    } else {
        (folder.into(), folder.into(), KNOWN.len() + 1)
    }
}

/// The folder most of a line's stops are in; ties go to the folder seen last.
fn main_folder<'a>(stops: &[usize], folder: &'a [String]) -> &'a str {
    let mut count: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (k, &s) in stops.iter().enumerate() {
        if folder[s].is_empty() {
            continue;
        }
        let e = count.entry(folder[s].as_str()).or_default();
        e.0 += 1;
        e.1 = k;
    }
    count
        .into_iter()
        .max_by_key(|&(_, (n, last))| (n, last))
        .map_or("", |(f, _)| f)
}

/// Group lines (given by their stops) into areas. `starts` are the start lines (their own
/// first group). Returns the areas in legend order and each line's area index.
pub fn group(lines: &[&[usize]], folder: &[String], starts: &[usize]) -> (Vec<Area>, Vec<usize>) {
    // (rank, key) → (title, lines)
    let mut groups: BTreeMap<(usize, String), (String, Vec<usize>)> = BTreeMap::new();
    for &li in starts {
        groups
            .entry((0, START.0.to_string()))
            .or_insert_with(|| (START.1.to_string(), Vec::new()))
            .1
            .push(li);
    }
    for (li, l) in lines.iter().enumerate() {
        if starts.contains(&li) {
            continue;
        }
        let (key, title, rank) = family(main_folder(l, folder));
        let rank = rank.max(1);
        groups
            .entry((rank, key))
            .or_insert_with(|| (title, Vec::new()))
            .1
            .push(li);
    }
    let mut of_line = vec![0; lines.len()];
    let areas: Vec<Area> = groups
        .into_iter()
        .enumerate()
        .map(|(ai, ((_, key), (title, ls)))| {
            for &l in &ls {
                of_line[l] = ai;
            }
            Area {
                key,
                title,
                lines: ls,
            }
        })
        .collect();
    (areas, of_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_families() {
        assert_eq!(folder_of(Path::new("cards/cuda-opt/occupancy.md")), "cuda-opt");
        assert_eq!(folder_of(Path::new("cards/how-to-learn.md")), "");
        assert_eq!(family("cuda-opt").0, "cuda");
        assert_eq!(family("cuda-attention").0, "attention");
        assert_eq!(family("vllm").0, "serving");
        assert_eq!(family("cudax").0, "cudax");
        assert_eq!(family("").0, "start");
        assert_eq!(family("roofline").0, "start");
        assert_eq!(family("pytorch").2, family("triton").2);
    }
}
