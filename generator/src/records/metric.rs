//! The number a reader sees for a record: its median time, a rate (TFLOP/s, GB/s) computed from
//! the record's counted work, or a named metric a lab recorded (tokens/s, TTFT, …).

use crate::measure::results::Timing;

/// What is read off a verified record.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// Median time of one run, in ms; lower is better.
    Time,
    /// FLOPs of one run over its median time, in TFLOP/s.
    Tflops,
    /// Fewest bytes of one run over its median time, in GB/s.
    Gbps,
    /// The 10th and 90th percentile of the run times, in ms: the spread figures draw.
    P10,
    P90,
    /// The verification's ‖out − ref‖ / ‖ref‖.
    RelError,
    /// A key of the record's `metrics`.
    Named(String),
}

impl Metric {
    /// `time`, `tflops`, `gbps`, or a metric key.
    pub fn parse(s: &str) -> Metric {
        match s.trim() {
            "time" | "ms" => Metric::Time,
            "tflops" => Metric::Tflops,
            "gbps" => Metric::Gbps,
            "p10" => Metric::P10,
            "p90" => Metric::P90,
            "rel_error" => Metric::RelError,
            other => Metric::Named(other.to_string()),
        }
    }

    /// A family's figure of merit: FLOP/s for the matrix products and attention, bytes/s for the
    /// other kernel families (as their figures draw them), time for everything else (labs).
    pub fn default_for(family: &str) -> Metric {
        if crate::measure::uses_flops(family) {
            Metric::Tflops
        } else if crate::measure::families::family(family).is_some() {
            Metric::Gbps
        } else {
            Metric::Time
        }
    }

    /// The name as written after `by`.
    pub fn name(&self) -> &str {
        match self {
            Metric::Time => "time",
            Metric::Tflops => "tflops",
            Metric::Gbps => "gbps",
            Metric::P10 => "p10",
            Metric::P90 => "p90",
            Metric::RelError => "rel_error",
            Metric::Named(n) => n,
        }
    }

    /// The value of a verified timing, or why it has none.
    pub fn value(&self, t: &Timing) -> Result<f64, String> {
        let rate = |work: f64, what: &str, scale: f64| {
            if work.is_finite() && work > 0.0 {
                Ok(work / (t.median_ms * 1e-3) / scale)
            } else {
                Err(format!("no {what} recorded"))
            }
        };
        match self {
            Metric::Time => Ok(t.median_ms),
            Metric::Tflops => rate(t.flops, "FLOPs", 1e12),
            Metric::Gbps => rate(t.bytes, "bytes", 1e9),
            Metric::P10 | Metric::P90 => {
                let v = if *self == Metric::P10 { t.p10_ms } else { t.p90_ms };
                if v.is_finite() && v > 0.0 && t.reps > 1 {
                    Ok(v)
                } else {
                    Err("no spread recorded (a single run)".into())
                }
            }
            Metric::RelError => Ok(t.rel_error),
            Metric::Named(n) => match t.metrics.get(n) {
                Some(v) if v.is_finite() => Ok(*v),
                Some(_) => Err(format!("{n} is not a number")),
                None => Err(format!("no {n} recorded")),
            },
        }
    }

    /// Whether smaller values are better (times, latencies, bytes, losses, errors): the metric
    /// table's direction where it names the key, else a rule on the key's suffix.
    pub fn lower_is_better(&self) -> bool {
        match self {
            Metric::Time | Metric::P10 | Metric::P90 | Metric::RelError => true,
            Metric::Tflops | Metric::Gbps => false,
            Metric::Named(n) => match crate::metric_names::lookup(n) {
                Some(m) => m.better == crate::metric_names::Better::Lower,
                None => {
                    let n = n.to_ascii_lowercase();
                    !n.contains("per_s")
                        && !n.ends_with("_pct")
                        && !n.contains("speedup")
                        && ["_ms", "_us", "_s", "_bytes", "loss", "error"]
                            .iter()
                            .any(|s| n.ends_with(s))
                }
            },
        }
    }

    /// The value of a verified timing with its p10–p90 spread (low, high) in the metric's unit
    /// where the metric has one (a time or a rate), or why there is no value.
    pub fn value_with_spread(&self, t: &Timing) -> Result<(f64, Option<(f64, f64)>), String> {
        let v = self.value(t)?;
        let spread = (t.p10_ms.is_finite() && t.p90_ms.is_finite() && t.p10_ms > 0.0)
            .then_some((t.p10_ms, t.p90_ms))
            .filter(|(a, b)| a <= b);
        let per = |work: f64, scale: f64| {
            spread.map(|(p10, p90)| (work / (p90 * 1e-3) / scale, work / (p10 * 1e-3) / scale))
        };
        Ok(match self {
            Metric::Time => (v, spread),
            Metric::Tflops => (v, per(t.flops, 1e12)),
            Metric::Gbps => (v, per(t.bytes, 1e9)),
            _ => (v, None),
        })
    }

    /// The value with its unit, as running text: "701 TFLOP/s", "1.24 ms", "2,991 GB/s".
    pub fn format(&self, v: f64) -> String {
        match self {
            Metric::Time | Metric::P10 | Metric::P90 => format_ms(v),
            Metric::RelError => format!("{v:.1e}"),
            Metric::Tflops => format!("{} TFLOP/s", sig3(v)),
            Metric::Gbps => format!("{} GB/s", sig3(v)),
            Metric::Named(n) => format_named(n, v),
        }
    }
}

/// A time given in ms, in the unit that reads best: µs below 0.1 ms, s from 10 s on.
pub fn format_ms(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{} s", sig3(ms / 1e3))
    } else if ms >= 0.1 {
        format!("{} ms", sig3(ms))
    } else {
        format!("{} µs", sig3(ms * 1e3))
    }
}

/// A named metric in its unit, as figures write it (`metric_names`): "1.2 s", "37.5%", "4.3 GiB".
fn format_named(name: &str, v: f64) -> String {
    crate::metric_names::describe(name).format(v)
}

/// Three significant digits, thousands grouped: 701, 2,991, 12.3, 0.0452.
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let a = v.abs();
    let s = if a >= 100.0 {
        group(a.round() as u64)
    } else if a >= 10.0 {
        format!("{a:.1}")
    } else if a >= 1.0 {
        format!("{a:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        let digits = (2 - a.log10().floor() as i32).clamp(2, 9) as usize;
        format!("{a:.digits$}")
    };
    if v < 0.0 {
        format!("−{s}")
    } else {
        s
    }
}

/// 1234567 → "1,234,567".
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_running_text() {
        assert_eq!(sig3(701.4), "701");
        assert_eq!(sig3(2991.0), "2,991");
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(1.234), "1.23");
        assert_eq!(sig3(0.04523), "0.0452");
        assert_eq!(format_ms(1.2345), "1.23 ms");
        assert_eq!(format_ms(0.0366), "36.6 µs");
        assert_eq!(format_ms(114076.1), "114 s");
        assert_eq!(Metric::Named("ttft_p50_ms".into()).format(18800.0), "18.8 s");
        assert_eq!(Metric::Named("prefix_hit_pct".into()).format(37.49), "37.5%");
        assert_eq!(Metric::Tflops.format(766.2), "766 TFLOP/s");
    }

    #[test]
    fn direction_follows_the_name() {
        assert!(Metric::Time.lower_is_better());
        assert!(!Metric::Named("tokens_per_s".into()).lower_is_better());
        assert!(Metric::Named("ttft_p99_ms".into()).lower_is_better());
        assert!(!Metric::Named("mfu_pct".into()).lower_is_better());
    }
}
