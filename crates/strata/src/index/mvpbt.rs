//! MV-PBT: the multi-version partitioned B-tree (Riegger et al., §5), a
//! secondary index whose records carry version information, so a scan
//! decides which rows its snapshot sees from the index alone.
//!
//! ```text
//!  writes ──> P_N (writable: a skip list)        reads: P_N, then P_N-1 .. P_0
//!             │  at `mvpbt_partition_records`:    (Algorithms 1, 2), each frozen
//!             │  freeze (Algorithm 4): drop what  partition first asked through
//!             ▼  no snapshot can see (§5.6)       its Bloom filters (§5.7)
//!  P_N-1 .. P_0 (frozen: sorted Vec, or a spill file + the undecided
//!               records in memory; Bloom filter on the index key
//!               + prefix Bloom filter on its first column)
//!
//!  a record (§5.1):  ident = enc(index key) ++ enc(pk)   stamp   type   tuple, version
//!  key in a partition: ident ++ !seq  (§5.3: by key, then newest first)
//!
//!  insert row 7 (a=3)           P_N: (3,7) REGULAR      tx1
//!  update b (not indexed)       P_N: (3,7) REPLACEMENT  tx2   names the new version
//!                                    (physical pointers only: under logical
//!                                    ones the record names the row, its VID)
//!  update a 3 -> 5              P_N: (3,7) ANTI-RECORD  tx3   (3,7) ends
//!                                    (5,7) REPLACEMENT  tx3   (5,7) begins
//!  delete                       P_N: (5,7) TOMBSTONE    tx4   the row ends
//! ```
//!
//! **Stamps.** A record carries its creator's stamp: `TID_MARK | tid` until
//! commit, the commit timestamp after (`on_commit`), exactly as versions
//! are stamped; an undecided stamp is resolved through the TID table. An
//! aborted writer's records get the GC flag (Algorithm 3's FLAG_GC) and
//! leave P_N at once; in a frozen partition the next freeze drops them.
//!
//! **Invariant.** For each identity (index key + primary key), the records
//! in P_N..P_0, newest first, are the history of "this row holds this key":
//! matter (regular, replacement) starts it, anti-matter (anti-record,
//! tombstone) ends it. The newest record whose stamp a snapshot sees decides
//! for that snapshot (Algorithm 3: (a) GC-flagged and (b) unseen stamps are
//! skipped, (c) once an identity is decided its older records are skipped,
//! (d) anti-matter decides "invisible"). Records of one identity are written
//! under its row's write lock, so their order (a per-index sequence number)
//! is their commit order, and a newer partition only holds newer records.
//! Here an identity names the row (the paper's optional virtual identifier),
//! not one version, so "anti-matter for the record id" is "a newer record of
//! the identity".
//!
//! **Reads.** A read-only scan runs Algorithm 3 and reads one row per
//! visible record: the named version itself under physical pointers, the
//! version the snapshot sees through the tuple id under logical ones; a
//! covering scan ([`SecondaryIndexKind::scan_keys`]) reads no row at all. A
//! read-write scan must read rows through its protocol (read tracking,
//! MV2PL's newest state), so it reads every row with matter in the range
//! and keeps those whose version read has the key: phantom protection
//! (commit-time re-scan, SSN/SSI scan records, MVTO's predicate timestamp)
//! works on identities exactly as for today's kinds (`common.rs`).
//!
//! **GC** (§5.6). The freeze keeps a record only if some live or future
//! snapshot may decide by it: a committed record superseded (for its
//! identity) at `end` is dropped when no snapshot lies in `[stamp, end)`
//! (`DeadZones::is_dead`, the view version GC uses), and committed
//! anti-matter with nothing older left to end (in this partition or an
//! older one) goes too. More than [`MERGE_AT`] frozen partitions are merged
//! into one with the same GC. Before the freeze, each write drops the older
//! records of its identity from P_N that a newer committed record at or
//! below the published horizon covers (§5.6 phase 2). Versions never wait
//! for records: a record that names a retired version is one no live
//! snapshot decides by.
//!
//! **Spilling** (`Options::mvpbt_spill_dir`, [`super::mvpbt_spill`]). A
//! freeze, a merge and the back-fill write the partition's decided records
//! (committed: the stamp resolved through the TID table to the commit
//! timestamp) sequentially to a file and read them through a memory map
//! ([`Frozen`]); a file is never updated, so the records whose writer is
//! still running stay in memory beside it, where `on_commit`, `on_abort`
//! and `on_replace_own` still find and change them, and go to the file of
//! the next merge that finds them decided. Readers merge the two sorted
//! runs and get a [`Rec`] (no allocation for a spilled record). A spill
//! the OS refuses, or a file that reads back damaged, keeps the partition
//! in memory: the answers are those of the in-memory index either way.
//!
//! Not built: a streaming merge of spilled partitions (a merge gathers
//! their records in memory), the MV-PBT buffer shared by all indexes (each
//! index freezes on its own count), dense packing and key compression
//! (§5.7).

use super::common::{self, ScanReads, SecScan, SecWrite, SecWrites};
use super::mvpbt_spill::{Fixed, SpillDir, SpillFile};
use super::secondary::SecondaryIndex;
use super::table::TableInner;
use super::{IndexTxn, ScanMode, Scanned, SecondaryIndexKind};
use crate::error::{ConflictKind, Error, Result};
use crate::index::key::{prefix_end, skip_values, EncodedKey};
use crate::options::{IndexKind, IndexPointers};
use crate::stats::MvPbtStats;
use crate::storage::dead_zones::DeadZones;
use crate::storage::version::{Version, TID_MARK};
use crate::storage::{self, PrunePlan, Span};
use crate::tid::snapshots::Snapshots;
use crate::tid::{Status, TidTable};
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use crossbeam_skiplist::SkipMap;
use fastbloom::BloomFilter;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
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

    fn code(self) -> u64 {
        match self {
            RecordType::Regular => 0,
            RecordType::Replacement => 1,
            RecordType::AntiRecord => 2,
            RecordType::Tombstone => 3,
        }
    }

    fn from_code(c: u64) -> RecordType {
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
    stamp: AtomicU64,
    /// FLAG_GC: the writer aborted; invisible to all.
    gc: AtomicBool,
    /// The row (for logical reads and the protocols' read tracking).
    pub tuple: u64,
    /// Matter: the version it makes visible; anti-matter: the version it
    /// ends (the version's address).
    version: AtomicU64,
    /// A replacement's predecessor version (0: none); kept for the record
    /// format of §5.1 (and in spill files), never followed.
    pub predecessor: u64,
}

impl Record {
    fn new(ty: RecordType, stamp: u64, tuple: u64, version: *mut Version, pred: u64) -> Record {
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
    fn version(&self) -> *mut Version {
        self.version.load(SeqCst) as usize as *mut Version
    }

    #[inline]
    fn aborted(&self) -> bool {
        self.gc.load(SeqCst)
    }

    /// The raw stamp (for tests).
    #[cfg(test)]
    fn stamp(&self) -> u64 {
        self.stamp.load(SeqCst)
    }

    /// Algorithm 3, cases (a) and (b): whether a snapshot at `ts` of
    /// transaction `me` sees this record's stamp.
    fn visible_to(&self, ts: u64, me: u64, tids: &TidTable) -> bool {
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
    fn committed(&self, tids: &TidTable) -> Option<u64> {
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
    fn ty(&self) -> RecordType {
        match self {
            Rec::Mem(r) => r.ty,
            Rec::File(f) => RecordType::from_code(f.ty as u64),
        }
    }

    #[inline]
    fn tuple(&self) -> u64 {
        match self {
            Rec::Mem(r) => r.tuple,
            Rec::File(f) => f.tuple,
        }
    }

    #[inline]
    fn version(&self) -> *mut Version {
        match self {
            Rec::Mem(r) => r.version(),
            Rec::File(f) => f.version as usize as *mut Version,
        }
    }

    #[inline]
    fn aborted(&self) -> bool {
        match self {
            Rec::Mem(r) => r.aborted(),
            Rec::File(_) => false,
        }
    }

    /// The stamp as stored (`TID_MARK | tid` or a commit timestamp).
    #[inline]
    fn raw_stamp(&self) -> u64 {
        match self {
            Rec::Mem(r) => r.stamp.load(SeqCst),
            Rec::File(f) => f.stamp,
        }
    }

    /// [`Record::visible_to`].
    #[inline]
    fn visible_to(&self, ts: u64, me: u64, tids: &TidTable) -> bool {
        match self {
            Rec::Mem(r) => r.visible_to(ts, me, tids),
            Rec::File(f) => f.stamp <= ts,
        }
    }

    /// [`Record::committed`].
    #[inline]
    fn committed(&self, tids: &TidTable) -> Option<u64> {
        match self {
            Rec::Mem(r) => r.committed(tids),
            Rec::File(f) => Some(f.stamp),
        }
    }

    fn to_buf(self) -> RecBuf {
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
    fn get(&self) -> Rec<'_> {
        match self {
            RecBuf::Mem(r) => Rec::Mem(r),
            RecBuf::File(f) => Rec::File(*f),
        }
    }
}

/// The stamp of `r` if it is decided for good (committed: its commit
/// timestamp), resolving a TID mark through `tids` (None: only records
/// stamped already count).
fn decided_stamp(r: &Record, tids: Option<&TidTable>) -> Option<u64> {
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
const SEQ_BYTES: usize = 8;
/// More frozen partitions than this are merged into one at the next freeze.
const MERGE_AT: usize = 8;
/// Writers draw sequence numbers from here up; a back-fill below it, so
/// what it adds for versions already committed sorts after (older than)
/// what writers added meanwhile, should the two ever share a partition.
const WRITER_SEQ: u64 = 1 << 62;

#[inline]
fn ident_of(key: &[u8]) -> &[u8] {
    &key[..key.len() - SEQ_BYTES]
}

fn part_key(ident: &[u8], seq: u64) -> Box<[u8]> {
    let mut k = Vec::with_capacity(ident.len() + SEQ_BYTES);
    k.extend_from_slice(ident);
    k.extend_from_slice(&(u64::MAX - seq).to_be_bytes());
    k.into_boxed_slice()
}

type Active = SkipMap<Box<[u8]>, Arc<Record>>;

/// An immutable partition P_i: its records sorted, and its filters.
///
/// In memory (no spill directory, or a spill that failed) `records` holds
/// them all and `file` is None. Spilled, `file` holds the records decided
/// at the freeze (committed, stamped with their commit timestamps) and
/// `records` only the undecided ones (their writers were still running):
/// a file is never updated, and those records' stamps, GC flags and
/// versions still change (`on_commit`, `on_abort`, `on_replace_own` find
/// them here). Both are sorted and disjoint; readers merge them. The next
/// merge writes those decided by then to its file.
pub(crate) struct Frozen {
    records: Vec<(Box<[u8]>, Arc<Record>)>,
    file: Option<SpillFile>,
    /// On the full index key (point lookups).
    bloom: BloomFilter,
    /// On the first index column (prefix scans); None for a one-column
    /// index, whose `bloom` serves both.
    prefix_bloom: Option<BloomFilter>,
}

impl Frozen {
    /// Records here, in memory and spilled.
    fn len(&self) -> usize {
        self.records.len() + self.file.as_ref().map_or(0, |f| f.len())
    }

    /// Calls `f` for each record in `[lo, hi]` in key order (the
    /// in-memory ones and the spilled ones merged); returns how many.
    fn for_range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        mut f: impl FnMut(&[u8], Rec<'_>),
    ) -> usize {
        let mem = self.mem_range(lo, hi);
        let Some(file) = &self.file else {
            for (k, r) in mem {
                f(k, Rec::Mem(r));
            }
            return mem.len();
        };
        let from = match lo {
            Bound::Included(l) => file.lower(l, false),
            Bound::Excluded(l) => file.lower(l, true),
            Bound::Unbounded => 0,
        };
        let to = match hi {
            Bound::Included(h) => file.lower(h, true),
            Bound::Excluded(h) => file.lower(h, false),
            Bound::Unbounded => file.len(),
        }
        .max(from);
        let (mut i, mut m) = (from, mem.iter().peekable());
        loop {
            let fk = (i < to).then(|| file.key(i));
            match (fk, m.peek()) {
                (None, None) => break,
                (Some(k), Some((mk, _))) if &mk[..] >= k => {
                    f(k, Rec::File(file.record(i)));
                    i += 1;
                }
                (Some(k), None) => {
                    f(k, Rec::File(file.record(i)));
                    i += 1;
                }
                (_, Some(_)) => {
                    let (mk, r) = m.next().expect("peeked");
                    f(mk, Rec::Mem(r));
                }
            }
        }
        mem.len() + (to - from)
    }

    /// Every record, owned (for a merge): spilled ones are decoded into
    /// new records with their (final) commit stamps.
    fn owned(&self) -> impl Iterator<Item = (Box<[u8]>, Arc<Record>)> + '_ {
        let mem = self.records.iter().map(|(k, r)| (k.clone(), Arc::clone(r)));
        let file = self.file.iter().flat_map(|f| {
            (0..f.len()).map(move |i| {
                let x = f.record(i);
                let r = Record::new(
                    RecordType::from_code(x.ty as u64),
                    x.stamp,
                    x.tuple,
                    x.version as usize as *mut Version,
                    x.predecessor,
                );
                (Box::from(f.key(i)), Arc::new(r))
            })
        });
        mem.chain(file)
    }

    /// The in-memory records in `[lo, hi]`.
    fn mem_range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> &[(Box<[u8]>, Arc<Record>)] {
        let r = &self.records;
        let from = match lo {
            Bound::Included(l) => r.partition_point(|(k, _)| &k[..] < l),
            Bound::Excluded(l) => r.partition_point(|(k, _)| &k[..] <= l),
            Bound::Unbounded => 0,
        };
        let below = |k: &[u8]| match hi {
            Bound::Included(h) => k <= h,
            Bound::Excluded(h) => k < h,
            Bound::Unbounded => true,
        };
        // A point lookup's range is a record or two: step to its end
        // before paying for a second binary search.
        let mut to = from;
        while to < r.len() && to - from < 4 && below(&r[to].0) {
            to += 1;
        }
        if to - from == 4 {
            to += r[to..].partition_point(|(k, _)| below(k));
        }
        &r[from..to]
    }

    /// The in-memory record under `key`: a spilled one is decided, so
    /// nothing looks for it to change it.
    fn get(&self, key: &[u8]) -> Option<&Arc<Record>> {
        let i = self
            .records
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()?;
        Some(&self.records[i].1)
    }

    /// Whether any record of `ident` is here.
    fn has_ident(&self, ident: &[u8]) -> bool {
        let of = |k: &[u8]| k.len() == ident.len() + SEQ_BYTES && k.starts_with(ident);
        let i = self.records.partition_point(|(k, _)| &k[..] < ident);
        if self.records.get(i).is_some_and(|(k, _)| of(k)) {
            return true;
        }
        self.file.as_ref().is_some_and(|f| {
            let i = f.lower(ident, false);
            i < f.len() && of(f.key(i))
        })
    }
}

/// The partitions of one index, as a reader took them.
struct View {
    active: Arc<Active>,
    /// P_N being frozen: still read until its frozen form is published.
    sealed: Option<Arc<Active>>,
    /// P_0 .. P_{N-1}, oldest first.
    frozen: Vec<Arc<Frozen>>,
}

/// What a filter can be asked about a scan's range.
enum Probe<'a> {
    /// A full index key (a point lookup).
    Key(&'a [u8]),
    /// A prefix: the first column's encoding.
    Prefix(&'a [u8]),
    None,
}

/// An MV-PBT index's partitions (`SecondaryIndex::mvpbt`).
pub(crate) struct Partitions {
    set: RwLock<View>,
    active_len: AtomicUsize,
    limit: usize,
    seq: AtomicU64,
    /// One freeze (or back-fill publish) at a time.
    freezing: Mutex<()>,
    /// The back-fill is in (`create_index_as`): no record of a version
    /// older than the index can arrive any more.
    backfilled: AtomicBool,
    freezes: AtomicU64,
    dropped: AtomicU64,
    purged: AtomicU64,
    probes: AtomicU64,
    skips: AtomicU64,
    false_positives: AtomicU64,
    /// Where frozen partitions spill (`Options::mvpbt_spill_dir`), and the
    /// stem of this index's file names; None: they stay in memory.
    spill: Option<(Arc<SpillDir>, String)>,
    /// Spills the OS refused (the partition stayed in memory).
    spill_failures: AtomicU64,
    /// Spill files found damaged when mapped (the partition stayed in
    /// memory, rebuilt from the records the freeze still held).
    spill_corrupt: AtomicU64,
}

impl Partitions {
    pub fn new(limit: usize, spill: Option<(Arc<SpillDir>, String)>) -> Partitions {
        Partitions {
            set: RwLock::new(View {
                active: Arc::new(SkipMap::new()),
                sealed: None,
                frozen: Vec::new(),
            }),
            active_len: AtomicUsize::new(0),
            limit: limit.max(1),
            seq: AtomicU64::new(WRITER_SEQ),
            freezing: Mutex::new(()),
            backfilled: AtomicBool::new(false),
            freezes: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            purged: AtomicU64::new(0),
            probes: AtomicU64::new(0),
            skips: AtomicU64::new(0),
            false_positives: AtomicU64::new(0),
            spill,
            spill_failures: AtomicU64::new(0),
            spill_corrupt: AtomicU64::new(0),
        }
    }

    fn view(&self) -> View {
        let s = self.set.read();
        View {
            active: Arc::clone(&s.active),
            sealed: s.sealed.clone(),
            frozen: s.frozen.clone(),
        }
    }

    /// Adds a record to P_N. The read lock keeps a freeze from sealing P_N
    /// between our load of it and the insert (the record would be lost).
    fn insert(&self, key: Box<[u8]>, rec: Arc<Record>) {
        let s = self.set.read();
        s.active.insert(key, rec);
        self.active_len.fetch_add(1, Relaxed);
    }

    /// §5.6 phase 2, for the identity of `key` (a record just added):
    /// records of it in P_N older than its newest committed one at or below
    /// `horizon` decide for no snapshot (every open and future one sees
    /// that one or a newer one), so they go now rather than at the freeze.
    fn purge_older(&self, key: &[u8], horizon: u64) {
        if horizon == 0 {
            return;
        }
        let ident = ident_of(key);
        let s = self.set.read();
        let mut covered = false;
        let mut n = 0;
        for e in s
            .active
            .range::<[u8], _>((Bound::Excluded(key), Bound::Unbounded))
        {
            if ident_of(e.key()) != ident {
                break;
            }
            if covered {
                if e.remove() {
                    n += 1;
                }
                continue;
            }
            let r = e.value();
            let st = r.stamp.load(SeqCst);
            covered = !r.aborted() && st & TID_MARK == 0 && st <= horizon;
        }
        if n > 0 {
            self.active_len.fetch_sub(n, Relaxed);
            self.purged.fetch_add(n as u64, Relaxed);
        }
    }

    /// The record under partition key `key`, wherever it is now.
    fn find(&self, key: &[u8]) -> Option<Arc<Record>> {
        let s = self.set.read();
        if let Some(e) = s.active.get(key) {
            return Some(Arc::clone(e.value()));
        }
        if let Some(e) = s.sealed.as_ref().and_then(|m| m.get(key)) {
            return Some(Arc::clone(e.value()));
        }
        s.frozen.iter().rev().find_map(|f| f.get(key).cloned())
    }

    /// Calls `f(key, record)` for each record in `[lo, hi]`, partitions
    /// newest first (P_N, then P_N-1 .. P_0), each in key order; a frozen
    /// partition whose filter rules the probe out is skipped (§5.7).
    fn for_each(
        &self,
        view: &View,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        probe: &Probe<'_>,
        mut f: impl FnMut(&[u8], Rec<'_>),
    ) {
        let (lo, hi) = (bytes(lo), bytes(hi));
        if let (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) =
            (lo, hi)
        {
            if l > h {
                return; // inverted (the skip list would panic)
            }
        }
        for m in std::iter::once(&view.active).chain(view.sealed.as_ref()) {
            for e in m.range::<[u8], _>((lo, hi)) {
                f(e.key(), Rec::Mem(e.value()));
            }
        }
        for p in view.frozen.iter().rev() {
            let asked = match probe {
                Probe::Key(k) => Some(p.bloom.contains(*k)),
                Probe::Prefix(x) => p.prefix_bloom.as_ref().map(|b| b.contains(*x)),
                Probe::None => None,
            };
            if asked.is_some() {
                self.probes.fetch_add(1, Relaxed);
            }
            if asked == Some(false) {
                self.skips.fetch_add(1, Relaxed);
                continue;
            }
            let n = p.for_range(lo, hi, &mut f);
            if asked == Some(true) && n == 0 {
                self.false_positives.fetch_add(1, Relaxed);
            }
        }
    }

    /// Freezes P_N (Algorithm 4): it becomes an immutable sorted partition
    /// without the records no snapshot in `snaps` (nor any later one) can
    /// decide by (§5.6), with its Bloom filters. Readers keep reading the
    /// sealed P_N until the frozen partition replaces it. Past
    /// [`MERGE_AT`] frozen partitions, or with `merge`, the frozen ones are
    /// merged into one (the same GC over all of them).
    pub(crate) fn freeze(
        &self,
        idx: &SecondaryIndex,
        snaps: &Snapshots,
        tids: &TidTable,
        merge: bool,
    ) {
        let _one = self.freezing.lock();
        let zones = snaps.dead_zones();
        let (sealed, older) = {
            let mut s = self.set.write();
            let sealed = (!s.active.is_empty()).then(|| {
                let sealed = std::mem::replace(&mut s.active, Arc::new(SkipMap::new()));
                self.active_len.store(0, Relaxed);
                s.sealed = Some(Arc::clone(&sealed));
                sealed
            });
            (sealed, s.frozen.clone())
        };
        if let Some(sealed) = sealed {
            let recs = sealed
                .iter()
                .map(|e| (e.key().clone(), Arc::clone(e.value())));
            let kept = self.collect(recs, &zones, tids, &older);
            let frozen = Arc::new(self.build(idx, kept, Some(tids)));
            let mut s = self.set.write();
            s.frozen.push(frozen);
            s.sealed = None;
            self.freezes.fetch_add(1, Relaxed);
        }
        let all = self.set.read().frozen.clone();
        // `merge` also re-collects a lone partition: snapshots that kept
        // its records may have ended since its freeze.
        if (merge && !all.is_empty()) || all.len() > MERGE_AT {
            // Records of one identity keep their order: keys are unique
            // (sequence numbers) and newer partitions hold newer ones.
            let mut recs: Vec<(Box<[u8]>, Arc<Record>)> =
                all.iter().flat_map(|f| f.owned()).collect();
            recs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let kept = self.collect(recs.into_iter(), &zones, tids, &[]);
            // The partitions merged (and their files, once no reader holds
            // them) go when the list no longer names them.
            let merged = Arc::new(self.build(idx, kept, Some(tids)));
            // Only freezes (serialised by `freezing`) change the list.
            self.set.write().frozen = vec![merged];
        }
    }

    /// The records of `recs` (sorted) that survive GC, given the partitions
    /// `older` below them.
    fn collect(
        &self,
        recs: impl Iterator<Item = (Box<[u8]>, Arc<Record>)>,
        zones: &DeadZones,
        tids: &TidTable,
        older: &[Arc<Frozen>],
    ) -> Vec<(Box<[u8]>, Arc<Record>)> {
        // While a back-fill runs, records of versions committed before the
        // index existed may still arrive (into a partition below all
        // others): anti-matter must stay to end them.
        let complete = self.backfilled.load(SeqCst);
        let mut kept = Vec::new();
        let mut group: Vec<(Box<[u8]>, Arc<Record>)> = Vec::new();
        let mut dropped = 0u64;
        for (k, r) in recs {
            if group
                .first()
                .is_some_and(|(g, _)| ident_of(g) != ident_of(&k))
            {
                dropped += gc_group(&mut group, zones, tids, older, complete, &mut kept);
            }
            group.push((k, r));
        }
        dropped += gc_group(&mut group, zones, tids, older, complete, &mut kept);
        self.dropped.fetch_add(dropped, Relaxed);
        kept
    }

    /// The frozen partition of `records` (sorted) with its filters (§5.7).
    /// With a spill directory its decided records go to a file and only
    /// the undecided ones stay in memory ([`Frozen`]); `tids` resolves TID
    /// marks (None: only records stamped already are decided). A spill the
    /// OS refuses, or whose file reads back damaged, keeps the whole
    /// partition in memory and is counted: never a record lost.
    fn build(
        &self,
        idx: &SecondaryIndex,
        mut records: Vec<(Box<[u8]>, Arc<Record>)>,
        tids: Option<&TidTable>,
    ) -> Frozen {
        let (bloom, prefix_bloom) = filters(idx, &records);
        let mut file = None;
        if let Some((dir, stem)) = &self.spill {
            let decided: Vec<Option<u64>> = records
                .iter()
                .map(|(_, r)| decided_stamp(r, tids))
                .collect();
            let out: Vec<(&[u8], Fixed)> = records
                .iter()
                .zip(&decided)
                .filter_map(|((k, r), d)| {
                    d.map(|stamp| {
                        let f = Fixed {
                            ty: r.ty.code() as u8,
                            stamp,
                            tuple: r.tuple,
                            version: r.version.load(SeqCst),
                            predecessor: r.predecessor,
                        };
                        (&k[..], f)
                    })
                })
                .collect();
            let spilled = (!out.is_empty()).then(|| dir.spill(stem, &out));
            drop(out);
            match spilled {
                None => {}
                Some(Ok(f)) => {
                    let mut d = decided.iter();
                    records.retain(|_| d.next().expect("one per record").is_none());
                    records.shrink_to_fit();
                    file = Some(f);
                }
                Some(Err(e)) if e.is_corrupt() => {
                    self.spill_corrupt.fetch_add(1, Relaxed);
                }
                Some(Err(_)) => {
                    self.spill_failures.fetch_add(1, Relaxed);
                }
            }
        }
        Frozen {
            records,
            file,
            bloom,
            prefix_bloom,
        }
    }

    /// This index's figures.
    pub(crate) fn stats(&self) -> MvPbtStats {
        let v = self.view();
        let mut st = MvPbtStats {
            indexes: 1,
            frozen_partitions: v.frozen.len() as u64,
            active_records: (v.active.len() + v.sealed.as_ref().map_or(0, |m| m.len())) as u64,
            freezes: self.freezes.load(Relaxed),
            records_dropped_at_freeze: self.dropped.load(Relaxed),
            records_purged_from_p_n: self.purged.load(Relaxed),
            filter_probes: self.probes.load(Relaxed),
            filter_skips: self.skips.load(Relaxed),
            filter_false_positives: self.false_positives.load(Relaxed),
            spill_failures: self.spill_failures.load(Relaxed),
            spill_corrupt_rebuilt: self.spill_corrupt.load(Relaxed),
            ..MvPbtStats::default()
        };
        for f in &v.frozen {
            st.frozen_records += f.len() as u64;
            if let Some(file) = &f.file {
                st.spilled_partitions += 1;
                st.spilled_records += file.len() as u64;
                st.spilled_bytes += file.bytes();
            }
            st.bloom_bytes += (f.bloom.num_bits() / 8) as u64;
            st.prefix_bloom_bytes += f.prefix_bloom.as_ref().map_or(0, |b| b.num_bits() / 8) as u64;
        }
        st
    }
}

/// Keeps the records of one identity (`group`, newest first) that a live
/// or future snapshot may decide by, appending them to `kept`; returns how
/// many went.
fn gc_group(
    group: &mut Vec<(Box<[u8]>, Arc<Record>)>,
    zones: &DeadZones,
    tids: &TidTable,
    older: &[Arc<Frozen>],
    complete: bool,
    kept: &mut Vec<(Box<[u8]>, Arc<Record>)>,
) -> u64 {
    let n = group.len();
    if n == 0 {
        return 0;
    }
    let mark = kept.len();
    // The stamp of the nearest newer committed record: this record decides
    // for snapshots in [its stamp, end). None: no newer one committed yet,
    // so snapshots to come may decide by it.
    let mut end: Option<u64> = None;
    let mut last_committed = Vec::with_capacity(n);
    for (k, r) in group.drain(..) {
        if r.aborted() {
            continue;
        }
        match r.committed(tids) {
            None => {
                kept.push((k, r));
                last_committed.push(false);
            }
            Some(s) => {
                if !end.is_some_and(|e| zones.is_dead(s, e)) {
                    kept.push((k, r));
                    last_committed.push(true);
                }
                end = Some(s);
            }
        }
    }
    // Committed anti-matter with nothing older to end, here or in an older
    // partition, decides nothing a missing record would not.
    while complete && kept.len() > mark {
        let (k, r) = kept.last().expect("non-empty");
        let committed = *last_committed.last().expect("one per kept");
        if !committed || r.ty.is_matter() || older.iter().any(|f| f.has_ident(ident_of(k))) {
            break;
        }
        kept.pop();
        last_committed.pop();
    }
    (n - (kept.len() - mark)) as u64
}

/// The filters of a frozen partition of `records` (§5.7): a Bloom filter
/// on each full index key, and on each first column for a multi-column
/// index.
fn filters(
    idx: &SecondaryIndex,
    records: &[(Box<[u8]>, Arc<Record>)],
) -> (BloomFilter, Option<BloomFilter>) {
    let mut keys: Vec<&[u8]> = records.iter().map(|(k, _)| &k[..idx.ikey_len(k)]).collect();
    keys.dedup();
    let mut bloom = BloomFilter::with_false_pos(0.01)
        .seed(&0)
        .expected_items(keys.len().max(1));
    for k in &keys {
        bloom.insert(*k);
    }
    let prefix_bloom = (idx.columns.len() > 1).then(|| {
        let mut firsts: Vec<&[u8]> = keys.iter().map(|k| &k[..skip_values(k, 1)]).collect();
        firsts.dedup();
        let mut b = BloomFilter::with_false_pos(0.01)
            .seed(&0)
            .expected_items(firsts.len().max(1));
        for p in &firsts {
            b.insert(*p);
        }
        b
    });
    (bloom, prefix_bloom)
}

fn bytes(b: &Bound<EncodedKey>) -> Bound<&[u8]> {
    match b {
        Bound::Included(EncodedKey::Bytes(k)) => Bound::Included(k),
        Bound::Excluded(EncodedKey::Bytes(k)) => Bound::Excluded(k),
        Bound::Included(EncodedKey::U64(_))
        | Bound::Excluded(EncodedKey::U64(_))
        | Bound::Unbounded => Bound::Unbounded,
    }
}

/// What the filters can be asked for `[lo, hi]`: a point lookup
/// (`[p, prefix_end(p))` with `p` all index columns) or a prefix scan.
fn probe<'a>(idx: &SecondaryIndex, lo: &'a Bound<EncodedKey>, hi: &Bound<EncodedKey>) -> Probe<'a> {
    let (Bound::Included(EncodedKey::Bytes(l)), Bound::Excluded(EncodedKey::Bytes(h))) = (lo, hi)
    else {
        return Probe::None;
    };
    if l.is_empty() || prefix_end(l).as_deref() != Some(&h[..]) {
        return Probe::None;
    }
    let n = idx.columns.len();
    if skip_values(l, n) == l.len() && skip_values(l, n - 1) < l.len() {
        return Probe::Key(l);
    }
    Probe::Prefix(&l[..skip_values(l, 1)])
}

fn parts(idx: &SecondaryIndex) -> &Partitions {
    idx.mvpbt.as_ref().expect("an MV-PBT index has partitions")
}

/// Algorithms 2 and 3: for each identity in `[lo, hi]`, the record that
/// decides for a snapshot at `ts` of transaction `me` (None: anti-matter,
/// the row is not visible under it), in identity order.
fn decide(
    idx: &SecondaryIndex,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    ts: u64,
    me: u64,
    tids: &TidTable,
) -> BTreeMap<Box<[u8]>, Option<RecBuf>> {
    let p = parts(idx);
    let view = p.view();
    let mut decided: BTreeMap<Box<[u8]>, Option<RecBuf>> = BTreeMap::new();
    // Records of one identity are adjacent in a partition: remember the
    // last one's answer instead of asking the map for each.
    let (mut last, mut last_decided) = (Vec::new(), false);
    p.for_each(&view, lo, hi, &probe(idx, lo, hi), |k, r| {
        let ident = ident_of(k);
        if ident != &last[..] {
            last.clear();
            last.extend_from_slice(ident);
            last_decided = decided.contains_key(ident);
        }
        // (c): a newer record of this identity already decided.
        if last_decided {
            return;
        }
        // (a), (b)
        if !r.visible_to(ts, me, tids) {
            return;
        }
        // (d): anti-matter decides "not visible".
        let matter = r.ty().is_matter().then(|| r.to_buf());
        decided.insert(ident.into(), matter);
        last_decided = true;
    });
    decided
}

/// The identities in `[lo, hi]` with matter not `ours` (by partition key),
/// each with the row the newest such record names: with `ours` never true,
/// what a read-write scan reads; with our own writes, what its commit
/// re-checks (a row another transaction made hold the key is a phantom
/// even if we wrote the row later, say deleted it; only matter we wrote
/// ourselves is no phantom). The row must come from those records: the
/// identity's newest record of any writer can be our own and name our own
/// new row, which the scan did not read, and the check took that for a
/// phantom and refused a transaction running alone (`tests/secondary_cc.rs`,
/// `a_key_deleted_then_inserted_again_alone_is_no_phantom`).
fn matter_by_identity(
    idx: &SecondaryIndex,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    ours: impl Fn(&[u8]) -> bool,
) -> BTreeMap<Box<[u8]>, u64> {
    let p = parts(idx);
    let view = p.view();
    let mut out: BTreeMap<Box<[u8]>, u64> = BTreeMap::new();
    p.for_each(&view, lo, hi, &probe(idx, lo, hi), |k, r| {
        // Newest first (`Parts::for_each`): the first such record wins.
        if !r.aborted() && r.ty().is_matter() && !ours(k) {
            out.entry(ident_of(k).into()).or_insert(r.tuple());
        }
    });
    out
}

/// The MV-PBT index kind.
pub(crate) struct MvPbt;

impl MvPbt {
    /// Adds one record stamped with our tid to P_N and lists it in our
    /// writes.
    #[allow(clippy::too_many_arguments)]
    fn add<C: IndexTxn>(
        cx: &mut C,
        idx: &Arc<SecondaryIndex>,
        ident: &[u8],
        ty: RecordType,
        tuple: u64,
        version: *mut Version,
        pred: *mut Version,
    ) {
        let p = parts(idx);
        let key = part_key(ident, p.seq.fetch_add(1, Relaxed));
        let rec = Record::new(
            ty,
            TID_MARK | cx.tid(),
            tuple,
            version,
            pred as usize as u64,
        );
        p.insert(key.clone(), Arc::new(rec));
        p.purge_older(&key, cx.horizon());
        cx.sec_writes().push(SecWrite {
            index: Arc::clone(idx),
            key,
            value: ty.code(),
            version,
            tuple,
        });
    }

    /// A new identity `ident` of our row `tuple`: MVTO's predicate check,
    /// and for a unique index no other row may hold its index key.
    fn new_key<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        ident: &[u8],
        tuple: u64,
    ) -> Result<()> {
        cx.check_insert(&idx.predicate_read_ts)
            .map_err(Error::Conflict)?;
        if idx.unique {
            unique_check(cx, t, idx, ident, tuple)?;
        }
        Ok(())
    }

    /// Freezes the P_N of those indexes of `list` that reached their size.
    fn maybe_freeze<C: IndexTxn>(cx: &C, list: &[Arc<SecondaryIndex>]) {
        for idx in list {
            let p = parts(idx);
            if p.active_len.load(Relaxed) >= p.limit && !p.freezing.is_locked() {
                p.freeze(idx, &cx.snapshots(), cx.tids(), false);
            }
        }
    }
}

/// §5.2: before a unique index takes a key, no other row may hold it in
/// its newest state: decided from the records alone (the newest live
/// record of each other identity with the key). Another writer's undecided
/// record is a write-write conflict (it may be taking or leaving the key).
fn unique_check<C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    idx: &SecondaryIndex,
    ident: &[u8],
    tuple: u64,
) -> Result<()> {
    let ikey_len = idx.ikey_len(ident);
    let ikey = &ident[..ikey_len];
    let my_pk = &ident[ikey_len..];
    let lo = Bound::Included(EncodedKey::Bytes(ikey.into()));
    let hi = match prefix_end(ikey) {
        Some(e) => Bound::Excluded(EncodedKey::Bytes(e.into())),
        None => Bound::Unbounded,
    };
    let p = parts(idx);
    let view = p.view();
    let mut newest: BTreeMap<Box<[u8]>, RecBuf> = BTreeMap::new();
    p.for_each(&view, &lo, &hi, &Probe::Key(ikey), |k, r| {
        if !r.aborted() && !newest.contains_key(ident_of(k)) {
            newest.insert(ident_of(k).into(), r.to_buf());
        }
    });
    let (me, ts) = (cx.tid(), cx.snapshot_ts());
    for (other, r) in &newest {
        let r = r.get();
        if &other[ikey_len..] == my_pk || r.tuple() == tuple {
            continue; // our own row
        }
        let s = r.raw_stamp();
        let mine = s == TID_MARK | me;
        let committed = r.committed(cx.tids());
        if !mine && committed.is_none() {
            if r.aborted() {
                continue;
            }
            return Err(Error::Conflict(ConflictKind::WriteWrite));
        }
        if !r.ty().is_matter() {
            continue; // the row left the key
        }
        if let Some(c) = committed.filter(|&c| !mine && c > ts) {
            let _ = c;
            if let Some(k) = C::NEWER_THAN_SNAPSHOT {
                return Err(Error::Conflict(k));
            }
        }
        return Err(common::duplicate(cx, t, idx, r.tuple()));
    }
    Ok(())
}

impl SecondaryIndexKind for MvPbt {
    fn implements(kind: IndexKind, pointers: IndexPointers) -> bool {
        let _ = pointers;
        kind == IndexKind::MvPbt
    }

    /// §5.2's insert and update: a regular record for a new row; a
    /// replacement for an update that keeps the key; an anti-record for
    /// the old key and a replacement for the new one when it changes.
    fn on_write<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()> {
        let old = common::prev_image(prev);
        let mark = cx.sec_writes().len();
        for idx in list {
            if idx.dropped.load(SeqCst) {
                continue;
            }
            let ident = idx.ident(&t.schema, new);
            let Some(o) = old.as_deref() else {
                Self::add(cx, idx, &ident, RecordType::Regular, tuple, v, prev);
                if let Err(e) = Self::new_key(cx, t, idx, &ident, tuple) {
                    undo(cx, mark);
                    return Err(e);
                }
                continue;
            };
            let old_ident = idx.ident(&t.schema, o);
            if old_ident == ident {
                // A non-key update. Physical pointers need a replacement
                // record naming the new version (§5.1). Under logical
                // pointers a record names the row (its tuple id, the
                // paper's VID: §4 and Fig. 7), not a version: the
                // row's newest record still says "it holds this key",
                // readers reach the version through the tuple id, so a
                // replacement would carry nothing a scan decides by.
                if idx.pointers == IndexPointers::Physical {
                    Self::add(cx, idx, &ident, RecordType::Replacement, tuple, v, prev);
                }
                continue;
            }
            Self::add(
                cx,
                idx,
                &old_ident,
                RecordType::AntiRecord,
                tuple,
                prev,
                prev,
            );
            Self::add(cx, idx, &ident, RecordType::Replacement, tuple, v, prev);
            if let Err(e) = Self::new_key(cx, t, idx, &ident, tuple) {
                undo(cx, mark);
                return Err(e);
            }
        }
        Self::maybe_freeze(cx, list);
        Ok(())
    }

    /// §5.2's delete: a tombstone under the key the row had.
    fn on_delete<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        list: &[Arc<SecondaryIndex>],
        tuple: u64,
        prev: *mut Version,
        _v: *mut Version,
        old: &[Value],
    ) -> Result<()> {
        for idx in list {
            if idx.dropped.load(SeqCst) {
                continue;
            }
            let ident = idx.ident(&t.schema, old);
            Self::add(cx, idx, &ident, RecordType::Tombstone, tuple, prev, prev);
        }
        Self::maybe_freeze(cx, list);
        Ok(())
    }

    fn adds_key(w: &SecWrite) -> bool {
        RecordType::from_code(w.value).is_matter()
    }

    /// Our records name `own` (the version we had, or the one a record of
    /// ours ends): they name its replacement now. No record goes: the
    /// records the new write added already supersede them.
    fn on_replace_own(
        writes: &mut SecWrites,
        _t: &TableInner,
        _tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) {
        for w in writes.iter_mut() {
            if w.version != own || !super::is_mine::<Self>(w) {
                continue;
            }
            if let Some(r) = parts(&w.index).find(&w.key) {
                r.version.store(v as usize as u64, SeqCst);
            }
            w.version = v;
        }
    }

    fn on_commit(w: &SecWrite, cts: u64) {
        if let Some(r) = parts(&w.index).find(&w.key) {
            r.stamp.store(cts, SeqCst);
        }
    }

    fn on_abort(w: &SecWrite) {
        let p = parts(&w.index);
        if let Some(r) = p.find(&w.key) {
            r.gc.store(true, SeqCst);
        }
        let s = p.set.read();
        if s.active.remove(&w.key).is_some() {
            p.active_len.fetch_sub(1, Relaxed);
        }
    }

    fn scan<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode,
        mut f: impl FnMut(&[Value]) -> ControlFlow<()>,
    ) -> Result<Scanned> {
        let mut n = 0;
        if !mode.rw {
            // Index-only visibility: one row read per visible record.
            let decided = decide(idx, lo, hi, cx.snapshot_ts(), cx.tid(), cx.tids());
            for (ident, r) in decided {
                let Some(r) = r else { continue };
                let r = r.get();
                let v = match idx.pointers {
                    IndexPointers::Physical => r.version(),
                    IndexPointers::LogicalTupleId | IndexPointers::LogicalPrimaryKey => {
                        cx.read_row(t, r.tuple())?
                    }
                };
                // SAFETY: pinned by the caller; the version a live
                // snapshot sees is not retired (GC retires only versions
                // no registered snapshot reads), and the deciding record
                // names exactly that version.
                let Some(v) = (unsafe { v.as_ref() }) else {
                    debug_assert!(false, "a visible record's row has no visible version");
                    continue;
                };
                if v.is_tombstone() {
                    debug_assert!(false, "a visible record names a tombstone");
                    continue;
                }
                let flow = storage::with_values(v, |d| {
                    debug_assert_eq!(
                        idx.ident(&t.schema, d)[..],
                        ident[..],
                        "the version read has the record's key"
                    );
                    f(d)
                });
                n += 1;
                if flow.is_break() {
                    // (A read-only scan records nothing to re-validate.)
                    break;
                }
            }
            return Ok(Scanned {
                rows: n,
                sec: None,
                stopped_at: None,
            });
        }
        // Read-write: through the protocol, for its read tracking.
        let mut reads = ScanReads::new(mode);
        let mut stopped_at = None;
        for (ident, tuple) in matter_by_identity(idx, lo, hi, |_| false) {
            let v = reads.read(cx, t, tuple)?;
            // SAFETY: pinned; `v` is at or above our visible version.
            let Some(r) = (unsafe { v.as_ref() }) else {
                continue;
            };
            if r.is_tombstone() {
                continue;
            }
            // None: the row's key changed, or it is another row.
            let hit =
                storage::with_values(r, |d| idx.ident_matches(&t.schema, d, &ident).then(|| f(d)));
            if let Some(flow) = hit {
                reads.saw(&ident);
                n += 1;
                if flow.is_break() {
                    stopped_at = Some(ident.to_vec());
                    break;
                }
            }
        }
        Ok(Scanned {
            rows: n,
            sec: reads.finish(idx),
            stopped_at,
        })
    }

    fn scan_keys<C: IndexTxn>(
        cx: &mut C,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode,
        mut f: impl FnMut(&[u8]),
    ) -> Option<usize> {
        if mode.rw {
            return None; // the protocol must read the rows
        }
        let decided = decide(idx, lo, hi, cx.snapshot_ts(), cx.tid(), cx.tids());
        let mut n = 0;
        for (ident, r) in &decided {
            if r.is_some() {
                f(ident);
                n += 1;
            }
        }
        Some(n)
    }

    /// An identity with another transaction's matter in the range that
    /// the scan did not see, and whose row the scan did not read: a
    /// phantom (also when we wrote the row after the scan).
    fn validate(
        t: &TableInner,
        sec: &SecScan,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        own: &[SecWrite],
        accounted: impl FnOnce() -> Vec<u64>,
    ) -> bool {
        let idx = &sec.index;
        let mut unseen = common::Unseen::new(t, accounted);
        let mut mine: Vec<&[u8]> = own
            .iter()
            .filter(|w| Arc::ptr_eq(&w.index, idx))
            .map(|w| &w.key[..])
            .collect();
        mine.sort_unstable();
        let ours = |k: &[u8]| mine.binary_search(&k).is_ok();
        for (ident, tuple) in matter_by_identity(idx, lo, hi, ours) {
            if sec.seen.binary_search_by(|x| (**x).cmp(&ident)).is_ok() {
                continue;
            }
            if unseen.is_phantom(tuple) {
                return false;
            }
        }
        true
    }

    /// Records are dropped at the freeze, never for a version: one naming
    /// a retired version decides for no live snapshot.
    fn before_prune(
        _t: &TableInner,
        _list: &[Arc<SecondaryIndex>],
        _tuple: u64,
        _plan: PrunePlan<'_>,
        _guard: &Guard,
    ) {
    }

    /// As `before_prune`: the row's tombstone record ends it for every
    /// snapshot that could reach the tuple id again.
    fn on_unlink(_t: &TableInner, _list: &[Arc<SecondaryIndex>], _tuple: u64) {}

    /// Records for every committed version, oldest first per row, stamped
    /// with their commit timestamps, as if the index had seen each write.
    /// They form a partition below all others: writers maintaining the
    /// index meanwhile wrote only newer records (or the same ones), and
    /// their partitions may be frozen already.
    fn backfill(t: &TableInner, idx: &SecondaryIndex) {
        let p = parts(idx);
        let guard = epoch::pin();
        let mut n = 0u64;
        let mut seq = 0u64;
        let mut recs: Vec<(Box<[u8]>, Arc<Record>)> = Vec::new();
        t.rows.for_each_head(|tuple, _| {
            let mut hist: Vec<(*mut Version, u64, Option<Vec<u8>>)> = Vec::new();
            let mut chain = storage::chain(t, tuple, Span::ALL);
            while let Some((v, img)) = chain.step() {
                // SAFETY: pinned, GC paused.
                let b = unsafe { &*v }.begin.load(SeqCst);
                if b & TID_MARK != 0 {
                    continue; // its writer maintains the index itself
                }
                hist.push((v, b, img.map(|d| idx.ident(&t.schema, d))));
            }
            let mut prev: Option<(*mut Version, Vec<u8>)> = None;
            for (v, cts, ident) in hist.into_iter().rev() {
                let mut put = |ident: &[u8], ty, version: *mut Version, pred: *mut Version| {
                    let r = Record::new(ty, cts, tuple, version, pred as usize as u64);
                    recs.push((part_key(ident, seq), Arc::new(r)));
                    seq += 1;
                };
                match (&prev, &ident) {
                    (None, Some(i)) => put(i, RecordType::Regular, v, std::ptr::null_mut()),
                    // As `on_write`: only physical pointers need one.
                    (Some((pv, pi)), Some(i)) if pi == i => {
                        if idx.pointers == IndexPointers::Physical {
                            put(i, RecordType::Replacement, v, *pv);
                        }
                    }
                    (Some((pv, pi)), Some(i)) => {
                        put(pi, RecordType::AntiRecord, *pv, *pv);
                        put(i, RecordType::Replacement, v, *pv);
                    }
                    (Some((pv, pi)), None) => put(pi, RecordType::Tombstone, *pv, *pv),
                    (None, None) => {}
                }
                prev = ident.map(|i| (v, i));
            }
            n += 1;
            if n.is_multiple_of(4096) {
                guard.flush();
            }
        });
        debug_assert!(seq < WRITER_SEQ);
        recs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let _one = p.freezing.lock();
        if !recs.is_empty() {
            let bottom = Arc::new(p.build(idx, recs, None));
            p.set.write().frozen.insert(0, bottom);
        }
        p.backfilled.store(true, SeqCst);
    }

    /// No two rows hold one key in their newest state (uncommitted records
    /// count, conservatively).
    fn check_unique(t: &TableInner, idx: &SecondaryIndex) -> Result<()> {
        let mut newest: BTreeMap<Box<[u8]>, RecBuf> = BTreeMap::new();
        let p = parts(idx);
        let view = p.view();
        p.for_each(
            &view,
            &Bound::Unbounded,
            &Bound::Unbounded,
            &Probe::None,
            |k, r| {
                if !r.aborted() && !newest.contains_key(ident_of(k)) {
                    newest.insert(ident_of(k).into(), r.to_buf());
                }
            },
        );
        let mut last: Option<Box<[u8]>> = None;
        for (ident, r) in newest {
            if !r.get().ty().is_matter() {
                continue;
            }
            let ikey: Box<[u8]> = ident[..idx.ikey_len(&ident)].into();
            if last.as_ref() == Some(&ikey) {
                return Err(Error::DuplicateKey {
                    table: format!("{} (unique index {})", t.schema.name, idx.name),
                    key: "two rows share an index key".into(),
                });
            }
            last = Some(ikey);
        }
        Ok(())
    }

    fn stats(idx: &SecondaryIndex) -> (u64, u64) {
        let st = parts(idx).stats();
        let records = st.active_records + st.frozen_records;
        // key (about an entry's), Arc'd record, skip-list or Vec slot; a
        // spilled record is in its file (`spilled_bytes`), not in memory.
        let resident = records - st.spilled_records;
        let bytes = resident * (24 + 8 + 56 + 32) + st.bloom_bytes + st.prefix_bloom_bytes;
        (records, bytes)
    }
}

/// Takes back the records added since `mark` (a failed write).
fn undo<C: IndexTxn>(cx: &mut C, mark: usize) {
    let undone: Vec<SecWrite> = cx.sec_writes().drain(mark..).collect();
    for w in undone.iter().rev() {
        MvPbt::on_abort(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::secondary::Unique;
    use crate::txn::index_ops::Through;
    use crate::{key, row, Database, Options, Schema, Type};
    use proptest::prelude::*;

    /// A one-column MV-PBT index on column 0 of (a, pk) rows, outside any
    /// database: records are placed by hand.
    fn bare(columns: usize) -> SecondaryIndex {
        let names: Vec<&str> = ["a", "b", "c"][..columns].to_vec();
        SecondaryIndex::new(
            "t",
            0,
            (0..columns).collect(),
            &names,
            Unique::No,
            IndexPointers::LogicalTupleId,
            IndexKind::MvPbt,
            1 << 20,
            None,
        )
    }

    fn ident(a: i64, pk: i64) -> Vec<u8> {
        let mut out = Vec::new();
        crate::index::key::encode_values_into(&[Value::Int(a), Value::Int(pk)], &mut out);
        out
    }

    /// Places a record of `ty` for identity (a, pk) stamped `stamp`;
    /// `version` tells records apart. Sequence numbers rise with each call,
    /// so later calls are newer.
    fn put(idx: &SecondaryIndex, a: i64, pk: i64, ty: RecordType, stamp: u64, version: u64) {
        let p = parts(idx);
        let key = part_key(&ident(a, pk), p.seq.fetch_add(1, Relaxed));
        let r = Record::new(ty, stamp, pk as u64, version as usize as *mut Version, 0);
        p.insert(key, Arc::new(r));
    }

    /// The version each identity visible at `ts` decides by, as (a, pk,
    /// version).
    fn visible(idx: &SecondaryIndex, ts: u64, me: u64, tids: &TidTable) -> Vec<(i64, i64, u64)> {
        decide(idx, &Bound::Unbounded, &Bound::Unbounded, ts, me, tids)
            .into_iter()
            .filter_map(|(ident, r)| {
                let v = crate::index::key::decode_values(&ident);
                r.map(|r| {
                    (
                        v[0].as_int().unwrap(),
                        v[1].as_int().unwrap(),
                        r.get().version() as u64,
                    )
                })
            })
            .collect()
    }

    fn snaps(clock: u64, begins: &[u64]) -> Snapshots {
        Snapshots::new(clock, begins.to_vec())
    }

    /// Algorithm 3, case by case, over records of one partition and over
    /// two (a frozen P_0 under P_N).
    #[test]
    fn algorithm_3_decides_each_record_type() {
        use RecordType::*;
        let tids = TidTable::new(8);
        for frozen_first in [false, true] {
            let idx = bare(1);
            // Row 1: inserted at 10 under a=1, its other column updated at 20.
            put(&idx, 1, 1, Regular, 10, 101);
            // Row 2: inserted at 10 under a=2, moved to a=3 at 20.
            put(&idx, 2, 2, Regular, 10, 201);
            // Row 3: inserted at 10, deleted at 30.
            put(&idx, 4, 3, Regular, 10, 301);
            // Row 4: its writer aborted (FLAG_GC).
            put(&idx, 5, 4, Regular, 5, 401);
            parts(&idx)
                .find(&part_key(&ident(5, 4), WRITER_SEQ + 3))
                .unwrap()
                .gc
                .store(true, SeqCst);
            // Row 5: still uncommitted, by transaction 7.
            put(&idx, 6, 5, Regular, TID_MARK | 7, 501);
            if frozen_first {
                parts(&idx).freeze(&idx, &snaps(1, &[0]), &tids, false);
            }
            put(&idx, 1, 1, Replacement, 20, 102);
            put(&idx, 2, 2, AntiRecord, 20, 201);
            put(&idx, 3, 2, Replacement, 20, 202);
            put(&idx, 4, 3, Tombstone, 30, 301);
            let at = |ts| visible(&idx, ts, 99, &tids);
            // (b): nothing committed at or before 9 but row 4's aborted
            // insert, which (a) hides.
            assert_eq!(at(9), vec![], "{frozen_first}");
            assert_eq!(at(10), vec![(1, 1, 101), (2, 2, 201), (4, 3, 301)]);
            // The replacement decides for row 1 (the newest first, §5.3);
            // the anti-record ends row 2 under a=2 (d) and hides its
            // regular record (c); the new key decides by the replacement.
            assert_eq!(at(25), vec![(1, 1, 102), (3, 2, 202), (4, 3, 301)]);
            // The tombstone ends row 3 and hides its regular record.
            assert_eq!(at(30), vec![(1, 1, 102), (3, 2, 202)]);
            // Its own writer sees row 5; a snapshot of another does not.
            assert_eq!(visible(&idx, 30, 7, &tids).len(), 3);
        }
    }

    /// §5.3: in a partition, records sort by identity, then newest first,
    /// whatever the order they arrive in; a freeze keeps that order.
    #[test]
    fn records_sort_by_key_then_newest_first() {
        use RecordType::*;
        let idx = bare(1);
        let tids = TidTable::new(8);
        put(&idx, 2, 1, Regular, 10, 1);
        put(&idx, 1, 9, Regular, 11, 2);
        put(&idx, 2, 1, Replacement, 12, 3);
        put(&idx, 1, 2, Regular, 13, 4);
        put(&idx, 2, 1, Replacement, 14, 5);
        let order = |idx: &SecondaryIndex| {
            let mut v = Vec::new();
            let p = parts(idx);
            p.for_each(
                &p.view(),
                &Bound::Unbounded,
                &Bound::Unbounded,
                &Probe::None,
                |k, r| {
                    let d = crate::index::key::decode_values(ident_of(k));
                    v.push((
                        d[0].as_int().unwrap(),
                        d[1].as_int().unwrap(),
                        r.version() as u64,
                    ));
                },
            );
            v
        };
        let expected = vec![(1, 2, 4), (1, 9, 2), (2, 1, 5), (2, 1, 3), (2, 1, 1)];
        assert_eq!(order(&idx), expected);
        // A snapshot at 20 keeps every record (each decides for one
        // listed snapshot or another).
        parts(&idx).freeze(&idx, &snaps(30, &[10, 12, 14]), &tids, false);
        assert_eq!(parts(&idx).view().frozen.len(), 1);
        assert_eq!(order(&idx), expected);
    }

    /// §5.6 at the freeze: a record no live or future snapshot decides by
    /// goes; one an open snapshot sees stays; undecided records stay;
    /// aborted ones go; anti-matter with nothing left to end goes.
    #[test]
    fn freeze_drops_only_what_no_snapshot_sees() {
        use RecordType::*;
        let tids = TidTable::new(8);
        let idx = bare(1);
        parts(&idx).backfilled.store(true, SeqCst);
        // Row 1: versions at 10, 20, 30; a snapshot at 15 reads the first.
        put(&idx, 1, 1, Regular, 10, 11);
        put(&idx, 1, 1, Replacement, 20, 12);
        put(&idx, 1, 1, Replacement, 30, 13);
        // Row 2: inserted at 16, deleted at 18: no snapshot in between.
        put(&idx, 2, 2, Regular, 16, 21);
        put(&idx, 2, 2, Tombstone, 18, 21);
        // Row 3: committed at 10, then updated by a running writer.
        put(&idx, 3, 3, Regular, 10, 31);
        put(&idx, 3, 3, Replacement, TID_MARK | 5, 32);
        // Row 4: an aborted insert.
        put(&idx, 4, 4, Regular, TID_MARK | 6, 41);
        parts(&idx)
            .find(&part_key(&ident(4, 4), WRITER_SEQ + 7))
            .unwrap()
            .gc
            .store(true, SeqCst);
        let before = visible(&idx, 15, 0, &tids);
        parts(&idx).freeze(&idx, &snaps(40, &[15]), &tids, false);
        let p = parts(&idx);
        let kept: Vec<u64> = p.view().frozen[0]
            .records
            .iter()
            .map(|(_, r)| r.version() as u64)
            .collect();
        // Row 1: 20 decided for [20, 30), where no snapshot is: gone.
        assert_eq!(kept, vec![13, 11, 32, 31]);
        assert_eq!(p.stats().records_dropped_at_freeze, 4);
        // The open snapshot reads what it read before, the newest state
        // is unchanged.
        assert_eq!(visible(&idx, 15, 0, &tids), before);
        assert_eq!(visible(&idx, 40, 0, &tids), vec![(1, 1, 13), (3, 3, 31)]);
    }

    /// A tombstone whose row has a record in an older partition stays at
    /// the freeze (it ends that record); the merge of both drops both.
    #[test]
    fn anti_matter_stays_while_an_older_partition_needs_it() {
        use RecordType::*;
        let tids = TidTable::new(8);
        let idx = bare(1);
        parts(&idx).backfilled.store(true, SeqCst);
        put(&idx, 1, 1, Regular, 10, 11);
        parts(&idx).freeze(&idx, &snaps(11, &[]), &tids, false);
        put(&idx, 1, 1, Tombstone, 20, 11);
        parts(&idx).freeze(&idx, &snaps(21, &[]), &tids, false);
        let p = parts(&idx);
        assert_eq!(p.view().frozen.len(), 2);
        assert_eq!(p.stats().frozen_records, 2);
        assert_eq!(visible(&idx, 25, 0, &tids), vec![]);
        p.freeze(&idx, &snaps(21, &[]), &tids, true);
        assert_eq!(p.view().frozen.len(), 1);
        assert_eq!(p.stats().frozen_records, 0);
        assert_eq!(visible(&idx, 25, 0, &tids), vec![]);
    }

    proptest! {
        /// §5.7: a partition's filters never rule out a key it holds (no
        /// false negatives), for point lookups and prefix scans alike; the
        /// point lookup finds the row.
        #[test]
        fn filters_never_give_a_false_negative(
            rows in proptest::collection::vec((0i64..50, 0i64..50), 1..80),
            probes in proptest::collection::vec((0i64..60, 0i64..60), 0..40),
        ) {
            let tids = TidTable::new(8);
            let idx = bare(2);
            let enc = |vals: &[i64]| {
                let mut out = Vec::new();
                crate::index::key::encode_values_into(
                    &vals.iter().map(|&v| Value::Int(v)).collect::<Vec<_>>(), &mut out);
                out
            };
            for (pk, &(a, b)) in rows.iter().enumerate() {
                let p = parts(&idx);
                let key = part_key(&enc(&[a, b, pk as i64]), p.seq.fetch_add(1, Relaxed));
                p.insert(key, Arc::new(Record::new(RecordType::Regular, 1, pk as u64, std::ptr::null_mut(), 0)));
            }
            parts(&idx).freeze(&idx, &snaps(2, &[]), &tids, false);
            let view = parts(&idx).view();
            let f = &view.frozen[0];
            for &(a, b) in &rows {
                prop_assert!(f.bloom.contains(&enc(&[a, b])[..]));
                prop_assert!(f.prefix_bloom.as_ref().unwrap().contains(&enc(&[a])[..]));
                let lo = Bound::Included(EncodedKey::Bytes(enc(&[a, b]).into()));
                let hi = Bound::Excluded(EncodedKey::Bytes(prefix_end(&enc(&[a, b])).unwrap().into()));
                prop_assert!(matches!(probe(&idx, &lo, &hi), Probe::Key(_)));
                let found = decide(&idx, &lo, &hi, 5, 0, &tids);
                let want = rows.iter().filter(|r| **r == (a, b)).count();
                prop_assert_eq!(found.len(), want);
                let lo = Bound::Included(EncodedKey::Bytes(enc(&[a]).into()));
                let hi = Bound::Excluded(EncodedKey::Bytes(prefix_end(&enc(&[a])).unwrap().into()));
                prop_assert!(matches!(probe(&idx, &lo, &hi), Probe::Prefix(_)));
                let found = decide(&idx, &lo, &hi, 5, 0, &tids);
                prop_assert_eq!(found.len(), rows.iter().filter(|r| r.0 == a).count());
            }
            // Keys absent: the answer is still exact, whatever the filter.
            for &(a, b) in &probes {
                let lo = Bound::Included(EncodedKey::Bytes(enc(&[a, b]).into()));
                let hi = Bound::Excluded(EncodedKey::Bytes(prefix_end(&enc(&[a, b])).unwrap().into()));
                let found = decide(&idx, &lo, &hi, 5, 0, &tids);
                prop_assert_eq!(found.len(), rows.iter().filter(|r| **r == (a, b)).count());
            }
            let st = parts(&idx).stats();
            prop_assert!(st.filter_probes >= st.filter_skips + st.filter_false_positives);
            prop_assert!(st.bloom_bytes > 0 && st.prefix_bloom_bytes > 0);
        }
    }

    fn kv_db(o: Options) -> (Database, crate::Table, crate::Index) {
        let db = Database::open(o.gc_interval(None)).unwrap();
        let t = db
            .create_table(
                Schema::new("kv")
                    .column("k", Type::Int)
                    .column("v", Type::Int)
                    .column("n", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        let idx = db
            .create_index_as("by_v", &t, &["v"], Unique::No, IndexKind::MvPbt)
            .unwrap();
        (db, t, idx)
    }

    /// The newest record of the index, by partition key.
    fn all_records(idx: &crate::Index) -> Vec<Arc<Record>> {
        let p = parts(&idx.inner);
        let mut out = Vec::new();
        p.for_each(
            &p.view(),
            &Bound::Unbounded,
            &Bound::Unbounded,
            &Probe::None,
            |_, r| match r {
                Rec::Mem(r) => out.push(Arc::clone(r)),
                Rec::File(_) => panic!("no spill directory"),
            },
        );
        out
    }

    /// A record carries its writer's tid until the commit stamps it with
    /// the commit timestamp (also in a partition frozen meanwhile); an
    /// abort flags its records and takes them out of P_N.
    #[test]
    fn stamps_switch_from_tid_to_cts_at_commit_and_vanish_on_abort() {
        let (db, t, idx) = kv_db(Options::default());
        let mut w = db.begin().unwrap();
        w.insert(&t, row![1, 10, 0]).unwrap();
        let tid = w.tid;
        let recs = all_records(&idx);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].stamp(), TID_MARK | tid);
        // Frozen while undecided: kept, and still stamped at commit.
        db.freeze_index(&idx).unwrap();
        assert_eq!(parts(&idx.inner).stats().frozen_records, 1);
        w.commit().unwrap();
        let s = recs[0].stamp();
        assert_eq!(s & TID_MARK, 0);
        assert!(s > 0 && s <= db.inner.clock.load(SeqCst));

        let mut w = db.begin().unwrap();
        w.update(&t, &key![1], &[("v", Value::Int(20))]).unwrap();
        w.delete(&t, &key![1]).unwrap();
        w.insert(&t, row![2, 10, 0]).unwrap();
        // anti-record + replacement, tombstone, regular
        assert_eq!(parts(&idx.inner).stats().active_records, 4);
        let mine: Vec<Arc<Record>> = all_records(&idx)
            .into_iter()
            .filter(|r| r.stamp() == TID_MARK | w.tid)
            .collect();
        assert_eq!(mine.len(), 4);
        w.abort();
        assert!(mine.iter().all(|r| r.aborted()));
        assert_eq!(parts(&idx.inner).stats().active_records, 0);
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 0]]);
    }

    /// §5.6 phase 2: a writer drops its row's older records from P_N once
    /// a newer committed one is at or below the published horizon; an open
    /// snapshot holds the horizon back, so what it reads stays.
    #[test]
    fn updates_purge_older_records_of_their_row_from_p_n() {
        // Physical pointers: each non-key update adds a replacement.
        let (db, t, idx) = kv_db(Options::default().index_pointers(IndexPointers::Physical));
        db.run(|x| x.insert(&t, row![1, 10, 0])).unwrap();
        let mut old = db.begin_read_only().unwrap();
        for n in 1..=5 {
            db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(n))]))
                .unwrap();
            db.collect_garbage(); // publishes the horizon
        }
        let st = parts(&idx.inner).stats();
        assert_eq!(st.records_purged_from_p_n, 0, "the snapshot needs them");
        assert_eq!(st.active_records, 6);
        assert_eq!(old.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 0]]);
        drop(old);
        for n in 6..=10 {
            db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(n))]))
                .unwrap();
            db.collect_garbage();
        }
        let st = parts(&idx.inner).stats();
        assert!(st.active_records <= 3, "{st:?}");
        assert_eq!(st.active_records + st.records_purged_from_p_n, 11);
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 10]]);
    }

    /// Under logical pointers a record names the row, not a version: a
    /// non-key update adds no record (physical pointers add a replacement
    /// each), a key update adds an anti-record and a replacement, and
    /// snapshots of every age still get their rows under their keys.
    #[test]
    fn only_physical_pointers_add_a_record_per_non_key_update() {
        for ptr in IndexPointers::ALL {
            let (db, t, idx) = kv_db(Options::default().index_pointers(ptr));
            db.run(|x| x.insert(&t, row![1, 10, 0])).unwrap();
            let mut first = db.begin_read_only().unwrap();
            for n in 1..=3 {
                db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(n))]))
                    .unwrap();
            }
            let mut mid = db.begin_read_only().unwrap();
            let per_version = (ptr == IndexPointers::Physical) as usize;
            assert_eq!(all_records(&idx).len(), 1 + 3 * per_version, "{ptr:?}");
            db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(20))]))
                .unwrap();
            let recs = all_records(&idx);
            assert_eq!(recs.len(), 3 + 3 * per_version, "{ptr:?}");
            let types: Vec<RecordType> = recs.iter().map(|r| r.ty).collect();
            assert!(types.contains(&RecordType::AntiRecord), "{types:?}");
            let mut now = db.begin_read_only().unwrap();
            let at = |tx: &mut crate::Transaction, v: i64| tx.index_get(&idx, &key![v]).unwrap();
            assert_eq!(at(&mut first, 10), vec![row![1, 10, 0]], "{ptr:?}");
            assert_eq!(at(&mut first, 20), Vec::<crate::Row>::new());
            assert_eq!(at(&mut mid, 10), vec![row![1, 10, 3]], "{ptr:?}");
            assert_eq!(at(&mut now, 10), Vec::<crate::Row>::new());
            assert_eq!(at(&mut now, 20), vec![row![1, 20, 3]], "{ptr:?}");
            db.freeze_index(&idx).unwrap();
            assert_eq!(at(&mut first, 10), vec![row![1, 10, 0]], "{ptr:?}");
            assert_eq!(at(&mut mid, 10), vec![row![1, 10, 3]], "{ptr:?}");
            assert_eq!(at(&mut now, 20), vec![row![1, 20, 3]], "{ptr:?}");
        }
    }

    /// An [`IndexTxn`] that counts the rows read (`panic_on_read`: and
    /// refuses to read any).
    struct Counting<'a, P> {
        inner: Through<'a, P>,
        reads: usize,
        panic_on_read: bool,
    }

    impl<P: crate::cc::Cc> IndexTxn for Counting<'_, P> {
        const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = None;
        fn tid(&self) -> u64 {
            self.inner.tid()
        }
        fn snapshot_ts(&self) -> u64 {
            self.inner.snapshot_ts()
        }
        fn tids(&self) -> &TidTable {
            self.inner.tids()
        }
        fn is_own(&self, v: *mut Version) -> bool {
            self.inner.is_own(v)
        }
        fn sec_writes(&mut self) -> &mut SecWrites {
            self.inner.sec_writes()
        }
        fn read_row(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version> {
            assert!(!self.panic_on_read, "an index-only scan read a row");
            self.reads += 1;
            self.inner.read_row(t, tuple)
        }
        fn check_insert(&self, ts: &AtomicU64) -> Result<(), ConflictKind> {
            self.inner.check_insert(ts)
        }
        fn snapshots(&self) -> Snapshots {
            self.inner.snapshots()
        }
        fn horizon(&self) -> u64 {
            self.inner.horizon()
        }
    }

    /// §5.4: a read-only scan decides visibility from the records alone
    /// and reads one row per visible record, however long the rows'
    /// chains; a covering scan reads none; physical pointers read the
    /// named version without the chain. Old snapshots get the rows of
    /// their time under the keys of their time.
    #[test]
    fn index_only_scans_read_one_row_per_visible_record_or_none() {
        for ptr in IndexPointers::ALL {
            let (db, t, idx) = kv_db(
                Options::default()
                    .index_pointers(ptr)
                    .mvpbt_partition_records(5),
            );
            for k in 0..20 {
                db.run(|x| x.insert(&t, row![k, k % 4, 0])).unwrap();
            }
            let old = db.begin_read_only().unwrap();
            // Long chains: every row updated 5 times, half of them moving
            // to another key each time.
            for round in 1..=5 {
                for k in 0..20 {
                    let v = if k % 2 == 0 { (k + round) % 4 } else { k % 4 };
                    db.run(|x| {
                        x.update(
                            &t,
                            &key![k],
                            &[("v", Value::Int(v)), ("n", Value::Int(round))],
                        )
                    })
                    .unwrap();
                }
            }
            let ro = db.begin_read_only().unwrap();
            for (mut txn, round) in [(old, 0i64), (ro, 5)] {
                let expected = |vv: i64| -> Vec<i64> {
                    (0..20)
                        .filter(|&k| {
                            let v = if k % 2 == 0 && round > 0 {
                                (k + round) % 4
                            } else {
                                k % 4
                            };
                            v == vv
                        })
                        .collect()
                };
                let ti = &idx.table.inner;
                let si = &idx.inner;
                let lo = Bound::Included(EncodedKey::Bytes(ident(1, 0)[..9].into()));
                let hi = Bound::Excluded(EncodedKey::Bytes(
                    prefix_end(&ident(1, 0)[..9]).unwrap().into(),
                ));
                let mode = ScanMode {
                    rw: false,
                    record: false,
                };
                let _pin = epoch::pin();
                let mut rows = Vec::new();
                let mut cx = Counting::<crate::cc::ssn::SiSsn> {
                    inner: Through::new(&mut txn),
                    reads: 0,
                    panic_on_read: ptr == IndexPointers::Physical,
                };
                let n = MvPbt::scan(&mut cx, ti, si, &lo, &hi, mode, |r| {
                    assert_eq!(r[2], Value::Int(round), "{ptr:?}: the snapshot's version");
                    rows.push(r[0].as_int().unwrap());
                    ControlFlow::Continue(())
                })
                .unwrap()
                .rows;
                assert_eq!(rows, expected(1), "{ptr:?} round {round}");
                let want_reads = if ptr == IndexPointers::Physical { 0 } else { n };
                assert_eq!(cx.reads, want_reads, "{ptr:?}: one read per visible record");
                let mut cx = Counting::<crate::cc::ssn::SiSsn> {
                    inner: Through::new(&mut txn),
                    reads: 0,
                    panic_on_read: true,
                };
                let mut keys = Vec::new();
                MvPbt::scan_keys(&mut cx, si, &lo, &hi, mode, |k| keys.push(k.to_vec()));
                assert_eq!(keys.len(), n, "{ptr:?}");
            }
            let st = db.stats().mvpbt;
            assert!(st.freezes > 0 && st.frozen_partitions > 0, "{st:?}");
        }
    }

    /// A fresh spill directory for one test (a database makes its own
    /// subdirectory in it and removes that when it closes).
    fn spill_root(name: &str) -> std::path::PathBuf {
        let p =
            std::env::temp_dir().join(format!("strata-mvpbt-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

    /// The database's spill files mapped now (they are unlinked once
    /// mapped, so they are counted in the process's maps, not the
    /// directory).
    fn spill_files(db: &Database) -> usize {
        let dir = db.inner.mvpbt_spill.as_ref().expect("a spill dir").path();
        crate::index::mvpbt_spill::mapped_files(dir)
    }

    /// Spilled, the records a freeze finds decided go to the file; those
    /// of a still-running writer stay in memory (they are stamped at its
    /// commit, flagged at its abort) and go to the file at the next merge
    /// once decided. Every reader gets the answers of the in-memory index
    /// throughout; a merge's old files go, and the database's directory
    /// goes with it.
    #[test]
    fn undecided_records_stay_in_memory_until_a_merge_finds_them_decided() {
        let root = spill_root("overlay");
        // Physical pointers: the non-key update below adds a replacement.
        let (db, t, idx) = kv_db(
            Options::default()
                .index_pointers(IndexPointers::Physical)
                .mvpbt_spill_dir(Some(root.clone())),
        );
        db.run(|x| x.insert(&t, row![1, 10, 0])).unwrap();
        let mut w = db.begin().unwrap();
        w.insert(&t, row![2, 10, 0]).unwrap();
        w.update(&t, &key![1], &[("n", Value::Int(1))]).unwrap();
        db.freeze_index(&idx).unwrap();
        let st = db.stats().mvpbt;
        assert_eq!(
            (st.spilled_partitions, st.spilled_records, st.frozen_records),
            (1, 1, 3),
            "{st:?}"
        );
        assert!(st.spilled_bytes > 0);
        assert_eq!(spill_files(&db), 1);
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 0]]);
        assert_eq!(
            w.index_scan(&idx, ..).unwrap(),
            vec![row![1, 10, 1], row![2, 10, 0]]
        );
        // The commit stamps the records in memory (a file is never
        // written again).
        w.commit().unwrap();
        drop(ro);
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.index_scan(&idx, ..).unwrap(),
            vec![row![1, 10, 1], row![2, 10, 0]]
        );
        drop(ro);
        db.collect_garbage();
        db.freeze_index(&idx).unwrap();
        let st = db.stats().mvpbt;
        assert_eq!(
            (st.spilled_partitions, st.spilled_records, st.frozen_records),
            (1, 2, 2),
            "all decided now, one record per row: {st:?}"
        );
        assert_eq!(spill_files(&db), 1, "the merged partition's file went");
        // An abort flags its records in memory; the next merge drops them.
        let mut w = db.begin().unwrap();
        w.update(&t, &key![2], &[("v", Value::Int(20))]).unwrap();
        db.freeze_index(&idx).unwrap();
        let st = db.stats().mvpbt;
        assert_eq!((st.spilled_records, st.frozen_records), (2, 4), "{st:?}");
        assert_eq!(
            w.index_scan(&idx, ..).unwrap(),
            vec![row![1, 10, 1], row![2, 20, 0]]
        );
        w.abort();
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.index_scan(&idx, ..).unwrap(),
            vec![row![1, 10, 1], row![2, 10, 0]]
        );
        assert_eq!(
            ro.index_get(&idx, &key![20]).unwrap(),
            Vec::<Vec<Value>>::new()
        );
        drop(ro);
        db.freeze_index(&idx).unwrap();
        let st = db.stats().mvpbt;
        assert_eq!((st.spilled_records, st.frozen_records), (2, 2), "{st:?}");
        assert_eq!((st.spill_failures, st.spill_corrupt_rebuilt), (0, 0));
        let inst = db.inner.mvpbt_spill.as_ref().unwrap().path().to_path_buf();
        assert!(inst.exists());
        drop((t, idx));
        drop(db);
        // (Index lists are freed through the epoch: wait for the files to
        // go, however long other tests hold the epoch back.)
        crate::test_util::eventually(|| {
            epoch::pin().flush();
            !inst.exists()
        });
        assert!(!inst.exists(), "the database's spill files go with it");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A little random generator (deterministic, so two databases can be
    /// given the same operations).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    type Db3 = (Database, crate::Table, crate::Index);

    /// Runs the same random operations (interleaved writers, some left
    /// open across freezes, aborts, old snapshots, merges) on each of
    /// `dbs`, asserting after each step that every open transaction's
    /// scans agree between them. Returns the most records the last
    /// database held in memory in frozen partitions alongside spilled ones
    /// (undecided at their freeze).
    fn same_answers(dbs: &[Db3], seed: u64, steps: usize) -> u64 {
        let mut overlay = 0;
        let mut rng = Rng(seed);
        let mut open: Vec<Vec<crate::Transaction>> = Vec::new();
        let mut snaps: Vec<Vec<crate::Transaction>> = Vec::new();
        let all = |txns: &mut Vec<crate::Transaction>, what: &str| {
            let first = {
                let (_, _, idx) = &dbs[0];
                let r = txns[0].index_scan(idx, ..).map_err(|e| format!("{e:?}"));
                let g = txns[0]
                    .index_get(idx, &key![3])
                    .map_err(|e| format!("{e:?}"));
                (r, g)
            };
            for (i, (_, _, idx)) in dbs.iter().enumerate().skip(1) {
                let r = txns[i].index_scan(idx, ..).map_err(|e| format!("{e:?}"));
                let g = txns[i]
                    .index_get(idx, &key![3])
                    .map_err(|e| format!("{e:?}"));
                assert_eq!((r, g), first, "{what}: database {i} answers otherwise");
            }
        };
        for step in 0..steps {
            match rng.next(12) {
                0..=5 => {
                    if open.len() < 3 && (open.is_empty() || rng.next(3) == 0) {
                        open.push(dbs.iter().map(|(db, _, _)| db.begin().unwrap()).collect());
                    }
                    let at = rng.next(open.len() as u64) as usize;
                    let (k, v, op) = (rng.next(24) as i64, rng.next(6) as i64, rng.next(4));
                    let mut res = Vec::new();
                    for (i, (_, t, _)) in dbs.iter().enumerate() {
                        let x = &mut open[at][i];
                        let r = match op {
                            0 => x.insert(t, row![k, v, step as i64]),
                            1 => x.update(t, &key![k], &[("v", Value::Int(v))]),
                            2 => x.update(t, &key![k], &[("n", Value::Int(step as i64))]),
                            _ => x.delete(t, &key![k]),
                        };
                        res.push(format!("{r:?}"));
                    }
                    assert!(res.iter().all(|r| *r == res[0]), "step {step}: {res:?}");
                    if res[0].starts_with("Err(Conflict") {
                        for x in open.remove(at) {
                            x.abort();
                        }
                    }
                }
                6 | 7 if !open.is_empty() => {
                    let at = rng.next(open.len() as u64) as usize;
                    let mut txns = open.remove(at);
                    all(&mut txns, "a writer before its end");
                    if rng.next(4) == 0 {
                        txns.into_iter().for_each(|x| x.abort());
                    } else {
                        let res: Vec<String> = txns
                            .into_iter()
                            .map(|x| format!("{:?}", x.commit()))
                            .collect();
                        assert!(res.iter().all(|r| *r == res[0]), "step {step}: {res:?}");
                    }
                }
                8 => {
                    if snaps.len() >= 2 {
                        snaps.remove(0);
                    }
                    snaps.push(
                        dbs.iter()
                            .map(|(db, _, _)| db.begin_read_only().unwrap())
                            .collect(),
                    );
                }
                9 => {
                    for (db, _, idx) in dbs {
                        db.freeze_index(idx).unwrap();
                    }
                }
                _ => {
                    for (db, _, _) in dbs {
                        db.collect_garbage();
                    }
                }
            }
            for txns in open.iter_mut() {
                all(txns, "an open writer");
            }
            for txns in snaps.iter_mut() {
                all(txns, "an old snapshot");
            }
            let mut now: Vec<_> = dbs
                .iter()
                .map(|(db, _, _)| db.begin_read_only().unwrap())
                .collect();
            all(&mut now, "a new snapshot");
            let in_memory: usize = parts(&dbs[dbs.len() - 1].2.inner)
                .view()
                .frozen
                .iter()
                .filter(|f| f.file.is_some())
                .map(|f| f.records.len())
                .sum();
            overlay = overlay.max(in_memory as u64);
        }
        overlay
    }

    /// An index with a spill directory and tiny partitions answers exactly
    /// as one in memory, for every pointer scheme, with writers left open
    /// across freezes and merges (their records stay in memory) and old
    /// snapshots (their records stay in the files).
    #[test]
    fn a_spilled_index_answers_as_an_in_memory_one() {
        let root = spill_root("same");
        for ptr in IndexPointers::ALL {
            for seed in [1u64, 0x9e37_79b9_7f4a_7c15, 42] {
                let o = Options::default()
                    .index_pointers(ptr)
                    .mvpbt_partition_records(3);
                let dbs = [
                    kv_db(o.clone()),
                    kv_db(o.mvpbt_spill_dir(Some(root.clone()))),
                ];
                let overlay = same_answers(&dbs, seed, 400);
                assert!(
                    overlay > 0,
                    "some writer's records were undecided at a freeze"
                );
                let st = dbs[1].0.stats().mvpbt;
                assert!(
                    st.spilled_partitions > 0 && st.spilled_records > 0,
                    "{st:?}"
                );
                assert_eq!((st.spill_failures, st.spill_corrupt_rebuilt), (0, 0));
                let mem = dbs[0].0.stats().mvpbt;
                assert_eq!(
                    (
                        mem.frozen_records,
                        mem.active_records,
                        mem.frozen_partitions
                    ),
                    (st.frozen_records, st.active_records, st.frozen_partitions),
                    "the same records, spilled or not"
                );
                assert_eq!(spill_files(&dbs[1].0) as u64, st.spilled_partitions);
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A spill file damaged between its write and its map (truncated, a
    /// byte flipped, a wrong magic) is a typed error there: the partition
    /// stays in memory, it is counted, and every scan answers as before;
    /// once files come out whole again, partitions spill again. A spill the
    /// OS refuses (the directory gone) keeps the partition in memory too.
    #[test]
    fn a_damaged_or_refused_spill_keeps_the_partition_in_memory() {
        type Damage = fn(&std::path::Path);
        let truncate: Damage = |p| {
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len - 5).unwrap();
        };
        let flip: Damage = |p| {
            let mut b = std::fs::read(p).unwrap();
            let at = b.len() - 3;
            b[at] ^= 0x40;
            std::fs::write(p, b).unwrap();
        };
        let magic: Damage = |p| {
            let mut b = std::fs::read(p).unwrap();
            b[0] = b'?';
            std::fs::write(p, b).unwrap();
        };
        let root = spill_root("damage");
        for (name, damage) in [("truncate", truncate), ("flip", flip), ("magic", magic)] {
            let o = Options::default()
                .mvpbt_partition_records(4)
                .mvpbt_spill_dir(Some(root.clone()));
            let (db, t, idx) = kv_db(o);
            let dir = Arc::clone(db.inner.mvpbt_spill.as_ref().unwrap());
            *dir.tamper.lock() = Some(Box::new(damage));
            let mut model: BTreeMap<i64, i64> = BTreeMap::new();
            let check = |model: &BTreeMap<i64, i64>| {
                let mut want: Vec<(i64, i64)> = model.iter().map(|(&k, &v)| (v, k)).collect();
                want.sort();
                let want: Vec<Vec<Value>> = want
                    .into_iter()
                    .map(|(v, k)| vec![Value::Int(k), Value::Int(v)])
                    .collect();
                let mut ro = db.begin_read_only().unwrap();
                let got: Vec<Vec<Value>> = ro
                    .index_scan(&idx, ..)
                    .unwrap()
                    .into_iter()
                    .map(|r| r[..2].to_vec())
                    .collect();
                assert_eq!(got, want, "{name}");
                for v in 0..5 {
                    let n = ro.index_get(&idx, &key![v]).unwrap().len();
                    assert_eq!(n, model.values().filter(|&&x| x == v).count(), "{name}");
                }
            };
            let mut rng = Rng(7);
            for round in 0..60 {
                let (k, v) = (rng.next(20) as i64, rng.next(5) as i64);
                db.run(|x| match model.contains_key(&k) {
                    true if round % 5 == 0 => x.delete(&t, &key![k]),
                    true => x.update(&t, &key![k], &[("v", Value::Int(v))]),
                    false => x.insert(&t, row![k, v, round]),
                })
                .unwrap();
                if model.contains_key(&k) && round % 5 == 0 {
                    model.remove(&k);
                } else {
                    model.insert(k, v);
                }
                check(&model);
            }
            db.freeze_index(&idx).unwrap();
            check(&model);
            let st = db.stats().mvpbt;
            assert!(st.spill_corrupt_rebuilt > 0, "{name}: {st:?}");
            assert_eq!((st.spilled_partitions, st.spill_failures), (0, 0), "{name}");
            assert_eq!(spill_files(&db), 0, "{name}: a damaged file is removed");
            // Whole files again: the next freeze spills.
            *dir.tamper.lock() = None;
            db.freeze_index(&idx).unwrap();
            check(&model);
            let st = db.stats().mvpbt;
            assert_eq!(st.spilled_partitions, 1, "{name}: {st:?}");
            // The OS refuses: the directory is gone.
            std::fs::remove_dir_all(dir.path()).unwrap();
            db.run(|x| x.insert(&t, row![100, 1, 0])).unwrap();
            model.insert(100, 1);
            db.freeze_index(&idx).unwrap();
            check(&model);
            let st = db.stats().mvpbt;
            assert!(st.spill_failures > 0, "{name}: {st:?}");
            assert_eq!(st.spilled_partitions, 0, "{name}: {st:?}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// The back-fill's partition (every record committed) spills whole.
    #[test]
    fn a_backfilled_partition_spills() {
        let root = spill_root("backfill");
        let db = Database::open(
            Options::default()
                .gc_interval(None)
                .mvpbt_spill_dir(Some(root.clone())),
        )
        .unwrap();
        let t = db
            .create_table(
                Schema::new("kv")
                    .column("k", Type::Int)
                    .column("v", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        for k in 0..50 {
            db.run(|x| x.insert(&t, row![k, k % 7])).unwrap();
        }
        db.run(|x| x.update(&t, &key![3], &[("v", Value::Int(100))]))
            .unwrap();
        let idx = db
            .create_index_as("by_v", &t, &["v"], Unique::No, IndexKind::MvPbt)
            .unwrap();
        let st = db.stats().mvpbt;
        assert_eq!(
            (st.spilled_partitions, st.frozen_records),
            (1, st.spilled_records)
        );
        assert!(st.spilled_records >= 50, "{st:?}");
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_get(&idx, &key![100]).unwrap(), vec![row![3, 100]]);
        let want: Vec<_> = (0..50).filter(|k| k % 7 == 3 && *k != 3).collect();
        let got: Vec<_> = ro
            .index_get(&idx, &key![3])
            .unwrap()
            .into_iter()
            .map(|r| r[0].as_int().unwrap())
            .collect();
        assert_eq!(got, want);
        drop(ro);
        // A dropped index's files go with its last handle (the table's old
        // index list is freed through the epoch, which other tests' threads
        // may hold back a while).
        assert_eq!(spill_files(&db), 1);
        db.drop_index("by_v").unwrap();
        drop(idx);
        crate::test_util::eventually(|| {
            db.collect_garbage();
            epoch::pin().flush();
            spill_files(&db) == 0
        });
        assert_eq!(spill_files(&db), 0);
        drop((db, t));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// `Options::mvpbt_spill_dir`: a file in its place is refused at open
    /// with a typed error, a missing directory is created.
    #[test]
    fn the_spill_dir_option_is_checked_at_open() {
        let root = spill_root("option");
        std::fs::write(&root, b"a file").unwrap();
        let o = Options::default().mvpbt_spill_dir(Some(root.clone()));
        assert!(matches!(o.validate(), Err(Error::InvalidConfig(_))));
        assert!(matches!(Database::open(o), Err(Error::InvalidConfig(_))));
        let o = Options::default().mvpbt_spill_dir(Some(root.join("sub")));
        assert!(matches!(Database::open(o), Err(Error::Io(_))));
        std::fs::remove_file(&root).unwrap();
        let o = Options::default().mvpbt_spill_dir(Some(root.join("a/b")));
        let db = Database::open(o).unwrap();
        assert!(root.join("a/b").is_dir());
        drop(db);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
