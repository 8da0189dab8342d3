//! Drawing style and SVG plumbing shared by every chart view.
//!
//! Why one place: all charts must look alike (palette, fonts, width) and be post-processed the
//! same way for an mdBook page (theme-proof `currentColor`, no blank lines, rounded font sizes),
//! so a new view only draws and never has to learn these rules.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::Pos;
use std::fmt::Write as _;

/// Width of every chart in SVG user units; the SVG scales down with the page.
pub(super) const WIDTH: u32 = 640;
/// Colors that read on both light and dark backgrounds (Tableau 10).
pub(super) const PALETTE: [RGBColor; 7] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x9c, 0x75, 0x5f),
];
/// Baselines (memcpy, cuBLAS) and datasheet references.
pub(super) const GRAY: RGBColor = RGBColor(0x9a, 0x9a, 0x9a);
/// Failure marks.
pub(super) const FAIL: RGBColor = RGBColor(0xe1, 0x57, 0x59);
/// Text and axes are drawn in this color and rewritten to `currentColor` afterwards.
pub(super) const INK: RGBColor = BLACK;
pub(super) const FONT: &str = "sans-serif";
/// Text sizes in SVG user units (≈ CSS px at full width).
pub(super) const BODY: f64 = 12.5;
pub(super) const SMALL: f64 = 11.5;
pub(super) const HEAD: f64 = 13.5;
/// plotters writes `font-size` as the requested size / 1.24; ask for this much more.
pub(super) const PLOTTERS_FONT_SCALE: f64 = 1.24;
/// Text drawn on top of a colored bar: fixed, since the bar colors are fixed.
pub(super) const ON_BAR_DARK: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
pub(super) const ON_BAR_LIGHT: RGBColor = RGBColor(0xff, 0xff, 0xff);

/// The text color with the higher WCAG contrast on a bar color.
pub(super) fn on_bar(bar: RGBColor) -> RGBColor {
    let lum = |c: RGBColor| {
        let ch = |v: u8| {
            let v = v as f64 / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * ch(c.0) + 0.7152 * ch(c.1) + 0.0722 * ch(c.2)
    };
    let b = lum(bar);
    let contrast = |t: RGBColor| {
        let l = lum(t);
        (l.max(b) + 0.05) / (l.min(b) + 0.05)
    };
    if contrast(ON_BAR_LIGHT) > contrast(ON_BAR_DARK) {
        ON_BAR_LIGHT
    } else {
        ON_BAR_DARK
    }
}

pub(super) fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("figure drawing failed: {e:?}")
}

pub(super) fn font(size: f64) -> TextStyle<'static> {
    (FONT, size * PLOTTERS_FONT_SCALE).into_font().color(&INK)
}

pub(super) fn text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    at: (i32, i32),
    size: f64,
    color: RGBColor,
    pos: Pos,
) -> Result<(), String> {
    let style = (FONT, size * PLOTTERS_FONT_SCALE)
        .into_font()
        .color(&color)
        .pos(pos);
    area.draw(&Text::new(s.to_string(), at, style)).map_err(de)
}

/// Draw onto a fresh SVG canvas and post-process the result for an mdBook page.
pub(super) fn draw<F>(height: u32, f: F) -> Result<String, String>
where
    F: FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
{
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        f(&root)?;
        root.present().map_err(de)?;
    }
    Ok(finish_svg(&buf, height))
}

/// Theme-proof, responsive, blank-line-free SVG: the ink color becomes `currentColor`, the fixed
/// width becomes `width="100%"` with a max-width, and any `<?xml` line or empty line goes.
pub(super) fn finish_svg(raw: &str, height: u32) -> String {
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with("<?xml") {
            continue;
        }
        if line.starts_with("<svg") {
            let _ = writeln!(
                out,
                "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 {WIDTH} {height}\" preserveAspectRatio=\"xMidYMid meet\" \
                 style=\"max-width:{WIDTH}px;height:auto;color:var(--fg)\" font-family=\"{FONT}\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">"
            );
            continue;
        }
        out.push_str(&round_font_size(&line.replace("#000000", "currentColor")));
        out.push('\n');
    }
    out
}

/// `font-size="10.080645161290322"` → `font-size="10.1"`: shorter, and what was asked for.
pub(super) fn round_font_size(line: &str) -> String {
    const KEY: &str = "font-size=\"";
    let Some(start) = line.find(KEY).map(|i| i + KEY.len()) else {
        return line.to_string();
    };
    let Some(len) = line[start..].find('"') else {
        return line.to_string();
    };
    match line[start..start + len].parse::<f64>() {
        Ok(v) => format!(
            "{}{}{}",
            &line[..start],
            trim_num(&format!("{v:.1}")),
            &line[start + len..]
        ),
        Err(_) => line.to_string(),
    }
}

pub(super) fn trim_num(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The book's axis and grid style, the same on every chart: faint major grid lines, no minor
/// ones, axes a little lighter than the text, body-size labels.
pub(super) fn book_mesh<'m, 'a, 'b, X, Y, DB>(
    m: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>,
    Y: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>,
    DB: DrawingBackend,
{
    m.axis_style(INK.mix(0.6))
        .bold_line_style(INK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .label_style(font(BODY))
        .axis_desc_style(font(BODY))
}

/// `.draw_styled()` at the end of a `configure_mesh()` chain: [`book_mesh`], then draw.
pub(super) trait DrawStyled<DB: DrawingBackend> {
    fn draw_styled(&mut self) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>;
}

impl<X, Y, DB> DrawStyled<DB> for plotters::chart::MeshStyle<'_, '_, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>
        + plotters::coord::ranged1d::ValueFormatter<<X as plotters::coord::ranged1d::Ranged>::ValueType>,
    Y: plotters::coord::ranged1d::Ranged<ValueType: std::fmt::Debug>
        + plotters::coord::ranged1d::ValueFormatter<<Y as plotters::coord::ranged1d::Ranged>::ValueType>,
    DB: DrawingBackend,
{
    fn draw_styled(&mut self) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        book_mesh(self).draw()
    }
}

/// The frame every horizontal bar chart shares: `rows` bands over 0..`xmax`, row labels in a
/// `left`-wide margin, the value axis below with `x_desc`. Views draw bars and text into it.
pub(super) fn bar_frame<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    xmax: f64,
    rows: usize,
    x_desc: &str,
    (top, left, bottom): (u32, u32, u32),
) -> Result<
    ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    String,
> {
    let mut chart = ChartBuilder::on(root)
        .margin_top(top)
        .margin_right(16)
        .margin_bottom(6)
        .x_label_area_size(bottom)
        .y_label_area_size(left)
        .build_cartesian_2d(0f64..xmax, 0f64..rows as f64)
        .map_err(de)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(&|v| super::format::tick(*v))
        .x_desc(x_desc)
        .draw_styled()
        .map_err(de)?;
    Ok(chart)
}
