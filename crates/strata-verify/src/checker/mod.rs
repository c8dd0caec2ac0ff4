//! The history checker: was this history serializable?
//!
//! ```text
//!   History ──► infer ───────────────► non-cycle anomalies (G1a, G1b, garbage,
//!     │        (version orders,          duplicates, incompatible order,
//!     │         writers of values)       lost appends, internal)
//!     │            │
//!     │            ▼
//!     └──────► dependency graph ──► Tarjan SCCs ──► BFS cycle per SCC
//!              (ww, wr, rw, rt)                     └► G0 / G1c / G-single / G2
//!                                                      (+ search-incomplete)
//! ```
//!
//! The checker never asks the engine anything. It relies on the workload's
//! unique values: every observed value names its writer, and every list read
//! shows a prefix of the key's append order. A cycle in the dependency graph
//! means no serial order explains what the clients saw (Adya's phenomena);
//! its edge kinds tell which isolation level was broken.

mod graph;
mod infer;

use std::collections::BTreeMap;
use std::fmt;

pub use graph::EdgeKind;
use graph::{Cause, Edge};
use infer::{abbreviate, Checker};

use crate::history::{History, Key, Txn};

/// Options for [`check`].
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Add real-time edges (T1 completed before T2 was invoked), checking
    /// strict serializability rather than serializability.
    pub realtime: bool,
    /// Bound on edges examined while looking for G-single cycles in one
    /// component. A component whose search runs out of it before it finds
    /// one is reported with its G2 cycle and [`AnomalyKind::SearchIncomplete`]
    /// (a G-single may hide there).
    pub cycle_search_budget: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            realtime: false,
            cycle_search_budget: 2_000_000,
        }
    }
}

impl CheckOptions {
    /// Options for checking strict serializability.
    pub fn strict() -> Self {
        CheckOptions {
            realtime: true,
            ..Self::default()
        }
    }
}

/// The kinds of anomaly the checker reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnomalyKind {
    /// Write cycle: a cycle of ww edges only (dirty writes).
    G0,
    /// Aborted read: a committed txn saw a write of an aborted txn.
    G1a,
    /// Intermediate read: a committed txn saw a write that its writer later
    /// overwrote itself.
    G1b,
    /// Circular information flow: a cycle of ww/wr edges.
    G1c,
    /// A cycle with exactly one anti-dependency (read skew, lost update).
    GSingle,
    /// A cycle with two or more item anti-dependencies (write skew).
    G2Item,
    /// Like G2Item, but an anti-dependency comes from a predicate read
    /// (phantom).
    G2Predicate,
    /// A list read contained the same element twice.
    DuplicateElements,
    /// Two reads of a key disagree on the order of its elements.
    IncompatibleOrder,
    /// A committed append went missing: a read shows a later append of the
    /// same txn but not this one, or (strict mode) a txn invoked after the
    /// commit did not see it and no read ever did.
    LostAppend,
    /// A read returned a value nobody wrote (to that key).
    GarbageRead,
    /// A txn did not see its own writes, or saw a key change between two of
    /// its own reads.
    InternalInconsistency,
    /// Not an anomaly found but one not ruled out: the G-single search of a
    /// component ran out of [`CheckOptions::cycle_search_budget`] before it
    /// found one, so the component is reported with a G2 cycle while a
    /// G-single (which snapshot isolation forbids) may hide in it. Never
    /// taken as allowed: it counts against snapshot isolation and
    /// serializability (see [`Report::is_complete`]).
    SearchIncomplete,
}

impl AnomalyKind {
    pub const ALL: [AnomalyKind; 13] = [
        AnomalyKind::G0,
        AnomalyKind::G1a,
        AnomalyKind::G1b,
        AnomalyKind::G1c,
        AnomalyKind::GSingle,
        AnomalyKind::G2Item,
        AnomalyKind::G2Predicate,
        AnomalyKind::DuplicateElements,
        AnomalyKind::IncompatibleOrder,
        AnomalyKind::LostAppend,
        AnomalyKind::GarbageRead,
        AnomalyKind::InternalInconsistency,
        AnomalyKind::SearchIncomplete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::G0 => "G0",
            AnomalyKind::G1a => "G1a",
            AnomalyKind::G1b => "G1b",
            AnomalyKind::G1c => "G1c",
            AnomalyKind::GSingle => "G-single",
            AnomalyKind::G2Item => "G2-item",
            AnomalyKind::G2Predicate => "G2-predicate",
            AnomalyKind::DuplicateElements => "duplicate-elements",
            AnomalyKind::IncompatibleOrder => "incompatible-order",
            AnomalyKind::LostAppend => "lost-append",
            AnomalyKind::GarbageRead => "garbage-read",
            AnomalyKind::InternalInconsistency => "internal",
            AnomalyKind::SearchIncomplete => "search-incomplete",
        }
    }

    /// Whether this is a dependency-cycle anomaly.
    pub fn is_cycle(self) -> bool {
        matches!(
            self,
            AnomalyKind::G0
                | AnomalyKind::G1c
                | AnomalyKind::GSingle
                | AnomalyKind::G2Item
                | AnomalyKind::G2Predicate
        )
    }

    /// Anomalies that read committed (PL-2) already forbids, plus data
    /// corruption that no isolation level allows.
    fn breaks_read_committed(self) -> bool {
        !matches!(
            self,
            AnomalyKind::GSingle
                | AnomalyKind::G2Item
                | AnomalyKind::G2Predicate
                | AnomalyKind::InternalInconsistency
                | AnomalyKind::SearchIncomplete
        )
    }

    fn breaks_snapshot_isolation(self) -> bool {
        !matches!(self, AnomalyKind::G2Item | AnomalyKind::G2Predicate)
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One hop of a reported cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleStep {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    /// Whether the read side was a predicate read (scan).
    pub predicate: bool,
    /// Which key and values produced the edge.
    pub cause: String,
}

impl fmt::Display for CycleStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "T{} -{}({})-> T{}",
            self.from,
            self.kind.name(),
            self.cause,
            self.to
        )
    }
}

/// A dependency cycle: the transactions on it and the edges between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    pub txns: Vec<Txn>,
    pub steps: Vec<CycleStep>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.txns {
            writeln!(f, "    {t}")?;
        }
        for s in &self.steps {
            writeln!(f, "    {s}")?;
        }
        Ok(())
    }
}

/// One detected anomaly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anomaly {
    pub kind: AnomalyKind,
    /// Ids of the transactions involved.
    pub txns: Vec<usize>,
    pub key: Option<Key>,
    /// Whether it depends on real-time order, i.e. only strict
    /// serializability forbids it.
    pub realtime: bool,
    /// A one-line explanation.
    pub detail: String,
    /// The cycle, for cycle anomalies.
    pub cycle: Option<Cycle>,
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rt = if self.realtime { " (real-time)" } else { "" };
        writeln!(f, "  {}{rt}: {}", self.kind, self.detail)?;
        if let Some(c) = &self.cycle {
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// The result of [`check`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub anomalies: Vec<Anomaly>,
    pub txns_checked: usize,
    /// Dependency-graph size, for the curious.
    pub graph_nodes: usize,
    pub graph_edges: usize,
    /// Edges the cycle search looked at, every pass counted: its work. One
    /// pass over the graph when nothing is cyclic; per strongly connected
    /// component of `e` edges, at most about `200 e` plus twice
    /// [`CheckOptions::cycle_search_budget`] (two rounds, without and with
    /// real-time edges, of a few Tarjan passes, breadth-first searches
    /// from at most 32 starts, and the budgeted G-single search).
    pub search_steps: u64,
}

impl Report {
    /// No anomaly of any kind.
    pub fn is_valid(&self) -> bool {
        self.anomalies.is_empty()
    }

    pub fn has(&self, kind: AnomalyKind) -> bool {
        self.anomalies.iter().any(|a| a.kind == kind)
    }

    pub fn count(&self, kind: AnomalyKind) -> usize {
        self.anomalies.iter().filter(|a| a.kind == kind).count()
    }

    pub fn of_kind(&self, kind: AnomalyKind) -> impl Iterator<Item = &Anomaly> {
        self.anomalies.iter().filter(move |a| a.kind == kind)
    }

    /// Kinds present, with counts, in [`AnomalyKind`] order.
    pub fn summary(&self) -> BTreeMap<AnomalyKind, usize> {
        let mut m = BTreeMap::new();
        for a in &self.anomalies {
            *m.entry(a.kind).or_insert(0) += 1;
        }
        m
    }

    fn any(&self, pred: impl Fn(&Anomaly) -> bool) -> bool {
        self.anomalies.iter().any(pred)
    }

    /// G0, G1a, G1b, G1c, or corrupt data.
    pub fn violates_read_committed(&self) -> bool {
        self.any(|a| !a.realtime && a.kind.breaks_read_committed())
    }

    /// Anything but G2: snapshot isolation allows write skew and phantoms.
    /// A search that gave up ([`AnomalyKind::SearchIncomplete`]) counts: a
    /// G2 whose component may hide a G-single is never taken as allowed.
    pub fn violates_snapshot_isolation(&self) -> bool {
        self.any(|a| !a.realtime && a.kind.breaks_snapshot_isolation())
    }

    /// The report without [`AnomalyKind::SearchIncomplete`]: the anomalies
    /// found, whatever a search that gave up may have missed.
    pub fn found(&self) -> Report {
        Report {
            anomalies: (self.anomalies.iter())
                .filter(|a| a.kind != AnomalyKind::SearchIncomplete)
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// Whether every cycle search finished: no
    /// [`AnomalyKind::SearchIncomplete`]. When one did not, the report's
    /// anomalies are real, but a more severe one may be missing.
    pub fn is_complete(&self) -> bool {
        !self.has(AnomalyKind::SearchIncomplete)
    }

    /// Any anomaly that does not depend on real-time order.
    pub fn violates_serializability(&self) -> bool {
        self.any(|a| !a.realtime)
    }

    /// Any anomaly at all (meaningful with [`CheckOptions::realtime`]).
    pub fn violates_strict_serializability(&self) -> bool {
        !self.is_valid()
    }

    /// The cycle anomaly with the fewest edges.
    pub fn smallest_cycle(&self) -> Option<&Anomaly> {
        self.anomalies
            .iter()
            .filter(|a| a.cycle.is_some())
            .min_by_key(|a| a.cycle.as_ref().map_or(usize::MAX, |c| c.steps.len()))
    }

    /// The weakest standard level this history violates, if any.
    pub fn verdict(&self) -> &'static str {
        let found_against_si = self.any(|a| {
            !a.realtime
                && a.kind.breaks_snapshot_isolation()
                && a.kind != AnomalyKind::SearchIncomplete
        });
        if self.violates_read_committed() {
            "violates read committed"
        } else if found_against_si {
            "violates snapshot isolation"
        } else if self.violates_snapshot_isolation() {
            "violates serializability; cycle search incomplete: a G-single (which snapshot \
             isolation forbids) was not ruled out"
        } else if self.violates_serializability() {
            "violates serializability (allowed by snapshot isolation)"
        } else if self.violates_strict_serializability() {
            "violates strict serializability (real-time order)"
        } else {
            "valid"
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const PER_KIND: usize = 5;
        write!(f, "{} txns checked: {}", self.txns_checked, self.verdict())?;
        if self.is_valid() {
            return writeln!(f);
        }
        let summary: Vec<String> = self
            .summary()
            .iter()
            .map(|(k, n)| format!("{k} x{n}"))
            .collect();
        writeln!(f, " ({})", summary.join(", "))?;
        if let Some(a) = self.smallest_cycle() {
            writeln!(f, "smallest cycle:")?;
            write!(f, "{a}")?;
        }
        for (kind, n) in self.summary() {
            writeln!(f, "{kind}:")?;
            for a in self.of_kind(kind).take(PER_KIND) {
                let rt = if a.realtime { " (real-time)" } else { "" };
                writeln!(f, "  {}{rt}", a.detail)?;
            }
            if n > PER_KIND {
                writeln!(f, "  ... and {} more", n - PER_KIND)?;
            }
        }
        Ok(())
    }
}

/// Checks a history; see the module docs for what is detected.
pub fn check(history: &History, options: &CheckOptions) -> Report {
    let mut c = Checker::new(history, options);
    c.run();
    let cycles = c.graph.find_cycles(options.cycle_search_budget);
    let mut anomalies = std::mem::take(&mut c.anomalies);
    for found in cycles {
        let a = cycle_anomaly(&c, &found.edges);
        // A G-single or worse found is the most severe class anyway.
        if found.gave_up && matches!(a.kind, AnomalyKind::G2Item | AnomalyKind::G2Predicate) {
            anomalies.push(Anomaly {
                kind: AnomalyKind::SearchIncomplete,
                txns: a.txns.clone(),
                key: None,
                realtime: a.realtime,
                detail: format!(
                    "a component of {} nodes: the search for a cycle with one anti-dependency \
                     (G-single) examined its budget of {} edges without finding one or ruling \
                     one out; its {} cycle ({}) may hide a G-single",
                    found.component, options.cycle_search_budget, a.kind, a.detail
                ),
                cycle: None,
            });
        }
        anomalies.push(a);
    }
    Report {
        anomalies,
        txns_checked: history.txns.len(),
        graph_nodes: c.graph.n_nodes,
        graph_edges: c.graph.edges.len(),
        search_steps: c.graph.search_steps.get(),
    }
}

fn cycle_anomaly(c: &Checker<'_>, cycle: &[u32]) -> Anomaly {
    let g = &c.graph;
    let edges: Vec<&Edge> = cycle.iter().map(|&e| &g.edges[e as usize]).collect();
    // Start at a real transaction so that runs of virtual clock nodes can be
    // folded into single real-time steps.
    let start = edges
        .iter()
        .position(|e| !g.is_virtual(e.from))
        .unwrap_or(0);
    let mut steps = Vec::new();
    // The history index of each step's source.
    let mut sources = Vec::new();
    let mut i = 0;
    while i < edges.len() {
        let e = edges[(start + i) % edges.len()];
        let from = e.from;
        let mut to = e.to;
        while g.is_virtual(to) {
            i += 1;
            to = edges[(start + i) % edges.len()].to;
        }
        i += 1;
        let (from_txn, to_txn) = (&c.h.txns[from as usize], &c.h.txns[to as usize]);
        let cause = if e.kind == EdgeKind::Realtime {
            format!(
                "T{} completed at {} before T{} was invoked at {}",
                from_txn.id, from_txn.complete, to_txn.id, to_txn.invoke
            )
        } else {
            describe(c, e)
        };
        sources.push(from as usize);
        steps.push(CycleStep {
            from: from_txn.id,
            to: to_txn.id,
            kind: e.kind,
            predicate: e.scan.is_some(),
            cause,
        });
        let _ = to;
    }
    let rw = steps.iter().filter(|s| s.kind == EdgeKind::Rw).count();
    let kind = if steps.iter().all(|s| s.kind == EdgeKind::Ww) {
        AnomalyKind::G0
    } else if rw == 0 {
        AnomalyKind::G1c
    } else if rw == 1 {
        AnomalyKind::GSingle
    } else if steps.iter().any(|s| s.kind == EdgeKind::Rw && s.predicate) {
        AnomalyKind::G2Predicate
    } else {
        AnomalyKind::G2Item
    };
    let realtime = steps.iter().any(|s| s.kind == EdgeKind::Realtime);
    let txns: Vec<Txn> = sources.iter().map(|&i| c.h.txns[i].clone()).collect();
    let path: Vec<String> = steps
        .iter()
        .map(|s| format!("T{} -{}->", s.from, s.kind.name()))
        .chain(steps.first().map(|s| format!("T{}", s.from)))
        .collect();
    Anomaly {
        kind,
        txns: txns.iter().map(|t| t.id).collect(),
        key: None,
        realtime,
        detail: format!("cycle of {} txns: {}", steps.len(), path.join(" ")),
        cycle: Some(Cycle { txns, steps }),
    }
}

/// Renders why an edge exists, in terms of keys and values.
fn describe(c: &Checker<'_>, e: &Edge) -> String {
    let id = |n: u32| c.h.txns[n as usize].id;
    let (a, b) = (id(e.from), id(e.to));
    let scan = e
        .scan
        .map_or(String::new(), |(lo, hi)| format!("scan k{lo}..k{hi} "));
    let prefix = |key: Key, len: u32| {
        let order = c.orders.get(&key).map_or(&[][..], |o| &o[..]);
        abbreviate(&order[..(len as usize).min(order.len())])
    };
    let show = |v: Option<u64>| v.map_or("nil".to_string(), |v| v.to_string());
    match e.cause {
        Cause::ListWw { key, prev, next } => {
            format!("key {key}: T{a} appended {prev}, T{b} appended {next} right after")
        }
        Cause::ListWr { key, len } => {
            let last = c
                .orders
                .get(&key)
                .and_then(|o| o.get(len as usize - 1))
                .copied()
                .unwrap_or_default();
            format!(
                "key {key}: T{a} appended {last}, T{b} {scan}read {}",
                prefix(key, len)
            )
        }
        Cause::ListRw { key, len, next } => format!(
            "key {key}: {scan}read {}, T{b} appended {next}",
            prefix(key, len)
        ),
        Cause::RegWw { key, prev, next } => {
            format!("key {key}: T{b} read {prev} written by T{a}, then wrote {next}")
        }
        Cause::RegWr { key, value } => format!("key {key}: T{a} wrote {value}, T{b} read it"),
        Cause::RegRw { key, read, wrote } => {
            format!(
                "key {key}: read {}, T{b} wrote {wrote} after it",
                show(read)
            )
        }
        Cause::Realtime => format!("T{a} completed before T{b} was invoked"),
    }
}
