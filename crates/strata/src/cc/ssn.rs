//! SI + SSN: snapshot isolation made serializable by ERMIA's Serial Safety Net.
//!
//! Every transaction T gets, at commit, two watermarks over the dependency
//! graph of committed transactions:
//!
//! ```text
//!  eta(T) = pstamp  = max cstamp of T's predecessors      (who must come before)
//!  pi(T)  = sstamp  = min sstamp of T's rw-successors, and cstamp(T)
//!  commit only if  pi(T) > eta(T)         (the "exclusion window" is empty)
//! ```
//!
//! Stamps live on versions: [`pstamp`] (largest cstamp of a committed
//! reader) and [`sstamp`] (the overwriter's pi), the header's two protocol
//! words. Predecessors
//! come from the versions T overwrote (their creators and readers) and read
//! (their creators); successors from versions T read that someone overwrote.
//!
//! Concurrent commits: a reader that has drawn its cstamp but not yet
//! published it on the versions it read is found through its read filter,
//! a Bloom filter of version addresses in its TID slot (ERMIA keeps a
//! per-version reader bitmap instead; we have no header room for one, and a
//! per-reader filter costs a reader two uncontended bit-sets). A committing
//! overwriter scans the open slots' filters:
//!
//! ```text
//!  slot 3: COMMITTING(cts 41)  filter ∋ &v  -> a predecessor: wait, eta >= 41
//!  slot 5: ACTIVE              (it will see our marker in v.end itself)
//! ```
//!
//! An overwriter in the same state is found through the TID marker in the
//! version's `end`. A transaction waits only
//! for COMMITTING transactions with a *smaller* cstamp — those whose
//! decision it needs — so waits cannot form a cycle; those with a larger
//! cstamp account for the edge themselves when they commit.
//!
//! Blind overwrites (`Options::ssn_blind_writes`, on by default). SSN
//! certifies any history whose underlying rules forbid dirty reads and
//! lost updates (ERMIA §3.6); SI's first-updater-wins forbids more: every
//! write to a row committed after the snapshot. A lost update needs a read
//! of the row first, so the rule stays for rows the transaction read and
//! lifts for the others, whose write lands on the committed head:
//!
//! ```text
//!  T2 begin(10)                       T2 update x (never read x)
//!  T1 writes x, commits (cstamp 12)   head [begin 12] > 10: blind, allowed
//!  T1 -ww-> T2: eta(T2) >= 12, folded in like any overwritten creator
//!  T2 read y, T1 overwrote y?  pi(T2) <= pi(T1) <= 12 <= eta: abort (a cycle)
//! ```
//!
//! The newer head must be committed and unlocked (no dirty writes) and not
//! a tombstone (an update or delete would answer "not found" from a state
//! the snapshot does not show); inserts keep the rule too. Off, the
//! protocol is ERMIA's SI+SSN as published (the `ermia` preset).
//!
//! Early exclusion (ERMIA §3.3; `Options::ssn_early_exclusion`): the test
//! also runs on every read and overwrite, over the stamps already settled,
//! kept in the transaction's [`EarlyStamps`]:
//!
//! ```text
//!  read v, v's overwriter finished:  pi  = min(pi,  sstamp(v))
//!  read v / overwrite v:             eta = max(eta, creator's cstamp, pstamp(v))
//!  pi <= eta  ->  abort now (ssn-early-exclusion)
//! ```
//!
//! Invariant: an early abort happens only where the commit test would
//! fail. eta only grows and pi only shrinks as more stamps are seen, the
//! stamps read are final once published (a stamp not yet published reads
//! as its initial value, which only delays the abort), and the commit test
//! takes the max and min over a superset of them.

use super::Shared;
use super::Txn;
use super::{predicate, si, Cc, TxnCc};
use crate::error::{ConflictKind, Error, Result};
use crate::options::Protocol;
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::sync::atomic::{AtomicU64, Ordering::SeqCst};
use crate::table::TableInner;
use crate::tid::{Status, TidTable};
use std::cell::Cell;
use std::sync::Arc;

/// Snapshot isolation plus the Serial Safety Net.
pub(crate) struct SiSsn;

/// The watermarks settled so far in a running transaction, for the early
/// exclusion test (see the module doc).
pub(crate) struct EarlyStamps {
    /// eta so far: the largest settled predecessor cstamp.
    pstamp: Cell<u64>,
    /// pi so far: the smallest settled successor sstamp.
    sstamp: Cell<u64>,
}

impl EarlyStamps {
    /// Folds in a predecessor `eta` and a successor `pi`; false if the
    /// exclusion window is now empty.
    fn fold(&self, eta: u64, pi: u64) -> bool {
        self.pstamp.set(self.pstamp.get().max(eta));
        self.sstamp.set(self.sstamp.get().min(pi));
        self.sstamp.get() > self.pstamp.get()
    }
}

fn early(tx: &impl Txn) -> Option<&EarlyStamps> {
    match tx.state() {
        TxnCc::SiSsn(e) if tx.shared().ssn_early_exclusion => Some(e),
        _ => None,
    }
}

/// A version's creator cstamp, if settled (no wait).
fn settled_begin(v: &Version) -> u64 {
    let b = v.begin.load(SeqCst);
    if b & TID_MARK == 0 {
        b
    } else {
        0
    }
}

/// The settled cstamp of the creator of a version we overwrite: a
/// predecessor (a blind overwrite's may have committed after our snapshot).
fn overwritten_creator(old: &Version) -> u64 {
    if crate::sync::broken(crate::sync::Break::OverwriteForgetsCreator) {
        return 0;
    }
    settled_begin(old)
}

/// The version's pstamp: the largest commit stamp of a committed reader.
#[inline]
pub(crate) fn pstamp(v: &Version) -> &AtomicU64 {
    &v.cc_words[0]
}

/// The version's sstamp: its overwriter's low watermark (pi); INF_TS
/// until an overwriter commits.
#[inline]
pub(crate) fn sstamp(v: &Version) -> &AtomicU64 {
    &v.cc_words[1]
}

impl Cc for SiSsn {
    const PROTOCOL: Protocol = Protocol::SiSsn;
    const SNAPSHOT_READS: bool = true;
    const VALIDATES_SCANS: bool = true;
    const SCAN_RECORDS: bool = true;
    // A reader can close a cycle between writers (the read-only anomaly).
    const READ_ONLY_COMMIT_UNCHECKED: bool = false;
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = Some(ConflictKind::WriteWrite);
    type State = EarlyStamps;

    fn new_state(_tid: u64, _ts: u64, _read_only: bool) -> TxnCc {
        TxnCc::SiSsn(EarlyStamps {
            pstamp: Cell::new(0),
            sstamp: Cell::new(INF_TS),
        })
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        tx.snapshot_read::<Self>(t, tuple)
    }

    fn on_read(tx: &mut impl Txn, v: *mut Version) -> Result<()> {
        on_read(tx, v);
        // SAFETY: pinned by the caller; v is the version just read.
        match (early(tx), unsafe { v.as_ref() }) {
            (Some(e), Some(v)) => {
                let e_ts = v.end.load(SeqCst);
                // An overwriter that has finished left its pi on v.
                let pi = if e_ts != INF_TS && e_ts & TID_MARK == 0 {
                    self::sstamp(v).load(SeqCst)
                } else {
                    INF_TS
                };
                if e.fold(settled_begin(v), pi) {
                    Ok(())
                } else {
                    Err(Error::Conflict(ConflictKind::SsnEarlyExclusion))
                }
            }
            _ => Ok(()),
        }
    }

    fn on_overwrite(tx: &mut impl Txn, old: &Version) -> Result<(), ConflictKind> {
        match early(tx) {
            // Committed readers of `old` and its creator come before us.
            Some(e)
                if !e.fold(
                    overwritten_creator(old).max(pstamp(old).load(SeqCst)),
                    INF_TS,
                ) =>
            {
                Err(ConflictKind::SsnEarlyExclusion)
            }
            _ => Ok(()),
        }
    }

    fn check_write(tx: &impl Txn, t: &TableInner, tuple: u64, head: &Version) -> Result<()> {
        match si::first_updater_wins(tx, head) {
            // (Asked only of a head newer than the snapshot: the rare case.)
            Err(_) if tx.shared().ssn_blind_writes && blind_overwrite(tx, t, tuple, head) => {
                tx.shared().tids.counts(tx.tid()).blind_overwrite();
                Ok(())
            }
            r => r,
        }
    }

    fn waits_for_deciding_writer(tx: &impl Txn, t: &TableInner, tuple: u64) -> bool {
        tx.shared().ssn_blind_writes && !read_row(tx, t, tuple)
    }

    fn note_read(tx: &mut impl Txn, t: &TableInner, tuple: u64, v: *mut Version) -> Result<()> {
        tx.record_read::<Self>(t, tuple, v)
    }

    fn validate(tx: &mut impl Txn, cts: u64) -> Result<(), ConflictKind> {
        pre_commit(tx, cts)
    }

    #[inline]
    fn post_commit(tx: &mut impl Txn, cts: u64) {
        post_commit(tx, cts);
        if !tx.scans().is_empty() {
            predicate::stamp_epochs(tx);
        }
    }

    fn on_abort(tx: &mut impl Txn) {
        if !tx.scans().is_empty() {
            predicate::withdraw(tx);
        }
    }

    fn prune(db: &Shared, tables: &[Arc<TableInner>], horizon: u64, every_shard: bool) {
        // (Scanning the TID table every pass cost a 50%-update YCSB
        // transaction, which scans nothing, about 110 instructions.)
        let quiesced = if predicate::any_scan_records(tables) {
            db.quiescence.advance(&db.tids)
        } else {
            db.quiescence.quiesced()
        };
        tables
            .iter()
            .for_each(|t| predicate::prune(t, horizon, quiesced, every_shard));
    }
}

/// A blind overwrite (`Options::ssn_blind_writes`): may we write over
/// `head`, committed after our snapshot, because we never read the row?
/// SSN certifies any history whose underlying rules prevent dirty reads
/// and lost updates (ERMIA §3.6); SI's first-updater-wins is stricter
/// than that. A lost update needs a read of the row before the write, so
/// the rule holds for rows we read (and for deletes, which answer
/// "not found" from what they see); a row we only write takes the
/// committed head as its base, and the overwrite is a ww edge from its
/// creator, which committed first and which `watermarks` folds into eta
/// like any other.
fn blind_overwrite(tx: &impl Txn, t: &TableInner, tuple: u64, head: &Version) -> bool {
    // (An unlocked head's creator has stamped it already; the check costs
    // nothing and keeps a dirty write out should that ever change.)
    let b = head.begin.load(SeqCst);
    b & TID_MARK == 0 && !head.is_tombstone() && !read_row(tx, t, tuple)
}

/// Whether this transaction read row `tuple` of `t` (its read set).
fn read_row(tx: &impl Txn, t: &TableInner, tuple: u64) -> bool {
    tx.reads()
        .iter()
        .any(|r| r.tuple == tuple && std::ptr::eq(r.table, t))
}

/// Records an in-flight read of `v` (null: nothing to record) in our
/// slot's read filter.
pub fn on_read(tx: &mut impl Txn, v: *mut Version) {
    if !v.is_null() {
        tx.shared().tids.slot(tx.tid()).reads.insert(v as usize);
    }
}

/// The commit timestamp of `v`'s creator (`v` is committed).
fn creator_cstamp(v: &Version, tids: &TidTable) -> u64 {
    let b = v.begin.load(SeqCst);
    if b & TID_MARK == 0 {
        return b;
    }
    match tids.wait_decided(b & !TID_MARK) {
        Status::Committed(c) => c,
        _ => v.begin.load(SeqCst) & !TID_MARK,
    }
}

/// The SSN exclusion-window test; runs with our cstamp drawn and status
/// COMMITTING.
pub fn pre_commit(tx: &mut impl Txn, cts: u64) -> Result<(), ConflictKind> {
    let _guard = crossbeam_epoch::pin();
    if !tx.scans().is_empty() {
        predicate::publish_pending::<SiSsn>(tx, cts);
        if !predicate::validate_scans::<SiSsn>(tx) {
            return Err(ConflictKind::Validation);
        }
    }
    let (pstamp, sstamp) = watermarks(tx, cts)?;
    if !predicate::try_commit_records(tx) {
        return Err(ConflictKind::Validation);
    }
    let slot = tx.shared().tids.slot(tx.tid());
    slot.pstamp.store(pstamp, SeqCst);
    slot.sstamp.store(sstamp, SeqCst);
    Ok(())
}

/// Computes (eta, pi) and applies the exclusion-window test.
fn watermarks(tx: &impl Txn, cts: u64) -> Result<(u64, u64), ConflictKind> {
    let tids = &tx.shared().tids;
    let mut pstamp = 0u64;
    let mut sstamp = cts;

    // Successors: overwriters of what we read.
    for r in tx.reads() {
        // SAFETY: pinned; read versions are at or above our visible versions.
        let Some(v) = (unsafe { r.version.as_ref() }) else {
            continue;
        };
        pstamp = pstamp.max(creator_cstamp(v, tids));
        let e = v.end.load(SeqCst);
        if e == INF_TS {
            continue;
        }
        if e & TID_MARK != 0 {
            let u = e & !TID_MARK;
            if u == tx.tid() {
                continue;
            }
            match tids.settled_status(u) {
                Status::Committing(c) | Status::Committed(c) if c < cts => {
                    if let Status::Committed(_) = tids.wait_decided(u) {
                        let s = tids.slot(u).sstamp.load(SeqCst);
                        if tids.status(u) != Status::Gone {
                            sstamp = sstamp.min(s);
                            continue;
                        }
                    }
                }
                Status::Gone => {}
                _ => continue,
            }
            // The overwriter has finished: its stamps are on the version.
            if v.end.load(SeqCst) & TID_MARK == 0 && v.end.load(SeqCst) != INF_TS {
                sstamp = sstamp.min(self::sstamp(v).load(SeqCst));
            }
        } else {
            sstamp = sstamp.min(self::sstamp(v).load(SeqCst));
        }
    }

    // Predecessors: creators and readers of what we overwrote, and
    // scanners of keys we inserted.
    let mut earlier = None;
    for w in tx.writes() {
        // SAFETY: the versions we overwrote are locked by us and alive.
        match unsafe { w.old.as_ref() } {
            Some(old) => {
                if !crate::sync::broken(crate::sync::Break::OverwriteForgetsCreator) {
                    pstamp = pstamp.max(creator_cstamp(old, tids));
                }
                let earlier = earlier.get_or_insert_with(|| tids.committed_before(tx.tid(), cts));
                earlier.possible_readers(w.old as usize, |reader, c| {
                    if let Status::Committed(_) = tids.wait_decided(reader) {
                        pstamp = pstamp.max(c);
                    }
                });
                // Readers that finished published their cstamp here before
                // freeing their slot.
                pstamp = pstamp.max(self::pstamp(old).load(SeqCst));
            }
            None => {
                // SAFETY: tables outlive transactions.
                let t = unsafe { &*w.table };
                let Some(k) = &w.index_key else { continue };
                let (recs, pruned) =
                    records_then_pruned(&t.scan_log, || predicate::scanners_of(t, k, tx));
                pstamp = pstamp.max(pruned);
                scanner_predecessors(recs, cts, &mut pstamp)?;
            }
        }
    }
    // Entries we added to secondary indexes (inserts, and updates that give
    // a row a new index key) are inserts into those indexes' scanned ranges.
    for (idx, k, row) in crate::index::added_keys(tx.sec_writes()) {
        let (recs, pruned) = records_then_pruned(&idx.scan_log, || {
            predicate::scanners_in(&idx.scan_log, &k, Some(row), tx)
        });
        pstamp = pstamp.max(pruned);
        scanner_predecessors(recs, cts, &mut pstamp)?;
    }

    if sstamp <= pstamp {
        return Err(ConflictKind::SsnExclusion);
    }
    Ok((pstamp, sstamp))
}

/// `scan()`'s records of `log`, then the largest stamp of the records `log`
/// has pruned, in that order: a prune removes records and folds their
/// stamps in under the log's lock, so a record missing from what `scan`
/// took was folded in before it took it. The stamp read first let a
/// scanner pruned in between go missing from both: a committed scanner of
/// a key we insert (an absent read that finished before we began, but
/// still our predecessor) was left out of eta, and SSN committed a cycle
/// of three rw edges (about once in 20,000 runs of `tests/storage.rs`'s
/// `ssn_on_predicates_over_many_seeds`; `tests/model.rs`,
/// `ssn_insert_vs_scan_log_prune`).
fn records_then_pruned(
    log: &crate::index::scan_log::ScanLog,
    scan: impl FnOnce() -> Vec<Arc<predicate::ScanRecord>>,
) -> (Vec<Arc<predicate::ScanRecord>>, u64) {
    if crate::sync::broken(crate::sync::Break::PrunedStampFirst) {
        let pruned = log.pruned_pstamp();
        crate::sync::step();
        return (scan(), pruned);
    }
    let recs = scan();
    // (The model may run a prune here: it must change nothing.)
    crate::sync::step();
    (recs, log.pruned_pstamp())
}

/// Scanners whose range covers a key we inserted are our predecessors.
fn scanner_predecessors(
    recs: Vec<std::sync::Arc<predicate::ScanRecord>>,
    cts: u64,
    pstamp: &mut u64,
) -> Result<(), ConflictKind> {
    for rec in recs {
        if rec.cstamp > cts {
            // It has not accounted for us; stop it if we can.
            if rec
                .state
                .compare_exchange(predicate::PENDING, predicate::POISONED, SeqCst, SeqCst)
                .is_err()
                && rec.state.load(SeqCst) == predicate::COMMITTED
            {
                return Err(ConflictKind::SsnExclusion);
            }
        } else if rec.wait_decided() == predicate::COMMITTED {
            *pstamp = (*pstamp).max(rec.cstamp);
        }
    }
    Ok(())
}

/// After COMMITTED: publish our cstamp on what we read and our sstamp on
/// what we overwrote (our final low watermark, which `pre_commit` left in
/// our slot; only the occupant writes it).
#[inline]
pub fn post_commit(tx: &mut impl Txn, cts: u64) {
    let sstamp = tx.shared().tids.slot(tx.tid()).sstamp.load(SeqCst);
    for r in tx.reads() {
        // SAFETY: as in pre_commit.
        if let Some(v) = unsafe { r.version.as_ref() } {
            // A load first: transactions that wrote nothing share their
            // stamp until the next writer commits (`cc::read_only_stamp`),
            // so on a hot version the stamp is usually there already, and
            // a locked RMW would take the line from every other reader for
            // nothing. pstamp only grows, so skipping is the RMW's no-op;
            // an overwriter that later loads it sees this value or a
            // larger one (all SeqCst).
            let p = self::pstamp(v);
            if p.load(SeqCst) < cts {
                p.fetch_max(cts, SeqCst);
            }
        }
    }
    for w in tx.writes() {
        // SAFETY: locked by us and alive.
        if let Some(old) = unsafe { w.old.as_ref() } {
            self::sstamp(old).store(sstamp, SeqCst);
        }
    }
}
