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
//! * **Two in-row images and the toggle (§3.2, §3.5).** The row's two
//!   in-row slots are the in-place master's cells (read under its seqlock
//!   like the other in-place schemes) and the full copy an overwrite
//!   displaces (as time-travel keeps it), tagged [`place::IN_ROW`], on
//!   the previous version. Which one holds the current image is the
//!   toggle: normally the cells (the master's `owner` is the newest
//!   version); after an abort, the copy. An abort only unlinks the
//!   aborted version and clears the master's owner
//!   (`in_place::toggle_back`): the previous version, which already reads
//!   from its copy, is current again, nothing is copied back, and the
//!   cells keep the aborted image as the paper's placeholder keeps its
//!   bytes. The next write over that version finds its image already in
//!   the copy, so nothing is displaced: the cells take the new image
//!   (`in_place::install_over_copy`), and the toggle flips back. The
//!   paper toggles a bit between two equal slots; here the slots differ
//!   (a seqlocked master shared with time-travel and delta, and a copy),
//!   so the "bit" is whether the newest committed version has an in-row
//!   copy (`is_toggled`); readers need no change, since a version with
//!   a full copy is read from it first (`in_place::values_of`).
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
//!   the collector takes it whole ([`take_dead_segments`], which also
//!   names the cut event) and cuts its versions out of their chains by
//!   cut-and-fix (below). On a table with secondary indexes the cut (and
//!   a first prune) first hands the versions whose images it drops to
//!   [`Siro::before_drop`], which removes the index entries only they
//!   need (the collector's `gc::siro::index_work`): an image is the last
//!   place a version's keys are.
//! * **Cleaning.** Dead versions in segments that are not wholly dead are
//!   removed one by one by the dead-zone collector's row step (the
//!   paper's "cleaning"); the counters tell the three apart.
//!
//! # Cut-and-fix (§3.4, Fig. 8)
//!
//! A cut drops the images of a segment's versions at once (the segment's
//! memory, the bulk of it) but may leave their headers linked: a *hole*,
//! a run of image-less headers whose `next` links still bridge to the
//! older versions. A later event fills it (*Fixup*: link the hole's newer
//! neighbour to its older one, retire the headers). Each chain is in one
//! of the paper's two states, kept per row as a *hole marker*
//! ([`RowState`]: the address of the hole's newest header, 0 for none),
//! and [`transition`] is Fig. 8's state diagram:
//!
//! ```text
//!   chain, newest first         state    event on the pass's dead segments
//!   v9 v8 v6 v5 v4 v2 v1        0-hole
//!   v9 v8 v6 v5 [v4 v2] v1      1-hole   Cut-I (consecutive): leave a hole
//!   v9 v8 [v6] v5 [v4 v2] v1    ------   Cut-II on 1-hole: Fixup instead
//!   v9 v8 v5 v1                 0-hole   (every hole filled, headers retired)
//!
//!   0-hole ──Cut-I/II, one hole──> 1-hole ──Cut-I, hole only grows──┐
//!     ^                              │  <──────────────────────────┘
//!     └──── Fixup: Cut-II, or any cut leaving 2+ holes ──┘
//! ```
//!
//! The row step fills a hole too: its headers are dead, so it unlinks
//! them with the row's other dead versions (`holes_cleaned`); a cut that
//! leaves one queues the row for the next pass for that.
//!
//! Where memory differs from the paper, and why:
//!
//! * The paper's hole is a broken locator link, so its readers reach the
//!   versions below it from the chain's tail, and a second hole orphans
//!   the versions between the two: the Fixup is about reachability. Here
//!   a chain is singly linked from its head, and a hole keeps its links
//!   (only the images go), so no version is ever orphaned; what the
//!   1-hole bound bounds is the image-less headers readers step over and
//!   that linger before they are retired. The state machine is the
//!   paper's, its stake is space and steps, not reachability.
//! * "Consecutive segments leave at most one hole" holds in the paper's
//!   version space; here a chain spreads over three clusters, so Cut-I can
//!   still leave two runs in one chain. The cut counts the holes it would
//!   leave in each chain, and takes the Fixup for two or more whatever
//!   the event: "at most one hole per chain" holds regardless.
//! * Headers of versions pruned at relocation (first prune) are also
//!   image-less and linked (the paper never inserts them); a hole that
//!   touches them absorbs them, and the Fixup retires them with it.
//!
//! Invariant (readers never fall into a hole): a reader stops only at the
//! version its snapshot reads, which is never dead, and every hole header
//! is dead by zones the collector published (a snapshot missing from
//! those zones began above their floor, above every dead version's end);
//! it steps over a hole on the untouched `next` links, and the Fixup
//! relinks each hole with one store and retires its headers through the
//! epoch, so a reader inside a hole walks on to the same older version.
//!
//! # Collaborative cleaning (§3.4, Fig. 9)
//!
//! The cutter and the writer that relocates v^{r,1→2} (vSORTER, under the
//! row's write lock) meet on the chain below v^{r,1}: the cutter drops
//! images and relinks around v^{r,2}, the writer moves the copy above it
//! off-row (and, when it is dead, drops its image: a hole member). A
//! per-row flag taken by test-and-set with footprints decides
//! ([`RowState`]):
//!
//! ```text
//!  flag: FREE ──swap(SORTER)──> writer wins ──relocates──> CAS(SORTER→FREE)
//!                                │ cutter swaps its Handover in: loses,   │ fails: the
//!                                │ returns at once                        │ cutter's cut;
//!                                │                                        └ do it, FREE
//!        FREE ──swap(&Handover)─> cutter wins ──cuts──> swap(FREE) = SORTER?
//!                                │ writer swaps SORTER in: loses,          (the writer
//!                                └ spin-waits until FREE, then relocates    waited)
//! ```
//!
//! The winner does the dead versions' deletion whoever asked for it (the
//! paper's invariant); the writer, losing, does its own suspended
//! relocation after the wait. The dead-zone row step takes the same flag
//! (by compare-and-swap from FREE, waiting), so one thread at a time
//! edits the chain below v^{r,1}; `tests/siro_model.rs` checks the
//! protocol under shuttle. Unlike the paper's "winner constant" flag in
//! the record, the flag lives in a sharded map beside the segments (one
//! entry per row that relocated a version, kept while the table lives):
//! the in-place master is shared with the other in-place schemes.
//!
//! # Invariants
//!
//! Every version a live snapshot can read has an image (in-row or in a
//! segment); a version without one is dead by zones that were published
//! by the collector (and dead zones stay dead: a snapshot that begins
//! later is above every overwritten version's end). The images of
//! first-pruned and cut versions are gone while their headers may still
//! be linked. No snapshot reads them, and no index entry leads to one: on
//! SIRO (an in-place scheme) indexes hold logical pointers, which name the
//! row, never a version; the entries only a dropped version needed are
//! removed before its image goes ([`Siro::before_drop`]), since index
//! maintenance finds a version's keys in its image.

use super::chain::{self, Newest, Span, Survivor, Versions};
use super::dead_zones::{DeadZones, Pin};
use super::in_place::{rehome, retire_record, Change, InPlace, Records, Shape};
use super::version::{Version, INF_TS, TID_MARK};
use super::visibility::{Mode, TxnStates};
use super::{NewRow, PrunePlan, Store, VersionStore};
use crate::error::Result;
use crate::options::{SiroTuning, VersionStorage};
use crate::value::Value;
use crossbeam_epoch::Guard;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
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
    /// What kept each relocated version alive (so it was copied, not
    /// pruned): index [`KEPT_BY_OLDEST`], [`KEPT_BY_YOUNGER`],
    /// [`KEPT_BY_FLOOR`].
    pub relocated_for: [AtomicU64; 3],
    /// Off-row versions unlinked because their whole segment was dead.
    pub segment_pruned: [AtomicU64; 3],
    /// Off-row versions unlinked one at a time (the row step, a horizon cut).
    pub cleaned: [AtomicU64; 3],
    /// Segments dropped whole.
    pub segments_dropped: AtomicU64,
    /// Cut-I events (§3.4): passes whose dead segments were consecutive
    /// in one cluster.
    pub cut_i: AtomicU64,
    /// Cut-II events: passes whose dead segments were not.
    pub cut_ii: AtomicU64,
    /// Chains a cut took from the 0-hole to the 1-hole state.
    pub holes_opened: AtomicU64,
    /// Fixups: a cut filled every hole of a chain (back to 0-hole).
    pub fixups: AtomicU64,
    /// Holes the row step filled (it unlinked their dead headers with the
    /// rest of the row's dead versions): 1-hole to 0-hole without a cut.
    pub holes_cleaned: AtomicU64,
    /// Collaborative cleaning (Fig. 9), races both sides entered: the
    /// cutter won (the writer waited, then relocated) ...
    pub cutter_won: AtomicU64,
    /// ... or the writer won (and did the cutter's cut of that row too).
    pub sorter_won: AtomicU64,
    /// Aborts that toggled back to the in-row copy (§3.5).
    pub aborts_toggled: AtomicU64,
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
    /// Per row that relocated a version: its cleaning flag and hole
    /// marker ([`RowState`]), sharded by tuple. Never shrinks while the
    /// table lives: a row's two parties must always meet on one flag.
    rows: Box<[RowShard]>,
    pub counters: Counters,
    /// The table's secondary-index work before images drop (see
    /// [`Siro::before_drop`]); set by the collector before it first
    /// publishes zones.
    index_work: std::sync::OnceLock<IndexWork>,
}

/// What the collector does to a table's secondary indexes before the
/// images of `versions` of row `tuple` are dropped: remove the entries
/// only they need. Called pinned, by the row's holder.
pub type IndexWork = Box<dyn Fn(u64, &[*mut Version], &Guard) + Send + Sync>;

/// Shards of [`Siro::rows`].
const ROW_SHARDS: usize = 64;

/// One shard of [`Siro::rows`]: tuple -> its row's state.
type RowShard = Mutex<FxHashMap<u64, Arc<RowState>>>;

impl Siro {
    pub fn new(tuning: SiroTuning) -> Siro {
        Siro {
            tuning,
            zones: RwLock::new(None),
            clusters: Default::default(),
            rows: (0..ROW_SHARDS).map(|_| Mutex::default()).collect(),
            counters: Counters::default(),
            index_work: std::sync::OnceLock::new(),
        }
    }

    /// Sets the table's index work, once (`f` runs the first time only).
    pub fn init_index_work(&self, f: impl FnOnce() -> IndexWork) {
        self.index_work.get_or_init(f);
    }

    /// Before the images of `versions` of `tuple` drop (a cut, a first
    /// prune): on a table with secondary indexes, their entries go first.
    /// False if there are indexes and no index work to run: then nothing
    /// may drop.
    fn before_drop(&self, s: &Store, tuple: u64, versions: &[*mut Version], guard: &Guard) -> bool {
        if !s.indexed.load(SeqCst) {
            return true;
        }
        match self.index_work.get() {
            Some(f) => {
                f(tuple, versions, guard);
                true
            }
            None => false,
        }
    }

    /// The cleaning state of row `tuple` (created on first use).
    pub(crate) fn row(&self, tuple: u64) -> Arc<RowState> {
        let mut shard = self.rows[tuple as usize % ROW_SHARDS].lock();
        shard.entry(tuple).or_default().clone()
    }

    /// The row's state if it has one.
    #[cfg(test)]
    fn row_if_any(&self, tuple: u64) -> Option<Arc<RowState>> {
        self.rows[tuple as usize % ROW_SHARDS]
            .lock()
            .get(&tuple)
            .cloned()
    }

    /// Chains in the 1-hole state now.
    pub fn one_hole_chains(&self) -> usize {
        self.rows
            .iter()
            .map(|s| {
                let s = s.lock();
                s.values().filter(|r| r.hole.load(Relaxed) != 0).count()
            })
            .sum()
    }

    /// The state of `tuple`'s chain by its marker (tests; the cut itself
    /// also checks that the marked hole is still linked).
    #[cfg(test)]
    pub fn chain_state(&self, tuple: u64) -> ChainState {
        match self.row_if_any(tuple) {
            Some(r) if r.hole.load(Relaxed) != 0 => ChainState::OneHole,
            Some(_) | None => ChainState::ZeroHole,
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

/// Takes the sealed segments of `s` that lie inside one dead zone: from
/// each, the locators whose tuple `mine` accepts (the caller collects
/// those rows); a segment left without locators is dropped. Also names
/// the cut event (§3.4): Cut-I when the dead segments are consecutive in
/// one cluster (nothing between them in it), else Cut-II; None when no
/// segment was dead. The caller cuts the versions ([`cut`]).
pub fn take_dead_segments(
    s: &Store,
    zones: &DeadZones,
    mine: impl Fn(u64) -> bool,
) -> (Vec<(u64, usize)>, Option<CutEvent>) {
    let Some(st) = s.siro.as_deref() else {
        return (Vec::new(), None);
    };
    let mut out = Vec::new();
    // Per cluster, the positions of its dead segments (before removal).
    let mut dead_at: Vec<Vec<usize>> = Vec::new();
    for c in &st.clusters {
        let mut segs = c.lock();
        let mut at = Vec::new();
        let mut i = 0;
        segs.retain_mut(|seg| {
            i += 1;
            if !seg.sealed || !seg.is_dead(zones) {
                return true;
            }
            at.push(i - 1);
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
        if !at.is_empty() {
            dead_at.push(at);
        }
    }
    let event = match dead_at.as_slice() {
        [] => None,
        [one] if one.windows(2).all(|w| w[1] == w[0] + 1) => Some(CutEvent::CutI),
        [_] | [_, _, ..] => Some(CutEvent::CutII),
    };
    (out, event)
}

// ---------------------------------------------------------------------
// Cut-and-fix (§3.4, Fig. 8) and collaborative cleaning (§3.4, Fig. 9).
// ---------------------------------------------------------------------

/// A chain's state (§3.4, Fig. 8 right): how many holes a cut left in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainState {
    /// Every linked version that a cut touched has been unlinked.
    ZeroHole,
    /// One run of versions whose images a cut dropped is still linked
    /// (the row's hole marker names its newest version).
    OneHole,
}

/// The triggering events of Fig. 8: what the pass's dead segments were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutEvent {
    /// One or more consecutive dead segments (of one cluster).
    CutI,
    /// Nonconsecutive dead segments (or segments of several clusters).
    CutII,
}

/// What a cut does to one chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutAction {
    /// None of the cut's versions is in the chain any more.
    Nothing,
    /// Drop the images, leave the headers linked: the chain has one hole.
    LeaveHole,
    /// Fill every hole: link each hole's newer neighbour to its older one
    /// and retire the holes' headers.
    Fixup,
}

/// The state diagram of Fig. 8 (right). `holes` is how many holes the
/// chain would have if the cut only dropped images: the marked hole (if
/// any) and the runs of the cut's versions, merged where they touch.
///
/// ```text
///            Cut-I, one hole            Cut-I, still one hole
///   0-hole ───────────────────> 1-hole <──────────┐
///     ^  ^                        │  └────────────┘
///     │  └─ any cut, 2+ holes:    │ Cut-II (or 2+ holes):
///     │     Fixup                 │ Fixup
///     └───────────────────────────┘
/// ```
///
/// The paper's own rule is the arrow out of 1-hole on Cut-II: the Fixup
/// is preemptive there, whatever the count. In memory a chain's versions
/// spread over three clusters, so consecutive segments (Cut-I) can still
/// leave two runs in one chain; then the Fixup comes too, and "at most
/// one hole per chain" holds whatever the event.
pub fn transition(state: ChainState, event: CutEvent, holes: usize) -> (ChainState, CutAction) {
    match (state, event, holes) {
        (ChainState::ZeroHole | ChainState::OneHole, _, 0) => {
            (ChainState::ZeroHole, CutAction::Nothing)
        }
        (ChainState::OneHole, CutEvent::CutII, _) => (ChainState::ZeroHole, CutAction::Fixup),
        (ChainState::ZeroHole, CutEvent::CutI | CutEvent::CutII, 1)
        | (ChainState::OneHole, CutEvent::CutI, 1) => (ChainState::OneHole, CutAction::LeaveHole),
        (ChainState::ZeroHole, CutEvent::CutI | CutEvent::CutII, _)
        | (ChainState::OneHole, CutEvent::CutI, _) => (ChainState::ZeroHole, CutAction::Fixup),
    }
}

/// `RowState::flag` when nobody holds the row: the paper's "winner
/// constant".
const FREE: usize = 0;
/// vSORTER's footprint.
const SORTER: usize = 1;
/// The row step's mark (a collector pruning the row outside a cut: it
/// waits for the row, it never hands work over).
const CLEANER: usize = 2;

/// Whether a flag value is a cutter's footprint: the address of its
/// [`Handover`] (boxed, so aligned and never 0, 1 or 2).
fn is_cutter(f: usize) -> bool {
    f != FREE && f != SORTER && f != CLEANER
}

/// One row's collaborative-cleaning state.
///
/// The flag decides who edits the chain below v^{r,1} (Fig. 9): the
/// writer relocating v^{r,1→2} (vSORTER, under the row's write lock, so
/// one at a time) or the row's collector (vCUTTER cutting, or the
/// dead-zone row step; one at a time by `chain::remove`'s contract).
/// Those are the only two parties, which is what lets a test-and-set
/// (`swap`) with footprints decide: each side swaps its footprint in and
/// learns from the old value whether it won; the winner, swapping the
/// flag back, learns the loser's footprint.
///
/// Invariant (owned here): at most one thread edits the chain's links or
/// off-row images below v^{r,1} at a time, and a cut the cutter handed
/// over is done by the winner before the flag is free again.
pub struct RowState {
    flag: crate::sync::atomic::AtomicUsize,
    /// The hole marker: the address of the newest version of the chain's
    /// hole, 0 in the 0-hole state. Read and written under the flag only.
    hole: AtomicUsize,
    /// Tests: turns of the wait loops (a writer that lost, the row step, a
    /// cutter waiting for a handed-over cut), so that a test sees a thread
    /// is waiting instead of guessing from time.
    #[cfg(test)]
    spins: std::sync::atomic::AtomicU64,
}

impl Default for RowState {
    fn default() -> RowState {
        RowState {
            flag: crate::sync::atomic::AtomicUsize::new(FREE),
            hole: AtomicUsize::new(0),
            #[cfg(test)]
            spins: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// A cut of one row: the versions to cut (addresses, sorted), the event,
/// and the zones that called them dead (re-checked: an address may have
/// been reused by a newer version by the time a handed-over cut runs).
/// A losing cutter leaves it in the flag for the winning writer.
pub struct Handover {
    pub victims: Vec<usize>,
    pub event: CutEvent,
    pub zones: Arc<DeadZones>,
}

/// The cutter's side of the test-and-set.
pub enum CutterTas {
    /// The row is the cutter's: cut, then [`RowState::cutter_release`].
    Won(Box<Handover>),
    /// A writer holds the row: it does the cut when it leaves.
    HandedOver,
}

impl RowState {
    /// vSORTER's test-and-set, once: whether it won.
    fn sorter_tas(&self) -> bool {
        let was = self.flag.swap(SORTER, SeqCst);
        debug_assert_ne!(was, SORTER, "one writer per row (its write lock)");
        was == FREE
    }

    /// Takes the row for the writer, spin-waiting while the collector
    /// holds it (the paper's loser vSORTER: its relocation waits, the
    /// cutter's work does not). Returns whether it lost a round.
    pub fn sorter_enter(&self) -> bool {
        let mut lost = false;
        while !self.sorter_tas() {
            lost = true;
            // Our footprint sits in the flag until the winner swaps it back
            // to FREE.
            while self.flag.load(SeqCst) == SORTER {
                self.spun();
                crate::sync::thread::spin_loop();
            }
        }
        lost
    }

    /// The writer leaves: None if nobody came, else the cut a losing
    /// cutter handed over. Then the row stays taken (a collector waits)
    /// until [`RowState::sorter_done`].
    pub fn sorter_release(&self) -> Option<Box<Handover>> {
        if crate::sync::broken(crate::sync::Break::CutHandoverDropped) {
            self.flag.swap(FREE, SeqCst);
            return None;
        }
        match self.flag.compare_exchange(SORTER, FREE, SeqCst, SeqCst) {
            Ok(_) => None,
            Err(f) => {
                debug_assert!(is_cutter(f), "only a cutter swaps over a held row");
                // SAFETY: while the writer holds the row, only a cutter
                // swaps the flag (the row step compares with FREE), and it
                // stores the address of a Box it leaked and, on seeing
                // SORTER, gives up: this is its one owner now.
                Some(unsafe { Box::from_raw(f as *mut Handover) })
            }
        }
    }

    /// The writer finished the handed-over cut.
    pub fn sorter_done(&self) {
        self.flag.store(FREE, SeqCst);
    }

    /// vCUTTER's test-and-set with its cut as footprint. Waits first for a
    /// cut an earlier pass handed over (its writer is doing it now).
    pub fn cutter_tas(&self, h: Box<Handover>) -> CutterTas {
        while is_cutter(self.flag.load(SeqCst)) {
            self.spun();
            crate::sync::thread::spin_loop();
        }
        let p = Box::into_raw(h);
        match self.flag.swap(p as usize, SeqCst) {
            // SAFETY: nobody else dereferences a winning cutter's footprint
            // (a writer that sees it only learns it lost), so the Box is
            // still ours.
            FREE => CutterTas::Won(unsafe { Box::from_raw(p) }),
            SORTER => CutterTas::HandedOver,
            f => {
                debug_assert!(false, "one collector per row: flag {f:#x}");
                // SAFETY: as for FREE.
                CutterTas::Won(unsafe { Box::from_raw(p) })
            }
        }
    }

    /// Whether a writer's footprint is in the flag (tests: a writer that
    /// lost to the cutter is waiting).
    #[cfg(test)]
    pub(crate) fn writer_footprint(&self) -> bool {
        self.flag.load(SeqCst) == SORTER
    }

    /// One more turn of a wait loop (counted in tests only).
    #[inline(always)]
    fn spun(&self) {
        #[cfg(test)]
        self.spins.fetch_add(1, SeqCst);
    }

    /// Tests: turns the wait loops on this row have taken so far.
    #[cfg(test)]
    pub(crate) fn spins(&self) -> u64 {
        self.spins.load(SeqCst)
    }

    /// Tests: returns once a thread has turned this row's wait loops
    /// `turns` more times than `from` (it is waiting, and was still
    /// waiting after that many looks at the flag), or once `past` holds
    /// (it got past the wait: the caller's assertion then fails). The
    /// bound only turns a hang into a failure.
    #[cfg(test)]
    pub(crate) fn wait_for_a_waiter(&self, from: u64, turns: u64, past: impl Fn() -> bool) {
        let seen = crate::test_util::eventually(|| self.spins() >= from + turns || past());
        assert!(seen, "no thread waited on the row");
    }

    /// The cutter leaves: whether a writer waited meanwhile.
    pub fn cutter_release(&self) -> bool {
        self.flag.swap(FREE, SeqCst) == SORTER
    }

    /// The row step takes the row (waiting for a writer, or for a cut
    /// handed over to it).
    pub fn cleaner_enter(&self) {
        while self
            .flag
            .compare_exchange(FREE, CLEANER, SeqCst, SeqCst)
            .is_err()
        {
            self.spun();
            crate::sync::thread::spin_loop();
        }
    }

    pub fn cleaner_release(&self) {
        self.flag.swap(FREE, SeqCst);
    }
}

/// Whether `r` is a hole member: an overwritten, committed in-place
/// version with no image (a cut dropped it, or it was pruned at
/// relocation), still linked.
fn image_less(r: &Version) -> bool {
    r.is_in_place()
        && r.ext().is_some_and(|e| e.record().is_null())
        && r.begin.load(SeqCst) & TID_MARK == 0
        && is_hole(r)
}

/// Whether the cut may take `r`: off-row, and dead by the cut's zones.
fn cuttable(r: &Version, zones: &DeadZones) -> Option<Class> {
    let begin = r.begin.load(SeqCst);
    let end = r.end.load(SeqCst);
    if begin & TID_MARK != 0 || end & TID_MARK != 0 || end == INF_TS {
        return None;
    }
    let class = off_row_class(r as *const Version as *mut Version)?;
    zones.is_dead(begin, end).then_some(class)
}

/// What one row's cut did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutOutcome {
    /// Done by the cutter: the transition taken, headers retired.
    Done(CutAction, u64),
    /// Left to the writer holding the row.
    HandedOver,
}

/// vCUTTER on one row: the test-and-set, then (if it won) the cut.
/// Pinned by the caller.
pub fn cut(s: &Store, st: &Siro, tuple: u64, h: Box<Handover>, guard: &Guard) -> CutOutcome {
    let row = st.row(tuple);
    match row.cutter_tas(h) {
        CutterTas::Won(h) => {
            let done = cut_chain(s, st, tuple, &row, &h, guard);
            if row.cutter_release() {
                st.counters.cutter_won.fetch_add(1, Relaxed);
            }
            CutOutcome::Done(done.0, done.1)
        }
        CutterTas::HandedOver => {
            st.counters.sorter_won.fetch_add(1, Relaxed);
            CutOutcome::HandedOver
        }
    }
}

/// The cut of one chain, by the row's holder: finds the cut's versions
/// still in the chain, counts the holes they would leave, and takes the
/// transition of [`transition`]. Returns it and the headers retired.
///
/// Readers never fall into a hole. A hole is a run of linked headers
/// without images, each dead by zones the collector published; a reader
/// stops only at the version its snapshot reads, which is never dead
/// (a snapshot not in the zones' copy began above their floor, above
/// every dead version's end), so it steps over a hole on the `next`
/// links the cut left untouched; the Fixup relinks with one store per
/// hole (`chain::remove`) and retires the headers through the epoch, so
/// a reader inside a hole when it is filled walks on to the same older
/// version.
pub(crate) fn cut_chain(
    s: &Store,
    st: &Siro,
    tuple: u64,
    row: &RowState,
    h: &Handover,
    guard: &Guard,
) -> (CutAction, u64) {
    let marker = row.hole.load(Relaxed);
    let mut state = ChainState::ZeroHole;
    // The runs of hole members (newest first) that count as holes: those
    // with a version of this cut or the marked one.
    let mut runs: Vec<Vec<*mut Version>> = Vec::new();
    let mut cur: Vec<*mut Version> = Vec::new();
    let mut counts = false;
    let mut cut_now: Vec<(*mut Version, Class)> = Vec::new();
    let close = |cur: &mut Vec<*mut Version>, counts: &mut bool, runs: &mut Vec<_>| {
        if std::mem::take(counts) {
            runs.push(std::mem::take(cur));
        } else {
            cur.clear();
        }
    };
    for v in Inner::versions(s, tuple, Span::ALL) {
        // SAFETY: pinned; the row's holder walks it (nothing unlinks).
        let r = unsafe { &*v };
        let class = (h.victims.binary_search(&(v as usize)).is_ok())
            .then(|| cuttable(r, &h.zones))
            .flatten();
        let marked = v as usize == marker && image_less(r);
        if marked {
            state = ChainState::OneHole;
        }
        if class.is_some() || image_less(r) {
            cur.push(v);
            counts |= class.is_some() || marked;
            if let Some(c) = class {
                cut_now.push((v, c));
            }
        } else {
            close(&mut cur, &mut counts, &mut runs);
        }
    }
    close(&mut cur, &mut counts, &mut runs);
    let (_, action) = transition(state, h.event, runs.len());
    if action != CutAction::Nothing && !cut_now.is_empty() {
        let drop: Vec<*mut Version> = cut_now.iter().map(|&(v, _)| v).collect();
        if !st.before_drop(s, tuple, &drop, guard) {
            return (CutAction::Nothing, 0);
        }
    }
    let credit = |c: Class| st.counters.segment_pruned[c.index()].fetch_add(1, Relaxed);
    let n = match action {
        CutAction::Nothing => 0,
        CutAction::LeaveHole => {
            for &(v, c) in &cut_now {
                // SAFETY: pinned; a chain version.
                let ext = unsafe { (*v).ext() }.expect("an off-row version is in-place");
                // (An image in the block of the version above goes with
                // that block: the cut drops the ones of their own.)
                retire_record(ext.swap_record(std::ptr::null_mut()), guard);
                credit(c);
            }
            if state == ChainState::ZeroHole {
                st.counters.holes_opened.fetch_add(1, Relaxed);
            }
            row.hole.store(runs[0][0] as usize, Relaxed);
            0
        }
        CutAction::Fixup => {
            for &(_, c) in &cut_now {
                credit(c);
            }
            let mut all: Vec<*mut Version> = runs.concat();
            all.sort_unstable();
            st.counters.fixups.fetch_add(1, Relaxed);
            // The version below a hole may hold its image in the block of
            // the hole's oldest header: it moves out first.
            let at = s.alloc();
            chain::remove(
                s.rows.slot(tuple),
                &all,
                Newest::First,
                |_, kept| rehome(kept, at),
                s.gauged,
                guard,
            )
        }
    };
    if action != CutAction::LeaveHole {
        row.hole.store(0, Relaxed);
    }
    (action, n)
}

/// What an overwrite leaves in-row: a full copy of the displaced current
/// image, which becomes the previous version's in-row image.
pub struct InRowCopies;

impl Records for InRowCopies {
    const SCHEME: VersionStorage = VersionStorage::Siro;
    const PLACE: u8 = place::IN_ROW;

    #[inline]
    fn shape(change: &Change<'_>, _differs: impl Fn(usize, &Value) -> bool) -> Shape {
        Shape::full(change)
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
        let v = if is_toggled(prev) {
            super::in_place::install_over_copy(s, tuple, tid, prev, row)
        } else {
            Inner::install(s, tuple, tid, prev, row)
        };
        // SAFETY: `prev` is locked by us and alive.
        if unsafe { prev.as_ref() }.is_some_and(|p| !p.next().is_null()) {
            let guard = crossbeam_epoch::pin();
            match s.siro.as_deref() {
                Some(st) => sort(s, st, tuple, prev, &guard),
                None => relocate_below(s, tuple, prev, &guard),
            }
        }
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

    /// The toggle (§3.5): when `own` overwrote a live version of the same
    /// master, `prev`'s in-row copy (made by that overwrite) simply
    /// becomes current again; else (an insert, over nothing or a
    /// tombstone) the in-place undo.
    fn undo(s: &Store, tuple: u64, own: *mut Version, prev: *mut Version, guard: &Guard) {
        let m = super::in_place::master_of(own);
        if !m.is_null() && super::in_place::master_of(prev) == m && is_toggled(prev) {
            // SAFETY: the master lives as long as its row.
            super::in_place::toggle_back(
                s.rows.slot(tuple),
                unsafe { &*m },
                prev,
                s.alloc(),
                guard,
            );
            if let Some(st) = s.siro.as_deref() {
                st.counters.aborts_toggled.fetch_add(1, Relaxed);
            }
            return;
        }
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
        let Some(st) = s.siro.as_deref() else {
            return prune_held(s, tuple, plan, guard);
        };
        // The row step is the collector's other edit of the chain: it
        // waits for the row like a writer does (see `RowState`).
        let row = st.row(tuple);
        row.cleaner_enter();
        let credit = |v: *mut Version| {
            // Holes have no image: the cut credited them already.
            if let Some(c) = off_row_class(v) {
                st.counters.cleaned[c.index()].fetch_add(1, Relaxed);
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
        let n = prune_held(s, tuple, plan, guard);
        // The row step unlinks the hole's dead headers with the rest of
        // the row's dead versions: the chain is back to 0-hole. (Still
        // pinned: an unlinked marked version's address is not reused yet.)
        let m = row.hole.load(Relaxed);
        if m != 0 && !Inner::versions(s, tuple, Span::ALL).any(|v| v as usize == m) {
            row.hole.store(0, Relaxed);
            st.counters.holes_cleaned.fetch_add(1, Relaxed);
        }
        row.cleaner_release();
        n
    }
}

/// The prune itself, by the row's holder.
fn prune_held(s: &Store, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
    match plan {
        PrunePlan::OlderThan(keep) => super::append_only::cut_below(keep, s.gauged, guard),
        // Every SIRO image stands alone (a full copy, or none for a
        // version pruned at relocation or cut, which no snapshot reads),
        // so unlike delta storage nothing below a removed run needs a
        // merged record; but the image of the version below may lie in the
        // block of the run's oldest version, and moves out first.
        PrunePlan::Versions(victims) => chain::remove(
            s.rows.slot(tuple),
            victims,
            Newest::First,
            |_, kept| rehome(kept, s.alloc()),
            s.gauged,
            guard,
        ),
    }
}

/// vSORTER's side of collaborative cleaning (Fig. 9): takes the row's
/// flag (waiting while a cutter holds it, then doing its own suspended
/// relocation), relocates, and if a cutter lost meanwhile does its cut
/// before freeing the row. The caller holds the row's write lock.
fn sort(s: &Store, st: &Siro, tuple: u64, prev: *mut Version, guard: &Guard) {
    let row = st.row(tuple);
    row.sorter_enter();
    relocate_below(s, tuple, prev, guard);
    sorter_leave(s, st, tuple, &row, guard);
}

/// The writer leaves the row it holds; a cut handed over meanwhile is
/// its to do first (the paper's invariant: whoever wins deletes the dead
/// versions). Pinned by the caller.
pub(crate) fn sorter_leave(s: &Store, st: &Siro, tuple: u64, row: &RowState, guard: &Guard) {
    if let Some(h) = row.sorter_release() {
        cut_chain(s, st, tuple, row, &h, guard);
        row.sorter_done();
    }
}

/// The class of an off-row version (None: in-row, a tombstone, or pruned
/// at relocation). The caller is pinned.
fn off_row_class(v: *mut Version) -> Option<Class> {
    // SAFETY: pinned; chain versions and their records are alive.
    let r = unsafe { v.as_ref() }?;
    let rec = unsafe { r.ext()?.record().as_ref() }?;
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
        let rec = ext.record();
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

/// [`Counters::relocated_for`]: the oldest listed snapshot read the
/// version (the LLT's, while one is open) ...
pub const KEPT_BY_OLDEST: usize = 0;
/// ... a younger listed snapshot read it (an updater's) ...
pub const KEPT_BY_YOUNGER: usize = 1;
/// ... or it was overwritten after the published zones were built (or
/// before any were), so a snapshot they do not list may read it.
pub const KEPT_BY_FLOOR: usize = 2;

/// Relocates one in-row copy (§3.3, Fig. 6(b)): first prune by the
/// published zones, else classify and copy into the class's segment.
fn relocate(s: &Store, tuple: u64, r: &Version, begin: u64, end: u64, guard: &Guard) {
    let ext = r.ext().expect("an in-place version");
    let v = r as *const Version as *mut Version;
    let st = s.siro.as_deref();
    let zones = st.and_then(Siro::zones);
    let tuning = st.map_or_else(SiroTuning::default, |st| st.tuning.clone());
    let class = classify(begin, end, zones.as_deref(), &tuning);
    if let (Some(st), Some(z)) = (st, zones.as_deref()) {
        if z.is_dead(begin, end) && st.before_drop(s, tuple, &[v], guard) {
            let old = ext.swap_record(std::ptr::null_mut());
            retire_record(old, guard);
            st.counters.pruned_at_relocation[class.index()].fetch_add(1, Relaxed);
            return;
        }
    }
    // SAFETY: pinned; the in-row copy is retired through the epoch only
    // after being swapped out (by the writer holding the row: us).
    let Some(image) = (unsafe { ext.record().as_ref() }) else {
        return;
    };
    // The image goes off-row by its place alone: its bytes stay where the
    // overwrite made them (in the block of the version above, usually),
    // so a relocation allocates and copies nothing; the segment keeps its
    // locator, as the paper's does.
    image.set_place(class.place());
    let bytes = image.footprint(&mut super::version::Payloads::default());
    if let Some(st) = st {
        st.counters.relocated[class.index()].fetch_add(1, Relaxed);
        let kept_by = match zones.as_deref().map(|z| (z.pin(begin, end), z.oldest())) {
            Some((Pin::Snapshot(b), oldest)) if Some(b) == oldest => Some(KEPT_BY_OLDEST),
            Some((Pin::Snapshot(_), _)) => Some(KEPT_BY_YOUNGER),
            Some((Pin::Floor, _)) | None => Some(KEPT_BY_FLOOR),
            // Dead, but a drop refused (`before_drop`): nothing kept it.
            Some((Pin::Dead, _)) => None,
        };
        if let Some(k) = kept_by {
            st.counters.relocated_for[k].fetch_add(1, Relaxed);
        }
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

/// Whether `prev`, the row's newest committed version (locked by the
/// caller), has its image in its in-row copy rather than in the master's
/// cells: the toggle's other side, after an abort over it.
fn is_toggled(prev: *mut Version) -> bool {
    // SAFETY: the caller holds `prev`'s lock; it is alive.
    unsafe { prev.as_ref() }
        .is_some_and(|p| !p.is_tombstone() && p.is_in_place() && is_in_row_copy(p))
}

/// Whether `v`'s image is SIRO's in-row previous copy.
pub(crate) fn is_in_row_copy(v: &Version) -> bool {
    v.ext()
        // SAFETY: the caller is pinned; records are retired via the epoch.
        .and_then(|e| unsafe { e.record().as_ref() })
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
        assert_eq!(odd, (vec![(1, 0)], Some(CutEvent::CutI)));
        assert_eq!(st.segment_counts(), [2, 0, 1], "row 2 still in it");
        let even = take_dead_segments(&s, &z, |t| t % 2 == 0);
        assert_eq!(even, (vec![(2, 0)], Some(CutEvent::CutI)));
        assert_eq!(st.segment_counts(), [1, 0, 1], "dropped once empty");
        assert_eq!(st.counters.segments_dropped.load(Relaxed), 1);
        // The LLT ends: its segment dies.
        let all = take_dead_segments(&s, &zones(100, &[5]), |_| true);
        assert_eq!(all, (vec![(4, 0)], Some(CutEvent::CutI)));
        assert_eq!(st.segment_counts(), [1, 0, 0]);
        assert_eq!(take_dead_segments(&s, &z, |_| true), (vec![], None));
    }

    fn siro_store() -> Store {
        let mut s = Store::new(1);
        s.scheme = VersionStorage::Siro;
        s.siro = Some(Arc::new(Siro::new(tuning())));
        s
    }

    /// Fig. 8 (right), every arrow: a cut leaving one hole moves 0-hole
    /// to 1-hole (and keeps 1-hole when the hole only grows); Cut-II on a
    /// 1-hole chain takes the Fixup whatever it leaves; two holes (which
    /// Cut-I can leave in memory, where a chain spans three clusters)
    /// take it too; a cut that finds none of its versions leaves 0-hole.
    #[test]
    fn the_chain_states_follow_fig_8() {
        use CutAction::*;
        use CutEvent::*;
        let (zero, one) = (ChainState::ZeroHole, ChainState::OneHole);
        assert_eq!(transition(zero, CutI, 1), (one, LeaveHole));
        assert_eq!(transition(zero, CutII, 1), (one, LeaveHole));
        assert_eq!(transition(one, CutI, 1), (one, LeaveHole));
        assert_eq!(transition(one, CutII, 1), (zero, Fixup));
        assert_eq!(transition(one, CutII, 3), (zero, Fixup));
        assert_eq!(transition(zero, CutI, 2), (zero, Fixup));
        assert_eq!(transition(zero, CutII, 2), (zero, Fixup));
        assert_eq!(transition(one, CutI, 2), (zero, Fixup));
        assert_eq!(transition(zero, CutI, 0), (zero, Nothing));
        assert_eq!(transition(one, CutII, 0), (zero, Nothing));
    }

    /// Consecutive dead segments of one cluster are Cut-I; a live segment
    /// between two dead ones, or dead segments in two clusters, Cut-II.
    #[test]
    fn cut_events_are_cut_i_only_for_consecutive_segments() {
        let v = std::ptr::null_mut();
        let four = |extra_cold: bool| {
            let s = siro_store();
            let st = s.siro.as_deref().unwrap();
            for (i, b) in [10, 15, 20, 25].into_iter().enumerate() {
                st.append(Class::Hot, i as u64, v, b, b + 5, 2000);
            }
            if extra_cold {
                st.append(Class::Cold, 9, v, 1, 2, 2000);
            }
            s
        };
        // A snapshot at 27: [10,15], [15,20], [20,25] are dead.
        let (taken, ev) = take_dead_segments(&four(false), &zones(100, &[27]), |_| true);
        assert_eq!((taken.len(), ev), (3, Some(CutEvent::CutI)));
        // At 22: the third is live, the fourth dead again.
        let (taken, ev) = take_dead_segments(&four(false), &zones(100, &[22]), |_| true);
        assert_eq!((taken.len(), ev), (3, Some(CutEvent::CutII)));
        // Consecutive in HOT, but COLD has a dead one too.
        let (taken, ev) = take_dead_segments(&four(true), &zones(100, &[27]), |_| true);
        assert_eq!((taken.len(), ev), (4, Some(CutEvent::CutII)));
    }

    fn handover(victims: &[usize]) -> Box<Handover> {
        Box::new(Handover {
            victims: victims.to_vec(),
            event: CutEvent::CutI,
            zones: Arc::new(zones(100, &[])),
        })
    }

    /// Fig. 9, the writer wins: the cutter's test-and-set finds the
    /// writer's footprint and hands its cut over; the writer, leaving,
    /// finds the cutter's footprint and gets that very cut; the row stays
    /// taken until the writer has done it.
    #[test]
    fn collaborative_cleaning_the_writer_wins_and_does_the_cut() {
        let row = RowState::default();
        assert!(!row.sorter_enter(), "uncontested");
        assert!(matches!(
            row.cutter_tas(handover(&[8, 16])),
            CutterTas::HandedOver
        ));
        let h = row.sorter_release().expect("the cutter's footprint");
        assert_eq!(h.victims, [8, 16]);
        assert!(is_cutter(row.flag.load(SeqCst)), "still taken");
        row.sorter_done();
        assert_eq!(row.flag.load(SeqCst), FREE);
        // Nobody came: nothing handed over.
        assert!(!row.sorter_enter());
        assert!(row.sorter_release().is_none());
        assert_eq!(row.flag.load(SeqCst), FREE);
    }

    /// Fig. 9, the cutter wins: the writer's test-and-set finds the
    /// cutter's footprint and spin-waits; the cutter, leaving, finds the
    /// writer's footprint; then the writer takes the row and does its own
    /// (suspended) work, and nothing is handed to it.
    #[test]
    fn collaborative_cleaning_the_cutter_wins_and_the_writer_waits() {
        let row = RowState::default();
        let CutterTas::Won(h) = row.cutter_tas(handover(&[8])) else {
            panic!("an idle row");
        };
        let entered = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                let lost = row.sorter_enter();
                entered.store(true, SeqCst);
                let handed = row.sorter_release();
                (lost, handed.is_none())
            });
            // The writer's footprint is in, and it has looked at the flag
            // again and again (its wait loop turned) without entering.
            row.wait_for_a_waiter(0, 1000, || entered.load(SeqCst));
            assert!(row.writer_footprint());
            assert!(!entered.load(SeqCst), "the writer waits for the cutter");
            assert!(
                row.cutter_release(),
                "the cutter sees the writer's footprint"
            );
            assert_eq!(w.join().unwrap(), (true, true));
        });
        drop(h);
        assert_eq!(row.flag.load(SeqCst), FREE);
    }

    /// The row step waits for a writer, and for a cut handed over to it,
    /// and a cutter waits for an earlier pass's handed-over cut.
    #[test]
    fn the_row_step_and_a_later_cut_wait_for_a_handed_over_cut() {
        let row = RowState::default();
        row.sorter_enter();
        assert!(matches!(
            row.cutter_tas(handover(&[8])),
            CutterTas::HandedOver
        ));
        let h = row.sorter_release().unwrap();
        let order = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let from = row.spins();
            let cleaner = s.spawn(|| {
                row.cleaner_enter();
                order.lock().push("row step");
                row.cleaner_release();
            });
            // The row step is in its wait loop (or, broken, got past it).
            row.wait_for_a_waiter(from, 1000, || !order.lock().is_empty());
            order.lock().push("handed-over cut");
            drop(h);
            row.sorter_done();
            cleaner.join().unwrap();
        });
        assert_eq!(*order.lock(), ["handed-over cut", "row step"]);
        assert!(matches!(row.cutter_tas(handover(&[8])), CutterTas::Won(_)));
        assert!(!row.cutter_release());
    }
}
