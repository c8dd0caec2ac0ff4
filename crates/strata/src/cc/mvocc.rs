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
//!
//! A transaction that wrote nothing is validated too, unless it was begun
//! with the READ ONLY hint (`begin_read_only`): the study's MVOCC checks
//! "the tuples in the transaction's read set" of every committer (Wu et
//! al. §3.2), which is what starves long read-only queries that are not
//! declared as such (§3.5, §6.2 and Fig. 8: "the absence of read locks in
//! MVOCC results in the starvation of read-only queries"). Such a reader
//! read one snapshot and would be serializable at it without the check
//! (the snapshot holds a prefix of the commit order); the check is the
//! protocol's cost, not its correctness, and the hint is how an
//! application avoids it (Fig. 9).
//!
//! ```text
//!  R: begin(10), read x1 ........................ commit: x1 newest? no -> abort
//!  W:              update x -> x2, commit(12)
//!  (R begun READ ONLY: no validation, commits having read x1)
//! ```

use super::predicate::{validate_scans, validation_skipped};
use super::ReadEntry;
use super::Txn;
use super::{Cc, TxnCc};
use crate::error::{ConflictKind, Result};
use crate::options::Protocol;
use crate::storage::{self, version::Version};
use crate::table::TableInner;
use std::sync::atomic::Ordering::SeqCst;

/// Optimistic concurrency control over snapshots (Hekaton-style).
pub(crate) struct Mvocc;

impl Cc for Mvocc {
    const PROTOCOL: Protocol = Protocol::Mvocc;
    const SNAPSHOT_READS: bool = true;
    const VALIDATES_SCANS: bool = true;
    const SCAN_RECORDS: bool = false;
    // The study validates every committer's read set; only the READ ONLY
    // hint skips it (see the module doc).
    const READ_ONLY_COMMIT_UNCHECKED: bool = false;
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = Some(ConflictKind::Validation);
    type State = ();

    fn new_state(_tid: u64, _ts: u64, _read_only: bool) -> TxnCc {
        TxnCc::Mvocc(())
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        tx.snapshot_read::<Self>(t, tuple)
    }

    fn check_write(_tx: &impl Txn, _t: &TableInner, _tuple: u64, _head: &Version) -> Result<()> {
        // The lock is all: validation checks what was read.
        Ok(())
    }

    fn note_read(tx: &mut impl Txn, t: &TableInner, tuple: u64, v: *mut Version) -> Result<()> {
        tx.record_read::<Self>(t, tuple, v)
    }

    fn validate(tx: &mut impl Txn, _cts: u64) -> Result<(), ConflictKind> {
        validate(tx)
    }
}

pub fn validate(tx: &mut impl Txn) -> Result<(), ConflictKind> {
    let _guard = crossbeam_epoch::pin();
    for r in tx.reads() {
        if !still_current(tx, r) {
            return Err(ConflictKind::Validation);
        }
    }
    if !validation_skipped(tx) && !validate_scans::<Mvocc>(tx) {
        return Err(ConflictKind::Validation);
    }
    Ok(())
}

/// Whether the version read is still the newest committed one (below our own
/// write, if we wrote the row) and nobody else holds its lock. (Shared with
/// `occ`: the check does not care when the version was read.)
pub(crate) fn still_current(tx: &impl Txn, r: &ReadEntry) -> bool {
    // SAFETY: tables outlive transactions; the caller is pinned.
    let t = unsafe { &*r.table };
    let mut v: *mut Version = storage::newest(t, r.tuple);
    if tx.is_own(v) {
        // The version our write overwrote (whatever the chain's direction).
        v = tx
            .writes()
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
            locker == 0 || locker == tx.tid()
        }
    }
}
