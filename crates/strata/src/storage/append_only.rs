//! Append-only version storage: every version is a separate, immutable row
//! image in the main table, chained in one of two orders.
//!
//! ```text
//!  N2O  slot ──> v3 ──> v2 ──> v1       writers swap the slot to a new head;
//!                                       readers stop at the first visible
//!  O2N  slot ──> v1 ──> v2 ──> v3       writers append at the tail (they walk
//!                                       the chain to find it); readers walk
//!                                       from the oldest; GC cuts from the
//!                                       head side and moves the slot forward
//! ```
//!
//! Both orders keep a version's address for its whole life, so protocols see
//! the same version identities; only "which version is the newest" and
//! "which is visible" depend on the direction. In an O2N chain the committed
//! versions are in commit order and an uncommitted one can only be the
//! tail, so visibility is a prefix: the reader takes the last visible
//! version before the first invisible one. The one exception is the
//! reader's own write: MVOCC lets a transaction write over a version
//! committed after its snapshot (validation aborts it later), so its own
//! tail can follow a version invisible to it, and is still what it reads.
//!
//! The invariant each order owns: every version is immutable once
//! published, and the newest version is the slot's (N2O) or the chain's
//! last (O2N). Pruning unlinks versions and needs no other repair.
//!
//! COOP (cooperative cleaning, O2N only): a worker walking a chain from
//! its oldest end meets the obsolete versions first; when the version after
//! the head is committed at or below the (cached) horizon, the head is
//! garbage, and the worker moves the slot forward by compare-and-swap (one
//! winner per prefix) and retires the prefix ([`cooperate`]).
//!
//! ```text
//!  slot ──> v1 ──> v2 ──> v3(begin 40) ──> v4(begin 90)    horizon 50
//!  slot ─────────────────> v3 ──> v4       v1, v2 retired by the reader
//! ```

use super::chain::{self, Newest, Span, Survivor, Versions};
use super::meter::Gauged;
use super::reclaim::{retire, retire_chain};
use super::version::{Version, TID_MARK};
use super::visibility::{is_visible, Mode, TxnStates};
use super::{NewRow, PrunePlan, Store, VersionStore};
use crate::error::Result;
use crate::options::{NonInline, VersionStorage};
use crate::sync::atomic::{AtomicPtr, Ordering, Ordering::SeqCst};
use crate::value::{Text, Value};
use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::RwLock;
use std::ptr;
use std::sync::Arc;

/// Append-only, newest to oldest.
pub struct N2O;

/// Append-only, oldest to newest.
pub struct O2N;

impl VersionStore for N2O {
    const SCHEME: VersionStorage = VersionStorage::AppendNewToOld;

    #[inline]
    fn install(
        s: &Store,
        tuple: u64,
        tid: u64,
        prev: *mut Version,
        row: NewRow<'_>,
    ) -> *mut Version {
        let v = alloc(s, tid, prev, row, prev);
        s.rows.slot(tuple).store(v, SeqCst);
        v
    }

    fn replace_own(
        s: &Store,
        tuple: u64,
        tid: u64,
        own: *mut Version,
        prev: *mut Version,
        row: NewRow<'_>,
        _guard: &Guard,
    ) -> *mut Version {
        let v = alloc(s, tid, own, row, prev);
        s.rows.slot(tuple).store(v, SeqCst);
        v
    }

    fn undo(s: &Store, tuple: u64, _own: *mut Version, prev: *mut Version, _guard: &Guard) {
        s.rows.slot(tuple).store(prev, SeqCst);
    }

    fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
        publish_fresh(s, tuple, tid, row)
    }

    unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
        // SAFETY: per the contract.
        unsafe { unpublish_fresh(s, tuple, v) }
    }

    #[inline]
    fn versions(s: &Store, tuple: u64, span: Span) -> Versions {
        Versions::newest_first(s.rows.head(tuple), span)
    }

    #[inline]
    fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor {
        chain::survivor_newest_first(s.rows.head(tuple), keep)
    }

    #[inline]
    fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
        match plan {
            PrunePlan::OlderThan(keep) => cut_below(keep, s.gauged, guard),
            PrunePlan::Versions(victims) => chain::remove(
                s.rows.slot(tuple),
                victims,
                Newest::First,
                |_, _| {},
                s.gauged,
                guard,
            ),
        }
    }
}

impl VersionStore for O2N {
    const SCHEME: VersionStorage = VersionStorage::AppendOldToNew;

    #[inline]
    fn newest(s: &Store, tuple: u64) -> *mut Version {
        o2n_newest(oldest(s, tuple))
    }

    #[inline]
    fn visible<T: TxnStates>(
        s: &Store,
        tuple: u64,
        ts: u64,
        me: u64,
        tids: &T,
        mode: Mode,
    ) -> Result<*mut Version> {
        o2n_visible(oldest(s, tuple), ts, me, tids, mode)
    }

    #[inline]
    fn install(
        s: &Store,
        tuple: u64,
        tid: u64,
        prev: *mut Version,
        row: NewRow<'_>,
    ) -> *mut Version {
        let v = alloc(s, tid, prev, row, ptr::null_mut());
        o2n_publish(s.rows.slot(tuple), prev, v);
        v
    }

    fn replace_own(
        s: &Store,
        tuple: u64,
        tid: u64,
        own: *mut Version,
        prev: *mut Version,
        row: NewRow<'_>,
        _guard: &Guard,
    ) -> *mut Version {
        let v = alloc(s, tid, own, row, ptr::null_mut());
        o2n_publish(s.rows.slot(tuple), prev, v);
        v
    }

    fn undo(s: &Store, tuple: u64, _own: *mut Version, prev: *mut Version, _guard: &Guard) {
        o2n_unlink_tail(s.rows.slot(tuple), prev);
    }

    fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
        publish_fresh(s, tuple, tid, row)
    }

    unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
        // SAFETY: per the contract.
        unsafe { unpublish_fresh(s, tuple, v) }
    }

    fn versions(s: &Store, tuple: u64, span: Span) -> Versions {
        Versions::oldest_first(s.rows.head(tuple), span)
    }

    #[inline]
    fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor {
        chain::survivor_oldest_first(s.rows.head(tuple), keep)
    }

    fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
        match plan {
            PrunePlan::OlderThan(keep) => o2n_prune(s.rows.slot(tuple), keep, s.gauged, guard),
            PrunePlan::Versions(victims) => {
                debug_assert!(
                    s.coop.is_none(),
                    "cooperating workers move O2N slots: a plan could retire twice"
                );
                chain::remove(
                    s.rows.slot(tuple),
                    victims,
                    Newest::Last,
                    |_, _| {},
                    s.gauged,
                    guard,
                )
            }
        }
    }
}

/// A newest-first chain's cut: everything older than `keep` (committed,
/// alive until its collector is done) is unlinked and retired (`gauged`:
/// the table's flag).
#[inline]
pub(crate) fn cut_below(keep: *mut Version, gauged: Gauged, guard: &Guard) -> u64 {
    // SAFETY: `keep` is alive until its GC entry is processed.
    let tail = unsafe { &*keep }
        .next
        .swap(ptr::null_mut(), Ordering::AcqRel);
    retire_chain(tail, gauged, guard)
}

/// The oldest end of an O2N chain to walk from; under cooperative
/// cleaning, after retiring the obsolete versions at that end.
#[inline]
fn oldest(s: &Store, tuple: u64) -> *mut Version {
    let head = s.rows.head(tuple);
    match &s.coop {
        None => head,
        // Workers retire a prefix with one CAS and no index work; a table
        // with secondary indexes leaves its chains to COOP's full pass,
        // which removes the entries of the versions it prunes first.
        Some(_) if s.indexed.load(SeqCst) => head,
        Some(c) => {
            let h = c.horizon.load(Ordering::Relaxed);
            let before = super::meter::mark();
            let (head, n) = cooperate(s.rows.slot(tuple), head, h, &c.passes, s.gauged);
            if n > 0 {
                c.reclaimed.fetch_add(n, Ordering::Relaxed);
                let freed = super::meter::mark().since(&before).bytes_retired;
                c.reclaimed_bytes.fetch_add(freed, Ordering::Relaxed);
            }
            head
        }
    }
}

/// A fresh tuple's first version.
fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
    let v = Version::alloc(s.alloc(), tid, row, ptr::null_mut());
    s.rows.slot(tuple).store(v, SeqCst);
    v
}

/// # Safety
/// As for [`super::unpublish_fresh`].
unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
    s.rows.slot(tuple).store(ptr::null_mut(), SeqCst);
    // SAFETY: per the contract nobody else saw `v`.
    unsafe { Version::into_values(v, s.gauged) }
}

/// An append-only version for `row`, derived from `base` when an update.
#[inline]
fn alloc(
    s: &Store,
    tid: u64,
    base: *mut Version,
    row: NewRow<'_>,
    next: *mut Version,
) -> *mut Version {
    let at = s.alloc();
    match row {
        NewRow::Row(r) => Version::alloc(at, tid, r, next),
        NewRow::Tombstone(k) => Version::alloc_tombstone(at, tid, k, next),
        NewRow::Update(ch) => {
            // SAFETY: `base` is locked by or belongs to the writer.
            let base = unsafe { &*base };
            // Two closures rather than a per-attribute test of the mode:
            // this is the update hot path of the default configuration.
            // Shared texts are handed over, not counted again; copied
            // ones are copies.
            match s.non_inline {
                NonInline::Shared => {
                    Version::alloc_update(at, tid, base, ch, next, true, Value::clone)
                }
                NonInline::Copy => Version::alloc_update(at, tid, base, ch, next, false, |v| {
                    carry(v, NonInline::Copy)
                }),
            }
        }
    }
}

/// The newest version of an O2N chain starting at `oldest`.
#[inline]
fn o2n_newest(oldest: *mut Version) -> *mut Version {
    let mut v = oldest;
    loop {
        // SAFETY: the caller is pinned; versions are freed only after being
        // unlinked and an epoch passing, and a retired prefix still links
        // forward into the live chain.
        let Some(r) = (unsafe { v.as_ref() }) else {
            return v;
        };
        let n = r.next();
        if n.is_null() {
            return v;
        }
        v = n;
    }
}

/// The version of the O2N chain from `oldest` visible at `ts` to `me`.
fn o2n_visible<T: TxnStates>(
    oldest: *mut Version,
    ts: u64,
    me: u64,
    tids: &T,
    mode: Mode,
) -> Result<*mut Version> {
    let mut seen = ptr::null_mut();
    let mut v = oldest;
    while !v.is_null() {
        // SAFETY: as in o2n_newest.
        let r = unsafe { &*v };
        if !is_visible(r, ts, me, tids, mode)? {
            // Our own write is the tail, whatever it follows (see the
            // module docs).
            let tail = o2n_newest(v);
            // SAFETY: as in o2n_newest.
            if me != 0 && unsafe { (*tail).begin.load(SeqCst) } == (me | TID_MARK) {
                return Ok(tail);
            }
            break;
        }
        seen = v;
        v = r.next();
    }
    Ok(seen)
}

/// A value carried unchanged into a new version.
#[inline]
pub fn carry(v: &Value, mode: NonInline) -> Value {
    match (mode, v) {
        (NonInline::Copy, Value::Text(s)) => Value::Text(Text::new(s)),
        (NonInline::Copy, Value::Bytes(b)) => Value::Bytes(Arc::new(Vec::clone(b))),
        _ => v.clone(),
    }
}

/// O2N: appends `v` after the tail `prev` (null: `v` is the first version).
#[inline]
fn o2n_publish(slot: &AtomicPtr<Version>, prev: *mut Version, v: *mut Version) {
    // SAFETY: `prev` is locked by the caller and alive.
    match unsafe { prev.as_ref() } {
        Some(p) => p.next.store(v, SeqCst),
        None => slot.store(v, SeqCst),
    }
}

/// O2N: unlinks the tail that followed `prev` (null: the row's only version).
#[inline]
fn o2n_unlink_tail(slot: &AtomicPtr<Version>, prev: *mut Version) {
    // SAFETY: `prev` is locked by the caller and alive.
    match unsafe { prev.as_ref() } {
        Some(p) => p.next.store(ptr::null_mut(), SeqCst),
        None => slot.store(ptr::null_mut(), SeqCst),
    }
}

/// O2N GC: everything older than `keep` is garbage. Moves the slot forward
/// to `keep` and retires the prefix; does nothing when `keep` is no longer
/// in the chain (a later entry of the row was processed first). `gauged`:
/// the table's flag.
pub fn o2n_prune(
    slot: &AtomicPtr<Version>,
    keep: *mut Version,
    gauged: Gauged,
    guard: &Guard,
) -> u64 {
    let head = slot.load(SeqCst);
    let mut v = head;
    while v != keep {
        if v.is_null() {
            return 0;
        }
        // SAFETY: pinned; chain versions are alive.
        v = unsafe { (*v).next() };
    }
    if head == keep {
        return 0;
    }
    // A compare-and-swap, not a store: under cooperative cleaning workers
    // move the slot forward too, and only the one that moves it retires.
    if slot.compare_exchange(head, keep, SeqCst, SeqCst).is_err() {
        return 0;
    }
    let mut n = 0;
    let mut v = head;
    while v != keep {
        // SAFETY: the prefix is unlinked from the slot; readers already in it
        // are pinned and still reach `keep` through its next pointers.
        let next = unsafe { (*v).next() };
        retire(v, gauged, guard);
        n += 1;
        v = next;
    }
    n
}

/// Whether `v` was committed at or before `horizon` (no snapshot still
/// open can need anything older below it).
#[inline]
pub fn committed_at_or_below(v: &Version, horizon: u64) -> bool {
    let b = v.begin.load(SeqCst);
    b & TID_MARK == 0 && b <= horizon
}

/// COOP: called by a worker about to walk the O2N chain of `slot` from
/// `head`. If the head is obsolete (its successor is committed at or below
/// `horizon`), moves the slot past every obsolete version and retires them.
/// Returns the head to walk from and the number of versions retired.
/// `passes` is held shared while cutting (exclusive: cuts are paused);
/// `gauged`: the table's flag.
#[inline]
pub fn cooperate(
    slot: &AtomicPtr<Version>,
    head: *mut Version,
    horizon: u64,
    passes: &RwLock<()>,
    gauged: Gauged,
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
    cooperate_slow(slot, head, horizon, passes, gauged)
}

#[cold]
fn cooperate_slow(
    slot: &AtomicPtr<Version>,
    head: *mut Version,
    horizon: u64,
    passes: &RwLock<()>,
    gauged: Gauged,
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
    // (`tests/coop_model.rs` runs this function under shuttle.)
    let won = if crate::sync::broken(crate::sync::Break::CoopCheckThenStore) {
        // The model's broken variant: two steps another cleaner can get
        // between (never taken outside the model build).
        let unchanged = slot.load(SeqCst) == head;
        if unchanged {
            slot.store(keep, SeqCst);
        }
        unchanged
    } else {
        slot.compare_exchange(head, keep, SeqCst, SeqCst).is_ok()
    };
    if !won {
        return (slot.load(SeqCst), 0);
    }
    let guard = epoch::pin();
    let mut n = 0;
    let mut v = head;
    while v != keep {
        // SAFETY: the prefix is unlinked from the slot by our CAS; readers
        // already in it are pinned and reach `keep` through next pointers.
        let next = unsafe { (*v).next() };
        crate::sync::retire(v, || retire(v, gauged, &guard));
        n += 1;
        v = next;
    }
    (keep, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Alloc;

    /// O2N chain v0 -> v1 -> v2 -> v3 (oldest first), v_i committed at
    /// i + 1.
    fn chain() -> Vec<*mut Version> {
        let mut next = std::ptr::null_mut();
        let mut v = Vec::new();
        for i in (0..4u64).rev() {
            let x = Version::alloc(Alloc::PLAIN, 1, Vec::new(), next);
            // SAFETY: fresh, unshared.
            unsafe {
                (*x).begin.store(i + 1, SeqCst);
                (*x).txn_id.store(0, SeqCst);
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
        assert_eq!(cooperate(&slot, v[0], 1, &passes, Gauged::OFF), (v[0], 0));
        assert_eq!(cooperate(&slot, v[0], 3, &passes, Gauged::OFF), (v[2], 2));
        assert_eq!(slot.load(SeqCst), v[2]);
        // A cleaner that loaded v0 before: the CAS fails, nothing retired.
        assert_eq!(cooperate(&slot, v[0], 4, &passes, Gauged::OFF), (v[2], 0));
        assert_eq!(cooperate(&slot, v[2], 4, &passes, Gauged::OFF), (v[3], 1));
        drop(guard);
        // SAFETY: v3 is the only version not retired, and unshared.
        unsafe { Version::free(v[3]) };
    }
}
