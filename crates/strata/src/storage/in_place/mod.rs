//! In-place version storage: the master row and its seqlock (shared by
//! time-travel and delta storage).
//!
//! The newest values of a row live in one fixed place, its *master*, which
//! writers update in place. Every logical version keeps a small header of its
//! own (the usual [`Version`] header, no row image), chained newest-to-oldest
//! from the indirection slot, so the protocols' per-version words and the
//! version identity that read and write sets hold never move. When a writer
//! overwrites the master, the values it displaces go to a *record* hung off
//! the overwritten version's header: a full copy (time-travel store) or the
//! old values of the modified attributes only (delta store). The writer
//! makes that record in the same block as its new version's header (it
//! sizes the record before its write section: [`Records::shape`]), so an
//! update allocates once, as an append-only one does (Wu et al. §4: "the
//! DBMS acquires a slot ... for creating a new delta version"; here the
//! slot and the new header are one block, see [`record`]).
//!
//! ```text
//!  slot ──> [hdr v3] ──> [hdr v2] ──> [hdr v1]        headers (N2O chain)
//!             │ owner      │ record      │ record
//!             ▼            ▼             ▼
//!  master: seq 6 | a=3 b=3 c=3   {b: 2}         {a: 1, b: 1}   delta store
//!                                 (or a full copy each: time-travel store)
//! ```
//!
//! Readers of a master use a seqlock: the writer makes `seq` odd, moves and
//! writes cells, publishes records, sets `owner`, and makes `seq` even again;
//! a reader loads `seq`, copies the raw cell bits (atomic words, never a
//! `Value` it could drop or clone), walks the records from `owner` down to
//! the version it wants, then re-checks `seq`. Only a snapshot that saw the
//! same even `seq` before and after is turned into values: a text value's
//! reference count is touched only for validated bits. The writer is always
//! the holder of the row's write lock, so writers never race each other.
//!
//! Displaced values are never dropped while a reader could hold their bits:
//! they move into a record (freed with its version, through an epoch) or
//! are retired through `crossbeam-epoch` themselves. An abort restores the
//! master from the record (clones of the record's values), retires the
//! record and its own values, and only then releases the write lock.
//!
//! Both in-place schemes are one [`VersionStore`] implementation,
//! [`InPlace`], told by its [`Records`] parameter what an overwrite
//! leaves behind (time-travel: a full copy; delta: the changed
//! attributes). A prune plan that removes versions from the middle of a
//! chain swaps in a merged record for the kept version below them first
//! ([`merge_records`]), so every kept version still reads right.
//!
//! The module's parts: [`master`] (the row's cells and their seqlock),
//! [`record`] (what an overwrite leaves behind, and which allocator it
//! goes back to), and here the scheme itself (install, undo, prune and
//! the merge of delta records). `tests/seqlock_model.rs` runs `install`,
//! `undo` and `Master::read` under shuttle.

pub mod master;
pub mod record;

pub use master::{Master, WriteSection};
pub use record::{retire_record, Dest, Record, RecordBox};

use super::append_only::carry;
use super::chain::{self, Newest, Span, Survivor, Versions};
use super::version::Version;
use super::{Alloc, NewRow, PrunePlan, Store, VersionStore};
use crate::options::{NonInline, VersionStorage};
use crate::sync::atomic::{AtomicPtr, Ordering};
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use std::marker::PhantomData;
use std::ptr;

use Ordering::SeqCst;

/// The master of in-place version `v` (null for an MVTO ghost or a
/// version of an append-only scheme).
#[inline]
pub fn master_of(v: *mut Version) -> *mut Master {
    // SAFETY: callers pass live versions (pinned or owned).
    unsafe { v.as_ref() }
        .and_then(Version::ext)
        .map_or(std::ptr::null_mut(), |e| e.master)
}

/// What a write does to a row, for an overwrite of its master.
pub enum Change<'a> {
    /// These attributes take these values (a column named twice takes
    /// its first value, as an append-only update does).
    Update(&'a [(usize, &'a Value)]),
    /// The whole row (an insert over a deleted row, a transaction's write
    /// replaced by its next one).
    Row(Vec<Value>),
    /// A delete: the cells empty, the tombstone holds the key.
    Delete,
}

impl<'a> Change<'a> {
    /// The change a [`NewRow`] makes, and the key its tombstone holds.
    fn of(row: NewRow<'a>) -> (Change<'a>, Option<Vec<Value>>) {
        match row {
            NewRow::Update(ch) => (Change::Update(ch), None),
            NewRow::Row(r) => (Change::Row(r), None),
            NewRow::Tombstone(k) => (Change::Delete, Some(k)),
        }
    }
}

/// Attributes of one record: a delta's columns, or the ones a full
/// record takes out of the cells. Sixteen inline: an update rarely sets
/// more, and more cost an allocation.
pub type Cols = smallvec::SmallVec<[u32; 16]>;

/// The record an overwrite leaves the overwritten version, decided by the
/// writer before it opens its write section ([`Records::shape`]), so that
/// the record can be made in the new version's block.
pub struct Shape {
    /// A full image (time-travel, SIRO, every delete), or a delta.
    pub full: bool,
    /// Every cell moves out into the record (a delete, a whole-row write).
    pub all: bool,
    /// The attributes whose old values move out of the cells, ascending,
    /// distinct: a delta's, or (a full record that is not `all`) the ones
    /// the update changes; the full record holds copies of the others.
    pub cols: Cols,
}

impl Shape {
    /// The full record `change` leaves.
    pub fn full(change: &Change<'_>) -> Shape {
        match change {
            Change::Update(ch) => Shape {
                full: true,
                all: false,
                cols: changed(ch, |_, _| true),
            },
            Change::Row(_) | Change::Delete => Shape {
                full: true,
                all: true,
                cols: Cols::new(),
            },
        }
    }

    /// The delta `change` leaves: the old values of the attributes it sets
    /// to another value (`differs`, see [`Records::shape`]). A delete's
    /// record is full.
    pub fn delta(change: &Change<'_>, differs: impl Fn(usize, &Value) -> bool) -> Shape {
        let cols = match change {
            Change::Update(ch) => changed(ch, differs),
            Change::Row(r) => (0..r.len())
                .filter(|&i| differs(i, &r[i]))
                .map(|i| i as u32)
                .collect(),
            Change::Delete => return Shape::full(change),
        };
        Shape {
            full: false,
            all: false,
            cols,
        }
    }

    fn len(&self, width: usize) -> usize {
        if self.full {
            width
        } else {
            self.cols.len()
        }
    }

    /// The record's layout, in a row of `width` attributes.
    pub fn layout(&self, width: usize) -> std::alloc::Layout {
        record::layout(self.len(width), self.full)
    }
}

/// The distinct attributes `ch` sets, ascending, whose first value `keep`
/// accepts (a later value of the same attribute is not written).
fn changed(ch: &[(usize, &Value)], keep: impl Fn(usize, &Value) -> bool) -> Cols {
    let mut seen: smallvec::SmallVec<[(u32, bool); 16]> = smallvec::SmallVec::new();
    for &(c, v) in ch {
        let c32 = c as u32;
        if let Err(at) = seen.binary_search_by_key(&c32, |&(x, _)| x) {
            seen.insert(at, (c32, keep(c, v)));
        }
    }
    seen.into_iter()
        .filter(|&(_, k)| k)
        .map(|(c, _)| c)
        .collect()
}

/// Inside a write section: `change` overwrites `prev` (locked by the
/// caller; null or a tombstone when the row is absent). With `rec` (a live
/// `prev`), first moves the values `prev`'s record keeps out of the cells
/// into it (made at its `Dest`, published in `prev`'s word); then writes
/// the new values into the cells left empty. `place`: SIRO's tag for the
/// record; `non_inline`: whether a full record copies the text and byte
/// strings it shares with the master.
fn overwrite(
    sec: &mut WriteSection<'_>,
    prev: *mut Version,
    change: Change<'_>,
    rec: Option<(Shape, Dest<'_>)>,
    place: u8,
    non_inline: NonInline,
) {
    if let Some((shape, dest)) = rec {
        // SAFETY: `prev` is locked by the caller and alive.
        let p = unsafe { &*prev };
        let width = sec.width();
        let len = shape.len(width);
        let mut next = 0;
        let cols = &shape.cols;
        // SAFETY: a `Block` dest was allocated for `shape.layout(width)`
        // (see `write_over`) and is written once, here.
        let w = unsafe {
            dest.make(len, shape.full, place, |i| {
                if !shape.full {
                    let c = cols[i];
                    return (
                        c,
                        sec.take(c as usize)
                            .expect("an overwritten row has every cell"),
                        true,
                    );
                }
                // A full record: the attributes the write changes move
                // out; the others stay in the cells and the record holds
                // copies (the same text shared, unless `NonInline::Copy`:
                // a shared one stays the cell's to count).
                if shape.all || cols.get(next) == Some(&(i as u32)) {
                    next += 1;
                    let v = sec.take(i).expect("an overwritten row has every cell");
                    (0, v, true)
                } else {
                    (0, sec.carried(i, non_inline), non_inline == NonInline::Copy)
                }
            })
        };
        let old = p.ext().expect("in-place version").swap_record(w);
        debug_assert!(old.is_null(), "an overwritten version is overwritten once");
    }
    // The new values fill the cells left empty: the changed attributes
    // (each once, its first value), or every cell of a fresh or re-inserted
    // row. A cell still full keeps its value: an attribute a delta found
    // unchanged.
    match change {
        Change::Update(ch) => {
            for &(c, v) in ch {
                if sec.is_empty(c) {
                    sec.put(c, v.clone());
                }
            }
        }
        Change::Row(r) => {
            for (i, v) in r.into_iter().enumerate() {
                if sec.is_empty(i) {
                    sec.put(i, v);
                }
            }
        }
        Change::Delete => {}
    }
}

/// Inside a write section: undoes the overwrite of `prev` (restores the
/// cells to `prev`'s values, or empties them when `prev` is absent or a
/// tombstone) and gives `prev`'s word back (null), retiring its record if
/// it is one of its own (one in the undone version's block goes with it).
fn restore(sec: &mut WriteSection<'_>, prev: *mut Version, guard: &Guard) {
    // SAFETY: `prev` is locked by the caller and alive.
    let live = unsafe { prev.as_ref() }.filter(|p| !p.is_tombstone() && p.is_in_place());
    let Some(p) = live else {
        for i in 0..sec.width() {
            sec.discard(i);
        }
        return;
    };
    let w = p
        .ext()
        .expect("in-place version")
        .swap_record(ptr::null_mut());
    // SAFETY: we unlinked it; alive until the epoch passes (or, in a
    // block, until the undone version is freed, after the epoch too).
    let Some(r) = (unsafe { record::word::untag(w).as_ref() }) else {
        return;
    };
    match r.cols() {
        None => {
            for (i, v) in r.vals().iter().enumerate() {
                sec.discard(i);
                sec.put(i, v.clone());
            }
        }
        Some(cols) => {
            for (&c, v) in cols.iter().zip(r.vals().iter()) {
                sec.discard(c as usize);
                sec.put(c as usize, v.clone());
            }
        }
    }
    retire_record(w, guard);
}

/// Whether `prev` is a live in-place version, whose overwrite leaves a
/// record.
fn live(prev: *mut Version) -> bool {
    // SAFETY: the caller holds `prev`'s lock; it is alive.
    unsafe { prev.as_ref() }.is_some_and(|p| !p.is_tombstone() && p.is_in_place())
}

/// Publishes the write `change` of transaction `tid` over the locked
/// `prev`, the row's master being `m`; returns the new version (a
/// tombstone holding `key` for a delete). One allocation: the new
/// version's block, which also holds `prev`'s record (see [`record`]).
/// The writer is pinned; nothing here waits for the epoch (no value is
/// dropped: the displaced ones move into the record).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn write_over<R: Records>(
    slot: &AtomicPtr<Version>,
    m: *mut Master,
    prev: *mut Version,
    tid: u64,
    key: Option<Vec<Value>>,
    change: Change<'_>,
    at: Alloc<'_>,
    non_inline: NonInline,
) -> *mut Version {
    // SAFETY: the master lives as long as its row.
    let mr = unsafe { &*m };
    let (v, rec) = if live(prev) {
        let shape = R::shape(&change, |i, x| mr.differs(i, x));
        let (v, room) = Version::alloc_in_place_over(at, tid, m, prev, key, shape.layout(mr.len()));
        (v, Some((shape, Dest::Block(room, *at.gauged))))
    } else {
        (alloc_version(at, tid, m, key, prev), None)
    };
    let mut sec = mr.write();
    overwrite(&mut sec, prev, change, rec, R::PLACE, non_inline);
    sec.set_owner(v);
    slot.store(v, SeqCst);
    sec.end();
    v
}

/// Publishes a version of transaction `tid` with row `image` over the
/// locked `prev`, as the engine's update does ([`write_over`]): the entry
/// point of `tests/seqlock_model.rs`.
#[cfg(strata_model)]
pub fn install<R: Records>(
    slot: &AtomicPtr<Version>,
    m: *mut Master,
    prev: *mut Version,
    tid: u64,
    image: Vec<Value>,
) -> *mut Version {
    write_over::<R>(
        slot,
        m,
        prev,
        tid,
        None,
        Change::Row(image),
        Alloc::PLAIN,
        NonInline::Shared,
    )
}

/// SIRO's toggled abort (vDriver §3.5): `own` (uncommitted, which
/// overwrote `prev`) goes, and `prev` stays current with the image it
/// already has, its in-row copy. Nothing is copied back: the cells keep
/// the aborted image, the master has no owner (no version's image is in
/// the cells), and the next write over `prev` fills them
/// ([`install_over_copy`]). The copy lies in `own`'s block, which goes:
/// `prev` gets one of its own first ([`rehome`], from `at`). The caller
/// holds `prev`'s lock.
pub fn toggle_back(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    at: Alloc<'_>,
    guard: &Guard,
) {
    rehome(prev, at);
    let mut sec = m.write();
    // No reader takes the cells for `prev`: it reads its full copy (first,
    // or after the master failed it: `own_copy`), and nobody but its
    // writer reads `own`.
    sec.set_owner(ptr::null_mut());
    slot.store(prev, SeqCst);
    sec.finish(guard);
}

/// Gives `v` (pinned by the caller, alive) a record of its own in place of
/// one it borrows from the block of the version above it, which is about
/// to leave the chain (see [`record`]): a copy from `at`, with the same
/// place tag. The old one is not retired: it goes with its block.
pub(crate) fn rehome(v: *mut Version, at: Alloc<'_>) {
    // SAFETY: per the contract.
    let Some(ext) = unsafe { v.as_ref() }.and_then(Version::ext) else {
        return;
    };
    let w = ext.record_word();
    if !record::word::is_embedded(w) {
        return;
    }
    // SAFETY: the block holding it is alive until after the version above
    // leaves (it is retired through the epoch).
    let r = unsafe { &*record::word::untag(w) };
    ext.swap_record(RecordBox::copy(at, r).into_raw());
}

/// SIRO: a write over `prev` whose image is its in-row copy (after a
/// toggled abort): the copy already is `prev`'s record, so nothing is
/// displaced; the stale cells get the new image. The caller holds `prev`'s
/// lock.
pub(crate) fn install_over_copy(
    s: &Store,
    tuple: u64,
    tid: u64,
    prev: *mut Version,
    row: NewRow<'_>,
) -> *mut Version {
    let m = master_of(prev);
    let key = match &row {
        NewRow::Tombstone(k) => Some(k.clone()),
        _ => None,
    };
    let v = alloc_version(s.alloc(), tid, m, key, prev);
    // SAFETY: `prev` is locked by us and alive.
    let img = image(s, unsafe { &*prev }, row);
    let guard = epoch::pin();
    // SAFETY: the master lives as long as its row.
    let mut sec = unsafe { &*m }.write();
    for i in 0..sec.width() {
        sec.discard(i);
    }
    for (i, x) in img.into_iter().flatten().enumerate() {
        sec.put(i, x);
    }
    sec.set_owner(v);
    s.rows.slot(tuple).store(v, SeqCst);
    sec.finish(&guard);
    v
}

/// Replaces our own uncommitted `own` (which overwrote `prev`) by `new`:
/// restore, then overwrite again with `change` (a whole row, or a delete),
/// in one write section. `prev`'s new record is one of its own, from `at`.
#[allow(clippy::too_many_arguments)]
fn reinstall<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    change: Change<'_>,
    at: Alloc<'_>,
    non_inline: NonInline,
    guard: &Guard,
) {
    let mut sec = m.write();
    restore(&mut sec, prev, guard);
    let rec = live(prev).then(|| {
        let shape = R::shape(&change, |i, x| sec.differs(i, x));
        (shape, Dest::Own(at))
    });
    overwrite(&mut sec, prev, change, rec, R::PLACE, non_inline);
    sec.set_owner(new);
    slot.store(new, SeqCst);
    sec.finish(guard);
}

/// Rolls the master back to `prev` (null: a fresh insert) and points the
/// slot at it again.
pub fn undo(slot: &AtomicPtr<Version>, m: &Master, prev: *mut Version, guard: &Guard) {
    let mut sec = m.write();
    restore(&mut sec, prev, guard);
    sec.set_owner(prev);
    slot.store(prev, SeqCst);
    sec.finish(guard);
}

/// What an in-place scheme records for an overwritten version: the one
/// thing time-travel and delta storage (and SIRO) do differently.
pub trait Records {
    /// The scheme these records make.
    const SCHEME: VersionStorage;
    /// SIRO's place tag for the records it makes (0: none).
    const PLACE: u8 = 0;
    /// The record an overwrite with `change` leaves the overwritten
    /// version. `differs(i, v)`: whether cell `i` holds another value than
    /// `v` (the writer holds the row, so the cells are stable).
    fn shape(change: &Change<'_>, differs: impl Fn(usize, &Value) -> bool) -> Shape;
}

/// An in-place scheme, by how it records old values (see
/// [`super::time_travel`] and [`super::delta`]).
pub struct InPlace<R>(PhantomData<R>);

impl<R: Records> VersionStore for InPlace<R> {
    const SCHEME: VersionStorage = R::SCHEME;
    #[inline]
    fn install(
        s: &Store,
        tuple: u64,
        tid: u64,
        prev: *mut Version,
        row: NewRow<'_>,
    ) -> *mut Version {
        let mut m = master_of(prev);
        if m.is_null() {
            // Insert over an MVTO ghost: the row gets its first master.
            m = Master::new(s.columns, s.gauged);
        }
        let (change, key) = Change::of(row);
        write_over::<R>(
            s.rows.slot(tuple),
            m,
            prev,
            tid,
            key,
            change,
            s.alloc(),
            s.non_inline,
        )
    }

    fn replace_own(
        s: &Store,
        tuple: u64,
        tid: u64,
        own: *mut Version,
        prev: *mut Version,
        row: NewRow<'_>,
        guard: &Guard,
    ) -> *mut Version {
        let m = master_of(own);
        let key = match &row {
            NewRow::Tombstone(k) => Some(k.clone()),
            _ => None,
        };
        let at = s.alloc();
        let v = alloc_version(at, tid, m, key, prev);
        // SAFETY: our own version is alive.
        let change = match image(s, unsafe { &*own }, row) {
            Some(r) => Change::Row(r),
            None => Change::Delete,
        };
        // SAFETY: the master lives as long as its row.
        reinstall::<R>(
            s.rows.slot(tuple),
            unsafe { &*m },
            prev,
            v,
            change,
            at,
            s.non_inline,
            guard,
        );
        v
    }

    fn undo(s: &Store, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard) {
        let m = master_of(own);
        // SAFETY: the master lives as long as its row.
        undo(s.rows.slot(tuple), unsafe { &*m }, prev, guard);
        if master_of(prev) != m {
            // The master was made by this write (a fresh insert, or an
            // insert over a ghost): nothing reachable refers to it now.
            Master::retire(m, guard);
        }
    }

    fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
        let m = Master::with_row(row, s.gauged);
        let v = Version::alloc_in_place(s.alloc(), tid, m, ptr::null_mut());
        // SAFETY: fresh, unshared.
        let mut sec = unsafe { &*m }.write();
        sec.set_owner(v);
        drop(sec);
        s.rows.slot(tuple).store(v, SeqCst);
        v
    }

    unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
        s.rows.slot(tuple).store(ptr::null_mut(), SeqCst);
        // SAFETY: per the contract nobody else saw `v` or its master.
        unsafe {
            let m = master_of(v);
            // (A fresh version: a header, no values, no record.)
            super::meter::retired(Version::gauge_bytes(v, (*v).len_word(), s.gauged).0);
            Version::free(v);
            Master::into_values(m)
        }
    }

    #[inline]
    fn versions(s: &Store, tuple: u64, span: Span) -> Versions {
        Versions::newest_first(s.rows.head(tuple), span)
    }

    #[inline]
    fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor {
        chain::survivor_newest_first(s.rows.head(tuple), keep)
    }

    fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
        match plan {
            // The tail's records go with their versions; the survivor's own
            // record is relative to its newer neighbour, which stays.
            PrunePlan::OlderThan(keep) => super::append_only::cut_below(keep, s.gauged, guard),
            PrunePlan::Versions(victims) => chain::remove(
                s.rows.slot(tuple),
                victims,
                Newest::First,
                |run, kept| merge_records(run, kept, s.alloc(), guard),
                s.gauged,
                guard,
            ),
        }
    }
}

/// Whether delta record `own` sets every attribute the delta records
/// `run` set (its columns are sorted, as every delta record's are).
fn covers(own: &Record, run: &[&Record]) -> bool {
    let mine = own.cols().expect("a delta record");
    run.iter().all(|r| {
        (r.cols().expect("a delta record"))
            .iter()
            .all(|c| mine.binary_search(c).is_ok())
    })
}

/// Before `run` (newest first) leaves the chain above `kept`: makes
/// `kept`'s record relative to the version that will be its newer
/// neighbour. Its delta was taken against the run's oldest version, whose
/// image is the run's records applied to that neighbour's, so the new
/// record is the run's records followed by `kept`'s own, merged; a full
/// record (time-travel, a delete's, one below a tombstone) stands alone
/// and needs nothing.
///
/// ```text
///  v9 ─> v5 {b:5} ─> v2 {a:2}    remove v5:   v9 ─> v2 {a:2, b:5}
/// ```
///
/// The merged record is swapped in before the run is unlinked: a reader
/// that reaches `kept` without the run finds it; one inside the run
/// applies the run's records and then the merged one, which sets every
/// attribute to the same values again. The merged record comes from `at`,
/// the database's memory spaces (the collecting thread's space).
fn merge_records(run: &[*mut Version], kept: *mut Version, at: Alloc<'_>, guard: &Guard) {
    // SAFETY: pinned; `kept` and the run are alive (the caller is the
    // row's collector).
    let Some(k) = (unsafe { kept.as_ref() }) else {
        return; // the run ends the chain: nothing below needs it
    };
    if k.is_tombstone() {
        return; // no image, no record; the version below has a full one
    }
    let ext = k.ext().expect("in-place version");
    let own = ext.record();
    // SAFETY: records are freed through an epoch (one in a block with its
    // block, whose version is in the run: retired after this); we are
    // pinned.
    debug_assert!(!own.is_null(), "a version below another has a record");
    let Some(own_rec) = (unsafe { own.as_ref() }) else {
        return;
    };
    if own_rec.is_full() {
        // Stands alone; but if it lies in the block of the run's oldest
        // version, it must move out before that block goes.
        rehome(kept, at);
        return;
    }
    // SAFETY: as above; a tombstone in the run has no record (the version
    // below it has a full one, which then starts the merge).
    let recs: Vec<&Record> = run
        .iter()
        .filter_map(|&v| unsafe { (*v).ext()?.record().as_ref() })
        .collect();
    let merged = match recs.iter().rposition(|r| r.is_full()) {
        Some(i) => {
            let mut row = recs[i].full_values().to_vec();
            for r in &recs[i + 1..] {
                r.apply_to(&mut row);
            }
            own_rec.apply_to(&mut row);
            RecordBox::full(at, row)
        }
        None if covers(own_rec, &recs) => {
            // `kept`'s own record sets every attribute the run's do, and it
            // is applied last: the merge is that record itself. (Under a
            // long reader whose updaters keep setting the same attributes,
            // every prune is this case: no new record, nothing to retire,
            // unless the record lies in the run's block and moves out.)
            rehome(kept, at);
            return;
        }
        None => {
            // Later records win (applied last): a stable sort by attribute
            // keeps them last in each run. (A BTreeMap here was a third of
            // the merge under a long reader, which makes every update's
            // predecessor a middle version.)
            let mut cells: Vec<(u32, &Value)> = Vec::new();
            for r in recs.iter().chain(std::iter::once(&own_rec)) {
                let cols = r.cols().expect("a delta record");
                cells.extend(cols.iter().copied().zip(r.vals().iter()));
            }
            cells.sort_by_key(|&(c, _)| c);
            let mut cols = Vec::with_capacity(cells.len());
            let mut vals: Vec<Value> = Vec::with_capacity(cells.len());
            for (c, v) in cells {
                if cols.last() == Some(&c) {
                    *vals.last_mut().expect("one per attribute") = v.clone();
                } else {
                    cols.push(c);
                    vals.push(v.clone());
                }
            }
            // SAFETY: pinned; a version's master lives as long as its row.
            let width = unsafe { ext.master.as_ref() }.map_or(usize::MAX, Master::len);
            if cols.len() == width {
                // Every attribute: the image itself. Stored full, later
                // merges into this version stop at the early return above
                // instead of re-sorting the whole row each time (under a
                // long reader every update's predecessor merges into the
                // reader's version).
                RecordBox::full(at, vals)
            } else {
                RecordBox::delta(at, &cols, vals)
            }
        }
    };
    let old = ext.swap_record(merged.into_raw());
    retire_record(old, guard);
}

/// The row of in-place, non-tombstone version `v`. The caller is pinned.
pub fn values_of(v: &Version) -> Vec<Value> {
    let p = v as *const Version as *mut Version;
    let out = match own_copy(p) {
        Some(out) => out,
        // SAFETY: a live in-place version's master lives as long as its row.
        None => unsafe { &*master_of(p) }.read(p),
    };
    super::meter::decoded(out.len());
    out
}

/// Values a projection holds inline (more: one allocation); as many as a
/// whole-row read of the master keeps on the stack (`master::FAST_CELLS`).
pub const PROJECTED: usize = 32;

/// The values of a projection, in the order asked for.
pub type Projected = smallvec::SmallVec<[Value; PROJECTED]>;

/// Attributes `cols` of in-place, non-tombstone version `v` (positions in
/// its row) into `out` (empty), decoding only those cells: from its own
/// full copy if it has one, else from the master and the records down to
/// `v`. The caller is pinned.
pub fn columns_of(v: &Version, cols: &[usize], out: &mut Projected) {
    let p = v as *const Version as *mut Version;
    if !own_columns(p, cols, out) {
        // SAFETY: a live in-place version's master lives as long as its row.
        unsafe { &*master_of(p) }.read_columns(p, cols, out)
    }
}

/// [`own_copy`] for a projection: false (and `out` untouched) when `v` has
/// no full copy.
fn own_columns(v: *mut Version, cols: &[usize], out: &mut Projected) -> bool {
    // SAFETY: pinned by the caller; versions and records are freed through
    // an epoch.
    let ext = unsafe { (*v).ext() }.expect("in-place version");
    // SAFETY: as above.
    match unsafe { ext.record().as_ref() } {
        Some(r) if r.is_full() => {
            let img = r.full_values();
            out.extend(cols.iter().map(|&c| img[c].clone()));
            true
        }
        _ => false,
    }
}

/// [`values_of`] for a caller whose only hold on `v` is an epoch pin (see
/// [`Master::read_if_reachable`]): None once no state of the row holds
/// `v`'s image.
pub fn values_if_reachable(v: &Version) -> Option<Vec<Value>> {
    let v = v as *const Version as *mut Version;
    let out = match own_copy(v) {
        Some(out) => Some(out),
        // SAFETY: pinned; a master is retired through an epoch, after its
        // row is unlinked, so it is alive while we are.
        None => unsafe { &*master_of(v) }.read_if_reachable(v),
    };
    if let Some(o) = &out {
        super::meter::decoded(o.len());
    }
    out
}

/// The image of in-place version `v` from its own full copy, if it has
/// one: an overwritten version's under time-travel and SIRO, a deleted
/// row's last image under delta. A full copy is immutable once published,
/// so no master is read.
///
/// A reader that found no copy reads the master, and must look here again
/// each time the master does not reach `v`: SIRO's toggle makes a copy the
/// only place the *current* version's image lives. A writer overwrites `v`
/// (`v`'s image moves to a copy, the master's owner is the new version),
/// aborts, and `toggle_back` clears the owner: `v` is current again, and
/// no walk from the master reaches it.
///
/// ```text
///  reader: record of v? none ──────────────────────────> master walk: owner = null, never reaches v
///  writer:                    install w over v (v.record = copy); abort: owner = null
/// ```
///
/// The caller is pinned; `v` is not a tombstone.
fn own_copy(v: *mut Version) -> Option<Vec<Value>> {
    // SAFETY: pinned by the caller; versions and records are freed through
    // an epoch.
    let ext = unsafe { (*v).ext() }.expect("in-place version");
    // SAFETY: as above.
    let r = unsafe { ext.record().as_ref() }?;
    r.is_full().then(|| r.full_values().to_vec())
}

/// The new image a write puts in the master, derived from `base` (its
/// writer's current row) for an update; None for a delete.
fn image(s: &Store, base: &Version, row: NewRow<'_>) -> Option<Vec<Value>> {
    match row {
        NewRow::Row(r) => Some(r),
        NewRow::Tombstone(_) => None,
        NewRow::Update(ch) => {
            let mut r = writer_row(base);
            if s.non_inline == NonInline::Copy {
                for v in r.iter_mut() {
                    *v = carry(v, NonInline::Copy);
                }
            }
            for (c, v) in ch {
                r[*c] = (*v).clone();
            }
            Some(r)
        }
    }
}

/// The current row of `base` for its writer (who holds the row's lock or
/// created `base`), to derive an update from.
fn writer_row(base: &Version) -> Vec<Value> {
    if !base.is_in_place() || base.is_tombstone() {
        return base.data().to_vec();
    }
    // A newest version with a full copy is SIRO's after a toggled abort
    // (`install_over_copy`): the copy is its image, the cells are stale.
    // (Under the other schemes the newest version has no record.)
    // SAFETY: the writer holds the row's lock: nobody retires the record.
    if let Some(r) = base.ext().and_then(|e| unsafe { e.record().as_ref() }) {
        if r.is_full() {
            return r.full_values().to_vec();
        }
    }
    // SAFETY: the writer holds the row's lock: the master is stable.
    unsafe { &*master_of(base as *const _ as *mut _) }.writer_values()
}

/// An in-place version (a tombstone holding `key`, if given) of the row
/// whose master is `m`, with no record in its block.
fn alloc_version(
    at: Alloc<'_>,
    tid: u64,
    m: *mut Master,
    key: Option<Vec<Value>>,
    next: *mut Version,
) -> *mut Version {
    match key {
        Some(k) => Version::alloc_tombstone_in_place(at, tid, k, m, next),
        None => Version::alloc_in_place(at, tid, m, next),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::meter::Gauged;

    /// Merging a run's delta records into the kept version's: later
    /// records win, and a merge that covers every attribute is stored as
    /// the full image (so the next merge into it is free).
    #[test]
    fn merged_records_become_full_once_they_cover_the_row() {
        let guard = crossbeam_epoch::pin();
        let m = Master::with_row(vec![Value::Int(9); 3], Gauged::OFF);
        let kept = Version::alloc_in_place(Alloc::PLAIN, 1, m, std::ptr::null_mut());
        let run = Version::alloc_in_place(Alloc::PLAIN, 2, m, kept);
        let set = |v: *mut Version, r: RecordBox| {
            // SAFETY: ours, alive until the end of the test.
            let ext = unsafe { &*v }.ext().unwrap();
            let old = ext.swap_record(r.into_raw());
            if !old.is_null() {
                // SAFETY: unlinked just now, never read again.
                drop(unsafe { RecordBox::from_raw(old) });
            }
        };
        let record = |v: *mut Version| {
            // SAFETY: as above.
            let ext = unsafe { &*v }.ext().unwrap();
            unsafe { &*ext.record() }
        };
        // A run whose attributes kept's own record sets: nothing to merge,
        // the record stays (no new one, nothing retired).
        set(
            run,
            RecordBox::delta(Alloc::PLAIN, &[1], vec![Value::Int(7)]),
        );
        set(
            kept,
            RecordBox::delta(Alloc::PLAIN, &[1], vec![Value::Int(2)]),
        );
        // SAFETY: ours, alive until the end of the test.
        let before = unsafe { &*kept }.ext().unwrap().record();
        merge_records(&[run], kept, Alloc::PLAIN, &guard);
        let after = unsafe { &*kept }.ext().unwrap().record();
        assert_eq!(after, before, "no new record");
        assert_eq!(record(kept).vals(), &[Value::Int(2)][..]);
        set(
            run,
            RecordBox::delta(Alloc::PLAIN, &[0, 1], vec![Value::Int(1), Value::Int(1)]),
        );
        merge_records(&[run], kept, Alloc::PLAIN, &guard);
        let r = record(kept);
        assert!(!r.is_full(), "two of three attributes");
        assert_eq!(r.cols(), Some(&[0, 1][..]));
        assert_eq!(
            r.vals(),
            &[Value::Int(1), Value::Int(2)][..],
            "kept's own wins"
        );
        set(
            run,
            RecordBox::delta(Alloc::PLAIN, &[2], vec![Value::Int(3)]),
        );
        merge_records(&[run], kept, Alloc::PLAIN, &guard);
        let r = record(kept);
        assert!(r.is_full(), "every attribute: the image");
        assert_eq!(
            r.full_values(),
            &[Value::Int(1), Value::Int(2), Value::Int(3)][..]
        );
        drop(guard);
        // SAFETY: never shared; each freed once (a version frees its own
        // record; the merge retired the replaced ones through the epoch).
        unsafe {
            Version::free(run);
            Version::free(kept);
            Master::free(m);
        }
    }
}
