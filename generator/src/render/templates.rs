//! The page templates: embedded in the binary, or read from a folder (used by `serve`, so that
//! editing a template reloads the page without recompiling).

use std::path::Path;

const TEMPLATES: &[(&str, &str)] = &[
    ("card.md", include_str!("templates/card.md")),
    ("path.md", include_str!("templates/path.md")),
    ("index.md", include_str!("templates/index.md")),
    ("map.md", include_str!("templates/map.md")),
    ("cards.md", include_str!("templates/cards.md")),
    ("SUMMARY.md", include_str!("templates/SUMMARY.md")),
];

/// The template sources by name: from `dir` where it has the file, else the embedded one.
pub fn sources(dir: Option<&Path>) -> anyhow::Result<Vec<(String, String)>> {
    let mut sources = Vec::with_capacity(TEMPLATES.len());
    for (name, embedded) in TEMPLATES {
        let text = match dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
            Some(p) => std::fs::read_to_string(&p)?,
            None => embedded.to_string(),
        };
        sources.push((name.to_string(), text));
    }
    Ok(sources)
}

/// The templates compiled, with autoescaping off (pages are Markdown with inline HTML; the
/// templates escape what they must with `| escape`).
pub fn compile(sources: Vec<(String, String)>) -> anyhow::Result<tera::Tera> {
    let mut t = tera::Tera::default();
    t.add_raw_templates(sources)
        .map_err(|e| anyhow::anyhow!("page templates: {e:?}"))?;
    t.autoescape_on(vec![]);
    Ok(t)
}
