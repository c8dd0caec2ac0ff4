//! Where a transaction's time goes, by engine component: ERMIA's "CPU
//! cycle breakdown per transaction" (§4.4, Fig. 11: Masstree, indirection,
//! log manager, CC, resource managers, the rest), here as wall time.
//! Opt-in (`Options::time_breakdown`); off, every timing point in the
//! transaction path is one predictable branch (`DbInner::breakdown` is
//! `None`).
//!
//! ```text
//!  begin ──────────────────────────────────────────────────────── finish │ after
//!   │ [index][version read]   [index][install][index]   [log][cc][log]   │ [gc][log wait]
//!   │    rest (the caller, begin, bookkeeping) = total − components      │  (detached)
//!   └───────────────────────── total ────────────────────────────────────┴──────────┘
//! ```
//!
//! A timed region charges its component only its own time: regions nest
//! (a scan, timed as `Index`, reads each row through `read_tuple`, timed
//! as `VersionRead`, and calls the caller's closure, timed as `Caller`),
//! and each slot keeps a running sum of what was charged, so an outer
//! region subtracts what its inner regions charged meanwhile. So the
//! components of a transaction never add up to more than its total (begin
//! to finish, plus the work after finish: GC and the durability wait,
//! charged "detached" once the slot may have a new occupant).
//!
//! Invariant **CHARGED ≤ ELAPSED**: per slot, the charged sum grows by a
//! region's elapsed time at most, and a transaction's components are
//! charged inside its begin-to-end interval; so per slot, components ≤
//! total, and where each thread runs one transaction at a time (a
//! benchmark's workers), total ≤ the threads' wall time.
//!
//! State lives per TID slot (its occupant's to write, like
//! `stats::TxnCounts`), on a line of its own; sums use `fetch_add` so a
//! detached charge racing the slot's next occupant loses nothing. Work
//! outside transactions (the background GC thread, the flusher,
//! checkpoints) is not charged to anyone.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// An engine component a timed region charges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Component {
    /// Primary and secondary index lookups, inserts, range walks and
    /// secondary-index maintenance (ERMIA's Masstree).
    Index = 0,
    /// Finding the visible version: indirection slot, chain walk,
    /// visibility, the protocol's read bookkeeping (ERMIA's indirection
    /// arrays and version chains).
    VersionRead,
    /// Writing a version: the write lock, the protocol's write check, the
    /// new version in the chain, and its stamps at commit.
    VersionInstall,
    /// Concurrency control at commit: validation (SSN's exclusion window,
    /// SSI, OCC read sets) and the protocol's post-commit work.
    Cc,
    /// The log manager: building the redo record, reserving its place in
    /// the log buffer, copying it in (per-operation records included).
    Log,
    /// Waiting for the log to be durable (GroupCommit) after the commit.
    LogWait,
    /// Handing versions to the collector and the GC work committers run.
    Gc,
    /// The caller's closures (scan callbacks): reported as part of the
    /// rest, kept apart only so that the regions around them exclude it.
    Caller,
}

const COMPONENTS: usize = 8;

/// One TID slot's timing state and sums.
#[derive(Default)]
struct SlotTimes {
    /// When the slot's transaction began (ns since the origin).
    begun: AtomicU64,
    /// Everything charged on this slot so far (for nesting).
    charged: AtomicU64,
    ns: [AtomicU64; COMPONENTS],
    total: AtomicU64,
    ended: AtomicU64,
    committed: AtomicU64,
}

/// A timed region's start: its time and the slot's charged sum then.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    at: u64,
    charged: u64,
}

/// The per-database timing state (`DbInner::breakdown`).
pub(crate) struct Breakdown {
    origin: Instant,
    /// Nanoseconds since `origin` (a test's own clock in unit tests).
    clock: fn(&Instant) -> u64,
    slots: Box<[CachePadded<SlotTimes>]>,
}

fn elapsed_ns(origin: &Instant) -> u64 {
    origin.elapsed().as_nanos() as u64
}

impl Breakdown {
    pub fn new(slots: usize) -> Self {
        Breakdown {
            origin: Instant::now(),
            clock: elapsed_ns,
            slots: (0..slots).map(|_| CachePadded::default()).collect(),
        }
    }

    #[inline]
    fn now(&self) -> u64 {
        (self.clock)(&self.origin)
    }

    /// A transaction begins on `slot`; `at` was read (`start`) before it
    /// took the slot.
    pub fn begin(&self, slot: usize, at: Mark) {
        let s = &self.slots[slot];
        s.begun.store(at.at, Relaxed);
        s.charged.store(0, Relaxed);
    }

    /// The start of a region (or of a transaction, before it has a slot).
    #[inline]
    pub fn start(&self, slot: usize) -> Mark {
        Mark {
            at: self.now(),
            charged: self.slots.get(slot).map_or(0, |s| s.charged.load(Relaxed)),
        }
    }

    /// Ends a region begun at `m` on `slot`: its own time (elapsed, less
    /// what regions inside it charged) goes to `c`.
    pub fn charge(&self, slot: usize, c: Component, m: Mark) {
        let s = &self.slots[slot];
        let elapsed = self.now().saturating_sub(m.at);
        let charged = s.charged.load(Relaxed);
        let inner = charged.wrapping_sub(m.charged);
        let own = elapsed.saturating_sub(inner);
        s.ns[c as usize].fetch_add(own, Relaxed);
        s.charged.store(charged + own, Relaxed);
    }

    /// The transaction on `slot` ends (before it frees the slot).
    pub fn end(&self, slot: usize) {
        let s = &self.slots[slot];
        let t = self.now().saturating_sub(s.begun.load(Relaxed));
        s.total.fetch_add(t, Relaxed);
        s.ended.fetch_add(1, Relaxed);
    }

    /// The transaction on `slot` commits (before `end`).
    pub fn committed(&self, slot: usize) {
        self.slots[slot].committed.fetch_add(1, Relaxed);
    }

    /// Work of a transaction that ended on `slot` (the slot may have a new
    /// occupant): to `c` and to the total.
    pub fn charge_detached(&self, slot: usize, c: Component, m: Mark) {
        let s = &self.slots[slot];
        let t = self.now().saturating_sub(m.at);
        s.ns[c as usize].fetch_add(t, Relaxed);
        s.total.fetch_add(t, Relaxed);
    }

    /// The sums so far over all slots.
    pub fn sums(&self) -> TimeBreakdown {
        let mut ns = [0u64; COMPONENTS];
        let (mut total, mut ended, mut committed) = (0, 0, 0);
        for s in self.slots.iter() {
            for (a, b) in ns.iter_mut().zip(&s.ns) {
                *a += b.load(Relaxed);
            }
            total += s.total.load(Relaxed);
            ended += s.ended.load(Relaxed);
            committed += s.committed.load(Relaxed);
        }
        TimeBreakdown {
            transactions: ended,
            committed,
            total_ns: total,
            index_ns: ns[Component::Index as usize],
            version_read_ns: ns[Component::VersionRead as usize],
            version_install_ns: ns[Component::VersionInstall as usize],
            cc_ns: ns[Component::Cc as usize],
            log_ns: ns[Component::Log as usize],
            log_wait_ns: ns[Component::LogWait as usize],
            gc_ns: ns[Component::Gc as usize],
        }
    }
}

/// Runs `f` as a region of component `c` of the transaction on `slot`
/// (the `timed!` macro of `txn`, timing on).
///
/// `b` is a pointer because `f` borrows the transaction mutably, and the
/// transaction holds the `Arc` that owns `b`.
#[cold]
#[inline(never)]
pub(crate) fn region<R>(
    b: *const Breakdown,
    slot: usize,
    c: Component,
    f: impl FnOnce() -> R,
) -> R {
    // SAFETY: `b` is the `Breakdown` of the transaction's `DbInner`, which
    // the transaction's `Arc` keeps alive for the whole call; nothing in a
    // region replaces the transaction's `db` (it is never reassigned).
    // Exercised by every test with `Options::time_breakdown` on
    // (`tests/time_breakdown.rs`).
    let b = unsafe { &*b };
    let m = b.start(slot);
    let r = f();
    b.charge(slot, c, m);
    r
}

/// `region` for work after the transaction freed its slot (charged to
/// `c` and the total, not nested: `Breakdown::charge_detached`).
#[cold]
#[inline(never)]
pub(crate) fn detached<R>(
    b: *const Breakdown,
    slot: usize,
    c: Component,
    f: impl FnOnce() -> R,
) -> R {
    // SAFETY: as in `region`.
    let b = unsafe { &*b };
    let m = b.start(slot);
    let r = f();
    b.charge_detached(slot, c, m);
    r
}

/// Time spent in transactions, by component (`Database::time_breakdown`,
/// with `Options::time_breakdown`): sums over every transaction ended so
/// far, committed or not (`since` gives a window). `rest_ns` is what no
/// component took: begin, the caller's own work between operations and
/// in scan callbacks, rollback, bookkeeping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeBreakdown {
    /// Transactions ended (committed, aborted or dropped).
    pub transactions: u64,
    /// Of them, those that committed (read-only ones included).
    pub committed: u64,
    /// Their time from begin to the end of commit or rollback (a commit's
    /// GC work and durability wait included).
    pub total_ns: u64,
    pub index_ns: u64,
    pub version_read_ns: u64,
    pub version_install_ns: u64,
    pub cc_ns: u64,
    pub log_ns: u64,
    pub log_wait_ns: u64,
    pub gc_ns: u64,
}

impl TimeBreakdown {
    /// The components, by name, in report order (`rest` last).
    pub fn components(&self) -> [(&'static str, u64); 8] {
        [
            ("index", self.index_ns),
            ("version_read", self.version_read_ns),
            ("version_install", self.version_install_ns),
            ("cc", self.cc_ns),
            ("log", self.log_ns),
            ("log_wait", self.log_wait_ns),
            ("gc", self.gc_ns),
            ("rest", self.rest_ns()),
        ]
    }

    /// What no component took (see the type's doc).
    pub fn rest_ns(&self) -> u64 {
        let named = self.index_ns
            + self.version_read_ns
            + self.version_install_ns
            + self.cc_ns
            + self.log_ns
            + self.log_wait_ns
            + self.gc_ns;
        self.total_ns.saturating_sub(named)
    }

    /// The sums accumulated since `earlier` (a window of a run).
    pub fn since(&self, earlier: &TimeBreakdown) -> TimeBreakdown {
        TimeBreakdown {
            transactions: self.transactions.saturating_sub(earlier.transactions),
            committed: self.committed.saturating_sub(earlier.committed),
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            index_ns: self.index_ns.saturating_sub(earlier.index_ns),
            version_read_ns: self.version_read_ns.saturating_sub(earlier.version_read_ns),
            version_install_ns: self
                .version_install_ns
                .saturating_sub(earlier.version_install_ns),
            cc_ns: self.cc_ns.saturating_sub(earlier.cc_ns),
            log_ns: self.log_ns.saturating_sub(earlier.log_ns),
            log_wait_ns: self.log_wait_ns.saturating_sub(earlier.log_wait_ns),
            gc_ns: self.gc_ns.saturating_sub(earlier.gc_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::cell::Cell;

    thread_local! {
        /// The test's clock, in nanoseconds.
        static NOW: Cell<u64> = const { Cell::new(0) };
    }

    fn test_clock(_: &Instant) -> u64 {
        NOW.with(Cell::get)
    }

    fn advance(ns: u64) {
        NOW.with(|c| c.set(c.get() + ns));
    }

    /// Nested regions charge each component its own time only: an outer
    /// `Index` region around an inner `VersionRead` one and a `Caller`
    /// one gets its elapsed time less theirs; the caller's time is in the
    /// rest; work after the end is charged to its component and the total;
    /// and the components add up to no more than the total.
    #[test]
    fn nested_regions_charge_their_own_time_and_stay_within_the_total() {
        let b = Breakdown {
            clock: test_clock,
            ..Breakdown::new(4)
        };
        advance(1_000);
        let m = b.start(usize::MAX);
        b.begin(2, m);
        advance(10);
        let outer = b.start(2);
        advance(200);
        let inner = b.start(2);
        advance(300);
        b.charge(2, Component::VersionRead, inner);
        let cb = b.start(2);
        advance(100);
        b.charge(2, Component::Caller, cb);
        advance(5);
        b.charge(2, Component::Index, outer);
        advance(20);
        b.committed(2);
        b.end(2);
        let gc = b.start(2);
        advance(50);
        b.charge_detached(2, Component::Gc, gc);
        let s = b.sums();
        assert_eq!((s.transactions, s.committed), (1, 1));
        assert_eq!(s.version_read_ns, 300);
        assert_eq!(s.index_ns, 205, "the index region excludes the inner ones");
        assert_eq!(s.gc_ns, 50);
        assert_eq!(s.total_ns, 10 + 605 + 20 + 50);
        // Begin to the index region, the caller's closure, after it.
        assert_eq!(s.rest_ns(), 10 + 100 + 20);
        assert_eq!(s.since(&s), TimeBreakdown::default());
        // A second transaction on the slot starts from a clean charged sum.
        let m = b.start(usize::MAX);
        b.begin(2, m);
        let r = b.start(2);
        advance(7);
        b.charge(2, Component::Cc, r);
        b.end(2);
        let t = b.sums().since(&s);
        assert_eq!(
            (t.transactions, t.committed, t.cc_ns, t.total_ns),
            (1, 0, 7, 7)
        );
    }
}
