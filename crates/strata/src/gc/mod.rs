//! Transaction-level garbage collection with epochs (Peloton §5, ERMIA).
//!
//! A committing transaction hands over the rows whose previous version it
//! made obsolete, tagged with its commit timestamp. Once every open
//! transaction's snapshot is at or above that timestamp (the *horizon*), no
//! one can see anything below the newest version visible at the horizon, so
//! the chain is cut there and the tail is freed through `crossbeam-epoch`
//! (a reader that was already walking it finishes safely):
//!
//! ```text
//!  horizon = 40
//!  head ─> v(55) ─> v(38) ─╳─> v(20) ─> v(7)        cut after v(38),
//!                  newest with                     v(20), v(7) freed
//!                  begin <= 40                     when the epoch advances
//! ```
//!
//! Cutting is idempotent and order independent (an atomic swap of `next`),
//! so the queue need not be exactly in commit order.
//!
//! A deleted row whose tombstone is visible at the horizon is unlinked as a
//! whole: GC locks the tombstone like a writer, removes the index entry and
//! empties the tuple slot. Transactions open at that moment may still hold
//! pointers to its versions (read sets) or its tuple id, so the row waits in
//! *limbo* until the horizon passes the clock value of the unlink, and is
//! only then retired (epoch) and its tuple id reused:
//!
//! ```text
//!  key ─X─> tuple 9 ─X─> [tombstone] -> [v 12] ...   unlinked at clock 80
//!  horizon 81: every transaction open at 80 has ended -> retire, reuse 9
//! ```

use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::table::TableInner;
use crate::value::Key;
use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One obsolete version: `(commit ts of the overwriter, table id, tuple id)`.
pub type Garbage = (u64, u32, u64);

/// The write-lock value GC holds on a tombstone while it unlinks its row;
/// no transaction id can take it (generations never get that large).
pub const GC_TID: u64 = INF_TS;

/// Whether a deleted row (its head is a tombstone visible at the horizon)
/// may be unlinked now. Protocols that keep per-version read state on the
/// tombstone say no while a running transaction may rely on it.
pub type MayRemove<'a> = &'a dyn Fn(&Version, u64) -> bool;

/// A row unlinked from its table, freed once every transaction that was
/// open at `unlinked_at` has ended (its read set may point at the versions,
/// and its tuple id may still be in use).
struct Limbo {
    unlinked_at: u64,
    head: *mut Version,
    table: u32,
    tuple: u64,
}

// SAFETY: the versions of a limbo row are reachable from no chain and no
// index; only the collector, under the `running` lock, touches them.
unsafe impl Send for Limbo {}

#[derive(Default)]
pub struct GcQueue {
    queue: Mutex<VecDeque<Garbage>>,
    limbo: Mutex<Vec<Limbo>>,
    /// Serialises passes: one collector at a time, the others skip.
    running: Mutex<()>,
}

impl GcQueue {
    pub fn push(&self, items: impl Iterator<Item = Garbage>) {
        self.queue.lock().extend(items);
    }

    /// Cuts the chains of every queued row whose overwriter committed at or
    /// before `horizon`, unlinks rows whose newest visible version is a
    /// tombstone, and frees unlinked rows no open transaction can hold.
    /// `now` is the clock when `horizon` was computed. Returns the number of
    /// versions freed, or None if another pass is running.
    pub fn collect(
        &self,
        horizon: u64,
        now: u64,
        table: impl Fn(u32) -> Option<Arc<TableInner>>,
        may_remove: MayRemove<'_>,
    ) -> Option<u64> {
        let _running = self.running.try_lock()?;
        let mut ready = Vec::new();
        {
            let mut q = self.queue.lock();
            while let Some(&(cts, _, _)) = q.front() {
                if cts > horizon {
                    break;
                }
                ready.push(q.pop_front().expect("front exists"));
            }
        }
        let guard = epoch::pin();
        let mut freed = 0;
        let mut last: Option<Arc<TableInner>> = None;
        let mut retry = Vec::new();
        let mut unlinked = Vec::new();
        for (i, &(_, tab, tuple)) in ready.iter().enumerate() {
            if last.as_ref().map(|t| t.id) != Some(tab) {
                last = table(tab);
            }
            let Some(t) = &last else { continue };
            match prune_row(t, tuple, horizon, may_remove, &guard) {
                Pruned::Cut(n) => freed += n,
                Pruned::Unlinked(head) => unlinked.push(Limbo {
                    unlinked_at: now,
                    head,
                    table: tab,
                    tuple,
                }),
                Pruned::NotYet(after) => retry.push((after, tab, tuple)),
            }
            if i % 1024 == 1023 {
                guard.flush();
            }
        }
        if !retry.is_empty() {
            self.queue.lock().extend(retry);
        }
        let mut limbo = self.limbo.lock();
        limbo.extend(unlinked);
        limbo.retain(|l| {
            if l.unlinked_at >= horizon {
                return true;
            }
            freed += retire_chain(l.head, &guard);
            if let Some(t) = table(l.table) {
                t.rows.release(l.tuple, &guard);
            }
            false
        });
        Some(freed)
    }
}

enum Pruned {
    /// The chain was cut; this many versions were retired.
    Cut(u64),
    /// The whole row was unlinked (its head returned).
    Unlinked(*mut Version),
    /// A deleted row that cannot be unlinked yet: retry once the horizon
    /// passes this timestamp.
    NotYet(u64),
}

/// Prunes one row: unlinks it if it is deleted for every open snapshot,
/// otherwise cuts its chain below the newest version visible at `horizon`.
fn prune_row(
    t: &TableInner,
    tuple: u64,
    horizon: u64,
    may_remove: MayRemove<'_>,
    guard: &Guard,
) -> Pruned {
    let head = t.rows.head(tuple);
    // SAFETY: pinned; chain versions are alive.
    if let Some(h) = unsafe { head.as_ref() } {
        let b = h.begin.load(Ordering::SeqCst);
        if h.is_tombstone() && b & TID_MARK == 0 && b <= horizon {
            if !may_remove(h, horizon) {
                return Pruned::NotYet(horizon + 1);
            }
            // Lock it like a writer would, so no insert can resurrect the
            // row while we unlink it.
            if h.txn_id
                .compare_exchange(0, GC_TID, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                if t.rows.head(tuple) == head {
                    let ek = t.encode(&Key(h.data().to_vec()));
                    t.index.remove(&ek, tuple);
                    t.rows.slot(tuple).store(ptr::null_mut(), Ordering::SeqCst);
                    return Pruned::Unlinked(head);
                }
                h.txn_id.store(0, Ordering::SeqCst);
            }
            // A writer is overwriting the tombstone; its commit queues the
            // row again.
        }
    }
    Pruned::Cut(prune_chain(head, horizon, guard))
}

/// Cuts the chain below the newest version visible at `horizon` and defers
/// the freeing of the tail. Returns how many versions were unlinked.
pub fn prune_chain(head: *mut Version, horizon: u64, guard: &Guard) -> u64 {
    let mut v = head;
    while !v.is_null() {
        // SAFETY: chain versions are freed only after being unlinked and an
        // epoch has passed; we are pinned, so `v` is alive.
        let r = unsafe { &*v };
        let b = r.begin.load(Ordering::SeqCst);
        if b & TID_MARK == 0 && b <= horizon {
            let tail = r.next.swap(ptr::null_mut(), Ordering::AcqRel);
            return retire_chain(tail, guard);
        }
        v = r.next();
    }
    0
}

/// Defers the destruction of every version from `v` down.
pub fn retire_chain(mut v: *mut Version, guard: &Guard) -> u64 {
    let mut n = 0;
    while !v.is_null() {
        // SAFETY: the tail was unlinked by our swap, so only readers that were
        // already pinned can reach it; they stay safe until the epoch moves on.
        let next = unsafe { (*v).next() };
        retire(v, guard);
        v = next;
        n += 1;
    }
    n
}

/// Frees one unlinked version once no pinned thread can hold it.
pub fn retire(v: *mut Version, guard: &Guard) {
    struct Retired(*mut Version);
    // SAFETY: the version is unlinked; whichever thread runs the deferred
    // free owns it exclusively by then.
    unsafe impl Send for Retired {}
    let r = Retired(v);
    // SAFETY: `v` came from Version::alloc, is unlinked from every chain (no
    // new reference can be made), is retired exactly once, and the closure
    // runs only after every thread pinned now has unpinned.
    unsafe {
        guard.defer_unchecked(move || {
            let r = r;
            Version::free(r.0)
        });
    }
}
