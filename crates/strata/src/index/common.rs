//! What today's index kinds share: an entry leads to a row, and storage
//! answers which version of it a reader sees.
//!
//! An entry's key is `enc(index key) ++ enc(primary key)`, its *identity*,
//! plus whatever the kind appends (physical: the version's address); its
//! value names the row (see [`EntryScheme`]). Entries are added under the
//! row's write lock, inserted before a unique check looks at the other
//! entries of the same index key (two concurrent claimers see each
//! other's), and listed in the transaction's [`SecWrites`] so that an
//! abort removes them before the versions they serve are retired.
//!
//! Phantoms. An index scan of a read-write transaction reads every row with
//! an entry in the range (so any later change to those rows is caught by the
//! protocol's read tracking) and remembers the entries' identities. The
//! serializable protocols then treat the index range like a primary-key
//! range: MVOCC, MV2PL, SSN and SSI re-scan it at commit ([`validate`]),
//! SSN and SSI leave a scan record on the index for writers that add
//! entries later, and MVTO raises the index's predicate timestamp, which an
//! older writer adding an entry must not be below.
//!
//! A phantom is an entry not seen, not ours, *and not of a row we read*
//! (`cc::predicate::accounted_rows`). An update of an indexed column gives
//! a row a new entry; if we read the row, the protocol's read tracking
//! already orders us before that update (or refuses us), exactly as for an
//! update through the primary key, so counting the entry again only
//! refused transactions that saw no phantom. The same rows excuse a writer
//! from poisoning the scan record of a scanner still deciding. A row the
//! scan read but lost (the version read has a key in the range that the
//! scan passed before the entry went in) is not one of them: that change
//! came before our read ([`ScanReads::finish`]).
//!
//! ```text
//!  T1 reads rows 1, 2; scans cat [0, 1000): entries (100,1) (200,2)
//!  T2 sets cat 150, 160 on rows 1, 2 and commits: entries (150,1) (160,2) new
//!  T1 commits: rows 1 and 2 were read -> no phantom (T1 before T2)
//!  a new entry of row 4, which T1 never read, would be one
//! ```

use super::secondary::SecondaryIndex;
use super::table::TableInner;
use super::{IndexTxn, ScanMode};
use crate::error::{ConflictKind, Error, Result};
use crate::index::key::{ByteKey, EncodedKey};
use crate::storage::version::GC_TID;
use crate::storage::version::{Version, TID_MARK};
use crate::storage::{self, PrunePlan, Span};
use crate::value::{Key, Value};
use crossbeam_epoch as epoch;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use thin_vec::ThinVec;

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

/// The entries a transaction added. A one-word `ThinVec`: most
/// transactions add none (see `Transaction::scans`).
pub(crate) type SecWrites = ThinVec<SecWrite>;

/// The secondary-index part of a predicate read.
#[derive(Clone)]
pub(crate) struct SecScan {
    pub index: Arc<SecondaryIndex>,
    /// Identities (index key ++ primary key) of the entries seen, sorted.
    /// A shortcut, not a second rule: a seen entry's row is in `read` too,
    /// so re-validation skips resolving it and, if every entry was seen,
    /// computing the accounted rows at all.
    pub seen: Idents,
    /// Rows (tuple ids) the scan read a visible version of, sorted: a new
    /// entry of one of them is a change to a row we read, which the
    /// protocol's read tracking catches, not a phantom. Not a row the scan
    /// lost (see `ScanReads::finish`).
    pub read: Vec<u64>,
    /// `seen` and `read` are known to be in order: a whole scan's are
    /// (`ScanReads::finish` sorts them), so re-validation need not check
    /// them again (twice a commit: comparing a by-name lookup's 13
    /// identities pairwise cost a TPC-C Payment about 440 instructions);
    /// a walk's steps absorbed in walk order are not.
    pub sorted: bool,
    /// The index's count of added entries (`secondary::Additions`) when
    /// the scan began, kept only if every entry the scan met led to a
    /// row it saw (a logical kind's whole scan; None elsewhere). If the
    /// count is the same at commit, no entry went in since, so every
    /// entry in the range then is one the scan saw (or a row's whose
    /// entry left): re-validation would find no phantom, and a protocol
    /// whose scan records order later inserters (SSN, SSI) skips it
    /// (`cc::predicate::validate_scans`). A by-name TPC-C lookup's
    /// re-scan was about 3,600 instructions a commit.
    pub additions_at: Option<u64>,
}

impl SecScan {
    /// This read with `seen` and `read` sorted, as
    /// re-validation looks them up: a lazy range (`Transaction::index_range`)
    /// appends each step's as it goes, from either end, so its lists are
    /// in walk order; a whole scan's are sorted already (no copy then).
    pub fn sorted(&self) -> std::borrow::Cow<'_, SecScan> {
        if self.sorted {
            debug_assert!(self.seen.is_sorted() && self.read.is_sorted());
            return std::borrow::Cow::Borrowed(self);
        }
        let ordered = |n: usize, le: &dyn Fn(usize) -> bool| (1..n).all(le);
        let read_ok = ordered(self.read.len(), &|i| self.read[i - 1] <= self.read[i]);
        if self.seen.is_sorted() && read_ok {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut s = self.clone();
        s.seen.sort_dedup();
        s.read.sort_unstable();
        s.read.dedup();
        s.sorted = true;
        std::borrow::Cow::Owned(s)
    }

    /// Adds what a later step of the same walk read.
    pub fn absorb(&mut self, other: SecScan) {
        self.seen.extend(&other.seen);
        self.read.extend(other.read);
        self.sorted = false;
        self.additions_at = None;
    }
}

/// Identities (index key ++ primary key), packed: one buffer and a span
/// each. A scan keeps one for every visible row it meets (a TPC-C by-name
/// lookup: 13), and a box each was an allocation and a free apiece.
#[derive(Clone, Default, Debug)]
pub(crate) struct Idents {
    bytes: Vec<u8>,
    /// Where each identity lies in `bytes`, in the order kept.
    spans: Vec<(usize, usize)>,
}

impl Idents {
    pub fn push(&mut self, id: &[u8]) {
        if self.spans.capacity() == 0 {
            // Room for a by-name lookup's dozen at once, not a series of
            // doublings (five reallocations of the bytes for 13 rows).
            self.spans.reserve(ReadRows::FIRST);
            self.bytes.reserve(ReadRows::FIRST * id.len());
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(id);
        self.spans.push((start, self.bytes.len()));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Identity `i` in the order kept.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.spans.get(i).map(|&x| self.at(x))
    }

    fn at(&self, (s, e): (usize, usize)) -> &[u8] {
        &self.bytes[s..e]
    }

    pub fn is_sorted(&self) -> bool {
        self.spans
            .windows(2)
            .all(|w| self.at(w[0]) <= self.at(w[1]))
    }

    /// Sorts the identities and drops repeats (the bytes stay where they
    /// are; only the spans move).
    pub fn sort_dedup(&mut self) {
        let b = &self.bytes;
        let id = |x: &(usize, usize)| &b[x.0..x.1];
        self.spans.sort_unstable_by(|x, y| id(x).cmp(id(y)));
        self.spans.dedup_by(|x, y| id(x) == id(y));
    }

    pub fn extend(&mut self, other: &Idents) {
        let off = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.spans
            .extend(other.spans.iter().map(|&(s, e)| (s + off, e + off)));
    }

    /// Whether the (sorted) identities hold `id`.
    pub fn contains(&self, id: &[u8]) -> bool {
        self.spans.binary_search_by(|&x| self.at(x).cmp(id)).is_ok()
    }
}

/// How a kind whose entries lead to rows lays them out.
pub(crate) trait EntryScheme {
    /// An insert found our entry key present with another value: whether
    /// ours replaces it (tuple ids: a dead row with the same primary key
    /// left it and GC has not removed it yet).
    const REPLACES_OTHER_VALUE: bool;

    /// The entry key for version `v` with identity `ident`.
    fn entry_key(ident: Vec<u8>, v: *mut Version) -> Box<[u8]>;
    /// The identity part of an entry key.
    fn ident_of(key: &[u8]) -> &[u8];
    /// The entry's value for a row in `tuple`.
    fn value_for(tuple: u64) -> u64;
    /// The tuple an entry leads to (None: the row is gone).
    fn resolve(t: &TableInner, idx: &SecondaryIndex, key: &[u8], value: u64) -> Option<u64>;
}

// ------------------------------------------------------------------ writes

/// Adds entries for version `v` of `tuple` with row `new` to every live
/// index in `list`, and checks unique indexes. With `old` (the row the
/// write replaces; logical pointers), an index whose columns the write
/// leaves alone is skipped: the row has that entry already. On error the
/// entries added here are removed again.
pub(super) fn add_entries<K: EntryScheme, C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    list: &[Arc<SecondaryIndex>],
    tuple: u64,
    v: *mut Version,
    new: &[Value],
    old: Option<&[Value]>,
) -> Result<()> {
    let mark = cx.sec_writes().len();
    for idx in list {
        if idx.dropped.load(SeqCst) {
            continue;
        }
        if let Some(o) = old {
            if idx.columns.iter().all(|&c| o[c] == new[c]) {
                continue;
            }
        }
        // An update moving the row to a new key: its old entry stays (for
        // old snapshots), noted before the new entry goes in (see
        // `SecondaryIndex::may_be_stale`; the model's switch notes it after).
        let note_late = crate::sync::broken(crate::sync::Break::StaleNotedAfterEntry);
        if old.is_some() && !note_late {
            idx.note_stale();
        }
        let added = add_entry::<K, C>(cx, t, idx, tuple, v, new);
        if old.is_some() && note_late {
            idx.note_stale();
        }
        if let Err(e) = added {
            for w in cx.sec_writes().drain(mark..) {
                remove_added(&w);
            }
            return Err(e);
        }
    }
    Ok(())
}

fn add_entry<K: EntryScheme, C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    idx: &Arc<SecondaryIndex>,
    tuple: u64,
    v: *mut Version,
    new: &[Value],
) -> Result<()> {
    let ident = idx.ident(&t.schema, new);
    let key = K::entry_key(ident.clone(), v);
    let value = K::value_for(tuple);
    let added = loop {
        match idx.tree.insert(&key, value) {
            Ok(()) => break true,
            // The row already has this key (logical pointers), or the
            // kind's rule lets ours replace another row's dead entry.
            Err(o) if o != value && K::REPLACES_OTHER_VALUE => {
                idx.note_stale();
                idx.tree.remove_if(&key, o);
            }
            Err(_) => break false,
        }
    };
    if added {
        cx.sec_writes().push(SecWrite {
            index: Arc::clone(idx),
            key,
            value,
            version: v,
            tuple,
        });
        // A new key in the index's key space: an older transaction's
        // scan of it may forbid it (MVTO's index predicate timestamp).
        cx.check_insert(&idx.predicate_read_ts)
            .map_err(Error::Conflict)?;
    }
    // Nulls are distinct (as in SQL): a key holding one is never a duplicate.
    if idx.unique && !idx.columns.iter().any(|&c| new[c].is_null()) {
        let ikey_len = idx.ikey_len(&ident);
        unique_check::<K, C>(cx, t, idx, &ident, ikey_len, tuple)?;
    }
    Ok(())
}

/// After our entry for `ident` is in the unique index: refuse if another
/// row holds the same index key in its newest state. A row locked by
/// another writer may be taking the key right now: a conflict.
fn unique_check<K: EntryScheme, C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    idx: &SecondaryIndex,
    ident: &[u8],
    ikey_len: usize,
    tuple: u64,
) -> Result<()> {
    let ikey = &ident[..ikey_len];
    let my_pk = &ident[ikey_len..];
    let (tid, ts) = (cx.tid(), cx.snapshot_ts());
    for (k, val) in idx.with_ikey(ikey) {
        let kid = K::ident_of(&k);
        if &kid[ikey_len..] == my_pk {
            continue; // our own row
        }
        let Some(other) = K::resolve(t, idx, &k, val) else {
            continue;
        };
        if other == tuple {
            continue;
        }
        let head = storage::newest(t, other);
        // SAFETY: pinned by the caller; heads are alive.
        let Some(h) = (unsafe { head.as_ref() }) else {
            continue;
        };
        let locker = h.txn_id.load(SeqCst);
        if locker != 0 && locker != GC_TID && locker != tid {
            return Err(Error::Conflict(ConflictKind::WriteWrite));
        }
        if h.is_tombstone() || !storage::with_values(h, |d| idx.ident_matches(&t.schema, d, kid)) {
            continue; // stale entry, or a reused tuple
        }
        if locker != tid {
            let b = h.begin.load(SeqCst);
            if b & TID_MARK == 0 && b > ts {
                // The holder committed after our snapshot: for us the key
                // is free, yet we cannot take it (MV2PL reads the newest
                // state, so for it this is a plain duplicate).
                if let Some(k) = C::NEWER_THAN_SNAPSHOT {
                    return Err(Error::Conflict(k));
                }
            }
        }
        return Err(duplicate(cx, t, idx, other));
    }
    Ok(())
}

/// A duplicate answer depends on the holder's version: read it under
/// the protocol (a conflict there wins).
pub(super) fn duplicate<C: IndexTxn>(
    cx: &mut C,
    t: &TableInner,
    idx: &SecondaryIndex,
    holder: u64,
) -> Error {
    if !cx.is_own(storage::newest(t, holder)) {
        if let Err(e) = cx.read_row(t, holder) {
            return e;
        }
    }
    // SAFETY: pinned by the caller.
    let key = match unsafe { storage::newest(t, holder).as_ref() } {
        Some(h) if !h.is_tombstone() => storage::with_values(h, |d| {
            Key(idx.columns.iter().map(|&c| d[c].clone()).collect()).to_string()
        }),
        _ => "?".into(),
    };
    Error::DuplicateKey {
        table: format!("{} (unique index {})", t.schema.name, idx.name),
        key,
    }
}

/// Undoes an entry a transaction added (an abort, a failed write, an own
/// version replaced by one without the key).
pub(super) fn remove_added(w: &SecWrite) {
    // (Its row id may go to another row.)
    w.index.note_stale();
    w.index.tree.remove_if(&w.key, w.value);
}

// ------------------------------------------------------------------- reads

/// A scan's reads of the rows its entries lead to, and what it saw.
pub(super) struct ScanReads<'a> {
    mode: ScanMode<'a>,
    /// Read-write: each row is read once per scan (its bookkeeping is not
    /// repeated), null when nothing was visible, and whether the scan
    /// handed it to the caller.
    read: ReadRows,
    seen: Idents,
    /// See [`SecScan::additions_at`]: set by a kind that counts on it.
    additions_at: Option<u64>,
    /// An entry led to no row the scan saw (see [`ScanReads::missed`]).
    missed: bool,
}

/// The rows a scan read: (tuple, version read, handed to the caller), in
/// the order read. A row is looked for before each read (a row met twice
/// keeps the version read first), and nearly always it is not there: a
/// 256-bit filter of the tuples read answers that at once, and only a hit
/// searches along the list, while it is short; past `SHORT` rows a map
/// takes over.
///
/// ```text
///  tuple ──hash──> bit b   bit clear: not read   set: search list (or map)
/// ```
///
/// (A map from the first row cost a TPC-C by-name lookup, 13 rows, a hash
/// insert each and three rehashes; a map from the 17th row cost the
/// lookups of popular names, 20 to 30 rows, 750 instructions; the list
/// searched on every read cost 44 a row.)
#[derive(Default)]
struct ReadRows {
    list: Vec<(u64, *mut Version, bool)>,
    /// Bit `bit(t)` set for every tuple `t` in `list`.
    filter: [u64; 4],
    /// Tuple to its place in `list`, once `list` is longer than `SHORT`.
    /// (Tuple ids are not chosen by users: no need for a keyed hash.)
    map: FxHashMap<u64, usize>,
    /// Where in `list` the row read last is.
    last: usize,
}

impl ReadRows {
    /// Rows the first allocation has room for (a by-name lookup's dozen).
    const FIRST: usize = 16;
    const SHORT: usize = 64;

    /// The filter bit of `tuple` (Fibonacci hashing: the top byte of the
    /// product spreads consecutive tuple ids).
    #[inline]
    fn bit(tuple: u64) -> (usize, u64) {
        let h = (tuple.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize;
        (h >> 6, 1 << (h & 63))
    }

    #[inline]
    fn find(&self, tuple: u64) -> Option<usize> {
        let (w, b) = Self::bit(tuple);
        if self.filter[w] & b == 0 {
            return None;
        }
        if self.list.len() <= Self::SHORT {
            self.list.iter().position(|r| r.0 == tuple)
        } else {
            self.map.get(&tuple).copied()
        }
    }

    /// Adds a row not read before.
    fn add(&mut self, tuple: u64, v: *mut Version) {
        if self.list.capacity() == 0 {
            self.list.reserve(Self::FIRST);
        }
        let (w, b) = Self::bit(tuple);
        self.filter[w] |= b;
        self.list.push((tuple, v, false));
        let n = self.list.len();
        self.last = n - 1;
        if n == Self::SHORT + 1 {
            self.map = self
                .list
                .iter()
                .enumerate()
                .map(|(i, r)| (r.0, i))
                .collect();
        } else if n > Self::SHORT + 1 {
            self.map.insert(tuple, n - 1);
        }
    }
}

impl<'a> ScanReads<'a> {
    pub fn new(mode: ScanMode<'a>) -> Self {
        ScanReads {
            mode,
            read: ReadRows::default(),
            seen: Idents::default(),
            additions_at: None,
            missed: false,
        }
    }

    /// The scan is about to meet its first entry: `total` reads the
    /// index's count of added entries (`secondary::Additions::total`)
    /// now, if the scan records what it read.
    pub fn counts_additions(&mut self, total: impl FnOnce() -> u64) {
        if self.mode.record {
            self.additions_at = Some(total());
        }
    }

    /// An entry the scan met led to no row it saw (none visible, or none
    /// at all): re-validation might count it as a phantom, so it must run.
    #[inline]
    pub fn missed(&mut self) {
        self.missed = true;
    }

    /// The version of `tuple` the scanning transaction sees (null: none).
    #[inline]
    pub fn read<C: IndexTxn>(
        &mut self,
        cx: &mut C,
        t: &TableInner,
        tuple: u64,
    ) -> Result<*mut Version> {
        if !self.mode.rw {
            // A snapshot read has no bookkeeping to repeat: no cache.
            return cx.read_row(t, tuple);
        }
        if let Some(i) = self.read.find(tuple) {
            self.read.last = i;
            return Ok(self.read.list[i].1);
        }
        let v = cx.read_row(t, tuple)?;
        self.read.add(tuple, v);
        Ok(v)
    }

    /// Whether the scan handed `tuple`'s version to the caller already.
    #[inline]
    pub fn was_handed(&self, tuple: u64) -> bool {
        self.read.find(tuple).is_some_and(|i| self.read.list[i].2)
    }

    /// The scan handed the version of `tuple` it read to the caller.
    #[inline]
    pub fn handed(&mut self, tuple: u64) {
        // (Usually the row just read: no search along the list.)
        let last = self.read.last;
        let i = match self.read.list.get(last) {
            Some(r) if r.0 == tuple => Some(last),
            _ => self.read.find(tuple),
        };
        if let Some(i) = i {
            self.read.list[i].2 = true;
        }
    }

    /// The entry with identity `ident` led to a visible version.
    #[inline]
    pub fn saw(&mut self, ident: &[u8]) {
        if self.mode.record {
            // We read this row, so later changes to it are the read
            // tracking's business; only new identities are phantoms.
            self.seen.push(ident);
        }
    }

    /// What the commit re-validates, if the mode records. The scan read
    /// `[lo, hi]` and, if the caller stopped it, the identities up to
    /// `stopped_at`. The caller is pinned (the versions read are alive).
    ///
    /// A row read but not handed over whose version read has its identity
    /// in that range is left out of the rows read: the scan lost it. It
    /// reached the row through another identity's entry (a key the row
    /// had, or, MV-PBT, a record naming a tuple id since given to another
    /// row), and the version that put the row under its own identity came
    /// after the scan passed that identity's place (or listed the range)
    /// but before the read. Only a protocol reading the newest data (MV2PL,
    /// OCC) reads such a version, and then no read tracking orders us
    /// before the change: its entry must count as a phantom. Counted as
    /// read, the row excused it, and a scan that lost a committed row
    /// committed (`tests/secondary_cc.rs`,
    /// `a_row_moved_behind_a_running_index_scan_is_not_lost`). A scan that
    /// is one step of a longer walk (`ScanMode::passed`) lost a row whose
    /// identity lies where that walk has been, at either end, not only in
    /// this step's range: a lazy range steps with no pin between steps, so
    /// a row can move behind it at any time.
    pub fn finish(
        self,
        t: &TableInner,
        idx: &Arc<SecondaryIndex>,
        lo: &Bound<EncodedKey>,
        hi: &Bound<EncodedKey>,
        stopped_at: Option<&[u8]>,
    ) -> Option<SecScan> {
        if !self.mode.record {
            return None;
        }
        let mut seen = self.seen;
        // (A forward scan met them in order.)
        if !seen.is_sorted() {
            seen.sort_dedup();
        }
        let lost = |v: *mut Version| {
            // SAFETY: pinned by the caller; read during this scan.
            let r = unsafe { &*v };
            !r.is_tombstone()
                && storage::with_values(r, |d| {
                    let own = idx.ident(&t.schema, d);
                    match self.mode.passed {
                        Some(passed) => passed(&own),
                        None => in_range(&own, lo, hi) && stopped_at.is_none_or(|s| own[..] <= *s),
                    }
                })
        };
        let mut rows: Vec<u64> = Vec::with_capacity(self.read.list.len());
        rows.extend(
            (self.read.list.iter())
                .filter(|&&(_, v, handed)| !v.is_null() && (handed || !lost(v)))
                .map(|&(tuple, ..)| tuple),
        );
        rows.sort_unstable();
        Some(SecScan {
            index: Arc::clone(idx),
            seen,
            read: rows,
            sorted: true,
            additions_at: self
                .additions_at
                .filter(|_| !self.missed && self.mode.passed.is_none()),
        })
    }
}

/// Whether identity (or entry key) `k` lies in the byte bounds `[lo, hi]`.
fn in_range(k: &[u8], lo: &Bound<EncodedKey>, hi: &Bound<EncodedKey>) -> bool {
    let k = EncodedKey::Bytes(crate::index::key::ByteKey::from_slice(k));
    (lo.as_ref(), hi.as_ref()).contains(&k)
}

/// [`SecondaryIndexKind::batch`](super::SecondaryIndexKind::batch) for a
/// kind whose entries sit in the index's tree. From the high end it steps
/// leftwards a leaf at a time with [`SecondaryIndex::fence_below`], as the
/// primary index does (`PrimaryIndex::batch_from_high`): the tree keeps
/// no left links, and a forward walk from a fence sees every entry present
/// meanwhile (keys only move right).
pub(super) fn batch<K: EntryScheme>(
    idx: &SecondaryIndex,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    from_high: bool,
    max: usize,
    out: &mut VecDeque<Box<[u8]>>,
) -> Option<(Bound<EncodedKey>, Bound<EncodedKey>)> {
    let guard = epoch::pin();
    let bytes = |b: &[u8]| EncodedKey::Bytes(ByteKey::from_slice(b));
    if !from_high {
        let mut last: Option<&[u8]> = None;
        let mut n = 0;
        for (k, _) in idx.entries(lo, hi, &guard) {
            let id = K::ident_of(k);
            if last == Some(id) {
                continue; // the same row's next entry (physical: a version)
            }
            if n == max {
                return Some((Bound::Included(bytes(id)), hi.clone()));
            }
            out.push_back(id.into());
            (last, n) = (Some(id), n + 1);
        }
        return None;
    }
    let mut hi = hi.clone();
    loop {
        let fence = idx.fence_below(&hi, &guard);
        let from = match fence {
            Some(f) if above(&f, lo) => Bound::Included(f),
            _ => lo.clone(),
        };
        let mut ids: Vec<&[u8]> = Vec::new();
        for (k, _) in idx.entries(&from, &hi, &guard) {
            let id = K::ident_of(k);
            if ids.last() != Some(&id) {
                ids.push(id);
            }
        }
        // The lowest identity may have entries below the fence: the rest
        // ends below the identity, so they are this batch's.
        let lowest = ids.first().map(|id| bytes(id));
        out.extend(ids.into_iter().rev().map(Box::from));
        let Bound::Included(fence) = from.clone() else {
            return None;
        };
        if from == *lo {
            return None;
        }
        match lowest {
            Some(l) => return Some((lo.clone(), Bound::Excluded(l))),
            // A leaf emptied since the descent: go on below it.
            None => hi = Bound::Excluded(fence),
        }
    }
}

/// Whether `k` lies above the start of a range that begins at `lo`.
fn above(k: &EncodedKey, lo: &Bound<EncodedKey>) -> bool {
    match lo {
        Bound::Included(l) | Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }
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
pub(super) fn validate<K: EntryScheme>(
    t: &TableInner,
    sec: &SecScan,
    lo: &Bound<EncodedKey>,
    hi: &Bound<EncodedKey>,
    own: &[SecWrite],
    accounted: impl FnOnce() -> Vec<u64>,
) -> bool {
    let idx = &sec.index;
    let mut unseen = Unseen::new(t, accounted);
    let guard = epoch::pin();
    // `seen` is sorted and the entries come in key order, their identities
    // (a key, or a key's prefix that ends where its encoding does) with
    // them: one cursor through `seen`, not a search an entry (a binary
    // search of a by-name lookup's 13 identities was 1,600 instructions a
    // TPC-C Payment).
    let mut at = 0;
    for (k, val) in idx.entries(lo, hi, &guard) {
        let ident = K::ident_of(k);
        if seen_at(&sec.seen, &mut at, ident) {
            continue;
        }
        if own
            .iter()
            .any(|w| Arc::ptr_eq(&w.index, idx) && *w.key == *k)
        {
            continue;
        }
        let Some(tuple) = K::resolve(t, idx, k, val) else {
            continue;
        };
        if unseen.is_phantom(tuple) {
            return false;
        }
    }
    true
}

/// Whether sorted `seen` holds `ident`, looked for from `*at` on and
/// leaving `*at` at the first identity not below it: called with
/// identities in ascending order, it walks `seen` once.
fn seen_at(seen: &Idents, at: &mut usize, ident: &[u8]) -> bool {
    while let Some(s) = seen.get(*at) {
        match s.cmp(ident) {
            std::cmp::Ordering::Less => *at += 1,
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Greater => return false,
        }
    }
    false
}

/// The last step of every kind's commit-time re-scan: a row the scan did
/// not see (and the transaction did not write) is a phantom unless it is
/// gone (an aborted insert being undone) or the transaction's read
/// tracking accounts for it (`accounted`, computed once, on first need).
pub(super) struct Unseen<'a, F: FnOnce() -> Vec<u64>> {
    t: &'a TableInner,
    accounted: Option<F>,
    rows: Option<Vec<u64>>,
}

impl<'a, F: FnOnce() -> Vec<u64>> Unseen<'a, F> {
    pub(super) fn new(t: &'a TableInner, accounted: F) -> Self {
        Unseen {
            t,
            accounted: Some(accounted),
            rows: None,
        }
    }

    pub(super) fn is_phantom(&mut self, tuple: u64) -> bool {
        if self.t.rows.head(tuple).is_null() {
            return false;
        }
        let accounted = &mut self.accounted;
        let rows = self
            .rows
            .get_or_insert_with(|| accounted.take().expect("computed once")());
        rows.binary_search(&tuple).is_err()
    }
}

// ---------------------------------------------------------------------- GC

/// Walks the versions `storage::prune` retires under `plan`, calling
/// `f(survivor's row, version, its row)` for each retired non-tombstone
/// version (retired versions are committed). `OlderThan(survivor)` (N2O
/// and the in-place schemes: the tail below it; O2N: the prefix before it)
/// passes the survivor's row; `Versions(set)` (any committed versions,
/// e.g. a dead zone in the middle) has no single survivor and passes
/// `None`. Chains are read with `storage::chain`, newest first whatever
/// the direction: one step per version, counted in
/// `Stats::gc_index_steps`. Returns false when the prune retires nothing
/// because the survivor is no longer in the chain (O2N: a later cut got
/// there first).
///
/// The survivor's row `f` gets holds only the columns in `keep`
/// ([`Kept`]): it is a copy, made while the chain walks on, and a whole
/// one cloned every text of the row (a TPC-C customer: a dozen reference
/// counts up and down again, about 700 instructions a prune, to compare
/// four index columns).
pub(super) fn walk_retired(
    t: &TableInner,
    tuple: u64,
    plan: PrunePlan<'_>,
    keep: &[usize],
    mut f: impl FnMut(Option<&Kept>, *mut Version, &[Value]),
) -> bool {
    let survivor = match plan {
        PrunePlan::OlderThan(s) => s,
        PrunePlan::Versions(gone) => {
            let mut chain = storage::chain(t, tuple, Span::ALL);
            // (Victims are distinct: once all are met, the rest of the
            // chain holds none. A first prune's victim lies near the head.)
            let mut left = gone.len();
            while left > 0 {
                let Some((v, img)) = chain.step() else { break };
                if !PrunePlan::names(gone, v) {
                    continue;
                }
                left -= 1;
                if let Some(d) = img {
                    f(None, v, d);
                }
            }
            t.secondary.count_gc_steps(chain.steps());
            return true;
        }
    };
    let mut surv_vals: Option<Kept> = None;
    let mut met = false;
    let mut chain = storage::chain(t, tuple, Span::start_at(survivor));
    while let Some((v, img)) = chain.step() {
        if v == survivor {
            met = true;
            surv_vals = img.map(|d| Kept(keep.iter().map(|&c| (c, d[c].clone())).collect()));
            continue;
        }
        // Retired versions are committed: None is a tombstone.
        if let Some(d) = img {
            f(surv_vals.as_ref(), v, d);
        }
    }
    t.secondary.count_gc_steps(chain.steps());
    met
}

/// The survivor's values of the columns [`walk_retired`] was asked to
/// keep, by column: a row as wide as the table, nulls but for those, was
/// allocated, filled and dropped a prune (a TPC-C customer's 21 columns:
/// about 900 instructions).
pub(super) struct Kept(smallvec::SmallVec<[(usize, Value); 8]>);

impl Kept {
    /// Column `c`'s value, if it was kept.
    pub fn get(&self, c: usize) -> Option<&Value> {
        self.0.iter().find(|(k, _)| *k == c).map(|(_, v)| v)
    }
}

/// Removes every entry of the versions of `tuple` (all committed: GC holds
/// the row's tombstone lock) from the indexes in `list`.
pub(super) fn remove_row_entries<K: EntryScheme>(
    t: &TableInner,
    list: &[Arc<SecondaryIndex>],
    tuple: u64,
) {
    if list.is_empty() {
        return;
    }
    let mut chain = storage::chain(t, tuple, Span::ALL);
    while let Some((v, img)) = chain.step() {
        let Some(d) = img else { continue };
        for idx in list {
            let key = K::entry_key(idx.ident(&t.schema, d), v);
            idx.tree.remove_if(&key[..], K::value_for(tuple));
        }
    }
    t.secondary.count_gc_steps(chain.steps());
}

/// Every version of `tuple`, newest first, whatever the chain's direction
/// (O2N links oldest to newest). The caller is pinned.
pub(super) fn versions_newest_first(t: &TableInner, tuple: u64) -> Vec<*mut Version> {
    storage::versions(t, tuple, Span::ALL).collect()
}

// --------------------------------------------------------------------- DDL

/// Adds an entry for every committed version of `t` to `idx` (GC paused:
/// chain versions stay allocated). Uncommitted versions belong to
/// transactions that began after the index was published and maintain
/// their own entries.
pub(super) fn backfill<K: EntryScheme>(t: &TableInner, idx: &SecondaryIndex) {
    let guard = epoch::pin();
    let mut n = 0u64;
    t.rows.for_each_head(|tuple, head| {
        // Every version is indexed, so a row may get several entries.
        idx.note_stale();
        let mut v = head;
        while !v.is_null() {
            // SAFETY: pinned, GC paused: chain versions stay allocated.
            let r = unsafe { &*v };
            if !r.is_tombstone() && r.begin.load(SeqCst) & TID_MARK == 0 {
                // None only for a SIRO version pruned at relocation (dead,
                // its image gone, `storage::siro`): nothing to index.
                if let Some(ident) = storage::try_with_values(r, |d| idx.ident(&t.schema, d)) {
                    let key = K::entry_key(ident, v);
                    let _ = idx.tree.insert(&key, K::value_for(tuple));
                }
            }
            v = r.next();
        }
        n += 1;
        if n.is_multiple_of(4096) {
            guard.flush();
        }
    });
}

/// No two rows may hold one key of `idx` in their newest state
/// (uncommitted heads count too, conservatively).
pub(super) fn check_unique<K: EntryScheme>(t: &TableInner, idx: &SecondaryIndex) -> Result<()> {
    let _guard = epoch::pin();
    let all = idx.range(&Bound::Unbounded, &Bound::Unbounded);
    let mut i = 0;
    while i < all.len() {
        let ikey_len = idx.ikey_len(&all[i].0);
        let ikey = &all[i].0[..ikey_len];
        let mut holders: Vec<&[u8]> = Vec::new();
        let mut j = i;
        while j < all.len() && all[j].0.starts_with(ikey) && idx.ikey_len(&all[j].0) == ikey_len {
            let (k, val) = &all[j];
            let ident = K::ident_of(k);
            if let Some(tuple) = K::resolve(t, idx, k, *val) {
                // A version that left the row after we listed it: the row
                // changed, look at it again.
                let holds = loop {
                    let chain = versions_newest_first(t, tuple);
                    if let Some(h) = newest_state_holds(t, idx, &chain, ident) {
                        break h;
                    }
                };
                let pk = &ident[ikey_len..];
                if holds && !holders.contains(&pk) {
                    holders.push(pk);
                }
            }
            j += 1;
        }
        // Nulls are distinct: rows sharing a key with a null never clash.
        if holders.len() > 1 && !crate::index::key::any_null(ikey, idx.columns.len()) {
            return Err(Error::DuplicateKey {
                table: format!("{} (unique index {})", t.schema.name, idx.name),
                key: "two rows share an index key".into(),
            });
        }
        i = j;
    }
    Ok(())
}

/// Whether a row, its versions `chain` (newest first, as listed a moment
/// ago), holds entry `ident` in its newest state: its newest version, and
/// below an uncommitted one the newest committed version. None when one of
/// them has left the row since (cut by GC, undone or replaced by its
/// writer) and could not be read.
///
/// Nothing but the epoch pin holds these versions: the check runs with GC
/// going (it cuts below the newest committed version once the horizon
/// passes a newer one) and takes no snapshot, and the head may be
/// uncommitted. An in-place version gone from its row cannot be rebuilt
/// from the master, and reading it with `storage::with_values` waited on
/// the seqlock for good (the "seqlock reader cannot reach its version"
/// assertion under load, in tests/gc_secondary.rs).
fn newest_state_holds(
    t: &TableInner,
    idx: &SecondaryIndex,
    chain: &[*mut Version],
    ident: &[u8],
) -> Option<bool> {
    let mut holds = false;
    for &v in chain.iter().take(2) {
        // SAFETY: pinned by the caller; listed versions are freed only
        // through an epoch.
        let r = unsafe { &*v };
        if !r.is_tombstone() {
            holds |= storage::try_with_values(r, |d| idx.ident_matches(&t.schema, d, ident))?;
        }
        if r.begin.load(SeqCst) & TID_MARK == 0 {
            break;
        }
    }
    Some(holds)
}

#[cfg(test)]
mod tests {
    use crate::index::scan_log::{PENDING, POISONED};
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
                crate::cc::with_cc!(p, P => crate::cc::predicate::publish_pending::<P>(&mut scanner, u64::MAX >> 4));
                writer.commit().unwrap();
                let rec = scanner.scans[0].record.clone().unwrap();
                assert_eq!(rec.state.load(SeqCst), expected, "{p}: row {moved} moved");
            }
        }
    }
}

#[cfg(test)]
mod seen_tests {
    /// The cursor answers as a search would for identities in ascending
    /// order, repeats included (a physical index's versions share one).
    #[test]
    fn the_seen_cursor_agrees_with_a_search() {
        // Pushed out of order and repeated, then sorted as `finish` does.
        let mut seen = super::Idents::default();
        for id in [&b"f"[..], b"d2", b"b", b"d", b"b"] {
            seen.push(id);
        }
        assert!(!seen.is_sorted());
        seen.sort_dedup();
        assert!(seen.is_sorted());
        assert_eq!(seen.len(), 4, "{seen:?}");
        let mut at = 0;
        let ids: [&[u8]; 10] = [b"a", b"b", b"b", b"c", b"d", b"d1", b"d2", b"e", b"f", b"g"];
        for id in ids {
            let held = [&b"b"[..], b"d", b"d2", b"f"].contains(&id);
            assert_eq!(seen.contains(id), held, "{id:?}");
            assert_eq!(super::seen_at(&seen, &mut at, id), held, "{id:?}");
        }
        assert_eq!(at, seen.len(), "walked to the end");
    }
}

#[cfg(test)]
mod read_rows_tests {
    /// Rows are found by tuple before and after the list outgrows its
    /// linear search (the map is built from the list at that point), and
    /// rows not added are not, whatever their filter bits say: 200 rows
    /// set most of the 256 bits, so many misses pass the filter.
    #[test]
    fn read_rows_find_what_was_added_short_and_long() {
        let mut r = super::ReadRows::default();
        for n in 0..200u64 {
            let tuple = n * 7 + 3;
            assert_eq!(r.find(tuple), None, "{n}: not read yet");
            r.add(tuple, std::ptr::null_mut());
            for m in 0..=n {
                assert_eq!(r.find(m * 7 + 3), Some(m as usize), "{n}/{m}");
            }
            for miss in (0..50).map(|m| m * 7 + 4) {
                assert_eq!(r.find(miss), None, "{n}: {miss} was never added");
            }
        }
        assert_eq!(r.map.len(), 200, "a map from the 65th row on");
        let set: u32 = r.filter.iter().map(|w| w.count_ones()).sum();
        assert!(set > 128, "the test's misses pass the filter: {set} bits");
    }
}

#[cfg(test)]
mod unique_check_tests {
    use super::*;
    use crate::{key, row, Database, Options, Schema, Type, Unique, VersionStorage};

    /// The unique check after a back-fill lists a row's versions and then
    /// reads them holding only an epoch pin. A version that leaves the row
    /// in between (its writer undoes it; GC cuts it once newer versions
    /// commit) is reported, not waited for: under the in-place schemes the
    /// master can no longer rebuild it, and reading it through
    /// `storage::with_values` spun on the seqlock until the "cannot reach
    /// its version" assertion (tests/gc_secondary.rs, under load).
    #[test]
    fn a_listed_version_that_left_its_row_is_reported_not_waited_for() {
        // The in-place schemes, whose masters cannot rebuild a version gone
        // from its row.
        for s in VersionStorage::ALL
            .into_iter()
            .filter(|s| !s.is_append_only())
        {
            let mut o = Options::default().version_storage(s).gc_interval(None);
            if s == VersionStorage::Siro {
                o = o.gc(crate::GcPolicy::DeadZone); // the only GC it runs with
            }
            let db = Database::open(o).unwrap();
            let t = db
                .create_table(
                    Schema::new("kv")
                        .column("k", Type::Int)
                        .column("v", Type::Int)
                        .primary_key(&["k"]),
                )
                .unwrap();
            db.run(|x| x.insert(&t, row![1, 10])).unwrap();
            let idx = db.create_index("by_v", &t, &["v"], Unique::Yes).unwrap();
            let (ti, si) = (&*t.inner, &*idx.inner);
            let tuple = ti.index.get(&ti.encode(&key![1])).unwrap();
            let ident = si.ident(&ti.schema, &[Value::Int(1), Value::Int(10)]);
            let _pin = epoch::pin();

            // Listed with an uncommitted head, which its writer then undoes.
            let mut w = db.begin().unwrap();
            w.update(&t, &key![1], &[("v", Value::Int(20))]).unwrap();
            let chain = versions_newest_first(ti, tuple);
            assert_eq!(chain.len(), 2, "{s}");
            assert_eq!(
                newest_state_holds(ti, si, &chain, &ident),
                Some(true),
                "{s}"
            );
            w.abort();
            assert_eq!(newest_state_holds(ti, si, &chain, &ident), None, "{s}");

            // Listed committed, then cut by GC below two newer versions. A
            // time-travel version keeps its full copy (readable while
            // pinned); a delta version needs the master.
            let chain = versions_newest_first(ti, tuple);
            assert_eq!(chain.len(), 1, "{s}");
            for _ in 0..2 {
                db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(10))]))
                    .unwrap();
            }
            db.collect_garbage();
            assert_eq!(versions_newest_first(ti, tuple).len(), 1, "{s}: cut");
            let expected = if s == VersionStorage::Delta {
                None
            } else {
                Some(true)
            };
            assert_eq!(newest_state_holds(ti, si, &chain, &ident), expected, "{s}");
            // The whole check, over the row as it is now.
            assert_eq!(si.pointers, crate::IndexPointers::LogicalTupleId);
            check_unique::<crate::index::logical::Logical<crate::index::logical::TupleId>>(ti, si)
                .unwrap();
        }
    }
}

/// Calls `f` on the image a write overwrote, in place (`None` for an
/// insert or over a tombstone): what the kinds compare the new image
/// with. Not a copy: a copy of a TPC-C customer row, to compare its four
/// indexed columns, cloned a dozen texts (about 550 instructions a
/// Payment's customer update).
pub(crate) fn with_prev_image<R>(prev: *mut Version, f: impl FnOnce(Option<&[Value]>) -> R) -> R {
    // SAFETY: per the write path, `prev` is the locked head or the
    // writer's own version: alive.
    match unsafe { prev.as_ref() } {
        Some(p) if !p.is_tombstone() => storage::with_values(p, |d| f(Some(d))),
        _ => f(None),
    }
}
