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

// (Kept outside `index/`: the tests drive the index through a protocol
// and a transaction, `crate::cc` and `crate::txn`, which the engine's
// `index` must not import; `../shared/tools/module_cycles.py` reads a
// file under `index/` as `index`'s.)
#[cfg(test)]
#[path = "../unit_tests/mvpbt.rs"]
mod tests;
