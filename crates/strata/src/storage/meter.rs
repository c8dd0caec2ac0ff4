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
//! the work attributes it: a transaction adds what its writes allocated to
//! its slot's counts, a collector what its pass allocated and freed to
//! the database's GC counters (`Stats::storage_allocations`,
//! `Stats::storage_bytes_allocated`, `Stats::gc_bytes_freed`), each by
//! taking a [`mark`] before and the difference after.
//!
//! ```text
//!  txn.update ── mark ── storage::install ── Version::alloc_* ─> allocated(bytes)
//!             └─ since(mark) ─> TxnCounts (this transaction's slot) ─> Stats
//! ```

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

crate::sync::thread_local! {
    static METER: Cell<Meter> = const {
        Cell::new(Meter {
            allocations: 0,
            bytes_allocated: 0,
            bytes_retired: 0,
            cells_decoded: 0,
        })
    };
}

#[inline]
fn update(f: impl FnOnce(&mut Meter)) {
    // (A thread being torn down has no meter any more: nothing counts.)
    let _ = METER.try_with(|m| {
        let mut x = m.get();
        f(&mut x);
        m.set(x);
    });
}

/// One block of `bytes` allocated.
#[inline]
pub(crate) fn allocated(bytes: usize) {
    update(|m| {
        m.allocations += 1;
        m.bytes_allocated += bytes as u64;
    })
}

/// A block, record or master of `bytes` retired.
#[inline]
pub(crate) fn retired(bytes: usize) {
    update(|m| m.bytes_retired += bytes as u64)
}

/// `n` cells decoded by a read.
#[inline]
pub(crate) fn decoded(n: usize) {
    update(|m| m.cells_decoded += n as u64)
}

/// This thread's meter now.
#[inline]
pub fn this_thread() -> Meter {
    METER.try_with(Cell::get).unwrap_or_default()
}

/// A reading of this thread's meter, to take the difference of later.
#[inline]
pub(crate) fn mark() -> Meter {
    this_thread()
}
