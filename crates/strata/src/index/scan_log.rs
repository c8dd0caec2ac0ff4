//! Scan logs: the committed range scans over one key space (a table's
//! primary keys, or one secondary index's entry keys), kept where an
//! inserter into that key space finds them.
//!
//! ```text
//!  table t.scan_log:  [10,20] cstamp 40 COMMITTED   [30,∞) cstamp 55 PENDING
//!  insert of key 15 at cstamp 60 ──covers──> the scanner of [10,20] read
//!  before us: an rw predecessor (SSN raises pstamp, SSI marks the edge)
//! ```
//!
//! The log is protocol state that lives on a table or index: the protocols
//! that publish records (SSN and SSI, `cc::predicate` says when and how)
//! own its meaning; this module owns only the records' life cycle, so that
//! tables and indexes can hold a log without depending on `cc`.
//!
//! Invariant: a record leaves the log only once no open transaction can
//! still conflict with it: ABORTED or POISONED, or COMMITTED with a stamp
//! below the GC horizon, whose stamp is then folded into
//! [`ScanLog::pruned_pstamp`] (an inserter takes that as the stamp of every
//! pruned scanner that might have covered its key), or COMMITTED in a
//! quiescence epoch every transaction open since has left, which orders it
//! before them as a stamp below the horizon does, and is folded the same
//! way (see [`ScanLog::prune`]).

use super::key::EncodedKey;
use parking_lot::{Mutex, MutexGuard};
use std::any::Any;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// The scanner is still deciding (validating its commit).
pub const PENDING: u8 = 0;
pub const COMMITTED: u8 = 1;
pub const ABORTED: u8 = 2;
/// An inserter with a smaller stamp found the record PENDING: the scanner
/// must abort (it would miss the inserter's row).
pub const POISONED: u8 = 3;

/// A committed (or committing) scanner's range.
pub struct ScanRecord {
    pub lo: Bound<EncodedKey>,
    pub hi: Bound<EncodedKey>,
    pub cstamp: u64,
    pub state: AtomicU8,
    /// The quiescence epoch the scanner read after its commit point
    /// (`u64::MAX` until then; `cc::quiescence`).
    pub epoch: AtomicU64,
    /// The scanner's protocol state that an inserter marks an rw edge on
    /// (SSI's `cc::ssi::SsiTxn`); opaque here, see `cc::ssi`.
    pub scanner: Option<Arc<dyn Any + Send + Sync>>,
    /// Index ranges: rows (sorted tuple ids) the scanner's read tracking
    /// accounts for (`cc::predicate::accounted_rows`); empty for primary
    /// ranges, where an insert makes a new row.
    pub rows: Vec<u64>,
}

impl ScanRecord {
    pub fn covers(&self, k: &EncodedKey) -> bool {
        let above = match &self.lo {
            Bound::Included(l) => k >= l,
            Bound::Excluded(l) => k > l,
            Bound::Unbounded => true,
        };
        let below = match &self.hi {
            Bound::Included(h) => k <= h,
            Bound::Excluded(h) => k < h,
            Bound::Unbounded => true,
        };
        above && below
    }

    /// Waits while the scanner is deciding; returns the final state.
    pub fn wait_decided(&self) -> u8 {
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            match self.state.load(SeqCst) {
                PENDING => backoff.snooze(),
                s => return s,
            }
        }
    }
}

/// The scan records of one key space.
#[derive(Default)]
pub struct ScanLog {
    records: Mutex<Vec<Arc<ScanRecord>>>,
    /// `records`' length, stored under its lock: every insert of SSN and
    /// SSI looks here first, after its fence, and takes the lock only when
    /// the log holds records. The lock is a line every inserting thread
    /// wrote: 6.7 shared writes a TPC-C commit (`--shared-writes`, issue
    /// 42) while no scan record existed at all. A count read as zero is a
    /// lock taken before the first push, in the same total order (the
    /// push's store is SeqCst, under the lock).
    len: AtomicUsize,
    /// Largest commit stamp among pruned records.
    pruned_pstamp: AtomicU64,
}

impl ScanLog {
    pub fn push(&self, rec: Arc<ScanRecord>) {
        let mut log = self.records.lock();
        crate::sync::wrote(&self.records);
        log.push(rec);
        self.len.store(log.len(), SeqCst);
    }

    /// Whether the log holds no record, without its lock (see `len`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len.load(SeqCst) == 0
    }

    /// The records, locked (an inserter filters them under the lock).
    pub fn records(&self) -> MutexGuard<'_, Vec<Arc<ScanRecord>>> {
        let log = self.records.lock();
        crate::sync::wrote(&self.records);
        log
    }

    /// The largest commit stamp of a record pruned so far.
    pub fn pruned_pstamp(&self) -> u64 {
        self.pruned_pstamp.load(SeqCst)
    }

    /// Drops records no open transaction can conflict with (see the module
    /// invariant); `horizon` is the GC horizon, `quiesced` the quiescence
    /// epoch (`cc::quiescence`).
    ///
    /// Either way its scanner committed before every open transaction
    /// began, and either way its stamp is folded into `pruned_pstamp`:
    /// such a scanner is still the predecessor of a later inserter of a key
    /// it covered, and SSN needs the edge (a cycle can close through a
    /// writer that was concurrent with the scanner and has committed since:
    /// `cc::ssn::records_then_pruned`). Folding a quiesced no-write
    /// scanner's stamp (the clock plus one, `cc::read_only_stamp`) raises
    /// an inserter's pstamp to just below every stamp drawn after it,
    /// never to a writer's, so it adds no abort a kept record would not.
    pub fn prune(&self, horizon: u64, quiesced: u64) {
        if self.is_empty() {
            return;
        }
        let mut log = self.records.lock();
        crate::sync::wrote(&self.records);
        let mut folded = 0;
        log.retain(|r| match r.state.load(SeqCst) {
            ABORTED | POISONED => false,
            COMMITTED if r.cstamp < horizon || r.epoch.load(SeqCst) <= quiesced => {
                folded = folded.max(r.cstamp);
                false
            }
            _ => true,
        });
        self.len.store(log.len(), SeqCst);
        self.pruned_pstamp.fetch_max(folded, SeqCst);
    }
}
