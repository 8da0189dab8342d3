//! Station labels: which text, and how wide it will be.
//!
//! The generator has no font metrics (the book ships no font for the map and must not need
//! one), so widths are estimated at the map's 12px font: about one em (12 px) for a Hangul or
//! CJK character and about 7 px for an ASCII one. The estimate leans wide so a label drawn in
//! a narrower font still fits the box the layout kept free for it.

/// Height of one label line, px (ascent plus descent at the 12px font, plus leading).
pub const LINE_H: f64 = 14.0;
/// Distance from the top of a label box to its first baseline.
pub const BASELINE: f64 = 11.0;

/// Height of a label box of `lines` lines.
pub fn label_height(lines: usize) -> f64 {
    lines.max(1) as f64 * LINE_H + 1.0
}

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

/// Map label: the title without its parenthesised English gloss, cut to at most `max_w` px
/// (estimated) with an ellipsis.
pub fn fit_label(title: &str, max_w: f64) -> String {
    let base = title.split(" (").next().unwrap_or(title).trim();
    if text_width(base) <= max_w {
        return base.to_string();
    }
    let mut out = String::new();
    let mut w = char_width('…');
    for c in base.chars() {
        if w + char_width(c) > max_w {
            break;
        }
        w += char_width(c);
        out.push(c);
    }
    format!("{}…", out.trim_end())
}

/// Map label in at most two lines of at most `max_w` px each: the title without its English
/// gloss, split between words where the longer line is shortest, the rest cut with an ellipsis.
pub fn wrap_label(title: &str, max_w: f64) -> Vec<String> {
    let base = title.split(" (").next().unwrap_or(title).trim();
    if text_width(base) <= max_w {
        return vec![base.to_string()];
    }
    let words: Vec<&str> = base.split(' ').filter(|w| !w.is_empty()).collect();
    let mut best: Option<(f64, usize)> = None;
    for k in 1..words.len() {
        let a = text_width(&words[..k].join(" "));
        let b = text_width(&words[k..].join(" "));
        if a <= max_w && b <= max_w && best.is_none_or(|(w, _)| a.max(b) < w) {
            best = Some((a.max(b), k));
        }
    }
    if let Some((_, k)) = best {
        return vec![words[..k].join(" "), words[k..].join(" ")];
    }
    // No clean split: fill the first line by words (or characters), cut the second.
    let mut first = String::new();
    for w in &words {
        let cand = if first.is_empty() {
            w.to_string()
        } else {
            format!("{first} {w}")
        };
        if text_width(&cand) <= max_w {
            first = cand;
        } else {
            break;
        }
    }
    if first.is_empty() {
        for c in base.chars() {
            if text_width(&first) + char_width(c) > max_w {
                break;
            }
            first.push(c);
        }
    }
    let rest = base[first.len()..].trim();
    vec![first, fit_label(rest, max_w)]
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
        assert_eq!(fit_label("가나다라마바 (Gloss)", 200.0), "가나다라마바");
        assert_eq!(
            wrap_label("Attention을 모양으로 읽기 (Attention by Shapes)", 100.0),
            ["Attention을", "모양으로 읽기"]
        );
        assert_eq!(wrap_label("산술 강도", 100.0), ["산술 강도"]);
        let w = wrap_label("FlashAttentionForwardKernelWithTensorCores", 100.0);
        assert!(
            w.len() == 2 && w.iter().all(|l| text_width(l) <= 100.0) && w[1].ends_with('…'),
            "{w:?}"
        );
        let cut = fit_label("Attention을 모양으로 읽기", 140.0);
        assert!(text_width(&cut) <= 140.0 && cut.ends_with('…'), "{cut}");
    }
}
