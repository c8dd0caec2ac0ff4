//! The atomics, locks and waiting hints of the engine's lock-free protocols,
//! switchable to the model checker's.
//!
//! Normal builds re-export `std`, `parking_lot` and `crossbeam-utils`: the
//! code that uses this module compiles exactly as if it named those crates.
//! Built with `RUSTFLAGS="--cfg strata_model"` (the loom/shuttle
//! convention; a cfg, not a Cargo feature, so that no feature unification
//! can switch a normal build), the same names are shuttle's: every load,
//! store and CAS becomes a scheduling point that shuttle controls, and the
//! shuttle tests in `tests/*model.rs` run the engine's own functions
//! instead of copies of them:
//!
//! ```text
//!  tid/mod.rs              slot claim/release, states, registered snapshots
//!  storage/version.rs      a version's header words and chain pointer
//!                          (write lock, begin/end, next, the protocol words)
//!  storage/indirection.rs  the slots (chain heads; COOP's slot CAS)
//!  storage/in_place/       the master's seqlock (write section, readers)
//!  log/buffer.rs           reserve/publish/drain and the flusher's doorbell
//!  gc/slot_queue.rs        a slot's GC queue: the count that publishes
//!                          entries, block links
//!  cc/mod.rs, index/table.rs  the clock (`Shared::clock`); a table's `dropped` flag
//!  index/btree.rs          the B+-tree's node words (versions, keys, values,
//!                          links: splits, removals, scans)
//! ```
//!
//! With those, a whole `Database` runs under shuttle: write locks,
//! installs, stamping, MV2PL read locks, MVTO read timestamps and GC's
//! horizon are the engine's own code in `tests/model.rs`. (A shuttle atomic
//! is about 100 bytes, so under the model the version header is no longer
//! 48 bytes and indirection segments are small; nothing else changes.)
//!
//! Shuttle runs every ordering as SeqCst: the models check interleavings,
//! not weak-memory reorderings (the orderings themselves are argued in the
//! comments at each step). Under the model, code built this way must run
//! inside a shuttle test: shuttle's atomics panic outside one. That is why
//! the model tests are a separate build (`.ci/run`; README, "The two
//! commands"), and why each of these modules keeps sequential unit tests in
//! the normal suite.
//!
//! [`broken`] names protocol steps a model test may break on purpose (always
//! `false`, and compiled away, outside the model build), so that each model
//! shows it can fail. [`retire`] and [`logged`] mark steps whose effect a
//! model observes through ghost logs instead (a free; a log record's place).

#[cfg(not(any(strata_model, strata_count)))]
pub mod atomic {
    pub use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
}

/// The counting build (`--cfg strata_count`): the same names, counting
/// every write by site and cache line (see [`counting`]).
#[cfg(strata_count)]
pub mod atomic {
    pub use super::counting::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
    pub use std::sync::atomic::{fence, Ordering};
}

/// Atomics that are no step of a protocol (statistics, collectors'
/// bookkeeping) but are written on a commit path: `std`'s in every build
/// except the counting one, which counts their writes too (the model
/// build keeps them out of its schedules).
pub mod counted {
    #[cfg(strata_count)]
    pub use super::counting::{AtomicBool, AtomicU64, AtomicUsize};
    #[cfg(not(strata_count))]
    pub use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
}

#[cfg(strata_count)]
pub mod counting;

/// Notes a write to `p`'s cache line at the caller, for a write that is
/// no atomic of [`atomic`] or [`counted`] (a lock taken): nothing outside
/// the counting build.
#[inline(always)]
#[track_caller]
pub fn wrote<T>(p: *const T) {
    #[cfg(strata_count)]
    counting::note(p as usize, std::panic::Location::caller());
    #[cfg(not(strata_count))]
    let _ = p;
}

/// One site's writes over a counting window (`counting::report`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteWrites {
    /// `file:line` of the write.
    pub site: String,
    pub writes: u64,
    /// Of `writes`, those to lines another thread wrote too.
    pub shared: u64,
    /// Of `shared`, those that took the line from the thread that wrote
    /// it last: the transfers between cores.
    pub moved: u64,
}

#[cfg(strata_model)]
pub mod atomic {
    pub use shuttle::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
    };
}

/// A counter on its own cache line with several owners: the clock, which
/// with LSN commit stamps is also the log's reservation counter
/// (`cc::Shared::clock`, `log::buffer`).
pub type Counter = std::sync::Arc<crossbeam_utils::CachePadded<atomic::AtomicU64>>;

/// A new [`Counter`] at `v`.
pub fn counter(v: u64) -> Counter {
    std::sync::Arc::new(crossbeam_utils::CachePadded::new(atomic::AtomicU64::new(v)))
}

#[cfg(not(strata_model))]
pub use crossbeam_utils::Backoff;
#[cfg(not(strata_model))]
pub use parking_lot::{Condvar, Mutex};
#[cfg(not(strata_model))]
pub use std::thread_local;

#[cfg(strata_model)]
pub use model::{Backoff, Condvar, Mutex};
#[cfg(strata_model)]
pub use shuttle::thread_local;

/// Spinning and sleeping while another thread finishes a step. Under the
/// model each is a yield to shuttle's scheduler, so that a waiting thread
/// lets the one it waits for run (PCT would otherwise keep running it).
pub mod thread {
    #[cfg(not(strata_model))]
    pub use std::{hint::spin_loop, thread::sleep, thread::yield_now};

    #[cfg(strata_model)]
    pub use shuttle::thread::{sleep, yield_now};

    #[cfg(strata_model)]
    pub fn spin_loop() {
        shuttle::thread::yield_now();
    }
}

/// Protocol steps that a model test can break on purpose, one at a time,
/// to show that its model catches the broken ordering.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Break {
    /// `TidTable::release` frees `begin` before it clears the id.
    ReleaseFreesSlotFirst,
    /// `TidTable::set_precommit` announces nothing: the commit timestamp is
    /// drawn while the transaction still reads as ACTIVE.
    NoPrecommit,
    /// Master readers accept a snapshot without checking `seq`.
    SeqlockNoRecheck,
    /// `LogBuffer::publish` stores a record's first word before the others.
    PublishFirstWordFirst,
    /// The flusher checks for work before it raises `flusher_sleeping`.
    FlusherChecksBeforeFlag,
    /// COOP moves the slot by a load, a compare and a store, not a CAS.
    CoopCheckThenStore,
    /// `Transaction::lock_head` takes the write lock by a load and a
    /// store, not a CAS.
    WriteLockCheckThenStore,
    /// MV2PL's `read` does not re-check the write lock (and the head) after
    /// counting itself in.
    ReadLockNoRecheck,
    /// MVTO's `read` loads the write lock before it raises `read_ts`.
    LockLoadBeforeReadTs,
    /// `gc::prune_row` asks the protocol whether a tombstone may go
    /// (`may_remove`: MVTO's read timestamp) before it locks it.
    UnlinkAsksBeforeLock,
    /// A read that finds an index entry whose tuple has left the key (slot
    /// null) answers "absent" without recording the absent read (MVTO: no
    /// ghost).
    LeftKeyReadUnrecorded,
    /// MVTO's ghost, refused by the index's tree, looks the key up again on
    /// the hash side instead of taking the row the tree holds.
    GhostLooksUpAgain,
    /// SSN's inserter reads a scan log's pruned stamp before its records.
    PrunedStampFirst,
    /// `TidTable::snapshots` scans the slots before it reads the clock.
    ScanBeforeClock,
    /// `Database::drop_table` does not wait for commits that are deciding.
    DropDoesNotWait,
    /// SIRO's writer, winning collaborative cleaning, frees the row without
    /// doing the cut the losing cutter handed it (`RowState::sorter_release`).
    CutHandoverDropped,
    /// `cc::read_only_stamp` takes `clock + 2`: the next writer's stamp.
    ReadOnlyStampOnWriters,
    /// A master reader that went to the master because its version had no
    /// full copy never looks at the copy again (SIRO's toggle gives it one).
    ReaderIgnoresNewCopy,
    /// A B+-tree scan takes a leaf's entries without validating the
    /// leaf's version (`index::btree::Iter::fill`).
    TreeScanTrustsItsRead,
    /// SSN leaves the creator of a version it overwrote out of eta (early
    /// and at commit): harmless under first-updater-wins, where that
    /// creator is in the snapshot, fatal for a blind overwrite of a newer
    /// version.
    OverwriteForgetsCreator,
    /// The collector reclaims a dropped table without waiting for the
    /// transactions open at its drop (`gc::dropped`).
    ReclaimIgnoresOpen,
    /// A GC queue's producer publishes its entries before it links the
    /// block they are in (`gc::slot_queue`).
    QueuePublishesBeforeLink,
    /// A commit installs its buffered writes (`txn::deferred`) after it
    /// drew its commit timestamp, not before.
    SettleAfterCommitStamp,
    /// A logical index scan reads the index's count of added entries
    /// (`SecScan::additions_at`) after its walk, not before its first
    /// entry.
    AdditionsCountedAfterScan,
    /// An update that moves a row to another index key notes that the
    /// index may hold a stale entry (`SecondaryIndex::note_stale`) after
    /// it adds the new entry, not before.
    StaleNotedAfterEntry,
}

/// Whether the model test broke step `b` (never, outside the model build).
#[cfg(not(strata_model))]
#[inline(always)]
pub fn broken(_b: Break) -> bool {
    false
}

#[cfg(strata_model)]
pub fn broken(b: Break) -> bool {
    model::BROKEN.with(|c| c.get() == Some(b))
}

/// What reaches the log at a [`logged`] step.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Logged {
    /// A commit's redo record (its position is reserved after the
    /// dropped-table check, before the commit is decided).
    Commit,
    /// A `DropTable` catalog record.
    DropTable,
    /// Not a record: a dropped table leaves the catalog for good
    /// (`gc::dropped`), its memory freed once no handle holds it.
    TableReclaimed,
    /// Not a record: a transaction's slot is left (`TidTable::release`,
    /// noted just before the store that frees it; [`ghost`]).
    SlotReleased,
}

/// Marks the step where record `r` is given its place in the log. Nothing
/// outside the model. Under it, `r` goes to a ghost log that the test reads
/// (`model::take_logged`): a model's database has no log (its flusher is an
/// OS thread), yet the order in which records would reach it is what some
/// protocols keep (`drop_table`: every commit before the drop, or refused).
#[cfg(not(strata_model))]
#[inline(always)]
pub fn logged(_r: Logged) {}

#[cfg(strata_model)]
pub fn logged(r: Logged) {
    // Reserving a place in the log is an atomic step of its own (the log
    // buffer's fetch-add): a scheduling point, here on a private atomic.
    shuttle::sync::atomic::AtomicBool::new(false).load(atomic::Ordering::SeqCst);
    model::LOGGED.with(|l| l.borrow_mut().push(r));
}

/// Notes `r` in the model's ghost log without a scheduling point of its
/// own (the step it marks is the atomic store that follows it): nothing
/// outside the model.
#[cfg(not(strata_model))]
#[inline(always)]
pub fn ghost(_r: Logged) {}

#[cfg(strata_model)]
pub fn ghost(r: Logged) {
    model::LOGGED.with(|l| l.borrow_mut().push(r));
}

/// A step boundary inside an operation the model otherwise runs as one
/// step (one that uses no `crate::sync` atomic, such as the primary
/// index's two halves): nothing outside the model; under it, a scheduling
/// point, so other model threads can run between the two halves.
#[cfg(not(strata_model))]
#[inline(always)]
pub fn step() {}

#[cfg(strata_model)]
pub fn step() {
    shuttle::sync::atomic::AtomicBool::new(false).load(atomic::Ordering::SeqCst);
}

/// Retires `v` by calling `free`. Under the model the pointer is logged for
/// the test's ghost bookkeeping instead, and never freed: a broken variant
/// may retire it twice, which the test must see as a failed assertion, not
/// as a double free.
#[cfg(not(strata_model))]
#[inline(always)]
pub fn retire<T>(_v: *mut T, free: impl FnOnce()) {
    free()
}

#[cfg(strata_model)]
pub fn retire<T>(v: *mut T, _free: impl FnOnce()) {
    model::RETIRED.with(|r| r.borrow_mut().push(v as usize));
}

/// What only the model build has: parking_lot-shaped locks over shuttle's,
/// and the test switches and ghost log (which the model tests reach through
/// `crate::model`, with the engine entry points they call: this module
/// imports nothing of the engine, so every module may import it).
#[cfg(strata_model)]
#[doc(hidden)]
pub mod model {
    use std::cell::{Cell, RefCell};
    use std::ops::{Deref, DerefMut};
    use std::time::Duration;

    // Per OS thread: the test harness runs each test on its own thread,
    // and shuttle runs all of a test's simulated threads on it.
    std::thread_local! {
        pub(super) static BROKEN: Cell<Option<super::Break>> = const { Cell::new(None) };
        pub(super) static RETIRED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
        pub(super) static LOGGED: RefCell<Vec<super::Logged>> = const { RefCell::new(Vec::new()) };
    }

    /// Runs `f` (a whole shuttle check) with step `b` broken.
    pub fn with_broken<R>(b: super::Break, f: impl FnOnce() -> R) -> R {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                BROKEN.with(|c| c.set(None));
            }
        }
        BROKEN.with(|c| c.set(Some(b)));
        let _reset = Reset;
        f()
    }

    /// Whether `check` (a whole shuttle check) fails with step `b`
    /// broken: each model's `*_is_caught` test asserts this.
    pub fn caught(b: super::Break, check: impl FnOnce() + std::panic::UnwindSafe) -> bool {
        with_broken(b, || std::panic::catch_unwind(check)).is_err()
    }

    /// Takes the log of pointers passed to [`super::retire`] so far.
    pub fn take_retired() -> Vec<usize> {
        RETIRED.with(|r| std::mem::take(&mut *r.borrow_mut()))
    }

    /// Takes the ghost log of [`super::logged`] records so far.
    pub fn take_logged() -> Vec<super::Logged> {
        LOGGED.with(|r| std::mem::take(&mut *r.borrow_mut()))
    }

    /// `parking_lot::Mutex`'s interface over shuttle's.
    #[derive(Default)]
    pub struct Mutex<T>(shuttle::sync::Mutex<T>);

    pub struct MutexGuard<'a, T>(Option<shuttle::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub fn new(t: T) -> Self {
            Mutex(shuttle::sync::Mutex::new(t))
        }
        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().expect("poisoned")))
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("held")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("held")
        }
    }

    /// `parking_lot::Condvar`'s interface over shuttle's. A timed wait
    /// waits untimed: shuttle does not model time, and a model that relied
    /// on a timeout would hide a lost wake-up (it deadlocks instead).
    #[derive(Default)]
    pub struct Condvar(shuttle::sync::Condvar);

    impl Condvar {
        pub fn new() -> Self {
            Condvar(shuttle::sync::Condvar::new())
        }
        pub fn notify_one(&self) {
            self.0.notify_one();
        }
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
        pub fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
            let inner = g.0.take().expect("held");
            g.0 = Some(self.0.wait(inner).expect("poisoned"));
        }
        pub fn wait_for<T>(&self, g: &mut MutexGuard<'_, T>, _t: Duration) {
            self.wait(g)
        }
    }

    /// `crossbeam_utils::Backoff`'s interface: every step yields.
    #[derive(Default)]
    pub struct Backoff;

    impl Backoff {
        pub fn new() -> Self {
            Backoff
        }
        pub fn spin(&self) {
            shuttle::thread::yield_now();
        }
        pub fn snooze(&self) {
            shuttle::thread::yield_now();
        }
    }
}
