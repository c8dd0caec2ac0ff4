//! Version storage: tuple headers, version chains, the indirection array,
//! and one module per storage scheme behind one `match` per operation.
//!
//! A version store decides *where* versions live and how a chain is walked;
//! the protocols (`cc`) decide whether a transaction may read, write and
//! commit. Whatever the scheme, every logical version has a [`Version`]
//! header at a fixed address for its whole life, which is what read and
//! write sets, read locks, SIREAD marks and SSN stamps refer to:
//!
//! ```text
//!  scheme        chain from the slot      row values of a version
//!  N2O           newest -> oldest         inline, immutable
//!  O2N           oldest -> newest         inline, immutable
//!  time-travel   newest -> oldest (hdrs)  newest: master (in place, seqlock)
//!                                         older: full copy per version
//!  delta         newest -> oldest (hdrs)  newest: master (in place, seqlock)
//!                                         older: master + deltas backwards
//! ```
//!
//! See [`append_only`], [`time_travel`], [`delta`] and [`in_place`].

pub mod append_only;
pub mod delta;
pub mod in_place;
pub mod indirection;
pub mod space;
pub mod time_travel;
pub mod version;
pub mod version_cache;

use crate::error::Result;
use crate::options::{NonInline, VersionStorage};
use crate::table::TableInner;
use crate::txn::tid::TidTable;
use crate::txn::visibility::{self, Mode};
use crate::value::Value;
use crossbeam_epoch::{self as epoch, Guard};
use in_place::{master_of, Kind, Master};
use std::ptr;
use version::{Version, TID_MARK};

/// What a write puts in its new version.
pub enum NewRow<'a> {
    /// A whole row (insert).
    Row(Vec<Value>),
    /// The base version's row with these attributes changed.
    Update(&'a [(usize, &'a Value)]),
    /// A deletion, holding the primary key.
    Tombstone(Vec<Value>),
}

#[inline]
fn kind(s: VersionStorage) -> Kind {
    match s {
        VersionStorage::Delta => Kind::Delta,
        _ => Kind::TimeTravel,
    }
}

/// The newest version of `tuple` (committed or not); null if none.
#[inline]
pub fn newest(t: &TableInner, tuple: u64) -> *mut Version {
    let head = t.rows.head(tuple);
    match t.storage {
        VersionStorage::AppendOldToNew => append_only::o2n_newest(o2n_head(t, tuple, head)),
        _ => head,
    }
}

/// The version of `tuple` visible at `ts` to transaction `me` (0: a
/// read-only snapshot); null if none. The caller is pinned.
#[inline]
pub fn visible(
    t: &TableInner,
    tuple: u64,
    ts: u64,
    me: u64,
    tids: &TidTable,
    mode: Mode,
) -> Result<*mut Version> {
    let head = t.rows.head(tuple);
    match t.storage {
        VersionStorage::AppendOldToNew => {
            append_only::o2n_visible(o2n_head(t, tuple, head), ts, me, tids, mode)
        }
        _ => visibility::visible(head, ts, me, tids, mode),
    }
}

/// The oldest end of an O2N chain to walk from; under cooperative
/// cleaning, after retiring the obsolete versions at that end.
#[inline]
fn o2n_head(t: &TableInner, tuple: u64, head: *mut Version) -> *mut Version {
    match &t.coop {
        None => head,
        // Workers retire a prefix with one CAS and no index work; a table
        // with secondary indexes leaves its chains to COOP's full pass,
        // which prunes through `prune` and so removes the entries of the
        // versions it retires first.
        Some(_) if !t.secondary.load(&crossbeam_epoch::pin()).is_empty() => head,
        Some(c) => {
            let h = c.horizon.load(std::sync::atomic::Ordering::Relaxed);
            let (head, n) = crate::gc::vacuum::cooperate(t.rows.slot(tuple), head, h, &c.passes);
            if n > 0 {
                c.reclaimed
                    .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            }
            head
        }
    }
}

/// Calls `f` on the row image of `v` (for a tombstone: the primary key).
/// Append-only versions are read in place; versions of the in-place schemes
/// are reconstructed (seqlock read of the master, records applied).
#[inline]
pub fn with_values<R>(v: &Version, f: impl FnOnce(&[Value]) -> R) -> R {
    if !v.is_in_place() || v.is_tombstone() {
        return f(v.data());
    }
    f(&in_place_values(v))
}

/// [`with_values`] for a caller whose only hold on `v` is an epoch pin: no
/// registered snapshot keeps GC from cutting `v`, and `v` may be an
/// uncommitted version its writer undoes or replaces (the unique check
/// after an index back-fill). None when `v` is an in-place version gone
/// from its row, whose image the master can no longer rebuild (a seqlock
/// read through [`with_values`] would wait for it for good). Append-only
/// versions and full copies stay readable while pinned.
pub fn try_with_values<R>(v: &Version, f: impl FnOnce(&[Value]) -> R) -> Option<R> {
    if !v.is_in_place() || v.is_tombstone() {
        return Some(f(v.data()));
    }
    let ext = v.ext().expect("in-place version");
    // SAFETY: pinned by the caller; records are freed through an epoch.
    if let Some(r) = unsafe {
        ext.record
            .load(std::sync::atomic::Ordering::Acquire)
            .as_ref()
    } {
        if r.is_full() {
            return Some(f(r.full_values()));
        }
    }
    // SAFETY: pinned; a master is retired through an epoch, after its row
    // is unlinked, so it is alive while we are.
    let m = unsafe { &*ext.master };
    m.read_if_reachable(v as *const Version as *mut Version)
        .map(|d| f(&d))
}

/// Walks a chain from `from` along the next pointers, stopping before
/// `until` (null: at the end), and calls `f` on each version with its row
/// image: None for a tombstone, and for an uncommitted version (its writer
/// may replace or undo it meanwhile, and a seqlock read of a version no
/// longer reachable from the master would wait for good). `f` returns
/// whether to go on. Returns the number of versions visited and whether
/// the walk stopped at `until`.
///
/// Every step costs one version, whatever the scheme: an in-place version
/// below a committed one gets its newer neighbour's image with its own
/// record applied (that record is immutable once its overwriter has
/// committed). Reading each version alone ([`with_values`]) would walk the
/// delta records from the master down to it again, quadratic in the length
/// of the chain.
///
/// The caller is pinned and is the row's collector: nothing else unlinks
/// the committed versions walked.
pub fn walk_images(
    from: *mut Version,
    until: *mut Version,
    mut f: impl FnMut(*mut Version, Option<&[Value]>) -> bool,
) -> (u64, bool) {
    // The image of the previous (newer) version, when it was a committed
    // in-place version (then it overwrote the current one).
    let mut row: Vec<Value> = Vec::new();
    let mut chained = false;
    let mut n = 0;
    let mut v = from;
    while !v.is_null() && v != until {
        n += 1;
        // SAFETY: pinned; chain versions are alive.
        let r = unsafe { &*v };
        if r.is_tombstone() || r.begin.load(std::sync::atomic::Ordering::SeqCst) & TID_MARK != 0 {
            chained = false;
            if !f(v, None) {
                break;
            }
        } else if !r.is_in_place() {
            chained = false;
            if !f(v, Some(r.data())) {
                break;
            }
        } else {
            let rec = r.ext().map_or(ptr::null_mut(), |e| {
                e.record.load(std::sync::atomic::Ordering::Acquire)
            });
            // SAFETY: pinned; records are freed with their versions, through
            // an epoch.
            match unsafe { rec.as_ref() } {
                Some(rec) if chained || rec.is_full() => rec.apply_to(&mut row),
                // The first committed version of the walk (or the first
                // after a break): read through the master once.
                _ => row = in_place_values(r),
            }
            chained = true;
            if !f(v, Some(&row)) {
                break;
            }
        }
        v = r.next();
    }
    (n, v == until)
}

/// The row of in-place, non-tombstone version `v`.
fn in_place_values(v: &Version) -> Vec<Value> {
    let ext = v.ext().expect("in-place version");
    // An overwritten version with a full copy needs no master: the copy is
    // immutable (time-travel, or a delete's delta).
    // SAFETY: pinned by the caller; records are freed through an epoch.
    if let Some(r) = unsafe {
        ext.record
            .load(std::sync::atomic::Ordering::Acquire)
            .as_ref()
    } {
        if r.is_full() {
            return r.full_values().to_vec();
        }
    }
    // SAFETY: a live in-place version's master lives as long as its row.
    let m = unsafe { &*ext.master };
    m.read(v as *const Version as *mut Version)
}

/// The current row of `base` for its writer (who holds the row's lock or
/// created `base`), to derive an update from.
fn writer_row(base: &Version) -> Vec<Value> {
    if !base.is_in_place() || base.is_tombstone() {
        return base.data().to_vec();
    }
    // SAFETY: the writer holds the row's lock: the master is stable.
    unsafe { &*master_of(base as *const _ as *mut _) }.writer_values()
}

fn image(t: &TableInner, base: &Version, row: NewRow<'_>) -> Option<Vec<Value>> {
    match row {
        NewRow::Row(r) => Some(r),
        NewRow::Tombstone(_) => None,
        NewRow::Update(ch) => {
            let mut r = writer_row(base);
            if t.non_inline == NonInline::Copy {
                for v in r.iter_mut() {
                    *v = append_only::carry(v, NonInline::Copy);
                }
            }
            for (c, v) in ch {
                r[*c] = (*v).clone();
            }
            Some(r)
        }
    }
}

/// An append-only version for `row`, derived from `base` when an update.
#[inline]
fn alloc_append(
    t: &TableInner,
    tid: u64,
    base: *mut Version,
    row: NewRow<'_>,
    next: *mut Version,
) -> *mut Version {
    let sp = t.spaces.as_deref();
    match row {
        NewRow::Row(r) => Version::alloc(sp, tid, r, next),
        NewRow::Tombstone(k) => Version::alloc_tombstone(sp, tid, k, next),
        NewRow::Update(ch) => {
            // SAFETY: `base` is locked by or belongs to the writer.
            let old = unsafe { &*base }.data();
            let new = |i: usize| ch.iter().find(|(c, _)| *c == i).map(|(_, v)| (*v).clone());
            // Two loops rather than a per-attribute test of the mode: this is
            // the update hot path of the default configuration.
            match t.non_inline {
                NonInline::Shared => Version::alloc_with(sp, tid, old.len(), next, |i| {
                    new(i).unwrap_or_else(|| old[i].clone())
                }),
                NonInline::Copy => Version::alloc_with(sp, tid, old.len(), next, |i| {
                    new(i).unwrap_or_else(|| append_only::carry(&old[i], NonInline::Copy))
                }),
            }
        }
    }
}

/// An in-place version (or tombstone) of the row whose master is `m`.
fn alloc_in_place(
    t: &TableInner,
    tid: u64,
    m: *mut Master,
    row: &NewRow<'_>,
    next: *mut Version,
) -> *mut Version {
    let sp = t.spaces.as_deref();
    match row {
        NewRow::Tombstone(k) => Version::alloc_tombstone_in_place(sp, tid, k.clone(), m, next),
        _ => Version::alloc_in_place(sp, tid, m, next),
    }
}

/// Publishes a new version by transaction `tid` over the newest version
/// `prev`, which `tid` has locked (a tombstone when `row` is an insert).
/// Returns the new version. The caller marks `prev` overwritten.
///
/// `#[inline]`, like the transaction's write path that calls it: the update
/// path is then instantiated in the crate that calls the generic
/// `Transaction::update`, where the global allocator can be inlined (worth
/// about 10% of an update's instructions with mimalloc).
#[inline]
pub fn install(
    t: &TableInner,
    tuple: u64,
    tid: u64,
    prev: *mut Version,
    row: NewRow<'_>,
) -> *mut Version {
    let slot = t.rows.slot(tuple);
    match t.storage {
        VersionStorage::AppendNewToOld => {
            let v = alloc_append(t, tid, prev, row, prev);
            append_only::n2o_publish(slot, v);
            v
        }
        VersionStorage::AppendOldToNew => {
            let v = alloc_append(t, tid, prev, row, ptr::null_mut());
            append_only::o2n_publish(slot, prev, v);
            v
        }
        s @ (VersionStorage::TimeTravel | VersionStorage::Delta) => {
            let mut m = master_of(prev);
            if m.is_null() {
                // Insert over an MVTO ghost: the row gets its first master.
                m = Master::new(t.schema.columns.len());
            }
            let v = alloc_in_place(t, tid, m, &row, prev);
            // SAFETY: `prev` is locked by us and alive.
            let img = image(t, unsafe { &*prev }, row);
            // SAFETY: the master lives as long as its row.
            in_place::install(kind(s), slot, unsafe { &*m }, prev, v, img, &epoch::pin());
            v
        }
    }
}

/// Replaces our own uncommitted version `own` (which overwrote `prev`,
/// null for a fresh insert) by a new one, unlinking `own`. The caller
/// retires `own` once nothing refers to it any more: physical index
/// entries still name it until they are re-keyed, and a reader that
/// pinned after an early retire could find `own` through one of them
/// after it was freed.
pub fn replace_own(
    t: &TableInner,
    tuple: u64,
    tid: u64,
    own: *mut Version,
    prev: *mut Version,
    row: NewRow<'_>,
    guard: &Guard,
) -> *mut Version {
    let slot = t.rows.slot(tuple);
    match t.storage {
        VersionStorage::AppendNewToOld => {
            let v = alloc_append(t, tid, own, row, prev);
            append_only::n2o_publish(slot, v);
            v
        }
        VersionStorage::AppendOldToNew => {
            let v = alloc_append(t, tid, own, row, ptr::null_mut());
            append_only::o2n_publish(slot, prev, v);
            v
        }
        s @ (VersionStorage::TimeTravel | VersionStorage::Delta) => {
            let m = master_of(own);
            let v = alloc_in_place(t, tid, m, &row, prev);
            // SAFETY: our own version is alive.
            let img = image(t, unsafe { &*own }, row);
            // SAFETY: the master lives as long as its row.
            in_place::replace_own(kind(s), slot, unsafe { &*m }, prev, v, img, guard);
            v
        }
    }
}

/// Publishes the first version of a fresh tuple (not in the index yet).
pub fn publish_fresh(t: &TableInner, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
    let v = if t.storage.is_append_only() {
        Version::alloc(t.spaces.as_deref(), tid, row, ptr::null_mut())
    } else {
        let m = Master::with_row(row);
        let v = Version::alloc_in_place(t.spaces.as_deref(), tid, m, ptr::null_mut());
        let mut sec = unsafe { &*m }.write();
        sec.set_owner(v);
        drop(sec);
        v
    };
    t.rows
        .slot(tuple)
        .store(v, std::sync::atomic::Ordering::SeqCst);
    v
}

/// Takes back a fresh version that was never reachable (its key lost the
/// race into the index) and returns its row.
///
/// # Safety
/// `v` came from [`publish_fresh`] and no index ever held its tuple id.
pub unsafe fn unpublish_fresh(t: &TableInner, tuple: u64, v: *mut Version) -> Vec<Value> {
    t.rows
        .slot(tuple)
        .store(ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
    // SAFETY: per the contract nobody else saw `v` or its master.
    unsafe {
        let m = master_of(v);
        if m.is_null() {
            Version::into_values(v)
        } else {
            Version::free(v);
            Master::into_values(m)
        }
    }
}

/// Undoes our write `own` over `prev` (null: `own` was a fresh insert):
/// the row is exactly as before it when this returns. The caller still
/// holds `prev`'s lock and retires `own`.
pub fn undo(t: &TableInner, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard) {
    let slot = t.rows.slot(tuple);
    match t.storage {
        VersionStorage::AppendNewToOld => append_only::n2o_publish(slot, prev),
        VersionStorage::AppendOldToNew => append_only::o2n_unlink_tail(slot, prev),
        VersionStorage::TimeTravel | VersionStorage::Delta => {
            let m = master_of(own);
            // SAFETY: the master lives as long as its row.
            in_place::undo(slot, unsafe { &*m }, prev, guard);
            if master_of(prev) != m {
                // The master was made by this write (a fresh insert, or an
                // insert over a ghost): nothing reachable refers to it now.
                Master::retire(m, guard);
            }
        }
    }
}

/// GC: versions older than `keep` (committed, visible at the horizon) are
/// garbage. Removes their secondary-index entries
/// (`index::before_prune`), then retires them. Returns the number
/// retired.
#[inline]
pub fn prune(t: &TableInner, tuple: u64, keep: *mut Version, guard: &Guard) -> u64 {
    // Secondary entries only the retired versions need go first (every
    // caller, the transaction-level queue or a tuple-level collector, gets
    // this by pruning here).
    crate::index::before_prune(t, tuple, keep, guard);
    match t.storage {
        VersionStorage::AppendOldToNew => append_only::o2n_prune(t.rows.slot(tuple), keep, guard),
        _ => {
            // SAFETY: `keep` is alive until its GC entry is processed.
            let tail = unsafe { &*keep }
                .next
                .swap(ptr::null_mut(), std::sync::atomic::Ordering::AcqRel);
            crate::gc::retire_chain(tail, guard)
        }
    }
}

/// Retires a whole row unlinked from its table (its slot's chain from
/// `head`, and its master). Returns versions retired.
pub fn retire_row(head: *mut Version, guard: &Guard) -> u64 {
    let m = master_of(head);
    let n = crate::gc::retire_chain(head, guard);
    if !m.is_null() {
        Master::retire(m, guard);
    }
    n
}

/// Frees a whole row at teardown (no thread can reach it).
///
/// # Safety
/// Exclusive access to the chain from `head`; each row is freed once.
pub unsafe fn free_row(head: *mut Version) {
    let m = master_of(head);
    let mut v = head;
    while !v.is_null() {
        // SAFETY: per the contract.
        unsafe {
            let next = (*v).next();
            Version::free(v);
            v = next;
        }
    }
    if !m.is_null() {
        // SAFETY: per the contract; the master belongs to this row only.
        unsafe { Master::free(m) };
    }
}

/// Memory of one row split by store: (main table bytes, version store bytes,
/// versions). Append-only schemes keep every version in the main table; the
/// in-place ones keep the master and the newest header there and the rest
/// (headers and their records) in the time-travel / delta store.
pub fn row_footprint(head: *mut Version) -> (u64, u64, u64) {
    let m = master_of(head);
    let mut main = 0u64;
    let mut store = 0u64;
    let mut n = 0u64;
    let mut v = head;
    while !v.is_null() {
        // SAFETY: the caller is pinned; chain versions are alive.
        let r = unsafe { &*v };
        let b = r.footprint() as u64;
        if r.is_in_place() && n > 0 {
            store += b;
        } else {
            main += b;
        }
        n += 1;
        v = r.next();
    }
    if !m.is_null() {
        // SAFETY: pinned; a reachable row's master is alive.
        main += unsafe { &*m }.footprint() as u64;
    }
    (main, store, n)
}
