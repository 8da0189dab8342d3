//! Making room where a layout ran out of it: an empty column and an empty row next to a
//! station, everything beyond moved over.
//!
//! On which side: a name that found no place can only go where the station's lines leave
//! room, so the new column goes on the side (left or right) its lines take less of, and the
//! new row likewise (above or below). Room made on the side its lines fill is taken by those
//! lines again, and the name would find no place round after round. A hop that found no path
//! gets room on every side of its stations.

use super::Grid;

/// Where room is needed: next to a station, with the sides for the new column and row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub station: usize,
    pub left: bool,
    pub above: bool,
}

/// Directions (indices into `DIRS`) that lead left, right, up and down.
const LEFT: [usize; 3] = [3, 4, 5];
const RIGHT: [usize; 3] = [7, 0, 1];
const UP: [usize; 3] = [5, 6, 7];
const DOWN: [usize; 3] = [1, 2, 3];

impl Need {
    /// Room for a path at station `s`: a column and a row on each side (which side blocked
    /// it is not known; a station next to the grid's edge is often boxed in by paths running
    /// between it and the edge).
    pub fn path(s: usize) -> [Need; 2] {
        [true, false].map(|side| Need {
            station: s,
            left: side,
            above: side,
        })
    }

    /// Room for the name of station `s` standing on `nodes`: on the sides its lines leave
    /// freer (ties keep the sides a path gets).
    pub fn name(g: &Grid, s: usize, nodes: &[usize]) -> Need {
        let mut used = [0u32; 8];
        for &v in nodes {
            for (d, n) in used.iter_mut().enumerate() {
                let out = g.step(v, d).is_some_and(|u| !nodes.contains(&u));
                if out && g.port[v][d].is_some() {
                    *n += 1;
                }
            }
        }
        let side = |ds: [usize; 3]| ds.iter().map(|&d| used[d]).sum::<u32>();
        Need {
            station: s,
            left: side(LEFT) < side(RIGHT),
            above: side(UP) <= side(DOWN),
        }
    }
}

/// Make room for each need: an empty column and row beside its station (`pos` are the
/// stations' nodes, the first of a row), everything beyond moved over. Returns the grid's new
/// size.
pub fn widen(pos: &mut [(i32, i32)], w: usize, h: usize, needs: &[Need]) -> (usize, usize) {
    // A new column at index c moves everything at c and beyond one to the right.
    let mut cols: Vec<i32> = needs
        .iter()
        .map(|n| pos[n.station].0 + i32::from(!n.left))
        .collect();
    let mut rows: Vec<i32> = needs
        .iter()
        .map(|n| pos[n.station].1 + i32::from(!n.above))
        .collect();
    cols.sort_unstable();
    cols.dedup();
    rows.sort_unstable();
    rows.dedup();
    for p in pos.iter_mut() {
        let dx = cols.iter().filter(|&&c| p.0 >= c).count() as i32;
        let dy = rows.iter().filter(|&&r| p.1 >= r).count() as i32;
        *p = (p.0 + dx, p.1 + dy);
    }
    (w + cols.len(), h + rows.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_goes_on_the_side_asked_for() {
        let mut pos = vec![(2, 2), (1, 2), (3, 2), (2, 1), (2, 3)];
        let need = Need {
            station: 0,
            left: true,
            above: false,
        };
        assert_eq!(widen(&mut pos, 5, 5, &[need]), (6, 6));
        // The station and all right of it move right; it stays, all below it move down.
        assert_eq!(pos, vec![(3, 2), (1, 2), (4, 2), (3, 1), (3, 4)]);
        // Room for a path: on every side.
        let mut pos = vec![(2, 2), (1, 2), (3, 2), (2, 1), (2, 3)];
        assert_eq!(widen(&mut pos, 5, 5, &Need::path(0)), (7, 7));
        assert_eq!(pos, vec![(3, 3), (1, 3), (5, 3), (3, 1), (3, 5)]);
    }

    #[test]
    fn a_name_gets_room_where_its_lines_leave_it() {
        // Lines leave the middle node east and north-east, and south: room goes left and up.
        let mut g = Grid::new(3, 3);
        let v = g.node(1, 1).unwrap();
        for (d, to) in [(0, (2, 1)), (7, (2, 0)), (2, (1, 2))] {
            let u = g.node(to.0, to.1).unwrap();
            g.take(&[v, u], d, 1);
        }
        let n = Need::name(&g, 0, &[v]);
        assert!(n.left && n.above);
        // Lines leaving west and north: room goes right and down.
        let mut g = Grid::new(3, 3);
        for to in [(0, 1), (1, 0), (0, 0)] {
            let u = g.node(to.0, to.1).unwrap();
            g.take(&[v, u], 0, 1);
        }
        let n = Need::name(&g, 0, &[v]);
        assert!(!n.left && !n.above);
    }
}
