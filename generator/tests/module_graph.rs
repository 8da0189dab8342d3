//! No import circles: no module of the generator imports one that imports it back, directly or
//! through others. A module's use of items of its own ancestors (a child reading what its parent
//! module defines) is not an edge: that is how Rust modules are nested, not a circle between
//! stages. Everything else — `use crate::…`, `use super::…`, paths written inline, a parent's use
//! of its children — is.
//!
//! Why a test: circles crept in twice (plan ↔ plan_infer, figspec ↔ render ↔ measure::labs) while
//! each import looked harmless on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

fn modules() -> BTreeMap<Module, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let rel = p.strip_prefix(&src).unwrap().with_extension("");
        let mut m: Module = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            m.pop();
        }
        let text = std::fs::read_to_string(p).unwrap();
        // Tests inside a file may import anything; they are not part of the module graph.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(&text);
        let code: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        out.insert(m, code);
    }
    out
}

/// The deepest module a path names, resolved from module `cur`.
fn resolve(mods: &BTreeMap<Module, String>, cur: &[String], path: &[&str]) -> Module {
    let (mut base, rest): (Module, &[&str]) = match path.first() {
        Some(&"crate") => (Vec::new(), &path[1..]),
        _ => (cur.to_vec(), path),
    };
    let mut rest = rest;
    while let Some(first) = rest.first() {
        match *first {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    let mut best = base.clone();
    for seg in rest {
        base.push(seg.to_string());
        if mods.contains_key(&base) {
            best = base.clone();
        } else {
            break;
        }
    }
    best
}

/// Every path that starts at `crate`, `super` or `self`, or at a child module of `cur`.
fn paths(code: &str, cur: &[String], mods: &BTreeMap<Module, String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_alphabetic() || bytes[i] == '_' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_alphanumeric()
                    || bytes[i] == '_'
                    || (bytes[i] == ':' && bytes.get(i + 1) == Some(&':')))
            {
                i += if bytes[i] == ':' { 2 } else { 1 };
            }
            let before = if start > 0 { bytes[start - 1] } else { ' ' };
            let word: String = bytes[start..i].iter().collect();
            let segs: Vec<String> = word
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let mut child = cur.to_vec();
            child.push(segs[0].clone());
            let rooted = matches!(segs[0].as_str(), "crate" | "super" | "self") || mods.contains_key(&child);
            if segs.len() > 1 && rooted && before != ':' && !before.is_alphanumeric() {
                out.push(segs);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Plus the `{a, b::c}` groups of `use` lines, which the scan above sees only up to the brace.
fn use_groups(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for stmt in code.split(';') {
        let Some(u) = stmt
            .trim_start()
            .strip_prefix("use ")
            .or_else(|| stmt.trim_start().strip_prefix("pub use "))
        else {
            continue;
        };
        let Some(open) = u.find('{') else { continue };
        let prefix: Vec<String> = u[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let inner = &u[open + 1..u.rfind('}').unwrap_or(u.len())];
        for part in inner.split(',') {
            let part = part
                .trim()
                .split(" as ")
                .next()
                .unwrap_or("")
                .split('{')
                .next()
                .unwrap_or("");
            let mut p = prefix.clone();
            p.extend(
                part.split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && *s != "self")
                    .map(String::from),
            );
            out.push(p);
        }
    }
    out
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mods = modules();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, code) in &mods {
        let mut found = paths(code, m, &mods);
        found.extend(use_groups(code));
        let targets = edges.entry(m.clone()).or_default();
        for p in found {
            let refs: Vec<&str> = p.iter().map(String::as_str).collect();
            let t = resolve(&mods, m, &refs);
            let ancestor = t.len() < m.len() && m[..t.len()] == t[..];
            if t != *m && !ancestor && mods.contains_key(&t) {
                targets.insert(t);
            }
        }
    }
    // A circle: a module reachable from one of its own targets.
    let mut circles = Vec::new();
    for (m, targets) in &edges {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&Module> = targets.iter().collect();
        while let Some(t) = stack.pop() {
            if t == m {
                circles.push(m.join("::"));
                break;
            }
            if seen.insert(t.clone()) {
                stack.extend(edges.get(t).into_iter().flatten());
            }
        }
    }
    assert!(edges.len() > 50, "the scan found the modules");
    assert!(circles.is_empty(), "modules in an import circle: {circles:?}");
}
