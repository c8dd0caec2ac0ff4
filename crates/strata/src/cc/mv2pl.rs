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

use crate::error::{ConflictKind, Error, Result};
use crate::storage::{self, version::Version};
use crate::table::TableInner;
use crate::txn::{ReadEntry, Transaction};
use std::sync::atomic::Ordering::SeqCst;

pub fn read(tx: &mut Transaction, t: &TableInner, tuple: u64) -> Result<*mut Version> {
    let head = storage::newest(t, tuple);
    if head.is_null() || tx.is_own(head) {
        return Ok(head);
    }
    // SAFETY: the caller is pinned; heads are alive.
    let h = unsafe { &*head };
    let free = |x: u64| x == 0 || x == tx.tid;
    if !free(h.txn_id.load(SeqCst)) {
        return Err(Error::Conflict(ConflictKind::ReadLock));
    }
    h.word_a.fetch_add(1, SeqCst);
    if !free(h.txn_id.load(SeqCst)) || storage::newest(t, tuple) != head {
        h.word_a.fetch_sub(1, SeqCst);
        return Err(Error::Conflict(ConflictKind::ReadLock));
    }
    tx.reads.push(ReadEntry {
        table: t,
        tuple,
        version: head,
    });
    Ok(head)
}

/// After taking the write lock on `head`: only our own read locks may be on it.
pub fn check_write(tx: &Transaction, head: *mut Version) -> Result<()> {
    let mine = tx.reads.iter().filter(|r| r.version == head).count() as u64;
    // SAFETY: locked by us and alive.
    if unsafe { (*head).word_a.load(SeqCst) } != mine {
        return Err(Error::Conflict(ConflictKind::ReadLock));
    }
    Ok(())
}

/// Releases every read lock (commit or abort).
pub fn release(tx: &mut Transaction) {
    for r in tx.reads.drain(..) {
        // SAFETY: a read-locked version cannot be superseded by anyone but us,
        // so it is still linked (and alive) until we release it.
        if let Some(v) = unsafe { r.version.as_ref() } {
            v.word_a.fetch_sub(1, SeqCst);
        }
    }
}
