//! The read set and the write set of a transaction: what a protocol
//! validates at commit, what the log writes as redo, what an abort undoes.
//!
//! ```text
//!  reads:  (table, tuple, version read | null)   MVOCC re-checks, SSN/SSI
//!                                                  stamp, MV2PL unlocks
//!  writes: (table, tuple, new, old, index key)   stamped at commit, logged,
//!                                                  unlinked on abort
//! ```
//!
//! Invariant: every pointer in an entry stays valid while the transaction
//! is open (see the `Send` impl of `Transaction`).

use crate::index::key::EncodedKey;
use crate::storage::version::Version;
use crate::table::TableInner;

/// A row written by this transaction.
pub(crate) struct WriteEntry {
    pub table: *const TableInner,
    pub tuple: u64,
    /// Our (newest) uncommitted version.
    pub new: *mut Version,
    /// The version we overwrote (null for a fresh insert).
    pub old: *mut Version,
    /// The index entry we added, to remove on abort.
    pub index_key: Option<EncodedKey>,
}

/// A version this transaction read (null `version`: nothing visible).
pub(crate) struct ReadEntry {
    pub table: *const TableInner,
    pub tuple: u64,
    pub version: *mut Version,
}

/// Most entries a set may hold and still go back to the thread's stash
/// (a bulk load's sets are freed instead of kept).
const STASH_CAPACITY: usize = 1024;

std::thread_local! {
    /// The last finished transaction's empty sets, for the next one this
    /// thread begins. Without it every read-write transaction allocated
    /// both sets and grew them a few times: about 1,000 instructions of a
    /// 10-operation YCSB transaction (docs/PERFORMANCE.md).
    static STASH: std::cell::Cell<(Vec<WriteEntry>, Vec<ReadEntry>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// Empty sets for a new transaction: the stashed ones when there are.
#[inline]
pub(crate) fn take_sets() -> (Vec<WriteEntry>, Vec<ReadEntry>) {
    STASH
        .try_with(|s| s.take())
        .unwrap_or_else(|_| (Vec::new(), Vec::new()))
}

/// Gives a finished transaction's sets back to this thread's stash.
#[inline]
pub(crate) fn stash_sets(mut writes: Vec<WriteEntry>, mut reads: Vec<ReadEntry>) {
    if writes.capacity() > STASH_CAPACITY || reads.capacity() > STASH_CAPACITY {
        return;
    }
    // (Dropping the entries releases the index keys they own.)
    writes.clear();
    reads.clear();
    let _ = STASH.try_with(|s| {
        let old = s.replace((writes, reads));
        drop(old);
    });
}
