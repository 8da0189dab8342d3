//! `calc: float-formats` — range and precision of the floating-point formats of deep learning,
//! computed from each bit layout (exponent and mantissa widths) rather than copied from a table.
//!
//! IEEE-754-style formats reserve the all-ones exponent for ±Inf and NaN. FP8 E4M3 in the
//! OCP / NVIDIA variant ("E4M3FN") has no infinities and spends the all-ones exponent on normal
//! numbers, except S.1111.111, the only NaN; so its largest finite value is 1.75 · 2^8 = 448.

use super::fmt;
use super::kv::{Fields, KeyDoc, ParseError};
use std::fmt::Write as _;

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

const SIGN: &str = "#e15759";
const EXPONENT: &str = "#4e79a7";
const MANTISSA: &str = "#59a14f";

/// The bit layouts, one row per format, one box per bit.
fn svg(formats: &[FloatFormat]) -> String {
    const LEFT: f64 = 84.0;
    const BIT: f64 = 15.0;
    const ROW: f64 = 30.0;
    const BOX: f64 = 22.0;
    const TOP: f64 = 30.0;
    let height = TOP + formats.len() as f64 * ROW + 6.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 640 {height}\" preserveAspectRatio=\"xMidYMid meet\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"12.5\" fill=\"currentColor\" \
         role=\"img\" aria-label=\"부동소수점 형식의 비트 배치: sign, exponent, mantissa\">"
    );
    for (i, (name, color)) in [
        ("sign", SIGN),
        ("exponent 지수", EXPONENT),
        ("mantissa 가수", MANTISSA),
    ]
    .iter()
    .enumerate()
    {
        let x = LEFT + i as f64 * 150.0;
        let _ = writeln!(s, "<rect x=\"{x}\" y=\"6\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"16\">{name}</text>", x + 17.0);
    }
    for (r, f) in formats.iter().enumerate() {
        let y = TOP + r as f64 * ROW;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 8.0,
            y + BOX / 2.0 + 4.5,
            f.label
        );
        let fields = [
            (1, SIGN, "S"),
            (f.exponent_bits, EXPONENT, "E"),
            (f.mantissa_bits, MANTISSA, "M"),
        ];
        let mut x = LEFT;
        for (n, color, letter) in fields {
            let x0 = x;
            for _ in 0..n {
                let _ = writeln!(
                    s,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{BIT}\" height=\"{BOX}\" fill=\"{color}\" stroke=\"currentColor\" stroke-opacity=\"0.35\"/>"
                );
                x += BIT;
            }
            let label = if n == 1 {
                letter.to_string()
            } else {
                format!("{letter}{n}")
            };
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11.5\" fill=\"#1a1a1a\">{label}</text>",
                x0 + (x - x0) / 2.0,
                y + BOX / 2.0 + 4.0
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11.5\">{} bits</text>",
            x + 8.0,
            y + BOX / 2.0 + 4.0,
            1 + f.exponent_bits + f.mantissa_bits
        );
    }
    s.push_str("</svg>");
    s
}

/// A value in scientific notation with its exact power-of-two form.
fn value_cell(v: f64, exact: String) -> String {
    let mut s = format!("{}<br><small>= {exact}", fmt::sci4(v));
    if v.fract() == 0.0 && v < 1e7 {
        let _ = write!(s, " = {}", fmt::int(v as u128));
    }
    s.push_str("</small>");
    s
}

pub(super) fn render(spec: &FloatFormatsSpec) -> String {
    let fs = &spec.formats;
    let props: Vec<Props> = fs.iter().map(|f| f.props()).collect();
    let names: Vec<&str> = fs.iter().map(|f| f.name).collect();
    let id = if fs.len() == FORMATS.len() {
        "calc-float-formats".to_string()
    } else {
        format!("calc-float-formats-{}", names.join("-"))
    };
    let mut h = String::new();
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-calc\" id=\"{id}\">");
    h.push_str(&svg(fs));
    h.push_str("\n<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>항목 (식)</th>");
    for f in fs {
        let _ = write!(h, "<th>{}</th>", f.label);
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
    let mut row = |name: &str, formula: &str, cells: Vec<String>| {
        if formula.is_empty() {
            let _ = write!(h, "<tr><td>{name}</td>");
        } else {
            let _ = write!(h, "<tr><td>{name}<br><small>{formula}</small></td>");
        }
        for c in cells {
            let _ = write!(h, "<td class=\"num\">{c}</td>");
        }
        h.push_str("</tr>\n");
    };
    row(
        "총 비트 (total bits)",
        "1 + e + m",
        props
            .iter()
            .zip(fs)
            .map(|(p, f)| {
                if f.name == "tf32" {
                    format!("{}<br><small>(32비트에 저장)</small>", p.total_bits)
                } else {
                    p.total_bits.to_string()
                }
            })
            .collect(),
    );
    row(
        "exponent 비트 e",
        "",
        fs.iter().map(|f| f.exponent_bits.to_string()).collect(),
    );
    row(
        "mantissa 비트 m",
        "",
        fs.iter().map(|f| f.mantissa_bits.to_string()).collect(),
    );
    row(
        "bias",
        "2<sup>e−1</sup> − 1",
        props.iter().map(|p| p.bias.to_string()).collect(),
    );
    row(
        "최대 유한값 (max finite)",
        "(2 − 2<sup>−m</sup>) · 2<sup>2<sup>e</sup> − 2 − bias</sup>; E4M3: 아래 설명",
        props
            .iter()
            .map(|p| {
                value_cell(
                    p.max_finite,
                    format!(
                        "(2 − {}) · {}",
                        fmt::pow2(-i64::from(p.max_mantissa_drop)),
                        fmt::pow2(p.max_exponent)
                    ),
                )
            })
            .collect(),
    );
    row(
        "최소 정규수 (min normal)",
        "2<sup>1 − bias</sup>",
        props
            .iter()
            .map(|p| value_cell(p.min_normal, fmt::pow2(p.min_normal_exp)))
            .collect(),
    );
    row(
        "최소 비정규수 (min subnormal)",
        "2<sup>1 − bias − m</sup>",
        props
            .iter()
            .map(|p| value_cell(p.min_subnormal, fmt::pow2(p.min_subnormal_exp)))
            .collect(),
    );
    row(
        "machine epsilon",
        "2<sup>−m</sup>",
        props
            .iter()
            .map(|p| value_cell(p.epsilon, fmt::pow2(p.epsilon_exp)))
            .collect(),
    );
    row(
        "십진 유효 자릿수 (decimal digits)",
        "≈ (m + 1) · log<sub>10</sub> 2",
        props.iter().map(|p| fmt::fixed(p.decimal_digits, 2)).collect(),
    );
    row(
        "Inf / NaN",
        "",
        fs.iter()
            .map(|f| match f.special {
                Special::Ieee => "있음 (IEEE)".to_string(),
                Special::FiniteOnly => "Inf 없음; NaN은 S.1111.111 하나".to_string(),
            })
            .collect(),
    );
    row("비고", "", fs.iter().map(|f| f.note.to_string()).collect());
    h.push_str("</tbody>\n</table>\n</div>\n<figcaption>");
    if let Some(cap) = &spec.caption {
        let _ = write!(h, "{} ", fmt::esc(cap.trim()));
    }
    let _ = write!(
        h,
        "생성기가 빌드할 때 각 형식의 비트 배치(exponent e, mantissa m: {})만으로 계산한 값 — 외워 적은 표가 아니다. \
         값은 유효숫자 4자리 과학 표기, 그 아래는 정확한 2의 거듭제곱 꼴. IEEE식 형식은 지수 비트가 모두 1인 코드를 ±Inf(M = 0)와 NaN(M ≠ 0)에 쓴다. 십진 자릿수는 암묵적 선행 비트(implicit bit)를 포함한 (m + 1) · log<sub>10</sub> 2. \
         FP8 E4M3은 OCP/NVIDIA 규약(E4M3FN): Inf가 없고 지수가 모두 1인 코드도 정규수로 쓰며, S.1111.111만 NaN이라 최대 유한값이 (2 − 2<sup>−2</sup>) · 2<sup>8</sup> = 448이다.",
        fs.iter().map(|f| format!("{} ({}, {})", f.name, f.exponent_bits, f.mantissa_bits)).collect::<Vec<_>>().join(", ")
    );
    h.push_str("</figcaption>\n</figure>");
    h
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
