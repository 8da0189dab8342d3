//! Calculators: figures and tables computed in Rust at build time from inputs written in a
//! card (`calc:` figure blocks), so worked numbers on a page can never drift from the formulas.
//!
//! Why here and not in the card: the authoring rule is that every number in the book is either
//! measured, derived step by step on the page, or cited. A calculator is the fourth kind: the
//! inputs are on the page, the arithmetic is in this module (exact integers in u128 where they
//! are counts, f64 only for rates and ratios), and its unit tests hold it to hand-worked cases.
//!
//! A block looks like (the syntax the authoring brief documents):
//!
//! ```text
//! calc: matmul          # a comment may follow any line
//! m: 4096
//! n: 4096
//! k: 4096
//! dtype: bf16
//! ```
//!
//! Kinds: `matmul`, `training-memory`, `transformer-shapes`, `float-formats`; for the inference
//! paths `kv-cache`, `inference-roofline`, `paged-kv`; for the parallelism paths
//! `parallel-memory`, `collective`, `pipeline`, `parallel-explorer`; every kind also
//! takes an optional `caption:`. Unknown keys, missing keys and bad values are errors that name
//! the line within the block and list what is allowed; nothing here panics on input.
//!
//! Output: one HTML block (`<figure class="hdlc-figure hdlc-calc">` holding inline SVG and/or a
//! table, and a `<figcaption>` that lists the inputs and marks datasheet figures), with no blank
//! line and no `<?xml` header so CommonMark keeps it one block; deterministic for the same input.

pub mod collective;
pub mod explorer;
pub mod floats;
pub mod fmt;
pub mod html;
pub mod inference;
pub mod kv;
pub mod kv_cache;
pub mod matmul;
pub mod memory;
pub mod memory_bars;
pub mod models;
pub mod paged;
pub mod parallel_memory;
pub mod pipeline;
pub mod shapes;

use crate::measure::results::ResultsFile;
use std::path::PathBuf;

pub use floats::FloatFormatsSpec;
pub use matmul::MatmulSpec;
pub use memory::ModelRunSpec;

/// The calculator kinds, in the order hints list them.
pub const KINDS: &[&str] = &[
    "matmul",
    "training-memory",
    "transformer-shapes",
    "float-formats",
    "kv-cache",
    "inference-roofline",
    "paged-kv",
    "parallel-memory",
    "collective",
    "pipeline",
    "parallel-explorer",
];

/// A parsed `calc:` block.
#[derive(Debug, Clone, PartialEq)]
pub enum CalcSpec {
    Matmul(MatmulSpec),
    TrainingMemory(ModelRunSpec),
    TransformerShapes(ModelRunSpec),
    FloatFormats(FloatFormatsSpec),
    KvCache(kv_cache::KvCacheSpec),
    InferenceRoofline(inference::InferenceSpec),
    PagedKv(paged::PagedSpec),
    ParallelMemory(parallel_memory::ParallelMemorySpec),
    Collective(collective::CollectiveSpec),
    Pipeline(pipeline::PipelineSpec),
    ParallelExplorer(explorer::ExplorerSpec),
}

impl CalcSpec {
    /// The kind as written after `calc:`.
    pub fn kind(&self) -> &'static str {
        match self {
            CalcSpec::Matmul(_) => "matmul",
            CalcSpec::TrainingMemory(_) => "training-memory",
            CalcSpec::TransformerShapes(_) => "transformer-shapes",
            CalcSpec::FloatFormats(_) => "float-formats",
            CalcSpec::KvCache(_) => "kv-cache",
            CalcSpec::InferenceRoofline(_) => "inference-roofline",
            CalcSpec::PagedKv(_) => "paged-kv",
            CalcSpec::ParallelMemory(_) => "parallel-memory",
            CalcSpec::Collective(_) => "collective",
            CalcSpec::Pipeline(_) => "pipeline",
            CalcSpec::ParallelExplorer(_) => "parallel-explorer",
        }
    }
}

/// Parse a `calc:` block. Errors: (line within the block, 1-based; message; hint).
pub fn parse(body: &str) -> Result<CalcSpec, (usize, String, String)> {
    let fields = kv::Fields::new(kv::entries(body)?);
    let kind_hint = || format!("calculators: {}", KINDS.join(", "));
    let kind = match fields.scalar("?", "calc", &[]) {
        Ok(Some((k, _))) => k,
        _ => {
            return Err((
                fields.calc_line,
                "calc block without a calculator name after `calc:`".into(),
                kind_hint(),
            ))
        }
    };
    match kind.as_str() {
        "matmul" => matmul::parse(&fields).map(CalcSpec::Matmul),
        "training-memory" => memory::parse_run(&kind, &fields).map(CalcSpec::TrainingMemory),
        "transformer-shapes" => memory::parse_run(&kind, &fields).map(CalcSpec::TransformerShapes),
        "float-formats" => floats::parse(&fields).map(CalcSpec::FloatFormats),
        "kv-cache" => kv_cache::parse(&fields).map(CalcSpec::KvCache),
        "inference-roofline" => inference::parse(&fields).map(CalcSpec::InferenceRoofline),
        "paged-kv" => paged::parse(&fields).map(CalcSpec::PagedKv),
        "parallel-memory" => parallel_memory::parse(&fields).map(CalcSpec::ParallelMemory),
        "collective" => collective::parse(&fields).map(CalcSpec::Collective),
        "pipeline" => pipeline::parse(&fields).map(CalcSpec::Pipeline),
        "parallel-explorer" => explorer::parse(&fields).map(CalcSpec::ParallelExplorer),
        other => Err((
            fields.calc_line,
            format!("unknown calculator `calc: {other}`"),
            kind_hint(),
        )),
    }
}

/// Render a calculator as one HTML block (no blank lines, no leading or trailing whitespace).
///
/// `files` are the results files of the build; only `calc: matmul` reads them (for a measured
/// CPU roofline, family "cpu").
pub fn render(spec: &CalcSpec, files: &[(PathBuf, ResultsFile)]) -> Result<String, String> {
    let html = match spec {
        CalcSpec::Matmul(s) => matmul::render(s, files),
        CalcSpec::TrainingMemory(s) => memory::render(s),
        CalcSpec::TransformerShapes(s) => shapes::render(s),
        CalcSpec::FloatFormats(s) => floats::render(s),
        CalcSpec::KvCache(s) => kv_cache::render(s),
        CalcSpec::InferenceRoofline(s) => inference::render(s),
        CalcSpec::PagedKv(s) => paged::render(s),
        CalcSpec::ParallelMemory(s) => parallel_memory::render(s),
        CalcSpec::Collective(s) => collective::render(s),
        CalcSpec::Pipeline(s) => pipeline::render(s)?,
        CalcSpec::ParallelExplorer(s) => explorer::render(s),
    };
    // A blank line would end the HTML block in CommonMark and spill the rest as text.
    if html.contains("<?xml") || html.lines().any(|l| l.trim().is_empty()) {
        return Err(format!(
            "calc: {}: internal error: output would break the HTML block",
            spec.kind()
        ));
    }
    Ok(html.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        for (body, kind) in [
            ("calc: matmul\nm: 1\nn: 2\nk: 3\n", "matmul"),
            (
                "calc: training-memory\nmodel: gpt2-124m\nbatch: 8\nseq: 1024\n",
                "training-memory",
            ),
            (
                "calc: transformer-shapes\nmodel: llama3-8b\nbatch: 1\nseq: 8192\n",
                "transformer-shapes",
            ),
            ("calc: float-formats\n", "float-formats"),
            (
                "calc: kv-cache\nmodel: llama3-8b\nbatch: 1\ncontext: 8\n",
                "kv-cache",
            ),
            (
                "calc: inference-roofline\nmodel: llama3-8b\ncontext: 8\nbatches: [1]\n",
                "inference-roofline",
            ),
            (
                "calc: paged-kv\nmax_len: 64\nblocks: [16]\nlengths: [5]\n",
                "paged-kv",
            ),
        ] {
            assert_eq!(parse(body).unwrap().kind(), kind);
        }
    }

    #[test]
    fn unknown_kind() {
        let e = parse("\ncalc: matmull\n").unwrap_err();
        assert_eq!(e.0, 2);
        assert!(e.2.contains("training-memory"));
    }
}
