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

/// The title without its parenthesised English gloss.
pub fn base_name(title: &str) -> &str {
    title.split(" (").next().unwrap_or(title).trim()
}

/// Station names for the map: each title without its English gloss and, where the title reads
/// "name — what it shows" and that name is unique on the map, the name alone (a station is
/// named, not described; the whole title is its tooltip and its card's heading).
pub fn short_names<'a>(titles: impl Iterator<Item = &'a str>) -> Vec<String> {
    let bases: Vec<&str> = titles.map(base_name).collect();
    let head = |b: &str| -> String { b.split(" — ").next().unwrap_or(b).trim().to_string() };
    let heads: Vec<String> = bases.iter().map(|b| head(b)).collect();
    bases
        .iter()
        .zip(&heads)
        .map(|(b, h)| {
            let unique = heads.iter().filter(|o| *o == h).count() == 1
                && bases.iter().filter(|o| **o == h.as_str()).count() <= 1;
            if !h.is_empty() && unique {
                h.clone()
            } else {
                b.to_string()
            }
        })
        .collect()
}

/// Words of a name; a dash stays with the word before it so no line starts with one.
fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in name.split(' ').filter(|w| !w.is_empty()) {
        match out.last_mut() {
            Some(last) if w == "—" || w == "–" => {
                last.push(' ');
                last.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// The name on `k` lines, broken between words so the widest line is as narrow as it can be.
fn balanced(words: &[String], k: usize) -> Option<Vec<String>> {
    let n = words.len();
    if k == 0 || k > n {
        return None;
    }
    let width = |a: usize, b: usize| text_width(&words[a..b].join(" "));
    // best[j][i]: narrowest widest line for the first i words on j lines, with the split.
    let mut best = vec![vec![(f64::INFINITY, 0usize); n + 1]; k + 1];
    best[0][0] = (0.0, 0);
    for j in 1..=k {
        for i in j..=n {
            for s in j - 1..i {
                let w = best[j - 1][s].0.max(width(s, i));
                if w < best[j][i].0 - 1e-9 {
                    best[j][i] = (w, s);
                }
            }
        }
    }
    let mut cuts = vec![n];
    let mut i = n;
    for j in (1..=k).rev() {
        i = best[j][i].1;
        cuts.push(i);
    }
    cuts.reverse();
    Some(cuts.windows(2).map(|c| words[c[0]..c[1]].join(" ")).collect())
}

/// Ways to set a station name: on one line, and balanced on two and three lines where it has
/// the words for it. Never cut: every variant holds the whole name.
pub fn label_variants(name: &str) -> Vec<Vec<String>> {
    let ws = words(name);
    if ws.is_empty() {
        return vec![vec![String::new()]];
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    for k in 1..=3 {
        if let Some(v) = balanced(&ws, k) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths() {
        assert_eq!(text_width("산술 강도"), 12.0 * 4.0 + 7.0);
        assert_eq!(text_width("FLOP"), 28.0);
        assert_eq!(base_name("산술 강도 (Arithmetic Intensity)"), "산술 강도");
    }

    #[test]
    fn names_and_wrapping() {
        let names = short_names(
            [
                "KV Cache",
                "KV Cache — Prefill 한 번 (Snapshot 2)",
                "Selective Scan — 고정 크기 상태 (Scan)",
            ]
            .into_iter(),
        );
        assert_eq!(names, ["KV Cache", "KV Cache — Prefill 한 번", "Selective Scan"]);
        let v = label_variants("Attention을 모양으로 읽기");
        assert_eq!(v[0], ["Attention을 모양으로 읽기"]);
        assert_eq!(v[1], ["Attention을", "모양으로 읽기"]);
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|l| l.join(" ") == "Attention을 모양으로 읽기"));
        let dash = label_variants("첫 커널 — vector add");
        assert!(dash.iter().flatten().all(|l| !l.starts_with('—')), "{dash:?}");
        assert_eq!(label_variants("순전파"), [["순전파"]]);
    }
}
