//! The version: one tuple header and one row image.
//!
//! Every write creates a new version and links it in front of the row's
//! version chain (append-only, newest-to-oldest):
//!
//! ```text
//!  indirection[tuple] ──> v3 ──next──> v2 ──next──> v1 ──> null
//!                         [txn_id | begin | end | next | word_a | word_b] + row
//! ```
//!
//! The header follows the Peloton study: `txn_id` is the write lock (0 when
//! free, else the owner's transaction id), `begin`/`end` bound the version's
//! lifetime in commit timestamps, `next` is the chain pointer, and two words
//! belong to the protocol (`read_ts` for MVTO, the reader count for MV2PL,
//! `pstamp`/`sstamp` for SSN). That is 48 bytes; the row image adds a 16-byte
//! slice pointer.
//!
//! While its creator is running, `begin` holds the creator's id with
//! [`TID_MARK`] set, and the overwritten version's `end` holds the
//! overwriter's id the same way. Readers that meet a marker ask the
//! transaction table ([`crate::txn::tid`]) whether that transaction has
//! committed, and at which timestamp (ERMIA's post-commit stamping).

use crate::value::Value;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Set in `begin`/`end` while they hold a transaction id, not a timestamp.
pub const TID_MARK: u64 = 1 << 63;
/// `end` of a version nobody has overwritten.
pub const INF_TS: u64 = TID_MARK - 1;

/// A version of a row.
#[repr(C)]
pub struct Version {
    /// Write lock: 0 = free, else the id of the transaction that owns it.
    pub txn_id: AtomicU64,
    /// Commit timestamp of the creator, or `TID_MARK | creator id`.
    pub begin: AtomicU64,
    /// Commit timestamp of the overwriter, `INF_TS`, or `TID_MARK | id`.
    pub end: AtomicU64,
    /// The next older version.
    pub next: AtomicPtr<Version>,
    /// MVTO `read_ts` | MV2PL reader count | SSN `pstamp` (max reader cstamp).
    pub word_a: AtomicU64,
    /// SSN `sstamp` (the overwriter's successor low watermark).
    pub word_b: AtomicU64,
    /// The row image; empty for a tombstone (a deleted row).
    pub data: Box<[Value]>,
}

/// Bytes of header per version (everything but the row image).
pub const HEADER_BYTES: usize =
    std::mem::size_of::<Version>() - std::mem::size_of::<Box<[Value]>>();

const _: () = assert!(
    HEADER_BYTES <= 48,
    "the version header must stay within 48 bytes"
);

impl Version {
    /// A new, locked, uncommitted version created by transaction `tid`.
    pub fn new_uncommitted(tid: u64, data: Box<[Value]>, next: *mut Version) -> Box<Version> {
        Box::new(Version {
            txn_id: AtomicU64::new(tid),
            begin: AtomicU64::new(TID_MARK | tid),
            end: AtomicU64::new(INF_TS),
            next: AtomicPtr::new(next),
            word_a: AtomicU64::new(0),
            word_b: AtomicU64::new(INF_TS),
            data,
        })
    }

    /// True if this version records a deletion.
    #[inline]
    pub fn is_tombstone(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes this version occupies: header, row image and text payloads
    /// (text shared with other versions is counted once per version that
    /// holds it, i.e. an upper bound).
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Version>()
            + std::mem::size_of_val(&*self.data)
            + self.data.iter().map(Value::heap_bytes).sum::<usize>()
    }

    #[inline]
    pub fn next(&self) -> *mut Version {
        self.next.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_at_most_48_bytes() {
        assert_eq!(HEADER_BYTES, 48);
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }
}
