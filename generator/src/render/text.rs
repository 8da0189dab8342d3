//! Small pieces of page text the renderer writes as HTML, so that nothing reaches the reader as
//! raw Markdown or TeX: a card's summary (which templates also place inside HTML, where Markdown
//! is not parsed), the line that names the source file above an included code block, and the
//! scroll box around every table a figure draws.

use crate::calc::fmt::esc;
use crate::markup::{latex_to_mathml, text_math};

/// Plain text with `$…$` math, as HTML: the text escaped, the math as MathML. Math that does not
/// parse stays as escaped text (validation reports malformed math in card bodies; a summary is
/// front matter, so the page audit is what catches it there).
pub fn inline_html(text: &str) -> String {
    let mut spans = Vec::new();
    text_math(text, 0, &mut spans);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for piece in spans {
        let crate::markup::Piece::Math {
            latex,
            display,
            range,
        } = piece
        else {
            continue;
        };
        out.push_str(&esc(&text[at..range.start]));
        match latex_to_mathml(&latex, display) {
            Ok(m) => out.push_str(&m),
            Err(_) => out.push_str(&esc(&text[range.clone()])),
        }
        at = range.end;
    }
    out.push_str(&esc(&text[at..]));
    out
}

/// An included excerpt as Markdown: the line naming its file (and function) first, as HTML,
/// then the code block. The file comes above the code because a reader looks for it before
/// reading; the line is HTML because Markdown inside an HTML block is not parsed (a `` `name` ``
/// there would reach the reader with its backticks).
pub fn include_block(
    lang: &str,
    code: &str,
    file: &str,
    name: Option<&str>,
    lines: (usize, usize),
) -> String {
    let what = name
        .map(|k| format!(" · <code>{}</code>", esc(k)))
        .unwrap_or_default();
    // A fence longer than any backtick run in the code keeps it intact.
    let fence = "`".repeat(3.max(longest_backtick_run(code) + 1));
    format!(
        "\n\n<p class=\"hdlc-source\"><code>kernels/{}</code>{what} · {}–{}행 — 이 책의 harness가 실행하는 코드 그대로</p>\n\n{fence}{lang}\n{code}\n{fence}\n\n",
        esc(file),
        lines.0,
        lines.1
    )
}

/// A card title split into its main part and a trailing parenthesized name ("FlashAttention
/// Forward (FlashAttention Forward Pass)" → "FlashAttention Forward", "(FlashAttention Forward
/// Pass)"), so a narrow line box can show the main part alone. Titles without one: (title, "").
pub fn split_title(title: &str) -> (&str, &str) {
    let t = title.trim_end();
    if t.ends_with(')') {
        // The parenthesis that closes at the end: walk back to its opening one.
        let mut depth = 0;
        for (i, c) in t.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        let main = t[..i].trim_end();
                        if !main.is_empty() && t[..i].ends_with(' ') {
                            return (main, &t[i..]);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    (t, "")
}

/// The heading a title is filed under in the card index: its first letter, upper-cased, or for
/// Hangul its initial consonant with tense ones filed under the plain one (ㄲ under ㄱ), as a
/// Korean dictionary does; "0–9" for a digit, "기타" for anything else.
pub fn index_initial(title: &str) -> String {
    const CHOSEONG: [char; 19] = [
        'ㄱ', 'ㄱ', 'ㄴ', 'ㄷ', 'ㄷ', 'ㄹ', 'ㅁ', 'ㅂ', 'ㅂ', 'ㅅ', 'ㅅ', 'ㅇ', 'ㅈ', 'ㅈ', 'ㅊ', 'ㅋ', 'ㅌ',
        'ㅍ', 'ㅎ',
    ];
    match title.trim_start().chars().next() {
        Some(c @ '가'..='힣') => CHOSEONG[(c as usize - '가' as usize) / 588].to_string(),
        Some(c) if c.is_ascii_alphabetic() => c.to_ascii_uppercase().to_string(),
        Some(c) if c.is_ascii_digit() => "0–9".to_string(),
        _ => "기타".to_string(),
    }
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Put every `<table>` of a figure's HTML in its own horizontal scroll box (mdBook's
/// `table-wrapper`, the box it gives Markdown tables), unless it already sits in one: a wide
/// table then scrolls inside the column instead of pushing the page sideways.
pub fn wrap_tables(html: &str) -> String {
    const OPEN: &str = "<div class=\"table-wrapper\">";
    let mut out = String::with_capacity(html.len() + 64);
    let mut rest = html;
    let mut depth_wrapped: Vec<bool> = Vec::new();
    loop {
        let next_open = rest.find("<table");
        let next_close = rest.find("</table>");
        match (next_open, next_close) {
            (Some(o), c) if c.is_none_or(|c| o < c) => {
                let before = &rest[..o];
                let wrapped = out.trim_end().ends_with(OPEN) || before.trim_end().ends_with(OPEN);
                out.push_str(before);
                if !wrapped {
                    out.push_str(OPEN);
                }
                depth_wrapped.push(!wrapped);
                out.push_str("<table");
                rest = &rest[o + "<table".len()..];
            }
            (_, Some(c)) => {
                out.push_str(&rest[..c + "</table>".len()]);
                if depth_wrapped.pop() == Some(true) {
                    out.push_str("</div>");
                }
                rest = &rest[c + "</table>".len()..];
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_math_becomes_mathml_and_text_is_escaped() {
        let h = inline_html("꼬리를 $K$ 방향으로 <나눈다> & 끝");
        assert!(h.contains("<math"), "{h}");
        assert!(!h.contains('$'), "{h}");
        assert!(h.contains("&lt;나눈다&gt; &amp; 끝"), "{h}");
        assert_eq!(inline_html("가격 $5 정도"), "가격 $5 정도");
    }

    #[test]
    fn include_names_the_file_above_the_code_as_html() {
        let md = include_block("cuda", "int x = 1;", "a.cu", Some("k<1>"), (3, 9));
        let (head, code) = md.split_once("```cuda").unwrap();
        assert!(head.contains("<code>kernels/a.cu</code> · <code>k&lt;1&gt;</code> · 3–9행"));
        assert!(!head.contains('`'), "no Markdown in the HTML line: {head}");
        assert!(code.contains("int x = 1;"));
    }

    #[test]
    fn titles_split_before_their_trailing_english_name() {
        assert_eq!(
            split_title("FlashAttention Forward (FlashAttention Forward Pass)"),
            ("FlashAttention Forward", "(FlashAttention Forward Pass)")
        );
        assert_eq!(
            split_title("Attention(Q) 보기 (Reading (Nested) Attention)"),
            ("Attention(Q) 보기", "(Reading (Nested) Attention)")
        );
        assert_eq!(split_title("산술 강도"), ("산술 강도", ""));
        assert_eq!(split_title("f(x)"), ("f(x)", ""));
    }

    #[test]
    fn index_initials_follow_the_alphabet_and_the_initial_consonant() {
        assert_eq!(index_initial("vLLM Deep Dive"), "V");
        assert_eq!(index_initial("산술 강도"), "ㅅ");
        assert_eq!(index_initial("까다로운 것"), "ㄱ");
        assert_eq!(index_initial("힙"), "ㅎ");
        assert_eq!(index_initial("2D/3D"), "0–9");
        assert_eq!(index_initial("«인용»"), "기타");
    }

    #[test]
    fn every_table_gets_one_scroll_box() {
        let h = wrap_tables("<figure><table><tr><td>1</td></tr></table><p>x</p><table></table></figure>");
        assert_eq!(h.matches("<div class=\"table-wrapper\"><table").count(), 2, "{h}");
        assert_eq!(h.matches("</table></div>").count(), 2, "{h}");
        let already = "<div class=\"table-wrapper\">\n<table></table>\n</div>";
        assert_eq!(wrap_tables(already), already);
    }
}
