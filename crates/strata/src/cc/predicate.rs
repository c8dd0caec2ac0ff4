//! Phantom protection for range scans and reads of absent keys.
//!
//! Every serializable protocol except MVTO re-validates its predicate reads
//! at commit: the scanned key range is looked up again in the index, and a
//! row that is there now but was not seen (a committed or running insert)
//! aborts the transaction.
//!
//! ```text
//!  scan [10, 20] saw tuples {12, 17}     at commit: index[10, 20] = {12, 15, 17}
//!                                        15 is a phantom -> abort
//! ```
//!
//! For MVOCC and MV2PL that is enough, as their serial order is the commit
//! order. For SSN and SSI an insert that commits *after* the scanner is
//! still an rw-antidependency (the scanner should have seen the row), so a
//! scanner also leaves a *scan record* (range, commit stamp) on the table
//! before it re-validates. A later inserter of a key in the range treats the
//! scanner as its predecessor (SSN: raises its high watermark; SSI: marks the
//! rw edge). A record is PENDING while the scanner decides; an inserter that
//! meets a PENDING record from a scanner with a larger stamp poisons it (the
//! scanner then aborts), so the edge is never lost either way. Index-range
//! records also list the rows the scanner read: an entry of one of those is
//! a change to a read row, whose edge the read tracking carries (see
//! [`accounted_rows`]), so it neither poisons nor marks a deciding scanner.
//!
//! With its record out, an SSN or SSI scanner of a logical secondary index
//! may skip the re-scan: the index counts every entry added
//! (`secondary::Additions`), and a scan that read the count before its
//! first entry, met only entries that led to rows it saw, and finds the
//! count unchanged at commit knows the range holds nothing it did not see;
//! an entry added after that check is its inserter's to answer for, since
//! the inserter looks for records after it counted (`SecScan::additions_at`).
//!
//! ```text
//!  scan: count=41, walk [5,5]    commit: publish record, count == 41? skip re-scan
//!  insert of key 5: entry, count=42, ... commit: records covering 5 -> ours
//! ```

use super::Txn;
use crate::index::key::EncodedKey;
pub use crate::index::scan_log::{ScanLog, ScanRecord, ABORTED, COMMITTED, PENDING, POISONED};
use crate::table::TableInner;
use std::ops::Bound;
use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::Arc;

/// A predicate read made by an open transaction.
pub(crate) struct ScanEntry {
    pub table: *const TableInner,
    pub lo: Bound<EncodedKey>,
    pub hi: Bound<EncodedKey>,
    /// Tuples that had a visible version when scanned.
    pub seen: Vec<u64>,
    /// The record published for later inserters (SSN, SSI).
    pub record: Option<Arc<ScanRecord>>,
    /// Set for a secondary-index range: the bounds are over that index's
    /// entry keys (see `crate::index`).
    pub sec: Option<Box<crate::index::SecScan>>,
}

impl ScanEntry {
    pub fn point(t: &TableInner, k: EncodedKey) -> Self {
        ScanEntry {
            table: t,
            lo: Bound::Included(k.clone()),
            hi: Bound::Included(k),
            seen: Vec::new(),
            record: None,
            sec: None,
        }
    }
    pub fn range(
        t: &TableInner,
        lo: Bound<EncodedKey>,
        hi: Bound<EncodedKey>,
        seen: Vec<u64>,
    ) -> Self {
        ScanEntry {
            table: t,
            lo,
            hi,
            seen,
            record: None,
            sec: None,
        }
    }
}

/// The rows of `t` (sorted tuple ids) whose later changes the read tracking
/// of `tx` already catches: those `scanned` read, and under the snapshot
/// protocols every row `tx` read a version of (any change after the
/// snapshot is an overwrite of that version: MVOCC's read set fails, SSN
/// and SSI see the rw edge). Not MV2PL's other reads: it reads the newest
/// data, so a row read after a change says nothing about the scan before it
/// (the scan's own reads hold read locks from the read on, and `scanned`
/// leaves out the rows it lost: a change between the scan's start and its
/// read of the row, see `index::common::ScanReads::finish`).
///
/// An index-range entry of one of these rows is no phantom (see
/// `index::common`). Tuple ids cannot name another row meanwhile: a row
/// the transaction read is not unlinked and reused while the transaction is
/// open (see `gc`).
pub(crate) fn accounted_rows<P: super::Cc>(
    tx: &impl Txn,
    t: &TableInner,
    scanned: &[u64],
) -> Vec<u64> {
    if !(P::SNAPSHOT_READS && P::VALIDATES_SCANS) {
        return scanned.to_vec();
    }
    union_rows(
        scanned,
        (tx.reads().iter())
            .filter(|r| std::ptr::eq(r.table, t) && !r.version.is_null())
            .map(|r| r.tuple),
    )
}

/// The sorted union of `scanned` and `more`, without repeats. A scan read
/// its rows through the protocol, so most of `more` (the reads of the
/// table) are scanned rows already: those are found in `scanned` (sorted,
/// as a scan leaves it), and the union is sorted only if a read adds a
/// row. (Sorting the copy with every read of the table, about 29 ids for
/// a TPC-C by-name lookup, cost 1,760 instructions a scan.)
fn union_rows(scanned: &[u64], more: impl Iterator<Item = u64>) -> Vec<u64> {
    let sorted = scanned.windows(2).all(|w| w[0] < w[1]);
    let mut rows = Vec::with_capacity(scanned.len() + 4);
    rows.extend_from_slice(scanned);
    let mut added = !sorted;
    for tuple in more {
        if !(sorted && scanned.binary_search(&tuple).is_ok()) {
            rows.push(tuple);
            added = true;
        }
    }
    if added {
        rows.sort_unstable();
        rows.dedup();
    }
    rows
}

/// The tuples of `t` this transaction created (inserted with no row
/// before it in the slot). At commit an index record of another
/// transaction naming one of them is of an earlier row whose tuple id was
/// freed and given to our insert: that row was unlinked, so its delete is
/// at or below the horizon, below our snapshot, and so is all its matter;
/// it is no phantom (as our own fresh insert is none in `validate_scans`'s
/// primary branch). Without this, an MV-PBT scan that found nothing and a
/// later insert in the same transaction that reused the tuple id of a row
/// once in the scanned range refused a transaction running alone
/// (`tests/secondary_cc.rs`,
/// `a_reused_tuple_id_is_no_phantom_of_its_old_rows_records`).
fn fresh_rows<'a>(tx: &'a impl Txn, t: &'a TableInner) -> impl Iterator<Item = u64> + 'a {
    tx.writes()
        .iter()
        .filter(move |w| std::ptr::eq(w.table, t) && w.old.is_null())
        .map(|w| w.tuple)
}

/// Whether MVOCC and MV2PL skip [`validate_scans`] (a test-only switch,
/// `Database::skip_phantom_validation_for_testing`).
pub fn validation_skipped(tx: &impl Txn) -> bool {
    tx.shared()
        .skip_phantom_validation
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Re-runs every predicate read; false if a range gained a row.
pub fn validate_scans<P: super::Cc>(tx: &impl Txn) -> bool {
    let _guard = crossbeam_epoch::pin();
    let mut now = Vec::new();
    for s in tx.scans() {
        // SAFETY: tables outlive transactions.
        let t = unsafe { &*s.table };
        if let Some(sec) = &s.sec {
            // Our record is out (SSN, SSI: `publish_pending`), so an
            // entry added from here on is its inserter's to answer for
            // (it finds the record); one added since the scan began moved
            // the index's count. Neither: the range holds only what the
            // scan saw (`SecScan::additions_at`), no phantom to look for.
            if s.record.is_some()
                && (sec.additions_at).is_some_and(|n| n == sec.index.tree.additions.total())
            {
                continue;
            }
            let sec = sec.sorted();
            let sec = &*sec;
            let accounted = || {
                let mut rows = accounted_rows::<P>(tx, t, &sec.read);
                rows.extend(fresh_rows(tx, t));
                rows.sort_unstable();
                rows.dedup();
                rows
            };
            if !crate::index::validate(t, sec, &s.lo, &s.hi, tx.sec_writes(), accounted) {
                return false;
            }
            continue;
        }
        now.clear();
        t.index.range(&s.lo, &s.hi, &mut now);
        let mut seen = s.seen.clone();
        seen.sort_unstable();
        for &tuple in &now {
            if seen.binary_search(&tuple).is_ok() {
                continue;
            }
            let head = t.rows.head(tuple);
            if head.is_null() {
                continue; // an aborted insert being undone
            }
            // Our own fresh insert is no phantom.
            // SAFETY: pinned; heads are alive.
            if tx.is_own(head) && unsafe { (*head).next() }.is_null() {
                continue;
            }
            return false;
        }
    }
    true
}

/// SSN/SSI, at commit before re-validation: leaves a PENDING record per scan.
pub fn publish_pending<P: super::Cc>(tx: &mut impl Txn, cts: u64) {
    let ssi = super::ssi::state(tx).cloned();
    let rows: Vec<Vec<u64>> = tx
        .scans()
        .iter()
        .map(|s| match &s.sec {
            // SAFETY: tables outlive transactions.
            Some(sec) => accounted_rows::<P>(tx, unsafe { &*s.table }, &sec.sorted().read),
            None => Vec::new(),
        })
        .collect();
    // Our shard of each log, pruned as we push by the last published
    // horizon and quiesced epoch (`index::scan_log`).
    let slot = crate::tid::TidTable::slot_index(tx.tid());
    let horizon = tx.shared().horizon.load(SeqCst);
    let quiesced = tx.shared().quiescence.quiesced();
    for (s, rows) in tx.scans_mut().iter_mut().zip(rows) {
        let rec = Arc::new(ScanRecord {
            lo: s.lo.clone(),
            hi: s.hi.clone(),
            cstamp: cts,
            state: AtomicU8::new(PENDING),
            epoch: AtomicU64::new(u64::MAX),
            scanner: ssi
                .clone()
                .map(|s| s as Arc<dyn std::any::Any + Send + Sync>),
            rows,
        });
        let log = match &s.sec {
            Some(sec) => &sec.index.scan_log,
            // SAFETY: tables outlive transactions.
            None => &unsafe { &*s.table }.scan_log,
        };
        log.push(slot, Arc::clone(&rec), horizon, quiesced);
        s.record = Some(rec);
    }
    // Pairs with the fence in `scanners_of`: an inserter either sees our
    // record or our re-validation sees its index entry.
    fence(SeqCst);
}

/// Marks our records committed; false if an inserter poisoned one first.
pub fn try_commit_records(tx: &impl Txn) -> bool {
    tx.scans()
        .iter()
        .filter_map(|s| s.record.as_ref())
        .all(|r| {
            r.state
                .compare_exchange(PENDING, COMMITTED, SeqCst, SeqCst)
                .is_ok()
        })
}

/// On abort: withdraw our records.
pub fn withdraw(tx: &mut impl Txn) {
    for s in tx.scans() {
        if let Some(r) = &s.record {
            r.state.store(ABORTED, SeqCst);
        }
    }
}

/// The scan records on `t` that cover `k`, other than our own.
pub fn scanners_of(t: &TableInner, k: &EncodedKey, me: &impl Txn) -> Vec<Arc<ScanRecord>> {
    scanners_in(&t.scan_log, k, None, me)
}

/// The scan records in `log` (a table's or a secondary index's) that cover
/// `k`, other than our own. With `row` (the row of our entry `k`), a
/// scanner still deciding that read the row is left out: it is still open,
/// so the row it read is the row we wrote (a tuple id is reused only after
/// its readers end), and the rw edge from it to us is one its read
/// tracking already has. Poisoning it, or marking the edge again, only
/// refused a scanner that saw no phantom.
pub fn scanners_in(
    log: &ScanLog,
    k: &EncodedKey,
    row: Option<u64>,
    me: &impl Txn,
) -> Vec<Arc<ScanRecord>> {
    fence(SeqCst);
    if log.is_empty() {
        return Vec::new();
    }
    let mine: Vec<*const ScanRecord> = me
        .scans()
        .iter()
        .filter_map(|s| s.record.as_ref().map(Arc::as_ptr))
        .collect();
    let accounted = |r: &ScanRecord| {
        row.is_some_and(|x| r.rows.binary_search(&x).is_ok()) && r.state.load(SeqCst) == PENDING
    };
    log.records_where(|r| r.covers(k) && !mine.contains(&(r as *const _)) && !accounted(r))
}

/// Drops the records of scanners that committed before every open
/// transaction began (stamp below the GC horizon, or quiesced:
/// `cc::quiescence`), folding their stamps into the log's `pruned_pstamp`.
pub fn prune(t: &TableInner, horizon: u64, quiesced: u64, every_shard: bool) {
    t.scan_log.prune(horizon, quiesced, every_shard);
}

/// Whether any of `tables`, or any of their secondary indexes, holds scan
/// records: a GC pass that finds none need not advance the quiescence
/// epoch for them (its scan of the TID table is the pass's cost).
pub fn any_scan_records(tables: &[Arc<TableInner>]) -> bool {
    let guard = crossbeam_epoch::pin();
    tables.iter().any(|t| {
        !t.scan_log.is_empty()
            || t.secondary
                .load(&guard)
                .iter()
                .any(|i| !i.scan_log.is_empty())
    })
}

/// After our commit point (COMMITTED in the TID table, SeqCst): our scan
/// records take the quiescence epoch, so that a GC pass can drop them
/// once every transaction open at our commit has ended.
pub fn stamp_epochs(tx: &impl Txn) {
    let mut epoch = None;
    for r in tx.scans().iter().filter_map(|s| s.record.as_ref()) {
        let e = *epoch.get_or_insert_with(|| tx.shared().quiescence.epoch());
        r.epoch.store(e, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Whatever the order and repeats of either side, the union is the
        /// rows of both, sorted, once each (what sorting them all gives).
        #[test]
        fn union_rows_is_the_sorted_union(
            mut scanned in proptest::collection::vec(0u64..40, 0..30),
            sort_scanned: bool,
            more in proptest::collection::vec(0u64..40, 0..30),
        ) {
            if sort_scanned {
                scanned.sort_unstable();
                scanned.dedup();
            }
            let mut all: Vec<u64> = scanned.iter().chain(&more).copied().collect();
            all.sort_unstable();
            all.dedup();
            prop_assert_eq!(super::union_rows(&scanned, more.into_iter()), all);
        }
    }
}
