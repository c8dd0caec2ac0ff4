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

use crate::storage::version::{Version, TID_MARK};
use crate::table::TableInner;
use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One obsolete version: `(commit ts of the overwriter, table id, tuple id)`.
pub type Garbage = (u64, u32, u64);

#[derive(Default)]
pub struct GcQueue {
    queue: Mutex<VecDeque<Garbage>>,
    /// Serialises passes: one collector at a time, the others skip.
    running: Mutex<()>,
}

impl GcQueue {
    pub fn push(&self, items: impl Iterator<Item = Garbage>) {
        self.queue.lock().extend(items);
    }

    /// Cuts the chains of every queued row whose overwriter committed at or
    /// before `horizon`. Returns the number of versions freed, or None if
    /// another pass is running.
    pub fn collect(
        &self,
        horizon: u64,
        table: impl Fn(u32) -> Option<Arc<TableInner>>,
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
        for (i, &(_, tab, tuple)) in ready.iter().enumerate() {
            if last.as_ref().map(|t| t.id) != Some(tab) {
                last = table(tab);
            }
            if let Some(t) = &last {
                freed += prune_chain(t.rows.head(tuple), horizon, &guard);
            }
            if i % 1024 == 1023 {
                guard.flush();
            }
        }
        Some(freed)
    }
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
