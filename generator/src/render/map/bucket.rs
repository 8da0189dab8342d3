//! A uniform bucket grid over the drawing, so "what is near this box" is a few buckets away
//! rather than a scan of everything (label placement asks it thousands of times).

use super::geom::Rect;
use std::cell::{Cell, RefCell};

pub struct Buckets {
    x0: f64,
    y0: f64,
    size: f64,
    nx: usize,
    ny: usize,
    cells: Vec<Vec<usize>>,
    /// Per item, the visit it was last seen in (so each item is visited once per query).
    seen: RefCell<Vec<u32>>,
    visit: Cell<u32>,
}

impl Buckets {
    /// Buckets of `size` units covering `area`.
    pub fn new(area: Rect, size: f64) -> Buckets {
        let nx = ((area.x1 - area.x0) / size).ceil().max(1.0) as usize + 1;
        let ny = ((area.y1 - area.y0) / size).ceil().max(1.0) as usize + 1;
        Buckets {
            x0: area.x0,
            y0: area.y0,
            size,
            nx,
            ny,
            cells: vec![Vec::new(); nx * ny],
            seen: RefCell::new(Vec::new()),
            visit: Cell::new(0),
        }
    }

    fn range(&self, r: &Rect) -> (usize, usize, usize, usize) {
        let clamp = |v: f64, n: usize| (v.max(0.0) as usize).min(n - 1);
        (
            clamp(((r.x0 - self.x0) / self.size).floor(), self.nx),
            clamp(((r.x1 - self.x0) / self.size).floor(), self.nx),
            clamp(((r.y0 - self.y0) / self.size).floor(), self.ny),
            clamp(((r.y1 - self.y0) / self.size).floor(), self.ny),
        )
    }

    pub fn insert(&mut self, r: &Rect, item: usize) {
        let (a, b, c, d) = self.range(r);
        for y in c..=d {
            for x in a..=b {
                self.cells[y * self.nx + x].push(item);
            }
        }
        let seen = self.seen.get_mut();
        if seen.len() <= item {
            seen.resize(item + 1, 0);
        }
    }

    /// Does any item whose buckets meet `r`'s pass `f`? (Items may be tried more than once.)
    pub fn any(&self, r: &Rect, mut f: impl FnMut(usize) -> bool) -> bool {
        let (a, b, c, d) = self.range(r);
        for y in c..=d {
            for x in a..=b {
                if self.cells[y * self.nx + x].iter().any(|&i| f(i)) {
                    return true;
                }
            }
        }
        false
    }

    /// Call `f` once for each item whose buckets meet `r`'s.
    pub fn each(&self, r: &Rect, mut f: impl FnMut(usize)) {
        let v = self.visit.get().wrapping_add(1);
        self.visit.set(v);
        let mut seen = self.seen.borrow_mut();
        if v == 0 {
            seen.iter_mut().for_each(|x| *x = u32::MAX);
        }
        let (a, b, c, d) = self.range(r);
        for y in c..=d {
            for x in a..=b {
                for &i in &self.cells[y * self.nx + x] {
                    if seen[i] != v {
                        seen[i] = v;
                        f(i);
                    }
                }
            }
        }
    }

    /// Items whose buckets meet `r`'s, each once, in increasing order.
    pub fn near(&self, r: &Rect) -> Vec<usize> {
        let mut out = Vec::new();
        self.each(r, |i| out.push(i));
        out.sort_unstable();
        out
    }
}
