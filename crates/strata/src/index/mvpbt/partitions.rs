//! MV-PBT's partitions (Riegger et al., §5.3-§5.7): the writable P_N, the
//! frozen P_N-1 .. P_0 with their Bloom filters, the freeze (Algorithm 4)
//! with partition GC (§5.6), the merge of frozen partitions, and spilling.
//!
//! ```text
//!  writes ──> P_N (B+-tree) ─── freeze: sealed P_N ──> P_k (sorted Vec, or spill
//!                                 gc_group per identity   file + undecided records)
//!  readers: P_N, the sealed P_N, then P_N-1 .. P_0, each frozen one asked through
//!           its filters first (a point lookup: the key's, a prefix scan: the
//!           first column's)
//! ```
//!
//! P_N and the sealed P_N are [`Active`] maps (`active.rs`): the engine's
//! B+-tree of partition keys to records, which a reader borrows while it
//! is pinned (`for_each`, `purge_older` and the freeze pin around their
//! walks); a record that leaves it is freed through the epoch, so never
//! under such a reader.
//!
//! Invariant (owned here): a record leaves a partition only when no live or
//! future snapshot decides by it (a freeze, a merge, `purge_older`) or its
//! writer aborted; records of one identity keep their order across
//! partitions (a newer partition only holds newer records).

use super::super::mvpbt_spill::{Fixed, SpillDir, SpillFile};
use super::super::secondary::{Gauge, SecondaryIndex};
use super::active::Active;
use super::record::{decided_stamp, ident_of, Rec, Record, RecordType, SEQ_BYTES, WRITER_SEQ};
use crate::index::key::{prefix_end, skip_values, EncodedKey};
use crate::stats::MvPbtStats;
use crate::storage::dead_zones::DeadZones;
use crate::storage::version::{Version, TID_MARK};
use crate::tid::snapshots::Snapshots;
use crate::tid::TidTable;
use crossbeam_epoch as epoch;
#[cfg(feature = "mvpbt-filters")]
use fastbloom::BloomFilter;
#[cfg(not(feature = "mvpbt-filters"))]
use no_filters::BloomFilter;

/// Without the `mvpbt-filters` feature a partition keeps no filter: every
/// probe answers "maybe", so every partition is searched (the paper's
/// design without §5.7), and `Stats::mvpbt` shows no filter bytes.
#[cfg(not(feature = "mvpbt-filters"))]
mod no_filters {
    pub struct BloomFilter;

    impl BloomFilter {
        pub fn with_false_pos(_: f64) -> BloomFilter {
            BloomFilter
        }
        pub fn seed(self, _: &u128) -> BloomFilter {
            self
        }
        pub fn expected_items(self, _: usize) -> BloomFilter {
            self
        }
        pub fn insert(&mut self, _: &(impl std::hash::Hash + ?Sized)) -> bool {
            false
        }
        pub fn contains(&self, _: &(impl std::hash::Hash + ?Sized)) -> bool {
            true
        }
        pub fn num_bits(&self) -> usize {
            0
        }
    }
}
use parking_lot::{Mutex, RwLock};
use std::ops::Bound;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;

/// More frozen partitions than this are merged into one at the next freeze.
pub(super) const MERGE_AT: usize = 8;

/// What the memory gauge counts for an in-memory record of partition key
/// `key` (an estimate, by the key alone, so that its arrival and its
/// departure count the same), in the secondary index's terms
/// (`secondary::entry_bytes`): a slot for it (P_N's tree leaf, a frozen
/// partition's vector), the key's own allocation (a 16-byte header, the
/// bytes) and the shared record (`Arc` header and [`Record`]).
///
/// Each holder counts the records it holds (the gauge's rule, see
/// `storage::meter`): P_N ([`Active`]) as they come in and leave, and the
/// records left when it is dropped; a [`Frozen`] partition its in-memory
/// records and its filters' bytes when it is built ([`Frozen::counted`]),
/// given back when it is dropped (the last view of it gone). A record a
/// freeze copies from the sealed P_N into its frozen form counts in both
/// while both live. Spilled records (in a memory-mapped file) are not
/// counted, nor the records a merge decodes from a file for the moment it
/// runs.
#[inline]
pub(crate) fn record_bytes(key: &[u8]) -> usize {
    40 + 16 + key.len() + 16 + std::mem::size_of::<Record>()
}

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
    /// What the memory gauge counted for this partition when it was
    /// built ([`record_bytes`] of each in-memory record, and the filters'
    /// bytes), given back when it is dropped; with `gauge` (the
    /// database's, with a limit set).
    pub(super) counted: u64,
    pub(super) gauge: Option<Gauge>,
}

impl Drop for Frozen {
    fn drop(&mut self) {
        if let Some(g) = &self.gauge {
            g.add(0, self.counted);
        }
    }
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
    /// Index-only visibility (Algorithm 3): records the decisions visited,
    /// and the identities they found visible (the rows returned).
    pub(super) visited: AtomicU64,
    pub(super) visible: AtomicU64,
    /// Where frozen partitions spill (`Options::mvpbt_spill_dir`), and the
    /// stem of this index's file names; None: they stay in memory.
    pub(super) spill: Option<(Arc<SpillDir>, String)>,
    /// Spills the OS refused (the partition stayed in memory).
    pub(super) spill_failures: AtomicU64,
    /// Spill files found damaged when mapped (the partition stayed in
    /// memory, rebuilt from the records the freeze still held).
    pub(super) spill_corrupt: AtomicU64,
    /// The database's memory gauge, with a limit set: P_N and the frozen
    /// partitions count their records in it ([`record_bytes`]).
    pub(super) gauge: Option<Gauge>,
}

impl Partitions {
    pub fn new(
        limit: usize,
        spill: Option<(Arc<SpillDir>, String)>,
        gauge: Option<Gauge>,
    ) -> Partitions {
        Partitions {
            set: RwLock::new(View {
                active: Arc::new(Active::new(gauge.clone())),
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
            visited: AtomicU64::new(0),
            visible: AtomicU64::new(0),
            spill,
            spill_failures: AtomicU64::new(0),
            spill_corrupt: AtomicU64::new(0),
            gauge,
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
    pub(super) fn insert(&self, key: &[u8], rec: Arc<Record>) {
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
        let g = epoch::pin();
        for (k, r) in s.active.range(Bound::Excluded(key), Bound::Unbounded, &g) {
            if ident_of(k) != ident {
                break;
            }
            if covered {
                // A racing abort may have taken it first.
                if s.active.remove_if(k, &r) {
                    n += 1;
                }
                continue;
            }
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
        if let Some(r) = s.active.get(key) {
            return Some(r);
        }
        if let Some(r) = s.sealed.as_ref().and_then(|m| m.get(key)) {
            return Some(r);
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
                return; // inverted: nothing in it
            }
        }
        {
            let g = epoch::pin();
            for m in std::iter::once(&view.active).chain(view.sealed.as_ref()) {
                for (k, r) in m.range(lo, hi, &g) {
                    f(k, Rec::Mem(&r));
                }
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
                let sealed =
                    std::mem::replace(&mut s.active, Arc::new(Active::new(self.gauge.clone())));
                self.active_len.store(0, Relaxed);
                s.sealed = Some(Arc::clone(&sealed));
                sealed
            });
            (sealed, s.frozen.clone())
        };
        if let Some(sealed) = sealed {
            // Copied out first: the GC below runs unpinned.
            let recs: Vec<(Box<[u8]>, Arc<Record>)> = {
                let g = epoch::pin();
                sealed
                    .range(Bound::Unbounded, Bound::Unbounded, &g)
                    .map(|(k, r)| (Box::from(k), Arc::clone(&r)))
                    .collect()
            };
            let kept = self.collect(recs.into_iter(), &zones, tids, &older);
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
        // Counted as built (the spilled records are not: they are in the
        // file), given back in `Frozen`'s drop.
        let counted = match &self.gauge {
            Some(g) => {
                let n = records
                    .iter()
                    .map(|(k, _)| record_bytes(k) as u64)
                    .sum::<u64>()
                    + (bloom.num_bits() / 8) as u64
                    + prefix_bloom.as_ref().map_or(0, |b| b.num_bits() / 8) as u64;
                g.add(n, 0);
                n
            }
            None => 0,
        };
        Frozen {
            records,
            file,
            bloom,
            prefix_bloom,
            counted,
            gauge: self.gauge.clone(),
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
            index_only_records_visited: self.visited.load(Relaxed),
            index_only_rows: self.visible.load(Relaxed),
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

/// Algorithm 3, record order, freeze and the filters on hand-placed records
/// (the database-level tests are in `mvpbt.rs`).
#[cfg(test)]
pub(super) mod tests {
    use super::super::*;
    use crate::index::secondary::Unique;
    use crate::tid::snapshots::Snapshots;
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
            None,
        )
    }

    pub(in crate::index::mvpbt) fn ident(a: i64, pk: i64) -> Vec<u8> {
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
        p.insert(&key, Arc::new(r));
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
                p.insert(&key, Arc::new(Record::new(RecordType::Regular, 1, pk as u64, std::ptr::null_mut(), 0)));
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
            // (No filters without the `mvpbt-filters` feature: every probe
            // says "maybe", and the answers above stay exact.)
            let filtered = cfg!(feature = "mvpbt-filters");
            prop_assert_eq!(st.bloom_bytes > 0 && st.prefix_bloom_bytes > 0, filtered);
        }
    }
}
