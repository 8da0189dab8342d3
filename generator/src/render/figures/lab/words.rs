//! The words of lab figures: titles, row labels, what a "% of baseline" means, the framework
//! versions of the provenance.
//!
//! Why apart: drawing code should not also decide how a record is named; these helpers turn
//! records into the reader's words (through `metric_names`) in one place for every lab view.

use super::*;

/// The framework a family belongs to, for labels of compared records: the first word of its
/// title ("JAX 학습 (hdlc-lab)" → "JAX").
pub(super) fn framework_of(family: &str) -> String {
    let title = crate::metric_names::family_title(family);
    title.split_whitespace().next().unwrap_or(family).to_string()
}

/// The figure's title subject: its family, or its families with `compare:`.
pub(super) fn subject(spec: &FigureSpec) -> String {
    match &spec.compare {
        Some(others) => std::iter::once(&spec.bench)
            .chain(others)
            .map(|f| crate::metric_names::family_title(f))
            .collect::<Vec<_>>()
            .join(" 대 "),
        None => crate::metric_names::family_title(&spec.bench),
    }
}

/// A lab chart's title: its subject, then what every drawn record shares.
pub(super) fn lab_title(c: &LabCtx) -> String {
    let fixed = fixed_params(&c.recs);
    if fixed.is_empty() {
        subject(c.spec)
    } else {
        format!("{} · {fixed}", subject(c.spec))
    }
}

/// A record's label, with the varying params in words when the same variant appears more than
/// once ("eager PyTorch · columns 4,096").
pub(super) fn row_label(r: &Record, recs: &[&Record], varying: &[String]) -> String {
    let repeated = recs.iter().filter(|o| o.variant == r.variant).count() > 1;
    if !repeated || varying.is_empty() {
        return r.label.clone();
    }
    let ps = crate::metric_names::params_text(
        &r.family,
        varying
            .iter()
            .filter_map(|k| r.params.get(k).map(|v| (k.as_str(), *v))),
    );
    if ps.is_empty() {
        r.label.clone()
    } else {
        format!("{} · {ps}", r.label)
    }
}

/// The params every selected record shares, in words: what a title says was held fixed.
pub(super) fn fixed_params(recs: &[&Record]) -> String {
    let Some(first) = recs.first() else {
        return String::new();
    };
    let varying = varying_params(recs);
    let mut keys: Vec<&String> = first
        .params
        .keys()
        .filter(|k| !varying.contains(k) && recs.iter().all(|r| r.params.contains_key(*k)))
        .collect();
    keys.sort_by_key(|k| display_rank(k));
    crate::metric_names::params_text(
        &first.family,
        keys.into_iter().map(|k| (k.as_str(), first.params[k])),
    )
}

/// What "% of baseline" means for this metric, in words, for an axis line or a caption.
pub(super) fn vs_baseline_words(c: &LabCtx, base: &Record) -> String {
    let how = if c.metric.lower_is_better() {
        "기준선 값 ÷ 이 값"
    } else {
        "이 값 ÷ 기준선 값"
    };
    format!(
        "%: 기준선 {}에 대한 비율 ({how}) — 100%보다 크면 기준선보다 좋음",
        base.label
    )
}

/// The framework versions of the records drawn, e.g. "python 3.12.3 · torch 2.11.0".
pub(super) fn frameworks(used: &[&Record]) -> String {
    let mut all: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in used {
        for (k, v) in &r.provenance.frameworks {
            all.entry(k).or_default().insert(v);
        }
    }
    all.iter()
        .map(|(k, vs)| {
            format!(
                "{} {}",
                esc(k),
                vs.iter().map(|v| esc(v)).collect::<Vec<_>>().join("/")
            )
        })
        .collect::<Vec<_>>()
        .join(" · ")
}
