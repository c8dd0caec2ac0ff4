//! Inference: from observed values to version orders, anomalies and edges.
//!
//! List-append is the informative case. A read of a whole list reveals the
//! order in which its elements were appended, so the longest read of a key is
//! its version order and every other read must be a prefix of it:
//!
//! ```text
//!   key 5 version order (longest read):  [1, 2, 3, 4]
//!                                          T1 T1 T7 T9      (writer of each elem)
//!   T4 read [1, 2]   ─► wr T1 → T4   (T4 saw T1's last append)
//!                    ─► rw T4 → T7   (T7 wrote the next version, 3)
//!   T6 read [1, 3]   ─► not a prefix: incompatible order
//!   ww edges:            T1 → T7 → T9
//! ```
//!
//! Registers reveal much less: a read names its writer, but nothing orders
//! two blind writes. Two facts are still sound under serializability: the
//! initial state precedes every write, and when a transaction reads `v` and
//! then writes `w` to the same key, `v` immediately precedes `w` (nothing can
//! be serialized between a transaction's read and its own write). From those
//! we draw ww and rw edges, and two transactions that both read `v` and both
//! overwrote it are a lost update. An executor whose writes are
//! read-modify-writes should therefore record the read: blind writes hide
//! G0 and any lost update whose overwritten value nobody else read.
//!
//! A delete ([`Op::Delete`]) is a list write like an append: it appends its
//! marker, so a key's list keeps growing through deletes and re-inserts and
//! still reveals its whole version order.
//!
//! Only committed transactions' reads are trusted. A transaction with an
//! unknown outcome joins the graph as soon as a committed read observes one
//! of its writes (it must have committed then); otherwise it is ignored.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::graph::{Cause, EdgeKind, Graph};
use super::{Anomaly, AnomalyKind, CheckOptions};
pub(crate) use crate::history::abbreviate;
use crate::history::{fmt_list, Elem, History, Key, Op, Outcome};

#[derive(Clone, Copy, Debug)]
struct ListWrite {
    txn: u32,
    key: Key,
    /// Position among the writer's appends to this key.
    nth: u32,
    /// Whether this is the writer's final append to this key.
    last: bool,
}

#[derive(Clone, Copy, Debug)]
struct RegWrite {
    txn: u32,
    key: Key,
    last: bool,
}

#[derive(Clone, Copy)]
struct ListRead<'h> {
    txn: u32,
    list: &'h [Elem],
    scan: Option<(Key, Key)>,
}

/// A read of a key that agrees with the version order.
#[derive(Clone, Copy)]
struct PrefixRead {
    txn: u32,
    len: u32,
    scan: Option<(Key, Key)>,
}

struct KeyOrder {
    /// The version order, one entry per distinct element.
    order: Vec<Elem>,
    /// Reads that are prefixes of it; empty when the order is unusable.
    reads: Vec<PrefixRead>,
}

struct ScanRead {
    txn: u32,
    lo: Key,
    hi: Key,
    present: Vec<Key>,
}

pub(crate) struct Checker<'h> {
    pub h: &'h History,
    opts: &'h CheckOptions,
    pub in_graph: Vec<bool>,
    list_writer: HashMap<Elem, ListWrite>,
    reg_writer: HashMap<Elem, RegWrite>,
    pub orders: BTreeMap<Key, Vec<Elem>>,
    pub graph: Graph,
    pub anomalies: Vec<Anomaly>,
}

impl<'h> Checker<'h> {
    pub fn new(h: &'h History, opts: &'h CheckOptions) -> Self {
        let n = h.txns.len();
        Checker {
            h,
            opts,
            in_graph: h
                .txns
                .iter()
                .map(|t| t.outcome == Outcome::Committed)
                .collect(),
            list_writer: HashMap::new(),
            reg_writer: HashMap::new(),
            orders: BTreeMap::new(),
            graph: Graph::new(n),
            anomalies: Vec::new(),
        }
    }

    fn id(&self, txn: u32) -> usize {
        self.h.txns[txn as usize].id
    }

    fn outcome(&self, txn: u32) -> Outcome {
        self.h.txns[txn as usize].outcome
    }

    fn committed(&self, txn: u32) -> bool {
        self.outcome(txn) == Outcome::Committed
    }

    fn report(&mut self, kind: AnomalyKind, txns: &[u32], key: Option<Key>, detail: String) {
        let txns = txns.iter().map(|&t| self.id(t)).collect();
        self.anomalies.push(Anomaly {
            kind,
            txns,
            key,
            realtime: false,
            detail,
            cycle: None,
        });
    }

    /// Runs every inference step and fills `anomalies` and `graph`.
    pub fn run(&mut self) {
        self.index_writes();
        let (reads, scans) = self.collect_list_reads();
        let orders = self.infer_list_orders(reads);
        self.check_registers_and_add_edges();
        self.add_list_edges(&orders, &scans);
        if self.opts.realtime {
            self.check_strict_lost_appends(&orders);
            self.add_realtime_edges();
        }
        self.check_internal();
        self.orders = orders.into_iter().map(|(k, o)| (k, o.order)).collect();
    }

    fn index_writes(&mut self) {
        for (i, t) in self.h.txns.iter().enumerate() {
            let txn = i as u32;
            let mut appends: Vec<(Key, u32)> = Vec::new();
            let mut last_write: Vec<(Key, Elem)> = Vec::new();
            for op in &t.ops {
                match *op {
                    Op::Append { key, elem } | Op::Delete { key, elem } => {
                        let nth = match appends.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, c)) => {
                                *c += 1;
                                *c - 1
                            }
                            None => {
                                appends.push((key, 1));
                                0
                            }
                        };
                        self.list_writer.entry(elem).or_insert(ListWrite {
                            txn,
                            key,
                            nth,
                            last: false,
                        });
                    }
                    Op::Write { key, value } => {
                        match last_write.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, v)) => *v = value,
                            None => last_write.push((key, value)),
                        }
                        self.reg_writer.entry(value).or_insert(RegWrite {
                            txn,
                            key,
                            last: false,
                        });
                    }
                    _ => {}
                }
            }
            for op in &t.ops {
                if let Some((key, elem)) = op.list_write() {
                    let count = appends.iter().find(|(k, _)| *k == key).map_or(0, |x| x.1);
                    if let Some(w) = self.list_writer.get_mut(&elem) {
                        if w.txn == txn {
                            w.last = w.nth + 1 == count;
                        }
                    }
                }
            }
            for (_, value) in last_write {
                if let Some(w) = self.reg_writer.get_mut(&value) {
                    if w.txn == txn {
                        w.last = true;
                    }
                }
            }
        }
    }

    fn collect_list_reads(&mut self) -> (BTreeMap<Key, Vec<ListRead<'h>>>, Vec<ScanRead>) {
        let h = self.h;
        let mut reads: BTreeMap<Key, Vec<ListRead<'h>>> = BTreeMap::new();
        let mut scans = Vec::new();
        for (i, t) in h.txns.iter().enumerate() {
            if t.outcome != Outcome::Committed {
                continue;
            }
            let txn = i as u32;
            for op in &t.ops {
                match op {
                    Op::ReadList {
                        key,
                        value: Some(list),
                    } => reads.entry(*key).or_default().push(ListRead {
                        txn,
                        list,
                        scan: None,
                    }),
                    Op::ScanList {
                        lo,
                        hi,
                        value: Some(rows),
                    } => {
                        let mut present = Vec::with_capacity(rows.len());
                        for (key, list) in rows {
                            let in_range = (*lo..*hi).contains(key);
                            let ordered = present.last().is_none_or(|p| p < key);
                            if !in_range || !ordered {
                                self.report(
                                    AnomalyKind::GarbageRead,
                                    &[txn],
                                    Some(*key),
                                    format!(
                                        "T{} scanned k{lo}..k{hi} and got key {key} {}",
                                        t.id,
                                        if in_range {
                                            "out of key order"
                                        } else {
                                            "outside the range"
                                        }
                                    ),
                                );
                                continue;
                            }
                            present.push(*key);
                            reads.entry(*key).or_default().push(ListRead {
                                txn,
                                list,
                                scan: Some((*lo, *hi)),
                            });
                        }
                        scans.push(ScanRead {
                            txn,
                            lo: *lo,
                            hi: *hi,
                            present,
                        });
                    }
                    _ => {}
                }
            }
        }
        (reads, scans)
    }

    fn infer_list_orders(
        &mut self,
        reads: BTreeMap<Key, Vec<ListRead<'h>>>,
    ) -> BTreeMap<Key, KeyOrder> {
        let mut orders = BTreeMap::new();
        let mut reported_elems: HashSet<Elem> = HashSet::new();
        for (key, reads) in reads {
            let longest = *reads
                .iter()
                .max_by_key(|r| (r.list.len(), std::cmp::Reverse(r.txn)))
                .expect("a key with reads has a longest read");
            let (order, clean) = self.check_list(key, longest, &mut reported_elems);
            let first_aborted = longest.list.iter().position(|e| {
                self.list_writer
                    .get(e)
                    .is_some_and(|w| w.key == key && self.outcome(w.txn) == Outcome::Aborted)
            });
            let mut prefix_reads = Vec::new();
            let mut incompatible = 0;
            for r in &reads {
                let is_prefix = longest.list.starts_with(r.list);
                if is_prefix {
                    if clean {
                        prefix_reads.push(PrefixRead {
                            txn: r.txn,
                            len: r.list.len() as u32,
                            scan: r.scan,
                        });
                    }
                } else {
                    self.check_list(key, *r, &mut reported_elems);
                    // One example per key is enough to explain the problem;
                    // a single bad write makes every later read disagree.
                    if incompatible < 3 {
                        self.report(
                            AnomalyKind::IncompatibleOrder,
                            &[r.txn, longest.txn],
                            Some(key),
                            format!(
                                "key {key}: T{} read {} which is not a prefix of T{}'s read {}",
                                self.id(r.txn),
                                abbreviate(r.list),
                                self.id(longest.txn),
                                abbreviate(longest.list)
                            ),
                        );
                    }
                    incompatible += 1;
                }
                self.check_dirty_list_read(
                    key,
                    *r,
                    is_prefix.then_some(first_aborted).flatten(),
                    is_prefix,
                );
            }
            orders.insert(
                key,
                KeyOrder {
                    order,
                    reads: prefix_reads,
                },
            );
        }
        orders
    }

    /// Checks every element of one read; returns the deduplicated order and
    /// whether the read is clean enough to derive edges from.
    fn check_list(
        &mut self,
        key: Key,
        r: ListRead<'h>,
        reported: &mut HashSet<Elem>,
    ) -> (Vec<Elem>, bool) {
        let mut seen = HashSet::with_capacity(r.list.len());
        let mut order = Vec::with_capacity(r.list.len());
        let mut dups = Vec::new();
        // Per writer: the next of its appends to this key we expect to see.
        let mut expected: HashMap<u32, u32> = HashMap::new();
        for &e in r.list {
            if !seen.insert(e) {
                dups.push(e);
                continue;
            }
            order.push(e);
            let Some(w) = self.list_writer.get(&e).copied() else {
                if reported.insert(e) {
                    self.report(
                        AnomalyKind::GarbageRead,
                        &[r.txn],
                        Some(key),
                        format!(
                            "key {key}: T{} read {e}, which no transaction appended",
                            self.id(r.txn)
                        ),
                    );
                }
                continue;
            };
            if w.key != key {
                if reported.insert(e) {
                    self.report(
                        AnomalyKind::GarbageRead,
                        &[r.txn, w.txn],
                        Some(key),
                        format!(
                            "key {key}: T{} read {e}, which T{} appended to key {}",
                            self.id(r.txn),
                            self.id(w.txn),
                            w.key
                        ),
                    );
                }
                continue;
            }
            if self.outcome(w.txn) == Outcome::Unknown {
                self.in_graph[w.txn as usize] = true;
            }
            let next = expected.entry(w.txn).or_insert(0);
            if w.nth > *next {
                if reported.insert(e) {
                    self.report(
                        AnomalyKind::LostAppend,
                        &[w.txn, r.txn],
                        Some(key),
                        format!(
                            "key {key}: T{} read {e} (append #{} of T{} to this key) without T{}'s earlier append #{}",
                            self.id(r.txn),
                            w.nth + 1,
                            self.id(w.txn),
                            self.id(w.txn),
                            *next + 1
                        ),
                    );
                }
            } else if w.nth < *next && reported.insert(e) {
                self.report(
                    AnomalyKind::IncompatibleOrder,
                    &[w.txn, r.txn],
                    Some(key),
                    format!(
                        "key {key}: T{} read T{}'s appends out of the order T{} made them (at {e})",
                        self.id(r.txn),
                        self.id(w.txn),
                        self.id(w.txn)
                    ),
                );
            }
            *next = w.nth + 1;
        }
        if !dups.is_empty() {
            self.report(
                AnomalyKind::DuplicateElements,
                &[r.txn],
                Some(key),
                format!(
                    "key {key}: T{} read {} in which {} appear more than once",
                    self.id(r.txn),
                    abbreviate(r.list),
                    fmt_list(&dups)
                ),
            );
        }
        (order, dups.is_empty())
    }

    /// G1a (aborted writes visible) and G1b (intermediate writes visible).
    fn check_dirty_list_read(
        &mut self,
        key: Key,
        r: ListRead<'h>,
        first_aborted: Option<usize>,
        is_prefix: bool,
    ) {
        let aborted_at = if is_prefix {
            first_aborted.filter(|&p| p < r.list.len())
        } else {
            r.list.iter().position(|e| {
                self.list_writer
                    .get(e)
                    .is_some_and(|w| w.key == key && self.outcome(w.txn) == Outcome::Aborted)
            })
        };
        if let Some(p) = aborted_at {
            let e = r.list[p];
            let w = self.list_writer[&e];
            self.report(
                AnomalyKind::G1a,
                &[r.txn, w.txn],
                Some(key),
                format!(
                    "key {key}: T{} read {} containing {e}, appended by aborted T{}",
                    self.id(r.txn),
                    abbreviate(r.list),
                    self.id(w.txn)
                ),
            );
        }
        if let Some(&e) = r.list.last() {
            if let Some(w) = self.list_writer.get(&e).copied() {
                if w.key == key
                    && w.txn != r.txn
                    && !w.last
                    && self.outcome(w.txn) != Outcome::Aborted
                {
                    self.report(
                        AnomalyKind::G1b,
                        &[r.txn, w.txn],
                        Some(key),
                        format!(
                            "key {key}: T{} read {} ending in {e}, an intermediate append of T{} (it appended again later)",
                            self.id(r.txn),
                            abbreviate(r.list),
                            self.id(w.txn)
                        ),
                    );
                }
            }
        }
    }

    fn writer_in_graph(&self, e: Elem) -> Option<u32> {
        self.list_writer
            .get(&e)
            .map(|w| w.txn)
            .filter(|&t| self.in_graph[t as usize])
    }

    fn add_list_edges(&mut self, orders: &BTreeMap<Key, KeyOrder>, scans: &[ScanRead]) {
        for (&key, ko) in orders {
            let order = &ko.order;
            let mut prev: Option<(u32, Elem)> = None;
            for &e in order {
                let Some(w) = self.writer_in_graph(e) else {
                    continue;
                };
                if let Some((pw, pe)) = prev {
                    if pw != w {
                        self.graph.add(
                            pw,
                            w,
                            EdgeKind::Ww,
                            None,
                            Cause::ListWw {
                                key,
                                prev: pe,
                                next: e,
                            },
                        );
                    }
                }
                prev = Some((w, e));
            }
            for r in &ko.reads {
                let len = r.len as usize;
                if len > 0 {
                    if let Some(w) = self.writer_in_graph(order[len - 1]) {
                        self.graph.add(
                            w,
                            r.txn,
                            EdgeKind::Wr,
                            r.scan,
                            Cause::ListWr { key, len: r.len },
                        );
                    }
                }
                self.add_rw_after(key, order, len, r.txn, r.scan);
            }
        }
        for s in scans {
            for (&key, ko) in orders.range(s.lo..s.hi) {
                if s.present.binary_search(&key).is_err() {
                    self.add_rw_after(key, &ko.order, 0, s.txn, Some((s.lo, s.hi)));
                }
            }
        }
    }

    /// The reader saw `order[..len]`; whoever wrote a later version must be
    /// serialized after it.
    fn add_rw_after(
        &mut self,
        key: Key,
        order: &[Elem],
        len: usize,
        reader: u32,
        scan: Option<(Key, Key)>,
    ) {
        let later = order.get(len..).unwrap_or(&[]);
        if let Some((w, e)) = later
            .iter()
            .filter_map(|&e| self.writer_in_graph(e).map(|w| (w, e)))
            .find(|&(w, _)| w != reader)
        {
            self.graph.add(
                reader,
                w,
                EdgeKind::Rw,
                scan,
                Cause::ListRw {
                    key,
                    len: len as u32,
                    next: e,
                },
            );
        }
    }

    /// Under strict serializability a committed append must be visible to
    /// every transaction that starts after the commit was acknowledged.
    fn check_strict_lost_appends(&mut self, orders: &BTreeMap<Key, KeyOrder>) {
        let mut latest_reader: HashMap<Key, (u64, u32)> = HashMap::new();
        for (&key, ko) in orders {
            for r in &ko.reads {
                let inv = self.h.txns[r.txn as usize].invoke;
                let slot = latest_reader.entry(key).or_insert((inv, r.txn));
                if inv > slot.0 {
                    *slot = (inv, r.txn);
                }
            }
        }
        let visible: HashSet<Elem> = orders
            .values()
            .flat_map(|o| o.order.iter().copied())
            .collect();
        let mut lost: Vec<(Elem, ListWrite)> = self
            .list_writer
            .iter()
            .filter(|(e, w)| self.committed(w.txn) && !visible.contains(e))
            .map(|(&e, &w)| (e, w))
            .collect();
        lost.sort_by_key(|&(e, _)| e);
        for (e, w) in lost {
            let Some(&(inv, reader)) = latest_reader.get(&w.key) else {
                continue;
            };
            if inv > self.h.txns[w.txn as usize].complete {
                self.report(
                    AnomalyKind::LostAppend,
                    &[w.txn, reader],
                    Some(w.key),
                    format!(
                        "key {}: T{} committed the append of {e}, but T{}, invoked after that, did not see it (and no read ever did)",
                        w.key,
                        self.id(w.txn),
                        self.id(reader)
                    ),
                );
                if let Some(a) = self.anomalies.last_mut() {
                    a.realtime = true;
                }
            }
        }
    }

    fn check_registers_and_add_edges(&mut self) {
        let h = self.h;
        // value (None = initial state) per key -> committed readers
        let mut readers: HashMap<(Key, Option<Elem>), Vec<u32>> = HashMap::new();
        // (key, value read, txn, value written): txn read then overwrote
        let mut facts: Vec<(Key, Option<Elem>, u32, Elem)> = Vec::new();
        for (i, t) in h.txns.iter().enumerate() {
            if t.outcome != Outcome::Committed {
                continue;
            }
            let txn = i as u32;
            // Per key: (last read before our first write, whether we wrote).
            let mut state: Vec<(Key, Option<Option<Elem>>, bool)> = Vec::new();
            for op in &t.ops {
                match *op {
                    Op::ReadReg {
                        key,
                        value: Some(v),
                    } => {
                        let st = match state.iter_mut().position(|s| s.0 == key) {
                            Some(p) => &mut state[p],
                            None => {
                                state.push((key, None, false));
                                state.last_mut().expect("just pushed")
                            }
                        };
                        if st.2 {
                            continue; // reads of our own writes are internal
                        }
                        st.1 = Some(v);
                        if self.check_register_read(txn, key, v) {
                            let list = readers.entry((key, v)).or_default();
                            if list.last() != Some(&txn) {
                                list.push(txn);
                            }
                        }
                    }
                    Op::Write { key, value } => match state.iter_mut().find(|s| s.0 == key) {
                        Some(st) if !st.2 => {
                            st.2 = true;
                            if let Some(v) = st.1 {
                                facts.push((key, v, txn, value));
                            }
                        }
                        Some(_) => {}
                        None => state.push((key, None, true)),
                    },
                    _ => {}
                }
            }
        }
        // wr: writer -> reader
        let mut wr: Vec<(u32, u32, Key, Elem)> = Vec::new();
        for (&(key, v), rs) in &readers {
            if let Some(v) = v {
                if let Some(w) = self
                    .reg_writer
                    .get(&v)
                    .filter(|w| self.in_graph[w.txn as usize])
                {
                    wr.extend(rs.iter().map(|&r| (w.txn, r, key, v)));
                }
            }
        }
        wr.sort_unstable();
        for (w, r, key, value) in wr {
            self.graph
                .add(w, r, EdgeKind::Wr, None, Cause::RegWr { key, value });
        }
        // ww / rw from read-then-write facts
        facts.sort_unstable();
        for &(key, v, t, w) in &facts {
            if let Some(prev) = v {
                if let Some(pw) = self
                    .reg_writer
                    .get(&prev)
                    .filter(|x| self.in_graph[x.txn as usize])
                {
                    self.graph.add(
                        pw.txn,
                        t,
                        EdgeKind::Ww,
                        None,
                        Cause::RegWw { key, prev, next: w },
                    );
                }
            }
            for &r in readers.get(&(key, v)).map_or(&[][..], |x| x) {
                self.graph.add(
                    r,
                    t,
                    EdgeKind::Rw,
                    None,
                    Cause::RegRw {
                        key,
                        read: v,
                        wrote: w,
                    },
                );
            }
        }
        // The store's version order (`History::version_orders`): each
        // version's writer precedes the next one's, and so does each of its
        // readers. This is what orders blind writes, which read nothing.
        for (&key, order) in &h.version_orders {
            let writer = |v: &Elem| {
                self.reg_writer
                    .get(v)
                    .filter(|w| w.key == key && self.in_graph[w.txn as usize])
                    .map(|w| w.txn)
            };
            for pair in order.windows(2) {
                let (prev, next) = (pair[0], pair[1]);
                let Some(nw) = writer(&next) else { continue };
                if let Some(pw) = writer(&prev) {
                    self.graph
                        .add(pw, nw, EdgeKind::Ww, None, Cause::RegWw { key, prev, next });
                }
                for &r in readers.get(&(key, Some(prev))).map_or(&[][..], |x| x) {
                    self.graph.add(
                        r,
                        nw,
                        EdgeKind::Rw,
                        None,
                        Cause::RegRw {
                            key,
                            read: Some(prev),
                            wrote: next,
                        },
                    );
                }
            }
        }
        // The initial state precedes every committed write.
        let mut first_writes: BTreeMap<Key, Vec<(u32, Elem)>> = BTreeMap::new();
        for (i, t) in h.txns.iter().enumerate() {
            if !self.in_graph[i] {
                continue;
            }
            let mut seen: Vec<Key> = Vec::new();
            for op in &t.ops {
                if let Op::Write { key, value } = *op {
                    if !seen.contains(&key) {
                        seen.push(key);
                        first_writes.entry(key).or_default().push((i as u32, value));
                    }
                }
            }
        }
        for (&key, writers) in &first_writes {
            for &r in readers.get(&(key, None)).map_or(&[][..], |x| x) {
                for &(w, value) in writers {
                    self.graph.add(
                        r,
                        w,
                        EdgeKind::Rw,
                        None,
                        Cause::RegRw {
                            key,
                            read: None,
                            wrote: value,
                        },
                    );
                }
            }
        }
        // Lost update: two transactions overwrote the same version.
        for group in facts.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            let mut txns: Vec<u32> = group.iter().map(|f| f.2).collect();
            txns.dedup();
            if txns.len() >= 2 {
                let (key, v) = (group[0].0, group[0].1);
                let ids: Vec<String> = txns.iter().map(|&t| format!("T{}", self.id(t))).collect();
                self.report(
                    AnomalyKind::GSingle,
                    &txns,
                    Some(key),
                    format!(
                        "lost update on key {key}: {} all read {} and then overwrote it; whichever write came second should have seen the first",
                        ids.join(", "),
                        v.map_or("nil".to_string(), |x| x.to_string())
                    ),
                );
            }
        }
    }

    /// Non-cycle checks of one external register read; returns whether the
    /// read can be used for edges.
    fn check_register_read(&mut self, txn: u32, key: Key, v: Option<Elem>) -> bool {
        let Some(v) = v else { return true };
        let Some(w) = self.reg_writer.get(&v).copied() else {
            self.report(
                AnomalyKind::GarbageRead,
                &[txn],
                Some(key),
                format!(
                    "key {key}: T{} read {v}, which no transaction wrote",
                    self.id(txn)
                ),
            );
            return false;
        };
        if w.key != key {
            self.report(
                AnomalyKind::GarbageRead,
                &[txn, w.txn],
                Some(key),
                format!(
                    "key {key}: T{} read {v}, which T{} wrote to key {}",
                    self.id(txn),
                    self.id(w.txn),
                    w.key
                ),
            );
            return false;
        }
        if w.txn == txn {
            // Our own later write: a read of the future, caught as internal.
            return false;
        }
        match self.outcome(w.txn) {
            Outcome::Aborted => {
                self.report(
                    AnomalyKind::G1a,
                    &[txn, w.txn],
                    Some(key),
                    format!(
                        "key {key}: T{} read {v}, written by aborted T{}",
                        self.id(txn),
                        self.id(w.txn)
                    ),
                );
                return false;
            }
            Outcome::Unknown => self.in_graph[w.txn as usize] = true,
            Outcome::Committed => {}
        }
        if !w.last {
            self.report(
                AnomalyKind::G1b,
                &[txn, w.txn],
                Some(key),
                format!(
                    "key {key}: T{} read {v}, an intermediate write of T{} (it overwrote it later)",
                    self.id(txn),
                    self.id(w.txn)
                ),
            );
        }
        true
    }

    /// Real-time order as a chain of virtual nodes: each committed txn points
    /// at the clock node of its completion, clock nodes point forward, and the
    /// latest clock node before a txn's invocation points at it. Paths then
    /// exist exactly where "completed before invoked" holds, in O(n) edges
    /// instead of O(n^2).
    fn add_realtime_edges(&mut self) {
        let mut done: Vec<(u64, u32)> = (0..self.h.txns.len() as u32)
            .filter(|&t| self.in_graph[t as usize] && self.committed(t))
            .map(|t| (self.h.txns[t as usize].complete, t))
            .collect();
        done.sort_unstable();
        let clocks: Vec<u32> = done.iter().map(|_| self.graph.add_virtual()).collect();
        for (i, &(_, t)) in done.iter().enumerate() {
            self.graph
                .add(t, clocks[i], EdgeKind::Realtime, None, Cause::Realtime);
            if i + 1 < clocks.len() {
                self.graph.add(
                    clocks[i],
                    clocks[i + 1],
                    EdgeKind::Realtime,
                    None,
                    Cause::Realtime,
                );
            }
        }
        for t in 0..self.h.txns.len() {
            if !self.in_graph[t] {
                continue;
            }
            let invoke = self.h.txns[t].invoke;
            let before = done.partition_point(|&(c, _)| c < invoke);
            if before > 0 {
                self.graph.add(
                    clocks[before - 1],
                    t as u32,
                    EdgeKind::Realtime,
                    None,
                    Cause::Realtime,
                );
            }
        }
    }

    /// A transaction must see its own writes and nobody else's changes
    /// between its own reads.
    fn check_internal(&mut self) {
        let h = self.h;
        for (i, t) in h.txns.iter().enumerate() {
            if t.outcome != Outcome::Committed {
                continue;
            }
            let txn = i as u32;
            // key -> (last observed list, own appends since)
            let mut lists: Vec<ListView<'h>> = Vec::new();
            let mut regs: Vec<(Key, Option<Elem>)> = Vec::new();
            let mut problems: Vec<String> = Vec::new();
            for op in &t.ops {
                match op {
                    Op::Append { key, elem } | Op::Delete { key, elem } => {
                        match lists.iter_mut().find(|s| s.0 == *key) {
                            Some(st) => st.2.push(*elem),
                            None => lists.push((*key, None, vec![*elem])),
                        }
                    }
                    Op::ReadList {
                        key,
                        value: Some(v),
                    } => problems.extend(observe_list(&mut lists, *key, v)),
                    Op::ScanList {
                        lo,
                        hi,
                        value: Some(rows),
                    } => {
                        let touched: Vec<Key> = lists
                            .iter()
                            .map(|s| s.0)
                            .filter(|k| (*lo..*hi).contains(k))
                            .collect();
                        for (key, v) in rows {
                            problems.extend(observe_list(&mut lists, *key, v));
                        }
                        for key in touched {
                            if rows.binary_search_by_key(&key, |r| r.0).is_err() {
                                problems.extend(observe_list(&mut lists, key, &[]));
                            }
                        }
                    }
                    Op::Write { key, value } => match regs.iter_mut().find(|s| s.0 == *key) {
                        Some(st) => st.1 = Some(*value),
                        None => regs.push((*key, Some(*value))),
                    },
                    Op::ReadReg {
                        key,
                        value: Some(v),
                    } => match regs.iter_mut().find(|s| s.0 == *key) {
                        Some(st) => {
                            if st.1 != *v {
                                let show = |x: Option<Elem>| {
                                    x.map_or("nil".to_string(), |x| x.to_string())
                                };
                                problems.push(format!(
                                    "read key {key} = {} but expected {}",
                                    show(*v),
                                    show(st.1)
                                ));
                            }
                            st.1 = *v;
                        }
                        None => regs.push((*key, *v)),
                    },
                    _ => {}
                }
            }
            for p in problems {
                self.report(
                    AnomalyKind::InternalInconsistency,
                    &[txn],
                    None,
                    format!("T{} {p}", t.id),
                );
            }
        }
    }
}

/// Per-key state of one transaction's list accesses: the last list it
/// observed, and its own appends since.
type ListView<'h> = (Key, Option<&'h [Elem]>, Vec<Elem>);

/// Records that a transaction observed `v` at `key`; returns a description
/// of the problem if that contradicts what it saw and did before.
fn observe_list<'h>(lists: &mut Vec<ListView<'h>>, key: Key, v: &'h [Elem]) -> Option<String> {
    let Some(st) = lists.iter_mut().find(|s| s.0 == key) else {
        lists.push((key, Some(v), Vec::new()));
        return None;
    };
    let ok = match st.1 {
        Some(base) => {
            v.len() == base.len() + st.2.len() && v.starts_with(base) && v.ends_with(&st.2)
        }
        None => v.ends_with(&st.2),
    };
    let problem = (!ok).then(|| {
        let expected = match st.1 {
            Some(base) => {
                let mut e = base.to_vec();
                e.extend_from_slice(&st.2);
                abbreviate(&e)
            }
            None => format!("a list ending in {}", fmt_list(&st.2)),
        };
        format!("read key {key} = {} but expected {expected}", abbreviate(v))
    });
    st.1 = Some(v);
    st.2.clear();
    problem
}
