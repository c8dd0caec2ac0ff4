//! OCC (Silo-style): read the newest committed version, validate at commit.
//!
//! The lightweight optimistic scheme of Silo (Tu et al., "Speedy Transactions
//! in Multicore In-Memory Databases", SOSP 2013, §4.4), which ERMIA (Kim et
//! al., SIGMOD 2016) uses as its "Silo-OCC" baseline (§1 and Figure 1; §4.2
//! "Microbenchmark"; §5 on Silo). A transaction has no begin snapshot: every
//! read returns the newest committed version of the row *as of the read* and
//! remembers which version that was. Writes lock the row's head when they
//! happen (Strata's write path; Silo locks its write set at commit, which
//! orders the same way). At commit, after the commit timestamp is drawn, the
//! transaction checks that every version it read is still the newest
//! committed one and that nobody else holds its lock, and re-runs its range
//! scans and absent-key reads (Silo's node-set check, here a re-scan):
//!
//! ```text
//!  T1: read x -> x1     read y -> y1 .................. commit: x1, y1 newest?
//!  T2:            write y -> y2, commit                         y2 != y1 -> abort
//!
//!  serial point of a committer = its validation (commit timestamp order):
//!   - it read x1 and x1 is still newest: no one wrote x between its read
//!     and its serial point (a writer would hold the lock or own the head)
//!   - a reader of its write ran after its stamp, so has a larger timestamp
//! ```
//!
//! That is what makes the scheme unfair to long readers (ERMIA §1): any
//! overwrite of any row in the read footprint that commits before the reader
//! validates aborts the reader, so the more rows it reads the less likely it
//! commits. MVOCC (`mvocc`) validates the same way but reads a begin
//! snapshot; OCC reads the newest data, so its reads are never stale when
//! made, yet a transaction that wrote nothing must validate too (its reads
//! come from different moments, not one snapshot):
//! `READ_ONLY_COMMIT_UNCHECKED` is false, and such readers can starve, as
//! the paper measures.
//!
//! `Database::begin_read_only` is Silo's read-only *snapshot* transaction,
//! which ERMIA enables for its Silo runs (§4.1, "read-only snapshots are
//! enabled"): it reads the engine's begin snapshot and commits without
//! validation, as under every protocol. That is serializable here because the
//! serial order of OCC committers is their commit-timestamp order (the
//! argument above), so the committed transactions visible at a snapshot are
//! a prefix of the serial order. A read-write transaction that happens to
//! write nothing gets no such pass.
//!
//! Invariant this module owns: a transaction commits only if, at its commit
//! timestamp, every version in its read set is the row's newest committed
//! version and unlocked by others, and every predicate read it made would
//! return the same rows. The read set names versions by address, so a
//! version read must not be freed while the reader is open: every horizon
//! collector keeps it (it is newer than the reader's registered begin), but
//! dead-zone pruning would not, and `Options::validate` refuses it.

use super::mvocc::still_current;
use super::predicate::{validate_scans, validation_skipped};
use super::Txn;
use super::{Cc, TxnCc};
use crate::error::{ConflictKind, Result};
use crate::options::Protocol;
use crate::storage::visibility::Mode;
use crate::storage::{self, version::Version};
use crate::table::TableInner;
use std::sync::atomic::Ordering::SeqCst;

/// Silo-style optimistic concurrency control (reads the newest committed
/// version; read set, scan set validated at commit).
pub(crate) struct Occ;

impl Cc for Occ {
    const PROTOCOL: Protocol = Protocol::Occ;
    const SNAPSHOT_READS: bool = false;
    const VALIDATES_SCANS: bool = true;
    const SCAN_RECORDS: bool = false;
    // Reads are from different moments: a reader must validate too.
    const READ_ONLY_COMMIT_UNCHECKED: bool = false;
    // It reads the newest state: a newer holder is a plain duplicate.
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = None;
    type State = ();

    fn new_state(_tid: u64, _ts: u64, _read_only: bool) -> TxnCc {
        TxnCc::Occ(())
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        read_newest_committed::<Self>(tx, t, tuple)
    }

    fn check_write(_tx: &impl Txn, _t: &TableInner, _tuple: u64, _head: &Version) -> Result<()> {
        // Writing a row newer than our begin is fine: we read newest data,
        // and validation checks what we read.
        Ok(())
    }

    fn note_read(tx: &mut impl Txn, t: &TableInner, tuple: u64, v: *mut Version) -> Result<()> {
        // The write path released its lock before answering duplicate or
        // not-found: the answer is a read to validate.
        tx.record_read::<Self>(t, tuple, v)
    }

    fn validate(tx: &mut impl Txn, _cts: u64) -> Result<(), ConflictKind> {
        validate(tx)
    }
}

/// The newest committed version of `tuple` (or our own), recorded in the
/// read set. Read at the clock's current value rather than at a begin
/// snapshot: every commit timestamp drawn so far is at or below it, so the
/// version returned is the newest committed one (a committer still stamping
/// is waited for by visibility); one that draws its timestamp later is not
/// committed yet, and validation sees its version above ours.
fn read_newest_committed<P: Cc>(
    tx: &mut impl Txn,
    t: &TableInner,
    tuple: u64,
) -> Result<*mut Version> {
    let now = tx.shared().clock.load(SeqCst);
    let v = storage::visible(t, tuple, now, tx.tid(), &tx.shared().tids, Mode::Snapshot)?;
    if !tx.is_own(v) {
        tx.record_read::<P>(t, tuple, v)?;
    }
    Ok(v)
}

/// Silo's read validation (SOSP'13 §4.4, phase 2) plus the phantom re-scan.
fn validate(tx: &mut impl Txn) -> Result<(), ConflictKind> {
    let _guard = crossbeam_epoch::pin();
    for r in tx.reads() {
        if !still_current(tx, r) {
            return Err(ConflictKind::Validation);
        }
    }
    if !validation_skipped(tx) && !validate_scans::<Occ>(tx) {
        return Err(ConflictKind::Validation);
    }
    Ok(())
}
