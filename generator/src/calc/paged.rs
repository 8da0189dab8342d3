//! `calc: paged-kv` — memory a batch of requests wastes in its KV cache when each request reserves
//! a contiguous region for the maximum length, against a paged cache of fixed-size blocks (vLLM's
//! PagedAttention), for several block sizes.
//!
//! Why a calculator: the argument for paging is arithmetic on a request-length mix — contiguous
//! reservation wastes max_len − len tokens per request, paging wastes fewer than one block per
//! request but needs a block table — and a card should show it for the mix it talks about, with
//! the block-table cost beside the saving so the trade-off of the block size is visible.

use super::fmt;
use super::html;
use super::kv::{Fields, KeyDoc, ParseError};
use super::kv_cache::{self, KvDtype, Scheme};
use super::models::ModelId;
use std::fmt::Write as _;

/// Bytes of one block-table entry (a 32-bit physical block number).
pub const ENTRY_BYTES: u128 = 4;

#[derive(Debug, Clone, PartialEq)]
pub struct PagedSpec {
    pub max_len: u64,
    pub blocks: Vec<u64>,
    pub lengths: Vec<u64>,
    pub model: Option<ModelId>,
    pub caption: Option<String>,
}

const KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "max_len",
        doc: "tokens a contiguous cache reserves per request",
    },
    KeyDoc {
        key: "blocks",
        doc: "block sizes in tokens, e.g. [8, 16, 32, 128]",
    },
    KeyDoc {
        key: "lengths",
        doc: "the requests' actual lengths in tokens (prompt + output), each ≤ max_len",
    },
    KeyDoc {
        key: "model",
        doc: "optional: converts tokens to bytes with its BF16 KV size per token",
    },
    KeyDoc {
        key: "caption",
        doc: "optional text",
    },
];

fn int_list(f: &Fields, key: &str, max: u64, limit: usize) -> Result<Vec<u64>, ParseError> {
    const KIND: &str = "paged-kv";
    let Some(items) = f.list(KIND, key, KEYS)? else {
        return Err((
            f.calc_line,
            format!("`calc: {KIND}`: missing key `{key}`"),
            super::kv::hint(KIND, KEYS),
        ));
    };
    if items.len() > limit {
        return Err((
            items[limit].1,
            format!("`calc: {KIND}`: more than {limit} values in `{key}`"),
            "shorten the list".into(),
        ));
    }
    let mut out = Vec::new();
    for (s, line) in items {
        match s.replace('_', "").parse::<u64>() {
            Ok(v) if (1..=max).contains(&v) => out.push(v),
            _ => {
                return Err((
                    line,
                    format!(
                        "`calc: {KIND}`: `{s}` in `{key}` is not a positive integer up to {}",
                        fmt::int(max.into())
                    ),
                    format!("e.g. `{key}: [16, 32]`"),
                ))
            }
        }
    }
    Ok(out)
}

pub(super) fn parse(f: &Fields) -> Result<PagedSpec, ParseError> {
    const KIND: &str = "paged-kv";
    f.only(KIND, KEYS)?;
    let max_len = f.positive(KIND, "max_len", 1 << 24, KEYS)?;
    let blocks = int_list(f, "blocks", 1 << 16, 8)?;
    let lengths = int_list(f, "lengths", 1 << 24, 1024)?;
    if let Some((i, &len)) = lengths.iter().enumerate().find(|(_, &l)| l > max_len) {
        let items = f.list(KIND, "lengths", KEYS)?.unwrap_or_default();
        let line = items.get(i).map_or(f.calc_line, |x| x.1);
        return Err((
            line,
            format!("`calc: {KIND}`: request length {len} is longer than max_len {max_len}"),
            "a contiguous cache cannot hold it; raise max_len or shorten the request".into(),
        ));
    }
    let model = match f.scalar(KIND, "model", KEYS)? {
        None => None,
        Some(_) => Some(f.model(KIND, KEYS)?),
    };
    let caption = f.scalar(KIND, "caption", KEYS)?.map(|(s, _)| s);
    Ok(PagedSpec {
        max_len,
        blocks,
        lengths,
        model,
        caption,
    })
}

/// Tokens allocated, wasted and block-table entries for one layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub allocated: u128,
    pub wasted: u128,
    pub table_entries: u128,
}

/// Contiguous: every request reserves max_len tokens.
pub fn contiguous(max_len: u64, lengths: &[u64]) -> Layout {
    let used: u128 = lengths.iter().map(|&l| u128::from(l)).sum();
    let allocated = lengths.len() as u128 * u128::from(max_len);
    Layout {
        allocated,
        wasted: allocated - used,
        table_entries: 0,
    }
}

/// Paged: each request holds ceil(len / block) blocks; the last one is partly empty.
pub fn paged(block: u64, lengths: &[u64]) -> Layout {
    let b = u128::from(block);
    let used: u128 = lengths.iter().map(|&l| u128::from(l)).sum();
    let entries: u128 = lengths.iter().map(|&l| u128::from(l).div_ceil(b)).sum();
    Layout {
        allocated: entries * b,
        wasted: entries * b - used,
        table_entries: entries,
    }
}

pub(super) fn render(spec: &PagedSpec) -> String {
    let per_token = spec
        .model
        .map(|m| kv_cache::bytes_per_token(&m.config(), Scheme::Gqa(m.config().kv_heads), KvDtype::Bf16));
    let used: u128 = spec.lengths.iter().map(|&l| u128::from(l)).sum();
    let n = spec.lengths.len();
    let id = format!("calc-paged-kv-m{}-n{}-u{}", spec.max_len, n, used);
    let bytes = |tokens: u128| match per_token {
        Some(p) => format!("<br><small>{}</small>", fmt::bytes_si(tokens * p)),
        None => String::new(),
    };
    let pct = |w: u128, a: u128| fmt::fixed(100.0 * w as f64 / a as f64, 1);
    let mut h = String::new();
    html::open_figure(&mut h, &id);
    html::open_table(
        &mut h,
        &[
            "배치 방식 (layout)",
            "할당 토큰 (allocated)",
            "낭비 토큰 (wasted)",
            "낭비 비율",
            "block table",
        ],
    );
    let c = contiguous(spec.max_len, &spec.lengths);
    let _ = writeln!(
        h,
        "<tr><td>연속 예약 contiguous (max_len {})</td><td class=\"num\">{}{}</td><td class=\"num\">{}{}</td><td class=\"num\">{} %</td><td class=\"num\">—</td></tr>",
        fmt::int(spec.max_len.into()),
        fmt::int(c.allocated),
        bytes(c.allocated),
        fmt::int(c.wasted),
        bytes(c.wasted),
        pct(c.wasted, c.allocated)
    );
    for &b in &spec.blocks {
        let p = paged(b, &spec.lengths);
        let _ = writeln!(
            h,
            "<tr><td>paged, block {b}</td><td class=\"num\">{}{}</td><td class=\"num\">{}{}</td><td class=\"num\">{} %</td><td class=\"num\">{} entries × {ENTRY_BYTES} B = {} B</td></tr>",
            fmt::int(p.allocated),
            bytes(p.allocated),
            fmt::int(p.wasted),
            bytes(p.wasted),
            pct(p.wasted, p.allocated),
            fmt::int(p.table_entries),
            fmt::int(p.table_entries * ENTRY_BYTES)
        );
    }
    html::close_table(&mut h);
    caption(&mut h, spec, per_token, used);
    h
}

/// The inputs, the two allocation rules, and the bytes per token when a model is named.
fn caption(h: &mut String, spec: &PagedSpec, per_token: Option<u128>, used: u128) {
    let n = spec.lengths.len();
    html::open_caption(h, spec.caption.as_deref());
    let shown: Vec<String> = spec
        .lengths
        .iter()
        .take(16)
        .map(|&l| fmt::int(l.into()))
        .collect();
    let _ = write!(
        h,
        "생성기가 빌드할 때 입력에서 계산한 값: 요청 {n}개, 길이 [{}{}] (합 {} 토큰), max_len = {}. \
         연속 예약은 요청마다 max_len 토큰을 잡고, paged는 요청마다 ⌈길이 / block⌉개의 block을 잡는다(마지막 block만 덜 찬다: 요청당 낭비 &lt; block). \
         block table은 block 하나에 {ENTRY_BYTES} B(32-bit 번호)로 셌다.",
        shown.join(", "),
        if n > 16 { ", …" } else { "" },
        fmt::int(used),
        fmt::int(spec.max_len.into()),
    );
    if let (Some(m), Some(p)) = (spec.model, per_token) {
        let _ = write!(
            h,
            " 바이트는 {}의 BF16 KV 토큰당 {} B로 환산했다(GB = 10<sup>9</sup> B).",
            m.config().label,
            fmt::int(p)
        );
    }
    html::close_figure(h);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_by_hand() {
        let lens = [100, 350, 1200, 4000];
        // Contiguous 4096 each: 16,384 allocated, 16,384 − 5,650 = 10,734 wasted.
        assert_eq!(
            contiguous(4096, &lens),
            Layout {
                allocated: 16_384,
                wasted: 10_734,
                table_entries: 0
            }
        );
        // Block 16: 7 + 22 + 75 + 250 = 354 blocks = 5,664 tokens, 14 wasted.
        assert_eq!(
            paged(16, &lens),
            Layout {
                allocated: 5_664,
                wasted: 14,
                table_entries: 354
            }
        );
        // Block 128: 1 + 3 + 10 + 32 = 46 blocks = 5,888 tokens, 238 wasted.
        assert_eq!(
            paged(128, &lens),
            Layout {
                allocated: 5_888,
                wasted: 238,
                table_entries: 46
            }
        );
    }

    #[test]
    fn errors_name_lines() {
        use crate::calc::kv::{entries, Fields};
        let f = |s: &str| parse(&Fields::new(entries(s).unwrap()));
        assert_eq!(
            f("calc: paged-kv\nmax_len: 100\nblocks: [16]\nlengths: [50, 200]\n")
                .unwrap_err()
                .0,
            4
        );
        assert_eq!(
            f("calc: paged-kv\nmax_len: 100\nblocks:\n  - 16\n  - 0\nlengths: [5]\n")
                .unwrap_err()
                .0,
            5
        );
        assert_eq!(
            f("calc: paged-kv\nmax_len: 100\nblocks: [16]\n").unwrap_err().0,
            1
        );
        assert_eq!(
            f("calc: paged-kv\nmax_len: 100\nblocks: [16]\nlengths: [5]\nmodel: gpt5\n")
                .unwrap_err()
                .0,
            5
        );
        assert!(f("calc: paged-kv\nmax_len: 100\nblocks: [16]\nlengths: [5]\nmodel: llama3-8b\n").is_ok());
    }
}
