//! MVOCC (Hekaton-style): read a snapshot, validate at commit.
//!
//! Writes lock the chain head when they happen; reads remember the version
//! they saw. After drawing its commit timestamp a transaction checks that
//! every version it read is still the newest committed one and is not locked
//! by another writer, and that no scanned range gained a row:
//!
//! ```text
//!  read  x -> v1          commit: head(x) == v1 and unlocked?  yes -> ok
//!  scan [a, f] -> {b, d}          index[a, f] == {b, d}?       no  -> abort
//! ```
//!
//! With write locks held through validation this is Silo's argument: the
//! transaction is serialisable at its commit timestamp.

use super::predicate::{validate_scans, validation_skipped};
use crate::error::ConflictKind;
use crate::storage::{self, version::Version};
use crate::txn::{ReadEntry, Transaction};
use std::sync::atomic::Ordering::SeqCst;

pub fn validate(tx: &mut Transaction) -> Result<(), ConflictKind> {
    let _guard = crossbeam_epoch::pin();
    for r in &tx.reads {
        if !still_current(tx, r) {
            return Err(ConflictKind::Validation);
        }
    }
    if !validation_skipped(tx) && !validate_scans(tx) {
        return Err(ConflictKind::Validation);
    }
    Ok(())
}

/// Whether the version read is still the newest committed one (below our own
/// write, if we wrote the row) and nobody else holds its lock.
fn still_current(tx: &Transaction, r: &ReadEntry) -> bool {
    // SAFETY: tables outlive transactions; the caller is pinned.
    let t = unsafe { &*r.table };
    let mut v: *mut Version = storage::newest(t, r.tuple);
    if tx.is_own(v) {
        // The version our write overwrote (whatever the chain's direction).
        v = tx
            .writes
            .iter()
            .rev()
            .find(|w| w.new == v)
            .map_or(std::ptr::null_mut(), |w| w.old);
    }
    if v != r.version {
        return false;
    }
    // SAFETY: pinned; `v` is the chain head or the version we overwrote.
    match unsafe { v.as_ref() } {
        None => true,
        Some(h) => {
            let locker = h.txn_id.load(SeqCst);
            locker == 0 || locker == tx.tid
        }
    }
}
