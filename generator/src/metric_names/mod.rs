//! Names of measured quantities in words: metric keys, parameter keys and benchmark families as a
//! reader should see them, with their units, display scale and which direction is better.
//!
//! Why one table: the records name what they measured with identifiers (`tokens_per_s`,
//! `ttft_p50_ms`, `peak_mem_bytes`, `kv_budget_tokens`), which are right for code and wrong on a
//! page. Figures, tables and inline values in prose must all say "TTFT p50, 1.2 s (↓ lower is
//! better)" the same way, so the words, the unit, the switch from ms to s and the better direction
//! live here once. Pure data and lookups: no dependency on the renderer or the harness, so any
//! stage may use it.
//!
//! Use: [`lookup`] a metric key (or [`describe`], which never fails), then [`Metric::format`] one
//! value, or [`Metric::scale`] once for a set of values (an axis, a table column) and
//! [`Scale::format`] each. [`param_text`] writes one parameter (`ctx = 4096` → "context 4,096
//! tokens"), [`family_title`] a benchmark family. Unknown keys come back readable (underscores
//! become spaces) rather than as errors, so a new lab metric shows up before it gets its row.

/// Which way a metric gets better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Descriptive: neither direction is "better" (a count, a size, a bound).
    Neither,
}

impl Better {
    /// "↑" / "↓" / "": the mark beside a metric's name.
    pub fn mark(self) -> &'static str {
        match self {
            Better::Higher => "↑",
            Better::Lower => "↓",
            Better::Neither => "",
        }
    }

    /// The words for the mark, e.g. in a legend or a caption.
    pub fn words(self) -> &'static str {
        match self {
            Better::Higher => "↑ 높을수록 좋음 (higher is better)",
            Better::Lower => "↓ 낮을수록 좋음 (lower is better)",
            Better::Neither => "",
        }
    }
}

/// What kind of number a metric is, which fixes its unit and how it is scaled for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// Stored in milliseconds: shown in ms, in µs below 1 ms, in s from 1,000 ms.
    Millis,
    /// Stored in microseconds: µs, ms from 1,000 µs, s from 1,000,000 µs.
    Micros,
    /// Stored in bytes: B, KiB, MiB, GiB by size.
    Bytes,
    /// A percentage (stored as percent, e.g. 45.2).
    Percent,
    /// A count (grouped digits), with an optional unit word ("steps", "tokens").
    Count(&'static str),
    /// A rate or other fixed unit: shown as is with this unit ("token/s", "TFLOP/s", "GB/s").
    Unit(&'static str),
    /// A ratio shown with "×".
    Ratio,
    /// A relative error: scientific notation.
    Error,
    /// A unitless number (a loss in nats, an entropy).
    Plain,
}

/// A metric key in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// The key as records spell it (`ttft_p50_ms`).
    pub key: &'static str,
    /// Its name in words, without unit (`TTFT p50`).
    pub label: Cow<'static, str>,
    pub quantity: Quantity,
    pub better: Better,
}

/// A display unit chosen for a set of values: multiply a stored value by `factor`, write `unit`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    pub factor: f64,
    pub unit: &'static str,
    quantity: Quantity,
}

mod metrics;
mod params;

pub use metrics::METRICS;

pub use params::{
    family_title, param, param_name, param_text, param_value, params_text, Param, FAMILIES, FAMILY_PARAMS,
    PARAMS,
};
use std::borrow::Cow;
use Better::Neither;
use Quantity::*;

/// The metric with this key, if the table has it.
pub fn lookup(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key.trim())
}

/// The metric with this key, or a readable stand-in: the key with spaces for underscores, its
/// unit guessed from the suffix (`_ms`, `_us`, `_bytes`, `_pct`, `_per_s`), no better direction.
pub fn describe(key: &str) -> Metric {
    if let Some(m) = lookup(key) {
        return m.clone();
    }
    let q = if key.ends_with("_ms") {
        Millis
    } else if key.ends_with("_us") {
        Micros
    } else if key.ends_with("_bytes") {
        Bytes
    } else if key.ends_with("_pct") {
        Percent
    } else if key.ends_with("_per_s") {
        Unit("/s")
    } else {
        Plain
    };
    Metric {
        key: "",
        label: Cow::Owned(humanize(key)),
        quantity: q,
        better: Neither,
    }
}

/// `kv_budget_tokens` → "kv budget tokens"; a unit suffix is dropped (`_ms`, `_pct`, …).
pub fn humanize(key: &str) -> String {
    let k = key.trim();
    let stem = ["_ms", "_us", "_bytes", "_pct", "_per_s"]
        .iter()
        .find_map(|s| k.strip_suffix(s))
        .unwrap_or(k);
    stem.replace('_', " ")
}

impl Metric {
    /// One value with its unit, scaled for its own size (`114076.1` ms → "114.1 s").
    pub fn format(&self, v: f64) -> String {
        self.scale(v.abs()).format(v)
    }

    /// "TTFT p50 ↓": the name with the better-direction mark.
    pub fn name_marked(&self) -> String {
        match self.better.mark() {
            "" => self.label.to_string(),
            mark => format!("{} {mark}", self.label),
        }
    }

    /// "TTFT p50 (s) ↓": the name with the unit of a scale and the mark, for an axis or column.
    pub fn heading(&self, scale: &Scale) -> String {
        let unit = if scale.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", scale.unit)
        };
        match self.better.mark() {
            "" => format!("{}{unit}", self.label),
            mark => format!("{}{unit} {mark}", self.label),
        }
    }

    /// One display unit for values up to `max_abs` (the largest of an axis or a column).
    pub fn scale(&self, max_abs: f64) -> Scale {
        let big = |x: f64| max_abs.is_finite() && max_abs >= x;
        let s = |factor: f64, unit: &'static str| Scale {
            factor,
            unit,
            quantity: self.quantity,
        };
        match self.quantity {
            Millis if big(1000.0) => s(1e-3, "s"),
            Millis if max_abs.is_finite() && max_abs > 0.0 && max_abs < 1.0 => s(1e3, "µs"),
            Millis => s(1.0, "ms"),
            Micros if big(1e6) => s(1e-6, "s"),
            Micros if big(1000.0) => s(1e-3, "ms"),
            Micros => s(1.0, "µs"),
            Bytes if big((1u64 << 30) as f64) => s(1.0 / (1u64 << 30) as f64, "GiB"),
            Bytes if big((1u64 << 20) as f64) => s(1.0 / (1u64 << 20) as f64, "MiB"),
            Bytes if big(1024.0) => s(1.0 / 1024.0, "KiB"),
            Bytes => s(1.0, "B"),
            Percent => s(1.0, "%"),
            Count(u) | Unit(u) => s(1.0, u),
            Ratio => s(1.0, "×"),
            Error | Plain => s(1.0, ""),
        }
    }
}

impl Scale {
    /// A stored value in this scale's unit: "1.23 GiB", "45.2%", "12,345 token/s", "3.1e-3".
    pub fn format(&self, v: f64) -> String {
        if !v.is_finite() {
            return "—".into();
        }
        let n = self.number(v);
        match self.unit {
            "" => n,
            "%" | "×" => format!("{n}{}", self.unit),
            u => format!("{n} {u}"),
        }
    }

    /// A stored value in this scale, without the unit (a table column says it once).
    pub fn number(&self, v: f64) -> String {
        let x = v * self.factor;
        match self.quantity {
            Error => format!("{x:.1e}"),
            Count(_) if (x - x.round()).abs() < 1e-9 => group_i(x.round()),
            _ => number(x),
        }
    }
}

/// A number with as many digits as its size deserves: 12,345 · 123.4 · 12.3 · 1.23 · 0.584 ·
/// 0.0111 (three significant digits below 1) · 3.2e-5.
pub fn number(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "—".into()
    } else if a >= 1000.0 {
        group_i(x.round())
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 || x == 0.0 {
        format!("{x:.2}")
    } else if a >= 1e-4 {
        let decimals = (2 - a.log10().floor() as i32).max(2) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.1e}")
    }
}

fn group_i(x: f64) -> String {
    let neg = x < 0.0;
    let s = (x.abs() as u64).to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if neg {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_switch_to_seconds_and_bytes_to_gib() {
        let t = lookup("ttft_p50_ms").unwrap();
        assert_eq!(t.format(114_076.1), "114.1 s");
        assert_eq!(t.format(12.34), "12.3 ms");
        assert_eq!(t.format(0.0096), "9.60 µs");
        assert_eq!(t.better, Better::Lower);
        assert_eq!(t.heading(&t.scale(5000.0)), "TTFT p50 (첫 token까지) (s) ↓");
        let b = lookup("peak_mem_bytes").unwrap();
        assert_eq!(b.format(3.5 * (1u64 << 30) as f64), "3.50 GiB");
        let us = lookup("kernel_time_us").unwrap();
        assert_eq!(us.format(2500.0), "2.50 ms");
        assert_eq!(lookup("tokens_per_s").unwrap().format(12345.6), "12,346 token/s");
        assert_eq!(lookup("mfu_pct").unwrap().format(45.23), "45.2%");
        assert_eq!(lookup("err_vs_bf16").unwrap().format(0.00312), "3.1e-3");
        assert_eq!(number(0.5841), "0.584");
        assert_eq!(number(0.01113), "0.0111");
        assert_eq!(number(0.0000321), "3.2e-5");
    }

    #[test]
    fn unknown_keys_read_as_words() {
        let d = describe("queue_wait_ms");
        assert_eq!(d.label, "queue wait");
        assert_eq!(d.format(2000.0), "2.00 s");
        assert_eq!(param_text("", "new_knob", 3).as_deref(), Some("new knob 3"));
        assert_eq!(family_title("new_lab"), "new lab");
    }

    #[test]
    fn params_read_as_words() {
        assert_eq!(param_text("", "n", 4096).as_deref(), Some("N = 4,096"));
        assert_eq!(
            param_text("", "ctx", 4096).as_deref(),
            Some("context 4,096 tokens")
        );
        assert_eq!(param_text("", "causal", 1).as_deref(), Some("causal"));
        assert_eq!(param_text("cpu", "debug_build", 0), None);
        assert_eq!(param_text("cpu", "llc_bytes", 1 << 25), None);
        assert_eq!(param_text("", "tp", 8).as_deref(), Some("TP 8-way"));
        assert_eq!(param_text("attention", "d", 128).as_deref(), Some("head dim 128"));
        assert_eq!(param_text("ssm_scan", "d", 128).as_deref(), Some("channels 128"));
        assert_eq!(param_text("", "d", 128).as_deref(), Some("d = 128"));
        assert_eq!(param_name("", "ctx"), "context (tokens)");
        assert_eq!(
            params_text("pt_train", [("batch", 32), ("debug_build", 0), ("seq", 256)]),
            "batch 32 · seq 256 tokens"
        );
    }

    #[test]
    fn keys_are_unique() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(METRICS[i + 1..].iter().all(|b| b.key != a.key), "{}", a.key);
        }
        for (i, a) in PARAMS.iter().enumerate() {
            assert!(PARAMS[i + 1..].iter().all(|b| b.key != a.key), "{}", a.key);
        }
    }
}
