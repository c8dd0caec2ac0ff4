//! SI: snapshot isolation, first updater wins.
//!
//! A transaction reads the snapshot taken at begin and may overwrite a row
//! only if the row's newest version is in that snapshot; a newer version
//! means a concurrent writer committed first:
//!
//! ```text
//!  T1 begin(10)   head [begin 8]   T1 writes -> ok (8 <= 10)
//!  T2 begin(10)   head [begin 12]  T2 writes -> refused (12 > 10): write-write
//! ```
//!
//! Nothing is validated at commit, so SI allows write skew and read-only
//! anomalies; SSN (`ssn`) and SSI (`ssi`) are SI plus a commit-time check
//! that closes them, and share this module's write rule (SSN lifts it for
//! rows a transaction writes without reading: `ssn::blind_overwrite`).

use super::Txn;
use super::{Cc, TxnCc};
use crate::error::{ConflictKind, Error, Result};
use crate::options::Protocol;
use crate::storage::visibility::Mode;
use crate::storage::{self, version::Version};
use crate::table::TableInner;
use std::sync::atomic::Ordering::SeqCst;

/// Snapshot isolation.
pub(crate) struct Si;

/// First updater wins: the locked head must be in our snapshot.
#[inline]
pub(crate) fn first_updater_wins(tx: &impl Txn, head: &Version) -> Result<()> {
    if head.begin.load(SeqCst) > tx.ts() {
        Err(Error::Conflict(ConflictKind::WriteWrite))
    } else {
        Ok(())
    }
}

impl Cc for Si {
    const PROTOCOL: Protocol = Protocol::Si;
    const SNAPSHOT_READS: bool = true;
    // Phantoms are allowed under SI.
    const VALIDATES_SCANS: bool = false;
    const SCAN_RECORDS: bool = false;
    const READ_ONLY_COMMIT_UNCHECKED: bool = true;
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = Some(ConflictKind::WriteWrite);
    type State = ();

    fn new_state(_tid: u64, _ts: u64, _read_only: bool) -> TxnCc {
        TxnCc::Si(())
    }

    fn read(tx: &mut impl Txn, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        // No read bookkeeping at all.
        storage::visible(
            t,
            tuple,
            tx.ts(),
            tx.tid(),
            &tx.shared().tids,
            Mode::Snapshot,
        )
    }

    fn check_write(tx: &impl Txn, _t: &TableInner, _tuple: u64, head: &Version) -> Result<()> {
        first_updater_wins(tx, head)
    }

    fn note_read(_tx: &mut impl Txn, _t: &TableInner, _tuple: u64, _v: *mut Version) -> Result<()> {
        Ok(())
    }
}
