//! YCSB as modified by the Peloton study (§7.1).
//!
//! ```text
//!   usertable: key Int │ field0 .. field{N-1} Int │ text0 .. text{K-1} Text (100 B)
//!
//!   txn := ops_per_txn × ( read  key~Zipf(θ): read `read_attrs` attributes
//!                        | update key~Zipf(θ): set `modify_attrs` attributes )
//!          a read with probability read_ratio (1.0 read-only, 0.8
//!          read-intensive, 0.2 update-intensive)
//!
//!   heterogeneous (Fig. 8/9): + ro_threads threads running read-only
//!          transactions of ro_ops reads, begun with or without the READ
//!          ONLY hint (`begin_read_only` vs `begin`)
//! ```
//!
//! Text attributes are stored out of line and shared between versions (an
//! update that does not touch them copies a pointer). Operations are drawn
//! by the worker before the engine is called, so the same stream drives
//! Strata, the no-op engine (the driver's own cost) and the peer engines.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use strata::{Database, Error, Schema, Table, Type, Value};

use crate::driver::{self, DriverConfig, Observer, Outcome, Report, Worker};
use crate::rng::{Rng, Zipfian};
use crate::WorkloadError;

/// Rows per load transaction.
pub const LOAD_BATCH: u64 = 1_000;
/// Bytes of each non-inline text attribute.
pub const TEXT_BYTES: usize = 100;

/// The study's three read/update mixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mix {
    ReadOnly,
    /// 80% reads, 20% updates.
    ReadIntensive,
    /// 20% reads, 80% updates.
    UpdateIntensive,
}

impl Mix {
    pub const ALL: [Mix; 3] = [Mix::ReadOnly, Mix::ReadIntensive, Mix::UpdateIntensive];
    pub fn read_ratio(self) -> f64 {
        match self {
            Mix::ReadOnly => 1.0,
            Mix::ReadIntensive => 0.8,
            Mix::UpdateIntensive => 0.2,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mix::ReadOnly => "read-only",
            Mix::ReadIntensive => "read-intensive",
            Mix::UpdateIntensive => "update-intensive",
        }
    }
}

impl FromStr for Mix {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mix::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            WorkloadError::Config(format!(
                "unknown mix {s:?}; expected read-only, read-intensive or update-intensive"
            ))
        })
    }
}

/// One YCSB configuration.
#[derive(Debug, Clone, Serialize)]
pub struct YcsbConfig {
    /// Rows loaded before the run.
    pub records: u64,
    /// N: 64-bit integer attributes besides the key.
    pub attributes: usize,
    /// K: non-inline text attributes of [`TEXT_BYTES`] bytes.
    pub text_attributes: usize,
    /// Zipfian skew in [0, 1); 0 is uniform.
    pub theta: f64,
    /// Fraction of operations that are reads.
    pub read_ratio: f64,
    pub ops_per_txn: usize,
    /// Attributes a read looks at (of N + K); 0 means all.
    pub read_attrs: usize,
    /// Integer attributes an update sets (consecutive, from a random one).
    pub modify_attrs: usize,
    /// An update sets one random text attribute to a new text of
    /// [`TEXT_BYTES`] bytes instead of integers (the study's Figure 11:
    /// "each operation only accesses one attribute").
    pub update_text: bool,
    /// Secondary indexes on the first integer attributes.
    pub secondary_indexes: usize,
    /// Their structure (`Database::create_index_as`).
    #[serde(serialize_with = "crate::ycsb_core::kind_name")]
    pub index_kind: strata::IndexKind,
    /// Worker threads running the mix.
    pub threads: usize,
    /// Extra threads running read-only transactions (heterogeneous workload).
    pub ro_threads: usize,
    /// Reads per transaction of the extra read-only threads.
    pub ro_ops: usize,
    /// Begin the extra threads' transactions as READ ONLY.
    pub ro_hint: bool,
    /// Begin the mix's transactions as READ ONLY when the mix has no updates.
    pub read_only_hint: bool,
    /// Hand each transaction's keys to the engine up front
    /// (`Transaction::prefetch`), so their cache misses overlap.
    pub prefetch: bool,
    /// Run a transaction lost to a conflict again, with the same operations,
    /// after a randomised exponential backoff ([`strata::backoff`]), until
    /// it commits (as CCBench and DBx1000 do); otherwise draw anew.
    pub retry_aborted: bool,
    pub seed: u64,
}

impl Default for YcsbConfig {
    fn default() -> Self {
        YcsbConfig {
            records: 100_000,
            attributes: 10,
            text_attributes: 0,
            theta: 0.0,
            read_ratio: 0.8,
            ops_per_txn: 10,
            read_attrs: 0,
            modify_attrs: 1,
            update_text: false,
            secondary_indexes: 0,
            index_kind: strata::IndexKind::Standard,
            threads: 2,
            ro_threads: 0,
            ro_ops: 1000,
            ro_hint: true,
            read_only_hint: true,
            prefetch: true,
            retry_aborted: true,
            seed: 1,
        }
    }
}

impl YcsbConfig {
    /// Refuses out-of-range settings with a message naming the flag.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |m: String| Err(WorkloadError::Config(m));
        if self.records == 0 || self.records > i64::MAX as u64 {
            return bad(format!(
                "--records must be in 1..={}, got {}",
                i64::MAX,
                self.records
            ));
        }
        if self.threads == 0 || self.threads > 1024 {
            return bad(format!(
                "--threads must be in 1..=1024, got {}",
                self.threads
            ));
        }
        if self.ro_threads > 1024 {
            return bad(format!(
                "--ro-threads must be in 0..=1024, got {}",
                self.ro_threads
            ));
        }
        if self.ops_per_txn == 0 || self.ops_per_txn > 1_000_000 {
            return bad(format!(
                "--ops-per-txn must be in 1..=1000000, got {}",
                self.ops_per_txn
            ));
        }
        if self.ro_threads > 0 && (self.ro_ops == 0 || self.ro_ops > 10_000_000) {
            return bad(format!(
                "--ro-ops must be in 1..=10000000, got {}",
                self.ro_ops
            ));
        }
        if !(0.0..=1.0).contains(&self.read_ratio) {
            return bad(format!(
                "--read-ratio must be in [0, 1], got {}",
                self.read_ratio
            ));
        }
        if !(0.0..=1.0).contains(&self.theta) {
            return bad(format!("--theta must be in [0, 1], got {}", self.theta));
        }
        if self.attributes == 0 || self.attributes > 1000 {
            return bad(format!(
                "--attributes (--columns) must be in 1..=1000, got {}",
                self.attributes
            ));
        }
        if self.text_attributes > 100 {
            return bad(format!(
                "--text-attributes must be in 0..=100, got {}",
                self.text_attributes
            ));
        }
        if self.read_attrs > self.attributes + self.text_attributes {
            return bad(format!(
                "--read-attrs must be at most the {} attributes of a row, got {}",
                self.attributes + self.text_attributes,
                self.read_attrs
            ));
        }
        if self.update_text && self.text_attributes == 0 {
            return bad("--update-text needs --text-attributes of at least 1".into());
        }
        if self.modify_attrs == 0 || self.modify_attrs > self.attributes {
            return bad(format!(
                "--modify-attrs must be in 1..={} (the integer attributes), got {}",
                self.attributes, self.modify_attrs
            ));
        }
        if self.secondary_indexes > self.attributes {
            return bad(format!(
                "--secondary-indexes must be at most --attributes ({}), got {}",
                self.attributes, self.secondary_indexes
            ));
        }
        Ok(())
    }

    /// Attributes a read looks at.
    pub fn attrs_read(&self) -> usize {
        if self.read_attrs == 0 {
            self.attributes + self.text_attributes
        } else {
            self.read_attrs
        }
    }

    /// Attributes an update can start at: the integer ones, or the text
    /// ones with `update_text`.
    pub fn updatable(&self) -> usize {
        if self.update_text {
            self.text_attributes
        } else {
            self.attributes
        }
    }

    /// Whether the mix's own transactions begin as READ ONLY.
    pub fn mix_is_read_only(&self) -> bool {
        self.read_ratio >= 1.0 && self.read_only_hint
    }
}

/// One operation, drawn by the worker before the engine runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub key: u64,
    /// `None` for a read.
    pub update: Option<i64>,
    /// First attribute (0-based among the integer attributes) the update
    /// sets, or the read starts at.
    pub first: u16,
}

/// How a transaction begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    ReadWrite,
    /// The READ ONLY hint: no concurrency-control bookkeeping.
    ReadOnly,
}

/// An engine the YCSB transactions can run on.
pub trait YcsbEngine: Sync {
    /// Short stable name (`strata`, `noop`, `skipdb`, ...).
    fn name(&self) -> &'static str;
    /// Inserts rows with keys `lo..hi` in one transaction.
    fn load(&self, cfg: &YcsbConfig, lo: u64, hi: u64) -> Result<(), WorkloadError>;
    /// Runs one transaction; a lost conflict is `Ok(Outcome::Aborted)`.
    fn execute(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        begin: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError>;
    /// Waits before retry `attempt` of a transaction lost to a conflict
    /// (engines with a regulator of their own override it).
    fn backoff(&self, attempt: u32) {
        strata::backoff(attempt)
    }
    /// Memory figures, for engines that report them.
    fn memory(&self) -> Option<Memory> {
        None
    }
    /// The load is done (the run's flows, such as allocations per
    /// transaction, count from here).
    fn loaded(&self) {}
    /// Bytes the engine's version store allocated and its collector freed
    /// so far, for engines that account them: the run's memory series
    /// then plots them instead of the resident set.
    fn memory_flow(&self) -> Option<driver::MemoryFlow> {
        None
    }
}

/// The integer value of attribute `a` of row `k` at load time.
pub fn initial_value(k: u64, a: usize) -> i64 {
    (k as i64).wrapping_mul(31).wrapping_add(a as i64)
}

/// The new text an update with `update_text` writes: [`TEXT_BYTES`] bytes.
pub fn updated_text(value: i64) -> String {
    format!("{value:0>width$}", width = TEXT_BYTES)
}

/// The text of text attribute `t` of row `k`: [`TEXT_BYTES`] bytes.
pub fn initial_text(k: u64, t: usize) -> String {
    // Exactly TEXT_BYTES allocated, as a copy would be: memory figures
    // compare sharing with copying, and a doubling growth to 128 bytes
    // charged the shared payloads 28 bytes each.
    let mut s = String::with_capacity(TEXT_BYTES);
    s.push_str(&format!("row {k} text {t} "));
    let fill = b'a' + ((k as usize + t) % 26) as u8;
    while s.len() < TEXT_BYTES {
        s.push(fill as char);
    }
    s.truncate(TEXT_BYTES);
    s
}

// ------------------------------------------------------------------ Strata

/// YCSB on a Strata [`Database`].
pub struct StrataYcsb {
    db: Database,
    table: Table,
    /// The counters at the end of the load (see [`Memory::of_run`]).
    loaded: std::sync::Mutex<Option<strata::Stats>>,
}

impl StrataYcsb {
    /// Creates `usertable` in `db` for `cfg`.
    pub fn new(db: Database, cfg: &YcsbConfig) -> Result<Self, WorkloadError> {
        let mut schema = Schema::new("usertable").column("key", Type::Int);
        for c in 0..cfg.attributes {
            schema = schema.column(format!("field{c}"), Type::Int);
        }
        for t in 0..cfg.text_attributes {
            schema = schema.column(format!("text{t}"), Type::Text);
        }
        let table = db.create_table(schema.primary_key(&["key"]))?;
        // Non-unique indexes on the first attributes, which updates modify
        // (they start at a random attribute), so each update maintains them.
        for i in 0..cfg.secondary_indexes {
            let col = format!("field{i}");
            db.create_index_as(
                &format!("usertable_field{i}"),
                &table,
                &[col.as_str()],
                strata::Unique::No,
                cfg.index_kind,
            )?;
        }
        Ok(StrataYcsb {
            db,
            table,
            loaded: std::sync::Mutex::new(None),
        })
    }

    pub fn database(&self) -> &Database {
        &self.db
    }
}

fn conflict_or(e: Error) -> Result<Outcome, WorkloadError> {
    match e {
        Error::Conflict(k) => Ok(Outcome::Aborted(k.name())),
        other => Err(other.into()),
    }
}

impl YcsbEngine for StrataYcsb {
    fn name(&self) -> &'static str {
        "strata"
    }

    fn backoff(&self, attempt: u32) {
        self.db.backoff_after_conflict(attempt)
    }

    fn load(&self, cfg: &YcsbConfig, lo: u64, hi: u64) -> Result<(), WorkloadError> {
        self.db.run(|txn| {
            for k in lo..hi {
                let mut row = Vec::with_capacity(1 + cfg.attributes + cfg.text_attributes);
                row.push(Value::Int(k as i64));
                row.extend((0..cfg.attributes).map(|a| Value::Int(initial_value(k, a))));
                row.extend((0..cfg.text_attributes).map(|t| Value::from(initial_text(k, t))));
                txn.insert(&self.table, row)?;
            }
            Ok(())
        })?;
        Ok(())
    }

    fn execute(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        begin: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        // One epoch pin for the whole attempt (`Database::pinned`): the
        // operations are in memory and short.
        self.db.pinned(|| {
            let t = match begin {
                Begin::ReadOnly => self.db.begin_read_only()?,
                Begin::ReadWrite => self.db.begin()?,
            };
            // The keys are rebuilt in place, as an application on a hot
            // path would: a `Key` per operation was two allocator calls each.
            KEYS.with_borrow_mut(|keys| {
                keys.resize_with(ops.len(), || strata::key![0i64]);
                for (k, op) in keys.iter_mut().zip(ops) {
                    k.0[0] = Value::Int(op.key as i64);
                }
                // A read of fewer attributes than a row has is a
                // projection (see `read_projected`); the choice is made
                // once, so the whole-row mix runs the code it always ran.
                if cfg.attrs_read() < cfg.attributes + cfg.text_attributes {
                    self.run_ops::<true>(cfg, ops, keys, t, sink)
                } else {
                    self.run_ops::<false>(cfg, ops, keys, t, sink)
                }
            })
        })
    }

    fn memory(&self) -> Option<Memory> {
        let now = self.db.stats();
        let loaded = self.loaded.lock().expect("not poisoned").clone();
        Some(match loaded {
            Some(base) => Memory::of_run(&now, &base),
            None => Memory::of(&now),
        })
    }

    fn loaded(&self) {
        *self.loaded.lock().expect("not poisoned") = Some(self.db.stats());
    }

    fn memory_flow(&self) -> Option<driver::MemoryFlow> {
        // Counters only: sampled every second of the run, and a full
        // `stats()` walks every chain (seconds once a no-GC run has
        // millions of versions), which held up the run's end with it.
        let st = self.db.counters();
        Some(driver::MemoryFlow {
            allocated: st.storage_bytes_allocated,
            freed: st.gc_bytes_freed,
        })
    }
}

std::thread_local! {
    /// Each client thread's keys, reused from transaction to transaction.
    static KEYS: std::cell::RefCell<Vec<strata::Key>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Each client thread's projection (column positions of a read of
    /// fewer attributes than a row has), reused likewise.
    static COLS: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a read adds to the sink for one value it read.
#[inline]
pub(crate) fn fold_value(acc: u64, v: &Value) -> u64 {
    acc.wrapping_add(match v {
        Value::Int(v) => *v as u64,
        Value::Text(s) => s.len() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::Float(f) => f.to_bits(),
        Value::Bool(b) => u64::from(*b),
        Value::Null => 0,
    })
}

impl StrataYcsb {
    /// A read of fewer attributes than a row has (Wu et al. Fig. 15a): a
    /// projection, so that storage decodes only those
    /// (`Transaction::read_columns_with`): `nread` of the row's `width`
    /// attributes from `first` on, wrapping around. (Out of line: the
    /// whole-row read of the default mix keeps its code as it was.)
    #[inline(never)]
    fn read_projected(
        &self,
        t: &mut strata::Transaction,
        key: &strata::Key,
        first: usize,
        nread: usize,
        width: usize,
    ) -> Result<Option<u64>, Error> {
        COLS.with_borrow_mut(|cols| {
            cols.clear();
            cols.extend((0..nread).map(|i| 1 + (first + i) % width));
            t.read_columns_with(&self.table, key, cols, |vals| {
                vals.iter().fold(0u64, fold_value)
            })
        })
    }

    // (Always inline: as an engine's functions grow, LLVM's choice for
    // this closure flips, and the harness's own instructions moved by
    // ~100 a transaction with it, which callgrind comparisons of engine
    // builds then misread as the engine's.)
    #[inline(always)]
    fn run_ops<const PROJECT: bool>(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        keys: &[strata::Key],
        mut t: strata::Transaction,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        let width = cfg.attributes + cfg.text_attributes;
        let nread = cfg.attrs_read();
        if cfg.prefetch {
            t.prefetch(&self.table, keys)?;
        }
        for (op, key) in ops.iter().zip(keys) {
            match op.update {
                None if PROJECT => {
                    match self.read_projected(&mut t, key, op.first as usize, nread, width) {
                        Ok(v) => *sink = sink.wrapping_add(v.unwrap_or(0)),
                        Err(e) => return conflict_or(e),
                    }
                }
                None => {
                    let first = op.first as usize;
                    let r = t.read_with(&self.table, key, |row| {
                        // The attributes from `first` on, wrapping around:
                        // two slices, not a division per attribute.
                        // (Two slice folds, not a chained iterator: the
                        // chain's `try_fold` was not always inlined, a
                        // call per read.)
                        let (before, from) = row[1..=width].split_at(first);
                        let add = |acc: u64, v: &Value| {
                            acc.wrapping_add(match v {
                                Value::Int(v) => *v as u64,
                                Value::Text(s) => s.len() as u64,
                                Value::Bytes(b) => b.len() as u64,
                                Value::Float(f) => f.to_bits(),
                                Value::Bool(b) => u64::from(*b),
                                Value::Null => 0,
                            })
                        };
                        let n = nread.min(from.len());
                        let rest = (nread - n).min(before.len());
                        before[..rest]
                            .iter()
                            .fold(from[..n].iter().fold(0u64, add), add)
                    });
                    match r {
                        Ok(v) => *sink = sink.wrapping_add(v.unwrap_or(0)),
                        Err(e) => return conflict_or(e),
                    }
                }
                Some(value) => {
                    let col = |i: usize| 1 + (op.first as usize + i) % cfg.attributes;
                    let r = if cfg.update_text {
                        let col = 1 + cfg.attributes + op.first as usize;
                        t.update(&self.table, key, &[(col, Value::from(updated_text(value)))])
                    } else if cfg.modify_attrs == 1 {
                        t.update(&self.table, key, &[(col(0), Value::Int(value))])
                    } else {
                        let changes: Vec<(usize, Value)> = (0..cfg.modify_attrs)
                            .map(|i| (col(i), Value::Int(value.wrapping_add(i as i64))))
                            .collect();
                        t.update(&self.table, key, &changes)
                    };
                    if let Err(e) = r {
                        return conflict_or(e);
                    }
                }
            }
        }
        match t.commit() {
            Ok(()) => Ok(Outcome::Committed),
            Err(e) => conflict_or(e),
        }
    }
}

/// Memory figures of a Strata database after a run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Memory {
    pub rows: u64,
    pub bytes_per_row: f64,
    pub version_bytes: u64,
    pub header_bytes: u64,
    pub index_bytes: u64,
    pub live_versions: u64,
    pub longest_chain: u64,
    pub avg_chain_length: f64,
    pub versions_reclaimed: u64,
    /// SI+SSN writes that landed on a version committed after their
    /// snapshot, and writes that waited out a committing writer of their
    /// row (`strata::Stats`; the whole run, warm-up included).
    pub blind_overwrites: u64,
    pub writer_waits: u64,
    /// In-place storage: masters (+ newest headers); append-only: everything.
    pub main_table_bytes: u64,
    /// Time-travel copies or delta records.
    pub version_store_bytes: u64,
    /// Per memory space (empty with the global allocator).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memory_spaces: Vec<SpaceMemory>,
    /// Blocks the version store allocated (version blocks, records of
    /// their own, masters), their bytes, and the bytes garbage collection
    /// freed (`strata::Stats::storage_allocations`,
    /// `storage_bytes_allocated`, `gc_bytes_freed`): the whole life of the
    /// database, the load included.
    pub storage_allocations: u64,
    pub storage_bytes_allocated: u64,
    pub gc_bytes_freed: u64,
    /// The same over the run (warm-up and measured time, not the load),
    /// per committed transaction (read-only ones included): what an
    /// update-heavy mix allocates per transaction under each storage
    /// scheme (Wu et al. §7.3), and the memory it takes and gives back
    /// (Figs. 18-21). 0 when nothing committed.
    pub storage_allocations_per_txn: f64,
    pub storage_bytes_allocated_per_txn: f64,
    pub gc_bytes_freed_per_txn: f64,
}

/// One memory space's figures (`strata::SpaceStats`).
#[derive(Debug, Clone, Serialize, Default)]
pub struct SpaceMemory {
    pub space: usize,
    pub chunks: u64,
    pub bytes_reserved: u64,
    pub bytes_in_use: u64,
    pub slots_in_use: u64,
    pub free_slots: u64,
    pub allocations: u64,
    /// Of `allocations`, records (time-travel copies, deltas).
    pub record_allocations: u64,
    pub large_allocations: u64,
    /// Allocations and frees that waited for the space's lock.
    pub contended: u64,
}

impl Memory {
    pub fn of(st: &strata::Stats) -> Self {
        Memory {
            rows: st.rows,
            bytes_per_row: st.bytes_per_row(),
            version_bytes: st.version_bytes,
            header_bytes: st.header_bytes,
            index_bytes: st.index_bytes,
            live_versions: st.live_versions,
            longest_chain: st.longest_chain,
            avg_chain_length: st.avg_chain_length(),
            versions_reclaimed: st.versions_reclaimed,
            blind_overwrites: st.blind_overwrites,
            writer_waits: st.writer_waits,
            main_table_bytes: st.main_table_bytes,
            version_store_bytes: st.version_store_bytes,
            memory_spaces: st
                .memory_spaces
                .iter()
                .map(|s| SpaceMemory {
                    space: s.space,
                    chunks: s.chunks,
                    bytes_reserved: s.bytes_reserved,
                    bytes_in_use: s.bytes_in_use,
                    slots_in_use: s.slots_in_use,
                    free_slots: s.free_slots,
                    allocations: s.allocations,
                    record_allocations: s.record_allocations,
                    large_allocations: s.large_allocations,
                    contended: s.contended,
                })
                .collect(),
            storage_allocations: st.storage_allocations,
            storage_bytes_allocated: st.storage_bytes_allocated,
            gc_bytes_freed: st.gc_bytes_freed,
            storage_allocations_per_txn: 0.0,
            storage_bytes_allocated_per_txn: 0.0,
            gc_bytes_freed_per_txn: 0.0,
        }
    }

    /// [`Memory::of`] `st`, with the per-transaction flows over the run
    /// since `loaded` (the counters at the end of the load).
    pub fn of_run(st: &strata::Stats, loaded: &strata::Stats) -> Self {
        let txns = (st.commits + st.read_only_commits)
            .saturating_sub(loaded.commits + loaded.read_only_commits);
        let per = |now: u64, then: u64| {
            if txns == 0 {
                0.0
            } else {
                now.saturating_sub(then) as f64 / txns as f64
            }
        };
        Memory {
            storage_allocations_per_txn: per(st.storage_allocations, loaded.storage_allocations),
            storage_bytes_allocated_per_txn: per(
                st.storage_bytes_allocated,
                loaded.storage_bytes_allocated,
            ),
            gc_bytes_freed_per_txn: per(st.gc_bytes_freed, loaded.gc_bytes_freed),
            ..Memory::of(st)
        }
    }
}

// ------------------------------------------------------------------ no-op

/// Runs the driver loop (key draws, values, timing) without an engine, to
/// measure the driver's own cost.
pub struct Noop;

impl YcsbEngine for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn load(&self, _: &YcsbConfig, _: u64, _: u64) -> Result<(), WorkloadError> {
        Ok(())
    }
    fn execute(
        &self,
        _: &YcsbConfig,
        ops: &[Op],
        _: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        for op in ops {
            *sink = sink
                .wrapping_add(op.key)
                .wrapping_add(op.update.unwrap_or(0) as u64);
        }
        Ok(Outcome::Committed)
    }
}

// ------------------------------------------------------------------ workers

/// Transaction types of a YCSB run.
pub const TYPES: [&str; 2] = ["ycsb", "read-only-extra"];

/// A YCSB client: the mix, or (heterogeneous workload) long read-only
/// transactions.
pub struct YcsbWorker<'a> {
    engine: &'a dyn YcsbEngine,
    cfg: &'a YcsbConfig,
    zipf: &'a Zipfian,
    rng: Rng,
    ops: Vec<Op>,
    extra_read_only: bool,
    sink: u64,
    /// Set after a conflict: `ops` is run again, begun this way, after
    /// backing off (`attempt` conflicts in a row so far).
    retry: Option<Begin>,
    attempt: u32,
}

impl<'a> YcsbWorker<'a> {
    pub fn new(
        engine: &'a dyn YcsbEngine,
        cfg: &'a YcsbConfig,
        zipf: &'a Zipfian,
        thread: usize,
        extra_read_only: bool,
    ) -> Self {
        YcsbWorker {
            engine,
            cfg,
            zipf,
            rng: Rng::for_thread(cfg.seed, thread),
            ops: Vec::new(),
            extra_read_only,
            sink: 0,
            retry: None,
            attempt: 0,
        }
    }

    /// Draws the next transaction's operations into `self.ops`.
    pub fn draw(&mut self) -> Begin {
        let cfg = self.cfg;
        self.ops.clear();
        let (n, read_ratio, begin) = if self.extra_read_only {
            let b = if cfg.ro_hint {
                Begin::ReadOnly
            } else {
                Begin::ReadWrite
            };
            (cfg.ro_ops, 1.0, b)
        } else if cfg.mix_is_read_only() {
            (cfg.ops_per_txn, 1.0, Begin::ReadOnly)
        } else {
            (cfg.ops_per_txn, cfg.read_ratio, Begin::ReadWrite)
        };
        let width = (cfg.attributes + cfg.text_attributes) as u64;
        for _ in 0..n {
            let key = self.zipf.sample(&mut self.rng);
            let op = if read_ratio >= 1.0 || self.rng.chance(read_ratio) {
                let first = if cfg.attrs_read() as u64 == width {
                    0
                } else {
                    self.rng.range(0, width - 1) as u16
                };
                Op {
                    key,
                    update: None,
                    first,
                }
            } else {
                Op {
                    key,
                    update: Some((self.rng.next_u64() >> 1) as i64),
                    // The attribute the update starts at: a text one
                    // with `update_text`.
                    first: self.rng.range(0, cfg.updatable() as u64 - 1) as u16,
                }
            };
            self.ops.push(op);
        }
        begin
    }

    /// The operations drawn last.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }
}

impl Worker for YcsbWorker<'_> {
    // Kept out of line so that `valgrind --tool=callgrind
    // --toggle-collect` can count one transaction's instructions
    // (docs/PERFORMANCE.md); one call per transaction costs nothing.
    #[inline(never)]
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let begin = match self.retry.take() {
            Some(b) => {
                self.engine.backoff(self.attempt);
                b
            }
            None => self.draw(),
        };
        let out = self
            .engine
            .execute(self.cfg, &self.ops, begin, &mut self.sink)?;
        if matches!(out, Outcome::Aborted(_)) && self.cfg.retry_aborted {
            self.attempt += 1;
            self.retry = Some(begin);
        } else {
            self.attempt = 0;
        }
        std::hint::black_box(self.sink);
        Ok((usize::from(self.extra_read_only), out))
    }
}

/// What a YCSB run measured.
#[derive(Debug, Clone, Serialize)]
pub struct YcsbReport {
    pub engine: &'static str,
    pub load_s: f64,
    pub run: Report,
    pub memory: Option<Memory>,
}

/// Loads `cfg.records` rows, threads taking disjoint 1,000-row batches.
pub fn load(
    engine: &dyn YcsbEngine,
    cfg: &YcsbConfig,
    observer: &mut dyn Observer,
) -> Result<Duration, WorkloadError> {
    let started = Instant::now();
    let batches = cfg.records.div_ceil(LOAD_BATCH);
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    observer.start("load", cfg.records, "rows");
    let r = std::thread::scope(|s| {
        let workers: Vec<_> = (0..cfg.threads.min(batches as usize).max(1))
            .map(|_| {
                let (next, done) = (&next, &done);
                s.spawn(move || -> Result<(), WorkloadError> {
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        if b >= batches {
                            return Ok(());
                        }
                        let lo = b * LOAD_BATCH;
                        let hi = (lo + LOAD_BATCH).min(cfg.records);
                        engine.load(cfg, lo, hi)?;
                        done.fetch_add(hi - lo, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        crate::driver::join_loaders(workers, &done, observer)
    });
    observer.finish();
    r?;
    Ok(started.elapsed())
}

/// Loads and runs YCSB on `engine`.
pub fn run(
    engine: &dyn YcsbEngine,
    cfg: &YcsbConfig,
    driver_cfg: &DriverConfig,
    observer: &mut dyn Observer,
) -> Result<YcsbReport, WorkloadError> {
    cfg.validate()?;
    let load_s = load(engine, cfg, observer)?.as_secs_f64();
    engine.loaded();
    let zipf = Zipfian::new(cfg.records, cfg.theta);
    let mut workers = Vec::with_capacity(cfg.threads + cfg.ro_threads);
    for i in 0..cfg.threads {
        workers.push(YcsbWorker::new(engine, cfg, &zipf, i, false));
    }
    for i in 0..cfg.ro_threads {
        workers.push(YcsbWorker::new(engine, cfg, &zipf, cfg.threads + i, true));
    }
    let flow = || engine.memory_flow().unwrap_or_default();
    let metered: Option<&(dyn Fn() -> driver::MemoryFlow + Sync)> = match engine.memory_flow() {
        Some(_) => Some(&flow),
        None => None,
    };
    let run = driver::run_metered(
        driver_cfg,
        &driver::Stop::Elapsed,
        &TYPES,
        workers,
        observer,
        metered,
    )?;
    Ok(YcsbReport {
        engine: engine.name(),
        load_s,
        run,
        memory: engine.memory(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw_many(cfg: &YcsbConfig, txns: usize, extra: bool) -> Vec<(Begin, Vec<Op>)> {
        let zipf = Zipfian::new(cfg.records, cfg.theta);
        let mut w = YcsbWorker::new(&Noop, cfg, &zipf, 0, extra);
        (0..txns)
            .map(|_| {
                let b = w.draw();
                (b, w.ops().to_vec())
            })
            .collect()
    }

    #[test]
    fn mixes_have_their_read_ratios() {
        for mix in Mix::ALL {
            let cfg = YcsbConfig {
                read_ratio: mix.read_ratio(),
                records: 1000,
                ..YcsbConfig::default()
            };
            let txns = draw_many(&cfg, 5000, false);
            let ops: Vec<&Op> = txns.iter().flat_map(|(_, o)| o).collect();
            assert_eq!(ops.len(), 50_000);
            let reads = ops.iter().filter(|o| o.update.is_none()).count() as f64;
            let ratio = reads / ops.len() as f64;
            assert!((ratio - mix.read_ratio()).abs() < 0.01, "{mix:?}: {ratio}");
            let expect_begin = if mix == Mix::ReadOnly {
                Begin::ReadOnly
            } else {
                Begin::ReadWrite
            };
            assert!(txns.iter().all(|(b, _)| *b == expect_begin), "{mix:?}");
        }
        assert_eq!(
            "update-intensive".parse::<Mix>().unwrap(),
            Mix::UpdateIntensive
        );
        assert!("sideways".parse::<Mix>().is_err());
    }

    #[test]
    fn keys_and_attributes_stay_in_range() {
        let cfg = YcsbConfig {
            records: 37,
            attributes: 5,
            text_attributes: 2,
            read_attrs: 3,
            theta: 0.99,
            read_ratio: 0.5,
            ..YcsbConfig::default()
        };
        let mut seen = [false; 37];
        for (_, ops) in draw_many(&cfg, 2000, false) {
            for op in ops {
                assert!(op.key < 37);
                seen[op.key as usize] = true;
                match op.update {
                    Some(_) => assert!((op.first as usize) < cfg.attributes),
                    None => assert!((op.first as usize) < 7),
                }
            }
        }
        assert!(seen.iter().filter(|&&s| s).count() > 30);
    }

    #[test]
    fn extra_read_only_threads_follow_the_hint() {
        let mut cfg = YcsbConfig {
            records: 100,
            ro_threads: 1,
            ro_ops: 50,
            ..YcsbConfig::default()
        };
        for hint in [true, false] {
            cfg.ro_hint = hint;
            for (b, ops) in draw_many(&cfg, 10, true) {
                assert_eq!(ops.len(), 50);
                assert!(ops.iter().all(|o| o.update.is_none()));
                assert_eq!(
                    b,
                    if hint {
                        Begin::ReadOnly
                    } else {
                        Begin::ReadWrite
                    }
                );
            }
        }
    }

    /// A read-only mix begins READ ONLY only with the hint; without it the
    /// same reads run as ordinary transactions (the like-for-like comparison
    /// with engines that have no hint).
    #[test]
    fn a_read_only_mix_follows_the_hint() {
        let mut cfg = YcsbConfig {
            records: 100,
            read_ratio: 1.0,
            ..YcsbConfig::default()
        };
        for hint in [true, false] {
            cfg.read_only_hint = hint;
            for (b, ops) in draw_many(&cfg, 10, false) {
                assert!(ops.iter().all(|o| o.update.is_none()));
                let want = if hint {
                    Begin::ReadOnly
                } else {
                    Begin::ReadWrite
                };
                assert_eq!(b, want);
            }
        }
    }

    /// Aborts every other transaction and records what it was asked to run.
    struct Flaky(std::sync::Mutex<Vec<(Begin, Vec<Op>)>>);
    impl YcsbEngine for Flaky {
        fn name(&self) -> &'static str {
            "flaky"
        }
        fn load(&self, _: &YcsbConfig, _: u64, _: u64) -> Result<(), WorkloadError> {
            Ok(())
        }
        fn execute(
            &self,
            _: &YcsbConfig,
            ops: &[Op],
            begin: Begin,
            _: &mut u64,
        ) -> Result<Outcome, WorkloadError> {
            let mut seen = self.0.lock().unwrap();
            seen.push((begin, ops.to_vec()));
            Ok(if seen.len() % 2 == 1 {
                Outcome::Aborted("write-write")
            } else {
                Outcome::Committed
            })
        }
    }

    #[test]
    fn an_aborted_transaction_is_retried_with_the_same_operations() {
        for retry in [true, false] {
            let cfg = YcsbConfig {
                records: 1_000_000,
                read_ratio: 0.5,
                retry_aborted: retry,
                ..YcsbConfig::default()
            };
            let zipf = Zipfian::new(cfg.records, cfg.theta);
            let engine = Flaky(Default::default());
            let mut w = YcsbWorker::new(&engine, &cfg, &zipf, 0, false);
            for _ in 0..20 {
                w.step().unwrap();
            }
            let seen = engine.0.into_inner().unwrap();
            for pair in seen.chunks(2) {
                // Attempt 2k+1 aborted; attempt 2k+2 is its retry (or not).
                assert_eq!(pair[0] == pair[1], retry, "retry {retry}");
            }
            // A committed transaction is not run again.
            assert_ne!(seen[1], seen[2]);
        }
    }

    #[test]
    fn validation_names_the_flag() {
        let bad = |f: &dyn Fn(&mut YcsbConfig), needle: &str| {
            let mut c = YcsbConfig::default();
            f(&mut c);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        };
        bad(&|c| c.theta = 1.01, "--theta");
        bad(&|c| c.records = 0, "--records");
        bad(&|c| c.modify_attrs = 11, "--modify-attrs");
        bad(&|c| c.read_attrs = 12, "--read-attrs");
        bad(&|c| c.text_attributes = 101, "--text-attributes");
        bad(&|c| c.update_text = true, "--update-text");
        bad(&|c| c.read_ratio = -0.1, "--read-ratio");
        YcsbConfig::default().validate().unwrap();
    }

    #[test]
    fn text_updates_write_one_text_attribute_and_leave_the_integers() {
        let db = Database::open(strata::Options::default()).unwrap();
        let cfg = YcsbConfig {
            records: 50,
            attributes: 1,
            text_attributes: 3,
            update_text: true,
            read_ratio: 0.0,
            ..YcsbConfig::default()
        };
        cfg.validate().unwrap();
        let engine = StrataYcsb::new(db.clone(), &cfg).unwrap();
        let d = DriverConfig {
            warmup: Duration::ZERO,
            duration: Duration::from_millis(200),
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        };
        run(&engine, &cfg, &d, &mut crate::Quiet).unwrap();
        let mut t = db.begin_read_only().unwrap();
        let table = db.table("usertable").unwrap();
        let mut texts_changed = 0;
        for k in 0..50u64 {
            let row = t.get(&table, &strata::key![k as i64]).unwrap().unwrap();
            assert_eq!(
                row[1],
                Value::Int(initial_value(k, 0)),
                "integers untouched"
            );
            for a in 0..3 {
                let Value::Text(s) = &row[2 + a] else {
                    panic!("text attribute");
                };
                assert_eq!(s.len(), TEXT_BYTES);
                texts_changed += usize::from(**s != initial_text(k, a));
            }
        }
        assert!(texts_changed > 0, "the updates wrote text");
    }

    /// A read sums `read_attrs` attributes from its first one, wrapping
    /// past the last: here 8, 9, then 0 of ten.
    #[test]
    fn reads_sum_their_attributes_wrapping_around() {
        let db = Database::open(strata::Options::default()).unwrap();
        let cfg = YcsbConfig {
            records: 3,
            read_attrs: 3,
            ..YcsbConfig::default()
        };
        cfg.validate().unwrap();
        let engine = StrataYcsb::new(db, &cfg).unwrap();
        load(&engine, &cfg, &mut crate::Quiet).unwrap();
        let read = |key: u64, first: u16| {
            let mut sink = 0u64;
            let op = Op {
                key,
                update: None,
                first,
            };
            let out = engine
                .execute(&cfg, &[op], Begin::ReadWrite, &mut sink)
                .unwrap();
            assert!(matches!(out, Outcome::Committed));
            sink
        };
        let sum = |k: u64, attrs: &[usize]| {
            attrs
                .iter()
                .fold(0u64, |a, &i| a.wrapping_add(initial_value(k, i) as u64))
        };
        assert_eq!(read(2, 8), sum(2, &[8, 9, 0]));
        assert_eq!(read(1, 0), sum(1, &[0, 1, 2]));
        assert_eq!(read(2, 9), sum(2, &[9, 0, 1]));
    }

    /// A read of fewer attributes than a row has goes through a
    /// projection (`Transaction::read_columns_with`), so storage decodes
    /// only those (Wu et al. Fig. 15a) under every scheme; a read of all
    /// of them takes the whole row (an in-place one decodes every cell).
    #[test]
    fn reads_of_some_attributes_decode_only_those() {
        use strata::VersionStorage;
        for scheme in [
            VersionStorage::AppendNewToOld,
            VersionStorage::TimeTravel,
            VersionStorage::Delta,
        ] {
            for read_attrs in [1, 3, 0] {
                let opts = strata::Options::default().version_storage(scheme);
                let db = Database::open(opts).unwrap();
                let cfg = YcsbConfig {
                    records: 2,
                    attributes: 100,
                    read_attrs,
                    ..YcsbConfig::default()
                };
                cfg.validate().unwrap();
                let engine = StrataYcsb::new(db, &cfg).unwrap();
                load(&engine, &cfg, &mut crate::Quiet).unwrap();
                let op = Op {
                    key: 1,
                    update: None,
                    first: 98,
                };
                let mut sink = 0u64;
                let before = strata::storage_meter();
                engine
                    .execute(&cfg, &[op], Begin::ReadWrite, &mut sink)
                    .unwrap();
                let decoded = strata::storage_meter().since(&before).cells_decoded;
                let want = match (read_attrs, scheme) {
                    (0, VersionStorage::AppendNewToOld) => 0, // read in place
                    (0, _) => 101,
                    (n, _) => n as u64,
                };
                assert_eq!(decoded, want, "{scheme}, --read-attrs {read_attrs}");
                let attrs: &[usize] = match read_attrs {
                    1 => &[98],
                    3 => &[98, 99, 0],
                    _ => &[],
                };
                if !attrs.is_empty() {
                    let sum = attrs
                        .iter()
                        .fold(0u64, |a, &i| a.wrapping_add(initial_value(1, i) as u64));
                    assert_eq!(sink, sum, "{scheme}, --read-attrs {read_attrs}");
                }
            }
        }
    }

    /// The memory series (Wu et al. Figs. 19, 21) reads the version
    /// store's own flows: with GC off nothing is freed and every update's
    /// bytes stay; with transaction-level GC bytes come back.
    #[test]
    fn the_memory_series_is_the_version_stores_allocated_and_freed_bytes() {
        for gc in [strata::GcPolicy::None, strata::GcPolicy::TransactionLevel] {
            let db = Database::open(strata::Options::default().gc(gc)).unwrap();
            let cfg = YcsbConfig {
                records: 200,
                read_ratio: 0.0,
                theta: 0.9,
                // Few versions: without GC the database's drop frees them all.
                threads: 1,
                ops_per_txn: 2,
                ..YcsbConfig::default()
            };
            let engine = StrataYcsb::new(db, &cfg).unwrap();
            let d = DriverConfig {
                warmup: Duration::ZERO,
                duration: Duration::from_millis(1100),
                series: true,
                huge_pages: Default::default(),
                ab_interval: None,
            };
            let r = run(&engine, &cfg, &d, &mut crate::Quiet).unwrap();
            assert!(!r.run.series.is_empty(), "{gc:?}");
            for p in &r.run.series {
                let allocated = p
                    .allocated_bytes_per_txn
                    .expect("Strata accounts its memory");
                let freed = p.freed_bytes_per_txn.expect("Strata accounts its memory");
                assert!(
                    allocated >= strata::VERSION_HEADER_BYTES as f64,
                    "{gc:?} {p:?}"
                );
                let net = allocated - freed;
                assert!(
                    (p.new_bytes_per_txn - net).abs() <= 1e-9 * allocated,
                    "{gc:?} {p:?}"
                );
                if gc == strata::GcPolicy::None {
                    assert_eq!(freed, 0.0, "{p:?}");
                } else {
                    assert!(freed > 0.0, "{p:?}");
                }
            }
        }
    }

    #[test]
    fn strata_run_commits_and_reports_memory() {
        let db = Database::open(strata::Options::default()).unwrap();
        let cfg = YcsbConfig {
            records: 300,
            attributes: 4,
            text_attributes: 1,
            modify_attrs: 2,
            theta: 0.9,
            read_ratio: 0.5,
            ops_per_txn: 4,
            ro_threads: 1,
            ro_ops: 20,
            ro_hint: false,
            secondary_indexes: 2,
            ..YcsbConfig::default()
        };
        let engine = StrataYcsb::new(db.clone(), &cfg).unwrap();
        let d = DriverConfig {
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        };
        let r = run(&engine, &cfg, &d, &mut crate::Quiet).unwrap();
        assert!(r.run.of_type("ycsb").unwrap().committed > 0);
        assert!(r.run.of_type("read-only-extra").unwrap().committed > 0);
        let m = r.memory.unwrap();
        assert_eq!(m.rows, 300);
        assert!(m.bytes_per_row > TEXT_BYTES as f64);
        // The version store's flows: the load's blocks in the totals, the
        // run's updates per transaction, and what GC gave back.
        assert!(m.storage_allocations >= 300, "{m:?}");
        assert!(m.storage_allocations_per_txn > 0.0, "{m:?}");
        assert!(
            m.storage_bytes_allocated_per_txn
                >= m.storage_allocations_per_txn * strata::VERSION_HEADER_BYTES as f64,
            "{m:?}"
        );
        assert!(
            m.gc_bytes_freed > 0 && m.gc_bytes_freed_per_txn > 0.0,
            "{m:?}"
        );
        // The updates really wrote: some row differs from its loaded value.
        let mut t = db.begin_read_only().unwrap();
        let table = db.table("usertable").unwrap();
        let changed = (0..300u64).any(|k| {
            let row = t.get(&table, &strata::key![k as i64]).unwrap().unwrap();
            (0..4).any(|a| row[1 + a] != Value::Int(initial_value(k, a)))
        });
        assert!(changed);
        // The secondary indexes follow the updates.
        let idx = db.index("usertable_field0").unwrap();
        for k in 0..300u64 {
            let row = t.get(&table, &strata::key![k as i64]).unwrap().unwrap();
            let hits = t
                .index_get(&idx, &strata::Key(vec![row[1].clone()]))
                .unwrap();
            assert!(hits.iter().any(|r| r[0] == row[0]), "row {k}");
        }
        assert_eq!(
            t.get(&table, &strata::key![7]).unwrap().unwrap()[5],
            Value::from(initial_text(7, 0))
        );
    }
}
