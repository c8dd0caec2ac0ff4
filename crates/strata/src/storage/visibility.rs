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
//!
//! Storage knows nothing of transactions but what [`TxnStates`] answers for
//! an id: the transaction table (`tid::TidTable`) implements it, and every
//! function here is generic over it, so the table's lookups are inlined as
//! if this module called them by name.

use super::version::{Version, TID_MARK};
use crate::error::{ConflictKind, Error, Result};
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

/// The state of the transaction behind a `TID_MARK | id` word, as far as
/// visibility cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    Active,
    /// Has its commit timestamp; the decision is not made yet.
    Committing(u64),
    Committed(u64),
    Aborted,
    /// The transaction has ended and its id is no longer known: re-read the
    /// version, which is stamped (committed) or unlinked (aborted) by now.
    Gone,
}

/// What visibility needs from the transaction table.
pub trait TxnStates {
    /// The state of `id` once it has its commit timestamp if it is about to
    /// draw one (waits that short step out).
    fn settled(&self, id: u64) -> TxnState;
    /// The state of `id` once it has decided (never `Committing`).
    fn decided(&self, id: u64) -> TxnState;
    /// MVTO: the timestamp of `id` while it is running; None once it has
    /// moved on (then its state is asked again).
    fn running_ts(&self, id: u64) -> Option<u64>;
}

/// The version of `head`'s chain visible at `ts` to transaction `me`
/// (null if none). `me` may be 0 for read-only transactions.
///
/// The caller must be pinned (crossbeam-epoch) while it uses the chain.
pub fn visible<T: TxnStates>(
    head: *mut Version,
    ts: u64,
    me: u64,
    tids: &T,
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
pub fn is_visible<T: TxnStates>(
    r: &Version,
    ts: u64,
    me: u64,
    tids: &T,
    mode: Mode,
) -> Result<bool> {
    let b = r.begin.load(SeqCst);
    if b & TID_MARK == 0 {
        return Ok(b <= ts);
    }
    let creator = b & !TID_MARK;
    if creator == me {
        return Ok(true);
    }
    Ok(match tids.settled(creator) {
        TxnState::Active => {
            if mode == Mode::TimestampOrder {
                // An MVTO writer's timestamp is its registered begin.
                let Some(wts) = tids.running_ts(creator) else {
                    // It moved on (or its slot was reused, making its
                    // timestamp someone else's): decide again from its new
                    // state.
                    return is_visible(r, ts, me, tids, mode);
                };
                if wts < ts {
                    return Err(Error::Conflict(ConflictKind::TimestampOrder));
                }
            }
            false
        }
        TxnState::Aborted => false,
        TxnState::Committed(c) => c <= ts,
        TxnState::Committing(c) => {
            if c > ts {
                false
            } else {
                match tids.decided(creator) {
                    TxnState::Committed(_) => true,
                    TxnState::Gone => stamped_at_or_before(r, ts),
                    _ => false,
                }
            }
        }
        TxnState::Gone => stamped_at_or_before(r, ts),
    })
}

/// After the creator's slot was released the version is stamped (committed)
/// or carries the stale marker (aborted and unlinked).
fn stamped_at_or_before(r: &Version, ts: u64) -> bool {
    let b = r.begin.load(SeqCst);
    b & TID_MARK == 0 && b <= ts
}
