//! Freeing what a chain no longer links: versions, masters and records go
//! through one epoch-deferred free each.
//!
//! Whoever unlinks an object (GC cutting a chain, a writer undoing its
//! version, a prune plan) retires it here; `crossbeam-epoch` runs the free
//! once every thread that was pinned at the unlink has unpinned, so a
//! reader already walking the unlinked part finishes safely:
//!
//! ```text
//!  head ─> v9 ─> v5 ─╳─> v2 ─> v1      unlink v2.. (one store)
//!  retire(v2), retire(v1)              freed after the epoch moves on
//! ```
//!
//! The invariant: an object is retired exactly once, after it became
//! unreachable for new readers.

use super::version::Version;
use crossbeam_epoch::Guard;

/// Defers the destruction of every version from `v` down the chain.
/// Returns the number retired.
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

/// Runs `free(p)` once every thread pinned now has unpinned: the one
/// epoch-deferred free behind versions, masters and records.
///
/// # Safety
/// `p` is unreachable for new readers (unlinked), it is retired exactly
/// once, and `free` may run on any thread, which by then owns `p`.
pub(crate) unsafe fn defer_free<T>(p: *mut T, guard: &Guard, free: impl FnOnce(*mut T)) {
    struct Retired<T>(*mut T);
    // SAFETY: per the contract, whichever thread runs the deferred free
    // owns the object exclusively by then.
    unsafe impl<T> Send for Retired<T> {}
    let r = Retired(p);
    // SAFETY: the closure runs only after every thread pinned now has
    // unpinned; the caller guarantees nobody can newly reach `p`.
    unsafe {
        guard.defer_unchecked(move || {
            let r = r;
            free(r.0)
        });
    }
}

/// Frees one unlinked version once no pinned thread can hold it.
pub fn retire(v: *mut Version, guard: &Guard) {
    // Read now: the caller has just touched `v`; by the time the epoch
    // lets it go, its lines are cold.
    // SAFETY: `v` is alive until the deferred free below.
    let len = unsafe { (*v).len_word() };
    // SAFETY: `v` came from Version::alloc, is unlinked from every chain (no
    // new reference can be made) and is retired exactly once; `len` is its
    // `len` word, which never changes after allocation but for HAS_HEAP,
    // set before the version is shared.
    unsafe { defer_free(v, guard, move |v| Version::free_with(v, len)) }
}
