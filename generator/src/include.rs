//! Kernel source on a page: ```` ```include ```` blocks pull code from `kernels/*.cu` at build
//! time, so a card can never show code that differs from what was measured.
//!
//! ```text
//! ```include
//! file: sgemm.cu          # a file in kernels/
//! kernel: sgemm_naive     # optional: one __global__ function, with the comment block above it
//! anchor: load_tile       # or: the lines between `// ANCHOR: load_tile` and `// ANCHOR_END: load_tile`
//! lines: 1-20             # or: a 1-based inclusive line range (fragile: prefer kernel/anchor)
//! ```
//! ```

use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IncludeSpec {
    pub file: String,
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default)]
    pub anchor: Option<String>,
    #[serde(default)]
    pub lines: Option<String>,
}

/// Code cut from a kernel file, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Excerpt {
    pub code: String,
    pub first_line: usize,
    pub last_line: usize,
}

/// Parse a block body. Errors are (line within the block, message, hint).
pub fn parse(body: &str) -> Result<IncludeSpec, (usize, String, String)> {
    let spec: IncludeSpec = serde_yaml_ng::from_str(body).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(1);
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        (
            line,
            format!("include block: {msg}"),
            "an include block holds `file:` and optionally `kernel:` or `lines:`".into(),
        )
    })?;
    let ways = [spec.kernel.is_some(), spec.anchor.is_some(), spec.lines.is_some()];
    if ways.iter().filter(|w| **w).count() > 1 {
        return Err((
            1,
            "include block: give one of `kernel:`, `anchor:` or `lines:`".into(),
            "pick one way to cut the file".into(),
        ));
    }
    Ok(spec)
}

/// Cut the excerpt out of `root/kernels/<file>`.
pub fn extract(root: &Path, spec: &IncludeSpec) -> Result<Excerpt, String> {
    if spec.file.contains("..") || spec.file.contains('/') {
        return Err(format!("`{}`: name a file directly inside kernels/", spec.file));
    }
    let path = root.join("kernels").join(&spec.file);
    let text =
        std::fs::read_to_string(&path).map_err(|_| format!("no kernel file `kernels/{}`", spec.file))?;
    let lines: Vec<&str> = text.lines().collect();
    let (a, b) = if let Some(name) = &spec.kernel {
        kernel_span(&lines, name).ok_or_else(|| {
            let known: Vec<String> = kernel_names(&lines);
            format!(
                "no __global__ function `{name}` in kernels/{} (it has: {})",
                spec.file,
                known.join(", ")
            )
        })?
    } else if let Some(a) = &spec.anchor {
        let open = lines.iter().position(|l| l.trim() == format!("// ANCHOR: {a}"));
        let close = lines
            .iter()
            .position(|l| l.trim() == format!("// ANCHOR_END: {a}"));
        match (open, close) {
            (Some(o), Some(c)) if c > o + 1 => (o + 1, c - 1),
            _ => {
                return Err(format!(
                    "no `// ANCHOR: {a}` … `// ANCHOR_END: {a}` pair in kernels/{}",
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
    // Anchor markers are for cutting, not for reading.
    let code: Vec<&str> = lines[a..=b]
        .iter()
        .copied()
        .filter(|l| !l.trim_start().starts_with("// ANCHOR"))
        .collect();
    Ok(Excerpt {
        code: code.join("\n"),
        first_line: a + 1,
        last_line: b + 1,
    })
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
