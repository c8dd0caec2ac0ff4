//! Transactions: begin, read, write, scan, commit, abort.
//!
//! One transaction's life, whatever the protocol:
//!
//! ```text
//!  begin ──> take a slot in the TID table, register a snapshot (SI family,
//!  │         MVOCC, MV2PL) or draw a timestamp (MVTO)
//!  ├─ get/scan ──> index -> tuple id -> chain -> visible version
//!  │               (+ the protocol's read bookkeeping: read set, read lock,
//!  │                read timestamp, SSN/SSI reader registration)
//!  ├─ insert/update/delete ──> lock the chain head (CAS on txn_id, no-wait)
//!  │               -> protocol check -> new uncommitted version at the head
//!  ├─ commit ──> commit timestamp (one fetch-add) -> protocol validation
//!  │             -> COMMITTED in the TID table -> stamp versions, unlock
//!  │             -> hand obsolete versions to GC -> free the slot
//!  └─ abort  ──> unlink own versions, restore heads and index, unlock,
//!                undo protocol state, ABORTED, free the slot
//! ```
//!
//! A conflict error rolls the transaction back at once; other errors
//! (unknown column, duplicate key, ...) leave it open and unchanged.

pub(crate) mod alters;
pub(crate) mod contention;
mod db_inner;
mod deferred;
mod index_iter;
pub(crate) mod index_ops;
mod iter;
mod memory;
mod prefetch;
mod read_modify;
mod reads;
mod scans;
mod snapshot;
mod write_lock;

pub use index_iter::IndexRange;
pub use iter::Range;
use scans::primary_bounds;
pub(crate) use scans::up_to;
pub use snapshot::Snapshot;

/// Runs `$e` as a timed region of component `$c` (`crate::breakdown`).
/// With `Options::time_breakdown` off it is `$e` behind one test of the
/// transaction's `timing` byte; on, `$e` runs in a closure inside the
/// out-of-line `breakdown::region` (so `$e` must not `return` or use `?`).
macro_rules! timed {
    ($tx:expr, $c:ident, $e:expr) => {{
        if $tx.timing {
            let (bd, slot) = $tx.timing_on();
            crate::breakdown::region(bd, slot, crate::breakdown::Component::$c, || $e)
        } else {
            $e
        }
    }};
}
pub(crate) use timed;

pub(crate) use db_inner::{DbInner, ReadOnlyOpen};
pub(crate) use deferred::Buffers;

use crate::breakdown::Component;
use crate::cc::{predicate::ScanEntry, with_cc, Cc, ReadEntry, Txn as _, TxnCc, WriteEntry};
use crate::error::{ConflictKind, Error, Result};
use crate::gc;
use crate::index::key::EncodedKey;
use crate::index::primary::Lookup;
use crate::log::{CommitTicket, UNKNOWN_READS};
use crate::storage::indirection::MAX_TUPLES;
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::storage::visibility::Mode;
use crate::storage::{self, NewRow};
use crate::table::{Table, TableInner};
use crate::tid::Status;
use crate::value::{ColumnRef, Key, Row, Value};
use crossbeam_epoch::{self as epoch, Guard};
use std::ops::{Bound, ControlFlow, RangeBounds};
use std::ptr;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use thin_vec::ThinVec;

/// An open transaction. Dropping it without `commit` rolls it back.
pub struct Transaction {
    pub(crate) db: Arc<DbInner>,
    pub(crate) tid: u64,
    /// Snapshot timestamp (MVTO: the transaction's timestamp).
    pub(crate) ts: u64,
    pub(crate) read_only: bool,
    pub(crate) active: bool,
    /// Rolled back by a conflict one of its operations met: what
    /// `Database::try_run` retries whatever error the caller returned.
    conflicted: bool,
    /// The sync policy of this commit (`commit_with`); None: the
    /// database's.
    sync: Option<crate::options::SyncPolicy>,
    /// The write-ahead log is on: point reads keep `read_stamp` (a flag
    /// here, not a look at the database's log on every read).
    logged: bool,
    /// Per-operation logging (`LogGranularity::PerOperation`): every write
    /// logs its own record as it is made (`Log::log_op`).
    log_ops: bool,
    /// `Options::time_breakdown`: timed regions (`timed!`) charge their
    /// component. A flag here, so that off, a region costs one test of a
    /// byte on the transaction's own line.
    timing: bool,
    /// `WriteInstall::AtCommit`: updates and deletes are buffered in our
    /// slot's buffer and installed at commit; and whether it holds any
    /// (see `deferred`).
    defer: deferred::Defer,
    /// With the write-ahead log: the largest commit stamp among the
    /// versions our point reads returned (0: none; `UNKNOWN_READS`: a read
    /// whose source cannot be named, a scan or a key read as absent). A
    /// commit that wrote nothing waits only for the log to cover it (see
    /// `Log::reader_lsn`).
    pub(crate) read_stamp: u64,
    pub(crate) writes: Vec<WriteEntry>,
    pub(crate) reads: Vec<ReadEntry>,
    /// Predicate reads (range scans, absent keys). This and `sec_writes`
    /// are one-word `ThinVec`s: most transactions leave them empty, and
    /// with three-word `Vec`s the transaction outgrew 128 bytes, so every
    /// move of it (`db.begin()?`) became a `memcpy` call (~9 ns of a
    /// 70 ns cached read-only transaction).
    pub(crate) scans: ThinVec<ScanEntry>,
    /// Secondary index entries this transaction added (see `crate::index`).
    pub(crate) sec_writes: crate::index::SecWrites,
    /// The protocol's own per-transaction state (`Cc::State`).
    pub(crate) cc: TxnCc,
}

impl crate::cc::Txn for Transaction {
    #[inline]
    fn shared(&self) -> &crate::cc::Shared {
        &self.db
    }
    #[inline]
    fn gc(&self) -> &gc::Gc {
        &self.db.gc
    }
    #[inline]
    fn tid(&self) -> u64 {
        self.tid
    }
    #[inline]
    fn ts(&self) -> u64 {
        self.ts
    }
    #[inline]
    fn reads(&self) -> &[ReadEntry] {
        &self.reads
    }
    #[inline]
    fn reads_mut(&mut self) -> &mut Vec<ReadEntry> {
        &mut self.reads
    }
    #[inline]
    fn scans(&self) -> &[ScanEntry] {
        &self.scans
    }
    #[inline]
    fn scans_mut(&mut self) -> &mut ThinVec<ScanEntry> {
        &mut self.scans
    }
    #[inline]
    fn writes(&self) -> &[WriteEntry] {
        &self.writes
    }
    #[inline]
    fn sec_writes(&self) -> &crate::index::SecWrites {
        &self.sec_writes
    }
    #[inline]
    fn state(&self) -> &TxnCc {
        &self.cc
    }
}

// Moves of a transaction stay inline copies (see `scans`).
const _: () = assert!(std::mem::size_of::<Transaction>() <= 128);

// SAFETY: the raw pointers in the read and write sets point at versions and
// tables that stay allocated while the transaction is open: tables live as
// long as the database (the Arc<DbInner> we hold), our own versions are
// freed only by our commit/abort, and versions we read are at or above the
// version visible to our registered snapshot, which GC never frees
// (see the gc module). Nothing in them is tied to a thread.
unsafe impl Send for Transaction {}

/// Most deciding writers one write waits out before it gives up
/// (`Transaction::waited_out_writer`).
const MAX_WRITER_WAITS: u32 = 4;

impl Transaction {
    #[inline]
    pub(crate) fn begin(db: Arc<DbInner>, read_only: bool) -> Result<Transaction> {
        with_cc!(db.protocol, P => Self::begin_as::<P>(db, read_only))
    }

    #[inline]
    fn begin_as<P: Cc>(db: Arc<DbInner>, read_only: bool) -> Result<Transaction> {
        debug_assert_eq!(P::PROTOCOL, db.protocol);
        let began = db.breakdown.as_ref().map(|b| b.start(usize::MAX));
        // Register a lower bound first, then take the real snapshot: a GC
        // pass that misses our slot read the clock before we did (see
        // TidTable::snapshots), so it cannot pass our snapshot.
        let lower = P::begin_lower_bound(&db, read_only);
        let tid = db
            .tids
            .acquire(lower, !read_only)
            .ok_or(Error::TooManyTransactions(db.tids.capacity()))?;
        // (`acquire` registered `lower` with a SeqCst swap: no fence here.)
        if let (Some(b), Some(m)) = (&db.breakdown, began) {
            b.begin(crate::tid::TidTable::slot_index(tid), m);
        }
        let ts = P::begin_ts(&db, read_only, lower);
        // Raising the registration from the lower bound needs no fence: a
        // GC pass that misses it still sees the (smaller) lower bound.
        db.tids.set_snapshot(tid, ts);
        let cc = P::new_state(tid, ts, read_only);
        let (writes, reads) = if read_only {
            (Vec::new(), Vec::new())
        } else {
            crate::cc::sets::take_sets()
        };
        let (logged, log_ops) = match db.log.get() {
            None => (false, false),
            Some(l) => (true, l.per_operation()),
        };
        let timing = began.is_some();
        let defer = if !read_only && db.deferred.is_some() {
            deferred::Defer::Empty
        } else {
            deferred::Defer::Off
        };
        Ok(Transaction {
            db,
            tid,
            ts,
            read_only,
            active: true,
            conflicted: false,
            sync: None,
            logged,
            log_ops,
            timing,
            defer,
            read_stamp: 0,
            writes,
            reads,
            scans: ThinVec::new(),
            sec_writes: ThinVec::new(),
            cc,
        })
    }

    /// True for transactions from `begin_read_only`, and for every
    /// transaction of a database opened read-only (`Database::open_read_only`).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether one of this transaction's operations met a conflict, which
    /// rolled it back (the operation returned a retryable
    /// [`Error::Conflict`]): running it again may succeed.
    pub fn is_conflicted(&self) -> bool {
        self.conflicted
    }

    /// The snapshot (or, under MVTO, the timestamp) this transaction reads at.
    pub fn snapshot_ts(&self) -> u64 {
        self.ts
    }

    #[inline]
    pub(crate) fn check_open(&self, t: &Table) -> Result<()> {
        if self.active && t.inner.owner == self.db.id && !t.inner.dropped.load(SeqCst) {
            return Ok(());
        }
        self.not_open(t)
    }

    /// Why `check_open` refused (kept out of line: every operation runs
    /// the check, and building an error is none of its business).
    #[cold]
    #[inline(never)]
    fn not_open(&self, t: &Table) -> Result<()> {
        if !self.active {
            return Err(Error::TransactionFinished);
        }
        if t.inner.owner != self.db.id {
            return Err(Error::Schema(format!(
                "table {} belongs to another database",
                t.name()
            )));
        }
        if t.inner.dropped.load(SeqCst) {
            return Err(Error::TableDropped {
                table: t.name().to_string(),
            });
        }
        Ok(())
    }

    #[inline]
    fn check_writable(&self, t: &Table) -> Result<()> {
        self.check_open(t)?;
        if self.read_only {
            return Err(self.read_only_write());
        }
        Ok(())
    }

    /// The error of a write in a read-only transaction (cold, as
    /// `not_open`): `ReadOnly` where the database refuses every write
    /// (opened read-only), else the caller's misuse.
    #[cold]
    #[inline(never)]
    fn read_only_write(&self) -> Error {
        match self.db.check_writable() {
            Err(e) => e,
            Ok(()) => Error::WriteInReadOnlyTransaction,
        }
    }

    /// Rolls back after a conflict and returns the error to hand out.
    pub(crate) fn conflict(&mut self, kind: ConflictKind) -> Error {
        let mut allocated = None;
        if self.active {
            // (Only the slot's occupant may count in it.)
            allocated = Some(self.db.tids.counts(self.tid).conflict(kind));
            crate::trace::aborted(self.tid, kind.name());
        }
        self.rollback();
        if let Some(a) = allocated {
            // After the rollback: what it retired goes with it.
            self.hand_over_memory(a);
        }
        self.conflicted = true;
        Error::Conflict(kind)
    }

    pub(crate) fn fail<T>(&mut self, e: Error) -> Result<T> {
        match e {
            Error::Conflict(k) => Err(self.conflict(k)),
            other => Err(other),
        }
    }

    // ---------------------------------------------------------------- reads

    /// Reads the row with primary key `key`, if it exists for this transaction.
    pub fn get(&mut self, t: &Table, key: &Key) -> Result<Option<Row>> {
        self.read_with(t, key, |r| r.to_vec())
    }

    /// Reads the row with primary key `key` and passes it to `f` without
    /// copying it.
    // (Always inline: whether LLVM inlined this dispatch into a caller's
    // loop flipped with unrelated changes, by about 15 instructions a
    // read either way: 1.5% of a read-only YCSB transaction.)
    #[inline(always)]
    pub fn read_with<R>(
        &mut self,
        t: &Table,
        key: &Key,
        f: impl FnOnce(&[Value]) -> R,
    ) -> Result<Option<R>> {
        with_cc!(self.db.protocol, P => self.read_with_as::<P, R>(t, key, f))
    }

    #[inline]
    fn read_with_as<P: Cc, R>(
        &mut self,
        t: &Table,
        key: &Key,
        f: impl FnOnce(&[Value]) -> R,
    ) -> Result<Option<R>> {
        self.read_version_as::<P, R>(t, key, |r| storage::with_values(r, f))
    }

    /// A point read: `f` gets the version this transaction sees (not a
    /// tombstone), to read its row image from.
    #[inline]
    pub(crate) fn read_version_as<P: Cc, R>(
        &mut self,
        t: &Table,
        key: &Key,
        f: impl FnOnce(&Version) -> R,
    ) -> Result<Option<R>> {
        self.check_open(t)?;
        t.inner.schema.check_key(key)?;
        let ek = t.inner.encode(key);
        let guard = epoch::pin();
        let (v, _) = self.point_read::<P>(&t.inner, key, &ek, &guard)?;
        // SAFETY: pinned, and `v` is at or above our visible version (see the
        // Send impl), so it is alive.
        Ok(unsafe { v.as_ref() }.filter(|r| !r.is_tombstone()).map(f))
    }

    /// A point read of `key` (`ek` encoded) under the protocol, as `get`
    /// and `update_with` make it: the version read (null: no visible row)
    /// and the key's primary entry if it has one (what a write of the row
    /// after the read starts from). A conflict rolls back (`fail`); with
    /// the log on, the version is folded into `read_stamp`.
    #[inline(always)]
    pub(super) fn point_read<'g, P: Cc>(
        &mut self,
        t: &'g TableInner,
        key: &Key,
        ek: &'g EncodedKey,
        guard: &'g Guard,
    ) -> Result<(*mut Version, Option<Lookup<'g>>)> {
        let read = match self.lookup_read::<P>(t, key, ek, guard) {
            Ok(read) => read,
            Err(e) => return self.fail(e),
        };
        if self.logged {
            self.note_read_stamp(read.0);
        }
        Ok(read)
    }

    /// Index lookup + protocol read: the version (null when the key has no
    /// visible row) and the key's primary entry, if any.
    fn lookup_read<'g, P: Cc>(
        &mut self,
        t: &'g TableInner,
        key: &Key,
        ek: &'g EncodedKey,
        guard: &'g Guard,
    ) -> Result<(*mut Version, Option<Lookup<'g>>)> {
        let found = timed!(self, Index, self.hinted_lookup(t, ek, guard, true));
        match found.as_ref().map(|l| l.tuple) {
            Some(tuple) => {
                self.settle_tuple::<P>(t, tuple)?;
                let v = self.read_tuple::<P>(t, tuple)?;
                if v.is_null()
                    && !self.read_only
                    && (P::VALIDATES_SCANS
                        || (storage::newest(t, tuple).is_null()
                            && !crate::sync::broken(crate::sync::Break::LeftKeyReadUnrecorded)))
                {
                    // The key has an index entry but no version visible to
                    // us: an insert after our snapshot (SSN, SSI: an
                    // rw-antidependency to the inserter, which only the
                    // predicate machinery can see), an aborted insert being
                    // undone, or a deleted row GC is unlinking. In the last
                    // two the tuple leaves the key: a later insert of the
                    // key makes another tuple, and a read of this one (a
                    // null read, or none under MV2PL) still validates.
                    // Reading the key as absent is a predicate read of it,
                    // recorded as for a key with no entry (`absent_read`):
                    // re-validated at commit (lost, MVOCC committed write
                    // skew on re-inserted keys under frequent GC), or MVTO's
                    // ghost, without which an older writer could insert
                    // the key that we read as absent (`tests/model.rs`,
                    // `an_unrecorded_read_of_an_unlinked_row_is_caught`;
                    // first seen in `tests/storage.rs`'s list-append runs
                    // with deletes).
                    return Ok((self.read_absent::<P>(t, key, ek)?, found));
                }
                Ok((v, found))
            }
            // An absent key is a predicate read: a later insert of it must
            // not be serialised before us.
            None => Ok((self.read_absent::<P>(t, key, ek)?, None)),
        }
    }

    /// Records the read of `key` as absent (`Cc::absent_read`) and reads
    /// the row the protocol hands back instead, if any (MVTO: the key's
    /// ghost, or the row that is there after all).
    fn read_absent<P: Cc>(
        &mut self,
        t: &TableInner,
        key: &Key,
        ek: &EncodedKey,
    ) -> Result<*mut Version> {
        let Some(tuple) = self.absent_read::<P>(t, key, ek) else {
            return Ok(ptr::null_mut());
        };
        let v = self.read_tuple::<P>(t, tuple)?;
        if v.is_null() && storage::newest(t, tuple).is_null() {
            // A row on its way out (an aborted insert, a deleted row GC is
            // unlinking) still holds the key in the index: no ghost could
            // be placed and nothing guards our absent read.
            return Err(Error::Conflict(ConflictKind::TimestampOrder));
        }
        Ok(v)
    }

    /// The tuple id of `ek`, after starting to load its chain head from the
    /// hash entry's hint, so that the indirection slot's miss and the
    /// head's overlap (see [`crate::index::hash`]). With `refresh`, a stale
    /// hint is rewritten here, so the rows a workload reads keep current
    /// hints whatever moved their heads (GC, an aborted write); a writer
    /// passes false and sets the hint to its new head after installing it.
    /// (always: inlined into one protocol's body of `modify` per protocol,
    /// a plain hint left it a call.)
    #[inline(always)]
    fn hinted_lookup<'g>(
        &self,
        t: &'g TableInner,
        ek: &'g EncodedKey,
        guard: &'g Guard,
        refresh: bool,
    ) -> Option<Lookup<'g>> {
        let found = t.index.find(ek, guard)?;
        if !found.hint.is_null() {
            crate::prefetch::range(found.hint, t.row_prefetch_bytes);
        }
        if refresh {
            let head = t.rows.head(found.tuple) as *const u8;
            if crate::index::hash::hint_is_stale(found.hint, head) {
                // (A no-op for byte keys, which have no hints.)
                found.set_hint(head);
            }
        }
        Some(found)
    }

    /// Records that `ek` was read as absent. Returns a tuple to read
    /// instead: under MVTO the key's ghost row (or a row inserted meanwhile).
    fn absent_read<P: Cc>(&mut self, t: &TableInner, key: &Key, ek: &EncodedKey) -> Option<u64> {
        if self.read_only {
            return None;
        }
        P::absent_read(self, t, key, ek)
    }

    /// Reads tuple `tuple` under the protocol. Null: nothing visible.
    /// (always: with its timing point, a plain hint left it a call on the
    /// read path, ~40 instructions a read.)
    #[inline(always)]
    pub(crate) fn read_tuple<P: Cc>(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        timed!(self, VersionRead, {
            if self.read_only {
                storage::visible(t, tuple, self.ts, 0, &self.db.tids, Mode::Snapshot)
            } else {
                P::read(self, t, tuple)
            }
        })
    }

    // --------------------------------------------------------------- writes

    /// Inserts a row; `Error::DuplicateKey` if its key exists for us.
    pub fn insert(&mut self, t: &Table, row: Row) -> Result<()> {
        self.check_growable(t)?;
        // A refused insert (a duplicate key) read that the key exists.
        self.read_stamp = UNKNOWN_READS;
        with_cc!(self.db.protocol, P => self.insert_as::<P>(t, row))
    }

    /// [`Transaction::insert`] past `Options::memory_limit` (an alter's
    /// copy, which must not stop half way).
    pub(crate) fn insert_unlimited(&mut self, t: &Table, row: Row) -> Result<()> {
        self.check_writable(t)?;
        self.read_stamp = UNKNOWN_READS;
        with_cc!(self.db.protocol, P => self.insert_as::<P>(t, row))
    }

    /// The insert, checked (`check_writable`) by the caller.
    fn insert_as<P: Cc>(&mut self, t: &Table, row: Row) -> Result<()> {
        let ti: &TableInner = &t.inner;
        ti.schema.check_row_by(&ti.column_ranks, &row)?;
        let ek = ti.encode_row_key(&row);
        // A buffered delete of ours may free the key.
        self.settle_key::<P>(ti, &ek)?;
        let guard = epoch::pin();
        let mut data = row;
        // The insert goes to the index first, whose tree says whether the
        // key is taken (and by which row); a lookup before it was a cache
        // miss of its own, about 9% of TPC-C's NewOrder + Payment, whose
        // inserts are of fresh keys. Our hash entry's line starts loading
        // now and arrives while the tree takes the key.
        ti.index.prefetch(&ek, &guard);
        // The row the index's tree holds for the key after our insert lost
        // to it (see below).
        let mut holder = None;
        loop {
            if let Some(tuple) = holder.take() {
                let head = storage::newest(ti, tuple);
                if head.is_null() {
                    // An aborting insert of the same key is being undone.
                    return Err(self.conflict(ConflictKind::WriteWrite));
                }
                // SAFETY: pinned; heads are alive.
                let h = unsafe { &*head };
                if self.is_own(head) {
                    if !h.is_tombstone() {
                        return Err(duplicate(ti, &ti.schema.key_of(&data)));
                    }
                    if let Err(e) = self.replace_own::<P>(ti, tuple, head, NewRow::Row(data)) {
                        return self.fail(e);
                    }
                    self.entry_point_moved(ti, &ek, tuple);
                    return Ok(());
                }
                if let Err(e) = self.lock_head::<P>(ti, tuple, head) {
                    return self.fail(e);
                }
                if !h.is_tombstone() {
                    self.unlock_unused(head);
                    if h.begin.load(SeqCst) > self.ts {
                        if let Some(kind) = P::NEWER_THAN_SNAPSHOT {
                            // The row is newer than our snapshot: for us the
                            // key is free, yet we cannot insert it. That is a
                            // conflict, not a duplicate (MVOCC; the other
                            // snapshot protocols' write checks refused
                            // already).
                            return Err(self.conflict(kind));
                        }
                    }
                    if let Err(e) = self.note_read::<P>(ti, tuple, head) {
                        return self.fail(e);
                    }
                    return Err(duplicate(ti, &ti.schema.key_of(&data)));
                }
                // (On an error the install was undone and the lock released.)
                self.install::<P>(ti, tuple, head, NewRow::Row(data), None)?;
                self.entry_point_moved(ti, &ek, tuple);
                // The key may have had no row at all when a younger scan
                // passed (the tombstone can be a ghost made later), so an
                // insert over a tombstone answers to the table's predicate
                // timestamp too.
                if let Err(kind) = P::check_insert(self, &ti.predicate_read_ts) {
                    return Err(self.conflict(kind));
                }
                return Ok(());
            }
            let Some(tuple) = ti.rows.allocate() else {
                if let Some(present) = ti.index.get(&ek) {
                    // (A full table still answers for the keys it holds.)
                    holder = Some(present);
                    continue;
                }
                return Err(Error::Schema(format!(
                    "table {} is full ({MAX_TUPLES} rows)",
                    ti.schema.name
                )));
            };
            let v = timed!(
                self,
                VersionInstall,
                storage::publish_fresh(ti, tuple, self.tid, data)
            );
            match timed!(
                self,
                Index,
                ti.index.insert(&ek, tuple, v as *const u8, ti.gauged)
            ) {
                Ok(()) => {
                    self.count_index_writes(1);
                    self.writes.push(WriteEntry {
                        table: ti,
                        tuple,
                        new: v,
                        old: ptr::null_mut(),
                        index_key: Some(ek.clone()),
                    });
                    if let Err(e) = self.sec_after_install::<P>(ti, tuple, ptr::null_mut(), v) {
                        // Undo the insert as rollback would (secondary
                        // entries are gone already).
                        self.writes.pop();
                        let guard = epoch::pin();
                        storage::undo(ti, tuple, v, ptr::null_mut(), &guard);
                        ti.index.remove(&ek, tuple, ti.gauged);
                        ti.rows.release(tuple, &guard);
                        storage::retire(v, ti.gauged, &guard);
                        return self.fail(e);
                    }
                    if self.log_ops {
                        self.log_op(self.writes.len() - 1, false);
                    }
                    if let Err(kind) = P::check_insert(self, &ti.predicate_read_ts) {
                        return Err(self.conflict(kind));
                    }
                    return Ok(());
                }
                Err(present) => {
                    // Another inserter won the race for the key: undo and
                    // go to its row. (Not another lookup: point lookups go
                    // to the index's hash side, which an insert fills after
                    // the tree and a removal empties before it, so a lookup
                    // now can find nothing again, and again, until the
                    // other side finishes.)
                    // SAFETY: readers find tuple ids only through the index,
                    // which never held this one, so `v` was never shared.
                    data = unsafe { storage::unpublish_fresh(ti, tuple, v) };
                    ti.rows.release(tuple, &epoch::pin());
                    holder = Some(present);
                }
            }
        }
    }

    /// Sets columns of the row with key `key`; `Error::NotFound` if absent.
    pub fn update<C: ColumnRef>(
        &mut self,
        t: &Table,
        key: &Key,
        changes: &[(C, Value)],
    ) -> Result<()> {
        self.check_growable(t)?;
        let ti: &TableInner = &t.inner;
        ti.schema.check_key(key)?;
        let cols = read_modify::checked_changes(ti, changes)?;
        self.modify(ti, key, NewRow::Update(&cols))
    }

    /// Inserts `row`, or, when a row with its key exists, replaces every
    /// attribute of that row with `row`'s (an upsert). The row is checked
    /// as an insert's is. A row that exists only beyond this transaction's
    /// snapshot (inserted by a transaction that committed after it began)
    /// cannot be replaced: that is a retryable [`Error::Conflict`], as
    /// for an update of a row another transaction changed.
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, row, key};
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("kv").column("k", Type::Int).column("v", Type::Int).primary_key(&["k"]),
    /// )?;
    /// db.run(|x| x.put(&t, row![1i64, 10i64]))?;
    /// db.run(|x| x.put(&t, row![1i64, 11i64]))?;
    /// let mut ro = db.begin_read_only()?;
    /// assert_eq!(ro.get(&t, &key![1i64])?, Some(row![1i64, 11i64]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put(&mut self, t: &Table, row: Row) -> Result<()> {
        let copy = row.clone();
        match self.insert(t, row) {
            Err(Error::DuplicateKey { .. }) => {}
            r => return r,
        }
        let ti: &TableInner = &t.inner;
        let key = ti.schema.key_of(&copy);
        let changes: Vec<(usize, Value)> = copy
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !ti.schema.primary_key.contains(i))
            .collect();
        match self.update(t, &key, &changes) {
            // The key exists, but not for our snapshot: a concurrent insert.
            Err(Error::NotFound { .. }) => Err(self.conflict(ConflictKind::WriteWrite)),
            r => r,
        }
    }

    /// Deletes the row with key `key`; `Error::NotFound` if absent.
    pub fn delete(&mut self, t: &Table, key: &Key) -> Result<()> {
        self.check_writable(t)?;
        t.inner.schema.check_key(key)?;
        self.modify(&t.inner, key, NewRow::Tombstone(key.0.clone()))
    }

    /// Writes a new version derived from the current one.
    #[inline]
    fn modify(&mut self, ti: &TableInner, key: &Key, row: NewRow<'_>) -> Result<()> {
        // A refused update or delete (a missing key) read that it is absent.
        self.read_stamp = UNKNOWN_READS;
        with_cc!(self.db.protocol, P => self.modify_as::<P>(ti, key, row))
    }

    #[inline]
    fn modify_as<P: Cc>(&mut self, ti: &TableInner, key: &Key, row: NewRow<'_>) -> Result<()> {
        let ek = ti.encode(key);
        let guard = epoch::pin();
        let found = timed!(self, Index, self.hinted_lookup(ti, &ek, &guard, false));
        self.modify_found::<P>(ti, key, &ek, found, row, &guard)
    }

    /// `modify` from the key's primary entry, looked up by the caller
    /// (`found`, none if the key has no entry).
    #[inline(always)]
    fn modify_found<P: Cc>(
        &mut self,
        ti: &TableInner,
        key: &Key,
        ek: &EncodedKey,
        found: Option<Lookup<'_>>,
        row: NewRow<'_>,
        guard: &Guard,
    ) -> Result<()> {
        let not_found = || Error::NotFound {
            table: ti.schema.name.clone(),
            key: key.to_string(),
        };
        let tuple = match &found {
            Some(l) => l.tuple,
            None => match self.absent_read::<P>(ti, key, ek) {
                Some(tuple) => tuple,
                None => return Err(not_found()),
            },
        };
        if self.defer != deferred::Defer::Off
            && found.is_some()
            && self.defer_write::<P>(ti, ek, tuple, &row)?
        {
            return Ok(());
        }
        self.write_tuple::<P>(ti, ek, found.as_ref(), tuple, row, guard, not_found)
    }

    /// The eager write of `tuple` (key `ek`, its primary entry `found` if
    /// the caller looked it up): lock its head, check, install. Also what
    /// a buffered write's settle runs (`deferred`). `not_found`: the error
    /// for a row that is deleted.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn write_tuple<P: Cc>(
        &mut self,
        ti: &TableInner,
        ek: &EncodedKey,
        found: Option<&Lookup<'_>>,
        tuple: u64,
        row: NewRow<'_>,
        guard: &Guard,
        not_found: impl Fn() -> Error,
    ) -> Result<()> {
        // (Bounded: each wait outlasts one deciding writer, and a row can
        // have a queue of them.)
        let mut waits = 0;
        let head = loop {
            let head = storage::newest(ti, tuple);
            if head.is_null() {
                return Err(self.conflict(ConflictKind::WriteWrite));
            }
            // SAFETY: pinned; heads are alive.
            let h = unsafe { &*head };
            if self.is_own(head) {
                if h.is_tombstone() {
                    return Err(not_found());
                }
                if let Err(e) = self.replace_own::<P>(ti, tuple, head, row) {
                    return self.fail(e);
                }
                self.entry_point_moved(ti, ek, tuple);
                return Ok(());
            }
            match self.lock_head::<P>(ti, tuple, head) {
                Ok(()) => break head,
                Err(e) => {
                    waits += 1;
                    if waits > MAX_WRITER_WAITS || !self.waited_out_writer::<P>(ti, tuple, head) {
                        return self.fail(e);
                    }
                }
            }
        };
        // SAFETY: pinned; heads are alive.
        let h = unsafe { &*head };
        if h.is_tombstone() {
            self.unlock_unused(head);
            if let Err(e) = self.note_read::<P>(ti, tuple, head) {
                return self.fail(e);
            }
            return Err(not_found());
        }
        self.install::<P>(ti, tuple, head, row, None)?;
        // The primary entry follows the new head: re-pointed at it under
        // physical pointers (N2O), else its hint, so readers find it hinted.
        if ti.after_write(found, ek, tuple, guard) {
            self.count_index_writes(1);
        }
        Ok(())
    }

    /// Records a read made on the write path (a duplicate-key or not-found
    /// answer depends on the version seen).
    fn note_read<P: Cc>(&mut self, ti: &TableInner, tuple: u64, v: *mut Version) -> Result<()> {
        P::note_read(self, ti, tuple, v)
    }

    /// Writes a new version over the locked `head` (the version store
    /// decides where it goes). (always: with `write_tuple` shared by the
    /// eager write and a buffered write's settle, LLVM stopped inlining
    /// it into the update, ~60 instructions an update.)
    #[inline(always)]
    fn install<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        head: *mut Version,
        row: NewRow<'_>,
        index_key: Option<EncodedKey>,
    ) -> Result<()> {
        let v = timed!(
            self,
            VersionInstall,
            storage::install(ti, tuple, self.tid, head, row)
        );
        if let Err(e) = self.sec_after_install::<P>(ti, tuple, head, v) {
            // Take the version back out, as an abort would, before the
            // head is marked overwritten: the row is as before the call.
            let guard = epoch::pin();
            storage::undo(ti, tuple, v, head, &guard);
            storage::retire(v, ti.gauged, &guard);
            self.unlock_unused(head);
            return self.fail(e);
        }
        // SAFETY: we hold head's lock; it is alive until GC, which cannot pass
        // it before we commit.
        let h = unsafe { &*head };
        h.end.store(TID_MARK | self.tid, SeqCst);
        self.writes.push(WriteEntry {
            table: ti,
            tuple,
            new: v,
            old: head,
            index_key,
        });
        if self.log_ops {
            self.log_op(self.writes.len() - 1, false);
        }
        match P::on_overwrite(self, h) {
            Ok(()) => Ok(()),
            Err(k) => self.fail(Error::Conflict(k)),
        }
    }

    /// Secondary-index maintenance for version `v` just installed over
    /// `prev` (null: a fresh insert), under the row's lock. (The test for
    /// indexes always inline: a buffered write's settle stopped inlining
    /// the whole, a call per install of a table with none.)
    #[inline(always)]
    fn sec_after_install<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        if !crate::index::has_indexes(ti) {
            return Ok(());
        }
        self.sec_after_install_indexed::<P>(ti, tuple, prev, v)
    }

    #[inline]
    fn sec_after_install_indexed<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        // SAFETY: `v` is ours and alive.
        let r = unsafe { &*v };
        if r.is_tombstone() {
            return self.sec_on_delete::<P>(ti, tuple, prev, v);
        }
        storage::with_values(r, |d| self.sec_on_write::<P>(ti, tuple, prev, v, d))
    }

    /// Replaces our own uncommitted version of a row. Secondary indexes
    /// are maintained first (their physical entries point at `own` until
    /// `sec_on_replace_own` re-keys them): on a unique violation nothing
    /// changed.
    fn replace_own<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        own: *mut Version,
        row: NewRow<'_>,
    ) -> Result<()> {
        if crate::index::has_indexes(ti) {
            let derived;
            let new: Option<&[Value]> = match &row {
                NewRow::Row(d) => Some(d),
                NewRow::Tombstone(_) => None,
                NewRow::Update(ch) => {
                    // SAFETY: our own version is alive.
                    let mut r = storage::with_values(unsafe { &*own }, |d| d.to_vec());
                    for (c, v) in ch.iter() {
                        r[*c] = (*v).clone();
                    }
                    derived = r;
                    Some(&derived)
                }
            };
            match new {
                Some(new) => self.sec_on_write::<P>(ti, tuple, own, own, new)?,
                None => self.sec_on_delete::<P>(ti, tuple, own, own)?,
            }
        }
        let tid = self.tid;
        let i = self
            .writes
            .iter()
            .rposition(|w| w.new == own)
            .expect("own version has a write entry");
        let guard = epoch::pin();
        let v = timed!(self, VersionInstall, {
            let w = &mut self.writes[i];
            w.new = storage::replace_own(ti, tuple, tid, own, w.old, row, &guard);
            w.new
        });
        // Physical entries still name `own`: re-key them before it retires.
        // (On a refused re-keyed entry the write is in place all the same:
        // the caller rolls back.)
        let moved = self.sec_on_replace_own::<P>(ti, tuple, own, v);
        storage::retire(own, ti.gauged, &guard);
        moved?;
        if self.log_ops {
            // The whole row: an earlier operation of ours on it (a delete)
            // may leave nothing for changed columns to apply to.
            self.log_op(i, true);
        }
        Ok(())
    }

    /// Per-operation logging: write `i` of the write set, just made, goes
    /// to the log buffer now (see `Log::log_op`).
    #[inline(never)]
    fn log_op(&self, i: usize, whole: bool) {
        if let Some(l) = self.db.log.get() {
            let slot = crate::tid::TidTable::slot_index(self.tid);
            timed!(self, Log, l.log_op(slot, &self.writes[i], whole));
        }
    }

    // ------------------------------------------------------- commit / abort

    /// Commits. On `Err(Conflict)` the transaction has been rolled back.
    /// With the write-ahead log under `SyncPolicy::GroupCommit` it returns
    /// once the commit is on disk; a transaction that wrote nothing returns
    /// once the commits it read are on disk (they are visible once decided,
    /// before their fsync; usually they are durable already: see
    /// `Log::reader_lsn` and docs/DURABILITY.md).
    pub fn commit(self) -> Result<()> {
        self.traced(|tx| with_cc!(tx.db.protocol, P => tx.commit_as::<P, false>()))
            .map(drop)
    }

    /// Commits with its own durability, whatever the database's
    /// `SyncPolicy`: `GroupCommit` returns once the commit (or, for one
    /// that wrote nothing, what it read) is on disk; `Async` returns at
    /// once, within the log's loss bound (`LogTuning::
    /// async_max_unflushed_bytes` of acknowledged records, as an Async
    /// database's commits). So a service can log its payments
    /// synchronously and its page views asynchronously in one database.
    /// The log stays in commit order: a synchronous commit also makes
    /// every earlier asynchronous one durable. Without the write-ahead
    /// log it is `commit`.
    ///
    /// ```
    /// # use strata::*;
    /// # let dir = std::env::temp_dir().join(format!("strata-doc-commit-with-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let db = Database::open(Options::default().durability(Durability::Wal {
    ///     dir: dir.clone(),
    ///     sync: SyncPolicy::GroupCommit,
    /// }))?;
    /// let t = db.open_table(Schema::new("hits").column("k", Type::Int).primary_key(&["k"]))?;
    /// let mut txn = db.begin()?;
    /// txn.insert(&t, row![1])?;
    /// txn.commit_with(SyncPolicy::Async)?; // returns before its fsync
    /// # drop(db);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn commit_with(mut self, sync: crate::options::SyncPolicy) -> Result<()> {
        self.sync = Some(sync);
        self.commit()
    }

    /// Runs `commit` (a commit of this transaction), with its `tracing`
    /// event when one is enabled: a commit that wrote nothing has none and
    /// pays one test of the write set.
    #[inline]
    fn traced<T>(self, commit: impl FnOnce(Self) -> Result<T>) -> Result<T> {
        let start = match self.writes.is_empty() {
            true => None,
            false => crate::trace::commit_start(),
        };
        let Some(start) = start else {
            return commit(self);
        };
        let (tid, writes) = (self.tid, self.writes.len());
        let r = commit(self);
        crate::trace::committed(start, tid, writes, &r);
        r
    }

    /// Commits without waiting for the log: returns as soon as the commit
    /// is decided and visible, with a [`CommitTicket`] whose `wait` returns
    /// once it is durable (flush pipelining; see `CommitTicket`). Errors are
    /// `commit`'s, except that a failure of the log's write or fsync after
    /// this returns comes from the ticket's `wait`. A thread can keep many
    /// pipelined commits in flight and acknowledge them in order; one fsync
    /// then covers them all. On an in-memory database the ticket is durable
    /// at once.
    pub fn commit_pipelined(self) -> Result<CommitTicket> {
        self.traced(|tx| with_cc!(tx.db.protocol, P => tx.commit_as::<P, true>()))
    }

    /// `PIPELINED`: return the log's ticket rather than wait on it.
    #[inline]
    fn commit_as<P: Cc, const PIPELINED: bool>(mut self) -> Result<CommitTicket> {
        if !self.active {
            return Err(Error::TransactionFinished);
        }
        // Writes buffered for commit go on their rows first: from here on
        // the commit is the eager one (`deferred`). (Before the commit
        // stamp: a snapshot that includes the stamp must find them.)
        let settle_late = crate::sync::broken(crate::sync::Break::SettleAfterCommitStamp);
        if self.has_deferred() && !settle_late {
            timed!(self, VersionInstall, self.settle_all::<P>())?;
        }
        if self.read_only || (self.writes.is_empty() && P::read_only_commit_is_safe(&self)) {
            P::release(&mut self);
            // Counted while the slot is still ours (see `stats`).
            self.db.tids.counts(self.tid).commit(true);
            self.time_committed();
            self.finish();
            if self.timing && self.logged {
                let (bd, slot) = self.timing_on();
                let wait = || self.reader_ticket::<PIPELINED>();
                return crate::breakdown::detached(bd, slot, Component::LogWait, wait);
            }
            return self.reader_ticket::<PIPELINED>();
        }
        // Durability (see the log module): the redo record is built before
        // the commit timestamp. With LSN commit stamps its log position,
        // reserved now, *is* the commit timestamp (one fetch-and-add);
        // otherwise it is reserved after validation. Either way before the
        // versions become visible, under our write locks.
        let mut redo = match self.db.log.get().filter(|_| !self.writes.is_empty()) {
            Some(l) => {
                let slot = crate::tid::TidTable::slot_index(self.tid);
                match timed!(self, Log, l.prepare(slot, &self.writes)) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        self.rollback();
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        let mut reserved = None;
        let cts = match self.db.log.get().filter(|l| l.lsn_stamps()) {
            Some(l) => {
                debug_assert_ne!(P::PROTOCOL, crate::options::Protocol::Mvto);
                self.db.tids.set_precommit(self.tid);
                match redo.take() {
                    Some(r) => {
                        let r = timed!(self, Log, l.reserve(r));
                        let cts = r.cts();
                        reserved = Some(r);
                        cts
                    }
                    // Nothing to log (SSN/SSI/MV2PL validate such a
                    // transaction): a stamp between the reservation the
                    // clock shows and the next one, which is at least a
                    // record (40 bytes) further. Unique among writers;
                    // read-only transactions may share one, and never
                    // depend on each other (see the log module).
                    None => crate::cc::read_only_stamp(&self.db.clock),
                }
            }
            None => P::commit_ts(&self),
        };
        if settle_late && self.has_deferred() {
            self.settle_all::<P>()?;
        }
        self.db.tids.set_committing(self.tid, cts);
        // A table we wrote may have been dropped since. Checked after the
        // commit is announced (SeqCst): a drop that set the flag before is
        // seen here, and one that sets it later waits for our decision (and
        // for our log record) before it logs and returns, so a commit is
        // either ordered before the drop or refused.
        if let Some(table) = self.dropped_table_written() {
            if let Some(r) = reserved {
                self.db.log.get().expect("reserved").skip(r);
            }
            self.user_rollback("table-dropped");
            return Err(Error::TableDropped { table });
        }
        if let Err(kind) = timed!(self, Cc, P::validate(&mut self, cts)) {
            if let Some(r) = reserved {
                self.db.log.get().expect("reserved").skip(r);
            }
            return Err(self.conflict(kind));
        }
        // The record's place in the log is taken here, or now becomes a
        // commit record (under the model, in a ghost log: `drop_table`'s
        // model checks the order).
        if !self.writes.is_empty() {
            crate::sync::logged(crate::sync::Logged::Commit);
        }
        let ticket = match (reserved, redo) {
            (None, None) => None,
            (reserved, redo) => timed!(self, Log, {
                match (reserved, redo) {
                    (Some(r), _) => Some(self.db.log.get().expect("reserved").publish(r)),
                    (None, Some(r)) => Some(self.db.log.get().expect("prepared").append(r, cts)),
                    (None, None) => None,
                }
            }),
        };
        self.db.tids.set_committed(self.tid, cts);
        self.post_commit::<P>(cts);
        let counts = self.db.tids.counts(self.tid);
        counts.commit(false);
        // A commit that wrote nothing left no garbage: it runs no GC pass
        // (a pass writes lines every thread shares, and a read-only commit
        // should write none; `sync::counting`).
        let wrote = !self.writes.is_empty();
        if wrote {
            let allocated = counts.storage();
            self.hand_over_memory(allocated);
        }
        self.time_committed();
        self.finish();
        let wait = || match ticket {
            Some(t) if PIPELINED => self.db.log.get().expect("logged").pipelined(t),
            Some(t) => {
                let log = self.db.log.get().expect("logged");
                log.finish_commit(t, self.sync.unwrap_or(log.sync()))
                    .map(|()| CommitTicket::done())
            }
            None => self.reader_ticket::<PIPELINED>(),
        };
        if !self.timing {
            if wrote {
                self.db.after_commit();
            }
            return wait();
        }
        // After the slot is freed: charged detached (`breakdown`).
        let (bd, slot) = self.timing_on();
        if wrote {
            crate::breakdown::detached(bd, slot, Component::Gc, || self.db.after_commit());
        }
        if !self.logged {
            return wait();
        }
        crate::breakdown::detached(bd, slot, Component::LogWait, wait)
    }

    /// The ticket of a commit that logged nothing, covering the commits it
    /// read (`Log::reader_lsn`); a plain commit waits on it under
    /// GroupCommit (`Log::finish_reader`), so a result read from a commit
    /// still waiting for its fsync is not acknowledged before that fsync.
    fn reader_ticket<const PIPELINED: bool>(&self) -> Result<CommitTicket> {
        match self.db.log.get() {
            None => Ok(CommitTicket::done()),
            Some(l) if PIPELINED => Ok(l.ticket_for_reader(self.read_stamp)),
            Some(l) => l
                .finish_reader(self.read_stamp, self.sync.unwrap_or(l.sync()))
                .map(|()| CommitTicket::done()),
        }
    }

    /// The name of a table in our write set that has been dropped, if any.
    fn dropped_table_written(&self) -> Option<String> {
        let mut last: *const TableInner = ptr::null();
        for w in &self.writes {
            if w.table == last {
                continue;
            }
            last = w.table;
            // SAFETY: tables outlive transactions (dropped ones too).
            let t = unsafe { &*w.table };
            if t.dropped.load(SeqCst) {
                return Some(t.schema.name.clone());
            }
        }
        None
    }

    fn post_commit<P: Cc>(&mut self, cts: u64) {
        timed!(self, Cc, P::post_commit(self, cts));
        // Hand our rows to the collector before unlocking: the next writer
        // of a row must queue after us (see gc::Garbage). A delete of a row
        // inserted by this same transaction overwrote nothing, but its
        // tombstone still has to go.
        timed!(
            self,
            Gc,
            self.db.gc.on_commit(
                cts,
                crate::tid::TidTable::slot_index(self.tid),
                self.writes
                    .iter()
                    // SAFETY: our versions are alive until GC; tables outlive us.
                    .filter(|w| !w.old.is_null() || unsafe { (*w.new).is_tombstone() })
                    .map(|w| gc::Committed {
                        // SAFETY: tables outlive us.
                        table: unsafe { &*w.table },
                        tuple: w.tuple,
                        version: w.new,
                    }),
            )
        );
        // Index entries are stamped before the rows unlock (a no-op for
        // today's kinds).
        self.sec_on_commit(cts);
        self.count_index_writes(self.sec_writes.len());
        timed!(self, VersionInstall, {
            for w in &self.writes {
                // SAFETY: our own versions and the versions we overwrote (locked by
                // us) are alive: GC processes our entries only after we end.
                let new = unsafe { &*w.new };
                new.begin.store(cts, SeqCst);
                new.txn_id.store(0, SeqCst);
                if let Some(old) = unsafe { w.old.as_ref() } {
                    // The old version keeps our id in txn_id: a writer that
                    // loaded it as the head before our install cannot lock it.
                    old.end.store(cts, SeqCst);
                }
            }
        });
        // Scan records (SSN/SSI) were marked committed in validation and
        // SSI's marks stay in its registry; only MV2PL has locks to drop.
        P::release(self);
    }

    /// Rolls back. Never fails.
    pub fn abort(mut self) {
        if self.active {
            self.user_rollback("user");
        }
    }

    /// Counts an abort the caller chose (or a dropped table forced) and
    /// rolls back, handing what the writes allocated and the rollback
    /// retired to the memory gauge.
    fn user_rollback(&mut self, why: &'static str) {
        let allocated = self.db.tids.counts(self.tid).user_abort();
        crate::trace::aborted(self.tid, why);
        self.rollback();
        self.hand_over_memory(allocated);
    }

    /// Undoes every write, then protocol state, then frees the slot.
    pub(crate) fn rollback(&mut self) {
        with_cc!(self.db.protocol, P => self.rollback_as::<P>())
    }

    fn rollback_as<P: Cc>(&mut self) {
        if !self.active {
            return;
        }
        let guard = epoch::pin();
        // Secondary entries go before the versions they point at retire.
        self.count_index_writes(self.sec_writes.len());
        self.sec_rollback();
        for w in self.writes.drain(..).rev() {
            // SAFETY: tables outlive the transaction; our versions are alive.
            let t = unsafe { &*w.table };
            storage::undo(t, w.tuple, w.new, w.old, &guard);
            if let Some(old) = unsafe { w.old.as_ref() } {
                // A primary entry naming our version names the head again.
                if t.writes_name_versions() {
                    t.rename_entry_point(None, w.tuple);
                    self.db.tids.counts(self.tid).index_writes(1);
                }
                old.end.store(INF_TS, SeqCst);
                old.txn_id.store(0, SeqCst);
            } else {
                if let Some(k) = &w.index_key {
                    t.index.remove(k, w.tuple, t.gauged);
                }
                t.rows.release(w.tuple, &guard);
            }
            storage::retire(w.new, t.gauged, &guard);
        }
        P::release(self);
        P::on_abort(self);
        // A panic in our validation dropped our log reservation unpublished:
        // fill it, or the flusher stops there (see `log::Reservation`).
        if let Some(l) = self.db.log.get() {
            l.skip_lost();
            if self.log_ops {
                l.drop_ops(crate::tid::TidTable::slot_index(self.tid));
            }
        }
        self.db.tids.set_aborted(self.tid);
        self.finish();
    }

    fn finish(&mut self) {
        self.active = false;
        self.reads.clear();
        if self.has_deferred() {
            // (Rolled back with writes still buffered: they were never
            // made; the slot's next occupant finds its buffer empty.)
            self.drop_deferred();
        }
        // (ThinVec's clear is an out-of-line call even when empty, as these
        // two nearly always are: ~40 instructions per transaction.)
        if !self.scans.is_empty() {
            self.scans.clear();
        }
        if !self.sec_writes.is_empty() {
            self.sec_writes.clear();
        }
        if self.timing {
            self.time_end();
        }
        self.db.tids.release(self.tid);
    }

    // ------------------------------------------------------ time breakdown

    // (Off, each of these is a test of `timing`; the work is out of line.)

    /// Timing on: the breakdown and this transaction's slot, for
    /// `breakdown::region` (a pointer, so that the region's closure may
    /// borrow the transaction mutably; see `breakdown::region`).
    #[cold]
    #[inline(never)]
    pub(crate) fn timing_on(&self) -> (*const crate::breakdown::Breakdown, usize) {
        let b = self.db.breakdown.as_ref().expect("timing is on");
        (Arc::as_ptr(b), crate::tid::TidTable::slot_index(self.tid))
    }

    #[cold]
    #[inline(never)]
    fn time_end(&self) {
        if let Some(b) = &self.db.breakdown {
            b.end(crate::tid::TidTable::slot_index(self.tid));
        }
    }

    #[inline(always)]
    fn time_committed(&self) {
        if self.timing {
            if let Some(b) = &self.db.breakdown {
                b.committed(crate::tid::TidTable::slot_index(self.tid));
            }
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        // A read-only transaction has nothing to undo: dropping it is how it
        // ends, and does not count as an abort.
        if self.active && self.read_only {
            self.finish();
        } else if self.active {
            self.user_rollback("user");
        }
        if self.writes.capacity() + self.reads.capacity() > 0 {
            crate::cc::sets::stash_sets(
                std::mem::take(&mut self.writes),
                std::mem::take(&mut self.reads),
            );
        }
    }
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("tid", &self.tid)
            .field("ts", &self.ts)
            .field("read_only", &self.read_only)
            .field("active", &self.active)
            .field("writes", &self.writes.len())
            .finish()
    }
}

fn duplicate(t: &TableInner, key: &Key) -> Error {
    Error::DuplicateKey {
        table: t.schema.name.clone(),
        key: key.to_string(),
    }
}

#[cfg(test)]
mod tests;
