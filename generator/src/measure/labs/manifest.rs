//! The lab manifests: `kernels/labs/<area>/labs.yaml`, one list of labs per area folder.
//!
//! Why a manifest rather than discovery: a lab needs facts the runner must know before it starts
//! Python (which packages it needs, whether it needs a GPU, how long it may take, which figure
//! family its records belong to), and `check` must be able to reject a typo in them with a file
//! and a line, like every other input of the book.

use crate::diag::Diagnostics;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a lab may require: Python distributions the probe reports, and `gpu`.
pub const KNOWN_REQUIRES: &[&str] = &[
    "torch", "triton", "jax", "jaxlib", "flax", "optax", "numpy", "gpu",
];

/// Default time-out of a lab, in seconds.
pub const DEFAULT_TIMEOUT_S: u64 = 300;

/// One lab, as the runner uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Lab {
    pub id: String,
    /// Figure family its records belong to.
    pub family: String,
    /// The lab file relative to `kernels/`, e.g. `labs/triton/softmax.py` (what records name).
    pub source_file: String,
    /// Absolute (or root-joined) path of the lab file.
    pub path: PathBuf,
    pub requires: Vec<String>,
    pub timeout_s: u64,
    pub summary: String,
    /// The manifest (relative to the root) and the line of the entry, for messages.
    pub manifest: PathBuf,
    pub line: usize,
    /// GPU counts to run it at, through torchrun (`world:`); empty: one plain process.
    pub world: Vec<u32>,
    /// Which of `world` may run on gloo CPU processes where no GPU is visible (`cpu_world:`).
    pub cpu_world: Vec<u32>,
    /// How each world size is started (`launch:`; torchrun unless it says `devices`).
    pub launch: super::world::Launch,
}

impl Lab {
    pub fn needs_gpu(&self) -> bool {
        self.requires.iter().any(|r| r == "gpu")
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    file: String,
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    timeout_s: Option<u64>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    world: Option<Vec<u32>>,
    #[serde(default)]
    cpu_world: Option<Vec<u32>>,
    #[serde(default)]
    launch: Option<String>,
}

/// The manifests under `root/kernels/labs/*/labs.yaml`, sorted by path (relative to `root`).
pub fn manifest_paths(root: &Path) -> Vec<PathBuf> {
    let dir = root.join("kernels").join("labs");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("labs.yaml"))
        .filter(|p| p.is_file())
        .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out
}

fn is_snake(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// 1-based line of the first line in `from..until` (1-based, `until` exclusive) whose trimmed
/// text starts with `key:` (or `- key:`); `from` when there is none.
fn line_of_key(text: &str, from: usize, until: usize, key: &str) -> usize {
    text.lines()
        .enumerate()
        .take(until.saturating_sub(1))
        .skip(from.saturating_sub(1))
        .find(|(_, l)| {
            let t = l.trim_start().trim_start_matches("- ").trim_start();
            t.starts_with(&format!("{key}:"))
        })
        .map(|(i, _)| i + 1)
        .unwrap_or(from)
}

/// Lines (1-based) where each top-level list entry starts (`- ` at column 1).
fn entry_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- ") || l.trim_end() == "-")
        .map(|(i, _)| i + 1)
        .collect()
}

/// Load every manifest. Problems go to `diags` with the manifest's path and a line; labs with
/// problems are left out, the rest are returned. `kernel_families` are the harness's family
/// names, which a lab may not take over.
pub fn load(root: &Path, kernel_families: &[&str], diags: &mut Diagnostics) -> Vec<Lab> {
    let mut labs: Vec<Lab> = Vec::new();
    let mut ids: BTreeMap<String, (PathBuf, usize)> = BTreeMap::new();
    for rel in manifest_paths(root) {
        let text = match std::fs::read_to_string(root.join(&rel)) {
            Ok(t) => t,
            Err(e) => {
                diags.error(&rel, 0, 0, format!("cannot read: {e}"));
                continue;
            }
        };
        labs.extend(parse(root, &rel, &text, kernel_families, &mut ids, diags));
    }
    // Two labs of one family must not both claim a variant; that can only be seen in their
    // output, so here only the family/id namespace is checked.
    labs
}

/// Parse one manifest's text (`rel` is its path relative to `root`, used in messages and to
/// find lab files). `ids` collects ids across manifests to catch duplicates.
pub fn parse(
    root: &Path,
    rel: &Path,
    text: &str,
    kernel_families: &[&str],
    ids: &mut BTreeMap<String, (PathBuf, usize)>,
    diags: &mut Diagnostics,
) -> Vec<Lab> {
    let entries: Vec<Entry> = match serde_yaml_ng::from_str::<Option<Vec<Entry>>>(text) {
        Ok(v) => v.unwrap_or_default(),
        Err(e) => {
            let line = crate::diag::yaml_line(text, e.location().map(|l| l.line()).unwrap_or(1)).max(1);
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            diags.error(rel, line, 1, format!("lab manifest: {msg}")).hint = Some(
                "a manifest is a list of labs with `id`, `file` and optionally `family`, \
                 `requires`, `timeout_s`, `summary`, `world`, `cpu_world`, `launch`"
                    .into(),
            );
            return Vec::new();
        }
    };
    let starts = entry_lines(text);
    let mut out = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let line = starts.get(i).copied().unwrap_or(1);
        let until = starts.get(i + 1).copied().unwrap_or(usize::MAX);
        let mut report = |key: &str, msg: String, hint: &str| {
            let l = line_of_key(text, line, until, key);
            diags.error(rel, l, 1, msg).hint = Some(hint.to_string());
        };
        let ctx = EntryCtx {
            root,
            rel,
            line,
            kernel_families,
        };
        out.extend(check_entry(e, &ctx, ids, &mut report));
    }
    out
}

/// Where an entry sits and what it may not collide with.
struct EntryCtx<'a> {
    root: &'a Path,
    rel: &'a Path,
    line: usize,
    kernel_families: &'a [&'a str],
}

/// A reporter of one entry's problems: (key, message, hint).
type Report<'a> = dyn FnMut(&str, String, &str) + 'a;

/// Every check of one entry, all reported; the lab when none failed.
fn check_entry(
    e: Entry,
    c: &EntryCtx,
    ids: &mut BTreeMap<String, (PathBuf, usize)>,
    report: &mut Report,
) -> Option<Lab> {
    let family = e.family.clone().unwrap_or_else(|| e.id.clone());
    let folder = c.rel.parent().unwrap_or(Path::new(""));
    let path = c.root.join(folder).join(&e.file);
    let timeout_s = e.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    let ok = [
        check_id(&e.id, ids, report),
        check_family(&e, &family, c.kernel_families, report),
        check_file(&e.file, folder, &path, report),
        check_requires(&e.requires, report),
        check_timeout(timeout_s, report),
        super::world::check(
            e.world.as_deref(),
            e.cpu_world.as_deref(),
            e.launch.as_deref(),
            &e.requires,
            report,
        ),
    ]
    .iter()
    .all(|ok| *ok);
    if is_snake(&e.id) {
        ids.entry(e.id.clone()).or_insert((c.rel.to_path_buf(), c.line));
    }
    if !ok {
        return None;
    }
    let under_kernels = c
        .rel
        .strip_prefix("kernels")
        .unwrap_or(c.rel)
        .parent()
        .unwrap_or(Path::new(""))
        .join(&e.file);
    Some(Lab {
        id: e.id,
        family,
        source_file: under_kernels.to_string_lossy().replace('\\', "/"),
        path,
        requires: e.requires,
        timeout_s,
        summary: e.summary.unwrap_or_default(),
        manifest: c.rel.to_path_buf(),
        line: c.line,
        world: e.world.unwrap_or_default(),
        cpu_world: e.cpu_world.unwrap_or_default(),
        launch: e
            .launch
            .as_deref()
            .and_then(super::world::Launch::parse)
            .unwrap_or_default(),
    })
}

/// snake_case and unique across manifests.
fn check_id(id: &str, ids: &BTreeMap<String, (PathBuf, usize)>, report: &mut Report) -> bool {
    if !is_snake(id) {
        report(
            "id",
            format!("lab id `{id}` is not snake_case"),
            "use a-z, 0-9 and _",
        );
        return false;
    }
    if let Some((other, l)) = ids.get(id) {
        report(
            "id",
            format!("duplicate lab id `{id}` (also at {}:{l})", other.display()),
            "lab ids are unique across all manifests",
        );
        return false;
    }
    true
}

/// snake_case, and not a family of the CUDA harness (or the CPU roofline).
fn check_family(e: &Entry, family: &str, kernel_families: &[&str], report: &mut Report) -> bool {
    if e.family.is_none() && !is_snake(&e.id) {
        return true; // already reported as a bad id
    }
    if !is_snake(family) {
        report(
            "family",
            format!("family `{family}` is not snake_case"),
            "use a-z, 0-9 and _",
        );
        return false;
    }
    if kernel_families.contains(&family) || family == crate::measure::CPU_FAMILY {
        report(
            "family",
            format!("family `{family}` belongs to the CUDA harness"),
            &format!("give the lab's records a family of their own, e.g. `{family}_lab`"),
        );
        return false;
    }
    true
}

/// A relative path to an existing `.py` file beside the manifest.
fn check_file(file: &str, folder: &Path, path: &Path, report: &mut Report) -> bool {
    let clean = !file.is_empty()
        && file.ends_with(".py")
        && !file.starts_with('/')
        && !file.split('/').any(|c| c == ".." || c.is_empty());
    if !clean {
        report(
            "file",
            format!("`{file}` is not a relative path to a .py file"),
            "name the lab file relative to the manifest's folder, e.g. `softmax.py`",
        );
        return false;
    }
    if !path.is_file() {
        report(
            "file",
            format!("no lab file `{}`", folder.join(file).display()),
            "create the file or fix the name",
        );
        return false;
    }
    true
}

/// Known requirements, each once.
fn check_requires(requires: &[String], report: &mut Report) -> bool {
    let mut ok = true;
    let mut seen = BTreeSet::new();
    for r in requires {
        if !KNOWN_REQUIRES.contains(&r.as_str()) {
            report(
                "requires",
                format!("unknown requirement `{r}`"),
                &format!("known: {}", KNOWN_REQUIRES.join(", ")),
            );
            ok = false;
        } else if !seen.insert(r.clone()) {
            report(
                "requires",
                format!("`{r}` listed twice"),
                "list each requirement once",
            );
            ok = false;
        }
    }
    ok
}

/// Between one second and an hour.
fn check_timeout(timeout_s: u64, report: &mut Report) -> bool {
    if (1..=3600).contains(&timeout_s) {
        return true;
    }
    report(
        "timeout_s",
        format!("timeout_s {timeout_s} is out of range"),
        "between 1 and 3600 seconds",
    );
    false
}
