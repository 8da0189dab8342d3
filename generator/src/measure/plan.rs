//! What a plan is made of: the [`Item`] (one variant at one parameter set) and the helpers every
//! family's plan is written with — a teaching ladder with its baseline, parameters, run order.
//! The plans themselves live beside their families (`families/<name>.rs`).
//!
//! Pure data, no GPU: the cache check and the tests use it. Memory-bound families are sized to
//! move at least 512 MiB each way, ten times an H100's 50 MB L2, so the cache cannot flatter them
//! (the L2 is also flushed between runs).

use std::collections::BTreeMap;

/// One (variant, parameters) point to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub family: &'static str,
    pub variant: &'static str,
    pub label: &'static str,
    pub rung: u32,
    pub baseline: bool,
    /// The kernels/*.cu file (None for library baselines: memcpy, cuBLAS).
    pub source_file: Option<&'static str>,
    pub params: BTreeMap<String, u64>,
    /// Deliberately not measured, with the reason (recorded as `FailStage::Unsupported`).
    pub skip: Option<&'static str>,
}

impl Item {
    /// A parameter that the plan guarantees is present.
    pub fn p(&self, name: &str) -> u64 {
        self.params.get(name).copied().unwrap_or(0)
    }

    /// "sgemm/sgemm_naive m=1024 n=1024 k=1024"
    pub fn describe(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}/{} {}", self.family, self.variant, params.join(" "))
    }
}

pub(crate) fn params(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

pub(crate) struct V(pub &'static str, pub &'static str);

pub(crate) fn ladder(
    family: &'static str,
    file: &'static str,
    variants: &[V],
    p: &BTreeMap<String, u64>,
    baseline: (&'static str, &'static str),
) -> Vec<Item> {
    let mut out: Vec<Item> = variants
        .iter()
        .enumerate()
        .map(|(i, V(variant, label))| Item {
            family,
            variant,
            label,
            rung: i as u32 + 1,
            baseline: false,
            source_file: Some(file),
            params: p.clone(),
            skip: None,
        })
        .collect();
    out.push(Item {
        family,
        variant: baseline.0,
        label: baseline.1,
        rung: variants.len() as u32 + 1,
        baseline: true,
        source_file: None,
        params: p.clone(),
        skip: None,
    });
    out
}

pub(crate) const MEMCPY: (&str, &str) = ("memcpy", "device memcpy (cuMemcpyDtoD)");

/// 2^28 floats: 1 GiB per array.
pub const N_1GIB: u64 = 1 << 28;

/// Move the items of `variants` to the end of the run order, keeping their own order (shape by
/// shape, so the inputs a shape's variants share are made once for them). A device fault (a bad
/// address, a trapped deadlock) poisons the whole CUDA context for the rest of the process, so
/// the rungs built from the most intricate machinery (TMA and mbarriers, hand-laid tensor-core
/// fragments) run after every other number is safe. Results files sort their records, so the
/// order leaves no trace there.
pub(crate) fn run_last(items: Vec<Item>, variants: &[&str]) -> Vec<Item> {
    let (last, mut first): (Vec<Item>, Vec<Item>) =
        items.into_iter().partition(|i| variants.contains(&i.variant));
    first.extend(last);
    first
}
