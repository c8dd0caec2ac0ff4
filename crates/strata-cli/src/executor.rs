//! The Strata engine as a [`TxnExecutor`] for the `strata-verify` checker.
//!
//! Shared by `strata check` and the engine's `tests/verify.rs` (which
//! includes this file with `#[path]`), so it depends only on `strata` and
//! `strata-verify`.
//!
//! Data model:
//!
//! * a list key `k` has two rows in `lists(k INT, v TEXT)`, each holding a
//!   list as its elements joined by commas (`"3,17,42"`): the *data* row
//!   at `2k + 1`, present while the key exists, and the *tomb* row at `2k`,
//!   the list as it stood when the key was last deleted (with that delete's
//!   marker at its end). A delete removes the data row and writes the tomb
//!   (a delete of an absent key is recorded as the read it was); an append
//!   to a deleted key re-inserts the data row, starting from the tomb.
//!   Every list write writes the data row, so snapshot isolation orders any
//!   two writes of one key (first updater wins). The checker's list model
//!   (one growing list per key, a delete appending its marker) is read off
//!   exactly: the data row if there is one, else the tomb, else the empty
//!   list. A scan sees the tomb of a deleted key too, so it knows which
//!   deletion it saw, while the re-insert of the data row (which only
//!   *reads* the tomb) is a phantom for it;
//! * registers live in `registers(k INT, v INT)`; an absent row is `nil`.
//!
//! An append reads the list (`get`) and then inserts the row or updates it
//! with the element appended (an odd element reads and updates it with
//! one `update_with`); a register write reads the register and then
//! inserts or updates it, and the read is recorded ([`Op::ReadReg`] before
//! the [`Op::Write`]) so that the checker knows which version each write
//! overwrote. A conflict from any operation, or from commit,
//! means the engine rolled the transaction back: it is recorded as
//! [`Outcome::Aborted`] with the ops issued so far (the failed read without a
//! value). Any other error is an engine or adapter bug and fails the run:
//! the adapter rolls the transaction back (a failed commit's fate is
//! [`Outcome::Unknown`]), counts the error and keeps the first one for
//! [`StrataExecutor::failure`], which `strata check` reports as a failed
//! run (exit code 1) instead of judging the history. One exception: under
//! MV2PL and OCC, which read the newest committed data
//! rather than a snapshot, an `insert` of a key that `get` had just reported absent can
//! answer `DuplicateKey` when a concurrent transaction inserted and
//! committed the key in between. The adapter then rolls the transaction
//! back itself, records it as aborted and counts it in
//! [`StrataExecutor::insert_races`]. No other protocol can race there: the
//! snapshot protocols (MVOCC, SI, SSN, SSI) answer a conflict to an insert
//! of a key committed after their snapshot, and MVTO's read of an absent
//! key leaves a ghost with its read timestamp, so an older inserter is
//! refused and a younger one's row is too new to overwrite. A
//! `DuplicateKey` from any of them would hide a wrong answer behind an
//! ordinary abort, so it fails the run instead ([`StrataExecutor::failure`]).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use strata::{
    key, row, Database, Error, Index, IndexKind, Options, Protocol, Schema, Table, Transaction,
    Type, Unique, Value,
};
use strata_verify::{Op, Outcome, PlannedOp, TxnExecutor};

/// A list register's contents.
type List = Vec<u64>;

/// Why a transaction stopped early.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The engine rolled it back (`Error::Conflict`).
    Conflict,
    /// `DuplicateKey` on an insert after `get` found no row: the key was
    /// inserted concurrently; the adapter aborts.
    InsertRace,
    /// `DuplicateKey` where the protocol cannot race (see the module docs);
    /// the adapter aborts and the run fails.
    UnexpectedDuplicate,
    /// The adapter aborts for another counted reason.
    Abort,
    /// Any other engine error: the adapter aborts and the run fails.
    Engine(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        match e {
            Error::Conflict(_) => Stop::Conflict,
            e => Stop::Engine(e),
        }
    }
}

/// Whether `protocol` may answer `DuplicateKey` to an insert of a key the
/// same transaction has just read as absent (see the module docs).
pub fn may_race_on_insert(protocol: Protocol) -> bool {
    match protocol {
        Protocol::Mv2pl | Protocol::Occ => true,
        Protocol::Mvto | Protocol::Mvocc | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => {
            false
        }
    }
}

/// Whether `protocol` may answer `NotFound` to an update or delete of a row
/// `get` has just returned (see [`StrataExecutor::change_found`]).
pub fn read_row_may_vanish(protocol: Protocol) -> bool {
    match protocol {
        Protocol::Mvocc | Protocol::Occ => true,
        Protocol::Mvto | Protocol::Mv2pl | Protocol::Si | Protocol::SiSsn | Protocol::SiSsi => {
            false
        }
    }
}

/// How the executor's scans read rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanVia {
    /// `scan_while` / `index_scan_while`.
    Callback,
    /// `Transaction::range` / `index_range`, forwards.
    Iterator,
    /// The same iterators from the high end (`.rev()`).
    Reverse,
}

/// Feeds `rows` to `f` until it breaks (a limited scan's stop): the
/// iterator is dropped there, so its predicate ends at that row.
fn iterate(
    rows: impl Iterator<Item = strata::Result<strata::Row>>,
    mut f: impl FnMut(&[Value]) -> ControlFlow<()>,
) -> Result<(), Error> {
    for r in rows {
        if f(&r?).is_break() {
            break;
        }
    }
    Ok(())
}

/// Runs planned transactions against a Strata database.
pub struct StrataExecutor {
    pub db: Database,
    pub lists: Table,
    pub registers: Table,
    /// Run transactions whose plan has no writes with
    /// `Database::begin_read_only` (snapshot reads, no bookkeeping).
    pub read_only_snapshots: bool,
    /// Transactions aborted by the adapter after an insert race (see the
    /// module docs).
    pub insert_races: AtomicU64,
    /// Transactions aborted by the adapter after MVOCC or OCC answered `NotFound`
    /// to an update or delete of a row its snapshot holds (see
    /// [`StrataExecutor::change_found`]).
    pub vanished_rows: AtomicU64,
    /// Whether an insert race may answer `DuplicateKey`
    /// ([`may_race_on_insert`] of the protocol). Tests clear it on an MV2PL
    /// database to stand for a protocol that answers `DuplicateKey` wrongly.
    pub insert_races_allowed: bool,
    /// The `DuplicateKey` answers the protocol must not give: how many, and
    /// the first one.
    unexpected_duplicates: Mutex<(u64, Option<String>)>,
    /// Engine errors other than conflicts (and the races above): how many,
    /// and the first one.
    engine_errors: Mutex<(u64, Option<String>)>,
    /// Yield the thread between operations, so that transactions interleave
    /// more on machines with few cores.
    pub yield_between_ops: bool,
    /// Scans go through this secondary index on the lists' key column
    /// ([`StrataExecutor::scan_through`]) instead of the primary index.
    pub scan_index: Option<Index>,
    /// How scans read their rows: through the callback scans or the
    /// iterators, forwards or backwards.
    pub scan_via: ScanVia,
    /// Issue every register write of an even value blind: an update with
    /// no read of the key first (an insert if the key is absent), recorded
    /// as a bare write; and report each register's committed versions
    /// after the run (`TxnExecutor::register_versions`), which the checker
    /// needs to order blind writes. Only with `GcPolicy::None`, so that
    /// every version is still there.
    pub blind_writes: bool,
}

impl StrataExecutor {
    /// A fresh database with `protocol` and the two tables.
    #[allow(dead_code)] // the binary passes full options; tests use this
    pub fn open(protocol: Protocol) -> Result<Self, Error> {
        Self::with_options(Options::default().protocol(protocol))
    }

    /// A fresh database with `opts` and the two tables.
    pub fn with_options(opts: Options) -> Result<Self, Error> {
        let db = Database::open(opts)?;
        let lists = db.create_table(
            Schema::new("lists")
                .column("k", Type::Int)
                .column("v", Type::Text)
                .primary_key(&["k"]),
        )?;
        let registers = db.create_table(
            Schema::new("registers")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )?;
        Ok(StrataExecutor {
            insert_races_allowed: may_race_on_insert(db.options().protocol),
            db,
            lists,
            registers,
            read_only_snapshots: false,
            insert_races: AtomicU64::new(0),
            vanished_rows: AtomicU64::new(0),
            unexpected_duplicates: Mutex::new((0, None)),
            engine_errors: Mutex::new((0, None)),
            yield_between_ops: true,
            scan_index: None,
            scan_via: ScanVia::Callback,
            blind_writes: false,
        })
    }

    /// Makes every scan a range scan of a secondary index of `kind` on the
    /// lists' key column (the same rows, found another way), so the
    /// checker judges that index kind's phantom protection and, with
    /// [`StrataExecutor::read_only_snapshots`], its snapshot reads.
    #[allow(dead_code)] // the binary scans the primary index; tests use this
    pub fn scan_through(mut self, kind: IndexKind) -> Result<Self, Error> {
        let idx = self
            .db
            .create_index_as("lists_by_k", &self.lists, &["k"], Unique::No, kind)?;
        self.scan_index = Some(idx);
        Ok(self)
    }

    /// Why the run failed although every transaction ran: engine errors
    /// other than conflicts, and `DuplicateKey` answers the protocol must
    /// never give (see the module docs).
    pub fn failure(&self) -> Option<String> {
        let protocol = self.db.options().protocol;
        let errors = {
            let (n, first) = &*self.engine_errors.lock().expect("not poisoned");
            first
                .as_ref()
                .map(|first| format!("{n} engine error(s) other than conflicts (first: {first})"))
        };
        let duplicates = {
            let (n, first) = &*self.unexpected_duplicates.lock().expect("not poisoned");
            first.as_ref().map(|first| {
                format!(
                    "{protocol} answered DuplicateKey {n} time(s) to an insert of a key the same \
                     transaction had just read as absent (first: {first}); only MV2PL and OCC, \
                     which read the newest committed data, may race there: {protocol} must \
                     answer a conflict"
                )
            })
        };
        match (errors, duplicates) {
            (Some(e), Some(d)) => Some(format!("{e}; {d}")),
            (e, d) => e.or(d),
        }
    }

    /// Counts an engine error (see [`StrataExecutor::failure`]); `what` says
    /// where it came from.
    fn engine_error(&self, what: &str, e: &Error) {
        let mut errors = self.engine_errors.lock().expect("not poisoned");
        errors.0 += 1;
        errors.1.get_or_insert_with(|| format!("{what}: {e}"));
    }

    /// Inserts `row`, whose key `get` has just found absent, into `t`.
    ///
    /// `DuplicateKey` means another transaction inserted the key in
    /// between: an [`Stop::InsertRace`] where the protocol may race there,
    /// else a [`Stop::UnexpectedDuplicate`] that fails the run.
    pub fn insert_absent(
        &self,
        txn: &mut Transaction,
        t: &Table,
        row: strata::Row,
    ) -> Result<(), Stop> {
        match txn.insert(t, row) {
            Ok(()) => Ok(()),
            Err(Error::DuplicateKey { .. }) if self.insert_races_allowed => Err(Stop::InsertRace),
            Err(e @ Error::DuplicateKey { .. }) => {
                let mut u = self.unexpected_duplicates.lock().expect("not poisoned");
                u.0 += 1;
                u.1.get_or_insert_with(|| e.to_string());
                Err(Stop::UnexpectedDuplicate)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The result of an update or delete of a row that `get` has just
    /// returned. MVOCC answers `NotFound` when a transaction that committed
    /// after our snapshot deleted the row (it checks nothing when it locks
    /// the head), OCC when one committed the delete after our read; we would
    /// fail validation at commit anyway, so the adapter aborts. The other protocols answer a conflict (SI, SSN and SSI:
    /// first updater wins; MVTO: the tombstone is younger than us) or keep
    /// the row from being deleted (MV2PL's read lock), so there `NotFound`
    /// is a bug and fails the run.
    fn change_found(&self, r: Result<(), Error>) -> Result<(), Stop> {
        match r {
            Err(Error::NotFound { .. }) if read_row_may_vanish(self.db.options().protocol) => {
                self.vanished_rows.fetch_add(1, Ordering::Relaxed);
                Err(Stop::Abort)
            }
            r => Ok(r?),
        }
    }

    /// The list at logical `key`: its data row, else its tomb, else empty.
    fn read_list(&self, txn: &mut Transaction, key: u64) -> Result<Vec<u64>, Stop> {
        if let Some(row) = txn.get(&self.lists, &data_key(key))? {
            return Ok(parse_list(text(&row)));
        }
        self.read_tomb(txn, key)
    }

    fn read_tomb(&self, txn: &mut Transaction, key: u64) -> Result<Vec<u64>, Stop> {
        Ok(txn
            .get(&self.lists, &tomb_key(key))?
            .map_or_else(Vec::new, |r| parse_list(text(&r))))
    }

    /// An append to a key with no data row: (re-)inserts it, continuing
    /// the list from the tomb.
    fn append_absent(&self, txn: &mut Transaction, key: u64, elem: u64) -> Result<(), Stop> {
        let tomb = self.read_tomb(txn, key)?;
        let new = join(&format_list(&tomb), elem);
        self.insert_absent(txn, &self.lists, row![int(2 * key + 1), new])
    }

    /// Runs one planned op. `out` receives the op as issued before it runs,
    /// and its observed value once it returns.
    fn run_op(&self, txn: &mut Transaction, op: PlannedOp, out: &mut Vec<Op>) -> Result<(), Stop> {
        match op {
            PlannedOp::Append { key, elem } if elem % 2 == 1 => {
                // Odd elements go through `update_with` (the read and the
                // write from one lookup), even ones through `get` and
                // `update`: every history checks both.
                out.push(Op::Append { key, elem });
                let mut found = false;
                let r = txn.update_with(&self.lists, &data_key(key), |row| {
                    found = true;
                    ([("v", Value::from(join(text(row), elem)))], ())
                });
                match r {
                    // No row to read, so `f` never ran: as `get`'s `None`.
                    Err(Error::NotFound { .. }) if !found => self.append_absent(txn, key, elem)?,
                    r => self.change_found(r)?,
                }
            }
            PlannedOp::Append { key, elem } => {
                out.push(Op::Append { key, elem });
                let k = data_key(key);
                match txn.get(&self.lists, &k)? {
                    Some(row) => {
                        let new = join(text(&row), elem);
                        self.change_found(txn.update(&self.lists, &k, &[("v", Value::from(new))]))?
                    }
                    None => self.append_absent(txn, key, elem)?,
                }
            }
            PlannedOp::Delete { key, elem } => {
                out.push(Op::Delete { key, elem });
                let k = data_key(key);
                let Some(row) = txn.get(&self.lists, &k)? else {
                    // Nothing to delete: the op was a read. (Writing the
                    // tomb here would let a concurrent re-insert, which
                    // writes only the data row, commit beside it under SI,
                    // losing this marker: every list write must write the
                    // data row.)
                    let list = self.read_tomb(txn, key)?;
                    *out.last_mut().expect("pushed above") = Op::ReadList {
                        key,
                        value: Some(list),
                    };
                    return Ok(());
                };
                self.change_found(txn.delete(&self.lists, &k))?;
                let new = join(text(&row), elem);
                let tk = tomb_key(key);
                if txn.get(&self.lists, &tk)?.is_some() {
                    self.change_found(txn.update(&self.lists, &tk, &[("v", Value::from(new))]))?
                } else {
                    self.insert_absent(txn, &self.lists, row![int(2 * key), new])?
                }
            }
            PlannedOp::Read { key } => {
                out.push(Op::ReadList { key, value: None });
                let list = self.read_list(txn, key)?;
                *out.last_mut().expect("pushed above") = Op::ReadList {
                    key,
                    value: Some(list),
                };
            }
            PlannedOp::Write { key, value } if self.blind_writes && value % 2 == 0 => {
                out.push(Op::Write { key, value });
                let k = key_of(key);
                match txn.update(&self.registers, &k, &[("v", Value::Int(int(value)))]) {
                    Err(Error::NotFound { .. }) => {
                        self.insert_absent(txn, &self.registers, row![k.0[0].clone(), int(value)])?
                    }
                    r => r?,
                }
            }
            PlannedOp::Write { key, value } if value % 2 == 1 => {
                // As below, the read and the write from one `update_with`.
                out.push(Op::ReadReg { key, value: None });
                let k = key_of(key);
                let mut old = None;
                let r = txn.update_with(&self.registers, &k, |row| {
                    old = Some(register(key, row));
                    ([("v", Value::Int(int(value)))], ())
                });
                let written = match (r, old) {
                    // No row, so `f` never ran: the read returned nil.
                    (Err(Error::NotFound { .. }), None) => None,
                    // The read itself failed: it returned nothing.
                    (Err(e), None) => return Err(e.into()),
                    (r, _) => Some(r),
                };
                *out.last_mut().expect("pushed above") = Op::ReadReg {
                    key,
                    value: Some(old),
                };
                out.push(Op::Write { key, value });
                match written {
                    Some(r) => self.change_found(r)?,
                    None => {
                        self.insert_absent(txn, &self.registers, row![k.0[0].clone(), int(value)])?
                    }
                }
            }
            PlannedOp::Write { key, value } => {
                // The read of this read-modify-write is recorded: it names
                // the version the write overwrites.
                out.push(Op::ReadReg { key, value: None });
                let k = key_of(key);
                let old = txn.get(&self.registers, &k)?;
                *out.last_mut().expect("pushed above") = Op::ReadReg {
                    key,
                    value: Some(old.as_ref().map(|r| register(key, r))),
                };
                out.push(Op::Write { key, value });
                let v = int(value);
                if old.is_some() {
                    self.change_found(txn.update(&self.registers, &k, &[("v", Value::Int(v))]))?
                } else {
                    self.insert_absent(txn, &self.registers, row![k.0[0].clone(), v])?
                }
            }
            PlannedOp::ReadReg { key } => {
                out.push(Op::ReadReg { key, value: None });
                let row = txn.get(&self.registers, &key_of(key))?;
                *out.last_mut().expect("pushed above") = Op::ReadReg {
                    key,
                    value: Some(row.map(|r| register(key, &r))),
                };
            }
            PlannedOp::Scan { lo, hi, limit } => {
                out.push(Op::ScanList {
                    lo,
                    hi,
                    value: None,
                });
                let range = tomb_key(lo)..tomb_key(hi);
                // A limited scan stops at the end of a key (its data row,
                // after its tomb) once it read `limit` rows, and observed
                // the keys up to that one. (The index is on the primary
                // key's column: both scans see rows in key order.)
                let mut hi = hi;
                let mut rows = Vec::new();
                let until_limit = |r: &[Value]| {
                    rows.push(r.to_vec());
                    let pk = r[0].as_int().expect("list keys are integers") as u64;
                    match limit {
                        Some(n) if rows.len() as u64 >= n && pk % 2 == 1 => {
                            hi = pk / 2 + 1;
                            ControlFlow::Break(())
                        }
                        _ => ControlFlow::Continue(()),
                    }
                };
                let mut lo = lo;
                match (&self.scan_index, self.scan_via) {
                    (Some(idx), ScanVia::Callback) => {
                        txn.index_scan_while(idx, range, until_limit)?;
                    }
                    (None, ScanVia::Callback) => {
                        txn.scan_while(&self.lists, range, until_limit)?;
                    }
                    (Some(idx), ScanVia::Iterator) => {
                        iterate(txn.index_range(idx, range)?, until_limit)?
                    }
                    (None, ScanVia::Iterator) => {
                        iterate(txn.range(&self.lists, range)?, until_limit)?
                    }
                    // Backwards, a limited scan stops at the start of a key
                    // (its tomb, after its data row) and observed the keys
                    // from that one to the range's end.
                    (idx, ScanVia::Reverse) => {
                        let mut rev_rows = Vec::new();
                        let until = |r: &[Value]| {
                            rev_rows.push(r.to_vec());
                            let pk = r[0].as_int().expect("list keys are integers") as u64;
                            match limit {
                                Some(n) if rev_rows.len() as u64 >= n && pk.is_multiple_of(2) => {
                                    lo = pk / 2;
                                    ControlFlow::Break(())
                                }
                                _ => ControlFlow::Continue(()),
                            }
                        };
                        match idx {
                            Some(idx) => iterate(txn.index_range(idx, range)?.rev(), until)?,
                            None => iterate(txn.range(&self.lists, range)?.rev(), until)?,
                        }
                        rev_rows.reverse();
                        rows = rev_rows;
                    }
                }
                // Per logical key in order: (key, tomb, data).
                let mut keys: Vec<(u64, Option<List>, Option<List>)> = Vec::new();
                for r in &rows {
                    let pk = match r[0] {
                        Value::Int(k) => u64::try_from(k).expect("keys are non-negative"),
                        ref other => panic!("list key {other:?} is not an integer"),
                    };
                    let k = pk / 2;
                    if keys.last().is_none_or(|e| e.0 != k) {
                        keys.push((k, None, None));
                    }
                    let e = keys.last_mut().expect("pushed above");
                    let list = Some(parse_list(text(r)));
                    if pk % 2 == 1 {
                        e.2 = list;
                    } else {
                        e.1 = list;
                    }
                }
                let mut found = Vec::with_capacity(keys.len());
                // A data row that does not continue its tomb: the scan saw
                // the two rows in different states. Recorded as a second
                // read of the key, for the checker to flag.
                let mut torn = Vec::new();
                for (k, tomb, data) in keys {
                    let list = match (tomb, data) {
                        (Some(t), Some(d)) => {
                            if !(d.len() > t.len() && d.starts_with(&t)) {
                                torn.push(Op::ReadList {
                                    key: k,
                                    value: Some(t),
                                });
                            }
                            d
                        }
                        (t, d) => d.or(t).unwrap_or_default(),
                    };
                    if !list.is_empty() {
                        found.push((k, list));
                    }
                }
                *out.last_mut().expect("pushed above") = Op::ScanList {
                    lo,
                    hi,
                    value: Some(found),
                };
                out.extend(torn);
            }
        }
        Ok(())
    }
}

impl TxnExecutor for StrataExecutor {
    fn execute(&self, _client: usize, ops: &[PlannedOp]) -> (Vec<Op>, Outcome) {
        let read_only = self.read_only_snapshots
            && ops.iter().all(|o| {
                matches!(
                    o,
                    PlannedOp::Read { .. } | PlannedOp::ReadReg { .. } | PlannedOp::Scan { .. }
                )
            });
        let begun = if read_only {
            self.db.begin_read_only()
        } else {
            self.db.begin()
        };
        let mut txn = match begun {
            Ok(txn) => txn,
            Err(e) => {
                // Nothing ran: aborted, and the run fails.
                self.engine_error("begin", &e);
                return (Vec::new(), Outcome::Aborted);
            }
        };
        let mut out = Vec::with_capacity(ops.len());
        for &op in ops {
            if self.yield_between_ops {
                std::thread::yield_now();
            }
            match self.run_op(&mut txn, op, &mut out) {
                Ok(()) => {}
                Err(Stop::Conflict) => return (out, Outcome::Aborted),
                Err(Stop::InsertRace) => {
                    self.insert_races.fetch_add(1, Ordering::Relaxed);
                    txn.abort();
                    return (out, Outcome::Aborted);
                }
                Err(Stop::UnexpectedDuplicate | Stop::Abort) => {
                    txn.abort();
                    return (out, Outcome::Aborted);
                }
                Err(Stop::Engine(e)) => {
                    self.engine_error(&format!("{op:?}"), &e);
                    txn.abort();
                    return (out, Outcome::Aborted);
                }
            }
        }
        match txn.commit() {
            Ok(()) => (out, Outcome::Committed),
            Err(Error::Conflict(_)) => (out, Outcome::Aborted),
            Err(e) => {
                // Whether it committed is not known.
                self.engine_error("commit", &e);
                (out, Outcome::Unknown)
            }
        }
    }

    /// Deletes the retired keys' rows, both lists' and registers', through
    /// ordinary transactions of [`RETIRE_BATCH`] rows each, which no
    /// history records; garbage collection then reclaims them like any
    /// deleted row (not under `GcPolicy::None`). Runs while no transaction
    /// of the workload does, so nothing conflicts with it; an error fails
    /// the run ([`StrataExecutor::failure`]).
    fn retire_keys(&self, keys: std::ops::Range<u64>) {
        if keys.is_empty() {
            return;
        }
        let tables = [
            (&self.lists, tomb_key(keys.start)..tomb_key(keys.end)),
            (&self.registers, key_of(keys.start)..key_of(keys.end)),
        ];
        for (table, range) in tables {
            if let Err(e) = self.delete_range(table, range) {
                self.engine_error("deleting a retired segment's rows", &e);
                return;
            }
        }
    }

    fn register_versions(&self) -> BTreeMap<u64, Vec<u64>> {
        if !self.blind_writes {
            return BTreeMap::new();
        }
        let rows = self
            .db
            .begin_read_only()
            .and_then(|mut ro| ro.scan(&self.registers, ..));
        let rows = match rows {
            Ok(rows) => rows,
            Err(e) => {
                self.engine_error("scan of the registers' versions", &e);
                return BTreeMap::new();
            }
        };
        let keys = rows
            .into_iter()
            .map(|r| u64::try_from(r[0].as_int().expect("an Int key")).expect("non-negative"));
        keys.map(|k| {
            let order = strata::internals::committed_versions(&self.registers, &key_of(k))
                .iter()
                .map(|r| register(k, r))
                .collect();
            (k, order)
        })
        .collect()
    }
}

/// Rows deleted per transaction when a segment's keys retire.
pub const RETIRE_BATCH: usize = 512;

impl StrataExecutor {
    /// Deletes every row of `t` whose key lies in `range`, [`RETIRE_BATCH`]
    /// rows per transaction; a conflict (none is expected: nothing else
    /// runs) retries the batch.
    fn delete_range(&self, t: &Table, range: std::ops::Range<strata::Key>) -> Result<(), Error> {
        let mut from = range.start;
        let mut attempt = 0;
        loop {
            let mut keys = Vec::new();
            let mut txn = self.db.begin()?;
            let deleted = txn
                .scan_while(t, from.clone()..range.end.clone(), |r| {
                    keys.push(r[0].clone());
                    if keys.len() < RETIRE_BATCH {
                        ControlFlow::Continue(())
                    } else {
                        ControlFlow::Break(())
                    }
                })
                .and_then(|_| {
                    keys.iter()
                        .try_for_each(|k| txn.delete(t, &strata::Key(vec![k.clone()])))
                })
                .and_then(|()| txn.commit());
            match deleted {
                Ok(()) => attempt = 0,
                Err(Error::Conflict(_)) if attempt < 100 => {
                    attempt += 1;
                    strata::backoff(attempt);
                    continue;
                }
                Err(e) => return Err(e),
            }
            match keys.last() {
                Some(Value::Int(last)) if keys.len() == RETIRE_BATCH => from = key![*last + 1],
                _ => return Ok(()),
            }
        }
    }
}

fn int(v: u64) -> i64 {
    i64::try_from(v).expect("checker keys and values fit in i64")
}

fn key_of(k: u64) -> strata::Key {
    key![int(k)]
}

/// The row holding list `k` while it exists (see the module docs).
fn data_key(k: u64) -> strata::Key {
    key![int(2 * k + 1)]
}

/// The row holding list `k` as of its last delete.
fn tomb_key(k: u64) -> strata::Key {
    key![int(2 * k)]
}

fn register(key: u64, row: &[Value]) -> u64 {
    match row[1] {
        Value::Int(v) => u64::try_from(v).expect("register values are non-negative"),
        ref other => panic!("register k{key} holds a non-integer {other:?}"),
    }
}

/// `list` (as stored) with `elem` appended.
fn join(list: &str, elem: u64) -> String {
    if list.is_empty() {
        elem.to_string()
    } else {
        format!("{list},{elem}")
    }
}

fn format_list(list: &[u64]) -> String {
    list.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn text(row: &[Value]) -> &str {
    row[1]
        .as_text()
        .unwrap_or_else(|| panic!("list column holds a non-text value {:?}", row[1]))
}

/// Parses `"1,2,3"` (or `""`) into elements.
pub fn parse_list(s: &str) -> Vec<u64> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap_or_else(|_| panic!("corrupt list {s:?}")))
        .collect()
}
