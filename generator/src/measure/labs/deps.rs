//! What a lab's number depends on, as a hash: its own file, the local modules it imports, and
//! the book's CUDA files it loads.
//!
//! Why follow imports: a lab is usually a short script over a shared module (the model, a data
//! pipeline). Editing `model.py` changes every number measured through it, so the model must be
//! part of each such lab's cache key, or a rebuild would keep showing numbers of code that no
//! longer exists. The scan is textual (`import x` / `from x import …`, and `"area/name.cu"`
//! strings naming a file under kernels/, with the `kernels/common/` headers that file includes)
//! and errs on the side of including too much, which only costs a re-measurement.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Names of the modules a Python source imports at its top level or inside functions.
pub fn imported_modules(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in source.lines() {
        let t = line.trim_start();
        let rest = if let Some(r) = t.strip_prefix("import ") {
            r
        } else if let Some(r) = t.strip_prefix("from ") {
            r.split(" import").next().unwrap_or("")
        } else {
            continue;
        };
        for part in rest.split(',') {
            let name: String = part
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// Paths ending in `.cu` that appear in the source, relative to kernels/ (e.g.
/// `"rowwise/rmsnorm.cu"`, also when written `kernels/rowwise/rmsnorm.cu`; a bare name is kept
/// as written).
pub fn cuda_files(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in source.match_indices(".cu") {
        let after = source[at + 3..].chars().next();
        if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = source[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '/')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        // "kernels/rowwise/rmsnorm.cu" in a docstring names the same file as "rowwise/rmsnorm.cu".
        let name = name.trim_start_matches('/');
        let name = name.strip_prefix("kernels/").unwrap_or(name);
        if !name.is_empty() {
            out.push(format!("{name}.cu"));
        }
    }
    out
}

/// The `kernels/common/` headers a kernel file includes (`#include "name.cuh"`), that exist.
fn included_headers(root: &Path, cu: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(cu).unwrap_or_default();
    text.lines()
        .filter(|l| l.trim_start().starts_with("#include"))
        .filter_map(|l| l.split('"').nth(1))
        .map(|name| root.join("kernels").join("common").join(name))
        .filter(|p| p.is_file())
        .collect()
}

/// Every file the lab depends on (the lab first, then the rest sorted), relative to `root`.
/// Local modules are looked up beside the importing file, then in `kernels/labs/`.
pub fn dependencies(root: &Path, lab: &Path) -> Vec<PathBuf> {
    let labs_dir = root.join("kernels").join("labs");
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut stack = vec![lab.to_path_buf()];
    let mut cu: BTreeSet<PathBuf> = BTreeSet::new();
    while let Some(file) = stack.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let here = file.parent().unwrap_or(Path::new("."));
        for m in imported_modules(&text) {
            for dir in [here, labs_dir.as_path()] {
                let candidate = dir.join(format!("{m}.py"));
                if candidate.is_file() {
                    stack.push(candidate);
                    break;
                }
            }
        }
        for f in cuda_files(&text) {
            let p = root.join("kernels").join(&f);
            if f.split('/').all(|part| part != "..") && p.is_file() {
                cu.extend(included_headers(root, &p));
                cu.insert(p);
            }
        }
    }
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_path_buf();
    let mut out = vec![rel(lab)];
    out.extend(seen.iter().filter(|p| p.as_path() != lab).map(|p| rel(p)));
    out.extend(cu.iter().map(|p| rel(p)));
    out
}

/// sha256 over the dependencies' paths and contents, hex. Unreadable files hash as missing.
pub fn source_hash(root: &Path, lab: &Path) -> String {
    let mut h = Sha256::new();
    for rel in dependencies(root, lab) {
        let text = std::fs::read(root.join(&rel)).unwrap_or_default();
        let name = rel.to_string_lossy().replace('\\', "/");
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((text.len() as u64).to_le_bytes());
        h.update(&text);
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_imports_and_cuda_files() {
        let src = "import os, sys\nfrom model import Config\n    import labkit as lk\nx = \"rmsnorm.cu\"\ny = 'a.cuh'\nz = KERNELS / \"rowwise/softmax.cu\"\n";
        assert_eq!(imported_modules(src), ["os", "sys", "model", "labkit"]);
        assert_eq!(cuda_files(src), ["rmsnorm.cu", "rowwise/softmax.cu"]);
    }

    /// The labs that load the book's CUDA files name them by their area path, and those files
    /// (with the headers they include) join the lab's dependencies: a moved or missing kernel
    /// file would otherwise drop out of the key silently, and the lab would fail only on a GPU.
    #[test]
    fn real_labs_depend_on_their_kernel_files_and_headers() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let labs = root.join("kernels/labs");
        let mut loaders = 0;
        for dir in ["pytorch", "triton"] {
            for e in std::fs::read_dir(labs.join(dir)).unwrap().flatten() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                for f in cuda_files(&text).into_iter().filter(|f| f.contains('/')) {
                    assert!(
                        root.join("kernels").join(&f).is_file(),
                        "{}: {f}",
                        e.path().display()
                    );
                    loaders += 1;
                }
            }
        }
        assert!(loaders >= 5, "labs loading book kernels: {loaders}");
        let deps = dependencies(&root, &labs.join("pytorch/rmsnorm.py"));
        let names: Vec<String> = deps
            .iter()
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .collect();
        assert!(
            names.iter().any(|n| n.ends_with("kernels/rowwise/rmsnorm.cu")),
            "{names:?}"
        );
        assert!(
            names
                .iter()
                .any(|n| n.ends_with("kernels/common/cluster_sync.cuh")),
            "{names:?}"
        );
    }
}
