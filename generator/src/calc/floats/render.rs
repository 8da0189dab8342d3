//! The `calc: float-formats` figure: the bit layouts drawn box by box, a table of range and
//! precision with the exact power of two under each value, and a caption on the conventions.

use super::{FloatFormat, FloatFormatsSpec, Props, Special, FORMATS};
use crate::calc::fmt;
use crate::calc::html;
use std::fmt::Write as _;

const SIGN: &str = "#e15759";
const EXPONENT: &str = "#4e79a7";
const MANTISSA: &str = "#59a14f";

const LEFT: f64 = 84.0;
const BIT: f64 = 15.0;
const ROW: f64 = 30.0;
const BOX: f64 = 22.0;
const TOP: f64 = 30.0;

/// The bit layouts, one row per format, one box per bit.
fn svg(formats: &[FloatFormat]) -> String {
    let height = TOP + formats.len() as f64 * ROW + 6.0;
    let mut s = String::new();
    html::open_svg(
        &mut s,
        640.0,
        height,
        "12.5",
        "부동소수점 형식의 비트 배치: sign, exponent, mantissa",
    );
    for (i, (name, color)) in [
        ("sign", SIGN),
        ("exponent 지수", EXPONENT),
        ("mantissa 가수", MANTISSA),
    ]
    .iter()
    .enumerate()
    {
        html::legend_swatch(&mut s, LEFT + i as f64 * 150.0, 16.0, color, name);
    }
    for (r, f) in formats.iter().enumerate() {
        layout_row(&mut s, TOP + r as f64 * ROW, f);
    }
    s.push_str("</svg>");
    s
}

/// One format at height `y`: its name, a box per bit coloured by field with the field's
/// width written across it, and the total after the last bit.
fn layout_row(s: &mut String, y: f64, f: &FloatFormat) {
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

/// A value in scientific notation with its exact power-of-two form.
fn value_cell(v: f64, exact: String) -> String {
    let mut s = format!("{}<br><small>= {exact}", fmt::sci4(v));
    if v.fract() == 0.0 && v < 1e7 {
        let _ = write!(s, " = {}", fmt::int(v as u128));
    }
    s.push_str("</small>");
    s
}

pub(in crate::calc) fn render(spec: &FloatFormatsSpec) -> String {
    let fs = &spec.formats;
    let props: Vec<Props> = fs.iter().map(|f| f.props()).collect();
    let names: Vec<&str> = fs.iter().map(|f| f.name).collect();
    let id = if fs.len() == FORMATS.len() {
        "calc-float-formats".to_string()
    } else {
        format!("calc-float-formats-{}", names.join("-"))
    };
    let mut h = String::new();
    html::open_figure(&mut h, &id);
    h.push_str(&svg(fs));
    h.push('\n');
    let mut headers = vec!["항목 (식)"];
    headers.extend(fs.iter().map(|f| f.label));
    html::open_table(&mut h, &headers);
    layout_rows(&mut h, fs, &props);
    range_rows(&mut h, &props);
    behaviour_rows(&mut h, fs);
    html::close_table(&mut h);
    caption(&mut h, spec);
    h
}

/// A table row: the quantity with its formula in small type under it (when it has one), then
/// one cell per format.
fn row(h: &mut String, name: &str, formula: &str, cells: Vec<String>) {
    if formula.is_empty() {
        let _ = write!(h, "<tr><td>{name}</td>");
    } else {
        let _ = write!(h, "<tr><td>{name}<br><small>{formula}</small></td>");
    }
    for c in cells {
        let _ = write!(h, "<td class=\"num\">{c}</td>");
    }
    h.push_str("</tr>\n");
}

/// The layout itself: total, exponent and mantissa bits, and the bias they imply.
fn layout_rows(h: &mut String, fs: &[FloatFormat], props: &[Props]) {
    row(
        h,
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
        h,
        "exponent 비트 e",
        "",
        fs.iter().map(|f| f.exponent_bits.to_string()).collect(),
    );
    row(
        h,
        "mantissa 비트 m",
        "",
        fs.iter().map(|f| f.mantissa_bits.to_string()).collect(),
    );
    row(
        h,
        "bias",
        "2<sup>e−1</sup> − 1",
        props.iter().map(|p| p.bias.to_string()).collect(),
    );
}

/// Range and precision: the largest, smallest normal and smallest subnormal values, epsilon
/// and decimal digits.
fn range_rows(h: &mut String, props: &[Props]) {
    row(
        h,
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
        h,
        "최소 정규수 (min normal)",
        "2<sup>1 − bias</sup>",
        props
            .iter()
            .map(|p| value_cell(p.min_normal, fmt::pow2(p.min_normal_exp)))
            .collect(),
    );
    row(
        h,
        "최소 비정규수 (min subnormal)",
        "2<sup>1 − bias − m</sup>",
        props
            .iter()
            .map(|p| value_cell(p.min_subnormal, fmt::pow2(p.min_subnormal_exp)))
            .collect(),
    );
    row(
        h,
        "machine epsilon",
        "2<sup>−m</sup>",
        props
            .iter()
            .map(|p| value_cell(p.epsilon, fmt::pow2(p.epsilon_exp)))
            .collect(),
    );
    row(
        h,
        "십진 유효 자릿수 (decimal digits)",
        "≈ (m + 1) · log<sub>10</sub> 2",
        props.iter().map(|p| fmt::fixed(p.decimal_digits, 2)).collect(),
    );
}

/// What the top exponent code means, and a note on storage.
fn behaviour_rows(h: &mut String, fs: &[FloatFormat]) {
    row(
        h,
        "Inf / NaN",
        "",
        fs.iter()
            .map(|f| match f.special {
                Special::Ieee => "있음 (IEEE)".to_string(),
                Special::FiniteOnly => "Inf 없음; NaN은 S.1111.111 하나".to_string(),
            })
            .collect(),
    );
    row(h, "비고", "", fs.iter().map(|f| f.note.to_string()).collect());
}

/// Where the values come from, how they are written, and the E4M3 exception.
fn caption(h: &mut String, spec: &FloatFormatsSpec) {
    html::open_caption(h, spec.caption.as_deref());
    let _ = write!(
        h,
        "생성기가 빌드할 때 각 형식의 비트 배치(exponent e, mantissa m: {})만으로 계산한 값 — 외워 적은 표가 아니다. \
         값은 유효숫자 4자리 과학 표기, 그 아래는 정확한 2의 거듭제곱 꼴. IEEE식 형식은 지수 비트가 모두 1인 코드를 ±Inf(M = 0)와 NaN(M ≠ 0)에 쓴다. 십진 자릿수는 암묵적 선행 비트(implicit bit)를 포함한 (m + 1) · log<sub>10</sub> 2. \
         FP8 E4M3은 OCP/NVIDIA 규약(E4M3FN): Inf가 없고 지수가 모두 1인 코드도 정규수로 쓰며, S.1111.111만 NaN이라 최대 유한값이 (2 − 2<sup>−2</sup>) · 2<sup>8</sup> = 448이다.",
        spec.formats.iter().map(|f| format!("{} ({}, {})", f.name, f.exponent_bits, f.mantissa_bits)).collect::<Vec<_>>().join(", ")
    );
    html::close_figure(h);
}
