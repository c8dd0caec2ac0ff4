//! The row write lock of the eager write path (and of a buffered
//! write's settle, `deferred`): the version header's `txn_id`, taken by
//! one CAS from 0 to our id, then the head re-checked and the protocol's
//! `check_write` asked; no-wait, except that a protocol whose write check
//! would accept what a deciding holder leaves (SSN's blind overwrites)
//! may wait that holder out.
//!
//! ```text
//!  head.txn_id: 0 ──CAS──> our id ── newest still head? ── P::check_write ── ok
//!                   │ lost                │ no                  │ refused
//!                   ▼                     ▼                     ▼
//!          conflict (or wait out    unlock, conflict       unlock, its error
//!          a deciding holder)
//! ```
//!
//! **Invariant owned here:** two writers that loaded the same head cannot
//! both lock it (`tests/model.rs`, `install_and_write_lock`), and a lock
//! is only kept on the row's current head.

use super::*;

impl Transaction {
    /// Takes the write lock on `head` and runs the protocol's write check.
    #[inline(always)]
    pub(super) fn lock_head<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        head: *mut Version,
    ) -> Result<()> {
        timed!(
            self,
            VersionInstall,
            self.lock_head_untimed::<P>(ti, tuple, head)
        )
    }

    #[inline(always)]
    fn lock_head_untimed<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        head: *mut Version,
    ) -> Result<()> {
        // SAFETY: pinned; heads are alive.
        let h = unsafe { &*head };
        // One CAS: two writers that loaded the same head cannot both lock
        // it (`tests/model.rs`, `install_and_write_lock`).
        let locked = if crate::sync::broken(crate::sync::Break::WriteLockCheckThenStore) {
            let free = h.txn_id.load(SeqCst) == 0;
            if free {
                h.txn_id.store(self.tid, SeqCst);
            }
            free
        } else {
            h.txn_id
                .compare_exchange(0, self.tid, SeqCst, SeqCst)
                .is_ok()
        };
        if !locked {
            return Err(Error::Conflict(ConflictKind::WriteWrite));
        }
        // The head may have been superseded between our load and the lock.
        if storage::newest(ti, tuple) != head {
            h.txn_id.store(0, SeqCst);
            return Err(Error::Conflict(ConflictKind::WriteWrite));
        }
        let check = P::check_write(self, ti, tuple, h);
        if check.is_err() {
            h.txn_id.store(0, SeqCst);
        }
        check
    }

    /// After `lock_head` failed: if the protocol would write over what the
    /// head's write-lock holder leaves (`Cc::waits_for_deciding_writer`)
    /// and the holder is deciding (it has announced its commit, or is
    /// rolling back), waits until the head changes or is unlocked; true:
    /// try again on the row's head. A holder that is still running is not
    /// waited for (no-wait locking), so waits cannot form a cycle: a
    /// deciding transaction never waits for a running one.
    pub(super) fn waited_out_writer<P: Cc>(
        &self,
        ti: &TableInner,
        tuple: u64,
        head: *mut Version,
    ) -> bool {
        // SAFETY: pinned; heads are alive.
        let h = unsafe { &*head };
        let holder = h.txn_id.load(SeqCst);
        if holder == 0 || holder == self.tid || !P::waits_for_deciding_writer(self, ti, tuple) {
            return false;
        }
        let backoff = crate::sync::Backoff::new();
        loop {
            if storage::newest(ti, tuple) != head || h.txn_id.load(SeqCst) != holder {
                self.db.tids.counts(self.tid).writer_wait();
                return true;
            }
            match self.db.tids.status(holder) {
                Status::Precommit
                | Status::Committing(_)
                | Status::Committed(_)
                | Status::Aborted => backoff.snooze(),
                Status::Active | Status::Gone => return false,
            }
        }
    }

    /// Releases a lock taken by `lock_head` when no write follows.
    pub(super) fn unlock_unused(&self, head: *mut Version) {
        // SAFETY: pinned; heads are alive.
        unsafe { (*head).txn_id.store(0, SeqCst) };
    }
}
