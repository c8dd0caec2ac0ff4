//! The dependency graph and the cycle search over it.
//!
//! Nodes are transactions (plus, for real-time order, a chain of virtual
//! "clock" nodes); edges are Adya's dependencies:
//!
//! ```text
//!          ww / wr                 rw (anti-dependency)
//!   T1 ─────────────► T2     T2 ─────────────► T3      T3 ──ww──► T1 ?
//!   "T2 saw or overwrote      "T2 read a version that      a cycle: no serial
//!    what T1 wrote"            T3 later overwrote"          order can exist
//! ```
//!
//! Finding cycles: Tarjan's algorithm splits the graph into strongly connected
//! components, and every cycle lives inside one. Within a component we look
//! for the *most damning* cycle first — only ww edges (G0), then no rw edges
//! (G1c), then exactly one rw edge (G-single), then anything (G2) — because a
//! history that has a G0 cycle may also show a shorter G2 cycle, and the
//! weaker anomaly would understate the bug. Each search is a breadth-first
//! search, so the cycle reported is the shortest of its class from its start.
//!
//! The G-single search (one rw edge plus a path back without rw edges,
//! tried for each rw edge) is the only one that can cost more than a few
//! passes over a component, so it has a budget of edges examined. When the
//! budget runs out before a G-single is found, the component is reported
//! with the cycle of the next class (G2) *and* a mark that the search gave
//! up ([`FoundCycle::gave_up`]): a G-single may still hide there.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};

use crate::history::{Elem, Key};

/// The kind of a dependency edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    /// Write-write: the target installed the next version after the source's.
    Ww,
    /// Write-read: the target read a version the source installed.
    Wr,
    /// Read-write (anti-dependency): the target installed a version after the
    /// one the source read.
    Rw,
    /// Real-time: the source completed before the target was invoked.
    Realtime,
}

impl EdgeKind {
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
            EdgeKind::Realtime => "rt",
        }
    }
}

/// Why an edge exists; rendered into text only for reported cycles.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cause {
    /// `prev` and `next` are consecutive elements of `key`'s version order.
    ListWw {
        key: Key,
        prev: Elem,
        next: Elem,
    },
    /// The reader saw the first `len` (> 0) elements of `key`'s version order.
    ListWr {
        key: Key,
        len: u32,
    },
    /// The reader saw the first `len` elements; `next` comes later.
    ListRw {
        key: Key,
        len: u32,
        next: Elem,
    },
    /// The target read `prev` and then overwrote it with `next`.
    RegWw {
        key: Key,
        prev: Elem,
        next: Elem,
    },
    RegWr {
        key: Key,
        value: Elem,
    },
    /// The source read `read` (None = initial state); the target wrote
    /// `wrote`, which is known to come after it.
    RegRw {
        key: Key,
        read: Option<Elem>,
        wrote: Elem,
    },
    Realtime,
}

#[derive(Clone, Debug)]
pub(crate) struct Edge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeKind,
    /// The scan range, when the read side of the edge was a predicate read.
    pub scan: Option<(Key, Key)>,
    pub cause: Cause,
}

impl Edge {
    /// Lower is preferred when several parallel edges could explain one hop
    /// of a cycle: the explanation with the fewest anti-dependencies is the
    /// strongest (and most precise) one.
    fn rank(&self) -> u8 {
        match (self.kind, self.scan.is_some()) {
            (EdgeKind::Ww, _) => 0,
            (EdgeKind::Wr, false) => 1,
            (EdgeKind::Wr, true) => 2,
            (EdgeKind::Realtime, _) => 3,
            (EdgeKind::Rw, false) => 4,
            (EdgeKind::Rw, true) => 5,
        }
    }
}

/// The most severe cycle found in one strongly connected component.
pub(crate) struct FoundCycle {
    /// Edge ids, in order around the cycle.
    pub edges: Vec<u32>,
    /// Nodes (transactions and clock nodes) in the component.
    pub component: usize,
    /// The G-single search ran out of its budget before it found one, so
    /// the cycle (of a later class) may understate the component.
    pub gave_up: bool,
}

/// The dependency graph. Nodes `0..n_txns` are transactions (indexes into the
/// history); nodes above are virtual real-time nodes.
pub(crate) struct Graph {
    pub n_txns: usize,
    pub n_nodes: usize,
    pub edges: Vec<Edge>,
    seen: HashMap<(u32, u32, EdgeKind, bool), u32>,
    /// Edges the cycle search looked at (Tarjan's passes and the
    /// breadth-first searches, each edge each time): its work, which a
    /// test can bound without a clock.
    pub search_steps: Cell<u64>,
}

impl Graph {
    pub fn new(n_txns: usize) -> Self {
        Graph {
            n_txns,
            n_nodes: n_txns,
            edges: Vec::new(),
            seen: HashMap::new(),
            search_steps: Cell::new(0),
        }
    }

    pub fn add_virtual(&mut self) -> u32 {
        self.n_nodes += 1;
        (self.n_nodes - 1) as u32
    }

    pub fn add(
        &mut self,
        from: u32,
        to: u32,
        kind: EdgeKind,
        scan: Option<(Key, Key)>,
        cause: Cause,
    ) {
        // A transaction never depends on itself; its own reads of its own
        // writes are checked as internal consistency instead.
        if from == to {
            return;
        }
        let next_id = self.edges.len() as u32;
        if let std::collections::hash_map::Entry::Vacant(slot) =
            self.seen.entry((from, to, kind, scan.is_some()))
        {
            slot.insert(next_id);
            self.edges.push(Edge {
                from,
                to,
                kind,
                scan,
                cause,
            });
        }
    }

    pub fn is_virtual(&self, node: u32) -> bool {
        node as usize >= self.n_txns
    }

    fn adjacency(&self) -> Vec<Vec<(u32, u32)>> {
        let mut adj = vec![Vec::new(); self.n_nodes];
        for (id, e) in self.edges.iter().enumerate() {
            adj[e.from as usize].push((e.to, id as u32));
        }
        adj
    }

    /// Finds cycles: for each strongly connected component, the most severe
    /// class of cycle it contains (as far as the G-single search's `budget`
    /// reaches, see [`FoundCycle::gave_up`]).
    ///
    /// Components are first searched without real-time edges, so that a cycle that violates plain serializability is not
    /// hidden behind one that only violates strict serializability.
    pub fn find_cycles(&self, budget: usize) -> Vec<FoundCycle> {
        let adj = self.adjacency();
        let all = |_: &Edge| true;
        let steps = &self.search_steps;
        let comps = tarjan(&adj, &self.edges, &all, steps);
        let mut local_of = vec![u32::MAX; self.n_nodes];
        let mut out = Vec::new();
        for comp in comps {
            for (i, &n) in comp.iter().enumerate() {
                local_of[n as usize] = i as u32;
            }
            let local: Vec<Vec<(u32, u32)>> = comp
                .iter()
                .map(|&n| {
                    adj[n as usize]
                        .iter()
                        .filter(|&&(to, _)| local_of[to as usize] != u32::MAX)
                        .map(|&(to, e)| (local_of[to as usize], e))
                        .collect()
                })
                .collect();
            let sub = Sub {
                adj: &local,
                edges: &self.edges,
                steps,
            };
            let no_rt = |e: &Edge| e.kind != EdgeKind::Realtime;
            let found = sub
                .most_severe(&no_rt, budget)
                .or_else(|| sub.most_severe(&all, budget));
            if let Some((cycle, gave_up)) = found {
                out.push(FoundCycle {
                    edges: self.best_edges(&cycle),
                    component: comp.len(),
                    gave_up,
                });
            }
            for &n in &comp {
                local_of[n as usize] = u32::MAX;
            }
        }
        out
    }

    /// Replaces each hop of a cycle with the most precise parallel edge.
    fn best_edges(&self, cycle: &[u32]) -> Vec<u32> {
        cycle
            .iter()
            .map(|&eid| {
                let e = &self.edges[eid as usize];
                let mut best = eid;
                for pred in [false, true] {
                    for kind in [EdgeKind::Ww, EdgeKind::Wr, EdgeKind::Realtime, EdgeKind::Rw] {
                        if let Some(&c) = self.seen.get(&(e.from, e.to, kind, pred)) {
                            if self.edges[c as usize].rank() < self.edges[best as usize].rank() {
                                best = c;
                            }
                        }
                    }
                }
                best
            })
            .collect()
    }
}

type Filter<'a> = &'a dyn Fn(&Edge) -> bool;

/// One strongly connected component, renumbered `0..len`.
struct Sub<'a> {
    adj: &'a [Vec<(u32, u32)>],
    edges: &'a [Edge],
    steps: &'a Cell<u64>,
}

impl Sub<'_> {
    /// The most severe cycle over `base` edges, and whether the G-single
    /// search gave up before it (then the cycle is of a later class than
    /// the component may hold).
    fn most_severe(&self, base: Filter<'_>, budget: usize) -> Option<(Vec<u32>, bool)> {
        let ww = |e: &Edge| base(e) && e.kind == EdgeKind::Ww;
        if let Some(c) = self.cycle_in_subcomponent(&ww) {
            return Some((c, false));
        }
        let no_rw = |e: &Edge| base(e) && e.kind != EdgeKind::Rw;
        if let Some(c) = self.cycle_in_subcomponent(&no_rw) {
            return Some((c, false));
        }
        let (single, gave_up) = self.single_rw_cycle(base, &no_rw, budget);
        if let Some(c) = single {
            return Some((c, false));
        }
        self.cycle_in_subcomponent(base).map(|c| (c, gave_up))
    }

    /// A short cycle using only `filter` edges, if there is any.
    fn cycle_in_subcomponent(&self, filter: Filter<'_>) -> Option<Vec<u32>> {
        let comps = tarjan(self.adj, self.edges, filter, self.steps);
        let comp = comps.into_iter().min_by_key(|c| c.len())?;
        let mut member = vec![false; self.adj.len()];
        for &n in &comp {
            member[n as usize] = true;
        }
        let mut bfs = Bfs::new(self.adj.len());
        let mut best: Option<Vec<u32>> = None;
        // BFS from a few starting points; small components get all of them.
        for &start in comp.iter().take(32) {
            let mut unlimited = usize::MAX;
            if let Some(c) = bfs.path(self, start, start, filter, &member, &mut unlimited) {
                if best.as_ref().is_none_or(|b| c.len() < b.len()) {
                    best = Some(c);
                }
            }
            if best.as_ref().is_some_and(|b| b.len() == 2) {
                break;
            }
        }
        best
    }

    /// A cycle with exactly one rw edge: an rw edge `a -> b` plus a path from
    /// `b` back to `a` without rw edges; and whether the search ran out of
    /// `budget` (edges examined) before it found one, rather than ruling one
    /// out.
    fn single_rw_cycle(
        &self,
        base: Filter<'_>,
        no_rw: Filter<'_>,
        budget: usize,
    ) -> (Option<Vec<u32>>, bool) {
        let n = self.adj.len();
        let mut comp_of = vec![u32::MAX; n];
        for (i, c) in tarjan(self.adj, self.edges, no_rw, self.steps)
            .iter()
            .enumerate()
        {
            for &v in c {
                comp_of[v as usize] = i as u32;
            }
        }
        let rw: Vec<(u32, u32, u32)> = self
            .adj
            .iter()
            .enumerate()
            .flat_map(|(a, out)| out.iter().map(move |&(b, e)| (a as u32, b, e)))
            .filter(|&(_, _, e)| {
                let e = &self.edges[e as usize];
                e.kind == EdgeKind::Rw && base(e)
            })
            .collect();
        let everyone = vec![true; n];
        let mut bfs = Bfs::new(n);
        let mut best: Option<Vec<u32>> = None;
        // Cheap first: both ends in one non-rw component means a path exists.
        let (same, other): (Vec<_>, Vec<_>) = rw.into_iter().partition(|&(a, b, _)| {
            comp_of[a as usize] != u32::MAX && comp_of[a as usize] == comp_of[b as usize]
        });
        let mut left = budget;
        let mut out_of_budget = false;
        for &(a, b, e) in same.iter().take(64).chain(other.iter()) {
            if left == 0 {
                out_of_budget = true;
                break;
            }
            let found = bfs.path(self, b, a, no_rw, &everyone, &mut left);
            out_of_budget |= bfs.out_of_budget;
            if let Some(mut path) = found {
                path.insert(0, e);
                if best.as_ref().is_none_or(|x| path.len() < x.len()) {
                    best = Some(path);
                }
                if best.as_ref().is_some_and(|x| x.len() <= 2) {
                    break;
                }
            }
        }
        let gave_up = best.is_none() && out_of_budget;
        (best, gave_up)
    }
}

/// Breadth-first search with reusable scratch space.
struct Bfs {
    stamp: Vec<u32>,
    parent_node: Vec<u32>,
    parent_edge: Vec<u32>,
    round: u32,
    queue: VecDeque<u32>,
    /// Whether the last [`Bfs::path`] stopped because its budget ran out.
    out_of_budget: bool,
}

impl Bfs {
    fn new(n: usize) -> Self {
        Bfs {
            stamp: vec![0; n],
            parent_node: vec![u32::MAX; n],
            parent_edge: vec![u32::MAX; n],
            round: 0,
            queue: VecDeque::new(),
            out_of_budget: false,
        }
    }

    /// Shortest path of edge ids from `from` to `to` (a cycle if they are
    /// equal) over `filter` edges between `member` nodes. Each edge looked at
    /// costs one unit of `budget`; `None` with [`Bfs::out_of_budget`] set
    /// means it ran out before it could tell.
    fn path(
        &mut self,
        sub: &Sub<'_>,
        from: u32,
        to: u32,
        filter: Filter<'_>,
        member: &[bool],
        budget: &mut usize,
    ) -> Option<Vec<u32>> {
        self.round += 1;
        self.out_of_budget = false;
        self.queue.clear();
        self.queue.push_back(from);
        self.stamp[from as usize] = self.round;
        while let Some(u) = self.queue.pop_front() {
            for &(v, e) in &sub.adj[u as usize] {
                if *budget == 0 {
                    self.out_of_budget = true;
                    return None;
                }
                *budget -= 1;
                sub.steps.set(sub.steps.get() + 1);
                if !member[v as usize] || !filter(&sub.edges[e as usize]) {
                    continue;
                }
                if v == to {
                    let mut path = vec![e];
                    let mut cur = u;
                    while cur != from {
                        path.push(self.parent_edge[cur as usize]);
                        cur = self.parent_node[cur as usize];
                    }
                    path.reverse();
                    return Some(path);
                }
                if self.stamp[v as usize] != self.round {
                    self.stamp[v as usize] = self.round;
                    self.parent_node[v as usize] = u;
                    self.parent_edge[v as usize] = e;
                    self.queue.push_back(v);
                }
            }
        }
        None
    }
}

/// Tarjan's strongly connected components over `filter` edges, iteratively
/// (histories are long enough to overflow the stack of a recursive version).
/// Returns only components that contain a cycle (two or more nodes; the
/// graph has no self-loops).
fn tarjan(
    adj: &[Vec<(u32, u32)>],
    edges: &[Edge],
    filter: Filter<'_>,
    steps: &Cell<u64>,
) -> Vec<Vec<u32>> {
    const UNSEEN: u32 = u32::MAX;
    let n = adj.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut calls: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    let mut out = Vec::new();
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        calls.push((root, 0));
        index[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (v, ref mut child)) = calls.last_mut() {
            let out_edges = &adj[v as usize];
            if *child < out_edges.len() {
                let (w, e) = out_edges[*child];
                steps.set(steps.get() + 1);
                *child += 1;
                if !filter(&edges[e as usize]) {
                    continue;
                }
                if index[w as usize] == UNSEEN {
                    index[w as usize] = next;
                    low[w as usize] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    calls.push((w, 0));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent as usize] = low[parent as usize].min(low[v as usize]);
            }
            if low[v as usize] == index[v as usize] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("tarjan stack underflow");
                    on_stack[w as usize] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    out.push(comp);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32, EdgeKind)]) -> Graph {
        let mut g = Graph::new(n);
        for &(a, b, k) in edges {
            g.add(a, b, k, None, Cause::Realtime);
        }
        g
    }

    fn edges(found: Vec<FoundCycle>) -> Vec<Vec<u32>> {
        found.into_iter().map(|f| f.edges).collect()
    }

    fn kinds(g: &Graph, cycle: &[u32]) -> Vec<EdgeKind> {
        cycle.iter().map(|&e| g.edges[e as usize].kind).collect()
    }

    #[test]
    fn acyclic_graph_has_no_cycles() {
        use EdgeKind::*;
        let g = graph(4, &[(0, 1, Ww), (1, 2, Rw), (0, 2, Wr), (2, 3, Ww)]);
        assert!(g.find_cycles(usize::MAX).is_empty());
    }

    #[test]
    fn prefers_the_most_severe_cycle() {
        use EdgeKind::*;
        // 0 -rw-> 1 -rw-> 0 is the shortest cycle, but 0 -ww-> 2 -ww-> 3 -ww-> 0
        // is a G0 and must win.
        let g = graph(
            4,
            &[(0, 1, Rw), (1, 0, Rw), (0, 2, Ww), (2, 3, Ww), (3, 0, Ww)],
        );
        let cycles = edges(g.find_cycles(usize::MAX));
        assert_eq!(cycles.len(), 1);
        assert_eq!(kinds(&g, &cycles[0]), vec![Ww, Ww, Ww]);
    }

    #[test]
    fn finds_single_rw_cycle_before_g2() {
        use EdgeKind::*;
        let g = graph(3, &[(0, 1, Rw), (1, 0, Rw), (1, 2, Wr), (2, 0, Wr)]);
        let cycles = edges(g.find_cycles(usize::MAX));
        let k = kinds(&g, &cycles[0]);
        assert_eq!(k.iter().filter(|&&k| k == Rw).count(), 1, "{k:?}");
    }

    /// Out of budget before the G-single (0 -rw-> 1 -wr-> 2 -wr-> 0), the
    /// search reports the G2 (0 -rw-> 1 -rw-> 0) and says it gave up; with
    /// the budget, the G-single and no mark.
    #[test]
    fn a_g_single_search_out_of_budget_says_it_gave_up() {
        use EdgeKind::*;
        let g = graph(3, &[(0, 1, Rw), (1, 0, Rw), (1, 2, Wr), (2, 0, Wr)]);
        for budget in [0, 1] {
            let found = g.find_cycles(budget);
            assert_eq!(found.len(), 1);
            assert!(found[0].gave_up, "budget {budget}");
            assert_eq!(found[0].component, 3);
            assert_eq!(kinds(&g, &found[0].edges), vec![Rw, Rw]);
        }
        let found = g.find_cycles(usize::MAX);
        assert!(!found[0].gave_up);
        let k = kinds(&g, &found[0].edges);
        assert_eq!(k.iter().filter(|&&k| k == Rw).count(), 1, "{k:?}");
    }

    #[test]
    fn parallel_edges_explained_by_the_weakest_kind() {
        use EdgeKind::*;
        let g = graph(2, &[(0, 1, Rw), (1, 0, Rw), (0, 1, Ww)]);
        let cycles = edges(g.find_cycles(usize::MAX));
        let mut k = kinds(&g, &cycles[0]);
        k.sort();
        assert_eq!(k, vec![Ww, Rw]);
    }

    #[test]
    fn deep_chain_does_not_overflow() {
        let n = 200_000u32;
        let mut g = Graph::new(n as usize);
        for i in 0..n {
            g.add(i, (i + 1) % n, EdgeKind::Ww, None, Cause::Realtime);
        }
        let cycles = edges(g.find_cycles(usize::MAX));
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].len(), n as usize);
    }
}
