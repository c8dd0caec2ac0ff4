//! Lazy range scans: [`Transaction::range`] and its key-only and count
//! forms, iterators that read one row per step and walk from either end.
//!
//! The primary index hands out (key, tuple id) entries in batches, one
//! leaf or so at a time, from the low end ([`PrimaryIndex::batch_from_low`])
//! or the high end ([`PrimaryIndex::batch_from_high`]); a row is read
//! through the protocol only when the caller asks for it, so the rows a
//! transaction read, and the predicate it protects, are exactly the ones the
//! iterator returned:
//!
//! ```text
//!   range [lo, hi]:  lo ─ a b c ─────────── x y ─ hi
//!                    front returned a, b    back returned y
//!   predicate reads: [lo, b]  and  [y, hi]  (all of [lo, hi] once either
//!                                            end ran dry)
//!   not yet fetched: (c .. x), the middle both ends fetch from
//! ```
//!
//! The ends fetch from one shrinking middle, so no entry is fetched twice;
//! once the middle is empty an end takes the other end's fetched entries
//! from the far side of its buffer, and the two meet without overlap.
//!
//! The invariant this module owns: **the predicate an iterator leaves
//! covers exactly what it returned**, from the range's start to the last row
//! the front returned and from the last row the back returned to the range's
//! end. Each end's predicate read is in the transaction's `scans` from its
//! first row on and moved forward at every step, so it does not depend on
//! the iterator's drop. Rows fetched and not returned were never read
//! through the protocol.
//!
//! **No pin between steps.** Each step pins the epoch for itself and
//! unpins before it returns, so a slow consumer, or a range that is
//! forgotten (`mem::forget` is safe Rust), holds back no memory
//! reclamation. What a step reads under its pin (a version, the row it
//! projects) it has copied before the pin ends; what the iterator keeps
//! between steps is the fetched entries, (key, tuple id), and a tuple id
//! fetched under an earlier pin may have been released since (an aborted
//! insert's, or a row's that GC freed) and handed to another row. So each buffer remembers the
//! table's count of released ids as it was when the batch was fetched
//! ([`IndirectionArray::releases`](crate::storage::indirection::IndirectionArray::releases)),
//! and a step uses an entry only while the id provably names the row
//! its key named:
//!
//! ```text
//!  entry (key, id), fetched when the table's release count was n; the step pins:
//!    count == n ─> read the row ─> count == n still? ─ yes ─> use it
//!                                   └ no ─> index[key] == id? ─ yes ─> use it
//!                                                              └ no ─> skip it
//!    count != n ─> index[key] == id? ─ yes ─> read the row, use it (found
//!                                     │       pinned, the id stays the key's
//!                                     │       until the pin ends)
//!                                     └ no ─> skip it
//! ```
//!
//! The count is bumped before a released id goes on the free list, so a
//! slot that shows another row's version was read after the bump, and the
//! second look at the count sees it. The common case (nothing released in
//! the table since the batch) costs one pin and two loads of a line that
//! only releases write; a primary-index lookup is paid only for entries
//! fetched before a release. (Buffering keys alone and looking each one up
//! again would pay that lookup, a hash probe and its cache miss, on every
//! row.) Measured with callgrind (`examples/txn_instructions.rs`, kinds
//! `range` and `range_keys`, 100-row ranges, SSN, the test profile's
//! optimisation): the pin per step took a row from 1,878 to 1,968
//! instructions, a key from 1,426 to 1,516, about 90 (most of it the pin
//! and unpin; a locked instruction each). A skipped entry is a row that left its key since the fetch: an
//! aborted insert, or a row being unlinked, which the step would have read
//! as absent or deleted; it is not added to the predicate's seen rows,
//! which only makes re-validation stricter. The narrow window the second
//! look closes (the id released and reused between the first look and the
//! read) may leave the protocol's read bookkeeping on a row the range does
//! not return, or end the step with that read's conflict: an extra read,
//! conservative, never a missed conflict.
//!
//! Secondary indexes have their own lazy range ([`Transaction::index_range`],
//! `index_iter.rs`), which walks identities rather than keys and shares
//! [`Source`] with this one.

use super::*;
use crate::index::primary::PrimaryIndex;
use std::collections::VecDeque;

/// Entries fetched from the low end per step (about two leaves).
const FRONT_BATCH: usize = 64;

/// What a range yields per visible row: the row, its key, or nothing
/// (a count).
type Project<T> = fn(&TableInner, &Version) -> T;

/// A lazy range scan of a table's primary index: [`Transaction::range`]
/// (rows), [`Transaction::range_keys`] (primary keys). Double-ended: `.rev()`
/// walks from the high end. An item is `Err` when reading the row failed
/// (a conflict rolls the transaction back); the iterator ends after it.
///
/// It pins the epoch only inside `next` and `next_back`, never between
/// them: keeping it around is harmless, and so is forgetting it
/// (`mem::forget`); a forgotten range also leaves its predicate read right
/// (see the module doc).
pub struct Range<'t, T = Row> {
    source: Source<'t>,
    table: &'t TableInner,
    project: Project<T>,
    /// The range asked for: what the predicate covers once exhausted.
    lo: Bound<EncodedKey>,
    hi: Bound<EncodedKey>,
    /// What neither end has fetched yet; None once empty.
    middle: Option<(Bound<EncodedKey>, Bound<EncodedKey>)>,
    /// Fetched, not yet returned: the front's in ascending key order, the
    /// back's in descending.
    front: VecDeque<(EncodedKey, u64)>,
    back: VecDeque<(EncodedKey, u64)>,
    /// The table's count of released tuple ids when each buffer was
    /// fetched (a buffer is fetched only when empty, so one per buffer).
    front_releases: u64,
    back_releases: u64,
    /// Where each end's predicate read sits in the transaction's `scans`,
    /// once the end has read a visible entry: kept current at every step
    /// (its bound at the last key read, its `seen` every tuple read), so
    /// that it covers what was returned however the iterator ends (a
    /// drop, or a `mem::forget`).
    front_entry: Option<usize>,
    back_entry: Option<usize>,
    /// The protocol re-validates this range at commit.
    phantom_checked: bool,
    started: bool,
    /// Both ends ran dry, or a read failed.
    done: bool,
    exhausted: bool,
}

/// Whose reads a range makes: a transaction's, through its protocol
/// (and leaving its predicate), or a shared [`crate::Snapshot`]'s, by
/// `&` (snapshot reads, no bookkeeping).
pub(super) enum Source<'t> {
    Txn(&'t mut Transaction),
    Snapshot(&'t Transaction),
}

impl Source<'_> {
    pub(super) fn txn(&self) -> &Transaction {
        match self {
            Source::Txn(t) => t,
            Source::Snapshot(t) => t,
        }
    }
}

/// Which end a step reads from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Front,
    Back,
}

impl Transaction {
    /// The rows whose primary key lies in `range`, in key order, read
    /// lazily: a row is read when the iterator reaches it, and `.rev()`
    /// walks from the high end. The bounds take key prefixes as
    /// [`Transaction::scan`]'s do.
    ///
    /// Phantom protection (under the serializable protocols) covers what
    /// the iterator returned: from the range's start to the last row taken
    /// from the front, from the last row taken from the back to the range's
    /// end, or the whole range once the iterator ran dry. Stopping early
    /// (`take(n)`, `break`) protects no key past the stop, as
    /// [`Transaction::scan_while`] does.
    ///
    /// ```
    /// use strata::{key, row, Database, Options, Schema, Type};
    ///
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(
    ///     Schema::new("t").column("k", Type::Int).column("v", Type::Text).primary_key(&["k"]),
    /// )?;
    /// db.run(|tx| (0..10).try_for_each(|k| tx.insert(&t, row![k, "x"])))?;
    /// let mut tx = db.begin()?;
    /// // The last two rows of [3, 7), the highest key first.
    /// let last: Vec<i64> = tx
    ///     .range(&t, key![3]..key![7])?
    ///     .rev()
    ///     .take(2)
    ///     .map(|row| row.map(|r| r[0].as_int().unwrap()))
    ///     .collect::<strata::Result<_>>()?;
    /// assert_eq!(last, [6, 5]);
    /// // Its phantom protection covers [5, 7), where it read: another
    /// // transaction's insert of key 4 is no conflict. A count covers all.
    /// assert_eq!(tx.count(&t, ..)?, 10);
    /// tx.commit()?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn range<'t>(
        &'t mut self,
        t: &'t Table,
        range: impl RangeBounds<Key>,
    ) -> Result<Range<'t, Row>> {
        Range::new(Source::Txn(self), t, &range, project_row)
    }

    /// [`Transaction::range`]'s primary keys alone (each key's columns, in
    /// the schema's primary-key order).
    pub fn range_keys<'t>(
        &'t mut self,
        t: &'t Table,
        range: impl RangeBounds<Key>,
    ) -> Result<Range<'t, Key>> {
        Range::new(Source::Txn(self), t, &range, project_key)
    }

    /// How many rows [`Transaction::range`] would return, without copying
    /// or decoding any (its predicate covers the whole range).
    pub fn count(&mut self, t: &Table, range: impl RangeBounds<Key>) -> Result<usize> {
        let rows: Range<'_, ()> = Range::new(Source::Txn(self), t, &range, |_, _| ())?;
        rows.sum_ok()
    }
}

/// A row, projected from its version.
pub(super) fn project_row(_: &TableInner, v: &Version) -> Row {
    storage::with_values(v, |r| r.to_vec())
}

/// A row's primary key.
pub(super) fn project_key(t: &TableInner, v: &Version) -> Key {
    storage::with_values(v, |r| t.schema.key_of(r))
}

impl<'t, T> Range<'t, T> {
    pub(super) fn new(
        mut source: Source<'t>,
        t: &'t Table,
        range: &impl RangeBounds<Key>,
        project: Project<T>,
    ) -> Result<Self> {
        source.txn().check_open(t)?;
        let (lo, hi) = primary_bounds(t, range)?;
        let phantom_checked = match &mut source {
            Source::Txn(txn) => {
                // Our buffered writes of the table go on their rows first
                // (`deferred`): the range must see them.
                txn.settle_table_any(&t.inner)?;
                // (A range's rows are not named one by one: see
                // `read_stamp`.)
                txn.read_stamp = UNKNOWN_READS;
                !txn.read_only && with_cc!(txn.db.protocol, P => P::VALIDATES_SCANS)
            }
            Source::Snapshot(_) => false,
        };
        Ok(Range {
            table: &t.inner,
            project,
            middle: Some((lo.clone(), hi.clone())),
            lo,
            hi,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_releases: 0,
            back_releases: 0,
            front_entry: None,
            back_entry: None,
            phantom_checked,
            started: false,
            done: false,
            exhausted: false,
            source,
        })
    }

    /// The number of `Ok` items, or the first error.
    fn sum_ok(self) -> Result<usize> {
        self.into_iter().try_fold(0, |n, r| r.map(|_| n + 1))
    }

    /// The next entry an end reads, with the release count of the batch it
    /// came in: from its own buffer, else fetched from the middle, else the
    /// other end's nearest-to-us fetched entry.
    fn take_entry(&mut self, end: End, guard: &Guard) -> Option<(EncodedKey, u64, u64)> {
        loop {
            let own = match end {
                End::Front => self
                    .front
                    .pop_front()
                    .map(|(k, t)| (k, t, self.front_releases)),
                End::Back => self
                    .back
                    .pop_front()
                    .map(|(k, t)| (k, t, self.back_releases)),
            };
            if own.is_some() {
                return own;
            }
            let Some((lo, hi)) = self.middle.take() else {
                // The middle is empty: the other end's farthest entry
                // is this end's next.
                return match end {
                    End::Front => self
                        .back
                        .pop_back()
                        .map(|(k, t)| (k, t, self.back_releases)),
                    End::Back => self
                        .front
                        .pop_back()
                        .map(|(k, t)| (k, t, self.front_releases)),
                };
            };
            self.fetch(end, lo, hi, guard);
        }
    }

    /// Moves a batch of the middle `[lo, hi]` into `end`'s (empty) buffer
    /// and leaves the rest as the middle.
    fn fetch(&mut self, end: End, lo: Bound<EncodedKey>, hi: Bound<EncodedKey>, guard: &Guard) {
        if !self.started {
            self.started = true;
            if let Source::Txn(txn) = &self.source {
                if !txn.read_only {
                    let ts = &self.table.predicate_read_ts;
                    with_cc!(txn.db.protocol, P => P::before_scan(&**txn, ts));
                }
            }
        }
        // Before the walk: an id it finds that is released later moves
        // the count past this (see the module doc).
        let releases = self.table.rows.releases();
        let index: &PrimaryIndex = &self.table.index;
        self.middle = match end {
            End::Front => {
                self.front_releases = releases;
                let dry = index.batch_from_low(&lo, &hi, FRONT_BATCH, guard, &mut self.front);
                match self.front.back() {
                    Some((k, _)) if !dry => Some((Bound::Excluded(k.clone()), hi)),
                    _ => None,
                }
            }
            End::Back => {
                self.back_releases = releases;
                index
                    .batch_from_high(&lo, &hi, guard, &mut self.back)
                    .map(|hi| (lo, hi))
            }
        };
    }

    /// Whether `key` still maps to `tuple` in the primary index (asked
    /// pinned: if so, the id cannot be released before the pin ends).
    fn still_names(&self, key: &EncodedKey, tuple: u64) -> bool {
        self.table.index.get(key) == Some(tuple)
    }

    /// One step from `end`: the next visible row's projection, read under
    /// a pin of the step's own.
    fn step(&mut self, end: End) -> Option<Result<T>> {
        if self.done {
            return None;
        }
        let guard = epoch::pin();
        loop {
            let Some((key, tuple, releases)) = self.take_entry(end, &guard) else {
                self.done = true;
                self.exhausted = true;
                self.cover_all();
                return None;
            };
            let table: &TableInner = self.table;
            let rows = &table.rows;
            // An id fetched before a release may name another row now: ask
            // the index first (then it stays ours while we are pinned).
            let checked = rows.releases() != releases;
            if checked && !self.still_names(&key, tuple) {
                continue;
            }
            let read = match &mut self.source {
                Source::Txn(txn) => {
                    with_cc!(txn.db.protocol, P => txn.read_tuple::<P>(self.table, tuple))
                }
                Source::Snapshot(txn) => txn.visible_to_snapshot(self.table, tuple),
            };
            let v = match read {
                Ok(v) => v,
                Err(e) => {
                    self.done = true;
                    return Some(match &mut self.source {
                        Source::Txn(txn) => txn.fail(e),
                        Source::Snapshot(_) => Err(e),
                    });
                }
            };
            // A release since the first look: the slot may have shown a
            // row that took the id meanwhile (see the module doc).
            if !checked && rows.releases() != releases && !self.still_names(&key, tuple) {
                continue;
            }
            if v.is_null() {
                continue;
            }
            if self.phantom_checked {
                self.cover(end, key, tuple);
            }
            // SAFETY: a visible version read under `guard`, which pins
            // (versions are freed through the epoch) until the projection
            // below has copied what it needs.
            let r = unsafe { &*v };
            if r.is_tombstone() {
                continue;
            }
            return Some(Ok((self.project)(self.table, r)));
        }
    }

    /// Extends `end`'s predicate read to `key` (a visible entry it read),
    /// with `tuple` seen.
    fn cover(&mut self, end: End, key: EncodedKey, tuple: u64) {
        let Source::Txn(txn) = &mut self.source else {
            return;
        };
        let slot = match end {
            End::Front => &mut self.front_entry,
            End::Back => &mut self.back_entry,
        };
        match *slot {
            Some(i) => {
                let e = &mut txn.scans[i];
                match end {
                    End::Front => e.hi = Bound::Included(key),
                    End::Back => e.lo = Bound::Included(key),
                }
                e.seen.push(tuple);
            }
            None => {
                let (lo, hi) = match end {
                    End::Front => (self.lo.clone(), Bound::Included(key)),
                    End::Back => (Bound::Included(key), self.hi.clone()),
                };
                txn.scans
                    .push(ScanEntry::range(self.table, lo, hi, vec![tuple]));
                *slot = Some(txn.scans.len() - 1);
            }
        }
    }

    /// Both ends met: one predicate read of the whole range, with every
    /// tuple either end saw (also for a range that held nothing).
    fn cover_all(&mut self) {
        let Source::Txn(txn) = &mut self.source else {
            return;
        };
        if !self.phantom_checked || !txn.active {
            return;
        }
        match (self.front_entry.take(), self.back_entry.take()) {
            (Some(mut f), Some(b)) => {
                let gone = txn.scans.remove(b);
                if f > b {
                    f -= 1;
                }
                let e = &mut txn.scans[f];
                e.seen.extend(gone.seen);
                e.hi = self.hi.clone();
            }
            (Some(f), None) => txn.scans[f].hi = self.hi.clone(),
            (None, Some(b)) => txn.scans[b].lo = self.lo.clone(),
            (None, None) => {
                let (lo, hi) = (self.lo.clone(), self.hi.clone());
                txn.scans
                    .push(ScanEntry::range(self.table, lo, hi, Vec::new()));
            }
        }
    }
}

impl<T> Iterator for Range<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.step(End::Front)
    }
}

impl<T> DoubleEndedIterator for Range<'_, T> {
    fn next_back(&mut self) -> Option<Result<T>> {
        self.step(End::Back)
    }
}

impl<T> std::iter::FusedIterator for Range<'_, T> {}
