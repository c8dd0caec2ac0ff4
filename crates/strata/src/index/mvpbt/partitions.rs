//! MV-PBT's partitions (Riegger et al., §5.3-§5.7): the writable P_N, the
//! frozen P_N-1 .. P_0 with their Bloom filters, the freeze (Algorithm 4)
//! with partition GC (§5.6), the merge of frozen partitions, and spilling.
//!
//! ```text
//!  writes ──> P_N (skip list) ── freeze: sealed P_N ──> P_k (sorted Vec, or spill
//!                                 gc_group per identity   file + undecided records)
//!  readers: P_N, the sealed P_N, then P_N-1 .. P_0, each frozen one asked through
//!           its filters first (a point lookup: the key's, a prefix scan: the
//!           first column's)
//! ```
//!
//! Invariant (owned here): a record leaves a partition only when no live or
//! future snapshot decides by it (a freeze, a merge, `purge_older`) or its
//! writer aborted; records of one identity keep their order across
//! partitions (a newer partition only holds newer records).

use super::super::mvpbt_spill::{Fixed, SpillDir, SpillFile};
use super::super::secondary::SecondaryIndex;
use super::record::{decided_stamp, ident_of, Rec, Record, RecordType, SEQ_BYTES, WRITER_SEQ};
use crate::index::key::{prefix_end, skip_values, EncodedKey};
use crate::stats::MvPbtStats;
use crate::storage::dead_zones::DeadZones;
use crate::storage::version::{Version, TID_MARK};
use crate::tid::snapshots::Snapshots;
use crate::tid::TidTable;
use crossbeam_skiplist::SkipMap;
use fastbloom::BloomFilter;
use parking_lot::{Mutex, RwLock};
use std::ops::Bound;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;

/// More frozen partitions than this are merged into one at the next freeze.
pub(super) const MERGE_AT: usize = 8;

pub(super) type Active = SkipMap<Box<[u8]>, Arc<Record>>;

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
    pub(super) records: Vec<(Box<[u8]>, Arc<Record>)>,
    pub(super) file: Option<SpillFile>,
    /// On the full index key (point lookups).
    pub(super) bloom: BloomFilter,
    /// On the first index column (prefix scans); None for a one-column
    /// index, whose `bloom` serves both.
    pub(super) prefix_bloom: Option<BloomFilter>,
}

impl Frozen {
    /// Records here, in memory and spilled.
    pub(super) fn len(&self) -> usize {
        self.records.len() + self.file.as_ref().map_or(0, |f| f.len())
    }

    /// Calls `f` for each record in `[lo, hi]` in key order (the
    /// in-memory ones and the spilled ones merged); returns how many.
    pub(super) fn for_range(
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
    pub(super) fn owned(&self) -> impl Iterator<Item = (Box<[u8]>, Arc<Record>)> + '_ {
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
    pub(super) fn mem_range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> &[(Box<[u8]>, Arc<Record>)] {
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
    pub(super) fn get(&self, key: &[u8]) -> Option<&Arc<Record>> {
        let i = self
            .records
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()?;
        Some(&self.records[i].1)
    }

    /// Whether any record of `ident` is here.
    pub(super) fn has_ident(&self, ident: &[u8]) -> bool {
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
pub(super) struct View {
    pub(super) active: Arc<Active>,
    /// P_N being frozen: still read until its frozen form is published.
    pub(super) sealed: Option<Arc<Active>>,
    /// P_0 .. P_{N-1}, oldest first.
    pub(super) frozen: Vec<Arc<Frozen>>,
}

/// What a filter can be asked about a scan's range.
pub(super) enum Probe<'a> {
    /// A full index key (a point lookup).
    Key(&'a [u8]),
    /// A prefix: the first column's encoding.
    Prefix(&'a [u8]),
    None,
}

/// An MV-PBT index's partitions (`SecondaryIndex::mvpbt`).
pub(crate) struct Partitions {
    pub(super) set: RwLock<View>,
    pub(super) active_len: AtomicUsize,
    pub(super) limit: usize,
    pub(super) seq: AtomicU64,
    /// One freeze (or back-fill publish) at a time.
    pub(super) freezing: Mutex<()>,
    /// The back-fill is in (`create_index_as`): no record of a version
    /// older than the index can arrive any more.
    pub(super) backfilled: AtomicBool,
    pub(super) freezes: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) purged: AtomicU64,
    pub(super) probes: AtomicU64,
    pub(super) skips: AtomicU64,
    pub(super) false_positives: AtomicU64,
    /// Where frozen partitions spill (`Options::mvpbt_spill_dir`), and the
    /// stem of this index's file names; None: they stay in memory.
    pub(super) spill: Option<(Arc<SpillDir>, String)>,
    /// Spills the OS refused (the partition stayed in memory).
    pub(super) spill_failures: AtomicU64,
    /// Spill files found damaged when mapped (the partition stayed in
    /// memory, rebuilt from the records the freeze still held).
    pub(super) spill_corrupt: AtomicU64,
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

    pub(super) fn view(&self) -> View {
        let s = self.set.read();
        View {
            active: Arc::clone(&s.active),
            sealed: s.sealed.clone(),
            frozen: s.frozen.clone(),
        }
    }

    /// Adds a record to P_N. The read lock keeps a freeze from sealing P_N
    /// between our load of it and the insert (the record would be lost).
    pub(super) fn insert(&self, key: Box<[u8]>, rec: Arc<Record>) {
        let s = self.set.read();
        s.active.insert(key, rec);
        self.active_len.fetch_add(1, Relaxed);
    }

    /// §5.6 phase 2, for the identity of `key` (a record just added):
    /// records of it in P_N older than its newest committed one at or below
    /// `horizon` decide for no snapshot (every open and future one sees
    /// that one or a newer one), so they go now rather than at the freeze.
    pub(super) fn purge_older(&self, key: &[u8], horizon: u64) {
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
    pub(super) fn find(&self, key: &[u8]) -> Option<Arc<Record>> {
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
    pub(super) fn for_each(
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
    pub(super) fn collect(
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
    pub(super) fn build(
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
pub(super) fn gc_group(
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
pub(super) fn filters(
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

pub(super) fn bytes(b: &Bound<EncodedKey>) -> Bound<&[u8]> {
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
pub(super) fn probe<'a>(
    idx: &SecondaryIndex,
    lo: &'a Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
) -> Probe<'a> {
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
