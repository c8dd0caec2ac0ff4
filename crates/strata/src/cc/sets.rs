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
