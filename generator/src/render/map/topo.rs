//! The line network as a graph: edges between stations that are consecutive on some line, and
//! chains — runs of stations that every line passing them simply runs through.
//!
//! Why chains: a station with two neighbours and the same lines on both sides has no say in the
//! shape of the map; only the ends of its run do (interchanges, termini, branch points: the
//! *hubs*). The grid embedding places hubs and routes one path per chain, then sets the
//! chain's stations along that path (the approach of octilinear grid embedding, e.g. Bast,
//! Brosi & Storandt's octi).

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

/// A run hub → interior stations → hub, all with the same lines.
#[derive(Debug, Clone)]
pub struct Chain {
    /// Stations from one hub to the other (the two hubs may be the same station).
    pub stations: Vec<usize>,
    pub lines: Vec<usize>,
}

impl Chain {
    /// Stations strictly between the hubs.
    pub fn interior(&self) -> &[usize] {
        &self.stations[1..self.stations.len() - 1]
    }

    pub fn ends(&self) -> (usize, usize) {
        (
            self.stations[0],
            *self.stations.last().expect("a chain has two ends"),
        )
    }
}

/// The network.
#[derive(Debug, Clone)]
pub struct Topo {
    pub edges: Vec<Edge>,
    /// Per station: incident edges.
    pub incident: Vec<Vec<usize>>,
    pub hub: Vec<bool>,
    pub chains: Vec<Chain>,
    /// Per station: the chain it is inside of (None for hubs).
    pub chain_of: Vec<Option<usize>>,
    /// Per station: chains ending at it.
    pub chains_at: Vec<Vec<usize>>,
}

impl Topo {
    /// The network; with `contract` false every station is a hub and every chain one edge.
    pub fn build(input: &Input, contract: bool) -> Topo {
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
        let hub: Vec<bool> = (0..n)
            .map(|s| match incident[s].as_slice() {
                [e, f] if contract => edges[*e].lines != edges[*f].lines || Some(s) == input.start,
                _ => true,
            })
            .collect();
        let mut topo = Topo {
            edges,
            incident,
            hub,
            chains: Vec::new(),
            chain_of: vec![None; n],
            chains_at: vec![Vec::new(); n],
        };
        topo.find_chains();
        topo
    }

    fn other(&self, e: usize, s: usize) -> usize {
        let ed = &self.edges[e];
        if ed.a == s {
            ed.b
        } else {
            ed.a
        }
    }

    /// Walk every edge into chains; rings without a hub get their lowest station as hub.
    fn find_chains(&mut self) {
        let mut used = vec![false; self.edges.len()];
        loop {
            let start = (0..self.edges.len()).filter(|&e| !used[e]).find_map(|e| {
                let ed = &self.edges[e];
                [ed.a, ed.b].into_iter().find(|&s| self.hub[s]).map(|s| (s, e))
            });
            let (h, e0) = match start {
                Some(x) => x,
                None => match (0..self.edges.len()).find(|&e| !used[e]) {
                    Some(e) => {
                        let s = self.edges[e].a.min(self.edges[e].b);
                        self.hub[s] = true;
                        continue;
                    }
                    None => break,
                },
            };
            let mut stations = vec![h];
            let mut e = e0;
            let mut cur = h;
            loop {
                used[e] = true;
                cur = self.other(e, cur);
                stations.push(cur);
                if self.hub[cur] {
                    break;
                }
                e = *self.incident[cur]
                    .iter()
                    .find(|&&f| !used[f])
                    .expect("an interior station has a second edge");
            }
            let id = self.chains.len();
            for &s in &stations[1..stations.len() - 1] {
                self.chain_of[s] = Some(id);
            }
            self.chains_at[h].push(id);
            self.chains_at[cur].push(id);
            self.chains.push(Chain {
                lines: self.edges[e0].lines.clone(),
                stations,
            });
        }
    }
}
