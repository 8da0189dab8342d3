//! Drawing style and SVG plumbing shared by every chart view.
//!
//! Why one place: all charts must look alike (palette, fonts, width) and be post-processed the
//! same way for an mdBook page (theme-proof `currentColor`, no blank lines, rounded font sizes),
//! so a new view only draws and never has to learn these rules.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

/// Widths of every chart in SVG user units. Each chart is laid out twice, for a wide column
/// (desktop) and a narrow one (a phone, or a panel beside another), and the page shows the one that
/// fits its column (a container query in `hdlc.css`): scaling one drawing down to a phone would
/// shrink its labels to about 6 px, so the narrow layout wraps labels and drops ticks instead.
pub(super) const WIDE: u32 = 640;
pub(super) const NARROW: u32 = 360;
/// Line height of body text, in SVG units: a browser's box of a 12.5-unit Hangul or Latin line
/// is about 1.4 em tall, so lines closer than this overlap.
pub(super) const LINE_H: f64 = 18.5;
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

/// Draw onto a fresh SVG canvas `width` units wide and post-process it for an mdBook page.
pub(super) fn draw<F>(width: u32, height: u32, f: F) -> Result<String, String>
where
    F: FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
{
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        f(&root)?;
        root.present().map_err(de)?;
    }
    Ok(finish_svg(&buf, width, height))
}

/// A chart laid out for both column widths: the wide drawing, then the narrow one. `layout`
/// draws the chart at one width ([`WIDE`] or [`NARROW`]).
pub(super) fn responsive(layout: impl Fn(u32) -> Result<String, String>) -> Result<String, String> {
    let wide = layout(WIDE)?;
    let narrow = layout(NARROW)?;
    Ok(format!("{}\n{}", wide.trim_end(), narrow.trim_end()))
}

/// Theme-proof, responsive, blank-line-free SVG: the ink color becomes `currentColor`, the fixed
/// width becomes `width="100%"` with a max-width, and any `<?xml` line or empty line goes. The
/// class says which column width the drawing was laid out for.
pub(super) fn finish_svg(raw: &str, width: u32, height: u32) -> String {
    let which = if width <= NARROW { "narrow" } else { "wide" };
    // The narrow layout may grow a little past its size (a tablet's column), not to double.
    let max_w = if width <= NARROW { width * 4 / 3 } else { width };
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with("<?xml") {
            continue;
        }
        if line.starts_with("<svg") {
            let _ = writeln!(
                out,
                "<svg class=\"hdlc-chart hdlc-chart-{which}\" width=\"100%\" viewBox=\"0 0 {width} {height}\" preserveAspectRatio=\"xMidYMid meet\" \
                 style=\"max-width:{max_w}px;height:auto;color:var(--fg)\" font-family=\"{FONT}\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">"
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

/// A chart's title, wrapped into `lines` by the caller, at the top left.
pub(super) fn title_block<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lines: &[String],
) -> Result<(), String> {
    for (i, t) in lines.iter().enumerate() {
        let y = 6 + (i as f64 * LINE_H * 1.1) as i32;
        text(root, t, (8, y), HEAD, INK, Pos::new(HPos::Left, VPos::Top))?;
    }
    Ok(())
}

/// Tick values of a log axis over [lo, hi]: 1, 2 and 5 times each power of ten, thinned to whole
/// powers of ten (then every other one) when more than `most` would crowd the axis.
///
/// Why not plotters' own: its log key points repeat a value at a decade boundary (two "1,000"
/// labels on one spot), and it offers no control over how many labels a phone layout gets.
pub(super) fn log_ticks(lo: f64, hi: f64, most: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && hi > lo) {
        return Vec::new();
    }
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let pick = |mults: &[f64], step: i32| -> Vec<f64> {
        let mut v = Vec::new();
        for e in (e0..=e1).filter(|e| (e - e0) % step == 0) {
            for m in mults {
                let t = m * 10f64.powi(e);
                if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                    v.push(t);
                }
            }
        }
        v
    };
    for (mults, step) in [
        (&[1.0, 2.0, 5.0][..], 1),
        (&[1.0][..], 1),
        (&[1.0][..], 2),
        (&[1.0][..], 3),
    ] {
        let v = pick(mults, step);
        if v.len() <= most {
            return v;
        }
    }
    pick(&[1.0], 4)
}

/// Which axis [`draw_log_axis`] labels, with the plot's pixel box.
pub(super) enum LogAxis {
    /// The x axis: grid from `top` to `bottom`, labels under `bottom`.
    X { top: i32, bottom: i32 },
    /// The y axis: grid from `left` to `right`, labels left of `left`.
    Y { left: i32, right: i32 },
}

/// Grid lines, tick marks and labels of a log axis at `ticks`, placed with `to_px` (a value to its
/// pixel on that axis).
pub(super) fn draw_log_axis<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    axis: LogAxis,
    ticks: &[f64],
    to_px: &dyn Fn(f64) -> i32,
) -> Result<(), String> {
    for &t in ticks {
        let p = to_px(t);
        let label = super::format::tick(t);
        match axis {
            LogAxis::X { top, bottom } => {
                root.draw(&PathElement::new(vec![(p, top), (p, bottom)], INK.mix(0.12)))
                    .map_err(de)?;
                root.draw(&PathElement::new(
                    vec![(p, bottom), (p, bottom + 5)],
                    INK.mix(0.6),
                ))
                .map_err(de)?;
                text(
                    root,
                    &label,
                    (p, bottom + 7),
                    BODY,
                    INK,
                    Pos::new(HPos::Center, VPos::Top),
                )?;
            }
            LogAxis::Y { left, right } => {
                root.draw(&PathElement::new(vec![(left, p), (right, p)], INK.mix(0.12)))
                    .map_err(de)?;
                root.draw(&PathElement::new(vec![(left - 5, p), (left, p)], INK.mix(0.6)))
                    .map_err(de)?;
                text(
                    root,
                    &label,
                    (left - 7, p),
                    BODY,
                    INK,
                    Pos::new(HPos::Right, VPos::Center),
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_never_repeat_and_thin_out() {
        let t = log_ticks(80.0, 8000.0, 12);
        assert_eq!(t, vec![100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0]);
        let t = log_ticks(0.001, 1e6, 6);
        assert!(t.len() <= 6 && t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
        assert!(log_ticks(1.0, 1.0, 5).is_empty());
    }
}
