//! Running a workload against any store, and reference executors.
//!
//! ```text
//!   Generator (behind a mutex) ──plan──► client thread 0..n ──execute──► TxnExecutor
//!                                            │  invoke()          (begin, ops, commit)
//!                                            ▼  complete(ops, outcome)
//!                                          Recorder ──► History ──► check()
//! ```
//!
//! A long run can be cut into segments ([`run_segmented`]), each checked
//! on its own and then dropped, so that memory stays flat however many
//! transactions run:
//!
//! ```text
//!   segment 0: keys 0..b0   ──all done──► check, drop, retire keys 0..b0
//!   segment 1: keys b0..b1  ──all done──► check, drop, retire keys b0..b1
//!   ...
//! ```
//!
//! Checking each segment alone is as strong as checking the whole history:
//! no segment's transaction touches or scans a key of another's
//! ([`Generator::next_segment`]), so no ww, wr or rw edge, item or
//! predicate, joins two segments; every transaction of a segment completes
//! before any of the next one begins, so real-time edges only go forward.
//! No cycle spans two segments, and every other anomaly the checker looks
//! for concerns one key or one transaction.
//!
//! The engine plugs in by implementing [`TxnExecutor`]; this crate never
//! depends on it. The executors here are the checker's own test subjects: a
//! serial store that must always check valid, and deliberately broken stores
//! (snapshot isolation, dirty reads, dropped appends) whose histories the
//! checker must reject.

use std::collections::{BTreeMap, HashMap};
use std::ops::{ControlFlow, Range};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::generate::{Generator, GeneratorConfig, PlannedOp};
use crate::history::{Elem, History, Key, Op, Outcome, Recorder};

/// Runs one transaction: begin, the planned ops, commit.
///
/// Implementations report what each op observed and how the transaction
/// ended. A transaction that fails part-way returns the ops it issued (reads
/// that never returned with `value: None`) and `Aborted`, or `Unknown` when
/// the commit's fate is not known.
pub trait TxnExecutor: Sync {
    fn execute(&self, client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome);

    /// After the run: each register's committed values, oldest first, if
    /// the store can tell (see [`History::version_orders`]). An order must
    /// be complete (no version reclaimed) or left out.
    fn register_versions(&self) -> BTreeMap<Key, Vec<Elem>> {
        BTreeMap::new()
    }

    /// Between two segments of [`run_segmented`], once the first one's
    /// history was checked: no transaction will name a key in `keys` again
    /// (lists and registers alike), so the store may delete what it holds
    /// for them, through its own unrecorded transactions, and so keep its
    /// memory bounded by one segment's keys.
    fn retire_keys(&self, keys: Range<Key>) {
        let _ = keys;
    }
}

/// Runs `txns` planned transactions from `config` on `clients` threads and
/// returns the recorded history.
pub fn run_workload<E: TxnExecutor + ?Sized>(
    executor: &E,
    config: &GeneratorConfig,
    clients: usize,
    txns: usize,
) -> History {
    let mut history = History::default();
    run_segmented(executor, config, clients, txns, txns, |segment| {
        history = segment.history;
        ControlFlow::Break(())
    });
    history
}

/// One segment of a [`run_segmented`] run, handed over once every one of
/// its transactions completed.
#[derive(Debug)]
pub struct Segment {
    /// 0 for the first segment.
    pub index: usize,
    /// The id of its first transaction: ids (and the clock) go on from
    /// segment to segment.
    pub first_txn: usize,
    /// Every key its transactions read, wrote or scanned; no transaction of
    /// another segment names one ([`Generator::segment_keys`]).
    pub keys: Range<Key>,
    /// Its transactions alone, checkable on their own; its version orders
    /// (blind writes) are those of its keys.
    pub history: History,
}

/// Runs `txns` planned transactions from `config` on `clients` threads as
/// consecutive segments of at most `segment_txns` (at least 1), and hands
/// each segment's history to `on_segment` once all of its transactions
/// completed, before any of the next one begins. Then, unless that was the
/// last segment or `on_segment` answered `Break`, the executor retires the
/// segment's keys ([`TxnExecutor::retire_keys`]) and the generator moves to
/// fresh ones ([`Generator::next_segment`]). At most one segment's history
/// is held at once (the one `on_segment` gets; it drops it). Each segment
/// has client threads of its own, which end with it. Returns the number of
/// segments run.
///
/// Each segment checked alone finds exactly what a check of the whole
/// history would: see the module docs.
pub fn run_segmented<E, F>(
    executor: &E,
    config: &GeneratorConfig,
    clients: usize,
    txns: usize,
    segment_txns: usize,
    mut on_segment: F,
) -> usize
where
    E: TxnExecutor + ?Sized,
    F: FnMut(Segment) -> ControlFlow<()>,
{
    let segment_txns = segment_txns.max(1);
    let generator = Mutex::new(Generator::new(config.clone()));
    let recorder = Recorder::new();
    let (mut first_txn, mut index) = (0, 0);
    loop {
        let n = segment_txns.min(txns - first_txn);
        // The clients end with the segment: its last transaction completes
        // before the next segment's first begins.
        run_txns(executor, &generator, &recorder, clients, n);
        let mut history = recorder.take_history();
        let keys = generator.lock().segment_keys();
        history.version_orders = executor.register_versions();
        history.version_orders.retain(|k, _| keys.contains(k));
        let segment = Segment {
            index,
            first_txn,
            keys: keys.clone(),
            history,
        };
        first_txn += n;
        index += 1;
        if on_segment(segment).is_break() || first_txn >= txns {
            return index;
        }
        executor.retire_keys(keys);
        generator.lock().next_segment();
    }
}

/// Runs `txns` transactions planned by `generator` on `clients` threads,
/// recorded by `recorder`, and returns once every one completed.
fn run_txns<E: TxnExecutor + ?Sized>(
    executor: &E,
    generator: &Mutex<Generator>,
    recorder: &Recorder,
    clients: usize,
    txns: usize,
) {
    let remaining = AtomicUsize::new(txns);
    std::thread::scope(|s| {
        for client in 0..clients.max(1) {
            let remaining = &remaining;
            s.spawn(move || {
                while remaining
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
                {
                    let plan = generator.lock().next_txn();
                    let ticket = recorder.invoke(client);
                    let (ops, outcome) = executor.execute(client, &plan);
                    recorder.complete(ticket, ops, outcome);
                }
            });
        }
    });
}

/// A scan's observation from the lists in `lo..hi` in key order: the
/// non-empty ones, up to `limit` of them; a scan that stopped there read
/// only the keys up to its last list, and says so by its range.
fn limited_scan(
    lo: Key,
    hi: Key,
    limit: Option<u64>,
    lists: impl Iterator<Item = (Key, Vec<Elem>)>,
) -> Op {
    let mut found: Vec<(Key, Vec<Elem>)> = Vec::new();
    let mut end = hi;
    for (k, l) in lists.filter(|(_, l)| !l.is_empty()) {
        found.push((k, l));
        if limit.is_some_and(|n| found.len() as u64 == n) {
            end = k + 1;
            break;
        }
    }
    Op::ScanList {
        lo,
        hi: end,
        value: Some(found),
    }
}

/// The state all reference executors share: lists and registers by key.
#[derive(Clone, Debug, Default)]
struct Data {
    lists: BTreeMap<Key, Vec<Elem>>,
    regs: HashMap<Key, Elem>,
}

impl Data {
    fn scan(&self, lo: Key, hi: Key, limit: Option<u64>) -> Op {
        limited_scan(
            lo,
            hi,
            limit,
            self.lists.range(lo..hi).map(|(k, l)| (*k, l.clone())),
        )
    }

    /// Forgets `keys` (see [`TxnExecutor::retire_keys`]).
    fn retire(&mut self, keys: &Range<Key>) {
        self.lists.retain(|k, _| !keys.contains(k));
        self.regs.retain(|k, _| !keys.contains(k));
    }

    /// Applies one op in place and returns what it observed.
    fn apply(&mut self, op: &PlannedOp) -> Op {
        match *op {
            PlannedOp::Append { key, elem } => {
                self.lists.entry(key).or_default().push(elem);
                Op::Append { key, elem }
            }
            // The list model of a delete: the marker ends the key's list.
            PlannedOp::Delete { key, elem } => {
                self.lists.entry(key).or_default().push(elem);
                Op::Delete { key, elem }
            }
            PlannedOp::Read { key } => Op::ReadList {
                key,
                value: Some(self.lists.get(&key).cloned().unwrap_or_default()),
            },
            PlannedOp::Write { key, value } => {
                self.regs.insert(key, value);
                Op::Write { key, value }
            }
            PlannedOp::ReadReg { key } => Op::ReadReg {
                key,
                value: Some(self.regs.get(&key).copied()),
            },
            PlannedOp::Scan { lo, hi, limit } => self.scan(lo, hi, limit),
        }
    }
}

/// A correct store: every transaction runs alone under one lock.
#[derive(Debug, Default)]
pub struct SerialExecutor {
    data: Mutex<Data>,
}

impl SerialExecutor {
    pub fn new() -> Self {
        Self::default()
    }

    /// The current lists, by key.
    pub fn snapshot_lists(&self) -> BTreeMap<Key, Vec<Elem>> {
        self.data.lock().lists.clone()
    }

    /// The current registers, by key.
    pub fn snapshot_registers(&self) -> BTreeMap<Key, Elem> {
        self.data
            .lock()
            .regs
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect()
    }
}

impl TxnExecutor for SerialExecutor {
    fn execute(&self, _client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let mut data = self.data.lock();
        (
            ops.iter().map(|op| data.apply(op)).collect(),
            Outcome::Committed,
        )
    }

    fn retire_keys(&self, keys: Range<Key>) {
        self.data.lock().retire(&keys);
    }
}

/// Snapshot isolation with first-committer-wins: reads come from the snapshot
/// at begin plus the txn's own writes; at commit, a txn aborts if another txn
/// committed a write to one of its written keys since its snapshot. Reads are
/// never validated, so write skew gets through.
///
/// [`SnapshotExecutor::with_blind_writes`] checks only the registers a
/// transaction read: a blind write lands on whatever committed last, with
/// nothing to certify the order (SI plus Strata's SSN blind-overwrite rule,
/// minus SSN). That is not serializable, and its anomalies need the
/// version order the executor reports to be seen.
#[derive(Debug, Default)]
pub struct SnapshotExecutor {
    state: Mutex<SiState>,
    blind_writes: bool,
}

#[derive(Debug, Default)]
struct SiState {
    clock: u64,
    /// Per key: committed elems with their commit timestamps, in order.
    lists: BTreeMap<Key, Vec<(u64, Elem)>>,
    regs: HashMap<Key, Vec<(u64, Elem)>>,
}

impl SnapshotExecutor {
    pub fn new() -> Self {
        Self::default()
    }

    /// First-committer-wins only for registers the transaction read.
    pub fn with_blind_writes() -> Self {
        SnapshotExecutor {
            blind_writes: true,
            ..Self::default()
        }
    }
}

impl TxnExecutor for SnapshotExecutor {
    fn execute(&self, _client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let snapshot = self.state.lock().clock;
        let mut own_lists: BTreeMap<Key, Vec<Elem>> = BTreeMap::new();
        let mut own_regs: HashMap<Key, Elem> = HashMap::new();
        let mut read_regs: Vec<Key> = Vec::new();
        let mut observed = Vec::with_capacity(ops.len());
        let visible = |versions: &[(u64, Elem)]| -> Vec<Elem> {
            let n = versions.partition_point(|&(ts, _)| ts <= snapshot);
            versions[..n].iter().map(|&(_, e)| e).collect()
        };
        for op in ops {
            // Give other clients a chance to commit in the middle of this txn.
            std::thread::yield_now();
            let st = self.state.lock();
            let list_at = |key: Key, own: &BTreeMap<Key, Vec<Elem>>| {
                let mut l = st.lists.get(&key).map_or_else(Vec::new, |v| visible(v));
                l.extend(own.get(&key).into_iter().flatten());
                l
            };
            observed.push(match *op {
                PlannedOp::Append { key, elem } => {
                    own_lists.entry(key).or_default().push(elem);
                    Op::Append { key, elem }
                }
                PlannedOp::Delete { key, elem } => {
                    own_lists.entry(key).or_default().push(elem);
                    Op::Delete { key, elem }
                }
                PlannedOp::Read { key } => Op::ReadList {
                    key,
                    value: Some(list_at(key, &own_lists)),
                },
                PlannedOp::Write { key, value } => {
                    own_regs.insert(key, value);
                    Op::Write { key, value }
                }
                PlannedOp::ReadReg { key } => {
                    read_regs.push(key);
                    let value = own_regs
                        .get(&key)
                        .copied()
                        .or_else(|| st.regs.get(&key).and_then(|v| visible(v).last().copied()));
                    Op::ReadReg {
                        key,
                        value: Some(value),
                    }
                }
                PlannedOp::Scan { lo, hi, limit } => {
                    let keys: Vec<Key> = st
                        .lists
                        .range(lo..hi)
                        .map(|(k, _)| *k)
                        .chain(own_lists.range(lo..hi).map(|(k, _)| *k))
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect();
                    let lists = keys.into_iter().map(|k| (k, list_at(k, &own_lists)));
                    limited_scan(lo, hi, limit, lists)
                }
            });
        }
        let mut st = self.state.lock();
        let conflict = own_lists.keys().any(|k| {
            st.lists
                .get(k)
                .and_then(|v| v.last())
                .is_some_and(|&(ts, _)| ts > snapshot)
        }) || own_regs.keys().any(|k| {
            (!self.blind_writes || read_regs.contains(k))
                && st
                    .regs
                    .get(k)
                    .and_then(|v| v.last())
                    .is_some_and(|&(ts, _)| ts > snapshot)
        });
        if conflict {
            return (observed, Outcome::Aborted);
        }
        st.clock += 1;
        let ts = st.clock;
        for (k, elems) in own_lists {
            st.lists
                .entry(k)
                .or_default()
                .extend(elems.into_iter().map(|e| (ts, e)));
        }
        for (k, v) in own_regs {
            st.regs.entry(k).or_default().push((ts, v));
        }
        (observed, Outcome::Committed)
    }

    fn register_versions(&self) -> BTreeMap<Key, Vec<Elem>> {
        let st = self.state.lock();
        st.regs
            .iter()
            .map(|(k, v)| (*k, v.iter().map(|&(_, e)| e).collect()))
            .collect()
    }

    fn retire_keys(&self, keys: Range<Key>) {
        let mut st = self.state.lock();
        st.lists.retain(|k, _| !keys.contains(k));
        st.regs.retain(|k, _| !keys.contains(k));
    }
}

/// Read uncommitted: ops apply to shared state immediately, and a txn that
/// aborts (every `abort_every`-th) rolls its appends back afterwards — after
/// other clients may already have read them.
#[derive(Debug)]
pub struct DirtyExecutor {
    data: Mutex<Data>,
    count: AtomicU64,
    abort_every: u64,
}

impl DirtyExecutor {
    pub fn new(abort_every: u64) -> Self {
        DirtyExecutor {
            data: Mutex::new(Data::default()),
            count: AtomicU64::new(0),
            abort_every: abort_every.max(1),
        }
    }
}

impl TxnExecutor for DirtyExecutor {
    fn execute(&self, _client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        let mut observed = Vec::with_capacity(ops.len());
        for op in ops {
            observed.push(self.data.lock().apply(op));
            std::thread::yield_now();
        }
        if n % self.abort_every != self.abort_every - 1 {
            return (observed, Outcome::Committed);
        }
        let mut data = self.data.lock();
        for op in &observed {
            match *op {
                Op::Append { key, elem } | Op::Delete { key, elem } => {
                    if let Some(l) = data.lists.get_mut(&key) {
                        l.retain(|&e| e != elem);
                    }
                }
                Op::Write { key, .. } => {
                    data.regs.remove(&key);
                }
                _ => {}
            }
        }
        (observed, Outcome::Aborted)
    }

    fn retire_keys(&self, keys: Range<Key>) {
        self.data.lock().retire(&keys);
    }
}

/// A serial store that silently drops every `drop_every`-th append while
/// reporting it as done: committed writes get lost.
#[derive(Debug)]
pub struct LossyExecutor {
    data: Mutex<Data>,
    appends: AtomicU64,
    drop_every: u64,
}

impl LossyExecutor {
    pub fn new(drop_every: u64) -> Self {
        LossyExecutor {
            data: Mutex::new(Data::default()),
            appends: AtomicU64::new(0),
            drop_every: drop_every.max(1),
        }
    }
}

impl TxnExecutor for LossyExecutor {
    fn execute(&self, _client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let mut data = self.data.lock();
        let observed = ops
            .iter()
            .map(|op| match *op {
                PlannedOp::Append { key, elem }
                    if self.appends.fetch_add(1, Ordering::Relaxed) % self.drop_every
                        == self.drop_every - 1 =>
                {
                    Op::Append { key, elem }
                }
                _ => data.apply(op),
            })
            .collect();
        (observed, Outcome::Committed)
    }

    fn retire_keys(&self, keys: Range<Key>) {
        self.data.lock().retire(&keys);
    }
}
