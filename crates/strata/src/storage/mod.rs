//! Version storage: tuple headers, version chains, the indirection array,
//! and one module per storage scheme behind one interface.
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
//!  siro          newest -> oldest (hdrs)  newest: master (in place, seqlock)
//!                                         previous: full copy, in-row
//!                                         older: copies in classified
//!                                         off-row segments (vDriver)
//! ```
//!
//! # The seam
//!
//! Each scheme implements [`VersionStore`]; the functions below keep one
//! name per operation for the whole engine and pick the scheme's
//! implementation in one exhaustive `match` (`dispatch!`), each arm a
//! monomorphized call, so a read or a write costs what a direct call
//! would. Adding a scheme is one module and one arm there.
//!
//! ```text
//!  txn, cc, gc, index, log ──> storage::{newest, visible, install, replace_own,
//!                                       undo, publish_fresh, unpublish_fresh,
//!                                       versions, chain, survivor, prune}
//!                                   │ dispatch!(store.scheme)
//!        ┌─────────────┬────────────┴─────┬─────────────────────┐
//!        ▼             ▼                  ▼                     ▼
//!   append_only::N2O  append_only::O2N  time_travel::TimeTravel delta::Delta
//!                                     (= in_place::InPlace<FullCopies | Deltas>)
//!                                     siro::SiroStore (InPlace<InRowCopies>
//!                                     + relocation into segments)
//! ```
//!
//! Each scheme owns one invariant: the chain's order and where the newest
//! version is (N2O: at the slot; O2N: at the end), and that every kept
//! version's row image stays right whatever a prune removes (append-only
//! images are immutable; time-travel copies stand alone; a delta is merged
//! into its older neighbour's when its version leaves the middle of a
//! chain).
//!
//! Storage depends on nothing above it. It knows a transaction only through
//! [`visibility::TxnStates`] (the transaction table implements it), a
//! table only through its [`Store`], and secondary indexes only through
//! [`Store::indexed`]: whoever prunes tells the indexes first, and frees
//! go through [`reclaim`].
//!
//! See [`append_only`], [`time_travel`], [`delta`], [`in_place`],
//! [`siro`] and [`chain`].

pub mod append_only;
pub mod chain;
pub mod dead_zones;
pub mod delta;
pub mod dirty;
pub mod in_place;
pub mod indirection;
pub mod meter;
pub mod reclaim;
pub mod siro;
pub mod space;
pub mod time_travel;
pub mod version;
pub mod version_cache;
pub mod visibility;

pub use chain::{Chain, Span, Survivor, Versions};
pub(crate) use reclaim::RetireBatch;
pub use reclaim::{retire, retire_chain};

use crate::error::Result;
use crate::options::{NonInline, VersionStorage};
use crate::value::Value;
use crossbeam_epoch::Guard;
use in_place::{master_of, Master};
use indirection::IndirectionArray;
use meter::Gauged;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use version::Version;
use visibility::{Mode, TxnStates};

/// One table's version store: its tuple slots and how its versions are
/// kept. The table owns it (and dereferences to it).
pub struct Store {
    /// Where the versions live (`Options::version_storage`).
    pub scheme: VersionStorage,
    /// Whether new versions share or copy unchanged text attributes.
    pub non_inline: NonInline,
    /// Attributes per row (the cells of a new master).
    pub columns: usize,
    pub rows: IndirectionArray,
    /// The database's memory spaces versions are allocated from; None: the
    /// global allocator (`Options::memory_spaces`).
    pub spaces: Option<Arc<space::SpaceSet>>,
    /// Cooperative cleaning (O2N): the shared horizon and counter; None
    /// under every other GC policy.
    pub coop: Option<Arc<Coop>>,
    /// Whether secondary-index entries may name this table's versions (set
    /// before an index is published, cleared after the last one is gone):
    /// cutting a chain then needs index work first, which COOP's workers
    /// do not do, so they leave such chains to the full pass.
    pub indexed: AtomicBool,
    /// SIRO's segments, published dead zones and counters; None under
    /// every other scheme.
    pub siro: Option<Arc<siro::Siro>>,
    /// Whether the database's memory gauge counts the payloads this
    /// table's versions, masters and records hold, and its primary
    /// index's entries (`meter::Gauged`: its memory limit is set). Fixed
    /// before the table is shared: what a holder counted when it took
    /// something is what it releases.
    pub gauged: Gauged,
}

/// How a table's storage allocates: from its database's memory spaces
/// (None: the global allocator), counting for its memory gauge or not
/// (the table's [`Store::gauged`]). What a version, master or record
/// allocation takes ([`Store::alloc`]).
///
/// The flag is a reference into the store: an update reads it only on the
/// paths that count (a text or byte string), so a plain row's update does
/// not load it, nor keep it across the allocation's call.
#[derive(Clone, Copy)]
pub struct Alloc<'a> {
    pub spaces: Option<&'a space::SpaceSet>,
    pub gauged: &'a Gauged,
}

impl Alloc<'_> {
    /// The global allocator, counting nothing (tests, the models).
    #[cfg(any(test, strata_model))]
    pub const PLAIN: Alloc<'static> = Alloc {
        spaces: None,
        gauged: &Gauged::OFF,
    };
}

impl Store {
    /// An empty N2O store for rows of `columns` attributes.
    pub fn new(columns: usize) -> Store {
        Store {
            scheme: VersionStorage::AppendNewToOld,
            non_inline: NonInline::Shared,
            columns,
            rows: IndirectionArray::new(),
            spaces: None,
            coop: None,
            indexed: AtomicBool::new(false),
            siro: None,
            gauged: Gauged::OFF,
        }
    }

    /// How this table's versions, masters and records are allocated.
    #[inline(always)]
    pub fn alloc(&self) -> Alloc<'_> {
        Alloc {
            spaces: self.spaces.as_deref(),
            gauged: &self.gauged,
        }
    }
}

/// What cooperating workers share: the last horizon computed (a stale
/// one is lower, so safe) and how many versions they retired.
pub struct Coop {
    pub horizon: AtomicU64,
    pub reclaimed: AtomicU64,
    /// Bytes of the versions the workers retired (`Stats::gc_bytes_freed`).
    pub reclaimed_bytes: AtomicU64,
    /// `GcQueue::tuple_passes`: a worker cuts only while it holds it shared.
    pub passes: Arc<RwLock<()>>,
}

/// What a write puts in its new version.
pub enum NewRow<'a> {
    /// A whole row (insert).
    Row(Vec<Value>),
    /// The base version's row with these attributes changed.
    Update(&'a [(usize, &'a Value)]),
    /// A deletion, holding the primary key.
    Tombstone(Vec<Value>),
}

/// Which versions of one chain [`prune`] removes. Whatever the plan, the
/// kept versions keep their order and their row images.
#[derive(Clone, Copy, Debug)]
pub enum PrunePlan<'a> {
    /// Every version older than this committed one: the tail below it
    /// (N2O, in-place) or the prefix before it (O2N). Nothing when it is no
    /// longer in the chain (O2N: a later cut got there first).
    OlderThan(*mut Version),
    /// Exactly these committed versions, wherever they are (a dead zone
    /// in the middle of a chain, a prefix, a tail, any mix), sorted by
    /// address without duplicates ([`PrunePlan::versions`] makes one), so
    /// that each walk of the chain (the index kind's, storage's) tests
    /// membership by binary search without sorting again. Never the newest
    /// version nor the newest committed one (a writer may overwrite it or
    /// undo back to it); such a plan is a bug (a debug build panics, a
    /// release build keeps those versions). Not for an O2N table under
    /// cooperative cleaning, whose workers move the slot themselves.
    Versions(&'a [*mut Version]),
}

impl<'a> PrunePlan<'a> {
    /// A `Versions` plan of `victims`, which it sorts and deduplicates.
    pub fn versions(victims: &'a mut Vec<*mut Version>) -> PrunePlan<'a> {
        victims.sort_unstable();
        victims.dedup();
        PrunePlan::Versions(victims)
    }

    /// Whether `v` is one of a `Versions` plan's victims.
    #[inline]
    pub fn names(victims: &[*mut Version], v: *mut Version) -> bool {
        victims.binary_search(&v).is_ok()
    }
}

/// One version storage scheme. Implementations are types without data:
/// the state is the table's [`Store`]; every function is called through
/// the facade below with the scheme picked once.
///
/// The callers' side of the contract, for every scheme: the caller is
/// pinned (`crossbeam-epoch`) while it holds version pointers; writes
/// (`install`, `replace_own`, `undo`) come from the holder of the row's
/// write lock; `prune` comes from the row's only collector, after it told
/// the secondary indexes which versions go.
pub trait VersionStore {
    /// The option value this scheme implements.
    const SCHEME: VersionStorage;

    /// The newest version of `tuple` (committed or not); null if none.
    /// By default the slot holds it (newest-to-oldest chains).
    #[inline]
    fn newest(s: &Store, tuple: u64) -> *mut Version {
        s.rows.head(tuple)
    }

    /// The version of `tuple` visible at `ts` to transaction `me` (0: a
    /// read-only snapshot); null if none. By default a walk from the slot's
    /// newest version down (newest-to-oldest chains).
    #[inline]
    fn visible<T: TxnStates>(
        s: &Store,
        tuple: u64,
        ts: u64,
        me: u64,
        tids: &T,
        mode: Mode,
    ) -> Result<*mut Version> {
        visibility::visible(s.rows.head(tuple), ts, me, tids, mode)
    }

    /// Publishes a new version by transaction `tid` over the newest version
    /// `prev`, which `tid` has locked (a tombstone when `row` is an insert).
    fn install(
        s: &Store,
        tuple: u64,
        tid: u64,
        prev: *mut Version,
        row: NewRow<'_>,
    ) -> *mut Version;

    /// Replaces our own uncommitted version `own` (which overwrote `prev`,
    /// null for a fresh insert) by a new one, unlinking `own`.
    fn replace_own(
        s: &Store,
        tuple: u64,
        tid: u64,
        own: *mut Version,
        prev: *mut Version,
        row: NewRow<'_>,
        guard: &Guard,
    ) -> *mut Version;

    /// Undoes our write `own` over `prev` (null: a fresh insert).
    fn undo(s: &Store, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard);

    /// Publishes the first version of a fresh tuple.
    fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version;

    /// Takes back a fresh version that was never reachable.
    ///
    /// # Safety
    /// As for [`unpublish_fresh`].
    unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value>;

    /// The versions of `span`, newest first.
    fn versions(s: &Store, tuple: u64, span: Span) -> Versions;

    /// The newest version `keep` accepts, and what lies on either side.
    fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor;

    /// Removes what `plan` says; returns the number of versions retired.
    fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64;
}

/// The one place a scheme is chosen: runs `$body` with `$S` naming the
/// [`VersionStore`] of `$scheme`. Exhaustive, so a new scheme is
/// a compile error here until it has an arm.
macro_rules! dispatch {
    ($scheme:expr, $S:ident => $body:expr) => {
        match $scheme {
            VersionStorage::AppendNewToOld => {
                type $S = append_only::N2O;
                debug_assert_eq!($S::SCHEME, VersionStorage::AppendNewToOld);
                $body
            }
            VersionStorage::AppendOldToNew => {
                type $S = append_only::O2N;
                debug_assert_eq!($S::SCHEME, VersionStorage::AppendOldToNew);
                $body
            }
            VersionStorage::TimeTravel => {
                type $S = time_travel::TimeTravel;
                debug_assert_eq!($S::SCHEME, VersionStorage::TimeTravel);
                $body
            }
            VersionStorage::Delta => {
                type $S = delta::Delta;
                debug_assert_eq!($S::SCHEME, VersionStorage::Delta);
                $body
            }
            VersionStorage::Siro => {
                type $S = siro::SiroStore;
                debug_assert_eq!($S::SCHEME, VersionStorage::Siro);
                $body
            }
        }
    };
}

/// The newest version of `tuple` (committed or not); null if none.
// (always: with every scheme's arm behind it, a plain hint left it a call
// in the update path, twice per update.)
#[inline(always)]
pub fn newest(s: &Store, tuple: u64) -> *mut Version {
    dispatch!(s.scheme, S => S::newest(s, tuple))
}

/// The version of `tuple` visible at `ts` to transaction `me` (0: a
/// read-only snapshot); null if none. The caller is pinned.
#[inline]
pub fn visible<T: TxnStates>(
    s: &Store,
    tuple: u64,
    ts: u64,
    me: u64,
    tids: &T,
    mode: Mode,
) -> Result<*mut Version> {
    dispatch!(s.scheme, S => S::visible(s, tuple, ts, me, tids, mode))
}

/// Calls `f` on the row image of `v` (for a tombstone: the primary key).
/// Append-only versions are read in place; versions of the in-place schemes
/// are reconstructed (seqlock read of the master, records applied).
// (always: in `read_with`'s per-protocol copies a plain hint left it a
// call, ~30 instructions a read.)
#[inline(always)]
pub fn with_values<R>(v: &Version, f: impl FnOnce(&[Value]) -> R) -> R {
    if !v.is_in_place() || v.is_tombstone() {
        return f(v.data());
    }
    f(&in_place::values_of(v))
}

/// Calls `f` on the values of columns `cols` of `v`'s row image, in that
/// order (a projection; the caller checked the positions against the
/// schema; `v` is not a tombstone). An append-only version is read in
/// place and the chosen values are copied; an in-place version decodes
/// only those cells of the master, and only those attributes of the
/// records between it and `v` (Wu et al. §4.3, §7.3 Fig. 15), where
/// [`with_values`] decodes the whole row. Counted in this thread's
/// `meter::Meter::cells_decoded` either way. The caller is pinned.
#[inline]
pub fn with_columns<R>(v: &Version, cols: &[usize], f: impl FnOnce(&[Value]) -> R) -> R {
    debug_assert!(!v.is_tombstone(), "a projection of a deleted row");
    meter::decoded(cols.len());
    if !v.is_in_place() {
        let d = v.data();
        // Consecutive columns (YCSB's reads) are a slice of the image, read
        // in place; others are gathered.
        let run = cols
            .first()
            .filter(|&&c0| cols.iter().enumerate().all(|(i, &c)| c == c0 + i));
        if let Some(&c0) = run {
            return f(&d[c0..c0 + cols.len()]);
        }
        let out: in_place::Projected = cols.iter().map(|&c| d[c].clone()).collect();
        return f(&out);
    }
    let mut out = in_place::Projected::new();
    in_place::columns_of(v, cols, &mut out);
    f(&out)
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
    in_place::values_if_reachable(v).map(|d| f(&d))
}

/// The versions of `tuple` in `span`, newest first, whatever the chain's
/// direction. The caller is pinned.
#[inline]
pub fn versions(s: &Store, tuple: u64, span: Span) -> Versions {
    dispatch!(s.scheme, S => S::versions(s, tuple, span))
}

/// The versions of `tuple` in `span`, newest first, with their row images
/// (see [`Chain`]). The caller is pinned and is the row's collector or
/// holds its write lock.
pub fn chain(s: &Store, tuple: u64, span: Span) -> Chain {
    Chain::new(versions(s, tuple, span))
}

/// The newest version of `tuple` that `keep` accepts, and whether versions
/// exist above and below it (GC: the survivor at a horizon). The caller is
/// pinned.
#[inline]
pub fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor {
    dispatch!(s.scheme, S => S::survivor(s, tuple, keep))
}

/// Publishes a new version by transaction `tid` over the newest version
/// `prev`, which `tid` has locked (a tombstone when `row` is an insert).
/// Returns the new version. The caller marks `prev` overwritten.
///
/// `#[inline]`, like the transaction's write path that calls it: the update
/// path is then instantiated in the crate that calls the generic
/// `Transaction::update`, where the global allocator can be inlined (worth
/// about 10% of an update's instructions with mimalloc). (always: a plain
/// hint left the dispatch a call of its own, ~28 instructions an update.)
#[inline(always)]
pub fn install(
    s: &Store,
    tuple: u64,
    tid: u64,
    prev: *mut Version,
    row: NewRow<'_>,
) -> *mut Version {
    dispatch!(s.scheme, S => S::install(s, tuple, tid, prev, row))
}

/// Replaces our own uncommitted version `own` (which overwrote `prev`,
/// null for a fresh insert) by a new one, unlinking `own`. The caller
/// retires `own` once nothing refers to it any more: physical index
/// entries still name it until they are re-keyed, and a reader that
/// pinned after an early retire could find `own` through one of them
/// after it was freed.
pub fn replace_own(
    s: &Store,
    tuple: u64,
    tid: u64,
    own: *mut Version,
    prev: *mut Version,
    row: NewRow<'_>,
    guard: &Guard,
) -> *mut Version {
    let v = dispatch!(s.scheme, S => S::replace_own(s, tuple, tid, own, prev, row, guard));
    hand_down(own, prev);
    v
}

/// `own` leaves the chain above `prev`: what `prev` lent it and it did not
/// lend on goes back (`Version::hand_down`).
#[inline]
fn hand_down(own: *mut Version, prev: *mut Version) {
    // SAFETY: both are alive: `own` is ours until we retire it, `prev` is
    // locked by us.
    if let (Some(o), Some(p)) = unsafe { (own.as_ref(), prev.as_ref()) } {
        o.hand_down(p);
    }
}

/// Publishes the first version of a fresh tuple (not in the index yet).
pub fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
    dispatch!(s.scheme, S => S::publish_fresh(s, tuple, tid, row))
}

/// Takes back a fresh version that was never reachable (its key lost the
/// race into the index) and returns its row.
///
/// # Safety
/// `v` came from [`publish_fresh`] and no index ever held its tuple id.
pub unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
    // SAFETY: per the contract.
    dispatch!(s.scheme, S => unsafe { S::unpublish_fresh(s, tuple, v) })
}

/// Undoes our write `own` over `prev` (null: `own` was a fresh insert):
/// the row is exactly as before it when this returns. The caller still
/// holds `prev`'s lock and retires `own`.
pub fn undo(s: &Store, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard) {
    dispatch!(s.scheme, S => S::undo(s, tuple, own, prev, guard));
    hand_down(own, prev);
}

/// GC: removes the versions of `tuple` that `plan` names and retires them
/// (freed once every thread pinned now has unpinned). Returns the number
/// retired. The caller is the row's collector and has already removed the
/// secondary-index entries only those versions needed
/// (`index::before_prune`).
#[inline]
pub fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
    dispatch!(s.scheme, S => S::prune(s, tuple, plan, guard))
}

// A whole row (unlinked, torn down or measured) needs no scheme: its
// versions' headers say whether a master hangs off it.

/// Retires a whole row unlinked from its table (its slot's chain from
/// `head`, and its master). Returns versions retired. `gauged`: its
/// table's flag.
pub fn retire_row(head: *mut Version, gauged: Gauged, guard: &Guard) -> u64 {
    let m = master_of(head);
    let n = retire_chain(head, gauged, guard);
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

/// What the memory gauge counts for a whole row (`stats::MemoryGauge`):
/// what [`retire_row`] would release for it, blocks and payloads
/// (`Version::gauge_bytes`, `Master::gauge_bytes`). A dropped table's
/// reclaim credits it for each row, which goes without a retirement.
/// `gauged`: its table's flag (without it, only the blocks).
///
/// # Safety
/// Nobody changes the row (its table is unreachable); the caller is
/// pinned.
pub unsafe fn row_gauge_bytes(head: *mut Version, gauged: Gauged) -> u64 {
    let m = master_of(head);
    let mut bytes = 0u64;
    let mut v = head;
    while !v.is_null() {
        // SAFETY: per the contract, chain versions are alive and final.
        unsafe {
            let (b, p) = Version::gauge_bytes(v, (*v).len_word(), gauged);
            bytes += (b + p) as u64;
            v = (*v).next();
        }
    }
    // SAFETY: as above; a reachable row's master is alive.
    if let Some(m) = unsafe { m.as_ref() } {
        let (b, p) = m.gauge_bytes();
        bytes += (b + p) as u64;
    }
    bytes
}

/// Memory of one row split by store: (main table bytes, version store bytes,
/// versions). Append-only schemes keep every version in the main table; the
/// in-place ones keep the master and the newest header there and the rest
/// (headers and their records) in the time-travel / delta store. SIRO
/// keeps its previous version's copy in-row too, and counts its off-row
/// versions (headers and segment images) as the version store. A record
/// in a version's block that no version reads any more (GC cut the one it
/// was made for) counts where its block does: after a cut below the
/// newest version, in the main table, until the row's next update lets
/// that block go.
pub fn row_footprint(head: *mut Version) -> (u64, u64, u64) {
    let m = master_of(head);
    let mut main = 0u64;
    let mut store = 0u64;
    let mut n = 0u64;
    let mut v = head;
    let mut seen = version::Payloads::default();
    while !v.is_null() {
        // SAFETY: the caller is pinned; chain versions are alive.
        let r = unsafe { &*v };
        let mut b = r.footprint(&mut seen) as u64;
        // A record in this version's block is counted with the version
        // below that reads it (its footprint follows its record word);
        // one nobody reads any more (that version was cut, or given a
        // record of its own) still takes its room in this block, until
        // the block goes.
        let emb = r.embedded();
        // SAFETY: as above (the next version, and the record in our block).
        let read = unsafe { r.next().as_ref() }
            .and_then(Version::ext)
            .is_some_and(|e| e.record() == emb);
        if !emb.is_null() && !read {
            // SAFETY: our block's record lives as long as the block.
            b += unsafe { &*emb }.footprint(&mut seen) as u64;
        }
        if r.is_in_place() && n > 0 && !siro::is_in_row_copy(r) {
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

#[cfg(test)]
mod tests {
    use super::visibility::TxnState;
    use super::*;
    use crossbeam_epoch as epoch;
    use std::ptr;
    use std::sync::atomic::Ordering::SeqCst;

    /// Every version in these tests is stamped: visibility never asks.
    struct Stamped;

    impl TxnStates for Stamped {
        fn settled(&self, _: u64) -> TxnState {
            unreachable!("every version is stamped")
        }
        fn decided(&self, _: u64) -> TxnState {
            unreachable!("every version is stamped")
        }
        fn running_ts(&self, _: u64) -> Option<u64> {
            unreachable!("every version is stamped")
        }
    }

    fn row(a: i64, b: &str, c: i64) -> Vec<Value> {
        vec![Value::Int(a), Value::from(b), Value::Int(c)]
    }

    /// One committed version: its commit timestamp and row image (None: a
    /// tombstone).
    struct Written {
        v: *mut Version,
        ts: u64,
        image: Option<Vec<Value>>,
    }

    /// A row written eight times, each write committed at `10 * (i + 1)`:
    /// updates of one or two attributes, a delete and a re-insert in the
    /// middle (so a tombstone and a delta below it are in the chain).
    fn build(scheme: VersionStorage) -> (Store, u64, Vec<Written>) {
        let mut s = Store::new(3);
        s.scheme = scheme;
        let tuple = s.rows.allocate().unwrap();
        let commit = |v: *mut Version, ts: u64| {
            // SAFETY: ours, alive.
            let r = unsafe { &*v };
            r.begin.store(ts, SeqCst);
            r.txn_id.store(0, SeqCst);
        };
        let mut out = Vec::new();
        let mut image = row(0, "t0", 100);
        let v = publish_fresh(&s, tuple, 1, image.clone());
        commit(v, 10);
        out.push(Written {
            v,
            ts: 10,
            image: Some(image.clone()),
        });
        enum W {
            Update(Vec<(usize, Value)>),
            Delete,
            Insert(Vec<Value>),
        }
        let writes = vec![
            W::Update(vec![(0, Value::Int(1))]),
            W::Update(vec![(1, Value::from("t2"))]),
            W::Update(vec![(0, Value::Int(3)), (2, Value::Int(300))]),
            W::Delete,
            W::Insert(row(5, "t5", 500)),
            W::Update(vec![(1, Value::from("t6"))]),
            W::Update(vec![(0, Value::Int(7))]),
        ];
        for (i, w) in writes.into_iter().enumerate() {
            let ts = 10 * (i as u64 + 2);
            let prev = newest(&s, tuple);
            let tid = 2 + i as u64;
            let (v, img) = match w {
                W::Update(ch) => {
                    for (c, v) in &ch {
                        image[*c] = v.clone();
                    }
                    let refs: Vec<(usize, &Value)> = ch.iter().map(|(c, v)| (*c, v)).collect();
                    let v = install(&s, tuple, tid, prev, NewRow::Update(&refs));
                    (v, Some(image.clone()))
                }
                W::Delete => {
                    let key = vec![image[0].clone()];
                    (install(&s, tuple, tid, prev, NewRow::Tombstone(key)), None)
                }
                W::Insert(r) => {
                    image = r.clone();
                    (
                        install(&s, tuple, tid, prev, NewRow::Row(r)),
                        Some(image.clone()),
                    )
                }
            };
            commit(v, ts);
            out.push(Written { v, ts, image: img });
        }
        (s, tuple, out)
    }

    /// Reads at every kept version's timestamp find it with its image, by
    /// the visibility check, `with_values` (the master path) and the chain
    /// iterator (the chained-records path).
    fn check(tag: &str, s: &Store, tuple: u64, kept: &[&Written]) {
        for w in kept {
            let v = visible(s, tuple, w.ts, 0, &Stamped, Mode::Snapshot).unwrap();
            assert_eq!(v, w.v, "{tag}: version at {}", w.ts);
            // SAFETY: kept versions live as long as the store (nothing else
            // touches the row).
            let r = unsafe { &*v };
            match &w.image {
                None => assert!(r.is_tombstone(), "{tag}: {}", w.ts),
                Some(img) => assert_eq!(
                    &with_values(r, |d| d.to_vec()),
                    img,
                    "{tag}: image at {}",
                    w.ts
                ),
            }
        }
        let mut c = chain(s, tuple, Span::ALL);
        let mut seen = Vec::new();
        while let Some((v, img)) = c.step() {
            seen.push((v, img.map(<[Value]>::to_vec)));
        }
        let want: Vec<_> = kept.iter().rev().map(|w| (w.v, w.image.clone())).collect();
        assert_eq!(seen, want, "{tag}: chain newest first");
        assert_eq!(newest(s, tuple), kept.last().unwrap().v, "{tag}: newest");
    }

    /// `prune` with a plan of versions anywhere in the chain (the middle,
    /// runs, around the tombstone, the oldest, all but the newest) on every
    /// scheme: the kept versions keep their order and their images. On
    /// delta storage this needs the removed deltas merged into the older
    /// neighbour's; time-travel copies stand alone.
    #[test]
    fn pruning_any_set_of_versions_keeps_every_other_image() {
        let plans: &[&[usize]] = &[
            &[1, 2],
            &[3],
            &[4],
            &[4, 5],
            &[2, 4],
            &[0],
            &[6],
            &[1, 3, 5],
            &[0, 1, 2, 3, 4, 5, 6],
        ];
        for scheme in VersionStorage::ALL {
            for plan in plans {
                let tag = format!("{scheme} remove {plan:?}");
                let (s, tuple, written) = build(scheme);
                let all: Vec<&Written> = written.iter().collect();
                check(&format!("{tag} (before)"), &s, tuple, &all);
                let mut victims: Vec<*mut Version> = plan.iter().map(|&i| written[i].v).collect();
                // Pinned only while pruning: nothing else touches this row,
                // so the kept versions stay alive without a pin, and a test
                // that holds the epoch back would slow other tests' frees.
                let n = prune(&s, tuple, PrunePlan::versions(&mut victims), &epoch::pin());
                assert_eq!(n, plan.len() as u64, "{tag}");
                let kept: Vec<&Written> = written
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !plan.contains(i))
                    .map(|(_, w)| w)
                    .collect();
                check(&tag, &s, tuple, &kept);
                // A read between two kept versions now sees the older one
                // (the plan said no snapshot is there).
                for w in written.iter().filter(|w| victims.contains(&w.v)) {
                    let older = kept.iter().rev().find(|k| k.ts < w.ts).map(|k| k.v);
                    let got = visible(&s, tuple, w.ts, 0, &Stamped, Mode::Snapshot).unwrap();
                    assert_eq!(got, older.unwrap_or(ptr::null_mut()), "{tag}: at {}", w.ts);
                }
                // Dropping the store frees the kept versions; the removed
                // ones were retired through the epoch.
            }
        }
    }

    /// The tail below a survivor (N2O, in-place) or the prefix before it
    /// (O2N) through the same plan.
    #[test]
    fn pruning_older_than_a_survivor_cuts_whichever_end_holds_the_old_versions() {
        for scheme in VersionStorage::ALL {
            let (s, tuple, written) = build(scheme);
            let n = prune(&s, tuple, PrunePlan::OlderThan(written[5].v), &epoch::pin());
            assert_eq!(n, 5, "{scheme}");
            let kept: Vec<&Written> = written[5..].iter().collect();
            check(&format!("{scheme} older than 5"), &s, tuple, &kept);
        }
    }

    /// Every arm of `dispatch!` names the type that implements its own
    /// scheme (a swapped arm would run one scheme's code under another's
    /// name).
    #[test]
    fn dispatch_picks_the_schemes_own_type() {
        for scheme in VersionStorage::ALL {
            assert_eq!(dispatch!(scheme, S => S::SCHEME), scheme);
        }
    }

    /// A plan naming the newest version is a bug the store refuses.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "newest")]
    fn a_plan_may_not_remove_the_newest_version() {
        let (s, tuple, written) = build(VersionStorage::Delta);
        prune(
            &s,
            tuple,
            PrunePlan::Versions(&[written[7].v]),
            &epoch::pin(),
        );
    }
}
