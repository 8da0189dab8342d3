//! `calc: float-formats` — range and precision of the floating-point formats of deep learning,
//! computed from each bit layout (exponent and mantissa widths) rather than copied from a table.
//!
//! IEEE-754-style formats reserve the all-ones exponent for ±Inf and NaN. FP8 E4M3 in the
//! OCP / NVIDIA variant ("E4M3FN") has no infinities and spends the all-ones exponent on normal
//! numbers, except S.1111.111, the only NaN; so its largest finite value is 1.75 · 2^8 = 448.

mod render;

use super::kv::{Fields, KeyDoc, ParseError};

pub(super) use render::render;

/// How the top exponent code is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// All-ones exponent: ±Inf (mantissa 0) and NaN (mantissa ≠ 0).
    Ieee,
    /// No infinities; only exponent and mantissa all ones is NaN (FP8 E4M3, OCP/NVIDIA).
    FiniteOnly,
}

/// A floating-point format by its bit layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatFormat {
    pub name: &'static str,
    pub label: &'static str,
    pub exponent_bits: u32,
    pub mantissa_bits: u32,
    pub special: Special,
    /// A note on storage, e.g. TF32 lives in 32-bit words.
    pub note: &'static str,
}

pub const FORMATS: [FloatFormat; 6] = [
    FloatFormat {
        name: "fp32",
        label: "FP32",
        exponent_bits: 8,
        mantissa_bits: 23,
        special: Special::Ieee,
        note: "IEEE 754 binary32",
    },
    FloatFormat {
        name: "tf32",
        label: "TF32",
        exponent_bits: 8,
        mantissa_bits: 10,
        special: Special::Ieee,
        note: "Tensor Core 입력 형식, 32비트 워드에 저장",
    },
    FloatFormat {
        name: "fp16",
        label: "FP16",
        exponent_bits: 5,
        mantissa_bits: 10,
        special: Special::Ieee,
        note: "IEEE 754 binary16",
    },
    FloatFormat {
        name: "bf16",
        label: "BF16",
        exponent_bits: 8,
        mantissa_bits: 7,
        special: Special::Ieee,
        note: "bfloat16: FP32의 상위 16비트",
    },
    FloatFormat {
        name: "fp8-e4m3",
        label: "FP8 E4M3",
        exponent_bits: 4,
        mantissa_bits: 3,
        special: Special::FiniteOnly,
        note: "OCP/NVIDIA E4M3: Inf 없음",
    },
    FloatFormat {
        name: "fp8-e5m2",
        label: "FP8 E5M2",
        exponent_bits: 5,
        mantissa_bits: 2,
        special: Special::Ieee,
        note: "IEEE식 (Inf, NaN 있음)",
    },
];

/// Properties derived from the layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Props {
    pub total_bits: u32,
    pub bias: i64,
    /// Unbiased exponent of the largest finite value.
    pub max_exponent: i64,
    /// Largest finite value = (2 − 2^-`max_mantissa_drop`) · 2^`max_exponent`.
    pub max_mantissa_drop: u32,
    pub max_finite: f64,
    /// 2^(1 − bias).
    pub min_normal: f64,
    pub min_normal_exp: i64,
    /// 2^(1 − bias − mantissa).
    pub min_subnormal: f64,
    pub min_subnormal_exp: i64,
    /// 2^-mantissa: distance from 1 to the next larger value.
    pub epsilon: f64,
    pub epsilon_exp: i64,
    /// (mantissa + 1) · log10 2: significant decimal digits, counting the implicit leading bit.
    pub decimal_digits: f64,
}

impl FloatFormat {
    pub fn parse(s: &str) -> Option<Self> {
        FORMATS.iter().copied().find(|f| f.name == s)
    }

    pub fn props(&self) -> Props {
        let e = i64::from(self.exponent_bits);
        let m = i64::from(self.mantissa_bits);
        let bias = (1i64 << (e - 1)) - 1;
        let all_ones = (1i64 << e) - 1;
        let (max_exponent, drop) = match self.special {
            // Top code reserved: largest exponent code is all-ones − 1, mantissa all ones.
            Special::Ieee => (all_ones - 1 - bias, self.mantissa_bits),
            // Top code usable, but mantissa all ones there is NaN: the largest mantissa is 1…10.
            Special::FiniteOnly => (all_ones - bias, self.mantissa_bits - 1),
        };
        let p2 = |k: i64| 2f64.powi(k as i32);
        let min_normal_exp = 1 - bias;
        let min_subnormal_exp = 1 - bias - m;
        Props {
            total_bits: 1 + self.exponent_bits + self.mantissa_bits,
            bias,
            max_exponent,
            max_mantissa_drop: drop,
            max_finite: (2.0 - p2(-i64::from(drop))) * p2(max_exponent),
            min_normal: p2(min_normal_exp),
            min_normal_exp,
            min_subnormal: p2(min_subnormal_exp),
            min_subnormal_exp,
            epsilon: p2(-m),
            epsilon_exp: -m,
            decimal_digits: (m + 1) as f64 * std::f64::consts::LOG10_2,
        }
    }
}

/// A parsed `calc: float-formats` block.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatFormatsSpec {
    pub formats: Vec<FloatFormat>,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "formats",
        doc: "optional list, default all: fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

pub(super) fn parse(f: &Fields) -> Result<FloatFormatsSpec, ParseError> {
    const KIND: &str = "float-formats";
    f.only(KIND, KEYS)?;
    let formats = match f.list(KIND, "formats", KEYS)? {
        None => FORMATS.to_vec(),
        Some(items) => {
            let mut out: Vec<FloatFormat> = Vec::new();
            for (name, line) in items {
                let Some(ff) = FloatFormat::parse(&name) else {
                    let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
                    return Err((
                        line,
                        format!("`calc: float-formats`: unknown format `{name}`"),
                        format!("formats are: {}", names.join(", ")),
                    ));
                };
                if !out.contains(&ff) {
                    out.push(ff);
                }
            }
            out
        }
    };
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(FloatFormatsSpec { formats, caption })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Props {
        FloatFormat::parse(name).unwrap().props()
    }

    #[test]
    fn known_values() {
        assert_eq!(p("fp32").max_finite, f32::MAX as f64);
        assert_eq!(p("fp32").min_normal, f32::MIN_POSITIVE as f64);
        assert_eq!(p("fp32").epsilon, f32::EPSILON as f64);
        assert_eq!(p("fp16").max_finite, 65504.0);
        assert_eq!(p("fp16").min_subnormal_exp, -24);
        assert_eq!(p("bf16").max_finite, (2.0 - 2f64.powi(-7)) * 2f64.powi(127));
        assert_eq!(p("fp8-e4m3").max_finite, 448.0);
        assert_eq!(p("fp8-e4m3").bias, 7);
        assert_eq!(p("fp8-e4m3").min_subnormal_exp, -9);
        assert_eq!(p("fp8-e5m2").max_finite, 57344.0);
        assert_eq!(p("tf32").total_bits, 19);
    }
}
