//! Station labels: which text, and how wide it will be.
//!
//! The generator has no font metrics (the book ships no font for the map and must not need
//! one), so widths are estimated at the map's 12px font: about one em (12 px) for a Hangul or
//! CJK character and about 7 px for an ASCII one. The estimate leans wide so a label drawn in
//! a narrower font still fits the box the layout kept free for it.

/// Font size of map labels, px.
pub const FONT: f64 = 12.0;
/// Height of a label box, px (ascent plus descent at the 12px font).
pub const LABEL_H: f64 = 15.0;
/// Distance from the top of a label box to its text baseline.
pub const BASELINE: f64 = 11.5;

/// Estimated width of `s` in px at the 12px font.
pub fn text_width(s: &str) -> f64 {
    s.chars().map(char_width).sum()
}

fn char_width(c: char) -> f64 {
    let u = c as u32;
    let wide = matches!(u,
        0x1100..=0x11FF | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xA960..=0xA97F | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6);
    if wide {
        12.0
    } else if c.is_ascii() {
        7.0
    } else {
        // Other scripts and symbols (—, …, Greek): count them wide, to be safe.
        12.0
    }
}

/// Short label: the Korean title without its parenthesised English gloss, cut to fit.
pub fn short_label(title: &str, max_chars: usize) -> String {
    let base = title.split(" (").next().unwrap_or(title).trim();
    if base.chars().count() <= max_chars {
        base.to_string()
    } else {
        let cut: String = base.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(text_width("산술 강도"), 12.0 * 4.0 + 7.0);
        assert_eq!(text_width("FLOP"), 28.0);
        assert_eq!(short_label("산술 강도 (Arithmetic Intensity)", 14), "산술 강도");
        assert_eq!(short_label("가나다라마바사아자차카타파하", 5), "가나다라…");
    }
}
