//! Indexes: the order-preserving key encoding, the primary index, and
//! secondary indexes behind one seam.
//!
//! The engine reaches a secondary index only through the functions of this
//! module, which pick the index's kind with [`with_index_kind!`] (the one
//! exhaustive `match` on [`IndexPointers`]) and call the kind's
//! [`SecondaryIndexKind`] implementation, monomorphised:
//!
//! ```text
//!  txn (write path)  ─ on_write ─────────┐
//!                    ─ on_replace_own    │
//!                    ─ on_commit(cts)    │          ┌─> logical::Logical<TupleId>
//!                    ─ on_abort          ├─ with_index_kind!(pointers, K => K::..)
//!  txn (index_scan)  ─ scan(range, snap) │          ├─> logical::Logical<PrimaryKey>
//!  cc  (commit)      ─ validate          │          └─> physical::Physical
//!  gc (prune_row)    ─ before_prune      │
//!                    ─ on_unlink         │
//!                    ─ retry_deferred ───┘
//!  DDL (create_index) backfill, check_unique; Stats: stats
//! ```
//!
//! What an operation needs from the transaction running it comes in as an
//! [`IndexTxn`] (own tid, snapshot, the TID table, the list of entries it
//! added, and the protocol's read and insert checks): `txn::index_ops`
//! implements it over the protocol `P: Cc`, so index code never names the
//! transaction type and protocol hooks stay resolved at compile time.
//!
//! Each kind owns its entries' invariants:
//! - **every kind**: an entry a transaction added is removed (`on_abort`)
//!   before the version it serves is retired, and GC removes an entry
//!   (`before_prune`, `on_unlink`) before the versions it names go; a scan
//!   returns each row visible to the snapshot under its current key, once.
//! - **logical** (`logical.rs`: tuple-id or primary-key pointers): a row has
//!   one entry per distinct index key among the versions in its chain;
//!   entries never decide visibility (the reader resolves the entry to the
//!   row, reads its visible version and keeps it only if that version has
//!   the entry's key); stale keys are removed under the row's write lock.
//! - **physical** (`physical.rs`): one entry per version, naming it; a
//!   read-only scan decides visibility from the entry's version alone.
//!
//! A kind is fixed per database (`Options::index_pointers`), so every index
//! of a table has the same one: per-index operations dispatch on the
//! index's `pointers`, per-table ones (writes, GC) on
//! `TableIndexes::kind`, set when the table's first index is created.
//! `common.rs` holds what today's kinds share (an entry leads to a row;
//! storage answers visibility). A kind that decides visibility itself
//! (MV-PBT's records) implements the trait without it.

pub mod btree;
pub mod hash;
pub mod key;
pub mod primary;
pub mod scan_log;
pub mod secondary;
pub mod table;

mod common;
pub(crate) mod logical;
pub mod mvpbt;
pub(crate) mod mvpbt_spill;
pub(crate) mod physical;

pub(crate) use common::{SecScan, SecWrite, SecWrites};

use super::table::TableInner;
use crate::error::{ConflictKind, Result};
use crate::index::key::EncodedKey;
use crate::options::{IndexKind, IndexPointers};
use crate::storage::version::Version;
use crate::storage::PrunePlan;
use crate::tid::TidTable;
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use secondary::SecondaryIndex;
use std::collections::VecDeque;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What an index operation needs from the transaction that runs it.
///
/// Implemented by the transaction side (`txn::index_ops`) over the
/// protocol, so the protocol's read and insert checks are static calls.
pub(crate) trait IndexTxn {
    /// The conflict to report when a unique key's holder committed after
    /// our snapshot (for us the key is free, yet we cannot take it);
    /// `None` where the protocol reads the newest state, for which it is a
    /// plain duplicate.
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind>;

    /// Our TID-table slot: the `txn_id` of rows we lock and the
    /// `TID_MARK | tid` of our uncommitted versions.
    fn tid(&self) -> u64;
    /// The timestamp our reads see.
    fn snapshot_ts(&self) -> u64;
    /// The TID table, to decide stamps of transactions still committing.
    fn tids(&self) -> &TidTable;
    /// Whether `v` is a version we created.
    fn is_own(&self, v: *mut Version) -> bool;
    /// The entries we added so far (removed again if we abort).
    fn sec_writes(&mut self) -> &mut SecWrites;
    /// Reads `tuple` as the protocol reads (with its read bookkeeping for
    /// a read-write transaction, a plain snapshot read for a read-only
    /// one). Null: nothing visible.
    fn read_row(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version>;
    /// May we add a key to a key space whose predicate timestamp word is
    /// `predicate_ts` (MVTO: not below a later scanner's timestamp)?
    fn check_insert(&self, predicate_ts: &AtomicU64) -> Result<(), ConflictKind>;
    /// The live snapshots now, as garbage collection sees them (its
    /// horizon bounded by the protocol): MV-PBT drops records none of them
    /// can see when it freezes a partition.
    fn snapshots(&self) -> crate::tid::snapshots::Snapshots;
    /// The horizon garbage collection last published (0: none yet): every
    /// open and future snapshot is at or above it.
    fn horizon(&self) -> u64;
}

/// How a scan reads the rows its entries lead to.
#[derive(Clone, Copy)]
pub(crate) struct ScanMode<'a> {
    /// A read-write transaction: rows are read through the protocol (once
    /// each per scan). Otherwise a read-only snapshot.
    pub rw: bool,
    /// Remember what was seen, for commit-time re-validation (returned as
    /// a [`SecScan`]).
    pub record: bool,
    /// Which identities the caller's walk has passed, when the scan is one
    /// step of a longer walk (a lazy `index_range` scans one identity at a
    /// time, from either end): a row read but not handed over whose
    /// version sits under such an identity was lost (see
    /// `common::ScanReads::finish`). None: the scan is the whole walk, and
    /// it passed what it read up to where it stopped.
    pub passed: Option<Passed<'a>>,
}

/// Whether an outer walk passed an identity (see [`ScanMode::passed`]).
pub(crate) type Passed<'a> = &'a dyn Fn(&[u8]) -> bool;

impl ScanMode<'_> {
    /// A whole scan (no outer walk).
    pub(crate) fn new(rw: bool, record: bool) -> Self {
        ScanMode {
            rw,
            record,
            passed: None,
        }
    }
}

/// One kind of secondary index, as the engine sees it. Implementations are
/// zero-sized types; state lives in [`SecondaryIndex`] (the entries) and
/// in the transaction's [`SecWrites`].
pub(crate) trait SecondaryIndexKind {
    /// Whether this type implements indexes of `kind` under the database's
    /// pointer scheme `pointers` (what [`with_index_kind!`] maps there).
    fn implements(kind: IndexKind, pointers: IndexPointers) -> bool;

    /// Whether the kind's scans use the index's count of added entries
    /// (`secondary::Additions`, `SecScan::additions_at`): only then does
    /// its tree count them (a kind that does not, physical pointers with
    /// an entry a version, pays nothing on its writes).
    const COUNTS_ADDITIONS: bool = false;

    /// A write installed version `v` of `tuple` with row `new` over `prev`
    /// (null: a fresh insert), under the row's write lock: add the entries
    /// `v` needs to every live index of `list`, record them in
    /// `cx.sec_writes()`, and check unique indexes. `v` may also be our own
    /// uncommitted `prev` that is about to be replaced (see
    /// `on_replace_own`). On error nothing was added. `list` holds only
    /// indexes of this kind.
    fn on_write<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()>;

    /// A delete installed tombstone `v` of `tuple` over `prev` (the row
    /// `old`), under the row's write lock. Today's kinds have nothing to
    /// do: their entries stay until GC unlinks the row. On error nothing
    /// was added.
    #[inline(always)]
    fn on_delete<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
        old: &[Value],
    ) -> Result<()> {
        let _ = (cx, t, list, tuple, prev, v, old);
        Ok(())
    }

    /// Whether entry `w` puts a new key into the index's key space (what
    /// SSN/SSI scan records treat as a possible phantom). An entry of
    /// today's kinds always does; an MV-PBT anti-record or tombstone does
    /// not.
    #[inline(always)]
    fn adds_key(w: &SecWrite) -> bool {
        let _ = w;
        true
    }

    /// A covering scan: calls `f` on the identity (`enc(index key) ++
    /// enc(primary key)`) of each row visible to the scanning transaction
    /// in `[lo, hi]`, in order, from the index alone. None: this kind (or
    /// this mode) cannot answer without reading rows, and nothing was
    /// called.
    #[inline(always)]
    fn scan_keys<C: IndexTxn>(
        cx: &mut C,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode<'_>,
        f: impl FnMut(&[u8]),
    ) -> Option<usize> {
        let _ = (cx, idx, lo, hi, mode, f);
        None
    }

    /// A lazy range's next batch (`Transaction::index_range`): the
    /// identities (`enc(index key) ++ enc(primary key)`) of about `max`
    /// entries of `[lo, hi]` nearest its low end (`from_high` false,
    /// appended to `out` ascending) or its high end (descending), and
    /// what of `[lo, hi]` is left to list (None: the batch reached the
    /// other end). An identity is listed whole: the part left holds none
    /// of its entries, wherever they lie, so a scan of one listed identity
    /// (`[ident, prefix_end(ident))`) sees every record that decides it.
    fn batch(
        idx: &SecondaryIndex,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        from_high: bool,
        max: usize,
        out: &mut VecDeque<Box<[u8]>>,
    ) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)>;

    /// Our uncommitted version `own` of `tuple` was replaced by `v` (whose
    /// entries `on_write` added naming `own`): entries naming `own` move to
    /// `v` or go. Runs before `own` is retired. `cx.sec_writes()` holds
    /// every kind's entries: touch only your own ([`is_mine`]). An entry
    /// that goes in anew answers to `cx.check_insert` as `on_write`'s do;
    /// on that error the move is complete all the same (the caller rolls
    /// the transaction back).
    fn on_replace_own<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) -> Result<()>;

    /// The transaction that added `w` committed at `cts` (after COMMITTED,
    /// before its versions are stamped and its rows unlocked). Today's kinds have nothing to do:
    /// their entries carry no timestamps.
    #[inline(always)]
    fn on_commit(w: &SecWrite, cts: u64) {
        let _ = (w, cts);
    }

    /// The transaction that added `w` aborted: undo the entry (before the
    /// version it serves is retired).
    fn on_abort(w: &SecWrite);

    /// Calls `f` on each row visible to the scanning transaction whose
    /// entry lies in `[lo, hi]`, in entry order, until `f` breaks; returns
    /// the number of rows, with `mode.record` what the commit must
    /// re-validate, and the identity of the row `f` broke on (the scan
    /// read entries up to that row's and no further). An error is a
    /// read's (a conflict: the caller rolls back).
    fn scan<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode<'_>,
        f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<Scanned>;

    /// Commit-time re-scan of `sec`'s range `[lo, hi]`: false if an entry
    /// appeared that was not seen, is not among `own` (the committer's
    /// entries) and belongs to no row in `accounted()` (rows the
    /// protocol's read tracking covers; computed at most once).
    fn validate(
        t: &TableInner,
        sec: &SecScan,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        own: &[SecWrite],
        accounted: impl FnOnce() -> Vec<u64>,
    ) -> bool;

    /// GC is about to retire the versions of `tuple` that `plan` names
    /// (`storage::prune`: a tail below a survivor, a prefix, or any set of
    /// committed versions, such as a dead zone in the middle of the chain):
    /// remove the entries only those versions need. Pinned, by the row's
    /// collector.
    fn before_prune(
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        plan: PrunePlan<'_>,
        guard: &Guard,
    );

    /// GC holds the lock on the tombstone of deleted row `tuple` and is
    /// about to unlink it: remove all its entries.
    fn on_unlink(t: &TableInner, list: &[Arc<SecondaryIndex>], tuple: u64);

    /// End of a GC pass: retry what could not be done at its time.
    fn retry_deferred(t: &TableInner) {
        let _ = t;
    }

    /// DDL: entries for every committed version of `t`, into the freshly
    /// published `idx` (GC paused; writers maintain their own versions).
    fn backfill(t: &TableInner, idx: &SecondaryIndex);

    /// DDL, after a back-fill: no two rows hold one key of unique `idx` in
    /// their newest state.
    fn check_unique(t: &TableInner, idx: &SecondaryIndex) -> Result<()>;

    /// (entries, approximate bytes) of `idx`, for `Stats`.
    fn stats(idx: &SecondaryIndex) -> (u64, u64);
}

/// Runs `$body` with `$K` bound to the type implementing the index kind
/// `$key`, an `(IndexKind, IndexPointers)` pair (see
/// [`SecondaryIndex::dispatch`]): the one dispatch point from an index's
/// runtime kind to its code. Exhaustive by construction (no wildcard arm).
/// An MV-PBT index runs one type under every pointer scheme (its records
/// carry both the tuple id and the version address; the scheme picks which
/// a read follows).
macro_rules! with_index_kind {
    ($key:expr, $K:ident => $body:expr) => {
        match $key {
            (
                $crate::options::IndexKind::Standard,
                $crate::options::IndexPointers::LogicalTupleId,
            ) => {
                type $K = $crate::index::logical::Logical<$crate::index::logical::TupleId>;
                $body
            }
            (
                $crate::options::IndexKind::Standard,
                $crate::options::IndexPointers::LogicalPrimaryKey,
            ) => {
                type $K = $crate::index::logical::Logical<$crate::index::logical::PrimaryKey>;
                $body
            }
            ($crate::options::IndexKind::Standard, $crate::options::IndexPointers::Physical) => {
                type $K = $crate::index::physical::Physical;
                $body
            }
            (
                $crate::options::IndexKind::MvPbt,
                $crate::options::IndexPointers::LogicalTupleId
                | $crate::options::IndexPointers::LogicalPrimaryKey
                | $crate::options::IndexPointers::Physical,
            ) => {
                type $K = $crate::index::mvpbt::MvPbt;
                $body
            }
        }
    };
}
pub(crate) use with_index_kind;

// ------------------------------------------------ the engine's entry points

/// Whether write `w` belongs to an index of kind `K` (a transaction's
/// writes mix every kind of its tables' indexes).
#[inline]
pub(crate) fn is_mine<K: SecondaryIndexKind>(w: &SecWrite) -> bool {
    let (kind, pointers) = w.index.dispatch();
    K::implements(kind, pointers)
}

/// Whether `t` has a secondary index (the write path's fast exit): the
/// store's `indexed` flag, which DDL sets before it publishes a list with
/// an index and clears after it publishes an empty one, so false here
/// means the list read now would be empty. One load, not a pin to read
/// the list (about 23 instructions an insert or update of a table with no
/// index).
#[inline]
pub(crate) fn has_indexes(t: &TableInner) -> bool {
    t.indexed.load(std::sync::atomic::Ordering::SeqCst)
}

/// Whether one of `t`'s secondary indexes is unique (a write to such a
/// table answers a duplicate at once, so it is not deferred to commit:
/// see `txn::deferred`).
pub(crate) fn has_unique_index(t: &TableInner) -> bool {
    t.secondary.load(&epoch::pin()).iter().any(|i| i.unique)
}

/// Runs `op` on each run of same-kind indexes of `list` (kept sorted by
/// kind, see `TableIndexes::replace`); on an error, undoes what the runs
/// before it added (each kind undoes its own run's entries) and stops.
fn per_kind_run<C: IndexTxn>(
    cx: &mut C,
    list: &[Arc<SecondaryIndex>],
    mut op: impl FnMut(&mut C, &[Arc<SecondaryIndex>]) -> Result<()>,
) -> Result<()> {
    let mark = cx.sec_writes().len();
    for run in list.chunk_by(|a, b| a.kind == b.kind) {
        if let Err(e) = op(cx, run) {
            let undo: Vec<SecWrite> = cx.sec_writes().drain(mark..).collect();
            for w in undo.iter().rev() {
                with_index_kind!(w.index.dispatch(), K => K::on_abort(w));
            }
            return Err(e);
        }
    }
    Ok(())
}

/// See [`SecondaryIndexKind::on_write`].
pub(crate) fn on_write<C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    tuple: u64,
    prev: *mut Version,
    v: *mut Version,
    new: &[Value],
) -> Result<()> {
    let guard = epoch::pin();
    let list = t.secondary.load(&guard);
    if list.is_empty() {
        return Ok(());
    }
    per_kind_run(cx, list, |cx, run| {
        with_index_kind!(run[0].dispatch(), K => {
            debug_assert!(run.iter().all(|i| K::implements(i.kind, i.pointers)));
            K::on_write(cx, t, run, tuple, prev, v, new)
        })
    })
}

/// See [`SecondaryIndexKind::on_delete`]. `prev` is the locked head or our
/// own version (alive, not a tombstone).
pub(crate) fn on_delete<C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    tuple: u64,
    prev: *mut Version,
    v: *mut Version,
) -> Result<()> {
    let guard = epoch::pin();
    let list = t.secondary.load(&guard);
    // (The key may be inserted again, with other values, before GC
    // removes the row's entries.)
    for i in list.iter() {
        i.note_stale();
    }
    // Today's kinds do nothing else on a delete: skip reading the old row.
    if !list.iter().any(|i| i.kind == IndexKind::MvPbt) {
        return Ok(());
    }
    // `prev` is the head the deleter holds locked, or its own uncommitted
    // version: neither is retired while the call runs.
    common::with_prev_image(prev, |old| {
        let Some(old) = old else {
            return Ok(());
        };
        per_kind_run(
            cx,
            list,
            |cx, run| with_index_kind!(run[0].dispatch(), K => K::on_delete(cx, t, run, tuple, prev, v, old)),
        )
    })
}

/// See [`SecondaryIndexKind::on_replace_own`].
pub(crate) fn on_replace_own<C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    tuple: u64,
    own: *mut Version,
    v: *mut Version,
) -> Result<()> {
    if cx.sec_writes().is_empty() {
        return Ok(());
    }
    // No pointer scheme: the table never had an index, so no entry names
    // `own`.
    let Some(pointers) = t.secondary.kind() else {
        return Ok(());
    };
    // Every kind moves its entries before an error is answered.
    let mut r = Ok(());
    for kind in IndexKind::ALL {
        if cx.sec_writes().iter().any(|w| w.index.kind == kind) {
            let moved =
                with_index_kind!((kind, pointers), K => K::on_replace_own(cx, t, tuple, own, v));
            r = r.and(moved);
        }
    }
    r
}

/// See [`SecondaryIndexKind::on_commit`].
#[inline]
pub(crate) fn on_commit(writes: &[SecWrite], cts: u64) {
    for w in writes {
        with_index_kind!(w.index.dispatch(), K => K::on_commit(w, cts));
    }
}

/// Abort: undoes every entry the transaction added, newest first.
pub(crate) fn on_abort(writes: &mut SecWrites) {
    for w in writes.drain(..).rev() {
        with_index_kind!(w.index.dispatch(), K => K::on_abort(&w));
    }
}

/// What [`SecondaryIndexKind::scan`] read.
pub(crate) struct Scanned {
    /// Rows handed to the caller.
    pub rows: usize,
    /// With `ScanMode::record`: what the commit re-validates.
    pub sec: Option<SecScan>,
    /// The identity (`enc(index key) ++ enc(primary key)`) of the row the
    /// caller stopped the scan on; None: it read to the range's end.
    pub stopped_at: Option<Vec<u8>>,
}

impl Scanned {
    /// The upper bound of what a scan up to `stopped_at` read: every entry
    /// of that row (entries may append a suffix to the identity: a
    /// version address, a sequence number), none after.
    pub fn read_up_to(&self, hi: Bound<EncodedKey>) -> Bound<EncodedKey> {
        match &self.stopped_at {
            None => hi,
            Some(ident) => match key::prefix_end(ident) {
                Some(end) => Bound::Excluded(EncodedKey::Bytes(key::ByteKey::from_slice(&end))),
                None => hi,
            },
        }
    }
}

/// See [`SecondaryIndexKind::scan`].
pub(crate) fn scan<C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    idx: &Arc<SecondaryIndex>,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    mode: ScanMode<'_>,
    f: impl FnMut(&[Value]) -> ControlFlow<()>,
) -> Result<Scanned> {
    with_index_kind!(idx.dispatch(), K => K::scan(cx, t, idx, lo, hi, mode, f))
}

/// See [`SecondaryIndexKind::batch`].
pub(crate) fn batch(
    idx: &SecondaryIndex,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    from_high: bool,
    max: usize,
    out: &mut VecDeque<Box<[u8]>>,
) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)> {
    with_index_kind!(idx.dispatch(), K => K::batch(idx, lo, hi, from_high, max, out))
}

/// See [`SecondaryIndexKind::scan_keys`].
pub(crate) fn scan_keys<C: IndexTxn>(
    cx: &mut C,
    idx: &Arc<SecondaryIndex>,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    mode: ScanMode<'_>,
    f: impl FnMut(&[u8]),
) -> Option<usize> {
    with_index_kind!(idx.dispatch(), K => K::scan_keys(cx, idx, lo, hi, mode, f))
}

/// See [`SecondaryIndexKind::validate`].
pub(crate) fn validate(
    t: &TableInner,
    sec: &SecScan,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    own: &[SecWrite],
    accounted: impl FnOnce() -> Vec<u64>,
) -> bool {
    with_index_kind!(sec.index.dispatch(), K => K::validate(t, sec, lo, hi, own, accounted))
}

/// The entry keys in `writes` that add a key to their index, by index, as
/// scan records see them, with their rows (for SSN/SSI inserter checks).
pub(crate) fn added_keys(writes: &[SecWrite]) -> Vec<(Arc<SecondaryIndex>, EncodedKey, u64)> {
    writes
        .iter()
        .filter(|w| with_index_kind!(w.index.dispatch(), K => K::adds_key(w)))
        .map(|w| {
            (
                Arc::clone(&w.index),
                EncodedKey::Bytes(key::ByteKey::from_slice(&w.key)),
                w.tuple,
            )
        })
        .collect()
}

/// See [`SecondaryIndexKind::before_prune`]. (The table's `indexed` flag
/// first, inline: a table without indexes skips the list's load and the
/// call, about 45 instructions a version GC frees. The flag is true from
/// before a list with an index is published until after an empty one is,
/// so a false flag stands for the empty list a load would have seen.
/// Always inline: LLVM dropped a plain hint once unrelated code changed.)
#[inline(always)]
pub(crate) fn before_prune(t: &TableInner, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) {
    if has_indexes(t) {
        before_prune_indexed(t, tuple, plan, guard);
    }
}

fn before_prune_indexed(t: &TableInner, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) {
    let list = t.secondary.load(guard);
    for run in list.chunk_by(|a, b| a.kind == b.kind) {
        with_index_kind!(run[0].dispatch(), K => K::before_prune(t, run, tuple, plan, guard));
    }
}

/// See [`SecondaryIndexKind::on_unlink`].
pub(crate) fn on_unlink(t: &TableInner, tuple: u64) {
    // No pointer scheme: the table never had an index.
    let Some(pointers) = t.secondary.kind() else {
        return;
    };
    let guard = epoch::pin();
    let list = t.secondary.load(&guard);
    // Every kind hears of the unlink, with its live indexes (none: an
    // index dropped since may still have left state to clear).
    for kind in IndexKind::ALL {
        let from = list.partition_point(|i| i.kind < kind);
        let to = list.partition_point(|i| i.kind <= kind);
        with_index_kind!((kind, pointers), K => K::on_unlink(t, &list[from..to], tuple));
    }
}

/// See [`SecondaryIndexKind::retry_deferred`].
pub(crate) fn retry_deferred(t: &TableInner) {
    if let Some(pointers) = t.secondary.kind() {
        for kind in IndexKind::ALL {
            with_index_kind!((kind, pointers), K => K::retry_deferred(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Index code reaches the transaction only through `IndexTxn`: no file
    /// of index/ names `Transaction` outside its tests, so index/ can sit
    /// below txn/.
    #[test]
    fn index_code_never_names_the_transaction() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/index");
        let mut checked = 0;
        // Sources, with those of a kind's folder (`mvpbt/`); a `tests.rs`
        // is a test module, all of it.
        let mut dirs = vec![root];
        let mut files = Vec::new();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.file_name().is_some_and(|n| n != "tests.rs") {
                    files.push(p);
                }
            }
        }
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let code: String = code
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect();
            assert!(
                !code.contains("Transaction"),
                "{} names Transaction",
                p.display()
            );
            checked += 1;
        }
        assert!(checked >= 15, "read index/'s sources, mvpbt/'s too");
    }

    /// The dispatch point maps every kind and pointer scheme to the type
    /// that implements it (a swapped arm would run one scheme's code under
    /// another's name), and no type claims another's pair.
    #[test]
    fn with_index_kind_picks_the_schemes_own_type() {
        for k in IndexKind::ALL {
            for p in IndexPointers::ALL {
                assert!(with_index_kind!((k, p), K => K::implements(k, p)));
                for k2 in IndexKind::ALL {
                    for p2 in IndexPointers::ALL {
                        let same_type = k2 == k && (p2 == p || k == IndexKind::MvPbt);
                        assert_eq!(
                            with_index_kind!((k, p), K => K::implements(k2, p2)),
                            same_type,
                            "{k}/{p:?} vs {k2}/{p2:?}"
                        );
                    }
                }
            }
        }
    }
}
