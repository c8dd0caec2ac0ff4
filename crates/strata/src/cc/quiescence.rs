//! Quiescence epochs: ordering a committed transaction before every open
//! one when commit stamps cannot.
//!
//! A commit that wrote nothing stamps the clock plus one without moving
//! the clock, so while nothing writes the GC horizon stays below every
//! such stamp, and "committed below the horizon" never says that the
//! transaction finished before every open one began. Protocol state kept
//! for transactions that may still be concurrent with open ones (SSI's
//! SIREAD marks and writer states, SSN's and SSI's scan records) then
//! piled up. A GC pass orders them instead by *quiescence*: it closes an
//! epoch (the epoch moves) and lists the TID table's taken slots; once
//! every one of them has been left, each transaction that read an epoch
//! at or below the closed one after committing had committed before every
//! open transaction began, so no open or later transaction is concurrent
//! with it.
//!
//! ```text
//!  R: COMMITTED, then reads epoch e ─┐   (SeqCst: before the move)
//!  GC: epoch e -> e+1, lists taken slots {3, 7}
//!  T3, T7 end ...                    └─> quiesced = e: R's state goes
//!  W begins (any later slot): began after R committed, so R -rw-> W is
//!  no edge between concurrent transactions
//! ```
//!
//! The invariant this module owns: **`quiesced()` is an epoch at or below
//! which every transaction that read it after its commit point finished
//! before every transaction open now began.** Readers store the epoch
//! after they are COMMITTED (SeqCst both), never before.

use crate::tid::{Occupied, TidTable};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

/// The epoch, what the last scan of the TID table found, and the epoch
/// known quiesced.
pub(crate) struct Quiescence {
    /// Moved by GC passes only: committers read it (one load of a line
    /// nobody else writes).
    epoch: CachePadded<AtomicU64>,
    /// The epoch closed by the last scan of the TID table and the slots
    /// that scan found taken, until all of them have been left.
    waiting: Mutex<Option<(u64, Occupied)>>,
    /// Transactions that committed in this epoch or before are quiesced.
    quiesced: AtomicU64,
}

impl Default for Quiescence {
    fn default() -> Self {
        Quiescence {
            epoch: CachePadded::new(AtomicU64::new(1)),
            waiting: Mutex::new(None),
            quiesced: AtomicU64::new(0),
        }
    }
}

impl Quiescence {
    /// The epoch a committed transaction records (after its commit point).
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(SeqCst)
    }

    /// The last epoch known quiesced.
    pub fn quiesced(&self) -> u64 {
        self.quiesced.load(SeqCst)
    }

    /// A GC pass's step: if every slot the last scan found taken has been
    /// left, that scan's epoch is quiesced; then closes the current epoch
    /// and scans again. Returns the epoch known quiesced.
    pub fn advance(&self, tids: &TidTable) -> u64 {
        let mut waiting = self.waiting.lock();
        if let Some((closed, open)) = &*waiting {
            if tids.any_still_open(open) {
                return self.quiesced.load(SeqCst);
            }
            self.quiesced.store(*closed, SeqCst);
        }
        // The move comes before the scan (both SeqCst): a committer that
        // read `closed` did so before the move, so every transaction
        // concurrent with it had claimed its slot before our scan.
        let closed = self.epoch.fetch_add(1, SeqCst);
        *waiting = Some((closed, tids.occupied()));
        self.quiesced.load(SeqCst)
    }
}
