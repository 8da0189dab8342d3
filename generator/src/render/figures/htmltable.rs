//! HTML tables of measured figures: in their own horizontal scroll box, and folded beyond
//! [`VISIBLE_ROWS`] rows.
//!
//! Why: a table wider than the text column must scroll inside itself, not push the page sideways;
//! and a table of 169 rows buries the eight a card talks about. So a long table shows the rows the
//! card discusses and keeps the rest one click away under a `<details>` fold.

use std::fmt::Write as _;

/// Most rows a measured table shows before folding the rest.
pub(super) const VISIBLE_ROWS: usize = 20;

/// A table: header cells and rows of cells (HTML), and which rows show before the fold. A row of
/// a single cell is a heading inside the table and spans every column.
pub(super) struct HtmlTable {
    pub(super) head: Vec<String>,
    pub(super) rows: Vec<Vec<String>>,
    pub(super) shown: Vec<bool>,
}

impl HtmlTable {
    /// A table whose rows all show, unless there are more than [`VISIBLE_ROWS`]: then the first
    /// groups (rows sharing a `group` key, in the order of `prefer`, lower first) that fit show.
    pub(super) fn new<G: PartialEq>(
        head: Vec<String>,
        rows: Vec<Vec<String>>,
        group: &[G],
        prefer: impl Fn(&G) -> i64,
    ) -> HtmlTable {
        let shown = shown_rows(group, prefer);
        HtmlTable { head, rows, shown }
    }

    /// The HTML: the shown rows in a scroll box, the others in a fold of the same columns.
    pub(super) fn html(&self) -> String {
        let hidden: Vec<&Vec<String>> = self
            .rows
            .iter()
            .zip(&self.shown)
            .filter(|(_, s)| !**s)
            .map(|(r, _)| r)
            .collect();
        let shown: Vec<&Vec<String>> = self
            .rows
            .iter()
            .zip(&self.shown)
            .filter(|(_, s)| **s)
            .map(|(r, _)| r)
            .collect();
        let mut h = self.table(&shown);
        if !hidden.is_empty() {
            let _ = writeln!(
                h,
                "<details class=\"hdlc-fold\"><summary>나머지 {}행 보기 (show the other {} rows)</summary>",
                hidden.len(),
                hidden.len()
            );
            h.push_str(&self.table(&hidden));
            h.push_str("</details>\n");
        }
        h
    }

    fn table(&self, rows: &[&Vec<String>]) -> String {
        let mut h = String::from("<div class=\"hdlc-table-scroll\">\n<table>\n<thead>\n<tr>");
        for c in &self.head {
            let _ = write!(h, "<th>{c}</th>");
        }
        h.push_str("</tr>\n</thead>\n<tbody>\n");
        for r in rows {
            h.push_str("<tr>");
            match r.as_slice() {
                // A heading row inside the table (a profiler's kind): one cell across.
                [one] if self.head.len() > 1 => {
                    let _ = write!(
                        h,
                        "<td colspan=\"{}\" class=\"hdlc-group\">{one}</td>",
                        self.head.len()
                    );
                }
                cells => {
                    for c in cells {
                        let _ = write!(h, "<td>{c}</td>");
                    }
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table>\n</div>\n");
        h
    }
}

/// Which rows show: all up to [`VISIBLE_ROWS`]; beyond, whole groups by preference while they
/// fit (at least the first group, cut to [`VISIBLE_ROWS`] if it alone is too long).
fn shown_rows<G: PartialEq>(group: &[G], prefer: impl Fn(&G) -> i64) -> Vec<bool> {
    let n = group.len();
    if n <= VISIBLE_ROWS {
        return vec![true; n];
    }
    let mut keys: Vec<&G> = Vec::new();
    for g in group {
        if !keys.contains(&g) {
            keys.push(g);
        }
    }
    // Stable: equal preferences keep their order of first appearance.
    keys.sort_by_key(|g| prefer(g));
    let mut shown = vec![false; n];
    let mut count = 0;
    for (k, g) in keys.iter().enumerate() {
        let size = group.iter().filter(|x| x == g).count();
        if k > 0 && count + size > VISIBLE_ROWS {
            break;
        }
        for (i, x) in group.iter().enumerate() {
            if x == *g && count < VISIBLE_ROWS {
                shown[i] = true;
                count += 1;
            }
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tables_fold_whole_groups() {
        let groups: Vec<u32> = (0..40).map(|i| i / 8).collect();
        // Prefer the last groups (largest sizes): groups 4, 3 fit (16 rows), 2 would make 24.
        let shown = shown_rows(&groups, |g| -(*g as i64));
        assert_eq!(shown.iter().filter(|s| **s).count(), 16);
        assert!(shown[32] && shown[24] && !shown[16]);
        let short: Vec<u32> = vec![0; 12];
        assert!(shown_rows(&short, |_| 0).iter().all(|s| *s));
        let one_big: Vec<u32> = vec![0; 50];
        assert_eq!(
            shown_rows(&one_big, |_| 0).iter().filter(|s| **s).count(),
            VISIBLE_ROWS
        );
    }
}
