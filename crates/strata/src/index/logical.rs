//! Logical pointers (Peloton study §6): a secondary entry names the row,
//! not a version, and the reader walks the row's chain to the version it
//! sees.
//!
//! ```text
//!  TupleId     entry ──> tuple id ──> indirection[tuple] ──> head ──> ... visible
//!  PrimaryKey  entry ──> primary key ──> primary index ──> tuple id ──> head ...
//! ```
//!
//! The two schemes differ only in the entry's value and how it resolves
//! ([`Pointer`]); everything else is [`Logical`].
//!
//! Invariant: a row has one entry per distinct index key among the versions
//! in its chain, so an old snapshot still finds the row under the key it
//! had then. Entries never decide visibility: a reader resolves the entry
//! to the row, reads the version visible to it, and keeps the row only if
//! that version's own index key and primary key are the entry's, so a row
//! whose indexed column changed shows up once, under its current key. An
//! index that never held a stale entry (`SecondaryIndex::may_be_stale`:
//! only inserts of new rows so far, nothing undone, as TPC-C's customer
//! names) skips that check: each of its entries has every version's key.
//! Its scan also keeps no identity of the rows it meets for the commit's
//! re-scan: each is among the rows read, which excuse all their entries
//! (`cc::predicate::accounted_rows`).
//!
//! Writes. A write adds an entry only when the new version's index key is
//! new for the row: an update of a non-indexed column touches no secondary
//! index.
//!
//! GC. An entry is stale once no version left in the chain has its key
//! (none can be while no index of the table `may_be_stale`: then
//! `before_prune` returns at once).
//! `before_prune` collects the keys of the versions `storage::prune` is
//! about to retire that the survivor does not share, drops those a kept
//! version still has, and removes the rest under the row's write lock
//! (taken like a writer, with `GC_TID`), because a writer of the row that
//! finds the entry present relies on it. If the row is locked, the removal
//! waits in `TableIndexes::pending` (a set per row) for a later pass
//! (`retry_deferred`). Unlinking a deleted row removes all its entries
//! first. The cost is one step per retired version, plus the kept versions
//! (newest first, until every candidate key is found) when a retired key
//! differs from the survivor's: chains are read with `storage::chain`,
//! never from the head once per retired version (that was quadratic in a
//! backlog).
//!
//! ```text
//!  chain: v9 (k=7) -> v5 (k=7) -> v2 (k=3)    GC cuts below v5:
//!  entries: (3,pk) (7,pk)                      (3,pk) is stale -> removed
//! ```

use super::common::{self, EntryScheme, ScanReads, SecScan, SecWrite};
use super::secondary::SecondaryIndex;
use super::table::TableInner;
use super::{IndexTxn, ScanMode, Scanned, SecondaryIndexKind};
use crate::error::Result;
use crate::index::key::EncodedKey;
use crate::options::{IndexKind, IndexPointers};
use crate::prefetch;
use crate::storage::version::GC_TID;
use crate::storage::version::{Version, HEADER_BYTES};
use crate::storage::{self, PrunePlan, Span};
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use smallvec::SmallVec;
use std::collections::HashSet;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// What a logical entry's value holds, and how it leads to the row.
pub(crate) trait Pointer {
    const POINTERS: IndexPointers;
    /// See [`EntryScheme::REPLACES_OTHER_VALUE`].
    const REPLACES_OTHER_VALUE: bool;
    /// The entry's value for a row in `tuple`.
    fn value_for(tuple: u64) -> u64;
    /// The tuple an entry leads to (None if the row is gone).
    fn resolve(t: &TableInner, idx: &SecondaryIndex, key: &[u8], value: u64) -> Option<u64>;
}

/// The entry holds the tuple id: one hop to the row.
pub(crate) struct TupleId;

impl Pointer for TupleId {
    const POINTERS: IndexPointers = IndexPointers::LogicalTupleId;
    // A tuple id names one row: a dead row with our primary key may have
    // left an entry GC has not removed yet; ours replaces it.
    const REPLACES_OTHER_VALUE: bool = true;
    #[inline]
    fn value_for(tuple: u64) -> u64 {
        tuple
    }
    #[inline]
    fn resolve(_: &TableInner, _: &SecondaryIndex, _: &[u8], value: u64) -> Option<u64> {
        Some(value)
    }
}

/// The entry holds nothing but its key: the primary key at the key's end
/// is looked up in the primary index.
pub(crate) struct PrimaryKey;

impl Pointer for PrimaryKey {
    const POINTERS: IndexPointers = IndexPointers::LogicalPrimaryKey;
    // Every entry has the same value: another value never exists.
    const REPLACES_OTHER_VALUE: bool = false;
    #[inline]
    fn value_for(_: u64) -> u64 {
        u64::MAX
    }
    #[inline]
    fn resolve(t: &TableInner, idx: &SecondaryIndex, key: &[u8], _: u64) -> Option<u64> {
        t.index.get(&primary_key_of(t, idx, key))
    }
}

/// The primary key stored in entry key `key`, as the primary index encodes
/// it.
fn primary_key_of(t: &TableInner, idx: &SecondaryIndex, key: &[u8]) -> EncodedKey {
    let pk = &key[idx.ikey_len(key)..];
    if t.int_key && pk.len() == 9 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&pk[1..]);
        EncodedKey::U64(u64::from_be_bytes(b))
    } else {
        EncodedKey::Bytes(pk.into())
    }
}

/// A logical index kind, over its pointer.
pub(crate) struct Logical<P>(PhantomData<P>);

impl<P: Pointer> EntryScheme for Logical<P> {
    const REPLACES_OTHER_VALUE: bool = P::REPLACES_OTHER_VALUE;
    #[inline]
    fn entry_key(ident: Vec<u8>, _: *mut Version) -> Box<[u8]> {
        ident.into_boxed_slice()
    }
    #[inline]
    fn ident_of(key: &[u8]) -> &[u8] {
        key
    }
    #[inline]
    fn value_for(tuple: u64) -> u64 {
        P::value_for(tuple)
    }
    #[inline]
    fn resolve(t: &TableInner, idx: &SecondaryIndex, key: &[u8], value: u64) -> Option<u64> {
        P::resolve(t, idx, key, value)
    }
}

/// Prefetches what `x` holds out of line: the shared header of a text or
/// byte string, or (`buffer`) its bytes, which reads the header.
#[inline]
fn prefetch_heap(x: &Value, buffer: bool) {
    match x {
        Value::Text(s) if buffer => prefetch::line(s.as_ptr()),
        Value::Text(s) => prefetch::line(s.heap_ptr()),
        Value::Bytes(b) if buffer => prefetch::line(b.as_ptr()),
        Value::Bytes(b) => prefetch::line(Arc::as_ptr(b)),
        Value::Null | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {}
    }
}

/// Entries a scan takes at a time. Rows behind a scan's entries are cold
/// (Payment's by-name lookup reads a dozen customers a scan: slot, chain
/// head, row, each a cache miss in turn). Per batch the entries' slots are
/// prefetched while the tree is walked; then each row three entries
/// before its turn, the shared headers of its indexed texts two before
/// (a text's header shares a line with its first bytes; a byte string is
/// an `Arc<Vec<u8>>`: header, then bytes, each a miss), their bytes one
/// before, so the misses overlap (see `crate::prefetch`). The texts are
/// read only to compare a row with its entry, so an index that holds no
/// stale entry (`SecondaryIndex::may_be_stale`) skips their two stages:
///
/// ```text
///  walk e1..e16, slots | e(i+3): row   e(i+2): text headers   e(i+1): text bytes   e(i): read
///                                       (only while the index may hold a stale entry)
/// ```
const AHEAD: usize = 16;

impl<P: Pointer> Logical<P> {
    /// One entry of a scan: reads the row `tuple` through the protocol and
    /// hands it to `f` if the version seen still has the entry's key.
    /// Whether it did.
    #[inline]
    fn scan_one<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &SecondaryIndex,
        reads: &mut ScanReads<'_>,
        k: &[u8],
        tuple: u64,
        f: &mut impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<Option<ControlFlow<()>>> {
        let v = reads.read(cx, t, tuple)?;
        // SAFETY: pinned; `v` is at or above our visible version.
        let Some(r) = (unsafe { v.as_ref() }) else {
            // Nothing visible (an insert after our snapshot): not seen, so
            // re-validation counts it as a phantom, as a primary scan does.
            reads.missed();
            return Ok(None);
        };
        // Read after the row (see `SecondaryIndex::may_be_stale`).
        let stale = idx.may_be_stale();
        // While the index holds no stale entry, the version read has this
        // entry's key and is handed over below, so the row is among the
        // rows read, and re-validation excuses every entry of it by its
        // tuple (`cc::predicate::accounted_rows`): its identity need not
        // be kept as well (113 instructions a row, a copy of its key).
        if stale || r.is_tombstone() {
            reads.saw(k);
        }
        if r.is_tombstone() {
            return Ok(None);
        }
        let flow = storage::with_values(r, |d| {
            // None: a stale key of this row. (An index that cannot hold
            // one is not asked.)
            (!stale || idx.ident_matches(&t.schema, d, k)).then(|| f(d))
        });
        if flow.is_some() {
            reads.handed(tuple);
        }
        Ok(flow)
    }
}

impl<P: Pointer> SecondaryIndexKind for Logical<P> {
    fn implements(kind: IndexKind, pointers: IndexPointers) -> bool {
        kind == IndexKind::Standard && pointers == P::POINTERS
    }

    const COUNTS_ADDITIONS: bool = true;

    fn on_write<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()> {
        // An update that leaves an index's columns alone: the row has the
        // entry already.
        common::with_prev_image(prev, |old| {
            common::add_entries::<Self, C>(cx, t, list, tuple, v, new, old)
        })
    }

    fn on_replace_own<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        _tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        // SAFETY: both are ours and alive (`own` is unlinked from the
        // chain but retired only after this returns).
        let nv = unsafe { &*v };
        let new: Option<Vec<Value>> =
            (!nv.is_tombstone()).then(|| storage::with_values(nv, |d| d.to_vec()));
        cx.sec_writes().retain_mut(|w| {
            if w.version != own || !super::is_mine::<Self>(w) {
                return true;
            }
            // An entry names the row: one whose key `v` has stays (and now
            // serves `v`), any other goes.
            let keeps = new
                .as_ref()
                .is_some_and(|n| w.index.ident_matches(&t.schema, n, &w.key));
            if keeps {
                w.version = v;
                return true;
            }
            common::remove_added(w);
            false
        });
        // No entry goes in: nothing to check.
        Ok(())
    }

    fn on_abort(w: &SecWrite) {
        common::remove_added(w);
    }

    fn scan<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode<'_>,
        mut f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<Scanned> {
        let mut reads = ScanReads::new(mode);
        // Before the first entry: see `SecScan::additions_at`.
        let count_late = crate::sync::broken(crate::sync::Break::AdditionsCountedAfterScan);
        if !count_late {
            reads.counts_additions(|| idx.tree.additions.total());
        }
        let mut n = 0;
        let mut stopped_at = None;
        let guard = epoch::pin();
        let mut entries = idx.entries(lo, hi, &guard);
        let mut batch: SmallVec<[_; AHEAD]> = SmallVec::new();
        'batches: loop {
            // A batch of entries with their slots prefetched, then the
            // stages ahead of each entry's turn (see `AHEAD`).
            batch.clear();
            batch.extend(entries.by_ref().take(AHEAD).filter_map(|(k, v)| {
                let Some(tuple) = P::resolve(t, idx, k, v) else {
                    // (A row gone from the primary index may come back
                    // under this entry: re-validation must look.)
                    reads.missed();
                    return None;
                };
                prefetch::line(t.rows.slot(tuple));
                Some((k, tuple))
            }));
            if batch.is_empty() {
                break;
            }
            let row_bytes =
                HEADER_BYTES + 8 + t.schema.columns.len() * std::mem::size_of::<Value>();
            // The indexed texts are read only to compare a row with its
            // entry (`scan_one`), which an index with no stale entry skips:
            // then their stages are skipped too (a hint, so the flag is
            // read once here, not after each row).
            let texts = idx.may_be_stale();
            // Stage `d` entries ahead: 3 the row, 2 the shared headers of
            // its indexed text, 1 their bytes (each stage reads what the
            // one before brought in).
            let ahead = |i: usize, d: usize| {
                let Some((_, tuple)) = batch.get(i) else {
                    return;
                };
                if d < 3 && !texts {
                    return;
                }
                let head = t.rows.head(*tuple);
                if d == 3 {
                    prefetch::range(head, row_bytes);
                    return;
                }
                // SAFETY: pinned; a head loaded while pinned is retired
                // only through an epoch, and an append-only version's
                // values never change once it is shared.
                let Some(v) = (unsafe { head.as_ref() }) else {
                    return;
                };
                if v.is_in_place() || v.is_tombstone() {
                    return; // an in-place row's values are in its master
                }
                let d_row = v.data();
                for &c in &idx.columns {
                    if let Some(x) = d_row.get(c) {
                        prefetch_heap(x, d == 1);
                    }
                }
            };
            // Fill the pipeline: entry 0 through all stages, 1 through
            // two, 2 through one.
            for (i, d) in [(0, 3), (1, 3), (2, 3), (0, 2), (1, 2), (0, 1)] {
                ahead(i, d);
            }
            for i in 0..batch.len() {
                ahead(i + 3, 3);
                ahead(i + 2, 2);
                ahead(i + 1, 1);
                let (k, tuple) = batch[i];
                if let Some(flow) = Self::scan_one(cx, t, idx, &mut reads, k, tuple, &mut f)? {
                    n += 1;
                    if flow.is_break() {
                        stopped_at = Some(k.to_vec());
                        break 'batches;
                    }
                }
            }
        }
        if count_late {
            reads.counts_additions(|| idx.tree.additions.total());
        }
        Ok(Scanned {
            rows: n,
            sec: reads.finish(t, idx, lo, hi, stopped_at.as_deref()),
            stopped_at,
        })
    }

    fn batch(
        idx: &SecondaryIndex,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        from_high: bool,
        max: usize,
        out: &mut VecDeque<Box<[u8]>>,
    ) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)> {
        common::batch::<Self>(idx, lo, hi, from_high, max, out)
    }

    fn validate(
        t: &TableInner,
        sec: &SecScan,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        own: &[SecWrite],
        accounted: impl FnOnce() -> Vec<u64>,
    ) -> bool {
        common::validate::<Self>(t, sec, lo, hi, own, accounted)
    }

    /// ```text
    ///  newest first: v9 (k=7)  v5 (k=7) | v2 (k=3)     survivor v5
    ///  surviving keys {7}          retired keys {3} -> (3,pk) removed
    /// ```
    ///
    /// Cost: one step per retired version, plus, only when a retired key
    /// differs from the survivor's, one per surviving version (those above
    /// the horizon; the transaction-level queue cuts each row once per
    /// pass, below its newest ready entry).
    fn before_prune(
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        plan: PrunePlan<'_>,
        _guard: &Guard,
    ) {
        // Every version of the row has one key per index: no entry goes.
        if !list.iter().any(|i| i.may_be_stale()) {
            return;
        }
        #[allow(clippy::mutable_key_type)]
        let mut stale: HashSet<Stale> = HashSet::new();
        let cols: smallvec::SmallVec<[usize; 8]> = list
            .iter()
            .flat_map(|i| i.columns.iter().copied())
            .collect();
        let cut = common::walk_retired(t, tuple, plan, &cols, |surv, v, d| {
            for idx in list {
                let same_as_survivor =
                    surv.is_some_and(|s| idx.columns.iter().all(|&c| s.get(c) == Some(&d[c])));
                if same_as_survivor {
                    continue; // the survivor keeps this entry
                }
                let key = Self::entry_key(idx.ident(&t.schema, d), v);
                stale.insert(Stale(Arc::clone(idx), key));
            }
        });
        if !cut || stale.is_empty() {
            return;
        }
        // Keys a surviving committed version still has are not stale.
        drop_kept(t, tuple, plan, &mut stale);
        if stale.is_empty() {
            return;
        }
        remove_stale::<P>(t, tuple, stale, plan);
    }

    fn on_unlink(t: &TableInner, list: &[Arc<SecondaryIndex>], tuple: u64) {
        common::remove_row_entries::<Self>(t, list, tuple);
        if let Some(stale) = t.secondary.pending.lock().remove(&tuple) {
            for Stale(idx, key) in stale {
                idx.tree.remove_if(&key[..], P::value_for(tuple));
            }
        }
    }

    /// Retries stale entries whose rows were locked at their GC pass.
    fn retry_deferred(t: &TableInner) {
        let work = std::mem::take(&mut *t.secondary.pending.lock());
        if work.is_empty() {
            return;
        }
        let _guard = epoch::pin();
        for (tuple, stale) in work {
            if t.rows.head(tuple).is_null() {
                // Unlinked rows drained their pending entries; an empty slot
                // here is an insert being undone: retry later.
                t.secondary
                    .pending
                    .lock()
                    .entry(tuple)
                    .or_default()
                    .extend(stale);
                continue;
            }
            // Whatever was pruned is gone: every version left is kept.
            remove_stale::<P>(t, tuple, stale, PrunePlan::Versions(&[]));
        }
    }

    fn backfill(t: &TableInner, idx: &SecondaryIndex) {
        common::backfill::<Self>(t, idx);
    }

    fn check_unique(t: &TableInner, idx: &SecondaryIndex) -> Result<()> {
        common::check_unique::<Self>(t, idx)
    }

    fn stats(idx: &SecondaryIndex) -> (u64, u64) {
        idx.approx_bytes()
    }
}

/// A logical entry (index, entry key) of one row that GC found stale.
/// Equal when the index is the same object and the key the same bytes.
/// (Sets of these are keyed by the index's address and immutable bytes, so
/// the index's interior mutability cannot change a hash: hence the
/// `clippy::mutable_key_type` allowances below.)
#[derive(Clone)]
pub(crate) struct Stale(Arc<SecondaryIndex>, Box<[u8]>);

impl PartialEq for Stale {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0) && self.1 == o.1
    }
}

impl Eq for Stale {}

impl Hash for Stale {
    fn hash<H: Hasher>(&self, h: &mut H) {
        Arc::as_ptr(&self.0).hash(h);
        self.1.hash(h);
    }
}

/// Removes from `stale` the keys that a committed version `plan` keeps
/// has (`OlderThan(s)`: the versions from the newest down to `s`;
/// `Versions(gone)`: every version not in `gone`).
#[allow(clippy::mutable_key_type)]
fn drop_kept(t: &TableInner, tuple: u64, plan: PrunePlan<'_>, stale: &mut HashSet<Stale>) {
    let mut indexes: Vec<Arc<SecondaryIndex>> = Vec::new();
    for s in stale.iter() {
        if !indexes.iter().any(|i| Arc::ptr_eq(i, &s.0)) {
            indexes.push(Arc::clone(&s.0));
        }
    }
    let (span, gone): (Span, &[*mut Version]) = match plan {
        PrunePlan::OlderThan(s) => (Span::down_to(s), &[]),
        PrunePlan::Versions(gone) => (Span::ALL, gone),
    };
    let mut chain = storage::chain(t, tuple, span);
    while let Some((v, img)) = chain.step() {
        if PrunePlan::names(gone, v) {
            continue;
        }
        // Tombstones and uncommitted versions have no image here. Skipping
        // an uncommitted one only keeps fewer keys: `remove_stale` decides
        // under the row's write lock, when no uncommitted version exists.
        let Some(d) = img else { continue };
        for idx in &indexes {
            stale.remove(&Stale(Arc::clone(idx), idx.ident(&t.schema, d).into()));
        }
        // Every key found: the older kept versions cannot change that.
        if stale.is_empty() {
            break;
        }
    }
    t.secondary.count_gc_steps(chain.steps());
}

/// Removes stale entries of `tuple` under its write lock, or queues them
/// for a later pass when a writer holds it. `plan` says which versions
/// survive the prune (see `drop_kept`).
#[allow(clippy::mutable_key_type)]
fn remove_stale<P: Pointer>(
    t: &TableInner,
    tuple: u64,
    mut stale: HashSet<Stale>,
    plan: PrunePlan<'_>,
) {
    let head = storage::newest(t, tuple);
    // SAFETY: pinned by the caller; heads are alive.
    let locked = unsafe { head.as_ref() }.is_some_and(|h| {
        h.txn_id.compare_exchange(0, GC_TID, SeqCst, SeqCst).is_ok()
            && (storage::newest(t, tuple) == head || {
                h.txn_id.store(0, SeqCst);
                false
            })
    });
    if !locked {
        // A set per row: a row that stays locked across passes does not
        // queue the same entry again and again.
        t.secondary
            .pending
            .lock()
            .entry(tuple)
            .or_default()
            .extend(stale);
        return;
    }
    // Under the lock no version can be added: look again, then remove.
    drop_kept(t, tuple, plan, &mut stale);
    for Stale(idx, key) in &stale {
        idx.tree.remove_if(&key[..], P::value_for(tuple));
    }
    // SAFETY: we hold the lock on the (alive) head.
    unsafe { (*head).txn_id.store(0, SeqCst) };
}
