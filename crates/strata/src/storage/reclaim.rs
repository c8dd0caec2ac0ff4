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
//!
//! A collector's pass retires versions by the hundred; each deferred free
//! is a push into crossbeam's per-thread bag (and every 64th a sealed bag
//! onto the global queue, a shared CAS). Inside a [`RetireBatch`] the
//! versions a thread retires wait in one list that is deferred as a whole
//! when the batch closes: one deferred free per pass, not per version.
//! Deferring later than the unlink is as safe as deferring at once (a
//! reader pinned before the unlink still holds back the epoch the free
//! waits for); the batch only has to defer before it forgets.

use super::meter::Gauged;
use super::version::Version;
use crossbeam_epoch::Guard;
use std::cell::RefCell;

/// Defers the destruction of every version from `v` down the chain.
/// Returns the number retired. `gauged`: their table's flag
/// (`Store::gauged`), under which they counted their payloads. (Always
/// inline: every N2O chain cut's prune calls it, and the flag made it
/// larger; LLVM dropped a plain hint once unrelated code changed, +300
/// instructions a TPC-C transaction.)
#[inline(always)]
pub fn retire_chain(mut v: *mut Version, gauged: Gauged, guard: &Guard) -> u64 {
    let mut n = 0;
    let mut bytes = 0;
    while !v.is_null() {
        // SAFETY: the tail was unlinked by our swap, so only readers that were
        // already pinned can reach it; they stay safe until the epoch moves on.
        let next = unsafe { (*v).next() };
        bytes += retire_unmetered(v, gauged, guard);
        v = next;
        n += 1;
    }
    super::meter::retired(bytes);
    n
}

/// An object handed to the epoch's deferred free, which may run on
/// another thread.
struct Retired<T>(*mut T);

// SAFETY: per `defer_free`'s contract, whichever thread runs the deferred
// free owns the object exclusively by then; handing a `T` to another
// thread is sound only for a `T: Send` (a `T` holding an `Rc`, say, must
// not be dropped beside its other handles), hence the bound
// (`tests::retired_is_send_only_for_send_payloads`).
unsafe impl<T: Send> Send for Retired<T> {}

/// Runs `free(p)` once every thread pinned now has unpinned: the one
/// epoch-deferred free behind versions, masters and records.
///
/// # Safety
/// `p` is unreachable for new readers (unlinked), it is retired exactly
/// once, and `free` may run on any thread, which by then owns `p`.
pub(crate) unsafe fn defer_free<T: Send>(
    p: *mut T,
    guard: &Guard,
    free: impl FnOnce(*mut T) + Send,
) {
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

/// Frees one unlinked version once no pinned thread can hold it
/// (`gauged`: as for [`retire_chain`]).
#[inline]
pub fn retire(v: *mut Version, gauged: Gauged, guard: &Guard) {
    super::meter::retired(retire_unmetered(v, gauged, guard));
}

/// [`retire`], returning the bytes of `v`'s block (and of a record of its
/// own) for the caller to count (`storage::meter`; a chain's once); the
/// payloads it holds are released as it goes (`Version::retire_bytes`).
#[inline]
fn retire_unmetered(v: *mut Version, gauged: Gauged, guard: &Guard) -> usize {
    // Read now: the caller has just touched `v`; by the time the epoch
    // lets it go, its lines are cold.
    // SAFETY: `v` is alive until the deferred free below.
    let len = unsafe { (*v).len_word() };
    // SAFETY: as above; unlinked, so its owned bits and record word are
    // final (see the deferred free's comment below).
    let bytes = unsafe { Version::retire_bytes(v, len, gauged) };
    // (A full list is deferred after the borrow ends: the flush may run
    // other deferred frees on this thread.)
    let batched = BATCH.with(|b| {
        b.borrow_mut().as_mut().map(|list| {
            list.push((v, len));
            (list.len() >= BATCH_MAX).then(|| std::mem::take(list))
        })
    });
    match batched {
        Some(Some(full)) => defer_list(full, guard),
        Some(None) => {}
        // SAFETY: `v` came from Version::alloc, is unlinked from every chain
        // (no new reference can be made) and is retired exactly once; `len`
        // is its `len` word, whose flags change only while it is linked
        // (HAS_HEAP before it is shared; its owned bits when an update
        // takes its texts over or a version leaving above it hands them
        // back, which happens before the leaving run is retired).
        None => unsafe { defer_free(v, guard, move |v| Version::free_with(v, len)) },
    }
    bytes
}

/// Versions (and their `len` words) retired inside the open batch.
type RetiredBatch = Vec<(*mut Version, u64)>;

/// A batch defers itself at this length: a deferred free's run stays
/// short wherever the epoch happens to run it.
const BATCH_MAX: usize = 1024;

crate::sync::thread_local! {
    static BATCH: RefCell<Option<RetiredBatch>> = const { RefCell::new(None) };
}

/// Collects the versions this thread retires until it is dropped, then
/// defers their frees as one (see the module doc). Batches nest: an inner
/// one leaves the list to the outermost.
pub(crate) struct RetireBatch {
    outermost: bool,
}

impl RetireBatch {
    pub(crate) fn open() -> Self {
        let outermost = BATCH.with(|b| {
            let mut b = b.borrow_mut();
            let open = b.is_none();
            if open {
                // (A transaction-level pass retires about a hundred: grown
                // from empty, that was seven reallocations.)
                *b = Some(Vec::with_capacity(64));
            }
            open
        });
        RetireBatch { outermost }
    }
}

impl Drop for RetireBatch {
    fn drop(&mut self) {
        if !self.outermost {
            return;
        }
        let list = BATCH.with(|b| b.borrow_mut().take()).unwrap_or_default();
        if !list.is_empty() {
            // Also on unwinding: what was retired is unlinked and must be
            // freed. A fresh pin is a nested one inside a collector's.
            defer_list(list, &crossbeam_epoch::pin());
        }
    }
}

fn defer_list(list: RetiredBatch, guard: &Guard) {
    struct List(RetiredBatch);
    // SAFETY: every version in the list is unlinked and retired once; the
    // thread that runs the deferred free owns them all by then.
    unsafe impl Send for List {}
    let list = List(list);
    // SAFETY: as in `defer_free`: nobody can newly reach these versions, and
    // the closure runs once every thread pinned now has unpinned.
    unsafe {
        guard.defer_unchecked(move || {
            let list = list;
            for &(v, len) in &list.0 {
                // SAFETY: as in `retire`: each was allocated by
                // Version::alloc and is freed exactly once, here.
                Version::free_with(v, len);
            }
        });
    }
    // The list is one entry of crossbeam's per-thread bag, which goes to
    // the global queue (where the epoch can run it) only once it holds 64:
    // unflushed, a pass's versions waited for 63 more passes, overflowed
    // the allocation cache and cost the 50%-update YCSB mix a fifth.
    guard.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Alloc;
    use crate::{Text, Value};

    /// `Retired<T>` is `Send` exactly when `T` is. The negative half is
    /// checked at compile time: `some_item` below resolves only if one
    /// impl of `AmbiguousIfSend` applies, so with an unbounded
    /// `impl Send for Retired<T>` this module fails to compile.
    #[test]
    fn retired_is_send_only_for_send_payloads() {
        trait AmbiguousIfSend<A> {
            fn some_item() -> bool {
                true
            }
        }
        impl<T: ?Sized> AmbiguousIfSend<()> for T {}
        impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}
        trait IsSend {
            const SEND: bool = true;
        }
        impl<T: Send> IsSend for T {}
        const { assert!(<Retired<Version> as IsSend>::SEND) };
        assert!(<Retired<std::rc::Rc<u8>> as AmbiguousIfSend<_>>::some_item());
    }

    fn batched() -> Option<usize> {
        BATCH.with(|b| b.borrow().as_ref().map(Vec::len))
    }

    /// Versions retired in nested batches wait in the outermost one's
    /// list and are freed, each once, after it closes (a version's text
    /// is released by its free: the shared count falls back to one).
    #[test]
    fn a_batch_frees_its_versions_once_after_the_outermost_closes() {
        let text = Text::new("shared");
        let outer = RetireBatch::open();
        let inner = RetireBatch::open();
        {
            let guard = crossbeam_epoch::pin();
            for i in 0..10 {
                let v = Version::alloc(
                    Alloc::PLAIN,
                    i,
                    vec![Value::Int(1), Value::Text(text.clone())],
                    std::ptr::null_mut(),
                );
                retire(v, Gauged::OFF, &guard);
            }
        }
        assert_eq!(batched(), Some(10));
        drop(inner);
        assert_eq!(batched(), Some(10), "an inner batch leaves the list");
        assert_eq!(Text::strong_count(&text), 11, "nothing freed yet");
        drop(outer);
        assert_eq!(batched(), None);
        wait_for_frees(&text);
        assert_eq!(Text::strong_count(&text), 1);
    }

    /// Lets the epoch run the deferred frees until `text` is down to our
    /// handle: other tests in this process pin too (scans racing writers,
    /// for a while), and no number of flushes frees anything while one of
    /// them holds the epoch back, so it waits for the count itself (the
    /// bound only turns a lost free into a failure).
    fn wait_for_frees(text: &Text) {
        let freed = crate::test_util::eventually(|| {
            crossbeam_epoch::pin().flush();
            Text::strong_count(text) == 1
        });
        assert!(
            freed,
            "{} handles of the text left: a retired version was never freed",
            Text::strong_count(text)
        );
    }

    /// A batch that reaches `BATCH_MAX` defers what it holds at once and
    /// goes on collecting; everything is still freed once.
    #[test]
    fn a_full_batch_defers_itself_and_goes_on() {
        let text = Text::new("shared");
        let batch = RetireBatch::open();
        {
            let guard = crossbeam_epoch::pin();
            for i in 0..BATCH_MAX + 6 {
                let v = Version::alloc(
                    Alloc::PLAIN,
                    i as u64,
                    vec![Value::Text(text.clone())],
                    std::ptr::null_mut(),
                );
                retire(v, Gauged::OFF, &guard);
            }
        }
        assert_eq!(batched(), Some(6));
        drop(batch);
        wait_for_frees(&text);
        assert_eq!(Text::strong_count(&text), 1);
    }
}
