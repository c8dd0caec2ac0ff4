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
//! old values of the modified attributes only (delta store).
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
pub use record::{retire_record, Record, RecordBox};

use super::append_only::carry;
use super::chain::{self, Newest, Span, Survivor, Versions};
use super::space::SpaceSet;
use super::version::Version;
use super::{NewRow, PrunePlan, Store, VersionStore};
use crate::options::{NonInline, VersionStorage};
use crate::sync::atomic::{AtomicPtr, Ordering};
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use std::marker::PhantomData;
use std::ptr;

use Ordering::{AcqRel, Acquire, Release, SeqCst};

/// The master of in-place version `v` (null for an MVTO ghost or a
/// version of an append-only scheme).
#[inline]
pub fn master_of(v: *mut Version) -> *mut Master {
    // SAFETY: callers pass live versions (pinned or owned).
    unsafe { v.as_ref() }
        .and_then(Version::ext)
        .map_or(std::ptr::null_mut(), |e| e.master)
}

/// Inside a write section: `new` (image `image`, or a tombstone when None)
/// overwrites `prev` (locked by the caller; null or a tombstone when the
/// row is absent). Moves `prev`'s values into its record and the new values
/// into the cells.
fn overwrite<R: Records>(
    sec: &mut WriteSection<'_>,
    prev: *mut Version,
    image: Option<Vec<Value>>,
    sp: Option<&SpaceSet>,
) {
    // SAFETY: `prev` is locked by the caller and alive.
    let live = unsafe { prev.as_ref() }.filter(|p| !p.is_tombstone() && p.is_in_place());
    if let Some(p) = live {
        let rec = R::displace(sec, image.as_deref(), sp);
        let old = p
            .ext()
            .expect("in-place version")
            .record
            .swap(rec.into_raw(), Release);
        debug_assert!(old.is_null(), "an overwritten version is overwritten once");
    }
    if let Some(img) = image {
        for (i, v) in img.into_iter().enumerate() {
            if sec.is_empty(i) {
                sec.put(i, v);
            }
            // Else an unchanged attribute (delta): the master keeps its own.
        }
    }
}

/// Inside a write section: undoes the overwrite of `prev` (restores the
/// cells to `prev`'s values, or empties them when `prev` is absent or a
/// tombstone) and retires `prev`'s record.
fn restore(sec: &mut WriteSection<'_>, prev: *mut Version, guard: &Guard) {
    // SAFETY: `prev` is locked by the caller and alive.
    let live = unsafe { prev.as_ref() }.filter(|p| !p.is_tombstone() && p.is_in_place());
    let Some(p) = live else {
        for i in 0..sec.width() {
            sec.discard(i);
        }
        return;
    };
    let rec = p
        .ext()
        .expect("in-place version")
        .record
        .swap(std::ptr::null_mut(), AcqRel);
    // SAFETY: we unlinked it; alive until the epoch passes.
    let Some(r) = (unsafe { rec.as_ref() }) else {
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
    retire_record(rec, guard);
}

/// Publishes `new` over the locked `prev` (see [`overwrite`]), its record
/// from the global allocator: the entry point of `tests/seqlock_model.rs`
/// (the engine calls [`install_in`]).
#[cfg(strata_model)]
pub fn install<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    image: Option<Vec<Value>>,
    guard: &Guard,
) {
    install_in::<R>(slot, m, prev, new, image, None, guard)
}

/// Publishes `new` over the locked `prev` (see [`overwrite`]); `prev`'s
/// record comes from `sp`, the database's memory spaces.
pub fn install_in<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    image: Option<Vec<Value>>,
    sp: Option<&SpaceSet>,
    guard: &Guard,
) {
    let mut sec = m.write();
    overwrite::<R>(&mut sec, prev, image, sp);
    sec.set_owner(new);
    slot.store(new, SeqCst);
    sec.finish(guard);
}

/// SIRO's toggled abort (vDriver §3.5): `own` (uncommitted, which
/// overwrote `prev`) goes, and `prev` stays current with the image it
/// already has, its in-row copy. Nothing is copied back: the cells keep
/// the aborted image, the master has no owner (no version's image is in
/// the cells), and the next write over `prev` fills them
/// ([`install_over_copy`]). The caller holds `prev`'s lock.
pub fn toggle_back(slot: &AtomicPtr<Version>, m: &Master, prev: *mut Version, guard: &Guard) {
    let mut sec = m.write();
    // No reader takes the cells for `prev`: it reads its full copy (first,
    // or after the master failed it: `own_copy`), and nobody but its
    // writer reads `own`.
    sec.set_owner(ptr::null_mut());
    slot.store(prev, SeqCst);
    sec.finish(guard);
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
    let v = alloc_version(s, tid, m, &row, prev);
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
/// restore, then overwrite again, in one write section.
fn reinstall<R: Records>(
    slot: &AtomicPtr<Version>,
    m: &Master,
    prev: *mut Version,
    new: *mut Version,
    image: Option<Vec<Value>>,
    sp: Option<&SpaceSet>,
    guard: &Guard,
) {
    let mut sec = m.write();
    restore(&mut sec, prev, guard);
    overwrite::<R>(&mut sec, prev, image, sp);
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
/// thing time-travel and delta storage do differently.
pub trait Records {
    /// The scheme these records make.
    const SCHEME: VersionStorage;
    /// Inside a write section, before the new image `image` (None: a
    /// delete) is written: moves out of the cells what the overwritten
    /// version's record keeps, into a record made in `sp` (the database's
    /// memory spaces; None: the global allocator).
    fn displace(
        sec: &mut WriteSection<'_>,
        image: Option<&[Value]>,
        sp: Option<&SpaceSet>,
    ) -> RecordBox;
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
            m = Master::new(s.columns);
        }
        let v = alloc_version(s, tid, m, &row, prev);
        // SAFETY: `prev` is locked by us and alive.
        let img = image(s, unsafe { &*prev }, row);
        // SAFETY: the master lives as long as its row.
        install_in::<R>(
            s.rows.slot(tuple),
            unsafe { &*m },
            prev,
            v,
            img,
            s.spaces.as_deref(),
            &epoch::pin(),
        );
        v
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
        let v = alloc_version(s, tid, m, &row, prev);
        // SAFETY: our own version is alive.
        let img = image(s, unsafe { &*own }, row);
        // SAFETY: the master lives as long as its row.
        reinstall::<R>(
            s.rows.slot(tuple),
            unsafe { &*m },
            prev,
            v,
            img,
            s.spaces.as_deref(),
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
        let m = Master::with_row(row);
        let v = Version::alloc_in_place(s.spaces.as_deref(), tid, m, ptr::null_mut());
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
            PrunePlan::OlderThan(keep) => super::append_only::cut_below(keep, guard),
            PrunePlan::Versions(victims) => chain::remove(
                s.rows.slot(tuple),
                victims,
                Newest::First,
                |run, kept| merge_records(run, kept, s.spaces.as_deref(), guard),
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
/// attribute to the same values again. The merged record comes from `sp`,
/// the database's memory spaces (the collecting thread's space).
fn merge_records(run: &[*mut Version], kept: *mut Version, sp: Option<&SpaceSet>, guard: &Guard) {
    // SAFETY: pinned; `kept` and the run are alive (the caller is the
    // row's collector).
    let Some(k) = (unsafe { kept.as_ref() }) else {
        return; // the run ends the chain: nothing below needs it
    };
    if k.is_tombstone() {
        return; // no image, no record; the version below has a full one
    }
    let ext = k.ext().expect("in-place version");
    let own = ext.record.load(Acquire);
    // SAFETY: records are freed through an epoch; we are pinned.
    debug_assert!(!own.is_null(), "a version below another has a record");
    let Some(own_rec) = (unsafe { own.as_ref() }) else {
        return;
    };
    if own_rec.is_full() {
        return;
    }
    // SAFETY: as above; a tombstone in the run has no record (the version
    // below it has a full one, which then starts the merge).
    let recs: Vec<&Record> = run
        .iter()
        .filter_map(|&v| unsafe { (*v).ext()?.record.load(Acquire).as_ref() })
        .collect();
    let merged = match recs.iter().rposition(|r| r.is_full()) {
        Some(i) => {
            let mut row = recs[i].full_values().to_vec();
            for r in &recs[i + 1..] {
                r.apply_to(&mut row);
            }
            own_rec.apply_to(&mut row);
            RecordBox::full(sp, row)
        }
        None if covers(own_rec, &recs) => {
            // `kept`'s own record sets every attribute the run's do, and it
            // is applied last: the merge is that record itself. (Under a
            // long reader whose updaters keep setting the same attributes,
            // every prune is this case: no new record, nothing to retire.)
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
                RecordBox::full(sp, vals)
            } else {
                RecordBox::delta(sp, &cols, vals)
            }
        }
    };
    let old = ext.record.swap(merged.into_raw(), AcqRel);
    retire_record(old, guard);
}

/// The row of in-place, non-tombstone version `v`. The caller is pinned.
pub fn values_of(v: &Version) -> Vec<Value> {
    let v = v as *const Version as *mut Version;
    if let Some(out) = own_copy(v) {
        return out;
    }
    // SAFETY: a live in-place version's master lives as long as its row.
    unsafe { &*master_of(v) }.read(v)
}

/// [`values_of`] for a caller whose only hold on `v` is an epoch pin (see
/// [`Master::read_if_reachable`]): None once no state of the row holds
/// `v`'s image.
pub fn values_if_reachable(v: &Version) -> Option<Vec<Value>> {
    let v = v as *const Version as *mut Version;
    if let Some(out) = own_copy(v) {
        return Some(out);
    }
    // SAFETY: pinned; a master is retired through an epoch, after its row
    // is unlinked, so it is alive while we are.
    unsafe { &*master_of(v) }.read_if_reachable(v)
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
    let r = unsafe { ext.record.load(Acquire).as_ref() }?;
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
    if let Some(r) = base
        .ext()
        .and_then(|e| unsafe { e.record.load(Acquire).as_ref() })
    {
        if r.is_full() {
            return r.full_values().to_vec();
        }
    }
    // SAFETY: the writer holds the row's lock: the master is stable.
    unsafe { &*master_of(base as *const _ as *mut _) }.writer_values()
}

/// An in-place version (or tombstone) of the row whose master is `m`.
fn alloc_version(
    s: &Store,
    tid: u64,
    m: *mut Master,
    row: &NewRow<'_>,
    next: *mut Version,
) -> *mut Version {
    let sp = s.spaces.as_deref();
    match row {
        NewRow::Tombstone(k) => Version::alloc_tombstone_in_place(sp, tid, k.clone(), m, next),
        _ => Version::alloc_in_place(sp, tid, m, next),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// Merging a run's delta records into the kept version's: later
    /// records win, and a merge that covers every attribute is stored as
    /// the full image (so the next merge into it is free).
    #[test]
    fn merged_records_become_full_once_they_cover_the_row() {
        let guard = crossbeam_epoch::pin();
        let m = Master::with_row(vec![Value::Int(9), Value::Int(9), Value::Int(9)]);
        let kept = Version::alloc_in_place(None, 1, m, std::ptr::null_mut());
        let run = Version::alloc_in_place(None, 2, m, kept);
        let set = |v: *mut Version, r: RecordBox| {
            // SAFETY: ours, alive until the end of the test.
            let ext = unsafe { &*v }.ext().unwrap();
            let old = ext.record.swap(r.into_raw(), SeqCst);
            if !old.is_null() {
                // SAFETY: unlinked just now, never read again.
                drop(unsafe { RecordBox::from_raw(old) });
            }
        };
        let record = |v: *mut Version| {
            // SAFETY: as above.
            let ext = unsafe { &*v }.ext().unwrap();
            unsafe { &*ext.record.load(SeqCst) }
        };
        // A run whose attributes kept's own record sets: nothing to merge,
        // the record stays (no new one, nothing retired).
        set(run, RecordBox::delta(None, &[1], vec![Value::Int(7)]));
        set(kept, RecordBox::delta(None, &[1], vec![Value::Int(2)]));
        // SAFETY: ours, alive until the end of the test.
        let before = unsafe { &*kept }.ext().unwrap().record.load(SeqCst);
        merge_records(&[run], kept, None, &guard);
        let after = unsafe { &*kept }.ext().unwrap().record.load(SeqCst);
        assert_eq!(after, before, "no new record");
        assert_eq!(record(kept).vals(), &[Value::Int(2)][..]);
        set(
            run,
            RecordBox::delta(None, &[0, 1], vec![Value::Int(1), Value::Int(1)]),
        );
        merge_records(&[run], kept, None, &guard);
        let r = record(kept);
        assert!(!r.is_full(), "two of three attributes");
        assert_eq!(r.cols(), Some(&[0, 1][..]));
        assert_eq!(
            r.vals(),
            &[Value::Int(1), Value::Int(2)][..],
            "kept's own wins"
        );
        set(run, RecordBox::delta(None, &[2], vec![Value::Int(3)]));
        merge_records(&[run], kept, None, &guard);
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
