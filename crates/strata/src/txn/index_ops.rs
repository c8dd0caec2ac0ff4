//! The transaction's side of secondary indexes: public index scans, and
//! the write path's calls into the index seam (`crate::index`).
//!
//! Index code never sees a `Transaction`: it gets an [`IndexTxn`], here a
//! transaction viewed through its protocol `P` ([`Through`]), whose
//! methods forward to the transaction and to `P`'s hooks (monomorphised,
//! as everywhere in the transaction code).

use super::Transaction;
use crate::cc::{with_cc, Cc};
use crate::error::{ConflictKind, Error, Result};
use crate::index::key::decode_values;
use crate::index::secondary::{check_prefix, prefix_bounds, SecondaryIndex};
use crate::index::{self, IndexTxn, ScanMode, SecWrites};
use crate::storage::version::Version;
use crate::table::Index;
use crate::table::TableInner;
use crate::tid::snapshots::Snapshots;
use crate::tid::TidTable;
use crate::value::{Key, Row, Value};
use crossbeam_epoch as epoch;
use std::marker::PhantomData;
use std::ops::{Bound, ControlFlow, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// A transaction as index code sees it, under protocol `P`.
pub(crate) struct Through<'a, P> {
    tx: &'a mut Transaction,
    _p: PhantomData<P>,
}

impl<'a, P: Cc> Through<'a, P> {
    #[inline]
    pub(crate) fn new(tx: &'a mut Transaction) -> Self {
        Through {
            tx,
            _p: PhantomData,
        }
    }
}

impl<P: Cc> IndexTxn for Through<'_, P> {
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = P::NEWER_THAN_SNAPSHOT;

    #[inline]
    fn tid(&self) -> u64 {
        self.tx.tid
    }
    #[inline]
    fn snapshot_ts(&self) -> u64 {
        self.tx.ts
    }
    #[inline]
    fn tids(&self) -> &TidTable {
        &self.tx.db.tids
    }
    #[inline]
    fn is_own(&self, v: *mut Version) -> bool {
        crate::cc::Txn::is_own(self.tx, v)
    }
    #[inline]
    fn sec_writes(&mut self) -> &mut SecWrites {
        &mut self.tx.sec_writes
    }
    #[inline]
    fn read_row(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        self.tx.read_tuple::<P>(t, tuple)
    }
    #[inline]
    fn check_insert(&self, predicate_ts: &AtomicU64) -> Result<(), ConflictKind> {
        P::check_insert(&*self.tx, predicate_ts)
    }
    fn snapshots(&self) -> Snapshots {
        crate::gc::Engine::snapshots(&*self.tx.db)
    }
    #[inline]
    fn horizon(&self) -> u64 {
        self.tx.db.horizon.load(SeqCst)
    }
}

/// A read-only snapshot's transaction as index code sees it, by `&`
/// ([`crate::Snapshot`]'s index reads): every read is a snapshot read
/// (`visible_to_snapshot`), and nothing of the transaction is written.
/// Index reads of a snapshot never write entries; the empty list of them
/// is this view's own.
pub(crate) struct SnapshotReads<'a> {
    tx: &'a Transaction,
    none: SecWrites,
}

impl<'a> SnapshotReads<'a> {
    pub(crate) fn new(tx: &'a Transaction) -> Self {
        debug_assert!(tx.read_only, "a snapshot is a read-only transaction");
        SnapshotReads {
            tx,
            none: SecWrites::new(),
        }
    }
}

impl IndexTxn for SnapshotReads<'_> {
    // (Asked only by a write's unique check; a snapshot writes nothing.)
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = None;

    fn tid(&self) -> u64 {
        self.tx.tid
    }
    fn snapshot_ts(&self) -> u64 {
        self.tx.ts
    }
    fn tids(&self) -> &TidTable {
        &self.tx.db.tids
    }
    fn is_own(&self, v: *mut Version) -> bool {
        crate::cc::Txn::is_own(self.tx, v)
    }
    fn sec_writes(&mut self) -> &mut SecWrites {
        &mut self.none
    }
    fn read_row(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        self.tx.visible_to_snapshot(t, tuple)
    }
    fn check_insert(&self, _: &AtomicU64) -> Result<(), ConflictKind> {
        Ok(())
    }
    fn snapshots(&self) -> Snapshots {
        crate::gc::Engine::snapshots(&*self.tx.db)
    }
    fn horizon(&self) -> u64 {
        self.tx.db.horizon.load(SeqCst)
    }
}

impl Transaction {
    /// Adds the secondary entries a new version of `tuple` with row `new`
    /// needs, and checks unique indexes. Called while we hold the row's
    /// write lock. `v` is the version the entries serve: the new version
    /// once installed, or (when our own uncommitted version is replaced)
    /// that version `prev`, whose entries [`Transaction::sec_on_replace_own`]
    /// then moves to the replacement — invisible to everyone else, so a
    /// scan never reaches a wrong row through it. `prev` is the version the
    /// write replaces (null for a fresh insert). On error nothing was
    /// added; the caller undoes its own step.
    #[inline]
    pub(crate) fn sec_on_write<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()> {
        super::timed!(
            self,
            Index,
            index::on_write(&mut Through::<P>::new(self), ti, tuple, prev, v, new)
        )
    }

    /// The index records a delete of `tuple` needs (tombstone `v` over
    /// `prev`, the locked head or our own version), under the row's write
    /// lock. On error nothing was added.
    #[inline]
    pub(crate) fn sec_on_delete<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        super::timed!(
            self,
            Index,
            index::on_delete(&mut Through::<P>::new(self), ti, tuple, prev, v)
        )
    }

    /// Our uncommitted version `own` of a row was replaced by `v`: its
    /// entries move to `v` or go. The caller retires `own` only after this,
    /// so a physical entry never names a retired version. An error (a
    /// moved entry's insert check) comes once the entries have moved.
    #[inline]
    pub(crate) fn sec_on_replace_own<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        index::on_replace_own(&mut Through::<P>::new(self), ti, tuple, own, v)
    }

    /// Commit at `cts` (COMMITTED, versions being stamped).
    #[inline]
    pub(crate) fn sec_on_commit(&self, cts: u64) {
        index::on_commit(&self.sec_writes, cts);
    }

    /// Counts `n` index entries written (`Stats::index_entry_writes`).
    #[inline]
    pub(crate) fn count_index_writes(&self, n: usize) {
        self.db.tids.counts(self.tid).index_writes(n as u64);
    }

    /// Our write left `tuple` (key `ek`) a new newest version without
    /// `TableInner::after_write` (replacing our own, or over a tombstone):
    /// a physical N2O primary entry follows it.
    pub(crate) fn entry_point_moved(
        &self,
        ti: &TableInner,
        ek: &crate::index::key::EncodedKey,
        tuple: u64,
    ) {
        if ti.writes_name_versions() {
            ti.rename_entry_point(Some(ek), tuple);
            self.count_index_writes(1);
        }
    }

    /// Abort: removes every entry we added (before our versions retire).
    #[inline]
    pub(crate) fn sec_rollback(&mut self) {
        index::on_abort(&mut self.sec_writes);
    }

    /// Rows visible to this transaction whose index key lies in `range`, in
    /// index-key order (ties by primary key). Bounds may be a prefix of the
    /// index columns: `Included(p)` as a lower bound starts at the first key
    /// beginning with `p`, as an upper bound ends after the last.
    pub fn index_scan(&mut self, idx: &Index, range: impl RangeBounds<Key>) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        self.index_scan_with(idx, range, |r| out.push(r.to_vec()))?;
        Ok(out)
    }

    /// Rows whose index key equals `key` (a full or prefix key).
    pub fn index_get(&mut self, idx: &Index, key: &Key) -> Result<Vec<Row>> {
        self.index_scan(idx, (Bound::Included(key), Bound::Included(key)))
    }

    /// Like [`Transaction::index_scan`], calling `f` on each row without
    /// copying it. Returns the number of rows.
    pub fn index_scan_with(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        mut f: impl FnMut(&[Value]),
    ) -> Result<usize> {
        self.index_scan_while(idx, range, |r| {
            f(r);
            ControlFlow::Continue(())
        })
    }

    /// The first `limit` rows [`Transaction::index_scan`] would return:
    /// the scan reads no row past them, and its predicate covers only the
    /// index keys up to the last row returned (see
    /// [`Transaction::scan_while`]). An MV-PBT index still decides the
    /// whole range from its records before it reads the first row.
    pub fn index_scan_limit(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        limit: usize,
    ) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        if limit == 0 {
            // Checks the index and the bounds, reads nothing.
            self.index_bounds(idx, &range)?;
            return Ok(out);
        }
        self.index_scan_while(idx, range, super::up_to(&mut out, limit))?;
        Ok(out)
    }

    /// Like [`Transaction::index_scan_with`], until `f` returns `Break`
    /// (that row is the last one read); the phantom protection of a scan
    /// that stopped covers the index keys up to that row's, as
    /// [`Transaction::scan_while`]'s does the primary keys.
    pub fn index_scan_while(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<usize> {
        // (A scan's rows are not named one by one: see `read_stamp`.)
        self.read_stamp = crate::log::UNKNOWN_READS;
        with_cc!(self.db.protocol, P => self.index_scan_as::<P>(idx, range, f))
    }

    /// How many rows [`Transaction::index_scan`] would return, without
    /// copying any (its predicate covers the whole range).
    pub fn index_count(&mut self, idx: &Index, range: impl RangeBounds<Key>) -> Result<usize> {
        self.index_scan_while(idx, range, |_| ControlFlow::Continue(()))
    }

    /// A covering scan: for each row [`Transaction::index_scan`] would
    /// return, the index's columns followed by the primary-key columns, in
    /// the same order. An MV-PBT index (`IndexKind::MvPbt`) answers a
    /// read-only transaction from its records alone, reading no row; other
    /// cases read the rows and project them.
    pub fn index_scan_keys(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
    ) -> Result<Vec<Row>> {
        self.read_stamp = crate::log::UNKNOWN_READS;
        with_cc!(self.db.protocol, P => self.index_scan_keys_as::<P>(idx, range))
    }

    fn index_scan_keys_as<P: Cc>(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
    ) -> Result<Vec<Row>> {
        let (lo, hi) = self.index_bounds(idx, &range)?;
        let si: &Arc<SecondaryIndex> = &idx.inner;
        self.settle_table::<P>(&idx.table.inner)?;
        let mut out = Vec::new();
        if self.read_only {
            let _guard = epoch::pin();
            let mode = ScanMode::new(false, false);
            let answered =
                index::scan_keys(&mut Through::<P>::new(self), si, &lo, &hi, mode, |k| {
                    out.push(decode_values(k))
                });
            if answered.is_some() {
                return Ok(out);
            }
        }
        let pk = &idx.table.inner.schema.primary_key;
        let cols: Vec<usize> = si.columns.iter().chain(pk).copied().collect();
        self.index_scan_as::<P>(idx, range, |r| {
            out.push(cols.iter().map(|&c| r[c].clone()).collect());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Checks a scan of `idx` and returns its byte bounds.
    pub(super) fn index_bounds(
        &self,
        idx: &Index,
        range: &impl RangeBounds<Key>,
    ) -> Result<(
        Bound<crate::index::key::EncodedKey>,
        Bound<crate::index::key::EncodedKey>,
    )> {
        self.check_open(&idx.table)?;
        let si: &Arc<SecondaryIndex> = &idx.inner;
        if si.owner != self.db.id {
            return Err(Error::Schema(format!(
                "index {} belongs to another database",
                si.name
            )));
        }
        if si.dropped.load(SeqCst) {
            return Err(Error::Schema(format!("index {} was dropped", si.name)));
        }
        let ti: &TableInner = &idx.table.inner;
        for b in [range.start_bound(), range.end_bound()] {
            if let Bound::Included(k) | Bound::Excluded(k) = b {
                check_prefix(&ti.schema, &si.columns, || format!("index {}", si.name), k)?;
            }
        }
        Ok(prefix_bounds(range))
    }

    fn index_scan_as<P: Cc>(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<usize> {
        let (lo, hi) = self.index_bounds(idx, &range)?;
        let si: &Arc<SecondaryIndex> = &idx.inner;
        let ti: &TableInner = &idx.table.inner;
        // Our buffered writes (`deferred`) go on their rows and entries.
        self.settle_table::<P>(ti)?;
        let _guard = epoch::pin();
        let rw = !self.read_only;
        if rw {
            P::before_scan(self, &si.predicate_read_ts);
        }
        let mode = ScanMode::new(rw, rw && P::VALIDATES_SCANS);
        // The caller's `f` is timed apart (`breakdown`): the scan's own
        // time is the index's, less the rows read inside it.
        let (bd, slot) = (
            self.db.breakdown.clone().filter(|_| self.timing),
            crate::tid::TidTable::slot_index(self.tid),
        );
        let mut f = f;
        let f = |r: &[Value]| match &bd {
            None => f(r),
            Some(b) => {
                let m = b.start(slot);
                let flow = f(r);
                b.charge(slot, crate::breakdown::Component::Caller, m);
                flow
            }
        };
        let scanned = super::timed!(
            self,
            Index,
            index::scan(&mut Through::<P>::new(self), ti, si, &lo, &hi, mode, f)
        );
        let mut scanned = match scanned {
            Ok(r) => r,
            Err(e) => return self.fail(e),
        };
        if let Some(sec) = scanned.sec.take() {
            let hi = scanned.read_up_to(hi);
            let mut s = crate::cc::predicate::ScanEntry::range(ti, lo, hi, Vec::new());
            s.sec = Some(Box::new(sec));
            self.scans.push(s);
        }
        Ok(scanned.rows)
    }
}
