//! Number and text formatting for figures: units, fixed precision, ticks, escaping.
//!
//! Why apart: the same value must print the same way in a chart label, a table cell and a
//! caption, and these small pure functions are unit-tested on their own.

use super::classify::Unit;

pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Rough width of a line of text in SVG units: no font metrics without font-kit, so
/// an average Latin glyph is taken as 0.6 em and a Hangul/CJK one as 1 em.
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| {
            if c.is_ascii() {
                0.6
            } else if c < '\u{1100}' {
                0.7
            } else {
                1.0
            }
        })
        .sum::<f64>()
        * size
}

/// Text broken into lines no wider than `max_px` at font `size` (by [`text_width`]): at spaces,
/// and inside a word too long for a line after `_`, `/`, `-`, `,`, `·` or `(`, else anywhere.
/// Nothing is cut: every character of `s` is on some line (a chart never shows "…").
pub(super) fn wrap(s: &str, max_px: f64, size: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let joined = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&joined, size) <= max_px {
            cur = joined;
            continue;
        }
        if !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
        }
        let mut rest = word.to_string();
        while text_width(&rest, size) > max_px {
            let (head, tail) = split_word(&rest, max_px, size);
            lines.push(head);
            rest = tail;
        }
        cur = rest;
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The longest head of a word that fits `max_px`, ending after a natural break if there is one.
fn split_word(w: &str, max_px: f64, size: f64) -> (String, String) {
    let chars: Vec<char> = w.chars().collect();
    let mut fit = 1;
    while fit < chars.len() && text_width(&chars[..=fit].iter().collect::<String>(), size) <= max_px {
        fit += 1;
    }
    let brk = (1..fit)
        .rev()
        .find(|&i| matches!(chars[i - 1], '_' | '/' | '-' | ',' | '·' | '(' | '.'))
        .filter(|&i| i * 2 >= fit)
        .unwrap_or(fit);
    (chars[..brk].iter().collect(), chars[brk..].iter().collect())
}

/// Superscript digits for footnote marks: 1 → "¹", 12 → "¹²".
pub(super) fn superscript(n: usize) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .chars()
        .map(|d| SUP[d.to_digit(10).unwrap_or(0) as usize])
        .collect()
}

/// Thousands separators: 268435456 → "268,435,456".
pub(super) fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A value with its unit and fixed precision.
pub(super) fn fmt_value(unit: Unit, v: f64) -> String {
    let num = |x: f64| {
        if !x.is_finite() {
            "—".to_string()
        } else if x >= 100.0 {
            group(x.round() as u64)
        } else if x >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.2}")
        }
    };
    match unit {
        Unit::GBs => format!("{} GB/s", num(v)),
        Unit::GFlops if v >= 1000.0 => format!("{} TFLOP/s", num(v / 1e3)),
        Unit::GFlops => format!("{} GFLOP/s", num(v)),
    }
}

pub(super) fn pct(ratio: f64) -> String {
    let p = ratio * 100.0;
    if !p.is_finite() {
        "—".into()
    } else if p >= 1000.0 {
        format!("{}%", group(p.round() as u64))
    } else {
        format!("{p:.1}%")
    }
}

/// An axis tick: integers grouped, fractions with as few decimals as they need.
pub(super) fn tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 1.0 && (v - v.round()).abs() < 1e-9 * v.abs().max(1.0) {
        let r = v.round();
        return if r < 0.0 {
            format!("-{}", group((-r) as u64))
        } else {
            group(r as u64)
        };
    }
    for d in 1..=6 {
        let s = format!("{v:.d$}");
        if (s.parse::<f64>().unwrap_or(f64::NAN) - v).abs() <= 1e-9 * v.abs().max(1e-12) {
            return s;
        }
    }
    format!("{v:.2e}")
}

/// A problem size on an axis: small ones in full, large powers of two as 2^k.
pub(super) fn size_tick(v: f64) -> String {
    if !v.is_finite() || v < 1.0 {
        return String::new();
    }
    let n = v.round() as u64;
    if n >= 100_000 && n.is_power_of_two() {
        const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
        let exp: String = n
            .trailing_zeros()
            .to_string()
            .chars()
            .map(|d| SUP[d.to_digit(10).unwrap_or(0) as usize])
            .collect();
        format!("2{exp}")
    } else {
        group(n)
    }
}

/// A log-axis range around [lo, hi] spanning at least two decades, so that it has ticks.
pub(super) fn log_range(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = (lo.max(1e-6), hi.max(lo * 10.0));
    let span = hi / lo;
    if span >= 100.0 {
        (lo, hi)
    } else {
        let k = (100.0 / span).sqrt();
        (lo / k, hi * k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_fixed_precision() {
        assert_eq!(group(268_435_456), "268,435,456");
        assert_eq!(group(12), "12");
        assert_eq!(fmt_value(Unit::GBs, 2949.6), "2,950 GB/s");
        assert_eq!(fmt_value(Unit::GFlops, 51234.0), "51.2 TFLOP/s");
        assert_eq!(fmt_value(Unit::GFlops, 512.4), "512 GFLOP/s");
        assert_eq!(pct(0.8173), "81.7%");
        assert_eq!(tick(0.01), "0.01");
        assert_eq!(tick(1000.0), "1,000");
        assert_eq!(size_tick(268_435_456.0), "2²⁸");
        assert_eq!(tick(0.0), "0");
        assert_eq!(size_tick(4096.0), "4,096");
        assert_eq!(superscript(12), "¹²");
    }
}

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn wrap_keeps_every_character_and_fits() {
        let s = "achieved GB/s (median; whisker p10–p90; % of device memcpy (cuMemcpyDtoD))";
        let lines = wrap(s, 200.0, 12.0);
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| text_width(l, 12.0) <= 200.0), "{lines:?}");
        let joined: String = lines.concat().split_whitespace().collect();
        let want: String = s.split_whitespace().collect();
        assert_eq!(joined, want);
        let long = wrap("flash_wgmma_pipe_pingpong_persistent", 60.0, 12.0);
        assert!(long.len() > 1 && long.concat() == "flash_wgmma_pipe_pingpong_persistent");
        assert_eq!(wrap("", 100.0, 12.0), vec![String::new()]);
    }
}
