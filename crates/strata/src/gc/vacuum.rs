//! Tuple-level garbage collection: background vacuuming (VAC) and
//! cooperative cleaning (COOP), Peloton §5.
//!
//! Transaction-level GC (the parent module) is told which rows each commit
//! dirtied. Tuple-level GC is not: it looks at the rows themselves. A
//! vacuum pass walks a table's tuples and, per row, finds the newest
//! committed version at or below the horizon (`keep`): everything older is
//! invisible to every open snapshot and is cut off (the same per-row
//! pruning as transaction-level GC, [`super::prune_row`]), and a row whose
//! `keep` is a tombstone is unlinked whole (index entry, slot, limbo).
//!
//! To not rescan a large, mostly cold table, writers set one bit per block
//! of [`BLOCK_TUPLES`] tuples in a *dirty-block bitmap*; the vacuum clears a
//! block's bit before it scans the block, skips clean blocks, and sets the
//! bit again for a block that still holds rows with more than one version
//! (garbage not below the horizon yet, e.g. under a long reader):
//!
//! ```text
//!  bitmap   1 0 0 1 0 ...         GC thread k of n scans blocks b with
//!  blocks  [0 ][1 ][2 ][3 ][4 ]   b % n == k whose bit is set
//!           ^vacuum       ^vacuum
//! ```
//!
//! COOP (append-only O2N only): a worker walking a chain from its oldest
//! end meets the obsolete versions first; when the version after the head
//! is committed at or below the (cached) horizon, the head is garbage, and
//! the worker moves the slot forward by compare-and-swap (one winner per
//! prefix) and retires the prefix. Rows nobody touches again ("dusty
//! corners") are left to a periodic full pass by one background thread.
//! `tests/coop_model.rs` runs `cooperate` under shuttle against another
//! cleaner, a vacuum and an unlink.
//!
//! ```text
//!  slot ──> v1 ──> v2 ──> v3(begin 40) ──> v4(begin 90)    horizon 50
//!  slot ─────────────────> v3 ──> v4       v1, v2 retired by the reader
//! ```

use super::{prune_row, Garbage, MayRemove, Pruned};
use crate::options::VersionStorage;
use crate::storage::indirection::MAX_TUPLES;
use crate::storage::version::{Version, TID_MARK};
use crate::table::TableInner;
use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Tuples per dirty-block bit.
pub const BLOCK_TUPLES: u64 = 4096;
const WORDS: usize = (MAX_TUPLES / BLOCK_TUPLES / 64) as usize;

/// One bit per block of tuples: set by writers, cleared by the vacuum.
pub struct DirtyBlocks {
    words: Box<[AtomicU64]>,
}

impl Default for DirtyBlocks {
    fn default() -> Self {
        DirtyBlocks {
            words: (0..WORDS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl DirtyBlocks {
    /// Marks the block of `tuple` modified. A load first: in a hot block the
    /// bit is usually set already, and a plain load keeps the line shared.
    #[inline]
    pub fn mark(&self, tuple: u64) {
        let b = tuple / BLOCK_TUPLES;
        let w = &self.words[(b / 64) as usize];
        let bit = 1u64 << (b % 64);
        if w.load(Ordering::Relaxed) & bit == 0 {
            w.fetch_or(bit, Ordering::SeqCst);
        }
    }

    /// Clears the bit of `block`; returns whether it was set.
    fn take(&self, block: u64) -> bool {
        let bit = 1u64 << (block % 64);
        let w = &self.words[(block / 64) as usize];
        w.load(Ordering::SeqCst) & bit != 0 && w.fetch_and(!bit, Ordering::SeqCst) & bit != 0
    }

    fn set(&self, block: u64) {
        self.words[(block / 64) as usize].fetch_or(1 << (block % 64), Ordering::SeqCst);
    }
}

/// What one vacuum pass over some blocks did.
#[derive(Default, Debug, Clone, Copy)]
pub struct PassReport {
    pub freed: u64,
    pub blocks_scanned: u64,
    pub blocks_skipped: u64,
}

/// Which blocks a pass visits.
#[derive(Clone, Copy)]
pub struct Partition {
    pub index: u64,
    pub count: u64,
    /// Scan every block, dirty or not (COOP's dusty-corner pass).
    pub full: bool,
}

/// Vacuums the blocks of `t` in `part`. Rows that become unlinked (deleted)
/// are pushed to `unlinked` as (tuple, head) for the caller's limbo.
/// The caller holds `part`'s lock, so no other pass touches these rows.
pub fn vacuum_table(
    t: &TableInner,
    part: Partition,
    horizon: u64,
    may_remove: MayRemove<'_>,
    unlinked: &mut Vec<(u64, *mut Version)>,
) -> PassReport {
    let mut rep = PassReport::default();
    let used = t.rows.capacity_used();
    let blocks = used.div_ceil(BLOCK_TUPLES);
    let mut b = part.index;
    while b < blocks {
        let dirty = t.dirty.take(b);
        if !dirty && !part.full {
            rep.blocks_skipped += 1;
            b += part.count;
            continue;
        }
        rep.blocks_scanned += 1;
        // Pinned per block, not per pass: a pass over a large table must not
        // hold back every other thread's reclamation.
        let guard = epoch::pin();
        let mut leftover = false;
        let end = ((b + 1) * BLOCK_TUPLES).min(used);
        for tuple in b * BLOCK_TUPLES..end {
            let r = vacuum_row(t, tuple, horizon, may_remove, &guard);
            rep.freed += r.freed;
            leftover |= r.leftover;
            if let Some(h) = r.unlinked {
                unlinked.push((tuple, h));
            }
        }
        if leftover {
            t.dirty.set(b);
        }
        drop(guard);
        b += part.count;
    }
    rep
}

struct RowResult {
    freed: u64,
    leftover: bool,
    unlinked: Option<*mut Version>,
}

#[inline]
fn committed_at_or_below(v: &Version, horizon: u64) -> bool {
    let b = v.begin.load(Ordering::SeqCst);
    b & TID_MARK == 0 && b <= horizon
}

/// Prunes one row below its newest committed version at or below the
/// horizon (`keep`), or unlinks it if `keep` is its newest version and a
/// tombstone.
fn vacuum_row(
    t: &TableInner,
    tuple: u64,
    horizon: u64,
    may_remove: MayRemove<'_>,
    guard: &Guard,
) -> RowResult {
    let mut out = RowResult {
        freed: 0,
        leftover: false,
        unlinked: None,
    };
    let head = t.rows.head(tuple);
    if head.is_null() {
        return out;
    }
    let mut keep = std::ptr::null_mut();
    // Whether any version is newer than `keep` (it will be garbage later).
    let mut newer = false;
    let mut len = 0u64;
    let mut v = head;
    match t.storage {
        VersionStorage::AppendOldToNew => {
            // Oldest first; committed versions are in commit order and only
            // the tail may be uncommitted: keep the last one at or below.
            while !v.is_null() {
                // SAFETY: pinned; chain versions are freed only after being
                // unlinked and an epoch passing.
                let r = unsafe { &*v };
                len += 1;
                if committed_at_or_below(r, horizon) {
                    keep = v;
                    newer = false;
                } else {
                    newer = true;
                }
                v = r.next();
            }
        }
        _ => {
            // Newest first: the first one at or below the horizon.
            while !v.is_null() {
                // SAFETY: as above.
                let r = unsafe { &*v };
                len += 1;
                if committed_at_or_below(r, horizon) {
                    keep = v;
                    break;
                }
                newer = true;
                v = r.next();
            }
        }
    }
    if keep.is_null() {
        out.leftover = len > 1;
        return out;
    }
    // SAFETY: pinned; `keep` is in the chain.
    let kv = unsafe { &*keep };
    let older = match t.storage {
        VersionStorage::AppendOldToNew => keep != head,
        _ => !kv.next().is_null(),
    };
    if !older && !kv.is_tombstone() {
        out.leftover = newer;
        return out;
    }
    let g = Garbage {
        cts: kv.begin.load(Ordering::SeqCst),
        table: t.id,
        tuple,
        version: keep,
    };
    match prune_row(t, &g, horizon, may_remove, guard) {
        Pruned::Cut(n) => {
            out.freed = n;
            // Versions newer than `keep`, or a tombstone a writer is
            // overwriting, need another look.
            out.leftover = newer || kv.is_tombstone();
        }
        Pruned::Unlinked(h) => out.unlinked = Some(h),
        Pruned::NotYet(_) => out.leftover = true,
    }
    out
}

/// COOP: called by a worker about to walk the O2N chain of `slot` from
/// `head`. If the head is obsolete (its successor is committed at or below
/// `horizon`), moves the slot past every obsolete version and retires them.
/// Returns the head to walk from and the number of versions retired.
#[inline]
pub fn cooperate(
    slot: &AtomicPtr<Version>,
    head: *mut Version,
    horizon: u64,
    passes: &RwLock<()>,
) -> (*mut Version, u64) {
    // SAFETY: the caller is pinned; chain versions are alive.
    let Some(h) = (unsafe { head.as_ref() }) else {
        return (head, 0);
    };
    let n = h.next();
    // SAFETY: as above.
    match unsafe { n.as_ref() } {
        Some(nv) if committed_at_or_below(nv, horizon) => {}
        _ => return (head, 0),
    }
    cooperate_slow(slot, head, horizon, passes)
}

#[cold]
fn cooperate_slow(
    slot: &AtomicPtr<Version>,
    head: *mut Version,
    horizon: u64,
    passes: &RwLock<()>,
) -> (*mut Version, u64) {
    let mut keep = head;
    loop {
        // SAFETY: pinned; chain versions are alive.
        let n = unsafe { (*keep).next() };
        // SAFETY: as above.
        match unsafe { n.as_ref() } {
            Some(nv) if committed_at_or_below(nv, horizon) => keep = n,
            _ => break,
        }
    }
    // Paused (an index back-fill walks every chain): leave it for later.
    let Some(_passes) = passes.try_read() else {
        return (head, 0);
    };
    // One winner per prefix: a concurrent cleaner, vacuum or unlink that
    // changed the slot first makes this fail, and nothing is retired twice.
    // (`tests/coop_model.rs` runs this function under shuttle; the slot is
    // storage's std atomic, so the model's scheduling point is explicit.)
    crate::sync::point();
    let won = if crate::sync::broken(crate::sync::Break::CoopCheckThenStore) {
        // The model's broken variant: two steps another cleaner can get
        // between (never taken outside the model build).
        let unchanged = slot.load(Ordering::SeqCst) == head;
        if unchanged {
            crate::sync::point();
            slot.store(keep, Ordering::SeqCst);
        }
        unchanged
    } else {
        slot.compare_exchange(head, keep, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    };
    if !won {
        return (slot.load(Ordering::SeqCst), 0);
    }
    let guard = epoch::pin();
    let mut n = 0;
    let mut v = head;
    while v != keep {
        // SAFETY: the prefix is unlinked from the slot by our CAS; readers
        // already in it are pinned and reach `keep` through next pointers.
        let next = unsafe { (*v).next() };
        crate::sync::retire(v, || super::retire(v, &guard));
        n += 1;
        v = next;
    }
    (keep, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// O2N chain v0 -> v1 -> v2 -> v3 (oldest first), v_i committed at
    /// i + 1.
    fn chain() -> Vec<*mut Version> {
        let mut next = std::ptr::null_mut();
        let mut v = Vec::new();
        for i in (0..4u64).rev() {
            let x = Version::alloc(None, 1, Vec::new(), next);
            // SAFETY: fresh, unshared.
            unsafe {
                (*x).begin.store(i + 1, Ordering::SeqCst);
                (*x).txn_id.store(0, Ordering::SeqCst);
            }
            v.insert(0, x);
            next = x;
        }
        v
    }

    /// The sequential steps of `cooperate` (its races are checked by
    /// `tests/coop_model.rs`): it moves the slot to the newest version at or
    /// below the horizon and retires what lies before; a cleaner whose head
    /// is stale loses the CAS and retires nothing; a head whose successor
    /// is above the horizon is left alone.
    #[test]
    fn cooperate_moves_the_slot_past_the_obsolete_prefix_once() {
        let v = chain();
        let slot = AtomicPtr::new(v[0]);
        let passes = RwLock::new(());
        let guard = epoch::pin();
        assert_eq!(cooperate(&slot, v[0], 1, &passes), (v[0], 0));
        assert_eq!(cooperate(&slot, v[0], 3, &passes), (v[2], 2));
        assert_eq!(slot.load(Ordering::SeqCst), v[2]);
        // A cleaner that loaded v0 before: the CAS fails, nothing retired.
        assert_eq!(cooperate(&slot, v[0], 4, &passes), (v[2], 0));
        assert_eq!(cooperate(&slot, v[2], 4, &passes), (v[3], 1));
        drop(guard);
        // SAFETY: v3 is the only version not retired, and unshared.
        unsafe { Version::free(v[3]) };
    }
}
