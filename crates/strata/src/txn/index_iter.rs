//! Lazy secondary-index ranges: [`Transaction::index_range`] (and
//! [`crate::Snapshot::index_range`]), iterators that read a row when they
//! reach it and walk from either end, as [`Transaction::range`] does over
//! the primary key (`iter.rs`).
//!
//! Each index kind decides which rows a scan sees its own way: logical
//! pointers read the row and keep it if its visible version has the
//! entry's key, physical pointers decide from the named version, MV-PBT
//! from all the records of an identity (`enc(index key) ++ enc(primary
//! key)`) across its partitions, before any row. What every kind decides
//! per identity, so the walk is one of identities:
//!
//! ```text
//!   batch (index::batch, ~64 entries from one end, identities whole)
//!     │     a  b  c  ...                          ... x  y  z
//!     ▼     front buffer                          back buffer
//!   step: the next identity's scan, index::scan([id, prefix_end(id))),
//!         which breaks at the first row it hands over (one at most)
//!   range [lo, hi]:  lo ─ a b c ─────────── x y ─ hi
//!   predicate reads: [lo, end of b]  and  [y, hi]  (all of [lo, hi] once
//!                    either end ran dry)
//! ```
//!
//! A step reuses the kind's whole-scan code (`SecondaryIndexKind::scan`)
//! over one identity: the row it reads goes through the protocol as an
//! `index_scan`'s would, and the scan's re-validation record (a `SecScan`:
//! identities seen, rows read) is the step's share of the predicate. The
//! ends' batches come from one shrinking middle, as in `iter.rs`, and
//! list identities whole (`SecondaryIndexKind::batch`): an identity's
//! entries (a physical index's versions, MV-PBT's records) are never split
//! between two batches, and a step's scan of it meets all of them.
//!
//! The invariant this module owns: **the predicate an iterator leaves
//! covers exactly what it returned**: from the range's start to the end of
//! the identity of the last row the front returned, from the identity of
//! the last row the back returned to the range's end, or the whole range
//! once it ran dry. Each end's predicate read (a `ScanEntry` with its
//! `SecScan`) is in the transaction's `scans` from its first row on and
//! moved at every row, with the seen identities and rows read of every
//! step up to that row, so it does not depend on the iterator's drop.
//! Steps past the last row returned leave their reads in the protocol's
//! read tracking, not in the predicate. A `SecScan` built so is in walk
//! order, not sorted: re-validation sorts it (`SecScan::sorted`).
//!
//! **Lost rows.** No pin is held between steps, so a row can move under
//! the walk: a step reaches it through one identity's entry and reads a
//! version that sits under an identity the walk passed already, at either
//! end. A whole scan leaves such a row out of its rows read (it lost it;
//! `common::ScanReads::finish`); a step is told where the walk has been
//! (`ScanMode::passed`), so the row counts as lost the same way. And a
//! protocol that reads the newest data (MV2PL, OCC) can meet one row under
//! two identities, at two steps, if it moved between them: the iterator
//! hands out a primary key once.

use super::index_ops::{SnapshotReads, Through};
use super::iter::Source;
use super::*;
use crate::index::key::{prefix_end, ByteKey};
use crate::index::secondary::SecondaryIndex;
use crate::index::{self, ScanMode, SecScan};
use crate::table::Index;
use rustc_hash::FxHashSet;
use std::collections::VecDeque;

/// Identities listed per batch (entries, about).
const BATCH: usize = 64;

/// What a range yields per row: the row, its primary key.
type Project<T> = fn(&TableInner, &[Value]) -> T;

/// A lazy range scan of a secondary index: [`Transaction::index_range`]
/// (rows), [`Transaction::index_range_keys`] (primary keys), and the same
/// of a [`crate::Snapshot`]. Index-key order, ties by primary key;
/// double-ended: `.rev()` walks from the high end. An item is `Err` when
/// reading a row failed (a conflict rolls the transaction back); the
/// iterator ends after it.
///
/// No pin is held between steps: keeping it around, or forgetting it
/// (`mem::forget`), holds back no memory reclamation, and a forgotten
/// range leaves its predicate read right (see the module doc).
pub struct IndexRange<'t, T = Row> {
    source: Source<'t>,
    index: Arc<SecondaryIndex>,
    table: Table,
    project: Project<T>,
    /// The range asked for (byte bounds over identities).
    lo: Bound<EncodedKey>,
    hi: Bound<EncodedKey>,
    /// What neither end has listed yet; None once empty.
    middle: Option<(Bound<EncodedKey>, Bound<EncodedKey>)>,
    /// Listed, not yet stepped: the front's ascending, the back's
    /// descending.
    front: VecDeque<Box<[u8]>>,
    back: VecDeque<Box<[u8]>>,
    /// Where each end's walk has been: the front up to (not including)
    /// `front_at`, the back from `back_at` on.
    front_at: Option<Bound<EncodedKey>>,
    back_at: Option<Box<[u8]>>,
    /// Each end's predicate read in the transaction's `scans`, once the
    /// end returned a row (see `Range`'s).
    front_entry: Option<usize>,
    back_entry: Option<usize>,
    /// What each end's steps since its last row returned recorded: it
    /// joins the predicate with the next row (or when the range runs dry).
    front_pending: Option<SecScan>,
    back_pending: Option<SecScan>,
    /// Rows are read through the protocol (a read-write transaction).
    rw: bool,
    /// The protocol re-validates this range at commit.
    record: bool,
    /// The primary keys handed out, where one row can show up under two
    /// identities (a protocol that reads the newest data; None otherwise).
    handed: Option<FxHashSet<Box<[u8]>>>,
    started: bool,
    done: bool,
}

/// Which end a step reads from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Front,
    Back,
}

impl Transaction {
    /// The rows whose index key lies in `range`, in index-key order (ties
    /// by primary key), read lazily: a row is read when the iterator
    /// reaches it, and `.rev()` walks from the high end (`next` and
    /// `next_back` mix). The bounds take index-key prefixes as
    /// [`Transaction::index_scan`]'s do.
    ///
    /// Phantom protection (under the serializable protocols) covers what
    /// the iterator returned: from the range's start through the index key
    /// and primary key of the last row taken from the front, from those of
    /// the last row taken from the back to the range's end, or the whole
    /// range once the iterator ran dry. Stopping early (`take(n)`,
    /// `break`) protects no key past the stop, as
    /// [`Transaction::index_scan_limit`] does. Works the same over every
    /// index kind (`IndexKind`, `IndexPointers`).
    ///
    /// ```
    /// use strata::{key, row, Database, Options, Schema, Type, Unique, Value};
    ///
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("t").column("k", Type::Int).column("v", Type::Int).primary_key(&["k"]),
    /// )?;
    /// let by_v = db.create_index("by_v", &t, &["v"], Unique::No)?;
    /// db.run(|tx| (0..10).try_for_each(|k| tx.insert(&t, row![k, 100 - k])))?;
    /// let mut tx = db.begin()?;
    /// // The two highest v in [92, 97): 96 and 95 (rows 4 and 5).
    /// let top: Vec<i64> = tx
    ///     .index_range(&by_v, key![92]..key![97])?
    ///     .rev()
    ///     .take(2)
    ///     .map(|row| row.map(|r| r[0].as_int().unwrap()))
    ///     .collect::<strata::Result<_>>()?;
    /// assert_eq!(top, [4, 5]);
    /// // Its phantom protection covers v in [95, 97), where it read:
    /// // another transaction's insert of v = 93 is no conflict.
    /// let mut other = db.begin()?;
    /// other.insert(&t, row![20, 93])?;
    /// other.commit()?;
    /// tx.update(&t, &key![4], &[("v", Value::Int(0))])?;
    /// tx.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn index_range<'t>(
        &'t mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
    ) -> Result<IndexRange<'t, Row>> {
        IndexRange::new(Source::Txn(self), idx, &range, project_row)
    }

    /// [`Transaction::index_range`]'s primary keys alone (each key's
    /// columns, in the schema's primary-key order). The rows are read all
    /// the same (the index kinds decide through them).
    pub fn index_range_keys<'t>(
        &'t mut self,
        idx: &Index,
        range: impl RangeBounds<Key>,
    ) -> Result<IndexRange<'t, Key>> {
        IndexRange::new(Source::Txn(self), idx, &range, project_key)
    }
}

fn project_row(_: &TableInner, r: &[Value]) -> Row {
    r.to_vec()
}

fn project_key(t: &TableInner, r: &[Value]) -> Key {
    t.schema.key_of(r)
}

/// A byte key.
fn bytes(b: &[u8]) -> EncodedKey {
    EncodedKey::Bytes(ByteKey::from_slice(b))
}

/// Whether identity `k` lies at or above the start `lo`.
fn from(k: &[u8], lo: &Bound<EncodedKey>) -> bool {
    match lo {
        Bound::Included(EncodedKey::Bytes(l)) => k >= &l[..],
        Bound::Excluded(EncodedKey::Bytes(l)) => k > &l[..],
        _ => true,
    }
}

/// Whether identity `k` lies at or below the end `hi`.
fn upto(k: &[u8], hi: &Bound<EncodedKey>) -> bool {
    match hi {
        Bound::Included(EncodedKey::Bytes(h)) => k <= &h[..],
        Bound::Excluded(EncodedKey::Bytes(h)) => k < &h[..],
        _ => true,
    }
}

impl<'t, T> IndexRange<'t, T> {
    pub(super) fn new(
        mut source: Source<'t>,
        idx: &Index,
        range: &impl RangeBounds<Key>,
        project: Project<T>,
    ) -> Result<Self> {
        let (lo, hi) = source.txn().index_bounds(idx, range)?;
        let (rw, record, handed) = match &mut source {
            Source::Txn(txn) => {
                // Our buffered writes of the table go on their rows (and
                // index entries) first (`deferred`).
                txn.settle_table_any(&idx.table.inner)?;
                // (A range's rows are not named one by one: see
                // `read_stamp`.)
                txn.read_stamp = UNKNOWN_READS;
                let rw = !txn.read_only;
                with_cc!(txn.db.protocol, P => (
                    rw,
                    rw && P::VALIDATES_SCANS,
                    (rw && !P::SNAPSHOT_READS).then(FxHashSet::default),
                ))
            }
            Source::Snapshot(_) => (false, false, None),
        };
        Ok(IndexRange {
            source,
            index: Arc::clone(&idx.inner),
            table: idx.table.clone(),
            project,
            middle: Some((lo.clone(), hi.clone())),
            lo,
            hi,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_at: None,
            back_at: None,
            front_entry: None,
            back_entry: None,
            front_pending: None,
            back_pending: None,
            rw,
            record,
            handed,
            started: false,
            done: false,
        })
    }

    /// The next identity an end steps: from its own buffer, else listed
    /// from the middle, else the other end's farthest listed one.
    fn take_ident(&mut self, end: End) -> Option<Box<[u8]>> {
        loop {
            let own = match end {
                End::Front => self.front.pop_front(),
                End::Back => self.back.pop_front(),
            };
            if own.is_some() {
                return own;
            }
            let Some((lo, hi)) = self.middle.take() else {
                return match end {
                    End::Front => self.back.pop_back(),
                    End::Back => self.front.pop_back(),
                };
            };
            if !self.started {
                self.started = true;
                if let Source::Txn(txn) = &self.source {
                    if self.rw {
                        let ts = &self.index.predicate_read_ts;
                        with_cc!(txn.db.protocol, P => P::before_scan(&**txn, ts));
                    }
                }
            }
            let buf = match end {
                End::Front => &mut self.front,
                End::Back => &mut self.back,
            };
            self.middle = index::batch(&self.index, &lo, &hi, end == End::Back, BATCH, buf);
        }
    }

    /// One step from `end`: the next row's projection, identity by
    /// identity until one hands a row over.
    fn step(&mut self, end: End) -> Option<Result<T>> {
        if self.done {
            return None;
        }
        loop {
            let Some(ident) = self.take_ident(end) else {
                self.done = true;
                self.cover_all();
                return None;
            };
            let id_lo = Bound::Included(bytes(&ident));
            let id_hi = match prefix_end(&ident) {
                Some(e) => Bound::Excluded(bytes(&e)),
                None => Bound::Unbounded,
            };
            // Where the walk will have been once this step is done.
            let (front_to, back_from) = match end {
                End::Front => (Some(&id_hi), self.back_at.as_deref()),
                End::Back => (self.front_at.as_ref(), Some(&ident[..])),
            };
            let (lo, hi) = (&self.lo, &self.hi);
            let passed = |own: &[u8]| {
                front_to.is_some_and(|to| from(own, lo) && upto(own, to))
                    || back_from.is_some_and(|f| own >= f && upto(own, hi))
            };
            let (ti, si): (&TableInner, _) = (&self.table.inner, &self.index);
            let (project, mut got) = (self.project, None);
            let f = |r: &[Value]| {
                got = Some(project(ti, r));
                ControlFlow::Break(())
            };
            // The kinds read versions and records under the caller's pin
            // (MV-PBT's scan pins none of its own); this step's alone.
            let guard = epoch::pin();
            let scanned = match &mut self.source {
                Source::Txn(txn) => {
                    let mode = ScanMode {
                        rw: self.rw,
                        record: self.record,
                        passed: Some(&passed),
                    };
                    with_cc!(txn.db.protocol, P => index::scan(
                        &mut Through::<P>::new(txn), ti, si, &id_lo, &id_hi, mode, f,
                    ))
                }
                Source::Snapshot(txn) => index::scan(
                    &mut SnapshotReads::new(txn),
                    ti,
                    si,
                    &id_lo,
                    &id_hi,
                    ScanMode::new(false, false),
                    f,
                ),
            };
            drop(guard);
            let scanned = match scanned {
                Ok(s) => s,
                Err(e) => {
                    self.done = true;
                    return Some(match &mut self.source {
                        Source::Txn(txn) => txn.fail(e),
                        Source::Snapshot(_) => Err(e),
                    });
                }
            };
            if let Some(sec) = scanned.sec {
                let pending = match end {
                    End::Front => &mut self.front_pending,
                    End::Back => &mut self.back_pending,
                };
                match pending {
                    Some(p) => p.absorb(sec),
                    None => *pending = Some(sec),
                }
            }
            let Some(row) = got else {
                self.walked(end, ident, id_hi);
                continue;
            };
            if let Some(handed) = &mut self.handed {
                let pk = &ident[self.index.ikey_len(&ident)..];
                if !handed.insert(pk.into()) {
                    self.walked(end, ident, id_hi);
                    continue; // met under another identity already
                }
            }
            if self.record {
                self.cover(end, &ident, &id_hi);
            }
            self.walked(end, ident, id_hi);
            return Some(Ok(row));
        }
    }

    /// `end` has walked identity `ident` (its entries end below `id_hi`).
    fn walked(&mut self, end: End, ident: Box<[u8]>, id_hi: Bound<EncodedKey>) {
        match end {
            End::Front => self.front_at = Some(id_hi),
            End::Back => self.back_at = Some(ident),
        }
    }

    /// Extends `end`'s predicate read over identity `ident` (whose row it
    /// returns), with what its steps since the last row recorded.
    fn cover(&mut self, end: End, ident: &[u8], id_hi: &Bound<EncodedKey>) {
        let Source::Txn(txn) = &mut self.source else {
            return;
        };
        let (slot, pending) = match end {
            End::Front => (&mut self.front_entry, self.front_pending.take()),
            End::Back => (&mut self.back_entry, self.back_pending.take()),
        };
        let pending = pending.unwrap_or_else(|| empty(&self.index));
        match *slot {
            Some(i) => {
                let e = &mut txn.scans[i];
                match end {
                    End::Front => e.hi = id_hi.clone(),
                    End::Back => e.lo = Bound::Included(bytes(ident)),
                }
                e.sec
                    .as_mut()
                    .expect("an index range's entry")
                    .absorb(pending);
            }
            None => {
                let (lo, hi) = match end {
                    End::Front => (self.lo.clone(), id_hi.clone()),
                    End::Back => (Bound::Included(bytes(ident)), self.hi.clone()),
                };
                let mut e = ScanEntry::range(&self.table.inner, lo, hi, Vec::new());
                e.sec = Some(Box::new(pending));
                txn.scans.push(e);
                *slot = Some(txn.scans.len() - 1);
            }
        }
    }

    /// The ends met: one predicate read of the whole range, with all
    /// either end recorded (also for a range that held nothing).
    fn cover_all(&mut self) {
        let Source::Txn(txn) = &mut self.source else {
            return;
        };
        if !self.record || !txn.active {
            return;
        }
        let mut rest = empty(&self.index);
        for p in [self.front_pending.take(), self.back_pending.take()]
            .into_iter()
            .flatten()
        {
            rest.absorb(p);
        }
        let at = match (self.front_entry.take(), self.back_entry.take()) {
            (Some(mut f), Some(b)) => {
                let gone = txn.scans.remove(b);
                if f > b {
                    f -= 1;
                }
                if let Some(g) = gone.sec {
                    rest.absorb(*g);
                }
                Some(f)
            }
            (Some(f), None) => Some(f),
            (None, Some(b)) => Some(b),
            (None, None) => None,
        };
        let (lo, hi) = (self.lo.clone(), self.hi.clone());
        match at {
            Some(i) => {
                let e = &mut txn.scans[i];
                (e.lo, e.hi) = (lo, hi);
                e.sec.as_mut().expect("an index range's entry").absorb(rest);
            }
            None => {
                let mut e = ScanEntry::range(&self.table.inner, lo, hi, Vec::new());
                e.sec = Some(Box::new(rest));
                txn.scans.push(e);
            }
        }
    }
}

/// A predicate read's index part with nothing in it yet.
fn empty(index: &Arc<SecondaryIndex>) -> SecScan {
    SecScan {
        index: Arc::clone(index),
        seen: Default::default(),
        read: Vec::new(),
        sorted: true,
        additions_at: None,
    }
}

impl<T> Iterator for IndexRange<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.step(End::Front)
    }
}

impl<T> DoubleEndedIterator for IndexRange<'_, T> {
    fn next_back(&mut self) -> Option<Result<T>> {
        self.step(End::Back)
    }
}

impl<T> std::iter::FusedIterator for IndexRange<'_, T> {}
