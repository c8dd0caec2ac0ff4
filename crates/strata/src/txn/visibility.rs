//! Which version of a chain a transaction sees.
//!
//! Walking a newest-to-oldest chain, the first version whose creator
//! committed at or before the snapshot is the visible one:
//!
//! ```text
//!  snapshot = 50
//!  head ─> [T9 running] ─> [cts 61] ─> [cts 48] ─> [cts 12]
//!           skip            skip        VISIBLE
//! ```
//!
//! An unstamped version (creator id in `begin`) is resolved through the
//! transaction table; a creator that has its commit timestamp but no decision
//! yet (COMMITTING, `cts <= snapshot`) is waited for, because either answer
//! could be the right one.

use super::tid::{Status, TidTable};
use crate::error::{ConflictKind, Error, Result};
use crate::storage::version::{Version, TID_MARK};
use std::sync::atomic::Ordering::SeqCst;

/// How to treat versions of running writers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Snapshot isolation semantics: a running writer's version is invisible.
    Snapshot,
    /// MVTO: a running writer with a smaller timestamp would have to be seen
    /// once it commits, so reading past it breaks timestamp order.
    TimestampOrder,
}

/// The version of `head`'s chain visible at `ts` to transaction `me`
/// (null if none). `me` may be 0 for read-only transactions.
///
/// The caller must be pinned (crossbeam-epoch) while it uses the chain.
pub fn visible(
    head: *mut Version,
    ts: u64,
    me: u64,
    tids: &TidTable,
    mode: Mode,
) -> Result<*mut Version> {
    let mut v = head;
    while !v.is_null() {
        // SAFETY: the caller is pinned; versions are freed only after being
        // unlinked and an epoch passing.
        let r = unsafe { &*v };
        if is_visible(r, ts, me, tids, mode)? {
            return Ok(v);
        }
        v = r.next();
    }
    Ok(std::ptr::null_mut())
}

/// Whether version `r` itself is visible at `ts` to `me`.
#[inline]
pub fn is_visible(r: &Version, ts: u64, me: u64, tids: &TidTable, mode: Mode) -> Result<bool> {
    let b = r.begin.load(SeqCst);
    if b & TID_MARK == 0 {
        return Ok(b <= ts);
    }
    let creator = b & !TID_MARK;
    if creator == me {
        return Ok(true);
    }
    Ok(match tids.settled_status(creator) {
        Status::Precommit => unreachable!("settled_status waits PRECOMMIT out"),
        Status::Active => {
            if mode == Mode::TimestampOrder {
                // An MVTO writer's timestamp is its registered begin.
                let wts = tids.slot(creator).begin.load(SeqCst);
                if tids.status(creator) != Status::Active {
                    // It moved on (or its slot was reused, making `wts`
                    // someone else's): decide again from its new state.
                    return is_visible(r, ts, me, tids, mode);
                }
                if wts < ts {
                    return Err(Error::Conflict(ConflictKind::TimestampOrder));
                }
            }
            false
        }
        Status::Aborted => false,
        Status::Committed(c) => c <= ts,
        Status::Committing(c) => {
            if c > ts {
                false
            } else {
                match tids.wait_decided(creator) {
                    Status::Committed(_) => true,
                    Status::Gone => stamped_at_or_before(r, ts),
                    _ => false,
                }
            }
        }
        Status::Gone => stamped_at_or_before(r, ts),
    })
}

/// After the creator's slot was released the version is stamped (committed)
/// or carries the stale marker (aborted and unlinked).
fn stamped_at_or_before(r: &Version, ts: u64) -> bool {
    let b = r.begin.load(SeqCst);
    b & TID_MARK == 0 && b <= ts
}
