//! Bytes by part (weights, gradients, optimizer state, activations) and the stacked bars that
//! draw them in GiB, with the H100's 80 GB marked when a bar passes it.
//!
//! Why shared: `calc: training-memory` draws one bar per training regime and
//! `calc: parallel-memory` one per ZeRO stage; both count the same four parts against the same
//! card, and a reader comparing the two pages should see the same colours, axis and marker.

use super::fmt;
use super::html;
use std::fmt::Write as _;

/// Bytes of one regime, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakdown {
    pub weights: u128,
    pub gradients: u128,
    /// Adam moments, plus FP32 master weights in mixed precision.
    pub optimizer: u128,
    pub activations: u128,
}

impl Breakdown {
    pub fn total(&self) -> u128 {
        self.weights + self.gradients + self.optimizer + self.activations
    }
    pub fn parts(&self) -> [u128; 4] {
        [self.weights, self.gradients, self.optimizer, self.activations]
    }
}

/// H100 80 GB memory, bytes (datasheet capacity, decimal GB).
pub const H100_MEMORY: u128 = 80_000_000_000;

/// One colour per part, in the order of [`Breakdown::parts`]; the tables use them as swatches.
const COLORS: [&str; 4] = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"];
const PARTS: [&str; 4] = [
    "weights 가중치",
    "gradients 기울기",
    "optimizer state (Adam m·v + FP32 master)",
    "activations",
];

/// The first cell of a part's table row: its bar colour as a swatch, then its name, so the
/// table reads as the chart's legend.
pub(super) fn part_cell(h: &mut String, part: usize, name: &str) {
    let _ = write!(
        h,
        "<tr><td><span style=\"color:{}\">■</span> {name}</td>",
        COLORS[part]
    );
}

/// 1, 2 or 5 × 10^k, chosen so that `max` spans at most about six ticks.
fn tick_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / 6.0;
    let mag = 10f64.powi(raw.log10().floor() as i32);
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

const W: f64 = 640.0;
const LEFT: f64 = 178.0;
const RIGHT: f64 = 560.0;
const TOP0: f64 = 64.0;
const BAR: f64 = 28.0;
const GAP: f64 = 20.0;

/// Where things go: the top of the first bar, the GiB axis and its ticks.
struct Frame {
    top: f64,
    step: f64,
    axis_max: f64,
    axis_y: f64,
}

impl Frame {
    fn new(rows: &[(String, Breakdown)], over: bool) -> Frame {
        let max_total = rows.iter().map(|(_, b)| b.total()).max().unwrap_or(0);
        // The "H100 80 GB" line's label needs a row of its own under the legend.
        let top = if over { TOP0 + 16.0 } else { TOP0 };
        let max_gib = (max_total.max(if over { H100_MEMORY } else { 0 }) as f64 / fmt::GIB).max(1e-9);
        let step = tick_step(max_gib);
        let axis_max = (max_gib / step).ceil() * step;
        let bars_bottom = top + rows.len() as f64 * (BAR + GAP) - GAP;
        Frame {
            top,
            step,
            axis_max,
            axis_y: bars_bottom + 10.0,
        }
    }

    /// The x of `gib` on the axis.
    fn x(&self, gib: f64) -> f64 {
        LEFT + (RIGHT - LEFT) * gib / self.axis_max
    }
}

/// The stacked bars, one per labelled row, in GiB.
pub(super) fn svg(rows: &[(String, Breakdown)], aria: &str) -> String {
    let over = rows.iter().map(|(_, b)| b.total()).max().unwrap_or(0) > H100_MEMORY;
    let f = Frame::new(rows, over);
    let mut s = String::new();
    html::open_svg(&mut s, W, f.axis_y + 40.0, "12.5", aria);
    legend(&mut s);
    grid(&mut s, &f);
    for (i, (label, b)) in rows.iter().enumerate() {
        bar(&mut s, &f, f.top + i as f64 * (BAR + GAP), label, b);
    }
    if over {
        let rx = f.x(H100_MEMORY as f64 / fmt::GIB);
        let _ = writeln!(
            s,
            "<line x1=\"{rx:.2}\" y1=\"{}\" x2=\"{rx:.2}\" y2=\"{}\" stroke=\"currentColor\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/>\
             <text x=\"{rx:.2}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11.5\">H100 80 GB</text>",
            f.top - 14.0,
            f.axis_y,
            f.top - 18.0
        );
    }
    s.push_str("</svg>");
    s
}

/// The four parts in two rows: the short names side by side, the long ones below.
fn legend(s: &mut String) {
    for (i, (name, color)) in PARTS.iter().zip(COLORS).enumerate() {
        let (lx, ly) = if i < 2 {
            (LEFT - 160.0 + i as f64 * 170.0, 14.0)
        } else {
            (LEFT - 160.0 + (i - 2) as f64 * 290.0, 32.0)
        };
        html::legend_swatch(s, lx, ly, color, name);
    }
}

/// Vertical grid lines with their GiB labels above the bars, and the axis below them.
fn grid(s: &mut String, f: &Frame) {
    let axis_y = f.axis_y;
    let mut t = 0.0;
    while t <= f.axis_max + f.step * 1e-9 {
        let tx = f.x(t);
        let _ = writeln!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{}\" x2=\"{tx:.1}\" y2=\"{axis_y}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/>\
             <text x=\"{tx:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11.5\">{}</text>",
            f.top - 8.0,
            axis_y + 16.0,
            fmt::sig_trim(t, 6)
        );
        t += f.step;
    }
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{axis_y}\" x2=\"{RIGHT}\" y2=\"{axis_y}\" stroke=\"currentColor\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11.5\">GiB (2<tspan baseline-shift=\"super\" font-size=\"8\">30</tspan> B)</text>",
        (LEFT + RIGHT) / 2.0,
        axis_y + 34.0
    );
}

/// One labelled bar at height `y`: a segment per non-zero part (its GiB inside when it fits)
/// and the total after its end.
fn bar(s: &mut String, f: &Frame, y: f64, label: &str, b: &Breakdown) {
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        LEFT - 8.0,
        y + BAR / 2.0 + 4.5,
        label
    );
    let mut acc = 0u128;
    for (part, color) in b.parts().into_iter().zip(COLORS) {
        if part == 0 {
            continue;
        }
        let x0 = f.x(acc as f64 / fmt::GIB);
        acc += part;
        let x1 = f.x(acc as f64 / fmt::GIB);
        let w = x1 - x0;
        let _ = writeln!(
            s,
            "<rect x=\"{x0:.2}\" y=\"{y}\" width=\"{w:.2}\" height=\"{BAR}\" fill=\"{color}\"><title>{} GiB</title></rect>",
            fmt::fixed(part as f64 / fmt::GIB, 2)
        );
        let label = fmt::fixed(part as f64 / fmt::GIB, 1);
        if w >= 8.0 * label.len() as f64 + 6.0 {
            let _ = writeln!(
                s,
                "<text x=\"{:.2}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11.5\" fill=\"#1a1a1a\">{label}</text>",
                x0 + w / 2.0,
                y + BAR / 2.0 + 4.0
            );
        }
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.2}\" y=\"{:.1}\" font-weight=\"bold\">{} GiB</text>",
        f.x(acc as f64 / fmt::GIB) + 5.0,
        y + BAR / 2.0 + 4.5,
        fmt::fixed(acc as f64 / fmt::GIB, 1)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks() {
        assert_eq!(tick_step(19.5), 5.0);
        assert_eq!(tick_step(600.0), 100.0);
        assert_eq!(tick_step(3.0), 0.5);
    }
}
