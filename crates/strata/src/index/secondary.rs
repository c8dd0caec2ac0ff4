//! Secondary indexes: ordered, unique or not, on one or more columns.
//!
//! A secondary index is an ordered map (a B+-tree, see [`Entries`]) of
//! *entries*. An entry's
//! key is the order-preserving encoding of the indexed values followed by the
//! row's primary key, so entries sort by index key with ties broken by
//! primary key, and a prefix of the index columns selects a contiguous run:
//!
//! ```text
//!  entry key = enc(w, d, last) ++ enc(pk) [++ version address]   value
//!              └─ index key ─┘   └ tie ┘   └ physical only ┘
//!  LogicalTupleId:     (1,2,"BAR") (7)                  ──> tuple 42 ──> chain head
//!  LogicalPrimaryKey:  (1,2,"BAR") (7)                  ──> pk (7) ──> primary index ──> tuple
//!  Physical:           (1,2,"BAR") (7) 0x7f..a0         ──> tuple 42; the version is the address
//! ```
//!
//! This module holds what every kind shares: the index's definition, its
//! entries (a B+-tree; a kind decides what an entry's key and value
//! hold, see `logical` and `physical`), the per-table list writers read,
//! the catalog and the DDL. Today's kinds keep entries *multi-version*: a
//! row keeps one entry per distinct index key among the versions still in
//! its chain (logical pointers), or one entry per version (physical
//! pointers), so an old snapshot still finds a row under the key it had
//! then; a reader resolves an entry and asks storage which version it sees.
//!
//! Uniqueness is a property of the newest state: adding a key to a unique
//! index inserts the entry first and then looks at the other entries of the
//! same key (two concurrent claimers see each other's entries). See
//! `common::unique_check`.
//!
//! Creating an index on a populated table publishes it to writers, waits
//! until every read-write transaction that began before is finished (they
//! may have written without knowing the index), then, with GC paused,
//! back-fills entries for every committed version and re-checks
//! uniqueness (the kind's `backfill` and `check_unique`). Writers keep running meanwhile and maintain the index
//! themselves. The re-check runs with GC going and holds no snapshot, so a
//! version it listed may leave its row before it is read (see
//! `common::newest_state_holds`).

use super::btree::{BTree, Key as TreeKey};
use super::table::TableInner;
use crate::error::{Error, Result};
use crate::index::key::{
    bump_prefix, encode_byte_key, encode_values_into, encoded_len, match_values, prefix_end,
    skip_values, ByteKey, EncodedKey,
};
use crate::index::mvpbt::Partitions;
use crate::index::mvpbt_spill::SpillDir;
use crate::index::scan_log::ScanLog;
use crate::index::{with_index_kind, SecondaryIndexKind};
use crate::options::{IndexKind, IndexPointers};
use crate::storage::meter::Gauged;
use crate::value::{Key, Schema, Value};
use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::{Arc, OnceLock};

/// Whether a secondary index refuses two rows with the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unique {
    Yes,
    No,
}

pub(crate) struct SecondaryIndex {
    pub name: String,
    pub owner: u64,
    /// Column positions of the index key, in key order.
    pub columns: Vec<usize>,
    pub column_names: Vec<String>,
    pub unique: bool,
    /// The database's pointer scheme (`Options::index_pointers`).
    pub pointers: IndexPointers,
    /// This index's structure, chosen at `create_index_as`.
    pub kind: IndexKind,
    /// Entries of a `Standard` index (empty for MV-PBT).
    pub tree: Entries,
    /// Partitions of an `MvPbt` index (None for `Standard`).
    pub mvpbt: Option<Partitions>,
    pub dropped: AtomicBool,
    /// Its definition is final: its `CreateIndex` record is in the log
    /// (set under the catalog lock), or, in memory, it is built.
    /// Checkpoints (and backups) from then on carry it, and a drop logs
    /// a `DropIndex`.
    pub defined: AtomicBool,
    /// MVTO: largest timestamp of a transaction that scanned this index; an
    /// older transaction may not add an entry (a phantom for that reader).
    pub predicate_read_ts: AtomicU64,
    /// SSN/SSI: ranges of committing and recently committed index scans
    /// (see `index::scan_log`).
    pub scan_log: ScanLog,
    /// Whether an entry may name a row some version of which has another
    /// key (a *stale* entry): false until the first write that can make
    /// one, then true for good ([`SecondaryIndex::note_stale`]). See
    /// [`SecondaryIndex::may_be_stale`].
    /// (A model-build atomic: its load and store are scheduling points.)
    stale_possible: crate::sync::atomic::AtomicBool,
    /// The memory gauge of the database (with a limit set), which counts
    /// this index's entries as they are added and removed
    /// ([`entry_bytes`]) and gets back those left when the index is freed
    /// (dropped, or its table dropped and reclaimed).
    gauge: Option<Gauge>,
}

/// A database's memory gauge, as an index holds it.
pub(crate) type Gauge = Arc<crossbeam_utils::CachePadded<crate::stats::MemoryGauge>>;

/// What the memory gauge counts for an entry of key `key` (an estimate,
/// by the key alone so that its insert and its removal count the same):
/// a leaf slot of the tree (key words and value, 32 bytes, in leaves about
/// four-fifths full) and the key's own allocation (a 16-byte header, the
/// bytes).
#[inline]
pub(crate) fn entry_bytes(key: &[u8]) -> usize {
    40 + 16 + key.len()
}

impl Drop for SecondaryIndex {
    fn drop(&mut self) {
        // The entries left go with the index: the gauge counted each.
        if let Some(g) = &self.gauge {
            g.add(0, self.approx_bytes().1);
        }
    }
}

impl SecondaryIndex {
    /// A new, empty index of `kind` on columns `columns` (positions;
    /// `names` are their names) of a table of database `owner`; an MV-PBT
    /// index freezes its writable partition at `partition_records` and
    /// spills frozen partitions to `spill` (its directory, the file stem);
    /// `gauge`: the database's memory gauge, with a limit set (see the
    /// field).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        owner: u64,
        columns: Vec<usize>,
        names: &[&str],
        unique: Unique,
        pointers: IndexPointers,
        kind: IndexKind,
        partition_records: usize,
        spill: Option<(Arc<SpillDir>, String)>,
        gauge: Option<Gauge>,
    ) -> SecondaryIndex {
        let mvpbt = match kind {
            IndexKind::Standard => None,
            IndexKind::MvPbt => Some(Partitions::new(partition_records, spill, gauge.clone())),
        };
        SecondaryIndex {
            kind,
            mvpbt,
            name: name.to_string(),
            owner,
            columns,
            column_names: names.iter().map(|s| s.to_string()).collect(),
            unique: unique == Unique::Yes,
            pointers,
            // Its entries count exactly when the index gives them back
            // at its drop: with the gauge (see the field).
            tree: Entries::new(
                Gauged::of(gauge.as_ref().and_then(|g| g.limit())),
                with_index_kind!((kind, pointers), K => K::COUNTS_ADDITIONS),
            ),
            dropped: AtomicBool::new(false),
            defined: AtomicBool::new(false),
            predicate_read_ts: AtomicU64::new(0),
            scan_log: ScanLog::default(),
            stale_possible: crate::sync::atomic::AtomicBool::new(false),
            gauge,
        }
    }

    /// Called before any write that can leave an entry whose key is not
    /// every version's of the row it names: an update of an indexed
    /// column (the row's old entry stays for old snapshots), a delete (a
    /// key inserted again may come back under another key), an entry
    /// undone (its row id may be taken by another row) or replaced, a
    /// back-fill (it indexes every version). The first call's store is
    /// the only write; later ones read.
    #[inline]
    pub fn note_stale(&self) {
        if !self.stale_possible.load(Relaxed) {
            self.stale_possible.store(true, SeqCst);
        }
    }

    /// Whether a reader must check the row an entry leads to against the
    /// entry (`ident_matches`), and GC look for entries to remove. False
    /// means every entry's key is the key of every version of its row: the
    /// index only ever had inserts of new rows, nothing undone. A TPC-C
    /// customer's name index stays so for the whole run, and Payment's
    /// by-name scan then checks no customer against its entry.
    ///
    /// Read *after* the row (or the entry) whose key it vouches for: the
    /// write that made the two disagree noted it before it put either
    /// where a reader could find it (before its index entry went in,
    /// before its commit made its version visible), so a reader that got
    /// there sees the flag set.
    #[inline]
    pub fn may_be_stale(&self) -> bool {
        self.stale_possible.load(SeqCst)
    }

    /// The pair [`with_index_kind!`] dispatches on.
    #[inline]
    pub fn dispatch(&self) -> (IndexKind, IndexPointers) {
        (self.kind, self.pointers)
    }

    /// `enc(index key) ++ enc(primary key)` of a (non-tombstone) row.
    pub fn ident(&self, schema: &Schema, row: &[Value]) -> Vec<u8> {
        let ikey = || self.columns.iter().map(|&c| &row[c]);
        let pkey = || schema.primary_key.iter().map(|&c| &row[c]);
        let mut out = Vec::with_capacity(encoded_len(ikey()) + encoded_len(pkey()));
        encode_values_into(ikey(), &mut out);
        encode_values_into(pkey(), &mut out);
        out
    }

    /// Whether `key` is exactly `ident` of `row` (a scan's and a
    /// writer's stale-entry check), compared in place: nothing is encoded.
    #[inline]
    pub fn ident_matches(&self, schema: &Schema, row: &[Value], key: &[u8]) -> bool {
        let Some(n) = match_values(self.columns.iter().map(|&c| &row[c]), key) else {
            return false;
        };
        match_values(schema.primary_key.iter().map(|&c| &row[c]), &key[n..])
            .is_some_and(|m| n + m == key.len())
    }

    /// Length of the index-key part of an entry key.
    pub fn ikey_len(&self, key: &[u8]) -> usize {
        skip_values(key, self.columns.len())
    }

    /// Entries with keys in the (byte) bounds, in key order.
    pub fn range(&self, lo: &Bound<EncodedKey>, hi: &Bound<EncodedKey>) -> Vec<(Box<[u8]>, u64)> {
        let guard = crossbeam_epoch::pin();
        self.entries(lo, hi, &guard)
            .map(|(k, v)| (k.into(), v))
            .collect()
    }

    /// [`SecondaryIndex::range`] as it goes, for a scan that looks at each
    /// entry once: no key is copied; each is borrowed while `guard` pins.
    pub fn entries<'g>(
        &'g self,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        guard: &'g Guard,
    ) -> super::btree::Iter<'g> {
        let (lo, hi) = (tree_bound(lo), tree_bound(hi));
        self.tree.tree.iter(lo.as_ref(), hi.as_ref(), guard)
    }

    /// The lower fence of the leaf holding the entries just below `hi`
    /// ([`BTree::fence_below`]): a walk from the high end steps leftwards
    /// with it.
    pub fn fence_below(&self, hi: &Bound<EncodedKey>, guard: &Guard) -> Option<EncodedKey> {
        self.tree.tree.fence_below(tree_bound(hi).as_ref(), guard)
    }

    /// Entries whose index key is exactly `ikey` (encoded).
    pub fn with_ikey(&self, ikey: &[u8]) -> Vec<(Box<[u8]>, u64)> {
        let hi = match prefix_end(ikey) {
            Some(e) => Bound::Excluded(EncodedKey::Bytes(e.into())),
            None => Bound::Unbounded,
        };
        self.range(&Bound::Included(EncodedKey::Bytes(ikey.into())), &hi)
    }

    /// (entries, approximate bytes): the tree's size.
    pub(crate) fn approx_bytes(&self) -> (u64, u64) {
        let guard = crossbeam_epoch::pin();
        let mut n = 0u64;
        let mut bytes = 0u64;
        for (k, _) in self
            .tree
            .tree
            .iter(Bound::Unbounded, Bound::Unbounded, &guard)
        {
            n += 1;
            bytes += entry_bytes(k) as u64;
        }
        (n, bytes)
    }
}

/// Shards of [`Additions`]: a thread counts in shard `i mod` this, `i`
/// its order of first count.
const ADDITION_SHARDS: usize = 16;

/// How many entries were ever added to an index's tree: a count that
/// only grows, in shards that threads write apiece (a count every insert
/// into an indexed table wrote would be a line all inserters share). A
/// scan that reads the total before it starts and finds it unchanged at
/// its commit knows that no entry went in meanwhile, anywhere in the
/// index (`SecScan::additions_at`).
///
/// Invariant: an entry is in the tree before it is counted (the count is
/// a `SeqCst` step after the tree's insert), so a total read before a
/// scan counts only entries the scan will meet.
#[derive(Default)]
pub(crate) struct Additions {
    shards: [crossbeam_utils::CachePadded<crate::sync::atomic::AtomicU64>; ADDITION_SHARDS],
}

impl Additions {
    fn note(&self) {
        crate::sync::thread_local! {
            static SHARD: usize = {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                NEXT.fetch_add(1, Relaxed) % ADDITION_SHARDS
            };
        }
        let i = SHARD.with(|s| *s);
        self.shards[i].fetch_add(1, SeqCst);
    }

    /// The entries added so far.
    pub fn total(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |n, s| n.wrapping_add(s.load(SeqCst)))
    }
}

/// A byte bound as the entries' tree takes it.
fn tree_bound(x: &Bound<EncodedKey>) -> Bound<TreeKey<'_>> {
    match x {
        Bound::Included(EncodedKey::Bytes(k)) => Bound::Included(TreeKey::Bytes(k)),
        Bound::Excluded(EncodedKey::Bytes(k)) => Bound::Excluded(TreeKey::Bytes(k)),
        _ => Bound::Unbounded,
    }
}

/// The entries of one secondary index: a B+-tree of byte keys
/// ([`super::btree`]), like the primary index's ordered side. Not
/// `scc::TreeIndex`: its range iterator can miss entries present for the
/// whole scan when the leaf it starts in has just been emptied by
/// removals, which index churn (physical pointers, GC of stale entries)
/// does constantly; the tree's iterator sees every entry present from
/// start to end (keys only move right).
pub(crate) struct Entries {
    tree: BTree,
    /// Whether its entries count for the memory gauge (the database's
    /// flag: `storage::meter::Gauged`).
    gauged: Gauged,
    /// Every entry ever added, counted after it is in the tree, if the
    /// index's kind counts them (`SecondaryIndexKind::COUNTS_ADDITIONS`).
    pub additions: Additions,
    counts: bool,
}

impl Entries {
    pub(crate) fn new(gauged: Gauged, counts: bool) -> Self {
        Entries {
            tree: BTree::new(true),
            gauged,
            additions: Additions::default(),
            counts,
        }
    }

    /// Adds `key -> value` unless the key is present; `Err(existing)` then
    /// (a racing inserter of the same key must not believe it added the
    /// entry, or its abort would remove the winner's entry, or a tuple
    /// id's entry would be tracked by the wrong transaction: the tree
    /// decides under the leaf's lock).
    ///
    /// With the gauge, each entry added and removed counts for it
    /// ([`entry_bytes`], `storage::meter`).
    pub fn insert(&self, key: &[u8], value: u64) -> std::result::Result<(), u64> {
        self.tree.insert(&TreeKey::Bytes(key), value)?;
        if self.counts {
            self.additions.note();
        }
        self.gauged.held(entry_bytes(key));
        Ok(())
    }

    /// Removes `key` if it maps to `value`.
    pub fn remove_if(&self, key: &[u8], value: u64) -> bool {
        let removed = self.tree.remove_if(&TreeKey::Bytes(key), value);
        if removed {
            self.gauged.released(entry_bytes(key));
        }
        removed
    }

    /// Removes `key` whatever it maps to.
    pub fn remove(&self, key: &[u8]) -> bool {
        let removed = self.tree.remove(&TreeKey::Bytes(key));
        if removed {
            self.gauged.released(entry_bytes(key));
        }
        removed
    }
}

/// The secondary indexes of one table, as writers see them.
pub(crate) struct TableIndexes {
    /// Replaced as a whole by DDL; writers read it pinned, with no
    /// reference-count traffic on the write path.
    list: Atomic<Vec<Arc<SecondaryIndex>>>,
    /// The lists DDL took out of `list`, each kept here until the epoch
    /// says no reader pinned when it was taken out is left, or until the
    /// table goes, whichever comes first (see [`TableIndexes::replace`]).
    replaced: Arc<Mutex<Replaced>>,
    pub ddl: Mutex<()>,
    /// The kind of the table's indexes (`Options::index_pointers`, one per
    /// database), set before its first index is published: the per-table
    /// seam operations (writes, GC) dispatch on it. Unset: the table never
    /// had an index.
    kind: OnceLock<IndexPointers>,
    /// Stale logical entries GC could not remove yet (the row was locked),
    /// by tuple.
    pub pending: Mutex<HashMap<u64, HashSet<super::logical::Stale>>>,
    /// Versions GC walked to find stale entries (`Stats::gc_index_steps`).
    gc_steps: AtomicU64,
}

impl Default for TableIndexes {
    fn default() -> Self {
        TableIndexes {
            list: Atomic::new(Vec::new()),
            replaced: Arc::default(),
            ddl: Mutex::new(()),
            kind: OnceLock::new(),
            pending: Mutex::new(HashMap::new()),
            gc_steps: AtomicU64::new(0),
        }
    }
}

impl TableIndexes {
    /// The kind of the table's indexes; None if it never had one.
    #[inline]
    pub fn kind(&self) -> Option<IndexPointers> {
        self.kind.get().copied()
    }

    /// Records the kind of an index about to be published (every index of
    /// a database has the database's).
    pub fn set_kind(&self, kind: IndexPointers) {
        let set = *self.kind.get_or_init(|| kind);
        debug_assert_eq!(set, kind, "one index kind per table");
    }

    pub fn count_gc_steps(&self, n: u64) {
        self.gc_steps.fetch_add(n, Relaxed);
    }

    pub fn gc_steps(&self) -> u64 {
        self.gc_steps.load(Relaxed)
    }

    /// The current list; valid while `guard` is held and the table lives
    /// (the borrow of `self`: its drop frees every list at once).
    pub fn load<'g>(&'g self, guard: &'g Guard) -> &'g [Arc<SecondaryIndex>] {
        let p = self.list.load(SeqCst, guard);
        // SAFETY: the list is never null (created in `default`, replaced by
        // `swap` with a new one) and an old list is freed only once every
        // guard that could have loaded it is gone (`replace`'s deferred
        // free) or with `self` (`Drop`, after this borrow).
        unsafe { p.deref() }.as_slice()
    }

    /// `indexed` is the table's `Store::indexed`: true from before a list
    /// with an index is published until after an empty one is, so storage
    /// never cuts a chain without index work while an entry may name one of
    /// its versions.
    pub fn replace(
        &self,
        indexed: &AtomicBool,
        f: impl FnOnce(&[Arc<SecondaryIndex>]) -> Vec<Arc<SecondaryIndex>>,
    ) {
        let guard = epoch::pin();
        let mut new = f(self.load(&guard));
        // Runs of one kind, so per-table operations dispatch once per run.
        new.sort_by_key(|i| i.kind);
        let empty = new.is_empty();
        if !empty {
            indexed.store(true, SeqCst);
        }
        let old = self.list.swap(Owned::new(new), SeqCst, &guard);
        if empty {
            indexed.store(false, SeqCst);
        }
        // SAFETY: `old` came from `Owned::new` (here or in `default`) and
        // is unreachable from `list` now: this is its one owner. Pinned
        // readers may still use it: it stays in its box, which does not
        // move, until they are gone (below) or the table is.
        let old = unsafe { old.into_owned() }.into_box();
        let seq = {
            let mut r = self.replaced.lock();
            r.next += 1;
            let seq = r.next;
            r.lists.push((seq, old));
            seq
        };
        // The old list is freed once every reader pinned now has unpinned,
        // or with the table (`Drop`), whichever comes first. Not by the
        // epoch alone: its last `Arc` of an index still in `list` (the
        // first index, after a second one was made) then waited for the
        // epoch to move, so a dropped table's reclaim freed that index
        // only once every thread in the process had unpinned (any scan's
        // callback, a thread descheduled while pinned, other databases'
        // work: the epoch is the process's) and its entries stayed in the
        // memory gauge meanwhile, for as long as one stayed pinned (seen
        // as 1095868 -> 5441612 -> 3666012 in `tests/memory_limit.rs`,
        // an MV-PBT index's 2.5 MB, under load).
        let replaced = Arc::downgrade(&self.replaced);
        guard.defer(move || {
            // (None: the table went first, and the list with it.)
            let list = replaced.upgrade().and_then(|r| {
                let mut r = r.lock();
                let i = r.lists.iter().position(|(s, _)| *s == seq)?;
                Some(r.lists.swap_remove(i))
            });
            // (Out of the lock: an index dropped meanwhile goes with it.)
            drop(list);
        });
        // Into the global queue now: left in this thread's bag, the old
        // list (and an index it alone holds, a dropped one) waited for
        // this thread to pin again, for good if it went idle (seen as a
        // dropped table's first index never leaving the memory gauge). DDL
        // is rare: the flush costs nothing that matters.
        guard.flush();
    }
}

/// The lists [`TableIndexes::replace`] took out, by a sequence number,
/// until the epoch frees each (or the table goes).
#[derive(Default)]
struct Replaced {
    next: u64,
    // (Each in the box `list` pointed to: a reader pinned before the
    // swap may still be reading the `Vec` itself there, not only its
    // elements.)
    #[allow(clippy::box_collection)]
    lists: Vec<(u64, Box<Vec<Arc<SecondaryIndex>>>)>,
}

impl Drop for TableIndexes {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader exists; the list is owned here.
        let guard = unsafe { epoch::unprotected() };
        let p = self.list.swap(epoch::Shared::null(), SeqCst, guard);
        if !p.is_null() {
            // SAFETY: as above; dropped once.
            drop(unsafe { p.into_owned() });
        }
        // The lists DDL replaced go now too, whatever the epoch: a reader
        // reaches a list only through its table (`load` takes `&self`), so
        // none is left in any of them. A dropped table's indexes are freed
        // (and their entries leave the memory gauge) at its reclaim.
        // (A deferred free that took the lock first frees its own list;
        // the rest go with the last `Arc`, an instant later.)
        let lists = std::mem::take(&mut self.replaced.lock().lists);
        drop(lists);
    }
}

type CatalogEntry = (Arc<SecondaryIndex>, Arc<TableInner>);

/// Index name -> index, for the whole database.
#[derive(Default)]
pub(crate) struct IndexCatalog {
    pub by_name: parking_lot::RwLock<HashMap<String, CatalogEntry>>,
}

impl IndexCatalog {
    /// A dropped table's indexes are dropped with it (their names free).
    pub fn forget_table(&self, table_id: u32) {
        self.by_name.write().retain(|_, (idx, t)| {
            let keep = t.id != table_id;
            if !keep {
                idx.dropped.store(true, SeqCst);
            }
            keep
        });
    }

    /// An altered table's indexes move to the table that replaces it
    /// (`Database::alter_table`): the old table's are dropped and `moved`
    /// take their names, defined, in one step for whoever reads the
    /// catalog (no moment where a name is missing or names both).
    pub fn move_table(&self, old: u32, new: &Arc<TableInner>, moved: &[Arc<SecondaryIndex>]) {
        let mut names = self.by_name.write();
        names.retain(|_, (idx, t)| {
            let keep = t.id != old;
            if !keep {
                idx.dropped.store(true, SeqCst);
            }
            keep
        });
        for idx in moved {
            idx.defined.store(true, SeqCst);
            names.insert(idx.name.clone(), (Arc::clone(idx), Arc::clone(new)));
        }
    }
}

/// Checks a (possibly prefix) key against index columns `cols`.
/// `what` names the index in the error (built only for one).
pub(crate) fn check_prefix(
    schema: &Schema,
    cols: &[usize],
    what: impl FnOnce() -> String,
    key: &Key,
) -> Result<()> {
    if key.0.len() > cols.len() {
        return Err(Error::Schema(format!(
            "{} has {} columns, key has {}",
            what(),
            cols.len(),
            key.0.len()
        )));
    }
    for (v, &ci) in key.0.iter().zip(cols) {
        schema.check_value(&schema.columns[ci], v)?;
    }
    Ok(())
}

/// A (prefix) key's encoding, inline when it is short (no allocation for
/// most keys: see `key::INLINE_KEY`).
fn encode_prefix(k: &Key) -> ByteKey {
    encode_byte_key(&k.0)
}

/// The first key past every key with prefix `p` (`key::prefix_end`, in
/// place), or `None` when nothing follows them all.
fn past_prefix(mut p: ByteKey) -> Option<ByteKey> {
    let n = bump_prefix(&mut p)?;
    p.truncate(n);
    Some(p)
}

/// A lower bound on byte-encoded keys from a (prefix) key: `Included(p)`
/// starts at the first key with prefix `p`, `Excluded(p)` after the last.
pub(crate) fn prefix_lower(b: Bound<&Key>) -> Bound<EncodedKey> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(EncodedKey::Bytes(encode_prefix(k))),
        Bound::Excluded(k) => match past_prefix(encode_prefix(k)) {
            Some(e) => Bound::Included(EncodedKey::Bytes(e)),
            // Nothing follows every key: an empty range (every key starts
            // with a tag below 0xFF, see `key`).
            None => Bound::Included(EncodedKey::Bytes(ByteKey::from_slice(&[0xFF]))),
        },
    }
}

/// An upper bound: `Included(p)` through the last key with prefix `p`,
/// `Excluded(p)` up to the first.
pub(crate) fn prefix_upper(b: Bound<&Key>) -> Bound<EncodedKey> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => match past_prefix(encode_prefix(k)) {
            Some(e) => Bound::Excluded(EncodedKey::Bytes(e)),
            None => Bound::Unbounded,
        },
        Bound::Excluded(k) => Bound::Excluded(EncodedKey::Bytes(encode_prefix(k))),
    }
}

/// Both bounds of a (prefix) key range. The range of one key (`k..=k`,
/// an equality lookup such as TPC-C's by-name scan) is encoded once.
pub(crate) fn prefix_bounds(
    range: &impl RangeBounds<Key>,
) -> (Bound<EncodedKey>, Bound<EncodedKey>) {
    match (range.start_bound(), range.end_bound()) {
        (Bound::Included(a), Bound::Included(b)) if a == b => {
            let lo = encode_prefix(a);
            let hi = match past_prefix(lo.clone()) {
                Some(e) => Bound::Excluded(EncodedKey::Bytes(e)),
                None => Bound::Unbounded,
            };
            (Bound::Included(EncodedKey::Bytes(lo)), hi)
        }
        (lo, hi) => (prefix_lower(lo), prefix_upper(hi)),
    }
}

/// A primary-key scan bound from a full or prefix key (a full key keeps the
/// primary index's own encoding).
pub(crate) fn primary_bound(
    t: &TableInner,
    b: Bound<&Key>,
    lower: bool,
) -> Result<Bound<EncodedKey>> {
    let pk = &t.schema.primary_key;
    if let Bound::Included(k) | Bound::Excluded(k) = b {
        check_prefix(
            &t.schema,
            pk,
            || format!("primary key of {}", t.schema.name),
            k,
        )?;
    }
    Ok(match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) if k.0.len() == pk.len() => Bound::Included(t.encode(k)),
        Bound::Excluded(k) if k.0.len() == pk.len() => Bound::Excluded(t.encode(k)),
        // A single-Int key's only shorter prefix is the empty one.
        Bound::Included(_) if t.int_key => Bound::Unbounded,
        Bound::Excluded(_) if t.int_key => match lower {
            true => Bound::Excluded(EncodedKey::U64(u64::MAX)),
            false => Bound::Excluded(EncodedKey::U64(0)),
        },
        b if lower => prefix_lower(b),
        b => prefix_upper(b),
    })
}

/// Secondary-index figures for `Stats`: (entries, approximate bytes).
pub(crate) fn stats(t: &TableInner) -> (u64, u64) {
    let guard = epoch::pin();
    t.secondary
        .load(&guard)
        .iter()
        .map(|i| with_index_kind!(i.dispatch(), K => K::stats(i)))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// End of a GC pass: retry stale entries GC could not remove, and prune
/// index scan records below the horizon.
pub(crate) fn after_gc_pass(
    t: &TableInner,
    horizon: u64,
    prune_scans: Option<u64>,
    every_shard: bool,
) {
    super::retry_deferred(t);
    if let Some(quiesced) = prune_scans {
        let guard = epoch::pin();
        for idx in t.secondary.load(&guard) {
            idx.scan_log.prune(horizon, quiesced, every_shard);
        }
    }
}
