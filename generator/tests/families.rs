//! The family table is the only registration: every family listed there has a plan, kernel
//! sources that exist under kernels/, and is what `check` and `bench` know by name; every `.cu`
//! file under kernels/ belongs to some family (an unregistered file would never be measured).

use hdlc::measure::families::{family, names, FAMILIES};
use std::collections::BTreeSet;
use std::path::Path;

fn kernels_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

#[test]
fn every_family_comes_from_the_one_table() {
    let listed = names();
    assert_eq!(listed.len(), FAMILIES.len());
    assert_eq!(
        listed.iter().collect::<BTreeSet<_>>().len(),
        listed.len(),
        "family names are unique"
    );
    // `check` (figure blocks) and `bench` read the same names.
    let benches = hdlc::figspec::benches();
    for name in &listed {
        assert!(benches.contains(name), "`bench: {name}` is known to check");
        let fam = family(name).unwrap();
        let items = (fam.items)();
        assert!(!items.is_empty(), "{name} has items");
        assert!(
            items.iter().all(|i| i.family == *name),
            "{name}: items name their family"
        );
        for it in items.iter().filter(|i| !i.baseline) {
            let file = it.source_file.expect("a rung names its kernel file");
            assert!(
                fam.sources.iter().any(|s| s.path == file),
                "{name}/{}: {file} is one of the family's sources",
                it.variant
            );
        }
        for src in fam.sources {
            let on_disk = std::fs::read_to_string(kernels_dir().join(src.path))
                .unwrap_or_else(|_| panic!("{name}: kernels/{} exists", src.path));
            assert_eq!(on_disk, src.text, "{}: embedded text is the file's", src.path);
        }
    }
    assert!(family("no_such_family").is_none());
    assert!(hdlc::measure::items("no_such_family").is_empty());
}

#[test]
fn every_kernel_file_belongs_to_a_family() {
    let registered: BTreeSet<&str> = FAMILIES
        .iter()
        .flat_map(|f| f.sources.iter().map(|s| s.path))
        .collect();
    let mut found = 0;
    for area in std::fs::read_dir(kernels_dir()).unwrap().flatten() {
        let dir = area.path();
        let name = area.file_name().to_string_lossy().into_owned();
        if !dir.is_dir() || ["labs", "results", "common"].contains(&name.as_str()) {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap().flatten() {
            let file = format!("{name}/{}", f.file_name().to_string_lossy());
            if file.ends_with(".cu") {
                found += 1;
                assert!(
                    registered.contains(file.as_str()),
                    "{file} is in no family's sources"
                );
            }
        }
    }
    assert_eq!(
        found,
        registered.len(),
        "no family lists a file that is not on disk"
    );
    // Nothing is left loose at the top of kernels/.
    for f in std::fs::read_dir(kernels_dir()).unwrap().flatten() {
        let n = f.file_name().to_string_lossy().into_owned();
        assert!(
            !n.ends_with(".cu") && !n.ends_with(".cuh"),
            "kernels/{n}: put it in an area folder"
        );
    }
}
