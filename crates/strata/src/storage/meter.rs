//! What the version store did on this thread: blocks allocated and their
//! bytes, bytes retired, and row cells decoded for reads.
//!
//! Wu et al. §4 and §7.3 compare the storage schemes by the memory an
//! update allocates and a read copies (Figs. 13-16, and Figs. 18-21 plot
//! memory). The counters sit where the work happens, so they cannot drift
//! from it: every allocation of a version block, a record or a master
//! counts here as it is made ([`allocated`]), every one retired as it is
//! handed to the epoch ([`retired`]), every cell a read turns into a value
//! as it does ([`decoded`]).
//!
//! They are per thread (a plain add on a thread-local, no shared line on
//! the update path) and per process: storage knows no database. Who runs
//! the work attributes it to one. A transaction's commit or abort takes
//! the allocations this thread made since the last such hand-over
//! ([`take_unflushed`]: its writes, nothing else runs on its thread
//! meanwhile) into its slot's counts; a collector takes its pass's
//! allocations and retirements, by a [`mark`] before and the difference
//! after, into the database's GC counters (`Stats::storage_allocations`,
//! `Stats::storage_bytes_allocated`, `Stats::gc_bytes_freed`). Nothing is
//! read on the update path itself: an update costs one add here.
//!
//! ```text
//!  txn.update ── storage::install ── Version::alloc_* ─> allocated(bytes)
//!  txn.commit ── take_unflushed() ─> TxnCounts (this transaction's slot) ─> Stats
//!  GC pass ──── mark ... since(mark) ─> gc::Common::counters ─> Stats
//! ```
//!
//! (A transaction that moves to another thread between its writes and
//! its commit leaves them to the next hand-over on the first thread.)
//!
//! Beside the blocks, the memory gauge (`stats::MemoryGauge`) counts what
//! a block's holder keeps out of line: the payloads of the `Text` and
//! `Bytes` values it owns, and index entries. They go through a pair of
//! counters of their own ([`Gauged::held`], [`Gauged::released`]), which
//! feed the gauge only (not `Stats::storage_bytes_allocated`, whose
//! figures compare the schemes' blocks). The rule that keeps the gauge
//! symmetric: **each holder counts what it counts when it takes it and
//! releases the same when it lets go**, the holder being a version (the
//! heap values its `OWNED` bits say it owns), a master's cell, a record
//! (the bytes it stored when it was made), an index entry (an estimate by
//! its key).
//!
//! Only a database with a memory limit counts them (issue 43: counting
//! always cost a 50%-update YCSB transaction 0.65% more instructions, a
//! read-only one 0.2%, for a gauge nobody reads without a limit). The
//! switch is a [`Gauged`] flag, `Options::memory_limit.is_some()`, fixed
//! when the database opens and handed to what holds things: each table's
//! `Store` (its versions, masters, records and primary-index entries,
//! through `Store::alloc` and the retire paths), its secondary indexes and
//! MV-PBT partitions, the collector's limbo. A holder takes and releases
//! under its own database's flag, so the rule holds by construction. A
//! process-wide switch would not: flipped while something is held, the
//! release would count without its take (or the reverse), and a database
//! without a limit would still put its counts in the thread's meter for
//! one with a limit on the same thread to take. Where a flag is awkward
//! to pass, the holder keeps it: a master has its own (so a write section,
//! whoever opens it, an abort's undo included, counts under it), and a
//! record stores the bytes it counted, none without the flag, and gives
//! back exactly those ([`give_back`]). A version has no bit to spare in
//! its `len` word, so its allocation and its retirement take the flag.
//!
//! ```text
//!  Database::open ── Gauged::of(memory_limit) ──> Store::gauged, indexes, limbo
//!  take    (alloc, put, entry insert)  ── gauged.held(bytes)      nothing when off
//!  release (retire, take, entry remove) ── gauged.released(bytes)  under the same flag
//! ```
//!
//! Off, a plain row (no text, not in place) costs nothing more than before
//! the gauge counted payloads: its allocation sets no flag and its
//! retirement is the one test of its `len` word the block count already
//! made (`Version::retire_bytes`); with texts, no length is read (at a
//! retirement, a load of a line long gone from the cache), nor an index
//! entry's estimate made. (Callgrind, `strata bench ycsb --threads 1`,
//! instructions a transaction: 50% updates 16,536 before payloads were
//! counted, 16,647 counting them always, 16,512 with the flag; read-only
//! 9,771, 9,798 and 9,800, where no counting site runs and the rest is
//! code placement, in `Transaction::prefetch`.)

use std::cell::Cell;

/// The counters (cumulative on this thread since it started).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meter {
    /// Blocks allocated: version blocks (an in-place update's holds the
    /// record of the version it overwrote too), records of their own,
    /// masters.
    pub allocations: u64,
    /// Their bytes.
    pub bytes_allocated: u64,
    /// Bytes of blocks, records and masters retired (handed to the epoch,
    /// freed once it moves on).
    pub bytes_retired: u64,
    /// Row cells a read turned into values (an in-place read decoding the
    /// master's cells and records; a projection copying the columns it
    /// was asked for).
    pub cells_decoded: u64,
}

impl Meter {
    /// What happened between `earlier` and `self` (two readings of one
    /// thread's meter).
    pub fn since(&self, earlier: &Meter) -> Meter {
        Meter {
            allocations: self.allocations.wrapping_sub(earlier.allocations),
            bytes_allocated: self.bytes_allocated.wrapping_sub(earlier.bytes_allocated),
            bytes_retired: self.bytes_retired.wrapping_sub(earlier.bytes_retired),
            cells_decoded: self.cells_decoded.wrapping_sub(earlier.cells_decoded),
        }
    }
}

/// One thread's counters, each a cell of its own (an update touches two).
struct Counters {
    allocations: Cell<u64>,
    bytes_allocated: Cell<u64>,
    bytes_retired: Cell<u64>,
    cells_decoded: Cell<u64>,
    /// `allocations` and `bytes_allocated` when [`take_unflushed`] last
    /// handed them over.
    flushed: Cell<(u64, u64)>,
    /// `bytes_retired` when [`take_unflushed_retired`] last handed it over.
    retired_flushed: Cell<u64>,
    /// Out-of-line bytes taken and let go by their holders
    /// ([`Gauged::held`], [`Gauged::released`], [`give_back`]) since
    /// [`take_unflushed_held`] last handed them over.
    held: Cell<u64>,
    released: Cell<u64>,
}

crate::sync::thread_local! {
    // (`const` and no destructor: an access is a plain thread-local load.)
    static METER: Counters = const {
        Counters {
            allocations: Cell::new(0),
            bytes_allocated: Cell::new(0),
            bytes_retired: Cell::new(0),
            cells_decoded: Cell::new(0),
            flushed: Cell::new((0, 0)),
            retired_flushed: Cell::new(0),
            held: Cell::new(0),
            released: Cell::new(0),
        }
    };
}

#[inline]
fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

/// One block of `bytes` allocated.
#[inline]
pub(crate) fn allocated(bytes: usize) {
    METER.with(|m| {
        add(&m.allocations, 1);
        add(&m.bytes_allocated, bytes as u64);
    })
}

/// A block, record or master of `bytes` retired.
#[inline]
pub(crate) fn retired(bytes: usize) {
    METER.with(|m| add(&m.bytes_retired, bytes as u64))
}

/// Whether a database's holders count what they keep out of line (see
/// the module doc): on exactly when its `Options::memory_limit` is set,
/// fixed for the database's life. Each holder takes it from its database
/// (a table's `Store`, an index, the collector) and counts its take and
/// its release under the same one. Off, [`Gauged::held`] and
/// [`Gauged::released`] do nothing, and the sites that compute what they
/// would count test it first (or only on a path a plain row never takes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gauged(bool);

impl Gauged {
    /// No limit: nothing is counted.
    pub const OFF: Gauged = Gauged(false);
    /// A limit: every holder counts.
    #[cfg(test)]
    pub const ON: Gauged = Gauged(true);

    /// [`Gauged::ON`] when `limit` is set.
    pub fn of(limit: Option<u64>) -> Gauged {
        Gauged(limit.is_some())
    }

    /// Whether holders count.
    #[inline(always)]
    pub fn on(self) -> bool {
        self.0
    }

    /// A holder took `bytes` out of line: a text or byte string's payload
    /// it owns, an index entry.
    #[inline(always)]
    pub(crate) fn held(self, bytes: usize) {
        if self.0 && bytes != 0 {
            add_held(bytes)
        }
    }

    /// A holder let go of `bytes` it counted with [`Gauged::held`] (under
    /// the same flag).
    #[inline(always)]
    pub(crate) fn released(self, bytes: usize) {
        if self.0 && bytes != 0 {
            give_back(bytes)
        }
    }
}

// (The adds out of line: a site inlines two tests and a call, and the
// update and retire paths they sit in keep the size, and so the inlining,
// they had before the gauge counted payloads.)
#[inline(never)]
fn add_held(bytes: usize) {
    METER.with(|m| add(&m.held, bytes as u64))
}

/// A holder that stored what it counted when it took it gives that back
/// (a record: none, when its table's gauge was off as it was made).
#[inline(never)]
pub(crate) fn give_back(stored: usize) {
    if stored != 0 {
        METER.with(|m| add(&m.released, stored as u64))
    }
}

/// The (held, released) bytes this thread counted since the last call,
/// for the memory gauge only: any hand-over may take them (a commit's, an
/// abort's, a collector's, a dropped table's reclaim), whoever's they
/// were, since they feed nothing per transaction.
#[inline]
pub(crate) fn take_unflushed_held() -> (u64, u64) {
    METER.with(|m| (m.held.replace(0), m.released.replace(0)))
}

/// `n` cells decoded by a read.
#[inline]
pub(crate) fn decoded(n: usize) {
    METER.with(|m| add(&m.cells_decoded, n as u64))
}

/// This thread's meter now.
#[inline]
pub fn this_thread() -> Meter {
    METER.with(|m| Meter {
        allocations: m.allocations.get(),
        bytes_allocated: m.bytes_allocated.get(),
        bytes_retired: m.bytes_retired.get(),
        cells_decoded: m.cells_decoded.get(),
    })
}

/// A reading of this thread's meter, to take the difference of later.
#[inline]
pub(crate) fn mark() -> Meter {
    this_thread()
}

/// The allocations (count, bytes) this thread made since the last call:
/// handed over to whoever calls (a committing or aborting transaction,
/// for its slot's counts).
#[inline]
pub(crate) fn take_unflushed() -> (u64, u64) {
    METER.with(|m| {
        let now = (m.allocations.get(), m.bytes_allocated.get());
        let then = m.flushed.replace(now);
        (now.0.wrapping_sub(then.0), now.1.wrapping_sub(then.1))
    })
}

/// Hands back allocations taken by [`take_unflushed`] that were not the
/// taker's (a collector running while this thread has a transaction open
/// leaves that transaction's allocations to its end).
#[inline]
pub(crate) fn untake(n: (u64, u64)) {
    METER.with(|m| {
        let (a, b) = m.flushed.get();
        m.flushed.set((a.wrapping_sub(n.0), b.wrapping_sub(n.1)));
    })
}

/// The bytes this thread retired since the last call, for the memory
/// gauge of the database whose work is handed over (`stats::MemoryGauge`:
/// a commit, an abort after its rollback, a collector's pass).
#[inline]
pub(crate) fn take_unflushed_retired() -> u64 {
    METER.with(|m| {
        let now = m.bytes_retired.get();
        now.wrapping_sub(m.retired_flushed.replace(now))
    })
}

/// Hands back retirements [`take_unflushed_retired`] took that were not
/// the taker's (as [`untake`]).
#[inline]
pub(crate) fn untake_retired(n: u64) {
    METER.with(|m| {
        m.retired_flushed
            .set(m.retired_flushed.get().wrapping_sub(n))
    })
}
