//! What a ```` ```figure ```` block in a card may ask for, and its checking.
//!
//! Kept apart from rendering so that `check` can reject an unknown benchmark or view without
//! drawing anything.

mod devices;

use serde::Deserialize;
use std::collections::BTreeMap;

pub use devices::Devices;

/// A figure block: a measured benchmark view, or a calculator computed at build time.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    Bench(Box<FigureSpec>),
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

/// What a figure block may name besides the kernel families: the lab families the manifests
/// declare (see [`lab_families`]) and the views the renderer draws.
///
/// Why handed in: the view names are the renderer's registries (`render::figures::VIEW_NAMES`,
/// `LAB_VIEW_NAMES`), and the renderer reads this module's types; taking the names as an argument
/// keeps `check` and drawing in agreement without the two modules importing each other.
pub struct Known<'a> {
    pub labs: &'a [String],
    pub views: &'a [&'a str],
    pub lab_views: &'a [&'a str],
}

/// Parse any figure block: `calc:` blocks go to the calculators, the rest are benchmark views.
pub fn parse_figure(body: &str, known: &Known) -> Result<Figure, (usize, String, String)> {
    let is_calc = body.lines().any(|l| l.trim_start().starts_with("calc:"));
    if is_calc {
        crate::calc::parse(body).map(Figure::Calc)
    } else {
        parse(body, known).map(|s| Figure::Bench(Box::new(s)))
    }
}

/// The figure families that labs provide: the `family` of every manifest entry, deduplicated.
pub fn lab_families(labs: &[crate::measure::labs::manifest::Lab]) -> Vec<String> {
    let mut v: Vec<String> = labs.iter().map(|l| l.family.clone()).collect();
    v.sort();
    v.dedup();
    v
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
    /// Lab figures: the value drawn — `time` (median ms, the default), `tflops`, `gbps`, or a
    /// key of the records' `metrics`.
    #[serde(default)]
    pub metric: Option<String>,
    /// Lab figures: keep only records whose params have these values.
    #[serde(default, rename = "where")]
    pub filter: Option<BTreeMap<String, u64>>,
    /// Lab figures: keep only these variants, drawn in this order.
    #[serde(default)]
    pub variants: Option<Vec<String>>,
    /// Lab `scaling` figures: the param on the x axis (default: the one param that varies).
    #[serde(default)]
    pub x: Option<String>,
    /// Lab `curve` figures: which named series of each record to draw.
    #[serde(default)]
    pub series: Option<String>,
    /// Lab `records` figures: which named table of each record to print.
    #[serde(default)]
    pub table: Option<String>,
    /// Lab `table` figures: lines of code per variant, counted from the source named as
    /// `file#name` (a `.cu` kernel or a Python def/class, as `include` blocks name them).
    #[serde(default)]
    pub loc: Option<BTreeMap<String, String>>,
    /// Which machine's results to draw, matched case-insensitively in the device name: one
    /// (`device: H200`, even where the reader's GPU measured the family), several side by side
    /// (`device: [H100, H200]`), or every machine with results (`device: all`).
    #[serde(default)]
    pub device: Option<Devices>,
    /// Record views: other families drawn with this one on the same axes (`compare: [pt_train]`
    /// beside `bench: jax_train`), each record named with its framework; the same `where:`,
    /// `variants:` and machine apply.
    #[serde(default)]
    pub compare: Option<Vec<String>>,
}

impl FigureSpec {
    /// A plain spec (used by tests and callers that build one in code).
    pub fn new(bench: &str, show: &str) -> FigureSpec {
        FigureSpec {
            bench: bench.into(),
            show: show.into(),
            caption: None,
            size: None,
            metric: None,
            filter: None,
            variants: None,
            x: None,
            series: None,
            table: None,
            loc: None,
            device: None,
            compare: None,
        }
    }

    /// Whether this figure uses the record views (those of lab figures): a lab family always
    /// does; a kernel family does when it asks for a metric, filter, series or table.
    pub fn record_view(&self) -> bool {
        if self.show == CROSS_DEVICE_VIEW {
            // The cross-device table filters with `where:` and `variants:` too, but it is a
            // kernel view: one row per item, one column per machine.
            return false;
        }
        self.lab_keys().iter().any(|(_, set)| *set) || matches!(self.show.as_str(), "curve" | "records")
    }

    /// The keys only record views take, with whether each is set.
    fn lab_keys(&self) -> [(&'static str, bool); 8] {
        [
            ("compare", self.compare.is_some()),
            ("metric", self.metric.is_some()),
            ("where", self.filter.is_some()),
            ("variants", self.variants.is_some()),
            ("x", self.x.is_some()),
            ("series", self.series.is_some()),
            ("table", self.table.is_some()),
            ("loc", self.loc.is_some()),
        ]
    }
}

/// The view that compares machines: a table with one column per device and measured ratios.
pub const CROSS_DEVICE_VIEW: &str = "devices";

fn default_show() -> String {
    "ladder".into()
}

/// Benchmark families a card may draw.
/// The family the CPU roofline benchmark writes (measured by `cpubench`, not the GPU harness).
pub const CPU_BENCH: &str = crate::measure::CPU_FAMILY;

/// Benchmark families a card may draw: every GPU family of the harness, and the reader's CPU.
pub fn benches() -> Vec<&'static str> {
    let mut v = crate::measure::families();
    v.push(CPU_BENCH);
    v
}

/// Every key of a measured-figure block, with what it does: printed by `hdlc figspec`.
pub const KEYS: &[(&str, &str)] = &[
    (
        "bench",
        "the benchmark family drawn (a kernel family, `cpu`, or a lab family)",
    ),
    ("show", "the view (default ladder); see the views above"),
    ("caption", "text shown above the provenance line"),
    (
        "size",
        "kernel figures: the problem size drawn (default: the largest measured)",
    ),
    (
        "device",
        "the machine: one name (`H200`, case-insensitive part of the device name), a list drawn \
         side by side on one axis (`[H100, H200]`), or `all` (every machine with results, the \
         reader's GPU included); `show: devices` compares them in one table",
    ),
    (
        "metric",
        "lab/record views: time (default), tflops, gbps, or a key of the records' metrics",
    ),
    (
        "where",
        "record views and `devices`: keep records with these params, e.g. `{batch: 1}`",
    ),
    (
        "variants",
        "record views and `devices`: keep these variants, in this order",
    ),
    ("x", "record `scaling`: the param on the x axis"),
    (
        "compare",
        "record views: other families drawn on the same axes, e.g. `compare: [pt_train]`",
    ),
    ("series", "`curve`: the named series drawn"),
    ("table", "`records`: the named table printed"),
    (
        "loc",
        "lab `table`: lines of code per variant, `{variant: file#name}`",
    ),
];

/// What a figure block may ask for, as text: families, views and keys (`hdlc figspec`).
pub fn describe(known: &Known) -> String {
    let mut out = String::new();
    out.push_str(&format!("benchmarks (bench:): {}\n", benches().join(", ")));
    out.push_str("  lab families come from kernels/labs/*/labs.yaml; calculators use `calc:` instead\n");
    out.push_str(&format!(
        "views of a kernel family (show:): {}\n",
        known.views.join(", ")
    ));
    out.push_str(&format!(
        "  `{CROSS_DEVICE_VIEW}`: a table with one column per machine, the measured ratio to the first, \
         the datasheet ratio and which one the measurement follows\n"
    ));
    out.push_str(&format!(
        "views of a lab family (show:): {}\n",
        known.lab_views.join(", ")
    ));
    out.push_str("keys:\n");
    for (k, what) in KEYS {
        out.push_str(&format!("  {:<10}{what}\n", format!("{k}:")));
    }
    out
}

/// Parse and check a figure block body. Errors are (line offset within the block, message, hint).
/// `labs` are the lab families the manifests declare.
pub fn parse(body: &str, known: &Known) -> Result<FigureSpec, (usize, String, String)> {
    let labs = known.labs;
    let spec: FigureSpec = serde_yaml_ng::from_str(body).map_err(|e| {
        let line = crate::diag::yaml_line(body, e.location().map(|l| l.line()).unwrap_or(1));
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        (
            line,
            format!("figure block: {msg}"),
            "a figure block holds `bench:`, `show:` and optionally `caption:`, `size:` and \
             `device:`; lab figures also `metric:`, `where:`, `variants:`, `x:`, `series:`, \
             `table:`, `loc:` (`hdlc figspec` lists them all)"
                .to_string(),
        )
    })?;
    if let Some((msg, hint)) = spec.device.as_ref().and_then(Devices::problem) {
        return Err((line_of(body, "device"), msg, hint));
    }
    if let Some(other) = spec
        .compare
        .iter()
        .flatten()
        .find(|f| !labs.contains(f) && !benches().contains(&f.as_str()))
    {
        return Err((
            line_of(body, "compare"),
            format!("unknown benchmark `{other}` in `compare:`"),
            "name other families of the same kind, e.g. `compare: [pt_train]`".into(),
        ));
    }
    if labs.contains(&spec.bench) {
        return check_lab(body, spec, known.lab_views);
    }
    if !benches().contains(&spec.bench.as_str()) {
        let mut known: Vec<String> = benches().iter().map(|s| s.to_string()).collect();
        known.extend(labs.iter().cloned());
        return Err((
            line_of(body, "bench"),
            format!("unknown benchmark `{}`", spec.bench),
            format!(
                "known benchmarks: {} (lab families come from kernels/labs/*/labs.yaml)",
                known.join(", ")
            ),
        ));
    }
    if spec.show == CROSS_DEVICE_VIEW {
        if let Some((key, _)) = spec
            .lab_keys()
            .into_iter()
            .find(|(k, set)| *set && !matches!(*k, "where" | "variants"))
        {
            return Err((
                line_of(body, key),
                format!("`{key}:` does not apply to `show: {CROSS_DEVICE_VIEW}`"),
                "the cross-device table takes `device:`, `size:`, `where:`, `variants:` and `caption:`"
                    .into(),
            ));
        }
        if matches!(&spec.device, Some(d) if d.single().is_some()) {
            return Err((
                line_of(body, "device"),
                format!("`show: {CROSS_DEVICE_VIEW}` compares machines, but `device:` names one"),
                "list two or more (`device: [H100, H200]`) or write `device: all` (the default)".into(),
            ));
        }
    }
    if spec.record_view() {
        // A kernel family drawn the way lab figures are (a chosen metric, filtered records):
        // the same views and checks apply, since both are lists of verified records.
        return check_lab(body, spec, known.lab_views);
    }
    if !known.views.contains(&spec.show.as_str()) {
        return Err((
            line_of(body, "show"),
            format!("unknown figure view `{}`", spec.show),
            format!("known views: {}", known.views.join(", ")),
        ));
    }
    Ok(spec)
}

/// The checks of a lab figure: its view exists and the view's required key is there.
fn check_lab(
    body: &str,
    spec: FigureSpec,
    lab_views: &[&str],
) -> Result<FigureSpec, (usize, String, String)> {
    let err = |key: &str, msg: String, hint: &str| Err((line_of(body, key), msg, hint.to_string()));
    if !lab_views.contains(&spec.show.as_str()) {
        return err(
            "show",
            format!("unknown lab figure view `{}`", spec.show),
            &format!("lab figures show: {}", lab_views.join(", ")),
        );
    }
    if spec.size.is_some() {
        return err(
            "size",
            "`size:` is for kernel figures".into(),
            "pick lab records with `where: {param: value}`",
        );
    }
    match spec.show.as_str() {
        "curve" if spec.series.is_none() => {
            return err(
                "show",
                "`show: curve` needs `series:`".into(),
                "e.g. `series: loss`",
            )
        }
        "records" if spec.table.is_none() => {
            return err(
                "show",
                "`show: records` needs `table:`".into(),
                "e.g. `table: top_kernels`",
            )
        }
        _ => {}
    }
    if let Some(m) = &spec.metric {
        if m.trim().is_empty() {
            return err(
                "metric",
                "empty `metric:`".into(),
                "time, tflops, gbps or a key of the records' metrics",
            );
        }
    }
    if let Some(v) = &spec.variants {
        if v.is_empty() {
            return err(
                "variants",
                "empty `variants:` list".into(),
                "leave it out to draw every variant",
            );
        }
    }
    if let Some(loc) = &spec.loc {
        for (variant, source) in loc {
            if let Err(e) = crate::include::parse_source_ref(source) {
                return err("loc", format!("`loc:` of `{variant}`: {e}"), "write `file#name`, e.g. labs/triton/rmsnorm.py#rmsnorm_kernel or rowwise/rmsnorm.cu#rmsnorm_block_vec4");
            }
        }
    }
    Ok(spec)
}

fn line_of(body: &str, key: &str) -> usize {
    body.lines()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .map(|i| i + 1)
        .unwrap_or(1)
}
