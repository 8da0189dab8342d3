//! The HTML frame every calculator writes: the figure, its table, its caption and the opening
//! tag of its chart.
//!
//! Why one place: each calculator's output is one CommonMark HTML block of the same shape (a
//! `<figure class="hdlc-figure hdlc-calc">` holding an optional SVG chart, a wrapped table and a
//! caption that starts with the card's own caption). Written out in each calculator the frame
//! drifted in small ways; here it is written once and the calculators only fill it in.

use super::fmt;
use std::fmt::Write as _;

/// `<figure …>` with the calculator's id, on a line of its own.
pub fn open_figure(h: &mut String, id: &str) {
    let _ = writeln!(h, "<figure class=\"hdlc-figure hdlc-calc\" id=\"{id}\">");
}

/// The table wrapper, the header row (cells are HTML) and the opening `<tbody>`.
pub fn open_table<S: AsRef<str>>(h: &mut String, headers: &[S]) {
    h.push_str("<div class=\"table-wrapper\">\n<table>\n<thead>\n<tr>");
    for cell in headers {
        let _ = write!(h, "<th>{}</th>", cell.as_ref());
    }
    h.push_str("</tr>\n</thead>\n<tbody>\n");
}

/// Closes what [`open_table`] opened.
pub fn close_table(h: &mut String) {
    h.push_str("</tbody>\n</table>\n</div>\n");
}

/// `<figcaption>`, then the card's own caption (escaped, trimmed, one space after it) if it has
/// one: the author's words come before the generator's account of the inputs.
pub fn open_caption(h: &mut String, caption: Option<&str>) {
    h.push_str("<figcaption>");
    if let Some(cap) = caption {
        let _ = write!(h, "{} ", fmt::esc(cap.trim()));
    }
}

/// Closes the caption and the figure (no newline after it: the block ends there).
pub fn close_figure(h: &mut String) {
    h.push_str("</figcaption>\n</figure>");
}

/// The opening `<svg>` tag of a calculator chart, on a line of its own: scales to the column
/// width, inherits the page's text colour, and names itself for screen readers.
pub fn open_svg(s: &mut String, width: f64, height: f64, font_size: &str, aria: &str) {
    let _ = writeln!(
        s,
        "<svg class=\"hdlc-chart\" width=\"100%\" viewBox=\"0 0 {width} {height}\" preserveAspectRatio=\"xMidYMid meet\" \
         xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\" font-size=\"{font_size}\" fill=\"currentColor\" \
         role=\"img\" aria-label=\"{aria}\">"
    );
}

/// A legend entry: a 12 px colour square and its name, the text's baseline at `y`.
pub fn legend_swatch(s: &mut String, x: f64, y: f64, color: &str, name: &str) {
    let _ = writeln!(
        s,
        "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{color}\"/><text x=\"{}\" y=\"{y}\">{name}</text>",
        y - 10.0,
        x + 17.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_parts() {
        let mut h = String::new();
        open_figure(&mut h, "calc-x");
        open_table(&mut h, &["a", "b"]);
        close_table(&mut h);
        open_caption(&mut h, Some(" <cap> "));
        close_figure(&mut h);
        assert_eq!(
            h,
            "<figure class=\"hdlc-figure hdlc-calc\" id=\"calc-x\">\n\
             <div class=\"table-wrapper\">\n<table>\n<thead>\n<tr><th>a</th><th>b</th></tr>\n</thead>\n<tbody>\n\
             </tbody>\n</table>\n</div>\n<figcaption>&lt;cap&gt; </figcaption>\n</figure>"
        );
    }

    #[test]
    fn swatch_sits_on_its_baseline() {
        let mut s = String::new();
        legend_swatch(&mut s, 84.0, 16.0, "#fff", "sign");
        assert_eq!(
            s,
            "<rect x=\"84\" y=\"6\" width=\"12\" height=\"12\" fill=\"#fff\"/><text x=\"101\" y=\"16\">sign</text>\n"
        );
    }
}
