//! MV2PL, no-wait: a reader count and the write lock in the head's header.
//!
//! ```text
//!  head: [txn_id 0 | readers 2]   T reads  -> readers 3 (if txn_id == 0)
//!                                 T writes -> CAS txn_id, then readers must
//!                                             be only T's own read locks
//! ```
//!
//! Instead of waiting, a transaction that meets a conflicting lock aborts
//! (no deadlocks by construction). Reads take the latest committed version
//! and hold the read lock to commit, so the serial order is commit order.
//! Phantoms: scans are re-validated at commit (a new key in a scanned range
//! aborts the scanner), which is sufficient because the serial order is the
//! commit order.

use super::ReadEntry;
use super::Txn;
use super::{predicate, Cc, TxnCc};
use crate::error::{ConflictKind, Error, Result};
use crate::options::Protocol;
use crate::storage::{self, version::Version};
use crate::sync::atomic::{AtomicU64, Ordering::SeqCst};
use crate::table::TableInner;

/// Multi-version two-phase locking, no-wait.
pub(crate) struct Mv2pl;

/// The version's reader count: read locks held on it (MV2PL's use of the
/// header's first protocol word).
#[inline]
pub(crate) fn readers(v: &Version) -> &AtomicU64 {
    &v.cc_words[0]
}

impl Cc for Mv2pl {
    const PROTOCOL: Protocol = Protocol::Mv2pl;
    const SNAPSHOT_READS: bool = false;
    const VALIDATES_SCANS: bool = true;
    const SCAN_RECORDS: bool = false;
    const READ_ONLY_COMMIT_UNCHECKED: bool = false;
    // It reads the newest state: a newer holder is a plain duplicate.
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = None;
    type State = ();

    fn new_state(_tid: u64, _ts: u64, _read_only: bool) -> TxnCc {
        TxnCc::Mv2pl(())
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        read(tx, t, tuple)
    }

    fn check_write(tx: &impl Txn, _t: &TableInner, _tuple: u64, head: &Version) -> Result<()> {
        check_write(tx, head as *const Version as *mut Version)
    }

    fn note_read(_tx: &mut impl Txn, _t: &TableInner, _tuple: u64, _v: *mut Version) -> Result<()> {
        // The write lock we hold on the head covers the read.
        Ok(())
    }

    /// It reads the newest data rather than a snapshot, so a range it
    /// scanned twice may differ: its scans are validated even then.
    fn read_only_commit_is_safe(tx: &impl Txn) -> bool {
        tx.scans().is_empty()
    }

    fn validate(tx: &mut impl Txn, _cts: u64) -> Result<(), ConflictKind> {
        (predicate::validation_skipped(tx) || predicate::validate_scans::<Self>(tx))
            .then_some(())
            .ok_or(ConflictKind::Validation)
    }

    fn release(tx: &mut impl Txn) {
        release(tx);
    }

    fn may_remove(tomb: &Version, _horizon: u64) -> bool {
        // Read-locked tombstones stay until the lock is released.
        readers(tomb).load(SeqCst) == 0
    }
}

pub fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
    let head = storage::newest(t, tuple);
    if head.is_null() || tx.is_own(head) {
        return Ok(head);
    }
    // SAFETY: the caller is pinned; heads are alive.
    let h = unsafe { &*head };
    let free = |x: u64| x == 0 || x == tx.tid();
    if !free(h.txn_id.load(SeqCst)) {
        return Err(Error::Conflict(ConflictKind::ReadLock));
    }
    readers(h).fetch_add(1, SeqCst);
    // A writer may have locked the head (and checked the count, without
    // us) between our first check and the increment: look again.
    let recheck = !crate::sync::broken(crate::sync::Break::ReadLockNoRecheck);
    if recheck && (!free(h.txn_id.load(SeqCst)) || storage::newest(t, tuple) != head) {
        readers(h).fetch_sub(1, SeqCst);
        return Err(Error::Conflict(ConflictKind::ReadLock));
    }
    tx.reads_mut().push(ReadEntry {
        table: t,
        tuple,
        version: head,
    });
    Ok(head)
}

/// After taking the write lock on `head`: only our own read locks may be on it.
pub fn check_write(tx: &impl Txn, head: *mut Version) -> Result<()> {
    let mine = tx.reads().iter().filter(|r| r.version == head).count() as u64;
    // SAFETY: locked by us and alive.
    if readers(unsafe { &*head }).load(SeqCst) != mine {
        return Err(Error::Conflict(ConflictKind::ReadLock));
    }
    Ok(())
}

/// Releases every read lock (commit or abort).
pub fn release(tx: &mut impl Txn) {
    for r in tx.reads_mut().drain(..) {
        // SAFETY: a read-locked version cannot be superseded by anyone but us,
        // so it is still linked (and alive) until we release it.
        if let Some(v) = unsafe { r.version.as_ref() } {
            readers(v).fetch_sub(1, SeqCst);
        }
    }
}
