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

use super::version::{Version, TID_MARK};
use crate::error::Result;
use crate::options::NonInline;
use crate::txn::tid::TidTable;
use crate::txn::visibility::{is_visible, Mode};
use crate::value::Value;
use crossbeam_epoch::Guard;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering::SeqCst};
use std::sync::Arc;

/// The newest version of an O2N chain starting at `oldest`.
#[inline]
pub fn o2n_newest(oldest: *mut Version) -> *mut Version {
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
pub fn o2n_visible(
    oldest: *mut Version,
    ts: u64,
    me: u64,
    tids: &TidTable,
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
        (NonInline::Copy, Value::Text(s)) => Value::Text(Arc::new(String::clone(s))),
        _ => v.clone(),
    }
}

/// N2O: links `v` (whose `next` is already the old head) as the new head.
#[inline]
pub fn n2o_publish(slot: &AtomicPtr<Version>, v: *mut Version) {
    slot.store(v, SeqCst);
}

/// O2N: appends `v` after the tail `prev` (null: `v` is the first version).
#[inline]
pub fn o2n_publish(slot: &AtomicPtr<Version>, prev: *mut Version, v: *mut Version) {
    // SAFETY: `prev` is locked by the caller and alive.
    match unsafe { prev.as_ref() } {
        Some(p) => p.next.store(v, SeqCst),
        None => slot.store(v, SeqCst),
    }
}

/// O2N: unlinks the tail that followed `prev` (null: the row's only version).
#[inline]
pub fn o2n_unlink_tail(slot: &AtomicPtr<Version>, prev: *mut Version) {
    // SAFETY: `prev` is locked by the caller and alive.
    match unsafe { prev.as_ref() } {
        Some(p) => p.next.store(ptr::null_mut(), SeqCst),
        None => slot.store(ptr::null_mut(), SeqCst),
    }
}

/// O2N GC: everything older than `keep` is garbage. Moves the slot forward
/// to `keep` and retires the prefix; does nothing when `keep` is no longer
/// in the chain (a later entry of the row was processed first).
pub fn o2n_prune(slot: &AtomicPtr<Version>, keep: *mut Version, guard: &Guard) -> u64 {
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
        crate::gc::retire(v, guard);
        n += 1;
        v = next;
    }
    n
}
