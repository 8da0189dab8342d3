//! Number formatting shared by the calculators.
//!
//! Why hand-written rather than a crate: the book prints the same quantity the same way on every
//! page (thousands separators, GiB = 2^30 B, 4 significant digits in scientific notation with a
//! real minus sign and a superscript exponent), and the output must be byte-for-byte
//! deterministic so that snapshots and the build cache can compare it.

/// An integer with comma thousands separators: `124,439,808`.
pub fn int(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `x` to `sig` significant digits in scientific notation, split into (mantissa, exponent).
fn sci_parts(x: f64, sig: usize) -> (String, i32) {
    let s = format!("{:.*e}", sig.saturating_sub(1), x);
    match s.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse().unwrap_or(0)),
        None => (s, 0),
    }
}

/// A superscript exponent with a typographic minus: `<sup>−24</sup>`.
fn sup(e: i64) -> String {
    if e < 0 {
        format!("<sup>−{}</sup>", -e)
    } else {
        format!("<sup>{e}</sup>")
    }
}

/// Scientific notation with 4 significant digits as HTML: `3.403 × 10<sup>38</sup>`, with
/// no-break spaces around `×` so a narrow table cell never splits the number.
/// Exponent 0 prints the mantissa alone; non-finite values print as they are.
pub fn sci4(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return format!("{x}");
    }
    let (m, e) = sci_parts(x, 4);
    let m = m.replace('-', "−");
    if e == 0 {
        m
    } else {
        format!("{m}\u{a0}×\u{a0}10{}", sup(e as i64))
    }
}

/// A power of two as HTML: `2<sup>−24</sup>`.
pub fn pow2(k: i64) -> String {
    format!("2{}", sup(k))
}

/// `x` rounded to `sig` significant digits in plain decimal notation (no exponent), for values
/// between 10^-3 and 10^15 — times, rates and sizes on a human scale. Falls back to [`sci4`].
pub fn sig(x: f64, sig: usize) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() || !(1e-3..1e15).contains(&x.abs()) {
        return sci4(x);
    }
    let (m, e) = sci_parts(x, sig.max(1));
    let mag = e as i64;
    let decimals = (sig as i64 - 1 - mag).max(0) as usize;
    let v: f64 = format!("{m}e{e}").parse().unwrap_or(x);
    let s = format!("{v:.decimals$}");
    // Group the integer part.
    let (int_part, frac) = match s.split_once('.') {
        Some((a, b)) => (a.to_string(), Some(b.to_string())),
        None => (s.clone(), None),
    };
    let neg = int_part.starts_with('-');
    let digits = int_part.trim_start_matches('-');
    let grouped = match digits.parse::<u128>() {
        Ok(n) => int(n),
        Err(_) => digits.to_string(),
    };
    let mut out = String::new();
    if neg {
        out.push('−');
    }
    out.push_str(&grouped);
    if let Some(f) = frac {
        out.push('.');
        out.push_str(&f);
    }
    out
}

/// A fixed number of decimals, thousands grouped: `1,365.33`.
pub fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (a, b) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s.as_str(), None),
    };
    let mut out = String::new();
    if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.push('−');
    }
    out.push_str(&a.parse::<u128>().map(int).unwrap_or_else(|_| a.to_string()));
    if let Some(b) = b {
        out.push('.');
        out.push_str(b);
    }
    out
}

/// 2^30.
pub const GIB: f64 = 1_073_741_824.0;

/// Bytes in GiB with two decimals: `1.85 GiB`.
pub fn gib(bytes: u128) -> String {
    format!("{} GiB", fixed(bytes as f64 / GIB, 2))
}

/// Bytes with a decimal unit (B, kB, MB, GB, TB; powers of 10), 4 significant digits.
pub fn bytes_si(bytes: u128) -> String {
    let b = bytes as f64;
    let units = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    for (scale, unit) in units {
        if b >= scale {
            return format!("{} {unit}", sig(b / scale, 4));
        }
    }
    format!("{bytes} B")
}

/// A duration in seconds with 3 significant digits in ns, µs, ms or s.
pub fn time(seconds: f64) -> String {
    if !seconds.is_finite() || seconds <= 0.0 {
        return "—".into();
    }
    let (v, unit) = if seconds < 1e-6 {
        (seconds * 1e9, "ns")
    } else if seconds < 1e-3 {
        (seconds * 1e6, "µs")
    } else if seconds < 1.0 {
        (seconds * 1e3, "ms")
    } else {
        (seconds, "s")
    };
    format!("{} {unit}", sig(v, 3))
}

/// [`sig`] without trailing zeros after the decimal point: `989`, `3.35`.
pub fn sig_trim(x: f64, digits: usize) -> String {
    let s = sig(x, digits);
    if s.contains('.') && !s.contains('×') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A rate in FLOP/s with a decimal prefix (GFLOP/s, TFLOP/s; no PFLOP/s, as datasheets print), up to 4 significant
/// digits, trailing zeros dropped (datasheet figures read as printed: `989 TFLOP/s`).
pub fn flops_rate(flops_per_s: f64) -> String {
    let units = [(1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s")];
    for (scale, unit) in units {
        if flops_per_s >= scale {
            return format!("{} {unit}", sig_trim(flops_per_s / scale, 4));
        }
    }
    format!("{} FLOP/s", sig_trim(flops_per_s, 4))
}

/// A bandwidth in B/s with a decimal prefix (GB/s, TB/s), up to 4 significant digits.
pub fn bytes_rate(bytes_per_s: f64) -> String {
    let units = [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s")];
    for (scale, unit) in units {
        if bytes_per_s >= scale {
            return format!("{} {unit}", sig_trim(bytes_per_s / scale, 4));
        }
    }
    format!("{} B/s", sig_trim(bytes_per_s, 4))
}

/// HTML-escape text taken from a card or a results file.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(124_439_808), "124,439,808");
        assert_eq!(int(137_438_953_472), "137,438,953,472");
    }

    #[test]
    fn scientific() {
        assert_eq!(
            sci4(3.402_823_466_385_288_6e38),
            "3.403\u{a0}×\u{a0}10<sup>38</sup>"
        );
        assert_eq!(sci4(2f64.powi(-24)), "5.960\u{a0}×\u{a0}10<sup>−8</sup>");
        assert_eq!(sci4(448.0), "4.480\u{a0}×\u{a0}10<sup>2</sup>");
        assert_eq!(sci4(1.5), "1.500");
        assert_eq!(pow2(-24), "2<sup>−24</sup>");
        assert_eq!(pow2(127), "2<sup>127</sup>");
    }

    #[test]
    fn significant() {
        assert_eq!(sig(139.0, 3), "139");
        assert_eq!(sig(138.96, 3), "139");
        assert_eq!(sig(30.05, 3), "30.1");
        assert_eq!(sig(1365.333, 4), "1,365");
        assert_eq!(sig(0.012345, 3), "0.0123");
        assert_eq!(sig(295.22, 4), "295.2");
        assert_eq!(fixed(1.854, 2), "1.85");
        assert_eq!(fixed(12345.678, 1), "12,345.7");
        assert_eq!(time(138.97e-6), "139 µs");
        assert_eq!(time(2.5), "2.50 s");
        assert_eq!(flops_rate(989e12), "989 TFLOP/s");
        assert_eq!(flops_rate(1979e12), "1,979 TFLOP/s");
        assert_eq!(bytes_rate(3.35e12), "3.35 TB/s");
        assert_eq!(bytes_rate(41.25e9), "41.25 GB/s");
        assert_eq!(gib(1 << 30), "1.00 GiB");
        assert_eq!(bytes_si(201_326_592), "201.3 MB");
    }
}
