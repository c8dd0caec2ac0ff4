//! Transaction-level garbage collection with epochs (Peloton §5, ERMIA).
//!
//! A committing transaction hands over, for every row it overwrote, the
//! version it created, tagged with its commit timestamp. Once every open
//! transaction's snapshot is at or above that timestamp (the *horizon*),
//! every snapshot sees that version or a newer one, so everything below it
//! is garbage: the chain is cut there and the tail is freed through
//! `crossbeam-epoch` (a reader that was already walking it finishes safely):
//!
//! ```text
//!  horizon = 40, entry (cts 38, v38)
//!  head ─> v(55) ─> v(38) ─╳─> v(20) ─> v(7)        cut below v(38),
//!                                                  v(20), v(7) freed
//!                                                  when the epoch advances
//! ```
//!
//! The entry points at the version directly, so GC does not walk the row
//! from its head (that was a cache miss per update on large tables). The
//! version stays valid until its entry is processed; see [`Garbage`].

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

pub mod vacuum;

use crate::storage::{
    self,
    version::{Version, INF_TS, TID_MARK},
};
use crate::table::TableInner;
use crate::value::Key;
use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, VecDeque};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Work for GC left by a committed write: once the horizon reaches `cts`,
/// everything below `version` (the version the write created) is garbage.
///
/// `version` stays valid until the entry is processed: entries of one row
/// are queued in the order of its writes (a writer queues before it
/// unlocks), the queue is processed in order (an entry that a later ready
/// entry of its row supersedes is dropped unprocessed), a version is
/// retired only by processing a later write's entry of its row, and a row
/// unlinked from its table leaves limbo only after every entry queued
/// before the unlink has been processed (or dropped).
pub struct Garbage {
    pub cts: u64,
    pub table: u32,
    pub tuple: u64,
    pub version: *mut Version,
}

// SAFETY: see the lifetime argument above; only the collector dereferences
// `version`, under the `running` lock.
unsafe impl Send for Garbage {}

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
pub(crate) struct Limbo {
    pub(crate) unlinked_at: u64,
    /// Queue sequence number at the unlink: entries before it may point
    /// into this row.
    pub(crate) seq: u64,
    pub(crate) head: *mut Version,
    pub(crate) table: u32,
    pub(crate) tuple: u64,
}

// SAFETY: the versions of a limbo row are reachable from no chain and no
// index; only the collector, under the `running` lock, touches them.
unsafe impl Send for Limbo {}

#[derive(Default)]
pub struct GcQueue {
    /// Entries with their sequence numbers, in push order.
    queue: Mutex<(VecDeque<(u64, Garbage)>, u64)>,
    limbo: Mutex<Vec<Limbo>>,
    /// Entries of deleted rows that could not be unlinked yet
    /// (`Pruned::NotYet`), by (table, tuple), retried each pass. They stay
    /// out of the queue: a later write of the row may be queued before a
    /// re-pushed entry and, processed first, retire the tombstone the entry
    /// points at; here the later entry drops the deferred one instead.
    deferred: Mutex<HashMap<(u32, u64), Garbage>>,
    /// Serialises passes: one collector at a time, the others skip.
    running: Mutex<()>,
    /// Tuple-level GC (vacuum passes, cooperating workers) holds this
    /// shared while it cuts chains; whoever must stop every chain cut (an
    /// index back-fill) takes it exclusively.
    pub(crate) tuple_passes: Arc<RwLock<()>>,
}

impl GcQueue {
    pub fn push(&self, items: impl Iterator<Item = Garbage>) {
        let mut q = self.queue.lock();
        let (queue, seq) = &mut *q;
        for g in items {
            queue.push_back((*seq, g));
            *seq += 1;
        }
    }

    /// Cuts the chains of every queued row whose overwriter committed at or
    /// before `horizon`, unlinks rows whose newest visible version is a
    /// tombstone, and frees unlinked rows no open transaction can hold.
    /// `clock` reads the global clock. With `wait`, waits for a pass that is
    /// running; otherwise returns None then. Returns the number of versions
    /// freed.
    pub fn collect(
        &self,
        horizon: u64,
        clock: impl Fn() -> u64,
        table: impl Fn(u32) -> Option<Arc<TableInner>>,
        may_remove: MayRemove<'_>,
        wait: bool,
    ) -> Option<u64> {
        let _running = if wait {
            self.running.lock()
        } else {
            self.running.try_lock()?
        };
        let mut ready = Vec::new();
        let next_seq;
        {
            let mut q = self.queue.lock();
            let (queue, seq) = &mut *q;
            while let Some((_, g)) = queue.front() {
                if g.cts > horizon {
                    break;
                }
                ready.push(queue.pop_front().expect("front exists").1);
            }
            next_seq = *seq;
        }
        // One cut per row: the newest ready entry of a row covers the older
        // ones (everything below it is garbage), which are dropped. Cutting
        // below each of them in turn would walk the row's newer versions
        // once per entry (index cleanup), quadratic in a backlog of writes
        // (a long reader held the horizon back, or a slow pass let entries
        // pile up).
        let mut newest: HashMap<(u32, u64), usize> = HashMap::with_capacity(ready.len());
        for (i, g) in ready.iter().enumerate() {
            newest.insert((g.table, g.tuple), i);
        }
        if newest.len() < ready.len() {
            let mut i = 0;
            ready.retain(|g| {
                i += 1;
                newest[&(g.table, g.tuple)] == i - 1
            });
        }
        drop(newest);
        let mut deferred = self.deferred.lock();
        for g in ready.iter() {
            if !deferred.is_empty() {
                // Superseded: this later write's cut covers the deferred
                // tombstone (and may retire it).
                deferred.remove(&(g.table, g.tuple));
            }
        }
        let regular = ready.len();
        // Deferred entries not superseded point at tombstones that are
        // still alive (only processing a later entry of the row retires one).
        let due: Vec<(u32, u64)> = deferred
            .iter()
            .filter(|(_, g)| g.cts <= horizon)
            .map(|(k, _)| *k)
            .collect();
        ready.extend(due.iter().filter_map(|k| deferred.remove(k)));
        let guard = epoch::pin();
        let mut freed = 0;
        let mut last: Option<Arc<TableInner>> = None;
        let mut unlinked = Vec::new();
        for i in 0..ready.len() {
            prefetch_ahead(&ready, i);
            let g = &ready[i];
            debug_assert!(i < regular || !deferred.contains_key(&(g.table, g.tuple)));
            if last.as_ref().map(|t| t.id) != Some(g.table) {
                last = table(g.table);
            }
            let Some(t) = &last else { continue };
            match prune_row(t, g, horizon, may_remove, &guard) {
                Pruned::Cut(n) => freed += n,
                Pruned::Unlinked(head) => unlinked.push(Limbo {
                    unlinked_at: 0, // set below, once every unlink is done
                    seq: next_seq,
                    head,
                    table: g.table,
                    tuple: g.tuple,
                }),
                // The row's only entry in this batch: nothing later
                // supersedes it.
                Pruned::NotYet(after) => {
                    deferred.insert((g.table, g.tuple), Garbage { cts: after, ..*g });
                }
            }
            if i % 1024 == 1023 {
                guard.flush();
            }
        }
        drop(deferred);
        freed += self.retire_unlinked(unlinked, next_seq, horizon, &clock, &table, &guard);
        Some(freed)
    }

    /// Puts rows just unlinked into limbo (stamped with the clock read now,
    /// after the unlinks), and frees the limbo rows that no open
    /// transaction and no queued entry can reach any more. Returns versions
    /// freed. Tuple-level GC (which queues nothing) calls it with its own
    /// unlinks.
    pub(crate) fn retire_unlinked(
        &self,
        unlinked: Vec<Limbo>,
        seq: u64,
        horizon: u64,
        clock: &dyn Fn() -> u64,
        table: &dyn Fn(u32) -> Option<Arc<TableInner>>,
        guard: &Guard,
    ) -> u64 {
        let mut freed = 0;
        let mut unlinked = unlinked;
        // Read the clock after the unlinks: every transaction that could
        // still reach an unlinked row began before, so its snapshot is at or
        // below this value, and the horizon stays at or below it while that
        // transaction is open.
        let unlinked_at = clock();
        for l in &mut unlinked {
            l.unlinked_at = unlinked_at;
            l.seq = seq;
        }
        // Entries still queued from before an unlink may point into it.
        let oldest_queued = {
            let q = self.queue.lock();
            q.0.front().map_or(u64::MAX, |(seq, _)| *seq)
        };
        let mut limbo = self.limbo.lock();
        limbo.extend(unlinked);
        limbo.retain(|l| {
            if l.unlinked_at >= horizon || oldest_queued < l.seq {
                return true;
            }
            freed += storage::retire_row(l.head, guard);
            if let Some(t) = table(l.table) {
                t.rows.release(l.tuple, guard);
            }
            false
        });
        freed
    }

    /// The queue's next sequence number (for tuple-level unlinks: no
    /// queued entry points into their rows).
    pub(crate) fn next_seq(&self) -> u64 {
        self.queue.lock().1
    }
}

impl GcQueue {
    /// Runs `f` with garbage collection paused (an index back-fill must not
    /// race with chain cuts).
    pub fn paused<R>(&self, f: impl FnOnce() -> R) -> R {
        let _running = self.running.lock();
        // Tuple-level GC (vacuum passes, cooperating workers) cuts chains
        // under `tuple_passes` shared, not under `running`.
        let _tuple = self.tuple_passes.write();
        f()
    }

    /// Runs `f` exclusively with GC passes, unless one is running now.
    pub fn try_exclusive<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _running = self.running.try_lock()?;
        let _tuple = self.tuple_passes.try_write()?;
        Some(f())
    }
}

impl Drop for GcQueue {
    fn drop(&mut self) {
        // Rows still in limbo belong to no table any more, so the tables'
        // own teardown does not free them.
        for l in self.limbo.get_mut().drain(..) {
            // SAFETY: the database is being dropped (`&mut self`): no
            // transaction or reader exists, and limbo chains are reachable
            // from nowhere else; each row is freed once.
            unsafe { storage::free_row(l.head) };
        }
    }
}

/// Entries ahead of the one being pruned: the version to read at
/// `i + 2 * AHEAD`, the next older version (the first one a cut retires) at
/// `i + AHEAD`. A pass is a walk over cold rows; issuing their misses early
/// lets them overlap (see [`crate::prefetch`]).
fn prefetch_ahead(ready: &[Garbage], i: usize) {
    const AHEAD: usize = 8;
    if let Some(g) = ready.get(i + 2 * AHEAD) {
        crate::prefetch::line(g.version);
    }
    if let Some(g) = ready.get(i + AHEAD) {
        // SAFETY: an entry's version is alive until the entry is processed
        // (see `Garbage`): processing the earlier entries before it retires
        // only versions older than it. Its next pointer may be retired
        // meanwhile; a prefetch of it is harmless.
        crate::prefetch::line(unsafe { (*g.version).next() });
    }
}

pub(crate) enum Pruned {
    /// The chain was cut; this many versions were retired.
    Cut(u64),
    /// The whole row was unlinked (its head returned).
    Unlinked(*mut Version),
    /// A deleted row that cannot be unlinked yet: retry at every later pass
    /// whose horizon is at least this. (Not `horizon + 1`: what blocks the
    /// unlink, a read lock, a reader's timestamp at or below the clock, a
    /// writer's lock, ends without the clock moving, and a database with no
    /// more commits would keep the row forever; found by
    /// tests/gc_waiting_deletes.rs.)
    NotYet(u64),
}

/// Prunes below one committed write: unlinks the row if that write was a
/// delete that every open snapshot sees, otherwise cuts the chain below
/// the written version (its begin is `<= horizon`, so nothing older is
/// visible to anyone). Touches the row's slot only for deletes.
pub(crate) fn prune_row(
    t: &TableInner,
    g: &Garbage,
    horizon: u64,
    may_remove: MayRemove<'_>,
    guard: &Guard,
) -> Pruned {
    // SAFETY: `g.version` is alive until its entry is processed (see
    // `Garbage`), and we are pinned.
    let v = unsafe { &*g.version };
    if v.is_tombstone() {
        let newest = storage::newest(t, g.tuple);
        // SAFETY: as above; the newest version is alive while we are pinned.
        if newest != g.version
            && unsafe { newest.as_ref() }
                .is_some_and(|n| n.begin.load(Ordering::SeqCst) & TID_MARK != 0)
        {
            // An uncommitted write sits on the tombstone. If it aborts, the
            // tombstone is the row's newest version again and nothing else
            // would queue the row: keep the entry (if it commits, its own
            // entry supersedes this one).
            return Pruned::NotYet(horizon);
        }
    }
    if v.is_tombstone() && storage::newest(t, g.tuple) == g.version {
        if !may_remove(v, horizon) {
            return Pruned::NotYet(horizon);
        }
        // Lock it like a writer would, so no insert can resurrect the row
        // while we unlink it.
        if v.txn_id
            .compare_exchange(0, GC_TID, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            if storage::newest(t, g.tuple) == g.version {
                let ek = t.encode(&Key(v.data().to_vec()));
                crate::index::on_unlink(t, g.tuple);
                t.index.remove(&ek, g.tuple);
                // The slot holds the chain's first version: the tombstone
                // itself (N2O, in-place) or the oldest version (O2N).
                let head = t.rows.slot(g.tuple).swap(ptr::null_mut(), Ordering::SeqCst);
                return Pruned::Unlinked(head);
            }
            v.txn_id.store(0, Ordering::SeqCst);
        } else {
            // A writer holds the tombstone. If it commits, its entry
            // supersedes ours (see `deferred`); if it aborts, nothing else
            // would ever queue this row again and the deleted row would stay
            // linked for good (found by tests/gc_waiting_deletes.rs), so we
            // retry rather than consume the entry.
            return Pruned::NotYet(horizon);
        }
    }
    Pruned::Cut(storage::prune(t, g.tuple, g.version, guard))
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
