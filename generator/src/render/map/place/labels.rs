//! Label placement: each station label at its first free candidate box.
//!
//! Why apart: labels are placed before routing and become obstacles for it; the order of
//! candidates (above, below, beside, diagonal) is a style decision kept in one place.

use super::*;

/// Candidate label boxes around a station marker, in order of preference.
pub(super) fn candidates(
    pill: Rect,
    w: f64,
    h: f64,
    free_left: bool,
    free_right: bool,
) -> Vec<(Rect, Anchor)> {
    let g = LABEL_GAP;
    let cx = (pill.x0 + pill.x1) / 2.0;
    let cy = (pill.y0 + pill.y1) / 2.0;
    let above = (pill.y0 - g - h, pill.y0 - g);
    let below = (pill.y1 + g, pill.y1 + g + h);
    let beside = ((cy - h / 2.0).round(), (cy - h / 2.0).round() + h);
    let level_top = (pill.y0 - h, pill.y0);
    let level_bottom = (pill.y1, pill.y1 + h);
    let centered = ((cx - w / 2.0) * 2.0).round() / 2.0;
    let mut v: Vec<(f64, (f64, f64), Align)> = vec![
        (centered, above, Align::Middle),
        (centered, below, Align::Middle),
        (pill.x0, above, Align::Start),
        (pill.x1 - w, above, Align::End),
        (pill.x1 + g, level_top, Align::Start),
        (pill.x0 - g - w, level_top, Align::End),
        (pill.x0, below, Align::Start),
        (pill.x1 - w, below, Align::End),
        (pill.x1 + g, level_bottom, Align::Start),
        (pill.x0 - g - w, level_bottom, Align::End),
    ];
    if free_right {
        v.insert(2, (pill.x1 + g, beside, Align::Start));
    }
    if free_left {
        v.push((pill.x0 - g - w, beside, Align::End));
    }
    v.into_iter()
        .map(|(x0, (y0, y1), align)| {
            let r = Rect::new(x0, y0, x0 + w, y1);
            let ax = match align {
                Align::Start => r.x0,
                Align::Middle => (r.x0 + r.x1) / 2.0,
                Align::End => r.x1,
            };
            (
                r,
                Anchor {
                    x: ax,
                    y: r.y0 + BASELINE,
                    align,
                },
            )
        })
        .collect()
}

impl Frame<'_> {
    /// Place labels; `Err` lists the stations that found no free place.
    pub(super) fn labels(&self, xs: &[f64]) -> Result<Vec<(Rect, Anchor)>, Vec<usize>> {
        let mut hard: Vec<Rect> = self.fixed_strokes(xs);
        for s in 0..self.input.stations.len() {
            hard.push(self.pill(xs, s).inflate(1.5));
        }
        let mut placed: Vec<(Rect, Anchor)> = Vec::with_capacity(self.input.stations.len());
        let mut failed = Vec::new();
        // Left to right, top to bottom.
        let mut order: Vec<usize> = (0..self.input.stations.len()).collect();
        order.sort_by(|&a, &b| {
            let (ia, ib) = (self.net.station_item[a], self.net.station_item[b]);
            self.net.col[a]
                .cmp(&self.net.col[b])
                .then(self.ys[ia].total_cmp(&self.ys[ib]))
        });
        let mut result = vec![None; self.input.stations.len()];
        for s in order {
            let it = self.net.station_item[s];
            let slots = &self.net.items[it].slots;
            let free_left = slots.iter().all(|&sl| self.net.slots[sl].left.is_none());
            let free_right = slots.iter().all(|&sl| self.net.slots[sl].right.is_none());
            let pill = self.pill(xs, s);
            let mut ok = None;
            for (r, a) in candidates(pill, self.label_w[s].0, self.label_w[s].1, free_left, free_right) {
                let g = r.inflate(CLEAR);
                if hard.iter().any(|h| h.overlaps(&g))
                    || placed.iter().any(|(p, _)| p.inflate(CLEAR).overlaps(&g))
                {
                    continue;
                }
                ok = Some((r, a));
                break;
            }
            match ok {
                Some(l) => {
                    placed.push(l);
                    result[s] = Some(l);
                }
                None => failed.push(s),
            }
        }
        if failed.is_empty() {
            Ok(result.into_iter().map(|r| r.expect("placed")).collect())
        } else {
            Err(failed)
        }
    }
}
