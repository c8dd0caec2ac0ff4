//! MV-PBT's index records (Riegger et al., §5.1) and the partition key
//! that orders them (§5.3).
//!
//! ```text
//!  partition key = ident ++ (u64::MAX - seq)      ident = enc(index key) ++ enc(pk)
//!  record        = type  stamp  gc flag  tuple  version  predecessor
//!                  │     └ TID_MARK | tid until on_commit, the commit timestamp after
//!                  └ matter (regular, replacement) / anti-matter (anti-record, tombstone)
//! ```
//!
//! Invariant (owned here): a record's stamp only goes from `TID_MARK | tid`
//! to its writer's commit timestamp, and its GC flag only from false to
//! true (the writer aborted); a record in a spill file ([`Rec::File`]) is
//! decided for good. A newer record of an identity sorts first.

use super::super::mvpbt_spill::Fixed;
use crate::storage::version::{Version, TID_MARK};
use crate::tid::{Status, TidTable};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// The four record types of §5.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    /// An insert: the row holds the key from the stamp on.
    Regular,
    /// An update: names the new version (and its predecessor); the row
    /// holds this key from the stamp on.
    Replacement,
    /// An update of an indexed column: the row no longer holds the old key.
    AntiRecord,
    /// A delete: the row holds no key any more.
    Tombstone,
}

impl RecordType {
    /// Matter makes its row visible under its key; anti-matter ends that.
    #[inline]
    pub fn is_matter(self) -> bool {
        match self {
            RecordType::Regular | RecordType::Replacement => true,
            RecordType::AntiRecord | RecordType::Tombstone => false,
        }
    }

    pub(super) fn code(self) -> u64 {
        match self {
            RecordType::Regular => 0,
            RecordType::Replacement => 1,
            RecordType::AntiRecord => 2,
            RecordType::Tombstone => 3,
        }
    }

    pub(super) fn from_code(c: u64) -> RecordType {
        match c & 3 {
            0 => RecordType::Regular,
            1 => RecordType::Replacement,
            2 => RecordType::AntiRecord,
            _ => RecordType::Tombstone,
        }
    }
}

/// One index record (its identity is its partition key's prefix).
pub(crate) struct Record {
    pub ty: RecordType,
    /// `TID_MARK | tid` until the writer commits, its commit timestamp then.
    pub(super) stamp: AtomicU64,
    /// FLAG_GC: the writer aborted; invisible to all.
    pub(super) gc: AtomicBool,
    /// The row (for logical reads and the protocols' read tracking).
    pub tuple: u64,
    /// Matter: the version it makes visible; anti-matter: the version it
    /// ends (the version's address).
    pub(super) version: AtomicU64,
    /// A replacement's predecessor version (0: none); kept for the record
    /// format of §5.1 (and in spill files), never followed.
    pub predecessor: u64,
}

impl Record {
    pub(super) fn new(
        ty: RecordType,
        stamp: u64,
        tuple: u64,
        version: *mut Version,
        pred: u64,
    ) -> Record {
        Record {
            ty,
            stamp: AtomicU64::new(stamp),
            gc: AtomicBool::new(false),
            tuple,
            version: AtomicU64::new(version as usize as u64),
            predecessor: pred,
        }
    }

    #[inline]
    pub(super) fn version(&self) -> *mut Version {
        self.version.load(SeqCst) as usize as *mut Version
    }

    #[inline]
    pub(super) fn aborted(&self) -> bool {
        self.gc.load(SeqCst)
    }

    /// The raw stamp (for tests).
    #[cfg(test)]
    pub(super) fn stamp(&self) -> u64 {
        self.stamp.load(SeqCst)
    }

    /// Algorithm 3, cases (a) and (b): whether a snapshot at `ts` of
    /// transaction `me` sees this record's stamp.
    pub(super) fn visible_to(&self, ts: u64, me: u64, tids: &TidTable) -> bool {
        let s = self.stamp.load(SeqCst);
        if self.aborted() {
            return false;
        }
        if s & TID_MARK == 0 {
            return s <= ts;
        }
        let tid = s & !TID_MARK;
        if tid == me {
            return true;
        }
        let settled_since = || {
            // The writer ended and its slot moved on: it stamped (commit)
            // or flagged (abort) its records before.
            let s = self.stamp.load(SeqCst);
            !self.aborted() && s & TID_MARK == 0 && s <= ts
        };
        match tids.settled_status(tid) {
            Status::Committed(c) => c <= ts,
            Status::Committing(c) if c <= ts => match tids.wait_decided(tid) {
                Status::Committed(_) => true,
                Status::Gone => settled_since(),
                Status::Active | Status::Precommit | Status::Committing(_) | Status::Aborted => {
                    false
                }
            },
            Status::Gone => settled_since(),
            Status::Committing(_) | Status::Active | Status::Precommit | Status::Aborted => false,
        }
    }

    /// The commit timestamp, if the writer has committed.
    pub(super) fn committed(&self, tids: &TidTable) -> Option<u64> {
        if self.aborted() {
            return None;
        }
        let s = self.stamp.load(SeqCst);
        if s & TID_MARK == 0 {
            return Some(s);
        }
        match tids.settled_status(s & !TID_MARK) {
            Status::Committed(c) => Some(c),
            Status::Gone => {
                let s = self.stamp.load(SeqCst);
                (s & TID_MARK == 0 && !self.aborted()).then_some(s)
            }
            Status::Active | Status::Precommit | Status::Committing(_) | Status::Aborted => None,
        }
    }
}

/// A record as a reader gets it: one held in memory, or one decoded from a
/// spill file (`index::mvpbt_spill`) without an allocation. A spilled
/// record is decided: its stamp is a commit timestamp for good, it has no
/// GC flag, and its version is no longer replaced.
#[derive(Clone, Copy)]
pub(crate) enum Rec<'a> {
    Mem(&'a Arc<Record>),
    File(Fixed),
}

impl Rec<'_> {
    #[inline]
    pub(super) fn ty(&self) -> RecordType {
        match self {
            Rec::Mem(r) => r.ty,
            Rec::File(f) => RecordType::from_code(f.ty as u64),
        }
    }

    #[inline]
    pub(super) fn tuple(&self) -> u64 {
        match self {
            Rec::Mem(r) => r.tuple,
            Rec::File(f) => f.tuple,
        }
    }

    #[inline]
    pub(super) fn version(&self) -> *mut Version {
        match self {
            Rec::Mem(r) => r.version(),
            Rec::File(f) => f.version as usize as *mut Version,
        }
    }

    #[inline]
    pub(super) fn aborted(&self) -> bool {
        match self {
            Rec::Mem(r) => r.aborted(),
            Rec::File(_) => false,
        }
    }

    /// The stamp as stored (`TID_MARK | tid` or a commit timestamp).
    #[inline]
    pub(super) fn raw_stamp(&self) -> u64 {
        match self {
            Rec::Mem(r) => r.stamp.load(SeqCst),
            Rec::File(f) => f.stamp,
        }
    }

    /// [`Record::visible_to`].
    #[inline]
    pub(super) fn visible_to(&self, ts: u64, me: u64, tids: &TidTable) -> bool {
        match self {
            Rec::Mem(r) => r.visible_to(ts, me, tids),
            Rec::File(f) => f.stamp <= ts,
        }
    }

    /// [`Record::committed`].
    #[inline]
    pub(super) fn committed(&self, tids: &TidTable) -> Option<u64> {
        match self {
            Rec::Mem(r) => r.committed(tids),
            Rec::File(f) => Some(f.stamp),
        }
    }

    pub(super) fn to_buf(self) -> RecBuf {
        match self {
            Rec::Mem(r) => RecBuf::Mem(Arc::clone(r)),
            Rec::File(f) => RecBuf::File(f),
        }
    }
}

/// A [`Rec`] kept past the callback that got it.
pub(crate) enum RecBuf {
    Mem(Arc<Record>),
    File(Fixed),
}

impl RecBuf {
    #[inline]
    pub(super) fn get(&self) -> Rec<'_> {
        match self {
            RecBuf::Mem(r) => Rec::Mem(r),
            RecBuf::File(f) => Rec::File(*f),
        }
    }
}

/// The stamp of `r` if it is decided for good (committed: its commit
/// timestamp), resolving a TID mark through `tids` (None: only records
/// stamped already count).
pub(super) fn decided_stamp(r: &Record, tids: Option<&TidTable>) -> Option<u64> {
    if r.aborted() {
        return None;
    }
    let s = r.stamp.load(SeqCst);
    if s & TID_MARK == 0 {
        return Some(s);
    }
    tids.and_then(|t| r.committed(t))
}

/// Bytes after the identity in a partition key: `u64::MAX - seq`, so a
/// newer record of an identity sorts first (§5.3).
pub(super) const SEQ_BYTES: usize = 8;
/// Writers draw sequence numbers from here up; a back-fill below it, so
/// what it adds for versions already committed sorts after (older than)
/// what writers added meanwhile, should the two ever share a partition.
pub(super) const WRITER_SEQ: u64 = 1 << 62;

#[inline]
pub(super) fn ident_of(key: &[u8]) -> &[u8] {
    &key[..key.len() - SEQ_BYTES]
}

pub(super) fn part_key(ident: &[u8], seq: u64) -> Box<[u8]> {
    let mut k = Vec::with_capacity(ident.len() + SEQ_BYTES);
    k.extend_from_slice(ident);
    k.extend_from_slice(&(u64::MAX - seq).to_be_bytes());
    k.into_boxed_slice()
}
