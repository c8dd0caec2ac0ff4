//! Index pointer schemes for secondary indexes (Peloton study §6), and the
//! secondary-index side of writes, scans, validation and GC.
//!
//! The primary index always leads to the chain head (through the
//! indirection array). What a *secondary* entry points at is the scheme:
//!
//! ```text
//!  LogicalTupleId     entry ──> tuple id ──> indirection[tuple] ──> head ──> ... visible
//!  LogicalPrimaryKey  entry ──> primary key ──> primary index ──> tuple id ──> head ...
//!  Physical           entry ──> version  (one entry per version, readers check
//!                                         that version's visibility alone)
//! ```
//!
//! Writes. With logical pointers a write adds an entry only when the new
//! version's index key is new for the row (an update of a non-indexed
//! column touches no secondary index); with physical pointers *every* new
//! version — any update, of any column — inserts an entry into every
//! secondary index. Entries a transaction added are listed in its
//! `sec_writes` and removed again if it aborts (before its versions are
//! retired, so a physical entry never dangles).
//!
//! GC. `storage::prune` calls `before_cut` for whatever versions the
//! storage scheme retires (N2O and in-place: the tail below the survivor;
//! O2N: the prefix before it), reading their rows through
//! `storage::with_values`. Physical: it removes the entries of the
//! versions about to be retired. Logical: an entry is stale once no
//! version left in the chain has its key; GC removes it under the row's
//! write lock (taken like a writer, with `GC_TID`), because a writer of the
//! row that finds the entry present relies on it. If the row is locked, the
//! removal waits in `TableIndexes::pending` (a set per row) for a later
//! pass. Unlinking a deleted row removes all its entries first. The cost is
//! one step per retired version, plus the kept versions (newest first, until
//! every candidate key is found) when a retired key differs from the
//! survivor's: chains are read with `storage::walk_images`, never from the
//! head once per retired version (that was quadratic in a backlog).
//!
//! ```text
//!  chain: v9 (k=7) -> v5 (k=7) -> v2 (k=3)    GC cuts below v5:
//!  entries: (3,pk) (7,pk)                      (3,pk) is stale -> removed
//! ```
//!
//! Phantoms. An index scan of a read-write transaction reads every row with
//! an entry in the range (so any later change to those rows is caught by the
//! protocol's read tracking) and remembers the entries' identities
//! (index key ++ primary key). Serializable protocols then treat the index
//! range like a primary-key range: MVOCC, MV2PL, SSN and SSI re-scan it at
//! commit, SSN and SSI leave a scan record on the index for writers that add
//! entries later, and MVTO raises the index's predicate timestamp, which an
//! older writer adding an entry must not be below.
//!
//! A phantom is an entry not seen, not ours, *and not of a row we read*
//! (`accounted_rows`). An update of an indexed column gives a row a new
//! entry; if we read the row, the protocol's read tracking already orders
//! us before that update (or refuses us), exactly as for an update through
//! the primary key, so counting the entry again only refused transactions
//! that saw no phantom. The same rows excuse a writer from poisoning the
//! scan record of a scanner still deciding.
//!
//! ```text
//!  T1 reads rows 1, 2; scans cat [0, 1000): entries (100,1) (200,2)
//!  T2 sets cat 150, 160 on rows 1, 2 and commits: entries (150,1) (160,2) new
//!  T1 commits: rows 1 and 2 were read -> no phantom (T1 before T2)
//!  a new entry of row 4, which T1 never read, would be one
//! ```

use super::secondary::{check_prefix, prefix_lower, prefix_upper, Index, SecondaryIndex};
use crate::cc::predicate::ScanEntry;
use crate::cc::{with_cc, Cc};
use crate::error::{ConflictKind, Error, Result};
use crate::gc::GC_TID;
use crate::index::key::EncodedKey;
use crate::options::VersionStorage;
use crate::storage;
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::table::TableInner;
use crate::txn::tid::{Status, TidTable};
use crate::txn::visibility::{self, Mode};
use crate::txn::Transaction;
use crate::value::{Key, Row, Value};
use crossbeam_epoch::{self as epoch, Guard};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;

/// An entry a transaction added, to remove if it aborts.
pub(crate) struct SecWrite {
    pub index: Arc<SecondaryIndex>,
    pub key: Box<[u8]>,
    pub value: u64,
    /// The version that needed it.
    pub version: *mut Version,
    /// The row it belongs to.
    pub tuple: u64,
}

/// The secondary-index part of a predicate read.
pub(crate) struct SecScan {
    pub index: Arc<SecondaryIndex>,
    /// Identities (index key ++ primary key) of the entries seen, sorted.
    pub seen: Vec<Box<[u8]>>,
    /// Rows (tuple ids) the scan read a visible version of, sorted: a new
    /// entry of one of them is a change to a row we read, which the
    /// protocol's read tracking catches, not a phantom.
    pub read: Vec<u64>,
}

impl Transaction {
    /// Adds the secondary entries a new version of `tuple` with row `new`
    /// needs, and checks unique indexes. Called while we hold the row's
    /// write lock. `v` is the version physical entries point at: the new
    /// version once installed, or (when our own uncommitted version is
    /// replaced) that version `prev`, re-keyed to the replacement by
    /// [`Transaction::sec_on_replace_own`] — invisible to everyone else,
    /// so a scan never reaches a wrong row through it. `prev` is the
    /// version the write replaces (null for a fresh insert). On error
    /// nothing was added; the caller undoes its own step.
    pub(crate) fn sec_on_write<P: Cc>(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        prev: *mut Version,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()> {
        let guard = epoch::pin();
        let list = ti.secondary.load(&guard);
        if list.is_empty() {
            return Ok(());
        }
        // SAFETY: `prev` is the locked head or our own version: alive.
        let old: Option<Vec<Value>> = match unsafe { prev.as_ref() } {
            Some(p) if !p.is_tombstone() && list.iter().any(|i| !i.is_physical()) => {
                Some(storage::with_values(p, |d| d.to_vec()))
            }
            _ => None,
        };
        let mark = self.sec_writes.len();
        for idx in list {
            if idx.dropped.load(SeqCst) {
                continue;
            }
            if let (false, Some(o)) = (idx.is_physical(), old.as_ref()) {
                // An update that leaves this index's columns alone: the
                // row has the entry already (logical pointers).
                if idx.columns.iter().all(|&c| o[c] == new[c]) {
                    continue;
                }
            }
            if let Err(e) = self.sec_add::<P>(ti, idx, tuple, v, new) {
                for w in self.sec_writes.drain(mark..) {
                    w.index.tree.remove_if(&w.key, w.value);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    fn sec_add<P: Cc>(
        &mut self,
        ti: &TableInner,
        idx: &Arc<SecondaryIndex>,
        tuple: u64,
        v: *mut Version,
        new: &[Value],
    ) -> Result<()> {
        let ident = idx.ident(&ti.schema, new);
        let key = idx.entry_key(ident.clone(), v);
        let value = idx.value_for(tuple);
        let added = loop {
            match idx.tree.insert(key.clone(), value) {
                Ok(()) => break true,
                // The row already has this key (logical pointers), or
                // (tuple ids) a dead row with the same primary key left an
                // entry GC has not removed yet: replace that one.
                Err(o) if o != value && idx.pointers == crate::IndexPointers::LogicalTupleId => {
                    idx.tree.remove_if(&key, o);
                }
                Err(_) => break false,
            }
        };
        if added {
            self.sec_writes.push(SecWrite {
                index: Arc::clone(idx),
                key,
                value,
                version: v,
                tuple,
            });
            // A new key in the index's key space: an older transaction's
            // scan of it may forbid it (MVTO's index predicate timestamp).
            P::check_insert(self, &idx.predicate_read_ts).map_err(Error::Conflict)?;
        }
        if idx.unique {
            let ikey_len = idx.ikey_len(&ident);
            self.sec_unique_check::<P>(ti, idx, &ident, ikey_len, tuple)?;
        }
        Ok(())
    }

    /// After our entry for `ident` is in the unique index: refuse if another
    /// row holds the same index key in its newest state. A row locked by
    /// another writer may be taking the key right now: a conflict.
    fn sec_unique_check<P: Cc>(
        &mut self,
        ti: &TableInner,
        idx: &SecondaryIndex,
        ident: &[u8],
        ikey_len: usize,
        tuple: u64,
    ) -> Result<()> {
        let ikey = &ident[..ikey_len];
        let my_pk = &ident[ikey_len..];
        for (k, val) in idx.with_ikey(ikey) {
            let kid = idx.ident_of(&k);
            if &kid[ikey_len..] == my_pk {
                continue; // our own row
            }
            let Some(other) = idx.resolve(ti, &k, val) else {
                continue;
            };
            if other == tuple {
                continue;
            }
            let head = storage::newest(ti, other);
            // SAFETY: pinned by the caller; heads are alive.
            let Some(h) = (unsafe { head.as_ref() }) else {
                continue;
            };
            let locker = h.txn_id.load(SeqCst);
            if locker != 0 && locker != GC_TID && locker != self.tid {
                return Err(Error::Conflict(ConflictKind::WriteWrite));
            }
            if h.is_tombstone() || storage::with_values(h, |d| idx.ident(&ti.schema, d)) != kid {
                continue; // stale entry, or a reused tuple
            }
            if locker != self.tid {
                let b = h.begin.load(SeqCst);
                if b & TID_MARK == 0 && b > self.ts {
                    // The holder committed after our snapshot: for us the key
                    // is free, yet we cannot take it (MV2PL reads the newest
                    // state, so for it this is a plain duplicate).
                    if let Some(k) = P::NEWER_THAN_SNAPSHOT {
                        return Err(Error::Conflict(k));
                    }
                }
            }
            return Err(self.sec_duplicate::<P>(ti, idx, other));
        }
        Ok(())
    }

    /// A duplicate answer depends on the holder's version: read it under
    /// the protocol (a conflict there wins).
    fn sec_duplicate<P: Cc>(
        &mut self,
        ti: &TableInner,
        idx: &SecondaryIndex,
        holder: u64,
    ) -> Error {
        if !self.is_own(storage::newest(ti, holder)) {
            if let Err(e) = self.read_tuple::<P>(ti, holder) {
                return e;
            }
        }
        // SAFETY: pinned by the caller.
        let key = match unsafe { storage::newest(ti, holder).as_ref() } {
            Some(h) if !h.is_tombstone() => storage::with_values(h, |d| {
                Key(idx.columns.iter().map(|&c| d[c].clone()).collect()).to_string()
            }),
            _ => "?".into(),
        };
        Error::DuplicateKey {
            table: format!("{} (unique index {})", ti.schema.name, idx.name),
            key,
        }
    }

    /// Our uncommitted version `own` of a row was replaced by `v` (whose
    /// entries `sec_on_write` added pointing at `own`): entries that point
    /// at `own` move to `v` when `v` has their key, else go. The caller
    /// retires `own` only after this, so a physical entry never names a
    /// retired version.
    pub(crate) fn sec_on_replace_own(
        &mut self,
        ti: &TableInner,
        tuple: u64,
        own: *mut Version,
        v: *mut Version,
    ) {
        if self.sec_writes.is_empty() {
            return;
        }
        // SAFETY: both are ours and alive (`own` is unlinked from the
        // chain but retired only after this returns).
        let nv = unsafe { &*v };
        let new: Option<Vec<Value>> =
            (!nv.is_tombstone()).then(|| storage::with_values(nv, |d| d.to_vec()));
        let mut moved = Vec::new();
        self.sec_writes.retain_mut(|w| {
            if w.version != own {
                return true;
            }
            let keeps = new
                .as_ref()
                .is_some_and(|n| w.index.ident(&ti.schema, n)[..] == *w.index.ident_of(&w.key));
            if keeps && !w.index.is_physical() {
                w.version = v;
                return true;
            }
            w.index.tree.remove_if(&w.key, w.value);
            if keeps {
                // A physical entry names its version: re-key it.
                let key = w.index.entry_key(w.index.ident_of(&w.key).to_vec(), v);
                moved.push((Arc::clone(&w.index), key));
            }
            false
        });
        for (index, key) in moved {
            let value = index.value_for(tuple);
            if index.tree.insert(key.clone(), value).is_ok() {
                self.sec_writes.push(SecWrite {
                    index,
                    key,
                    value,
                    version: v,
                    tuple,
                });
            }
        }
    }

    /// Abort: removes every entry we added (before our versions retire).
    pub(crate) fn sec_rollback(&mut self) {
        for w in self.sec_writes.drain(..).rev() {
            w.index.tree.remove_if(&w.key, w.value);
        }
    }

    /// Rows visible to this transaction whose index key lies in `range`, in
    /// index-key order (ties by primary key). Bounds may be a prefix of the
    /// index columns: `Included(p)` as a lower bound starts at the first key
    /// beginning with `p`, as an upper bound ends after the last.
    pub fn index_scan(&mut self, idx: &Index, range: impl RangeBounds<Key>) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        self.index_scan_with(idx, range, |r| out.push(r.to_vec()))?;
        Ok(out)
    }

    /// Rows whose index key equals `key` (a full or prefix key).
    pub fn index_get(&mut self, idx: &Index, key: &Key) -> Result<Vec<Row>> {
        self.index_scan(idx, (Bound::Included(key), Bound::Included(key)))
    }

    /// Like [`Transaction::index_scan`], calling `f` on each row without
    /// copying it. Returns the number of rows.
    pub fn index_scan_with(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        f: impl FnMut(&[Value]),
    ) -> Result<usize> {
        with_cc!(self.db.protocol, P => self.index_scan_as::<P>(idx, range, f))
    }

    fn index_scan_as<P: Cc>(
        &mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
        mut f: impl FnMut(&[Value]),
    ) -> Result<usize> {
        self.check_open(&idx.table)?;
        let si: &Arc<SecondaryIndex> = &idx.inner;
        if si.owner != self.db.id {
            return Err(Error::Schema(format!(
                "index {} belongs to another database",
                si.name
            )));
        }
        if si.dropped.load(SeqCst) {
            return Err(Error::Schema(format!("index {} was dropped", si.name)));
        }
        let ti: &TableInner = &idx.table.inner;
        let what = format!("index {}", si.name);
        for b in [range.start_bound(), range.end_bound()] {
            if let Bound::Included(k) | Bound::Excluded(k) = b {
                check_prefix(&ti.schema, &si.columns, &what, k)?;
            }
        }
        let lo = prefix_lower(range.start_bound());
        let hi = prefix_upper(range.end_bound());
        let _guard = epoch::pin();
        let rw = !self.read_only;
        if rw {
            P::before_scan(self, &si.predicate_read_ts);
        }
        let phantom_checked = rw && P::VALIDATES_SCANS;
        let entries = si.range(&lo, &hi);
        let mut read: HashMap<u64, *mut Version> = HashMap::new();
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        let mut n = 0;
        let db = Arc::clone(&self.db);
        let tids = &db.tids;
        for (k, val) in &entries {
            let ident = si.ident_of(k);
            let Some(tuple) = si.resolve(ti, k, *val) else {
                continue;
            };
            let v = if !rw && si.is_physical() {
                // The physical path: the entry's version, checked alone.
                let pv = si.version_of(k);
                // SAFETY: the entry was in the index after we pinned, and a
                // version is retired only after its entries are removed.
                if physically_visible(unsafe { &*pv }, self.ts, tids) {
                    pv
                } else {
                    continue;
                }
            } else if !rw {
                // A snapshot read has no bookkeeping to repeat: no cache.
                match self.read_tuple::<P>(ti, tuple) {
                    Ok(v) => v,
                    Err(e) => return self.fail(e),
                }
            } else {
                match read.get(&tuple) {
                    Some(&v) => v,
                    None => {
                        let v = match self.read_tuple::<P>(ti, tuple) {
                            Ok(v) => v,
                            Err(e) => return self.fail(e),
                        };
                        read.insert(tuple, v);
                        v
                    }
                }
            };
            // SAFETY: pinned; `v` is at or above our visible version.
            let Some(r) = (unsafe { v.as_ref() }) else {
                // Nothing visible (an insert after our snapshot): not seen,
                // so re-validation counts it as a phantom, as a primary scan
                // does.
                continue;
            };
            if phantom_checked {
                // We read this row, so later changes to it are the read
                // tracking's business; only new identities are phantoms.
                seen.push(Box::<[u8]>::from(ident));
            }
            if r.is_tombstone() {
                continue;
            }
            if si.is_physical() {
                if v != si.version_of(k) {
                    continue; // another version's entry
                }
                storage::with_values(r, &mut f);
                n += 1;
                continue;
            }
            let hit = storage::with_values(r, |d| {
                buf.clear();
                si.ident_into(&ti.schema, d, &mut buf);
                if buf[..] != *ident {
                    return false; // a stale key of this row
                }
                f(d);
                true
            });
            n += usize::from(hit);
        }
        if phantom_checked {
            seen.sort_unstable();
            let mut rows: Vec<u64> = read
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(&tuple, _)| tuple)
                .collect();
            rows.sort_unstable();
            let mut s = ScanEntry::range(ti, lo, hi, Vec::new());
            s.sec = Some(Box::new(SecScan {
                index: Arc::clone(si),
                seen,
                read: rows,
            }));
            self.scans.push(s);
        }
        Ok(n)
    }
}

/// Whether version `r` itself is the version a read-only snapshot at `ts`
/// sees: created at or before `ts` and not overwritten at or before `ts`.
fn physically_visible(r: &Version, ts: u64, tids: &TidTable) -> bool {
    if !visibility::is_visible(r, ts, 0, tids, Mode::Snapshot).unwrap_or(false) {
        return false;
    }
    let e = r.end.load(SeqCst);
    if e == INF_TS {
        return true;
    }
    if e & TID_MARK == 0 {
        return e > ts;
    }
    let stamped_after = || {
        let e = r.end.load(SeqCst);
        e & TID_MARK != 0 || e > ts
    };
    match tids.settled_status(e & !TID_MARK) {
        Status::Committed(c) => c > ts,
        Status::Committing(c) if c <= ts => match tids.wait_decided(e & !TID_MARK) {
            Status::Committed(_) => false,
            Status::Gone => stamped_after(),
            _ => true,
        },
        Status::Gone => stamped_after(),
        _ => true,
    }
}

/// The rows of `t` (sorted tuple ids) whose later changes the read tracking
/// of `tx` already catches: those `scanned` read, and under the snapshot
/// protocols every row `tx` read a version of (any change after the
/// snapshot is an overwrite of that version: MVOCC's read set fails, SSN
/// and SSI see the rw edge). Not MV2PL's other reads: it reads the newest
/// data, so a row read after a change says nothing about the scan before it
/// (the scan's own reads hold read locks from the scan on).
///
/// Tuple ids cannot name another row meanwhile: a row the transaction read
/// is not unlinked and reused while the transaction is open (see `gc`).
pub(crate) fn accounted_rows<P: Cc>(tx: &Transaction, t: &TableInner, scanned: &[u64]) -> Vec<u64> {
    let mut rows = scanned.to_vec();
    if P::SNAPSHOT_READS && P::VALIDATES_SCANS {
        rows.extend(
            tx.reads
                .iter()
                .filter(|r| std::ptr::eq(r.table, t) && !r.version.is_null())
                .map(|r| r.tuple),
        );
        rows.sort_unstable();
        rows.dedup();
    }
    rows
}

/// Commit-time re-scan of an index range: false if an entry appeared that
/// was not seen, is not ours, and belongs to a row we have not read.
///
/// An updated row gets a new entry (a new index key, or a new version with
/// physical pointers): of a row we read, that is a change the read tracking
/// catches, not a phantom. Counting it as one refused a transaction that
/// read two rows and scanned their index range while another transaction
/// updated their indexed column (read skew with a predicate, which through
/// the primary key committed).
pub(crate) fn validate_sec<P: Cc>(tx: &Transaction, s: &ScanEntry, sec: &SecScan) -> bool {
    // SAFETY: tables outlive transactions.
    let t = unsafe { &*s.table };
    let idx = &sec.index;
    let mut accounted: Option<Vec<u64>> = None;
    for (k, val) in idx.range(&s.lo, &s.hi) {
        let ident = idx.ident_of(&k);
        if sec.seen.binary_search_by(|x| (**x).cmp(ident)).is_ok() {
            continue;
        }
        if tx
            .sec_writes
            .iter()
            .any(|w| Arc::ptr_eq(&w.index, idx) && w.key == k)
        {
            continue;
        }
        let Some(tuple) = idx.resolve(t, &k, val) else {
            continue;
        };
        if t.rows.head(tuple).is_null() {
            continue; // an aborted insert being undone
        }
        let rows = accounted.get_or_insert_with(|| accounted_rows::<P>(tx, t, &sec.read));
        if rows.binary_search(&tuple).is_ok() {
            continue;
        }
        return false;
    }
    true
}

/// The entry keys this transaction added, by index, as scan records see
/// them, with their rows (for SSN/SSI inserter checks).
pub(crate) fn added_keys(tx: &Transaction) -> Vec<(Arc<SecondaryIndex>, EncodedKey, u64)> {
    tx.sec_writes
        .iter()
        .map(|w| {
            (
                Arc::clone(&w.index),
                EncodedKey::Bytes(w.key.clone()),
                w.tuple,
            )
        })
        .collect()
}

// ------------------------------------------------------------------- GC

/// Whether `t` has a secondary index (the write path's fast exit).
#[inline]
pub(crate) fn has_indexes(t: &TableInner) -> bool {
    !t.secondary.load(&epoch::pin()).is_empty()
}

/// Every version of `tuple`, newest first, whatever the chain's direction
/// (O2N links oldest to newest). The caller is pinned.
pub(crate) fn versions_newest_first(t: &TableInner, tuple: u64) -> Vec<*mut Version> {
    let mut out = Vec::new();
    let mut v = t.rows.head(tuple);
    while !v.is_null() {
        out.push(v);
        // SAFETY: pinned; chain versions are alive.
        v = unsafe { (*v).next() };
    }
    if t.storage == VersionStorage::AppendOldToNew {
        out.reverse();
    }
    out
}

/// A logical entry (index, entry key) of one row that GC found stale.
/// Equal when the index is the same object and the key the same bytes.
#[derive(Clone)]
pub(crate) struct Stale(Arc<SecondaryIndex>, Box<[u8]>);

impl PartialEq for Stale {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.0, &o.0) && self.1 == o.1
    }
}

impl Eq for Stale {}

impl Hash for Stale {
    fn hash<H: Hasher>(&self, h: &mut H) {
        Arc::as_ptr(&self.0).hash(h);
        self.1.hash(h);
    }
}

/// GC is about to retire every version of `tuple` older than `survivor`
/// (`storage::prune`, whatever the direction: the tail below it for N2O
/// and the in-place schemes, the prefix before it for O2N): remove the
/// entries only those versions needed. Physical entries of retired
/// versions go at once; a logical key goes (under the row's lock) when no
/// surviving version has it. Called pinned, by the collector.
///
/// ```text
///  newest first: v9 (k=7)  v5 (k=7) | v2 (k=3)     survivor v5
///  surviving keys {7}          retired keys {3} -> (3,pk) removed
/// ```
///
/// Cost: one step per retired version, plus, only when a retired key
/// differs from the survivor's, one per surviving version (those above
/// the horizon; the transaction-level queue cuts each row once per pass,
/// below its newest ready entry). Counted in `Stats::gc_index_steps`.
pub(crate) fn before_cut(t: &TableInner, tuple: u64, survivor: *mut Version, guard: &Guard) {
    let list = t.secondary.load(guard);
    if list.is_empty() {
        return;
    }
    // SAFETY: the survivor is alive until its GC entry is processed.
    let surv = unsafe { &*survivor };
    // The retired versions in chain order: O2N's prefix before the
    // survivor; else the survivor's tail, walked from the survivor itself
    // (the in-place schemes rebuild each image from the newer one's).
    let o2n = t.storage == VersionStorage::AppendOldToNew;
    let (from, until) = if o2n {
        (t.rows.head(tuple), survivor)
    } else {
        (survivor, std::ptr::null_mut())
    };
    let mut surv_vals: Option<Vec<Value>> = None;
    if o2n && !surv.is_tombstone() {
        surv_vals = Some(surv.data().to_vec());
    }
    let mut stale: HashSet<Stale> = HashSet::new();
    let mut physical = Vec::new();
    let (steps, met) = storage::walk_images(from, until, |v, img| {
        if v == survivor {
            surv_vals = img.map(<[Value]>::to_vec);
            return true;
        }
        // Retired versions are committed: None is a tombstone.
        let Some(d) = img else { return true };
        for idx in list {
            let same_as_survivor = !idx.is_physical()
                && surv_vals
                    .as_ref()
                    .is_some_and(|s| idx.columns.iter().all(|&c| d[c] == s[c]));
            if same_as_survivor {
                continue; // the survivor keeps this entry
            }
            let key = idx.entry_key(idx.ident(&t.schema, d), v);
            if idx.is_physical() {
                physical.push((idx, key));
            } else {
                stale.insert(Stale(Arc::clone(idx), key));
            }
        }
        true
    });
    t.secondary.count_gc_steps(steps);
    // An O2N survivor no longer in the chain: `o2n_prune` retires nothing
    // (and the walk went through versions that stay).
    if o2n && !met {
        return;
    }
    for (idx, key) in physical {
        // A physical entry belongs to its version alone.
        idx.tree.remove(&key[..]);
    }
    if stale.is_empty() {
        return;
    }
    // Keys a surviving committed version still has are not stale.
    drop_kept(t, tuple, survivor, &mut stale);
    if stale.is_empty() {
        return;
    }
    remove_stale(t, tuple, stale, survivor);
}

/// Removes from `stale` the keys that a committed version from the newest
/// down to `oldest_kept` (null: the whole chain) has.
fn drop_kept(t: &TableInner, tuple: u64, oldest_kept: *mut Version, stale: &mut HashSet<Stale>) {
    // The kept versions in chain order: from the survivor to the newest
    // (O2N), or from the head down to the survivor.
    let head = t.rows.head(tuple);
    let (from, until) = match (t.storage, oldest_kept.is_null()) {
        (_, true) => (head, std::ptr::null_mut()),
        (VersionStorage::AppendOldToNew, false) => (oldest_kept, std::ptr::null_mut()),
        // SAFETY: pinned; the survivor is alive (see `before_cut`).
        (_, false) => (head, unsafe { (*oldest_kept).next() }),
    };
    let mut indexes: Vec<Arc<SecondaryIndex>> = Vec::new();
    for s in stale.iter() {
        if !indexes.iter().any(|i| Arc::ptr_eq(i, &s.0)) {
            indexes.push(Arc::clone(&s.0));
        }
    }
    let (steps, _) = storage::walk_images(from, until, |_, img| {
        // Tombstones and uncommitted versions have no image here. Skipping
        // an uncommitted one only keeps fewer keys: `remove_stale` decides
        // under the row's write lock, when no uncommitted version exists.
        let Some(d) = img else { return true };
        for idx in &indexes {
            stale.remove(&Stale(Arc::clone(idx), idx.ident(&t.schema, d).into()));
        }
        // Every key found: the older kept versions cannot change that.
        !stale.is_empty()
    });
    t.secondary.count_gc_steps(steps);
}

/// Removes stale logical entries of `tuple` under its write lock, or queues
/// them for a later pass when a writer holds it. `stop` is the oldest
/// surviving version (null: every version in the chain survives).
fn remove_stale(t: &TableInner, tuple: u64, mut stale: HashSet<Stale>, stop: *mut Version) {
    let head = storage::newest(t, tuple);
    // SAFETY: pinned by the caller; heads are alive.
    let locked = unsafe { head.as_ref() }.is_some_and(|h| {
        h.txn_id.compare_exchange(0, GC_TID, SeqCst, SeqCst).is_ok()
            && (storage::newest(t, tuple) == head || {
                h.txn_id.store(0, SeqCst);
                false
            })
    });
    if !locked {
        // A set per row: a row that stays locked across passes does not
        // queue the same entry again and again.
        t.secondary
            .pending
            .lock()
            .entry(tuple)
            .or_default()
            .extend(stale);
        return;
    }
    // Under the lock no version can be added: look again, then remove.
    drop_kept(t, tuple, stop, &mut stale);
    for Stale(idx, key) in &stale {
        idx.tree.remove_if(&key[..], idx.value_for(tuple));
    }
    // SAFETY: we hold the lock on the (alive) head.
    unsafe { (*head).txn_id.store(0, SeqCst) };
}

/// GC holds the lock on a deleted row's tombstone and is about to remove
/// the row's primary entry: remove all its secondary entries first.
pub(crate) fn on_unlink(t: &TableInner, tuple: u64) {
    let guard = epoch::pin();
    let list = t.secondary.load(&guard);
    if !list.is_empty() {
        let (steps, _) =
            storage::walk_images(t.rows.head(tuple), std::ptr::null_mut(), |v, img| {
                // Every version is committed (we hold the tombstone's lock).
                let Some(d) = img else { return true };
                for idx in list {
                    let key = idx.entry_key(idx.ident(&t.schema, d), v);
                    idx.tree.remove_if(&key[..], idx.value_for(tuple));
                }
                true
            });
        t.secondary.count_gc_steps(steps);
    }
    if let Some(stale) = t.secondary.pending.lock().remove(&tuple) {
        for Stale(idx, key) in stale {
            idx.tree.remove_if(&key[..], idx.value_for(tuple));
        }
    }
}

/// Retries stale entries whose rows were locked at their GC pass.
pub(crate) fn retry_pending(t: &TableInner) {
    let work = std::mem::take(&mut *t.secondary.pending.lock());
    if work.is_empty() {
        return;
    }
    let _guard = epoch::pin();
    for (tuple, stale) in work {
        if t.rows.head(tuple).is_null() {
            // Unlinked rows drained their pending entries; an empty slot
            // here is an insert being undone: retry later.
            t.secondary
                .pending
                .lock()
                .entry(tuple)
                .or_default()
                .extend(stale);
            continue;
        }
        remove_stale(t, tuple, stale, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use crate::cc::predicate::{self, PENDING, POISONED};
    use crate::{key, row, Database, Options, Protocol, Schema, Type, Unique, Value};
    use std::sync::atomic::Ordering::SeqCst;

    /// A scanner that published its scan record and is deciding, with a
    /// later commit stamp than a writer that gives one of the scanner's
    /// rows a new entry in the range: the writer leaves the record alone
    /// (the scanner's read of the row carries the edge) and commits. An
    /// entry of a row the scanner did not read still poisons it.
    #[test]
    fn a_deciding_scanner_is_poisoned_only_by_rows_it_did_not_read() {
        for p in [Protocol::SiSsn, Protocol::SiSsi] {
            for (moved, expected) in [(1, PENDING), (4, POISONED)] {
                let db = Database::open(Options::default().protocol(p)).unwrap();
                let t = db
                    .create_table(
                        Schema::new("item")
                            .column("id", Type::Int)
                            .column("cat", Type::Int)
                            .primary_key(&["id"]),
                    )
                    .unwrap();
                db.run(|x| {
                    x.insert(&t, row![1, 100])?;
                    x.insert(&t, row![4, 5000])
                })
                .unwrap();
                let idx = db.create_index("by_cat", &t, &["cat"], Unique::No).unwrap();
                let mut scanner = db.begin().unwrap();
                assert_eq!(
                    scanner.index_scan(&idx, key![0]..key![1000]).unwrap().len(),
                    1
                );
                let mut writer = db.begin().unwrap();
                writer
                    .update(&t, &key![moved], &[("cat", Value::Int(150))])
                    .unwrap();
                // The scanner enters its commit with a stamp above any the
                // writer can draw, and stops before deciding.
                crate::cc::with_cc!(p, P => predicate::publish_pending::<P>(&mut scanner, u64::MAX >> 4));
                writer.commit().unwrap();
                let rec = scanner.scans[0].record.clone().unwrap();
                assert_eq!(rec.state.load(SeqCst), expected, "{p}: row {moved} moved");
            }
        }
    }
}
