//! The concept graph: cards as nodes, `requires` as edges (prerequisite → card), built with
//! petgraph, plus the per-card views the pages show (prerequisites, what it leads to, and every
//! path through it with its neighbours on that path).
//!
//! Why one graph type: validation (cycles, station order) and the pages (what a card leads to)
//! must agree on the same edges.

use crate::model::Book;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;
use std::collections::HashMap;

pub struct ConceptGraph {
    pub graph: DiGraph<String, ()>,
    pub index: HashMap<String, NodeIndex>,
}

/// Where a card sits on one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// Index of the path in `book.paths`.
    pub path: usize,
    /// Position of the card among the path's stations (0-based).
    pub pos: usize,
    pub prev: Option<String>,
    pub next: Option<String>,
}

impl ConceptGraph {
    /// Build from known cards; `requires` naming unknown ids are skipped (validation reports them).
    pub fn build(book: &Book) -> Self {
        let mut graph = DiGraph::new();
        let mut index = HashMap::new();
        for c in &book.cards {
            index
                .entry(c.id.clone())
                .or_insert_with(|| graph.add_node(c.id.clone()));
        }
        for c in &book.cards {
            let to = index[&c.id];
            for r in &c.requires {
                if let Some(&from) = index.get(r) {
                    if graph.find_edge(from, to).is_none() {
                        graph.add_edge(from, to, ());
                    }
                }
            }
        }
        Self { graph, index }
    }

    fn neighbours(&self, id: &str, dir: Direction) -> Vec<String> {
        let Some(&n) = self.index.get(id) else {
            return Vec::new();
        };
        let mut v: Vec<String> = self
            .graph
            .neighbors_directed(n, dir)
            .map(|m| self.graph[m].clone())
            .collect();
        v.sort();
        v
    }

    /// Direct prerequisites of a card.
    pub fn prerequisites(&self, id: &str) -> Vec<String> {
        self.neighbours(id, Direction::Incoming)
    }

    /// Cards that list this one as a prerequisite: "다음에 배울 수 있는 것".
    pub fn leads_to(&self, id: &str) -> Vec<String> {
        self.neighbours(id, Direction::Outgoing)
    }

    /// Every cycle in the graph, each as the ids in order (first id repeated at the end).
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for scc in petgraph::algo::tarjan_scc(&self.graph) {
            let self_loop = scc.len() == 1 && self.graph.find_edge(scc[0], scc[0]).is_some();
            if scc.len() < 2 && !self_loop {
                continue;
            }
            out.push(self.cycle_in(&scc));
        }
        out.sort();
        out
    }

    /// One concrete cycle inside a strongly connected component (walk until a node repeats).
    fn cycle_in(&self, scc: &[NodeIndex]) -> Vec<String> {
        let members: std::collections::HashSet<_> = scc.iter().copied().collect();
        let start = *scc
            .iter()
            .min_by_key(|n| &self.graph[**n])
            .expect("non-empty scc");
        let mut seen: Vec<NodeIndex> = vec![start];
        let mut cur = start;
        loop {
            let mut next: Vec<NodeIndex> = self
                .graph
                .neighbors(cur)
                .filter(|n| members.contains(n))
                .collect();
            next.sort_by_key(|n| self.graph[*n].clone());
            let n = next[0];
            if let Some(pos) = seen.iter().position(|s| *s == n) {
                let mut cyc: Vec<String> = seen[pos..].iter().map(|i| self.graph[*i].clone()).collect();
                cyc.push(self.graph[n].clone());
                return cyc;
            }
            seen.push(n);
            cur = n;
        }
    }
}

/// Every path through a card, in the book's path order.
pub fn stops(book: &Book, id: &str) -> Vec<Stop> {
    let mut out = Vec::new();
    for (pi, p) in book.paths.iter().enumerate() {
        for (pos, s) in p.stations.iter().enumerate() {
            if s == id {
                out.push(Stop {
                    path: pi,
                    pos,
                    prev: pos.checked_sub(1).map(|i| p.stations[i].clone()),
                    next: p.stations.get(pos + 1).cloned(),
                });
            }
        }
    }
    out
}
