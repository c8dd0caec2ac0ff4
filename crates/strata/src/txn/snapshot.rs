//! [`Snapshot`]: a read-only snapshot that threads share, read through
//! `&self` (redb's `ReadTransaction` is the model).
//!
//! A read-only transaction's reads already do no protocol work: no read
//! set, no lock, no predicate, never an abort; the version a key shows is a
//! pure function of the snapshot timestamp and the chain. What still took
//! `&mut` was the read-write path they share (the protocol's bookkeeping).
//! A `Snapshot` reads through its own path, which touches nothing of the
//! transaction but what `begin` fixed (database, timestamp, slot), so any
//! number of threads may read it at once:
//!
//! ```text
//!   db.snapshot() ──> a read-only transaction (registered snapshot: GC
//!                      keeps every version it can read until it drops)
//!   thread 1 ─ snap.get(..)   ┐
//!   thread 2 ─ snap.range(..) ├─ index -> tuple -> visible(chain, ts)
//!   thread 3 ─ snap.count(..) ┘   reads only: db, ts, the table
//! ```
//!
//! The invariant this module owns: **a `Snapshot`'s reads write nothing
//! shared through the transaction** (its methods take `&self` and reach
//! only the fields `begin` set), which is what makes `Sync` sound; the
//! memory they read is kept alive by the registered snapshot (GC never
//! frees a version a registered snapshot can see) and by each read's epoch
//! pin. Secondary-index reads go to the index kinds through
//! `index_ops::SnapshotReads`, an `IndexTxn` over `&Transaction` whose row
//! reads are snapshot reads and which writes nothing of the transaction
//! (a read-only transaction's index scans already did no protocol work).
//! What a `Snapshot` does not offer (projections), a thread reads through
//! a [`Snapshot::reader`], a read-only transaction registered at the
//! snapshot's timestamp, so all of them read one state.

use super::index_iter::IndexRange;
use super::index_ops::SnapshotReads;
use super::iter::{Range, Source};
use super::*;
use crate::index::{self, ScanMode};
use crate::table::Index;

/// A read-only snapshot of the database that threads share: `Send + Sync`,
/// every read through `&self`. It sees the state of the moment it was
/// taken (as [`Database::begin_read_only`]'s transaction does) and keeps
/// the versions it can read from GC until it is dropped.
///
/// ```
/// use strata::{key, row, Database, Options, Schema, Type, Value};
///
/// let db = Database::open(Options::default())?;
/// let t = db.create_table(
///     Schema::new("t").column("k", Type::Int).column("v", Type::Int).primary_key(&["k"]),
/// )?;
/// db.run(|tx| (0..4).try_for_each(|k| tx.insert(&t, row![k, 10])))?;
/// let snap = db.snapshot()?;
/// db.run(|tx| tx.update(&t, &key![0], &[("v", Value::Int(99))]))?;
/// std::thread::scope(|s| {
///     for _ in 0..2 {
///         // Each thread reads the same snapshot by `&`: the update is not in it.
///         s.spawn(|| assert_eq!(snap.get(&t, &key![0]).unwrap().unwrap()[1], Value::Int(10)));
///     }
/// });
/// assert_eq!(snap.count(&t, ..)?, 4);
/// # Ok::<(), strata::Error>(())
/// ```
///
/// [`Database::begin_read_only`]: crate::Database::begin_read_only
pub struct Snapshot {
    txn: Transaction,
}

// SAFETY: `Snapshot` hands out no `&mut Transaction` and no method that
// takes one: its reads (below, and its ranges: `iter::Source::Snapshot`,
// which hold `&Transaction`; its index reads: `SnapshotReads`, which holds
// `&Transaction` and an empty list of its own) take `&self` and read only
// fields fixed at `begin` (`db`, `ts`, `tid`, `active`, `read_only`); the
// tables and versions they reach are shared, immutable or atomic, and kept
// alive by the registered snapshot and each read's pin. The transaction is
// `Send` (see its impl); sharing `&Snapshot` therefore shares only reads.
// (`tests/snapshot.rs` reads one snapshot from several threads while
// writers change every row it reads; `tests/index_iterator.rs` does the
// same through every index kind.)
unsafe impl Sync for Snapshot {}

impl Snapshot {
    pub(crate) fn new(txn: Transaction) -> Snapshot {
        debug_assert!(txn.read_only, "a snapshot is a read-only transaction");
        Snapshot { txn }
    }

    /// The snapshot's timestamp: it sees the commits stamped below it.
    pub fn ts(&self) -> u64 {
        self.txn.ts
    }

    /// The row with primary key `key`, as of the snapshot.
    pub fn get(&self, t: &Table, key: &Key) -> Result<Option<Row>> {
        self.read_with(t, key, |r| r.to_vec())
    }

    /// The row with primary key `key`, handed to `f` without copying.
    pub fn read_with<R>(
        &self,
        t: &Table,
        key: &Key,
        f: impl FnOnce(&[Value]) -> R,
    ) -> Result<Option<R>> {
        let tx = &self.txn;
        tx.check_open(t)?;
        let ti: &TableInner = &t.inner;
        ti.schema.check_key(key)?;
        let ek = ti.encode(key);
        let guard = epoch::pin();
        let Some(found) = tx.hinted_lookup(ti, &ek, &guard, false) else {
            return Ok(None);
        };
        let v = tx.visible_to_snapshot(ti, found.tuple)?;
        // SAFETY: pinned, and visible to our registered snapshot, which GC
        // never frees (see the Send impl of `Transaction`).
        Ok(unsafe { v.as_ref() }
            .filter(|r| !r.is_tombstone())
            .map(|r| storage::with_values(r, f)))
    }

    /// The rows whose primary key lies in `range`, in key order (prefix
    /// bounds as [`Transaction::scan`]'s).
    pub fn scan(&self, t: &Table, range: impl RangeBounds<Key>) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        self.scan_while(t, range, |r| {
            out.push(r.to_vec());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Calls `f` on the rows of `range` in key order, without copying,
    /// until it returns `Break`. Returns how many rows it was called on.
    pub fn scan_while(
        &self,
        t: &Table,
        range: impl RangeBounds<Key>,
        mut f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<usize> {
        let tx = &self.txn;
        tx.check_open(t)?;
        let ti: &TableInner = &t.inner;
        let (lo, hi) = primary_bounds(t, &range)?;
        let guard = epoch::pin();
        let (mut n, mut failed) = (0, None);
        ti.index.range_while(&lo, &hi, &guard, |tuple| {
            let v = match tx.visible_to_snapshot(ti, tuple) {
                Ok(v) => v,
                Err(e) => {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
            };
            // SAFETY: as in `read_with`.
            match unsafe { v.as_ref() } {
                Some(r) if !r.is_tombstone() => {
                    n += 1;
                    storage::with_values(r, &mut f)
                }
                _ => ControlFlow::Continue(()),
            }
        });
        failed.map_or(Ok(n), Err)
    }

    /// The rows of `range` lazily, in key order, from either end: as
    /// [`Transaction::range`], by `&` (no predicate is recorded: a
    /// snapshot has no phantoms to guard against).
    pub fn range<'s>(
        &'s self,
        t: &'s Table,
        range: impl RangeBounds<Key>,
    ) -> Result<Range<'s, Row>> {
        Range::new(
            Source::Snapshot(&self.txn),
            t,
            &range,
            super::iter::project_row,
        )
    }

    /// [`Snapshot::range`]'s primary keys alone.
    pub fn range_keys<'s>(
        &'s self,
        t: &'s Table,
        range: impl RangeBounds<Key>,
    ) -> Result<Range<'s, Key>> {
        Range::new(
            Source::Snapshot(&self.txn),
            t,
            &range,
            super::iter::project_key,
        )
    }

    /// The rows whose index key lies in `range`, in index-key order (ties
    /// by primary key), as of the snapshot: [`Transaction::index_scan`],
    /// by `&`.
    pub fn index_scan(&self, idx: &Index, range: impl RangeBounds<Key>) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        self.index_scan_while(idx, range, |r| {
            out.push(r.to_vec());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// The rows whose index key equals `key` (a full or prefix key).
    pub fn index_get(&self, idx: &Index, key: &Key) -> Result<Vec<Row>> {
        self.index_scan(idx, (Bound::Included(key), Bound::Included(key)))
    }

    /// How many rows [`Snapshot::index_scan`] would return (none copied).
    pub fn index_count(&self, idx: &Index, range: impl RangeBounds<Key>) -> Result<usize> {
        self.index_scan_while(idx, range, |_| ControlFlow::Continue(()))
    }

    /// Calls `f` on the rows of an index range in index-key order, without
    /// copying, until it returns `Break`. Returns how many rows it was
    /// called on.
    pub fn index_scan_while(
        &self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<usize> {
        let tx = &self.txn;
        let (lo, hi) = tx.index_bounds(idx, &range)?;
        let mode = ScanMode::new(false, false);
        let mut cx = SnapshotReads::new(tx);
        // The kinds read under the caller's pin (MV-PBT pins none itself).
        let _guard = epoch::pin();
        let scanned = index::scan(&mut cx, &idx.table.inner, &idx.inner, &lo, &hi, mode, f)?;
        Ok(scanned.rows)
    }

    /// The rows of an index range lazily, in index-key order, from either
    /// end: [`Transaction::index_range`], by `&` (no predicate is
    /// recorded).
    ///
    /// ```
    /// use strata::{key, row, Database, Options, Schema, Type, Unique, Value};
    ///
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("t").column("k", Type::Int).column("v", Type::Int).primary_key(&["k"]),
    /// )?;
    /// let by_v = db.create_index("by_v", &t, &["v"], Unique::No)?;
    /// db.run(|tx| (0..6).try_for_each(|k| tx.insert(&t, row![k, k % 3])))?;
    /// let snap = db.snapshot()?;
    /// db.run(|tx| tx.update(&t, &key![0], &[("v", Value::Int(2))]))?;
    /// std::thread::scope(|s| {
    ///     // Two threads read the snapshot by `&`: row 0 still has v = 0.
    ///     s.spawn(|| assert_eq!(snap.index_get(&by_v, &key![0]).unwrap().len(), 2));
    ///     s.spawn(|| {
    ///         let last = snap.index_range(&by_v, ..).unwrap().next_back().unwrap().unwrap();
    ///         assert_eq!(last, row![5, 2]);
    ///     });
    /// });
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn index_range<'s>(
        &'s self,
        idx: &Index,
        range: impl RangeBounds<Key>,
    ) -> Result<IndexRange<'s, Row>> {
        IndexRange::new(Source::Snapshot(&self.txn), idx, &range, |_, r| r.to_vec())
    }

    /// [`Snapshot::index_range`]'s primary keys alone.
    pub fn index_range_keys<'s>(
        &'s self,
        idx: &Index,
        range: impl RangeBounds<Key>,
    ) -> Result<IndexRange<'s, Key>> {
        IndexRange::new(Source::Snapshot(&self.txn), idx, &range, |t, r| {
            t.schema.key_of(r)
        })
    }

    /// A read-only transaction at this snapshot's timestamp, for one
    /// thread's reads a `Snapshot` does not offer (projections, covering
    /// index scans): every reader of one snapshot sees exactly its state.
    /// It holds a transaction slot of its own and keeps that state from GC
    /// while it lives, after the snapshot is dropped too.
    ///
    /// ```
    /// use strata::{key, row, Database, Options, Schema, Type, Unique, Value};
    ///
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("t").column("k", Type::Int).column("v", Type::Int).primary_key(&["k"]),
    /// )?;
    /// let by_v = db.create_index("by_v", &t, &["v"], Unique::No)?;
    /// db.run(|tx| (0..4).try_for_each(|k| tx.insert(&t, row![k, 7])))?;
    /// let snap = db.snapshot()?;
    /// db.run(|tx| tx.update(&t, &key![0], &[("v", Value::Int(8))]))?;
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         let mut r = snap.reader().unwrap();
    ///         assert_eq!(r.index_get(&by_v, &key![7]).unwrap().len(), 4); // as of the snapshot
    ///     });
    /// });
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn reader(&self) -> Result<Transaction> {
        let mut r = Transaction::begin(Arc::clone(&self.txn.db), true)?;
        // Registered at our timestamp before it reads anything. GC cannot
        // have passed it: this snapshot, alive for the call, is registered
        // there too.
        r.db.tids.set_snapshot(r.tid, self.txn.ts);
        r.ts = self.txn.ts;
        Ok(r)
    }

    /// How many rows `range` holds in the snapshot (no row copied).
    pub fn count(&self, t: &Table, range: impl RangeBounds<Key>) -> Result<usize> {
        self.scan_while(t, range, |_| ControlFlow::Continue(()))
    }
}

impl Snapshot {
    /// Up to `max` rows of `t` from `from` on, in key order, and the key
    /// of the last: for `Database::alter_table`, whose table is frozen
    /// (marked dropped, so `check_open` would refuse it) while it copies.
    pub(crate) fn rows_of_frozen(
        &self,
        t: &TableInner,
        from: &Bound<EncodedKey>,
        max: usize,
    ) -> (Vec<Row>, Option<EncodedKey>) {
        let guard = epoch::pin();
        let (mut rows, mut last) = (Vec::new(), None);
        t.index
            .range_while(from, &Bound::Unbounded, &guard, |tuple| {
                // A snapshot's read of a frozen table cannot fail (see
                // `visible`'s errors: none in snapshot mode).
                let v = self
                    .txn
                    .visible_to_snapshot(t, tuple)
                    .unwrap_or(ptr::null_mut());
                // SAFETY: as in `read_with`.
                if let Some(r) = unsafe { v.as_ref() }.filter(|r| !r.is_tombstone()) {
                    let row = storage::with_values(r, |r| r.to_vec());
                    last = Some(t.encode(&t.schema.key_of(&row)));
                    rows.push(row);
                }
                if rows.len() < max {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            });
        (rows, last)
    }
}

impl Transaction {
    /// The version of `tuple` a read-only snapshot sees (null: none):
    /// the read-only branch of `read_tuple`, without its timing (which
    /// writes the transaction's state).
    #[inline]
    pub(super) fn visible_to_snapshot(&self, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        storage::visible(t, tuple, self.ts, 0, &self.db.tids, Mode::Snapshot)
    }
}
