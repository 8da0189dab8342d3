//! The marks around the rows: the datasheet reference line and the value axis's grid and ticks.

use super::BarChart;
use crate::render::figures::format::{text_width, tick};
use crate::render::figures::style::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The dashed reference line (datasheet peak) through the rows, broken where a text sits, and its
/// label above the plot, kept inside the canvas.
pub(super) fn reference<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    (v, label): (f64, &str),
    (x0, top, plot_h, title_h): (f64, f64, f64, f64),
    xpx: &dyn Fn(f64) -> f64,
    blocked: &[(f64, f64, f64, f64)],
    w: f64,
) -> Result<(), String> {
    let x = x0 + xpx(v);
    let mut y = top;
    while y < top + plot_h {
        let y1 = (y + 5.0).min(top + plot_h);
        let hit = blocked
            .iter()
            .any(|&(a, b, t, bt)| a - 3.0 <= x && x <= b + 3.0 && y1 >= t && y <= bt);
        if !hit {
            root.draw(&PathElement::new(
                vec![(x as i32, y as i32), (x as i32, y1 as i32)],
                GRAY.stroke_width(1),
            ))
            .map_err(de)?;
        }
        y += 9.0;
    }
    let tw = text_width(label, SMALL);
    let cx = x.clamp(tw / 2.0 + 6.0, w - tw / 2.0 - 6.0);
    text(
        root,
        label,
        (cx as i32, (title_h + LINE_H / 2.0) as i32),
        SMALL,
        INK,
        Pos::new(HPos::Center, VPos::Center),
    )
}

/// Grid lines and tick labels of the value axis, drawn with plotters on the plot's pixel box.
pub(super) fn mesh<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &BarChart,
    (lo, hi): (f64, f64),
    (x0, y0): (i32, i32),
    (pw, ph): (u32, u32),
    narrow: bool,
) -> Result<(), String> {
    const TICKS_H: u32 = 22;
    let area = root.margin(y0 as u32, 0, x0 as u32, 0);
    let (aw, ah) = area.dim_in_pixel();
    let mut b = ChartBuilder::on(&area);
    b.margin_right(aw.saturating_sub(pw))
        .margin_bottom(ah.saturating_sub(ph + TICKS_H))
        .x_label_area_size(TICKS_H);
    let ticks = if narrow { 4 } else { 6 };
    if c.log {
        // Ticks and grid come from `log_ticks` (see `draw_bars`); here only the axis line.
        let mut chart = b
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..1.0)
            .map_err(de)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .draw_styled()
            .map_err(de)?;
    } else {
        let mut chart = b.build_cartesian_2d(lo..hi, 0f64..1.0).map_err(de)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(ticks)
            .x_label_formatter(&|v| tick(*v))
            .draw_styled()
            .map_err(de)?;
    }
    Ok(())
}
