//! SIRO version storage: vDriver's "single version in-row, remaining
//! versions off-row" (Kim et al., SIGMOD 2020, §3.2-§3.4), adapted to
//! memory.
//!
//! A row keeps its current version and its previous one *in-row*; every
//! older version is relocated *off-row* into a version segment of one of
//! three clusters (HOT, COLD, LLT), or, if the dead zones already say no
//! snapshot can read it, is never copied at all (the paper's first prune,
//! §3.3 "dead zone-based version pruning"):
//!
//! ```text
//!  in-row (the main table)                      off-row (version segments)
//!  slot ──> [hdr v9] ──> [hdr v8] ──> [hdr v7] ──> [hdr v4] ──> [hdr v2]
//!             │ owner      │ record     │ record     │ record     │ record
//!             ▼            ▼            ▼            ▼            ▼
//!  master  [a=9 b=9]   [a=8 b=8]     HOT seg 3   LLT seg 1    COLD seg 2
//!          v^{r,0}     v^{r,1}       ┌─ segment: (v_min, v_max), class,
//!          (seqlock)   (full copy)   │  locators (tuple, header) of up to
//!                                    └─ segment_bytes of images; sealed when full
//! ```
//!
//! # Mapping onto Strata
//!
//! * **Two in-row images.** The current image is the in-place master
//!   (`in_place`, read under its seqlock like the other in-place schemes);
//!   the previous version's image is the full copy the overwrite displaced
//!   (as time-travel keeps it), tagged [`place::IN_ROW`]. An abort restores
//!   the master from that copy and drops it (the in-place undo), which is
//!   what the paper's toggle flip achieves; Strata's readers already
//!   validate the master by its seqlock, so the pair is a master plus one
//!   immutable copy rather than two cell arrays and a toggle bit.
//! * **Relocation (vSORTER).** When a write makes v^{r,1} the new
//!   v^{r,1→2}, its in-row copy is moved off-row: the dead-zone test first
//!   (a dead version's image is retired, never copied: [`Counters`]'
//!   `pruned_at_relocation`), else classification ([`classify`], Fig. 7)
//!   and a copy tagged with its class into its cluster's open segment.
//! * **The LLB.** The per-row chain of locators is the `Version` header
//!   chain: each header stays at its address for its whole life (read
//!   sets, locks and SSN stamps point at it) and its `record` points at its
//!   image's place (in-row copy or off-row segment image). A segment keeps
//!   the locators (tuple, header address) of its images, so it can be cut.
//! * **Segment pruning (vCUTTER).** A sealed segment whose
//!   `[v_min, v_max]` lies inside one dead zone holds only dead versions;
//!   the collector takes it whole ([`take_dead_segments`]) and unlinks its
//!   versions from their chains (`gc::siro`: the cut and the fix of the
//!   chain's links happen in one `PrunePlan::Versions` step per row, so a
//!   chain is never left with a hole a reader could fall into). On a
//!   table with secondary indexes the dead descriptors are dropped and the
//!   pass's row step unlinks their versions with the rest of the row's dead
//!   ones, in the one walk its index work needs.
//! * **Cleaning.** Dead versions in segments that are not wholly dead are
//!   removed one by one by the dead-zone collector's row step (the
//!   paper's "cleaning"); the counters tell the three apart.
//!
//! The images of first-pruned versions are gone while their headers are
//! still linked (the collector unlinks them at its next pass). No snapshot
//! reads them (that is what dead means), but secondary-index maintenance
//! reads the images of the versions it removes, so a table with secondary
//! indexes relocates every version and leaves dead ones to the collector.
//!
//! Invariant: every version a live snapshot can read has an image (in-row
//! or in a segment); a version without one is dead by zones that were
//! published by the collector (and dead zones stay dead: a snapshot that
//! begins later is above every overwritten version's end).

use super::chain::{self, Newest, Span, Survivor, Versions};
use super::dead_zones::DeadZones;
use super::in_place::{retire_record, InPlace, Record, Records, WriteSection};
use super::time_travel::copy_out;
use super::version::{Version, INF_TS, TID_MARK};
use super::visibility::{Mode, TxnStates};
use super::{NewRow, PrunePlan, Store, VersionStore};
use crate::error::Result;
use crate::options::{SiroTuning, VersionStorage};
use crate::value::Value;
use crossbeam_epoch::Guard;
use parking_lot::{Mutex, RwLock};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

/// Where a SIRO image lives (`Record::place`).
pub mod place {
    /// The previous version's in-row copy.
    pub const IN_ROW: u8 = 1;
    /// Off-row, in a segment of the HOT cluster.
    pub const HOT: u8 = 2;
    /// Off-row, COLD cluster.
    pub const COLD: u8 = 3;
    /// Off-row, LLT cluster.
    pub const LLT: u8 = 4;
}

/// The version clusters of §3.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Overwritten soon after it was written (`end - begin < δ_hot`).
    Hot,
    /// Lived longer.
    Cold,
    /// A snapshot read of a long-lived transaction.
    Llt,
}

impl Class {
    pub fn index(self) -> usize {
        match self {
            Class::Hot => 0,
            Class::Cold => 1,
            Class::Llt => 2,
        }
    }

    fn place(self) -> u8 {
        match self {
            Class::Hot => place::HOT,
            Class::Cold => place::COLD,
            Class::Llt => place::LLT,
        }
    }

    fn of_place(p: u8) -> Option<Class> {
        match p {
            place::HOT => Some(Class::Hot),
            place::COLD => Some(Class::Cold),
            place::LLT => Some(Class::Llt),
            _ => None,
        }
    }
}

/// Version classification (§3.3, Fig. 7) of a version committed at
/// `begin` and overwritten at `end`: LLT if a snapshot older than δ_LLT
/// (in commits, see `SiroTuning`) reads it, else HOT if it lived less than
/// δ_hot, else COLD. Without zones (none published yet) no snapshot is
/// known, so nothing is LLT.
pub fn classify(begin: u64, end: u64, zones: Option<&DeadZones>, t: &SiroTuning) -> Class {
    if let Some(z) = zones {
        let now = end.max(z.floor());
        if z.read_by_snapshot_below(begin, end, now.saturating_sub(t.llt_commits)) {
            return Class::Llt;
        }
    }
    if end.saturating_sub(begin) < t.hot_commits {
        Class::Hot
    } else {
        Class::Cold
    }
}

/// One version segment: the VS descriptor (`v_min`, `v_max`) and the
/// locators of the images relocated into it.
#[derive(Debug, Default)]
pub struct Segment {
    /// Smallest `begin` of its versions.
    pub v_min: u64,
    /// Largest `end` of its versions.
    pub v_max: u64,
    /// Bytes of images relocated into it.
    pub bytes: usize,
    /// Full: no more images go in, so the descriptor is final.
    pub sealed: bool,
    /// (tuple, header address) of each image. Addresses, not pointers: a
    /// locator whose version the row step already pruned is never
    /// dereferenced (the cut looks its row up by walking the chain).
    pub locators: Vec<(u64, usize)>,
}

impl Segment {
    fn add(&mut self, tuple: u64, v: *mut Version, begin: u64, end: u64, bytes: usize, cap: usize) {
        if self.locators.is_empty() {
            self.v_min = begin;
            self.v_max = end;
        } else {
            self.v_min = self.v_min.min(begin);
            self.v_max = self.v_max.max(end);
        }
        self.bytes += bytes;
        self.locators.push((tuple, v as usize));
        self.sealed = self.bytes >= cap;
    }

    /// Whether every version in it is dead: `[v_min, v_max]` lies inside
    /// one dead zone (§3.4, Fig. 8 left).
    pub fn is_dead(&self, zones: &DeadZones) -> bool {
        !self.locators.is_empty() && zones.is_dead(self.v_min, self.v_max)
    }
}

/// The pruning breakdown of one table, per class (index: [`Class::index`]).
#[derive(Debug, Default)]
pub struct Counters {
    /// Images copied off-row.
    pub relocated: [AtomicU64; 3],
    /// Dead at relocation: never copied off-row.
    pub pruned_at_relocation: [AtomicU64; 3],
    /// Off-row versions unlinked because their whole segment was dead.
    pub segment_pruned: [AtomicU64; 3],
    /// Off-row versions unlinked one at a time (the row step, a horizon cut).
    pub cleaned: [AtomicU64; 3],
    /// Segments dropped whole.
    pub segments_dropped: AtomicU64,
}

/// A table's SIRO state: the published dead zones, the clusters and the
/// counters (`Store::siro`).
pub struct Siro {
    pub tuning: SiroTuning,
    /// The collector's latest zones, for writers' first prune and
    /// classification (a read lock and an `Arc` clone per relocation).
    zones: RwLock<Option<Arc<DeadZones>>>,
    /// Per class: its segments, the last one open.
    clusters: [Mutex<Vec<Segment>>; 3],
    pub counters: Counters,
}

impl Siro {
    pub fn new(tuning: SiroTuning) -> Siro {
        Siro {
            tuning,
            zones: RwLock::new(None),
            clusters: Default::default(),
            counters: Counters::default(),
        }
    }

    /// The collector publishes the zones it built (once per table per
    /// pass).
    pub fn publish(&self, zones: &DeadZones) {
        *self.zones.write() = Some(Arc::new(zones.clone()));
    }

    /// The zones writers prune with (None before the first pass).
    pub fn zones(&self) -> Option<Arc<DeadZones>> {
        self.zones.read().clone()
    }

    /// Segments per class (open one included), for stats and tests.
    pub fn segment_counts(&self) -> [usize; 3] {
        let mut out = [0; 3];
        for (o, c) in out.iter_mut().zip(&self.clusters) {
            *o = c.lock().iter().filter(|s| !s.locators.is_empty()).count();
        }
        out
    }

    fn append(
        &self,
        class: Class,
        tuple: u64,
        v: *mut Version,
        begin: u64,
        end: u64,
        bytes: usize,
    ) {
        let mut c = self.clusters[class.index()].lock();
        if c.last().is_none_or(|s| s.sealed) {
            c.push(Segment::default());
        }
        let seg = c.last_mut().expect("an open segment");
        seg.add(tuple, v, begin, end, bytes, self.tuning.segment_bytes);
    }
}

thread_local! {
    /// Set while the collector cuts dead segments: prunes count as segment
    /// pruning, not cleaning.
    static CUTTING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (the collector's pruning of the versions [`take_dead_segments`]
/// returned) so that the counters credit segment pruning.
pub fn cutting<R>(f: impl FnOnce() -> R) -> R {
    CUTTING.with(|c| c.set(true));
    let r = f();
    CUTTING.with(|c| c.set(false));
    r
}

/// Takes the sealed segments of `s` that lie inside one dead zone: from
/// each, the locators whose tuple `mine` accepts (the caller collects
/// those rows); a segment left without locators is dropped. The caller
/// unlinks the versions (those still in their chains) inside [`cutting`].
pub fn take_dead_segments(
    s: &Store,
    zones: &DeadZones,
    mine: impl Fn(u64) -> bool,
) -> Vec<(u64, usize)> {
    let Some(st) = s.siro.as_deref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in &st.clusters {
        let mut segs = c.lock();
        segs.retain_mut(|seg| {
            if !seg.sealed || !seg.is_dead(zones) {
                return true;
            }
            seg.locators.retain(|&(tuple, v)| {
                if mine(tuple) {
                    out.push((tuple, v));
                    false
                } else {
                    true
                }
            });
            if seg.locators.is_empty() {
                st.counters.segments_dropped.fetch_add(1, Relaxed);
                false
            } else {
                true
            }
        });
    }
    out
}

/// What an overwrite leaves in-row: a full copy of the displaced current
/// image, which becomes the previous version's in-row image.
pub struct InRowCopies;

impl Records for InRowCopies {
    const SCHEME: VersionStorage = VersionStorage::Siro;

    #[inline]
    fn displace(sec: &mut WriteSection<'_>, _image: Option<&[Value]>) -> Record {
        copy_out(sec).placed(place::IN_ROW)
    }
}

type Inner = InPlace<InRowCopies>;

/// The SIRO scheme (see the module doc): the in-place machinery with
/// in-row copies, plus relocation on install and the counters on prune.
pub struct SiroStore;

impl VersionStore for SiroStore {
    const SCHEME: VersionStorage = VersionStorage::Siro;

    #[inline]
    fn visible<T: TxnStates>(
        s: &Store,
        tuple: u64,
        ts: u64,
        me: u64,
        tids: &T,
        mode: Mode,
    ) -> Result<*mut Version> {
        Inner::visible(s, tuple, ts, me, tids, mode)
    }

    fn install(
        s: &Store,
        tuple: u64,
        tid: u64,
        prev: *mut Version,
        row: NewRow<'_>,
    ) -> *mut Version {
        let v = Inner::install(s, tuple, tid, prev, row);
        relocate_below(s, tuple, prev, &crossbeam_epoch::pin());
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
        Inner::replace_own(s, tuple, tid, own, prev, row, guard)
    }

    fn undo(s: &Store, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard) {
        Inner::undo(s, tuple, own, prev, guard)
    }

    fn publish_fresh(s: &Store, tuple: u64, tid: u64, row: Vec<Value>) -> *mut Version {
        Inner::publish_fresh(s, tuple, tid, row)
    }

    unsafe fn unpublish_fresh(s: &Store, tuple: u64, v: *mut Version) -> Vec<Value> {
        // SAFETY: per the contract.
        unsafe { Inner::unpublish_fresh(s, tuple, v) }
    }

    fn versions(s: &Store, tuple: u64, span: Span) -> Versions {
        Inner::versions(s, tuple, span)
    }

    fn survivor(s: &Store, tuple: u64, keep: impl FnMut(&Version) -> bool) -> Survivor {
        Inner::survivor(s, tuple, keep)
    }

    fn prune(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
        if let Some(st) = s.siro.as_deref() {
            let credit = |v: *mut Version| {
                if let Some(c) = off_row_class(v) {
                    let cut = CUTTING.with(Cell::get);
                    let k = if cut {
                        &st.counters.segment_pruned
                    } else {
                        &st.counters.cleaned
                    };
                    k[c.index()].fetch_add(1, Relaxed);
                }
            };
            match plan {
                PrunePlan::Versions(victims) => victims.iter().for_each(|&v| credit(v)),
                PrunePlan::OlderThan(keep) => {
                    // SAFETY: pinned; the survivor and its tail are alive.
                    let mut v = unsafe { (*keep).next() };
                    while !v.is_null() {
                        credit(v);
                        // SAFETY: as above.
                        v = unsafe { (*v).next() };
                    }
                }
            }
        }
        match plan {
            PrunePlan::OlderThan(keep) => super::append_only::cut_below(keep, guard),
            // Every SIRO image stands alone (a full copy, or none for a
            // version pruned at relocation, which no snapshot reads), so
            // unlike delta storage nothing below a removed run needs a
            // merged record.
            PrunePlan::Versions(victims) => {
                chain::remove(s.rows.slot(tuple), victims, Newest::First, |_, _| {}, guard)
            }
        }
    }
}

/// The class of an off-row version (None: in-row, a tombstone, or pruned
/// at relocation). The caller is pinned.
fn off_row_class(v: *mut Version) -> Option<Class> {
    // SAFETY: pinned; chain versions and their records are alive.
    let r = unsafe { v.as_ref() }?;
    let rec = unsafe { r.ext()?.record.load(Acquire).as_ref() }?;
    Class::of_place(rec.place())
}

/// After a write over `prev` (now v^{r,1}): moves the in-row copies below
/// it off-row (normally one, v^{r,1→2}; more when an earlier relocation
/// had to wait for its overwriter's commit stamp). The caller holds the
/// row's write lock and is pinned.
fn relocate_below(s: &Store, tuple: u64, prev: *mut Version, guard: &Guard) {
    // SAFETY: `prev` is locked by us and alive.
    let Some(p) = (unsafe { prev.as_ref() }) else {
        return;
    };
    let mut x = p.next();
    // SAFETY: pinned; the chain below a locked version is alive (the
    // collector retires through the epoch).
    while let Some(r) = unsafe { x.as_ref() } {
        x = r.next();
        if r.is_tombstone() {
            continue;
        }
        let Some(ext) = r.ext() else { return };
        let rec = ext.record.load(Acquire);
        // SAFETY: records are retired through the epoch; we are pinned.
        match unsafe { rec.as_ref() } {
            Some(rr) if rr.place() == place::IN_ROW => {}
            // Off-row already (or pruned): so is everything below.
            _ => return,
        }
        let begin = r.begin.load(SeqCst);
        let end = r.end.load(SeqCst);
        if begin & TID_MARK != 0 || end & TID_MARK != 0 || end == INF_TS {
            // Its overwriter is still stamping: the next write moves it.
            continue;
        }
        relocate(s, tuple, r, begin, end, guard);
    }
}

/// Relocates one in-row copy (§3.3, Fig. 6(b)): first prune by the
/// published zones, else classify and copy into the class's segment.
fn relocate(s: &Store, tuple: u64, r: &Version, begin: u64, end: u64, guard: &Guard) {
    let ext = r.ext().expect("an in-place version");
    let v = r as *const Version as *mut Version;
    let st = s.siro.as_deref();
    let zones = st.and_then(Siro::zones);
    let tuning = st.map_or_else(SiroTuning::default, |st| st.tuning.clone());
    let class = classify(begin, end, zones.as_deref(), &tuning);
    let indexed = s.indexed.load(SeqCst);
    if let (Some(st), Some(z)) = (st, zones.as_deref()) {
        if !indexed && z.is_dead(begin, end) {
            let old = ext.record.swap(std::ptr::null_mut(), AcqRel);
            retire_record(old, guard);
            st.counters.pruned_at_relocation[class.index()].fetch_add(1, Relaxed);
            return;
        }
    }
    // SAFETY: pinned; the in-row copy is immutable and retired through the
    // epoch only after being swapped out (by us, below).
    let Some(old) = (unsafe { ext.record.load(Acquire).as_ref() }) else {
        return;
    };
    let copy = Record::full(old.full_values().to_vec()).placed(class.place());
    let bytes = copy.footprint(&mut super::version::Payloads::default());
    let old = ext.record.swap(Box::into_raw(Box::new(copy)), AcqRel);
    retire_record(old, guard);
    if let Some(st) = st {
        st.counters.relocated[class.index()].fetch_add(1, Relaxed);
        st.append(class, tuple, v, begin, end, bytes);
    }
}

/// Whether `v` (an in-place version whose record the caller found null)
/// was pruned at relocation: every other in-place version whose
/// overwriter committed has a record (the overwrite sets it, inside its
/// write section, before the overwriter can commit).
pub(crate) fn is_hole(v: &Version) -> bool {
    let end = v.end.load(SeqCst);
    end & TID_MARK == 0 && end != INF_TS && !v.is_tombstone()
}

/// Whether `v`'s image is SIRO's in-row previous copy.
pub(crate) fn is_in_row_copy(v: &Version) -> bool {
    v.ext()
        // SAFETY: the caller is pinned; records are retired via the epoch.
        .and_then(|e| unsafe { e.record.load(Acquire).as_ref() })
        .is_some_and(|r| r.place() == place::IN_ROW)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(floor: u64, begins: &[u64]) -> DeadZones {
        DeadZones::new(begins.to_vec(), floor)
    }

    fn tuning() -> SiroTuning {
        SiroTuning {
            segment_bytes: 1024,
            hot_commits: 10,
            llt_commits: 100,
        }
    }

    /// Fig. 7: read by a snapshot older than δ_LLT: LLT; else by lifetime
    /// against δ_hot.
    #[test]
    fn classification_follows_the_papers_rules() {
        let t = tuning();
        // A snapshot at 50, now (floor) 500: older than 100 commits: an LLT.
        let z = zones(500, &[50]);
        assert_eq!(classify(40, 60, Some(&z), &t), Class::Llt);
        // Not read by it (ended before it began): by lifetime.
        assert_eq!(classify(40, 45, Some(&z), &t), Class::Hot);
        assert_eq!(classify(10, 45, Some(&z), &t), Class::Cold);
        // A young snapshot (at 450, 50 commits old) is no LLT.
        let z = zones(500, &[450]);
        assert_eq!(classify(446, 455, Some(&z), &t), Class::Hot);
        assert_eq!(classify(400, 455, Some(&z), &t), Class::Cold);
        // No zones published yet.
        assert_eq!(classify(1, 5, None, &t), Class::Hot);
        assert_eq!(classify(1, 50, None, &t), Class::Cold);
    }

    /// A segment is sealed at its byte budget, keeps (v_min, v_max) over
    /// its versions, and is dead only when that range is inside one zone.
    #[test]
    fn segments_seal_and_are_dead_only_inside_one_zone() {
        let mut seg = Segment::default();
        let v = std::ptr::null_mut();
        seg.add(1, v, 20, 30, 400, 1000);
        seg.add(2, v, 12, 25, 400, 1000);
        assert!(!seg.sealed);
        seg.add(3, v, 26, 40, 400, 1000);
        assert!(seg.sealed);
        assert_eq!((seg.v_min, seg.v_max), (12, 40));
        // Snapshots at 10 and 50: [12, 40] lies inside the zone [10, 50].
        assert!(seg.is_dead(&zones(100, &[10, 50])));
        // One at 30 splits it: the segment holds a live version.
        assert!(!seg.is_dead(&zones(100, &[10, 30, 50])));
        // Above the floor a snapshot may still come.
        assert!(!seg.is_dead(&zones(35, &[10])));
        assert!(!Segment::default().is_dead(&zones(100, &[])));
    }

    /// Only sealed, wholly dead segments are taken, and only the
    /// locators of the caller's rows; a segment is dropped once empty.
    #[test]
    fn segment_pruning_takes_sealed_dead_segments_by_partition() {
        let mut s = Store::new(1);
        s.scheme = VersionStorage::Siro;
        s.siro = Some(Arc::new(Siro::new(tuning())));
        let st = s.siro.as_deref().unwrap();
        let v = std::ptr::null_mut();
        // HOT: one sealed segment [10, 20] (rows 1 and 2), then an open one.
        st.append(Class::Hot, 1, v, 10, 15, 600);
        st.append(Class::Hot, 2, v, 15, 20, 600);
        st.append(Class::Hot, 3, v, 21, 22, 10);
        // LLT: a sealed segment an LLT at 12 reads.
        st.append(Class::Llt, 4, v, 11, 40, 2000);
        assert_eq!(st.segment_counts(), [2, 0, 1]);
        let z = zones(100, &[5, 30]);
        // Partition of odd rows first.
        let odd = take_dead_segments(&s, &z, |t| t % 2 == 1);
        assert_eq!(odd, vec![(1, 0)]);
        assert_eq!(st.segment_counts(), [2, 0, 1], "row 2 still in it");
        let even = take_dead_segments(&s, &z, |t| t % 2 == 0);
        assert_eq!(even, vec![(2, 0)]);
        assert_eq!(st.segment_counts(), [1, 0, 1], "dropped once empty");
        assert_eq!(st.counters.segments_dropped.load(Relaxed), 1);
        // The LLT ends: its segment dies.
        let all = take_dead_segments(&s, &zones(100, &[5]), |_| true);
        assert_eq!(all, vec![(4, 0)]);
        assert_eq!(st.segment_counts(), [1, 0, 0]);
    }
}
