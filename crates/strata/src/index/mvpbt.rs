//! MV-PBT: the multi-version partitioned B-tree (Riegger et al., §5), a
//! secondary index whose records carry version information, so a scan
//! decides which rows its snapshot sees from the index alone.
//!
//! ```text
//!  writes ──> P_N (writable: a B+-tree)          reads: P_N, then P_N-1 .. P_0
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
//! **P_N** ([`active`]) is the engine's B+-tree (`index::btree`, byte
//! keys), the structure the standard secondary index runs on, so the two
//! kinds compare as designs, not containers (it was a `crossbeam-skiplist`
//! map: 76.9K against 76.0K instructions a committed TPC-C NewOrder +
//! Payment transaction under callgrind; the standard index 72.0K). A
//! record is a tree value (`Arc::into_raw`, the tree's count of it);
//! invariant: a record P_N hands out lives while the reader that got it
//! is pinned, since one that leaves the tree (removed, replaced) goes to
//! one caller, which gives the count back through the epoch.
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
//! **Files.** `mvpbt/record.rs`: the records and their partition keys
//! (§5.1, §5.3); `mvpbt/active.rs`: P_N's map, the engine's B+-tree of
//! partition keys to records, and how long a record it hands out lives
//! (through the epoch); `mvpbt/partitions.rs`: P_N, the frozen
//! partitions, their filters, the freeze and partition GC (§5.3-§5.7);
//! here: the index kind (the write path of §5.2, Algorithms 2 and 3 for
//! scans, unique checks, the back-fill); `mvpbt_spill.rs`: the spill
//! files.
//!
//! Not built: a streaming merge of spilled partitions (a merge gathers
//! their records in memory), the MV-PBT buffer shared by all indexes (each
//! index freezes on its own count), dense packing and key compression
//! (§5.7).

mod active;
mod batch;
mod partitions;
mod record;

pub(crate) use partitions::Partitions;
pub use record::RecordType;

use super::common::{self, ScanReads, SecScan, SecWrite};
use super::secondary::SecondaryIndex;
use super::table::TableInner;
use super::{IndexTxn, ScanMode, Scanned, SecondaryIndexKind};
use crate::error::{ConflictKind, Error, Result};
use crate::index::key::{prefix_end, EncodedKey};
use crate::options::{IndexKind, IndexPointers};
use crate::storage::version::{Version, TID_MARK};
use crate::storage::{self, PrunePlan, Span};
use crate::tid::TidTable;
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use partitions::{probe, Probe};
use record::{ident_of, part_key, RecBuf, Record, WRITER_SEQ};
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;

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
    let (mut visited, mut visible) = (0u64, 0u64);
    p.for_each(&view, lo, hi, &probe(idx, lo, hi), |k, r| {
        visited += 1;
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
        visible += u64::from(matter.is_some());
        decided.insert(ident.into(), matter);
        last_decided = true;
    });
    // One add each a scan, not one a record.
    p.visited.fetch_add(visited, Relaxed);
    p.visible.fetch_add(visible, Relaxed);
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
        p.insert(&key, Arc::new(rec));
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
        common::with_prev_image(prev, |old| {
            let mark = cx.sec_writes().len();
            for idx in list {
                if idx.dropped.load(SeqCst) {
                    continue;
                }
                let ident = idx.ident(&t.schema, new);
                let Some(o) = old else {
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
        })
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
    fn on_replace_own<C: IndexTxn>(
        cx: &mut C,
        _t: &TableInner,
        _tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) -> Result<()> {
        for w in cx.sec_writes().iter_mut() {
            if w.version != own || !super::is_mine::<Self>(w) {
                continue;
            }
            if let Some(r) = parts(&w.index).find(&w.key) {
                r.version.store(v as usize as u64, SeqCst);
            }
            w.version = v;
        }
        // Records change in place: none goes in, nothing to check.
        Ok(())
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
        if s.active.remove(&w.key) {
            p.active_len.fetch_sub(1, Relaxed);
        }
    }

    fn scan<C: IndexTxn>(
        cx: &mut C,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode<'_>,
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
                reads.handed(tuple);
                n += 1;
                if flow.is_break() {
                    stopped_at = Some(ident.to_vec());
                    break;
                }
            }
        }
        Ok(Scanned {
            rows: n,
            sec: reads.finish(t, idx, lo, hi, stopped_at.as_deref()),
            stopped_at,
        })
    }

    fn scan_keys<C: IndexTxn>(
        cx: &mut C,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        mode: ScanMode<'_>,
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

    fn batch(
        idx: &SecondaryIndex,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        from_high: bool,
        max: usize,
        out: &mut std::collections::VecDeque<Box<[u8]>>,
    ) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)> {
        batch::batch(idx, lo, hi, from_high, max, out)
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
            if sec.seen.contains(&ident) {
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
    use super::partitions::tests::ident;
    use super::record::Rec;
    use super::*;
    use crate::index::secondary::Unique;
    use crate::index::SecWrites;
    use crate::tid::snapshots::Snapshots;
    use crate::txn::index_ops::Through;
    use crate::{key, row, Database, Options, Schema, Type};
    use std::sync::atomic::AtomicU64;

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

    /// The index-only counters (MV-PBT Fig. 12a's "records visited per
    /// row"): under physical pointers every non-key update adds a record,
    /// which a read-only scan steps over; under logical ones it adds none.
    #[test]
    fn index_only_scans_count_the_records_they_visit_per_row() {
        for (ptr, per_row) in [
            (IndexPointers::Physical, 5),
            (IndexPointers::LogicalTupleId, 1),
        ] {
            // One partition (P_N) holds every record: no freeze.
            let (db, t, idx) = kv_db(Options::default().index_pointers(ptr));
            for k in 0..10 {
                db.run(|x| x.insert(&t, row![k, 1, 0])).unwrap();
            }
            // Holds the horizon: no record is purged from P_N meanwhile.
            let pin = db.begin_read_only().unwrap();
            for round in 1..=4 {
                for k in 0..10 {
                    db.run(|x| x.update(&t, &key![k], &[("n", Value::Int(round))]))
                        .unwrap();
                }
            }
            let before = db.stats().mvpbt;
            let mut ro = db.begin_read_only().unwrap();
            assert_eq!(ro.index_scan(&idx, ..).unwrap().len(), 10);
            let st = db.stats().mvpbt;
            assert_eq!(st.index_only_rows - before.index_only_rows, 10, "{ptr:?}");
            assert_eq!(
                st.index_only_records_visited - before.index_only_records_visited,
                10 * per_row,
                "{ptr:?}: {st:?}"
            );
            drop(pin);
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
                let mode = ScanMode::new(false, false);
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
        assert!(matches!(Database::open(o), Err(Error::Io { .. })));
        std::fs::remove_file(&root).unwrap();
        let o = Options::default().mvpbt_spill_dir(Some(root.join("a/b")));
        let db = Database::open(o).unwrap();
        assert!(root.join("a/b").is_dir());
        drop(db);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
