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
//!
//! The log is split into shards, one per TID slot modulo [`SHARDS`], so
//! that scanners on different threads write different lines (issue 42's
//! shared writes: one log under one lock was 0.30 shared writes a TPC-C
//! commit, Payment's by-name scans). A scanner pushes into its slot's shard
//! and prunes that shard as it pushes; a GC pass prunes only the shards
//! whose scanners have pushed nothing since its last look, so an active
//! scanner's shard is written by its thread alone:
//!
//! ```text
//!  shard 0 (slots 0, 16, ..): [r r r]   pushed and pruned by its scanner
//!  shard 1 (slots 1, 17, ..): [r]       idle since the last pass: the pass prunes it
//!  nonempty: 0b..011                    inserters look here first
//! ```
//!
//! Each shard keeps its own `pruned_pstamp`, folded under its lock; an
//! inserter takes every shard's records first and the stamps after, so
//! the order that keeps a pruned record's stamp in view holds shard by
//! shard.

use super::key::EncodedKey;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::any::Any;
use std::ops::Bound;
use std::sync::atomic::{
    AtomicU64, AtomicU8,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::{Arc, OnceLock};

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
        // (The model build's backoff yields to the other model threads:
        // crossbeam's spun forever there, its scanner never scheduled.)
        let backoff = crate::sync::Backoff::new();
        loop {
            match self.state.load(SeqCst) {
                PENDING => backoff.snooze(),
                s => return s,
            }
        }
    }
}

/// Shards of a log: at most 64 (one bit each in `ScanLog::nonempty`).
pub const SHARDS: usize = 16;

/// One shard: the records of scanners in its TID slots.
#[derive(Default)]
struct Shard {
    records: Mutex<Vec<Arc<ScanRecord>>>,
    /// Largest commit stamp among the records pruned from this shard.
    pruned_pstamp: AtomicU64,
    /// Pushes so far (written by the pusher, under the lock).
    pushes: AtomicU64,
}

/// A log's shards, made by its first push.
struct Parts {
    shards: [CachePadded<Shard>; SHARDS],
    /// Per shard, its `pushes` at a GC pass's last look: unchanged at the
    /// next, the shard's scanners have been idle since, and the pass
    /// prunes it. Written by passes only, on lines of their own.
    seen: CachePadded<[AtomicU64; SHARDS]>,
}

/// The scan records of one key space.
#[derive(Default)]
pub struct ScanLog {
    /// Made by the first push (about 2.2 KB): a key space nobody scans,
    /// most of them, costs the three words here, and the table or index
    /// that holds the log keeps its layout.
    parts: OnceLock<Box<Parts>>,
    /// Bit `s`: shard `s` holds records. Changed under the shard's lock, and
    /// only when the shard goes from empty to not or back (SeqCst). Every
    /// insert of SSN and SSI looks here first, after its fence, and takes a
    /// shard's lock only where the bit is set: the lock is a line every
    /// inserting thread would write (6.7 shared writes a TPC-C commit,
    /// `--shared-writes`, issue 42, while no scan record existed). A bit
    /// read as clear is a lock taken before the shard's next push, in the
    /// same total order (the push sets the bit SeqCst, under the lock, or
    /// finds it set).
    nonempty: AtomicU64,
    /// Bit `s`: shard `s` has folded a stamp, set once, after the stamp
    /// (SeqCst): `pruned_pstamp` reads only those shards. Reading all 16
    /// cost an insert about 18 instructions per log it checks, about 760 a
    /// TPC-C transaction, where only the customer index was ever scanned.
    folded: AtomicU64,
}

impl Parts {
    fn new() -> Box<Parts> {
        Box::new(Parts {
            shards: std::array::from_fn(|_| CachePadded::default()),
            seen: CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0))),
        })
    }
}

/// Drops `log`'s records no open transaction can conflict with (see
/// [`ScanLog::prune`]); returns the largest stamp folded (0: none).
fn prune_records(log: &mut Vec<Arc<ScanRecord>>, horizon: u64, quiesced: u64) -> u64 {
    let mut folded = 0;
    log.retain(|r| match r.state.load(SeqCst) {
        ABORTED | POISONED => false,
        COMMITTED if r.cstamp < horizon || r.epoch.load(SeqCst) <= quiesced => {
            folded = folded.max(r.cstamp);
            false
        }
        _ => true,
    });
    folded
}

impl ScanLog {
    /// Adds `rec` to the shard of TID slot `slot`, pruning that shard first
    /// by `horizon` and `quiesced` (the last ones published: see
    /// [`ScanLog::prune`]).
    pub fn push(&self, slot: usize, rec: Arc<ScanRecord>, horizon: u64, quiesced: u64) {
        let s = slot % SHARDS;
        let parts = self.parts.get_or_init(Parts::new);
        let shard = &parts.shards[s];
        let mut log = shard.records.lock();
        crate::sync::wrote(&shard.records);
        if !log.is_empty() {
            let folded = prune_records(&mut log, horizon, quiesced);
            self.fold(parts, s, folded);
        }
        log.push(rec);
        shard.pushes.store(shard.pushes.load(Relaxed) + 1, Relaxed);
        if self.nonempty.load(SeqCst) & 1 << s == 0 {
            crate::sync::wrote(&self.nonempty);
            self.nonempty.fetch_or(1 << s, SeqCst);
        }
    }

    /// Whether the log holds no record, without a lock (see `nonempty`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nonempty.load(SeqCst) == 0
    }

    /// The records `keep` picks, shard by shard under each shard's lock
    /// (an inserter's filter; only shards that hold records are locked).
    pub fn records_where(&self, mut keep: impl FnMut(&ScanRecord) -> bool) -> Vec<Arc<ScanRecord>> {
        let mut out = Vec::new();
        let mut bits = self.nonempty.load(SeqCst);
        // (A bit is set after the parts are made: a reader that sees one
        // sees them.)
        let Some(parts) = self.parts.get() else {
            return out;
        };
        while bits != 0 {
            let shard = &parts.shards[bits.trailing_zeros() as usize];
            bits &= bits - 1;
            let log = shard.records.lock();
            crate::sync::wrote(&shard.records);
            out.extend(log.iter().filter(|r| keep(r)).cloned());
        }
        out
    }

    /// The records held (for `Stats`).
    pub fn len(&self) -> usize {
        (self.parts.get()).map_or(0, |p| p.shards.iter().map(|s| s.records.lock().len()).sum())
    }

    /// The largest commit stamp of a record pruned so far (read after the
    /// records: see the module doc).
    pub fn pruned_pstamp(&self) -> u64 {
        let mut bits = self.folded.load(SeqCst);
        let mut max = 0;
        let Some(parts) = self.parts.get() else {
            return 0;
        };
        while bits != 0 {
            let shard = &parts.shards[bits.trailing_zeros() as usize];
            bits &= bits - 1;
            max = max.max(shard.pruned_pstamp.load(SeqCst));
        }
        max
    }

    /// Folds `stamp` into shard `s`'s `pruned_pstamp` (under its lock).
    fn fold(&self, parts: &Parts, s: usize, stamp: u64) {
        let shard = &parts.shards[s];
        if stamp > shard.pruned_pstamp.load(SeqCst) {
            shard.pruned_pstamp.store(stamp, SeqCst);
            // (After the stamp: a reader that sees the bit sees the stamp.)
            if self.folded.load(SeqCst) & 1 << s == 0 {
                crate::sync::wrote(&self.folded);
                self.folded.fetch_or(1 << s, SeqCst);
            }
        }
    }

    /// A GC pass's pruning: drops records no open transaction can conflict
    /// with (see the module invariant) from the shards whose scanners have
    /// pushed nothing since the pass before (an active scanner prunes its
    /// own shard as it pushes), or from every shard with `every_shard`;
    /// `horizon` is the GC horizon, `quiesced` the quiescence epoch
    /// (`cc::quiescence`).
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
    pub fn prune(&self, horizon: u64, quiesced: u64, every_shard: bool) {
        let mut bits = self.nonempty.load(SeqCst);
        let Some(parts) = self.parts.get() else {
            return;
        };
        while bits != 0 {
            let s = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let shard = &parts.shards[s];
            let pushes = shard.pushes.load(Relaxed);
            let seen = &parts.seen[s];
            if pushes != seen.load(Relaxed) {
                crate::sync::wrote(seen);
                seen.store(pushes, Relaxed);
                if !every_shard {
                    continue;
                }
            }
            let mut log = shard.records.lock();
            crate::sync::wrote(&shard.records);
            let folded = prune_records(&mut log, horizon, quiesced);
            self.fold(parts, s, folded);
            if log.is_empty() {
                crate::sync::wrote(&self.nonempty);
                self.nonempty.fetch_and(!(1 << s), SeqCst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cstamp: u64, state: u8) -> Arc<ScanRecord> {
        Arc::new(ScanRecord {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
            cstamp,
            state: AtomicU8::new(state),
            epoch: AtomicU64::new(u64::MAX),
            scanner: None,
            rows: Vec::new(),
        })
    }

    fn stamps(log: &ScanLog) -> Vec<u64> {
        let mut v: Vec<u64> = log
            .records_where(|_| true)
            .iter()
            .map(|r| r.cstamp)
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_scanner_prunes_its_own_shard_and_a_pass_only_the_idle_ones() {
        let log = ScanLog::default();
        assert!(log.is_empty());
        // Nothing made until the first push; a pass and a reader find nothing.
        log.prune(10, 0, true);
        assert!(log.parts.get().is_none() && stamps(&log).is_empty());
        assert_eq!(log.len(), 0);
        assert_eq!(log.pruned_pstamp(), 0);
        log.push(0, record(5, COMMITTED), 0, 0);
        // Slot 1's scanner: its committed record below the horizon goes as
        // it pushes the next one, its stamp folded.
        log.push(1, record(7, COMMITTED), 0, 0);
        log.push(1, record(20, PENDING), 10, 0);
        assert_eq!(stamps(&log), [5, 20]);
        assert_eq!(log.pruned_pstamp(), 7);
        assert_eq!(log.folded.load(SeqCst), 0b10, "only shard 1 folded");
        // A pass's first look finds both shards pushed to since: it keeps
        // them (their scanners prune them).
        log.prune(10, 0, false);
        assert_eq!(stamps(&log), [5, 20]);
        // Nothing pushed since: slot 0's shard is idle and pruned (slot
        // 1's record is still deciding), its bit cleared.
        log.prune(10, 0, false);
        assert_eq!(stamps(&log), [20]);
        assert_eq!(log.nonempty.load(SeqCst), 0b10);
        assert_eq!((log.folded.load(SeqCst), log.pruned_pstamp()), (0b11, 7));
        // A pass someone waits for prunes an active shard too.
        log.push(1 + SHARDS, record(8, ABORTED), 0, 0);
        log.prune(10, 0, true);
        assert_eq!(stamps(&log), [20]);
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn slots_share_a_shard_modulo_the_shards_and_inserters_see_every_shard() {
        let log = ScanLog::default();
        log.push(2, record(1, PENDING), 0, 0);
        log.push(2 + SHARDS, record(2, PENDING), 0, 0);
        log.push(3, record(3, PENDING), 0, 0);
        assert_eq!(log.nonempty.load(SeqCst), 0b1100);
        assert_eq!(stamps(&log), [1, 2, 3]);
        assert_eq!(log.records_where(|r| r.cstamp != 2).len(), 2);
    }
}
