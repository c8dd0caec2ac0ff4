//! The transaction's side of `Options::memory_limit`: an insert or update
//! is refused over the limit (after one GC pass tried to get under it),
//! and each end of a transaction hands its allocations and this thread's
//! retirements to the gauge (`stats::MemoryGauge`, which owns the
//! accounting and its invariant).
//!
//! ```text
//!  insert / update ── check_growable ── over? ── GC pass ── over? ── Err(MemoryLimit)
//!  commit / abort  ── hand_over_memory(allocated) ──> gauge (only with a limit)
//! ```

use super::*;

impl Transaction {
    /// [`Transaction::check_writable`] for a write that adds memory (an
    /// insert, an update): also refused over `Options::memory_limit`.
    #[inline]
    pub(super) fn check_growable(&self, t: &Table) -> Result<()> {
        self.check_writable(t)?;
        if self.db.memory_limited && self.db.gc.common.memory.over() {
            return self.over_memory_limit();
        }
        Ok(())
    }

    /// Over the limit: one collector pass, then look again (the pass may
    /// retire enough), else `Error::MemoryLimit`.
    #[cold]
    #[inline(never)]
    fn over_memory_limit(&self) -> Result<()> {
        // (Not waiting for a pass another thread runs: that one helps too.)
        let _ = self.db.gc.collect(&*self.db, false);
        let m = &self.db.gc.common.memory;
        if !m.over() {
            return Ok(());
        }
        Err(Error::MemoryLimit {
            in_use: m.in_use(),
            limit: m.limit().unwrap_or(u64::MAX),
        })
    }

    /// Hands this thread's retirements since the last hand-over, and
    /// `allocated` (this transaction's, already in its slot's counts), to
    /// the memory gauge.
    #[inline]
    pub(super) fn hand_over_memory(&self, allocated: u64) {
        self.db.gc.common.memory.hand_over(allocated);
    }
}
