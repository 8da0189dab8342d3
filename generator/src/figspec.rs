//! What a ```` ```figure ```` block in a card may ask for, and its checking.
//!
//! Kept apart from rendering so that `check` can reject an unknown benchmark or view without
//! drawing anything.

use serde::Deserialize;

/// A figure block: a measured benchmark view, or a calculator computed at build time.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    Bench(FigureSpec),
    Calc(crate::calc::CalcSpec),
}

impl Figure {
    /// The benchmark family this figure draws from, if it is a measured figure.
    pub fn bench(&self) -> Option<&str> {
        match self {
            Figure::Bench(b) => Some(&b.bench),
            Figure::Calc(_) => None,
        }
    }
}

/// Parse any figure block: `calc:` blocks go to the calculators, the rest are benchmark views.
pub fn parse_figure(body: &str) -> Result<Figure, (usize, String, String)> {
    let is_calc = body.lines().any(|l| l.trim_start().starts_with("calc:"));
    if is_calc {
        crate::calc::parse(body).map(Figure::Calc)
    } else {
        parse(body).map(Figure::Bench)
    }
}

/// A measured-figure request as written in a card.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// Benchmark family whose measured results are drawn.
    pub bench: String,
    /// Which view: ladder, roofline, scaling, table.
    #[serde(default = "default_show")]
    pub show: String,
    /// Optional caption text shown above the provenance line.
    #[serde(default)]
    pub caption: Option<String>,
    /// Optional problem size to draw (e.g. 4096 for sgemm); default is the family's largest.
    #[serde(default)]
    pub size: Option<u64>,
}

fn default_show() -> String {
    "ladder".into()
}

/// Benchmark families a card may draw.
/// The family the CPU roofline benchmark writes (measured by `cpubench`, not the GPU harness).
pub const CPU_BENCH: &str = "cpu";

/// Benchmark families a card may draw: every GPU family of the harness, and the reader's CPU.
pub fn benches() -> Vec<&'static str> {
    let mut v = crate::measure::families().to_vec();
    v.push(CPU_BENCH);
    v
}
/// Views of a benchmark family: the renderer's registry, so `check` and drawing always agree.
pub const VIEWS: &[&str] = &crate::render::figures::VIEW_NAMES;

/// Parse and check a figure block body. Errors are (line offset within the block, message, hint).
pub fn parse(body: &str) -> Result<FigureSpec, (usize, String, String)> {
    let spec: FigureSpec = serde_yaml_ng::from_str(body).map_err(|e| {
        let line = e.location().map(|l| l.line()).unwrap_or(1);
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        (
            line,
            format!("figure block: {msg}"),
            "a figure block holds `bench:`, `show:` and optionally `caption:` and `size:`".to_string(),
        )
    })?;
    if !benches().contains(&spec.bench.as_str()) {
        return Err((
            line_of(body, "bench"),
            format!("unknown benchmark `{}`", spec.bench),
            format!("known benchmarks: {}", benches().join(", ")),
        ));
    }
    if !VIEWS.contains(&spec.show.as_str()) {
        return Err((
            line_of(body, "show"),
            format!("unknown figure view `{}`", spec.show),
            format!("known views: {}", VIEWS.join(", ")),
        ));
    }
    Ok(spec)
}

fn line_of(body: &str, key: &str) -> usize {
    body.lines()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .map(|i| i + 1)
        .unwrap_or(1)
}
