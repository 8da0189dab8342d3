//! The line network as a graph: hops between stations that are consecutive on some line, with
//! the lines that run on each.
//!
//! Why one path per hop (and not per run of stations a line simply runs through, as octilinear
//! embeddings often do): here every station is placed first, with room for its name, so the
//! routes only join fixed points; a run that should be straight is straight because its
//! stations were placed in a line.

use super::input::Input;
use std::collections::BTreeMap;

/// Two stations that are consecutive on at least one line.
#[derive(Debug, Clone)]
pub struct Edge {
    pub a: usize,
    pub b: usize,
    /// Lines running on this edge, sorted, each once.
    pub lines: Vec<usize>,
}

/// A hop to route: its two stations and the lines on it (sorted).
#[derive(Debug, Clone)]
pub struct Chain {
    pub stations: [usize; 2],
    pub lines: Vec<usize>,
}

impl Chain {
    pub fn ends(&self) -> (usize, usize) {
        (self.stations[0], self.stations[1])
    }
}

/// The network.
#[derive(Debug, Clone)]
pub struct Topo {
    pub edges: Vec<Edge>,
    /// Per station: incident edges.
    pub incident: Vec<Vec<usize>>,
    /// One chain per edge, in the same order.
    pub chains: Vec<Chain>,
    /// Per station: chains ending at it.
    pub chains_at: Vec<Vec<usize>>,
}

impl Topo {
    pub fn build(input: &Input) -> Topo {
        let n = input.stations.len();
        let mut edge_of: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        let mut edges: Vec<Edge> = Vec::new();
        for (li, l) in input.lines.iter().enumerate() {
            for w in l.stops.windows(2) {
                let key = (w[0].min(w[1]), w[0].max(w[1]));
                let e = *edge_of.entry(key).or_insert_with(|| {
                    edges.push(Edge {
                        a: key.0,
                        b: key.1,
                        lines: Vec::new(),
                    });
                    edges.len() - 1
                });
                if !edges[e].lines.contains(&li) {
                    edges[e].lines.push(li);
                    edges[e].lines.sort();
                }
            }
        }
        let mut incident = vec![Vec::new(); n];
        for (e, ed) in edges.iter().enumerate() {
            incident[ed.a].push(e);
            incident[ed.b].push(e);
        }
        let chains = edges
            .iter()
            .map(|e| Chain {
                stations: [e.a, e.b],
                lines: e.lines.clone(),
            })
            .collect();
        Topo {
            chains_at: incident.clone(),
            edges,
            incident,
            chains,
        }
    }
}
