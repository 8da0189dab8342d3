//! Measured source on a page: ```` ```include ```` blocks pull code from `kernels/<area>/*.cu` and from
//! the labs under `kernels/labs/` at build time, so a card can never show code that differs from
//! what was measured.
//!
//! ```text
//! ```include
//! file: gemm/sgemm.cu     # a kernel file by its area folder, or a lab file such as labs/pytorch/model.py
//! kernel: sgemm_naive     # optional: one __global__/__device__ function, with the comments above it
//! name: RMSNorm           # or, in a .py file: one def or class, with its decorators and comments
//! anchor: load_tile       # or: the lines between `ANCHOR: load_tile` and `ANCHOR_END: load_tile`
//!                         #     comments (`//` in CUDA, `#` in Python)
//! lines: 1-20             # or: a 1-based inclusive line range (fragile: prefer a name or anchor)
//! ```
//! ```

use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IncludeSpec {
    pub file: String,
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub anchor: Option<String>,
    #[serde(default)]
    pub lines: Option<String>,
}

/// Code cut from a source file, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Excerpt {
    pub code: String,
    pub first_line: usize,
    pub last_line: usize,
    /// Highlighting language of the file: "cuda" or "python".
    pub lang: &'static str,
}

impl Excerpt {
    /// Lines of code by the book's convention (see [`count_code_lines`]).
    pub fn code_lines(&self) -> usize {
        count_code_lines(&self.code, self.lang)
    }
}

/// Lines of code: non-blank lines that are not only a comment and, in Python, not part of a
/// docstring. The convention every line count in the book uses.
pub fn count_code_lines(code: &str, lang: &str) -> usize {
    let comment = if lang == "python" { "#" } else { "//" };
    let quotes = ["\"\"\"", "'''"];
    let mut in_doc: Option<&str> = None;
    let mut n = 0;
    for l in code.lines() {
        let t = l.trim();
        if let Some(q) = in_doc {
            if t.contains(q) {
                in_doc = None;
            }
            continue;
        }
        if lang == "python" {
            if let Some(q) = quotes.iter().find(|q| t.starts_with(**q)) {
                if !t[3..].contains(*q) {
                    in_doc = Some(q);
                }
                continue;
            }
        }
        let cuda_comment = lang == "cuda" && (t.starts_with("/*") || t.starts_with('*'));
        if t.is_empty() || t.starts_with(comment) || cuda_comment {
            continue;
        }
        n += 1;
    }
    n
}

/// Parse a block body. Errors are (line within the block, message, hint).
pub fn parse(body: &str) -> Result<IncludeSpec, (usize, String, String)> {
    let spec: IncludeSpec = serde_yaml_ng::from_str(body).map_err(|e| {
        let line = crate::diag::yaml_line(body, e.location().map(|l| l.line()).unwrap_or(1));
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        (
            line,
            format!("include block: {msg}"),
            "an include block holds `file:` and optionally `kernel:`, `name:`, `anchor:` or `lines:`".into(),
        )
    })?;
    let ways = [
        spec.kernel.is_some(),
        spec.name.is_some(),
        spec.anchor.is_some(),
        spec.lines.is_some(),
    ];
    if ways.iter().filter(|w| **w).count() > 1 {
        return Err((
            1,
            "include block: give one of `kernel:`, `name:`, `anchor:` or `lines:`".into(),
            "pick one way to cut the file".into(),
        ));
    }
    Ok(spec)
}

/// A source named as `file#name` (a figure's `loc:` entry) as the include that cuts it: `name:`
/// for a Python def/class, `kernel:` for a CUDA function. The file must be one `include` accepts.
pub fn parse_source_ref(s: &str) -> Result<IncludeSpec, String> {
    let (file, name) = s
        .trim()
        .split_once('#')
        .ok_or_else(|| format!("`{s}` has no `#name`"))?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!(
            "`{s}`: the part after `#` must be one def, class or kernel name"
        ));
    }
    resolve(Path::new(""), file)?;
    let py = file.ends_with(".py");
    Ok(IncludeSpec {
        file: file.to_string(),
        kernel: (!py).then(|| name.to_string()),
        name: py.then(|| name.to_string()),
        anchor: None,
        lines: None,
    })
}

/// Where an include's `file:` may point: a kernel file in its area folder of kernels/ (e.g.
/// `gemm/sgemm.cu`; a file directly in kernels/ also works), or a `.py` lab file under
/// kernels/labs/. Anything else (deeper folders, `..`, absolute paths) is refused.
fn resolve(root: &Path, file: &str) -> Result<(PathBuf, &'static str), String> {
    let parts: Vec<&str> = file.split('/').collect();
    let clean = !file.starts_with('/') && parts.iter().all(|p| !p.is_empty() && *p != "." && *p != "..");
    if clean && parts.len() <= 2 && parts[0] != "labs" && !file.ends_with(".py") {
        return Ok((root.join("kernels").join(file), "cuda"));
    }
    if clean && parts.len() >= 3 && parts[0] == "labs" && file.ends_with(".py") {
        return Ok((root.join("kernels").join(file), "python"));
    }
    Err(format!(
        "`{file}`: name a kernel file by its area folder under kernels/ (e.g. gemm/sgemm.cu) or a \
         lab file under kernels/labs/ (e.g. labs/pytorch/model.py)"
    ))
}

/// The message for a `file:` that does not exist, with the area path when only the folder is
/// missing (kernels are grouped by area: `sgemm.cu` is `gemm/sgemm.cu`).
fn missing_file(root: &Path, file: &str) -> String {
    let name = file.rsplit('/').next().unwrap_or(file);
    let found = std::fs::read_dir(root.join("kernels"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir() && e.path().join(name).is_file())
        .filter_map(|e| e.file_name().to_str().map(|area| format!("{area}/{name}")))
        .find(|p| p != file);
    match found {
        Some(p) => format!("no file `kernels/{file}` (did you mean `{p}`?)"),
        None => format!("no file `kernels/{file}`"),
    }
}

/// Cut the excerpt out of `root/kernels/<file>`.
pub fn extract(root: &Path, spec: &IncludeSpec) -> Result<Excerpt, String> {
    let (path, lang) = resolve(root, &spec.file)?;
    let text = std::fs::read_to_string(&path).map_err(|_| missing_file(root, &spec.file))?;
    let lines: Vec<&str> = text.lines().collect();
    let marker = if lang == "python" { "#" } else { "//" };
    if lang == "python" && spec.kernel.is_some() {
        return Err("`kernel:` cuts CUDA files; in a .py file use `name:` (a def or class)".into());
    }
    let (a, b) = if let (Some(name), "python") = (&spec.name, lang) {
        python_span(&lines, name).ok_or_else(|| {
            format!(
                "no def or class `{name}` in kernels/{} (it has: {})",
                spec.file,
                python_names(&lines).join(", ")
            )
        })?
    } else if let Some(name) = spec.kernel.as_ref().or(spec.name.as_ref()) {
        kernel_span(&lines, name).ok_or_else(|| {
            let known: Vec<String> = kernel_names(&lines);
            format!(
                "no __global__ function `{name}` in kernels/{} (it has: {})",
                spec.file,
                known.join(", ")
            )
        })?
    } else if let Some(a) = &spec.anchor {
        let open = lines
            .iter()
            .position(|l| l.trim() == format!("{marker} ANCHOR: {a}"));
        let close = lines
            .iter()
            .position(|l| l.trim() == format!("{marker} ANCHOR_END: {a}"));
        match (open, close) {
            (Some(o), Some(c)) if c > o + 1 => (o + 1, c - 1),
            _ => {
                return Err(format!(
                    "no `{marker} ANCHOR: {a}` … `{marker} ANCHOR_END: {a}` pair in kernels/{}",
                    spec.file
                ))
            }
        }
    } else if let Some(r) = &spec.lines {
        let (x, y) = r
            .split_once('-')
            .ok_or_else(|| format!("`lines: {r}` is not a range like 10-30"))?;
        let (x, y): (usize, usize) = (
            x.trim()
                .parse()
                .map_err(|_| format!("`lines: {r}`: not a number"))?,
            y.trim()
                .parse()
                .map_err(|_| format!("`lines: {r}`: not a number"))?,
        );
        if x == 0 || y < x || y > lines.len() {
            return Err(format!(
                "`lines: {r}` is outside kernels/{} (1-{})",
                spec.file,
                lines.len()
            ));
        }
        (x - 1, y - 1)
    } else {
        (0, lines.len().saturating_sub(1))
    };
    if lines.is_empty() {
        return Err(format!("kernels/{} is empty", spec.file));
    }
    // Anchor markers are for cutting, not for reading.
    let anchor = format!("{marker} ANCHOR");
    let code: Vec<&str> = lines[a..=b]
        .iter()
        .copied()
        .filter(|l| !l.trim_start().starts_with(&anchor))
        .collect();
    Ok(Excerpt {
        code: code.join("\n"),
        first_line: a + 1,
        last_line: b + 1,
        lang,
    })
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// The def or class named on line `l`, if any.
fn python_def(l: &str) -> Option<&str> {
    let t = l.trim_start();
    let rest = t
        .strip_prefix("def ")
        .or_else(|| t.strip_prefix("async def "))
        .or_else(|| t.strip_prefix("class "))?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end]).filter(|n| !n.is_empty())
}

/// Names of the defs and classes in a Python file, in order.
pub fn python_names(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| python_def(l))
        .map(str::to_string)
        .collect()
}

/// 0-based inclusive span of `def name` / `class name`: its decorators and the comment lines
/// right above, through the last line indented deeper than the `def` (trailing blanks dropped).
fn python_span(lines: &[&str], name: &str) -> Option<(usize, usize)> {
    let at = lines.iter().position(|l| python_def(l) == Some(name))?;
    let base = indent(lines[at]);
    let mut start = at;
    while start > 0 {
        let prev = lines[start - 1];
        let t = prev.trim_start();
        let decorates = t.starts_with('@') || (t.starts_with('#') && !t.starts_with("# ANCHOR"));
        if indent(prev) == base && decorates {
            start -= 1;
        } else {
            break;
        }
    }
    let mut end = at;
    for (i, l) in lines.iter().enumerate().skip(at + 1) {
        if l.trim().is_empty() {
            continue;
        }
        // A closing bracket of a multi-line signature sits at the def's own indent.
        if indent(l) <= base && !l.trim_start().starts_with(')') {
            break;
        }
        end = i;
    }
    Some((start, end))
}

/// Names of the `__global__` functions in a file.
pub fn kernel_names(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("__global__") {
            // The name is the identifier before the first `(` on this or the next line.
            let joined = format!("{} {}", l, lines.get(i + 1).unwrap_or(&""));
            if let Some(p) = joined.find('(') {
                let before = joined[..p].trim_end();
                let name: String = before
                    .chars()
                    .rev()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let name: String = name.chars().rev().collect();
                if !name.is_empty() && name != "__launch_bounds__" {
                    out.push(name);
                    continue;
                }
                // `__global__ void __launch_bounds__(..)` then the name on the next line.
                if let Some(next) = lines.get(i + 1) {
                    if let Some(q) = next.find('(') {
                        let n: String = next[..q].trim().rsplit(' ').next().unwrap_or("").to_string();
                        if !n.is_empty() {
                            out.push(n);
                        }
                    }
                }
            }
        }
    }
    out
}

/// 0-based inclusive line span of function `name` (a `__global__` kernel or a `__device__`
/// helper, templates included): the `//` comment lines right above its declaration, through the
/// closing brace of its body.
fn kernel_span(lines: &[&str], name: &str) -> Option<(usize, usize)> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let names_it = |l: &str| {
        l.match_indices(&format!("{name}("))
            .any(|(at, _)| !l[..at].chars().next_back().is_some_and(is_ident))
    };
    let qualifier = |l: &str| l.contains("__global__") || l.contains("__device__");
    let sig = (0..lines.len()).find(|&i| {
        names_it(lines[i])
            && (i.saturating_sub(3)..=i).any(|j| qualifier(lines[j]) || lines[j].contains("template"))
    })?;
    // The declaration starts at the first of the few lines above that opens it.
    let mut start = (sig.saturating_sub(3)..=sig)
        .find(|&j| {
            let t = lines[j].trim_start();
            t.starts_with("template")
                || t.starts_with("extern")
                || qualifier(lines[j])
                || t.starts_with("static")
        })
        .unwrap_or(sig);
    while start > 0 && lines[start - 1].trim_start().starts_with("//") {
        start -= 1;
    }
    // Skip a leading separator comment like `// ---- 2. coalesced ----` only if it is a header?
    // Keep it: it names the rung, which is what a reader wants to see.
    let mut depth = 0i32;
    let mut opened = false;
    for (i, l) in lines.iter().enumerate().skip(sig) {
        let code = l.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return Some((start, i));
        }
    }
    None
}
