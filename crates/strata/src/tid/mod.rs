//! The transaction table (ERMIA's TID table).
//!
//! Every open transaction occupies one slot. Its id is
//! `generation << SLOT_BITS | slot`, so a stale id (its transaction ended and
//! the slot was reused) is recognised by comparing the slot's current id:
//!
//! ```text
//!  version.begin = TID_MARK | 0x3_00007 ─┐
//!                                       ▼
//!  slots[7]: tid = 0x3_00007  state = COMMITTING(cts 812)  begin = 790
//! ```
//!
//! A reader that meets an unstamped version looks here: ACTIVE or ABORTED
//! means invisible, COMMITTED(cts) is visible if `cts <= snapshot`, and
//! COMMITTING(cts) with `cts <= snapshot` makes the reader wait for the
//! decision (it is a few hundred nanoseconds away). Once a transaction has
//! stamped its versions it frees its slot; a reader that finds the slot
//! reused re-reads the version, which by then carries a timestamp.
//!
//! The slots double as the registry of active snapshots: `begin` holds each
//! open transaction's snapshot (or a conservative lower bound while it is
//! being taken), and garbage collection never frees a version that a
//! registered snapshot can see.
//!
//! Claiming a slot touches no shared line: each thread remembers the slot
//! it used last and claims it again with one CAS on that slot's own
//! `begin` (MAX = free), which registers the snapshot bound at once; only when that fails (the thread has several
//! transactions open, or another thread took the slot) does it scan from
//! slot 0 for a free one. A central free list (a mutex, as we had first)
//! made every begin and end bounce one cache line between all cores:
//! read-only YCSB stopped scaling at 8 threads on a 16-core machine.
//!
//! ```text
//!  thread A (hint 0) ──CAS──> [0: begin 812] [1: begin 809] [2: MAX] ...
//!  thread B (hint 1) ──CAS─────────────────┘
//! ```
//!
//! The table's atomics, waits and thread-local hint come from `crate::sync`,
//! so `tests/model.rs` runs this code under shuttle (slot claim and reuse,
//! GC's snapshot scan, and the states readers consult while a commit stamps
//! its versions).

pub mod snapshots;

pub use snapshots::Snapshots;

use crate::storage::visibility::{TxnState, TxnStates};
use crate::sync::atomic::{
    fence, AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Relaxed, Release, SeqCst},
};
use crate::sync::{broken, Backoff, Break};
use crossbeam_utils::CachePadded;
use std::cell::Cell;

/// The table has at most `options::MAX_OPEN_TRANSACTIONS` slots (a power
/// of two: a slot index is the low bits of an id).
pub const SLOT_BITS: u32 = MAX_SLOTS.trailing_zeros();
const _: () = assert!(MAX_SLOTS.is_power_of_two());
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;
pub use crate::options::MAX_OPEN_TRANSACTIONS as MAX_SLOTS;

const STATUS_SHIFT: u32 = 62;

/// Marks a slot's `begin` as a lower bound the transaction registered
/// before it took its snapshot (`acquire`); the snapshot itself is stored
/// without it (`set_snapshot`). A collector that keeps every snapshot's
/// versions (dead zones) must not take a lower bound for a snapshot: the
/// real one may be anywhere at or above it. Timestamps never reach bit 62.
const PENDING: u64 = 1 << 62;
const CTS_MASK: u64 = (1 << STATUS_SHIFT) - 1;
const ACTIVE: u64 = 0;
const COMMITTING: u64 = 1;
const COMMITTED: u64 = 2;
const ABORTED: u64 = 3;
/// The commit timestamp of a PRECOMMIT transaction: not drawn yet.
const PENDING_CTS: u64 = CTS_MASK;

/// What the table says about a transaction id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    /// About to draw its commit timestamp (see `set_precommit`).
    Precommit,
    /// Has its commit timestamp; the decision is not made yet.
    Committing(u64),
    Committed(u64),
    Aborted,
    /// The transaction has ended and its slot was reused: re-read the
    /// version, which is stamped (committed) or unlinked (aborted) by now.
    Gone,
}

pub struct Slot {
    pub tid: AtomicU64,
    state: AtomicU64,
    /// Registered snapshot (for GC and MVTO read-only snapshots); MAX when
    /// free. Claiming the slot *is* registering: a CAS from MAX (`acquire`).
    pub begin: AtomicU64,
    /// True while a read-write transaction holds the slot.
    pub is_rw: AtomicBool,
    /// SSN: the occupant's published high (pstamp) and low (sstamp) watermarks.
    pub pstamp: AtomicU64,
    pub sstamp: AtomicU64,
    /// SSN: a Bloom filter of the versions the occupant has read, so that a
    /// committing overwriter can find in-flight readers (see `cc::ssn`).
    pub reads: ReadFilter,
    generation: AtomicU64,
}

/// Words in a [`ReadFilter`] (1,024 bits).
const FILTER_WORDS: usize = 16;

/// A Bloom filter over version addresses, written only by the slot's
/// occupant and read by committing writers. False positives only make a
/// writer count a non-reader as a predecessor (a spurious abort, never a
/// missed one).
#[derive(Default)]
pub struct ReadFilter {
    bits: [AtomicU64; FILTER_WORDS],
    dirty: AtomicBool,
}

impl ReadFilter {
    /// The word and the two bits of `addr`. Both bits lie in one word (a
    /// blocked Bloom filter), so recording a read is one atomic `or` (a
    /// locked instruction on x86), not two: a 50%-read YCSB transaction
    /// records five (the filter was 4% of its workers' samples with two).
    fn hashes(addr: usize) -> (usize, u64) {
        let h = (addr as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let word = (h >> 60) as usize % FILTER_WORDS;
        (word, 1u64 << ((h >> 48) & 63) | 1u64 << ((h >> 42) & 63))
    }
    /// Records a read of `addr` (occupant only).
    pub fn insert(&self, addr: usize) {
        let (w, b) = Self::hashes(addr);
        self.bits[w].fetch_or(b, Relaxed);
        self.dirty.store(true, Relaxed);
    }
    /// Whether `addr` may have been read.
    pub fn may_contain(&self, addr: usize) -> bool {
        let (w, b) = Self::hashes(addr);
        self.bits[w].load(SeqCst) & b == b
    }
    fn clear(&self) {
        // Only the occupant writes `dirty`: no swap (a locked instruction)
        // needed.
        if self.dirty.load(Relaxed) {
            self.dirty.store(false, Relaxed);
            for w in &self.bits {
                w.store(0, Relaxed);
            }
        }
    }
}

/// Taken slots as (slot, generation): [`TidTable::occupied`].
pub type Occupied = Vec<(usize, u64)>;

pub struct TidTable {
    slots: Box<[CachePadded<Slot>]>,
    /// Per slot: commits and aborts of its occupants, written by the
    /// occupant only (see `stats`). Kept out of `Slot`, whose lines other
    /// threads read (GC's snapshot scan, status checks, SSN's read
    /// filters): counting inside it cost 20% of a 16-thread update mix.
    counts: Box<[CachePadded<crate::stats::TxnCounts>]>,
    /// One past the highest slot ever claimed: scans stop there.
    high_water: AtomicUsize,
}

/// The slots a thread keeps as its own (any table: they are only hints):
/// `home` for its transactions, `nested` for one it opens while another
/// is open (a long reader beside short writers, say). Each is set once,
/// when first needed, and kept: a hint that followed every claim made a
/// thread that kept two transactions open take a fresh slot on each round
/// (its second transaction found the home slot busy, took the next unused
/// slot, and made that the hint), so `high_water`, and with it every
/// snapshot scan, grew towards the table's capacity. A thread that exits
/// leaves both to the next new threads ([`HOMES`]).
struct Hint {
    home: Cell<usize>,
    nested: Cell<usize>,
}

impl Drop for Hint {
    fn drop(&mut self) {
        #[cfg(not(strata_model))]
        for h in [&self.home, &self.nested] {
            if h.get() != usize::MAX {
                HOMES.lock().leave(h.get());
            }
        }
    }
}

crate::sync::thread_local! {
    static SLOT_HINT: Hint = const {
        Hint {
            home: Cell::new(usize::MAX),
            nested: Cell::new(usize::MAX),
        }
    };
}

/// The slot numbers running threads keep as hints, and those whose every
/// keeper has exited, for threads that have none yet. (Not under the
/// model: its executions must not carry state from one to the next.)
#[cfg(not(strata_model))]
static HOMES: parking_lot::Mutex<Homes> = parking_lot::Mutex::new(Homes {
    kept: Vec::new(),
    orphaned: Vec::new(),
});

/// See [`HOMES`]. A number is orphaned only once no running thread keeps
/// it, and at most once: a thread's hint outlives its last transaction
/// until its thread-locals are dropped, after a scoped thread's scope has
/// already returned, so threads started meanwhile took fresh slots with
/// the same numbers (on a new database). When every exit pushed its
/// number, a number could be orphaned twice, or while another thread kept
/// it; two new threads then took it as their home and traded the slot
/// between their transactions, writing every line of it in turn
/// (`tests/shared_writes.rs` saw 20 shared writes a commit with two busy
/// loops beside it).
#[cfg_attr(strata_model, allow(dead_code))]
#[derive(Default)]
struct Homes {
    /// (slot number, threads keeping it).
    kept: Vec<(usize, u32)>,
    orphaned: Vec<usize>,
}

#[cfg_attr(strata_model, allow(dead_code))]
impl Homes {
    /// A running thread keeps `i` as a hint.
    fn keep(&mut self, i: usize) {
        match self.kept.iter_mut().find(|k| k.0 == i) {
            Some(k) => k.1 += 1,
            None => self.kept.push((i, 1)),
        }
        self.orphaned.retain(|&o| o != i);
    }

    /// A thread that kept `i` has exited.
    fn leave(&mut self, i: usize) {
        let Some(at) = self.kept.iter().position(|k| k.0 == i) else {
            return;
        };
        self.kept[at].1 -= 1;
        if self.kept[at].1 == 0 {
            self.kept.swap_remove(at);
            self.orphaned.push(i);
        }
    }
}

impl TidTable {
    pub fn new(capacity: usize) -> Self {
        let slots = (0..capacity)
            .map(|_| {
                CachePadded::new(Slot {
                    tid: AtomicU64::new(0),
                    state: AtomicU64::new(ABORTED << STATUS_SHIFT),
                    begin: AtomicU64::new(u64::MAX),
                    is_rw: AtomicBool::new(false),
                    pstamp: AtomicU64::new(0),
                    sstamp: AtomicU64::new(0),
                    reads: ReadFilter::default(),
                    generation: AtomicU64::new(0),
                })
            })
            .collect();
        TidTable {
            slots,
            counts: (0..capacity).map(|_| Default::default()).collect(),
            high_water: AtomicUsize::new(0),
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Takes a free slot and returns the new transaction id, with the slot
    /// registered at snapshot `lower_bound` (which must be <= the snapshot the
    /// transaction will use).
    ///
    /// One SeqCst CAS of `begin` from MAX (free) to `lower_bound` both
    /// claims the slot and registers the snapshot bound, ordered before the
    /// caller's SeqCst clock load for its snapshot, against GC's
    /// clock-load, fence, scan (`TidTable::snapshots`). The other
    /// fields are Release stores published by the Release store of the id:
    /// a reader that sees the id sees them. This used to be a CAS on a
    /// separate `in_use` flag, seven SeqCst stores (a locked instruction
    /// each) and a fence in the caller (an `mfence`, slower than a locked
    /// instruction on AMD): a third of a cached read-only transaction.
    pub fn acquire(&self, lower_bound: u64, rw: bool) -> Option<u64> {
        debug_assert!(lower_bound != u64::MAX, "MAX marks a free slot");
        // The usual case, the thread's home slot, first and inline (as one
        // closure with the rest, `with` was sometimes left a call: +24
        // instructions a transaction).
        let home = SLOT_HINT.with(|h| h.home.get());
        let idx = if home < self.slots.len() && self.try_claim(home, lower_bound) {
            home
        } else {
            self.claim_by_hints(lower_bound)?
        };
        if self.high_water.load(SeqCst) <= idx {
            self.high_water.fetch_max(idx + 1, SeqCst);
        }
        let s = &self.slots[idx];
        // Only the slot's claimant writes `generation` (the claim's Acquire
        // orders us after the previous claimant's writes).
        let gen = s.generation.load(Relaxed) + 1;
        s.generation.store(gen, Relaxed);
        let tid = (gen << SLOT_BITS) | idx as u64;
        s.is_rw.store(rw, Release);
        s.state.store(ACTIVE << STATUS_SHIFT, Release);
        s.pstamp.store(0, Release);
        s.sstamp.store(u64::MAX, Release);
        // Cleared before the id is published: a writer that reads the filter
        // under the new id never sees the previous occupant's reads.
        s.reads.clear();
        s.tid.store(tid, Release);
        Some(tid)
    }

    /// Home, else the nested slot, else (a third transaction open here, or
    /// another thread's nested one on our slots for now) any free slot,
    /// with no hint moved; a hint not set yet is set to a slot no running
    /// thread keeps.
    #[inline(never)]
    fn claim_by_hints(&self, lower_bound: u64) -> Option<usize> {
        SLOT_HINT.with(|h| {
            for hint in [&h.home, &h.nested] {
                let i = hint.get();
                if i == usize::MAX {
                    let i = self.claim_unowned(true, lower_bound)?;
                    hint.set(i);
                    #[cfg(not(strata_model))]
                    HOMES.lock().keep(i);
                    return Some(i);
                }
                if i < self.slots.len() && self.try_claim(i, lower_bound) {
                    return Some(i);
                }
            }
            self.claim_unowned(false, lower_bound)
        })
    }

    /// A slot no running thread keeps as its own, so that each thread
    /// stays on its slots' lines: with `own` (a hint being set), an exited
    /// thread's first, else the first never used, else any free one from
    /// slot 0; without (a transaction beyond a thread's two), any free one
    /// from slot 0 first, so such transactions do not use up fresh slots.
    /// (It once scanned from slot 0 only: a new thread took the slot of
    /// another that was between transactions, the two then traded slots,
    /// and every line of both slots, with their commit counts, was written
    /// by both threads: eleven shared writes a commit in the counting
    /// build, `sync::counting`.)
    fn claim_unowned(&self, own: bool, lower_bound: u64) -> Option<usize> {
        #[cfg(not(strata_model))]
        if own {
            let orphan = HOMES.lock().orphaned.pop();
            if let Some(i) = orphan.filter(|&i| i < self.slots.len()) {
                if self.try_claim(i, lower_bound) {
                    return Some(i);
                }
            }
        }
        let hw = self.high_water.load(SeqCst).min(self.slots.len());
        if !own {
            if let Some(i) = (0..hw).find(|&i| self.try_claim(i, lower_bound)) {
                return Some(i);
            }
        }
        for i in hw..self.slots.len() {
            // Counted before it is claimed (SeqCst both): a scan that reads
            // `high_water` (after its clock, see `snapshots`) before this
            // misses only a claim whose snapshot and timestamp come after
            // that clock. Counted after the claim, a scan could miss a
            // running writer, and an MVTO reader that began below it lost
            // versions to the collector (`dead_zone::long_readers_and_the_
            // collector_under_every_protocol` caught it once new threads
            // took fresh slots).
            self.high_water.fetch_max(i + 1, SeqCst);
            if self.try_claim(i, lower_bound) {
                return Some(i);
            }
        }
        (0..hw).find(|&i| self.try_claim(i, lower_bound))
    }

    /// Claims slot `i` if it is free, registering `lower_bound`. SeqCst:
    /// the registration (see `acquire`); it also acquires `release`'s
    /// Release store, so the previous occupant's writes happen before ours.
    fn try_claim(&self, i: usize, lower_bound: u64) -> bool {
        let b = &self.slots[i].begin;
        b.load(Relaxed) == u64::MAX
            && b.compare_exchange(u64::MAX, lower_bound | PENDING, SeqCst, Relaxed)
                .is_ok()
    }

    /// Raises `tid`'s registration from the lower bound `acquire` stored to
    /// its snapshot `ts` (at or above it). Needs no fence: a collector that
    /// misses the store still sees the (smaller) lower bound.
    #[inline]
    pub fn set_snapshot(&self, tid: u64, ts: u64) {
        self.slot(tid).begin.store(ts, Release);
    }

    /// The snapshot `tid`'s slot registers (the lower bound while it is
    /// still beginning); MAX for a free slot.
    #[inline]
    pub fn registered_begin(&self, tid: u64) -> u64 {
        let b = self.slot(tid).begin.load(SeqCst);
        if b == u64::MAX {
            b
        } else {
            b & !PENDING
        }
    }

    /// Frees the slot of `tid`; its versions must be stamped or unlinked.
    pub fn release(&self, tid: u64) {
        let idx = (tid & SLOT_MASK) as usize;
        let s = &self.slots[idx];
        // Release: a reader that finds the id gone (Gone) re-reads the
        // versions, whose stamps were stored before this. Nothing this
        // thread loads afterwards depends on these stores being seen first,
        // so no store-load fence (SeqCst store) is needed.
        // The id goes first: once `begin` is MAX the slot can be claimed,
        // and the claimant's id must not be overwritten by our 0.
        if broken(Break::ReleaseFreesSlotFirst) {
            s.begin.store(u64::MAX, Release);
            s.tid.store(0, Release);
            return;
        }
        s.tid.store(0, Release);
        crate::sync::ghost(crate::sync::Logged::SlotReleased);
        s.begin.store(u64::MAX, Release);
    }

    /// The index of `tid`'s slot (a small number: slots are taken from 0
    /// up).
    #[inline]
    pub fn slot_index(tid: u64) -> usize {
        (tid & SLOT_MASK) as usize
    }

    #[inline]
    pub fn slot(&self, tid: u64) -> &Slot {
        &self.slots[(tid & SLOT_MASK) as usize]
    }

    /// Announces, before the commit timestamp is drawn, that one is about
    /// to be. Without it a reader could take its snapshot between our
    /// fetch-add and our COMMITTING store, find us ACTIVE, skip one of our
    /// versions and then see another one stamped (a fractured read, found
    /// by the shuttle model `commit_stamping_and_tid_visibility`).
    pub fn set_precommit(&self, tid: u64) {
        if broken(Break::NoPrecommit) {
            return;
        }
        self.slot(tid)
            .state
            .store((COMMITTING << STATUS_SHIFT) | PENDING_CTS, SeqCst);
    }

    pub fn set_committing(&self, tid: u64, cts: u64) {
        self.slot(tid)
            .state
            .store((COMMITTING << STATUS_SHIFT) | cts, SeqCst);
    }
    pub fn set_committed(&self, tid: u64, cts: u64) {
        self.slot(tid)
            .state
            .store((COMMITTED << STATUS_SHIFT) | cts, SeqCst);
    }
    pub fn set_aborted(&self, tid: u64) {
        self.slot(tid).state.store(ABORTED << STATUS_SHIFT, SeqCst);
    }

    /// The status of transaction `tid`.
    #[inline]
    pub fn status(&self, tid: u64) -> Status {
        // Ids beyond the table (such as GC's lock value) belong to no
        // transaction.
        let Some(s) = self.slots.get((tid & SLOT_MASK) as usize) else {
            return Status::Gone;
        };
        if s.tid.load(SeqCst) != tid {
            return Status::Gone;
        }
        let st = s.state.load(SeqCst);
        // The slot may have been released and reused between the two loads.
        if s.tid.load(SeqCst) != tid {
            return Status::Gone;
        }
        decode(st)
    }

    /// Waits while `tid` is PRECOMMIT or COMMITTING and returns its final
    /// status.
    pub fn wait_decided(&self, tid: u64) -> Status {
        let backoff = Backoff::new();
        loop {
            match self.status(tid) {
                Status::Committing(_) | Status::Precommit => backoff.snooze(),
                other => return other,
            }
        }
    }

    /// Waits until every transaction that is deciding its commit now
    /// (PRECOMMIT or COMMITTING) has decided. With a SeqCst store before
    /// it, a Dekker pair with a committer's SeqCst announcement and later
    /// load: either the committer loads what we stored, or we see it
    /// deciding and wait for it (`Database::drop_table`).
    pub fn wait_for_deciding(&self) {
        let deciding = |st: u64| st >> STATUS_SHIFT == COMMITTING;
        let backoff = Backoff::new();
        let hw = self.high_water.load(SeqCst);
        for s in &self.slots[..hw] {
            if !deciding(s.state.load(SeqCst)) {
                continue;
            }
            // Its id (published before its state): stop when the slot
            // has moved on to another occupant.
            let tid = s.tid.load(SeqCst);
            while deciding(s.state.load(SeqCst)) && s.tid.load(SeqCst) == tid {
                backoff.snooze();
            }
        }
    }

    /// The status of `tid`, waiting out the short PRECOMMIT window (one
    /// fetch-add long) so the caller sees a commit timestamp.
    pub fn settled_status(&self, tid: u64) -> Status {
        let backoff = Backoff::new();
        loop {
            match self.status(tid) {
                Status::Precommit => backoff.snooze(),
                other => return other,
            }
        }
    }

    /// Read-write and read-only commits over every slot (for
    /// `txn::contention`'s rate; O(slots in use)).
    pub fn commits(&self) -> u64 {
        let hw = self.high_water.load(SeqCst);
        self.counts[..hw].iter().map(|c| c.commits()).sum()
    }

    /// Adds every slot's commit and abort counts to `st`.
    pub fn fill_counts(&self, st: &mut crate::stats::Stats) {
        let hw = self.high_water.load(SeqCst);
        for c in &self.counts[..hw] {
            c.add_to(st);
        }
    }

    /// The counts of `tid`'s slot (its occupant's to write).
    #[inline]
    // (The model build re-exports the table to its tests; not this.)
    #[cfg_attr(strata_model, allow(private_interfaces))]
    pub fn counts(&self, tid: u64) -> &crate::stats::TxnCounts {
        &self.counts[(tid & SLOT_MASK) as usize]
    }

    /// Smallest registered snapshot among open transactions, restricted to
    /// read-write ones if `rw_only`; `u64::MAX` if none.
    pub fn min_begin(&self, rw_only: bool) -> u64 {
        let hw = self.high_water.load(SeqCst);
        let mut m = u64::MAX;
        for s in &self.slots[..hw] {
            if rw_only && !s.is_rw.load(SeqCst) {
                continue;
            }
            // A free slot holds MAX, which has PENDING set: not masked.
            let b = s.begin.load(SeqCst);
            if b != u64::MAX {
                m = m.min(b & !PENDING);
            }
        }
        m
    }

    /// The registered snapshots, for garbage collection (the protocol may
    /// lower their horizon further: `Snapshots::bounded`).
    ///
    /// The clock is read first, then a SeqCst fence, then each slot's
    /// `begin` once; nothing is written, so `begin` never waits for us. A
    /// transaction registers (the SeqCst CAS in `acquire`) before it loads
    /// the clock for its snapshot. If our load of its slot misses the
    /// registration, the registration comes later in the SeqCst order, so
    /// does its clock load, and its snapshot is at least the clock we read:
    /// the result's `oldest()` (at most that clock) stays at or below it. A
    /// registration we do see is the snapshot or a lower bound of it (raised
    /// later by a Release store), so also at or below it. Lower bounds are
    /// told apart (`PENDING`): the result lists only real snapshots and
    /// keeps the smallest lower bound as a floor for snapshots not listed.
    ///
    /// `clock` reads the global clock (a SeqCst load; a `crate::sync`
    /// atomic, so a step of the shuttle model `gc_horizon_vs_registration`).
    pub fn snapshots(&self, clock: impl FnOnce() -> u64) -> Snapshots {
        let scan = || {
            fence(SeqCst);
            let hw = self.high_water.load(SeqCst);
            let mut begins = Vec::with_capacity(hw);
            let mut pending = u64::MAX;
            for s in &self.slots[..hw] {
                let b = s.begin.load(SeqCst);
                if b == u64::MAX {
                    continue;
                }
                if b & PENDING != 0 {
                    pending = pending.min(b & !PENDING);
                } else {
                    begins.push(b);
                }
            }
            (begins, pending)
        };
        if broken(Break::ScanBeforeClock) {
            let (begins, pending) = scan();
            return Snapshots::with_pending(clock(), begins, pending);
        }
        let g = clock();
        let (begins, pending) = scan();
        Snapshots::with_pending(g, begins, pending)
    }

    /// The transactions other than `me` that drew a commit timestamp below
    /// `cts` (COMMITTING or COMMITTED now): the only in-flight readers an
    /// overwriter committing at `cts` must count (see `cc::ssn`).
    ///
    /// One scan per commit, not one per overwritten version: each scan
    /// loads every open slot's id and state, lines their occupants write at
    /// every begin and commit, so per version it cost writes x threads
    /// cache misses (SSN ran the 16-thread uniform update mix at two thirds
    /// of SI's rate). Scanning once loses nothing: `set_precommit` comes
    /// before the draw, so every transaction with a stamp below ours is
    /// PRECOMMIT or later before our draw and so before this scan; one that
    /// ends after it published its cstamp on what it read before freeing
    /// its slot, which the caller loads after asking the filters.
    pub fn committed_before(&self, me: u64, cts: u64) -> EarlierCommitters<'_> {
        let hw = self.high_water.load(SeqCst);
        let mut found = smallvec::SmallVec::new();
        for s in &self.slots[..hw] {
            let tid = s.tid.load(SeqCst);
            if tid == 0 || tid == me {
                continue;
            }
            if let Status::Committing(c) | Status::Committed(c) = self.settled_status(tid) {
                if c < cts {
                    found.push((&**s, tid, c));
                }
            }
        }
        EarlierCommitters { found }
    }

    /// The occupied slots now, as (slot, generation): a picture that
    /// [`Self::any_still_open`] compares later, to learn that every
    /// transaction open at this scan has ended (SSI's quiescence, see
    /// `cc::ssi`). A claimant bumps its slot's generation just after its
    /// claim, so a slot claimed but not yet bumped is recorded one
    /// generation low; the check allows for that, erring towards "open".
    pub fn occupied(&self) -> Occupied {
        let hw = self.high_water.load(SeqCst);
        (0..hw)
            .filter(|&i| self.slots[i].begin.load(SeqCst) != u64::MAX)
            .map(|i| (i, self.slots[i].generation.load(Relaxed)))
            .collect()
    }

    /// Whether any occupant recorded by [`Self::occupied`] may still hold
    /// its slot: the slot is taken, by a generation at most one past the
    /// one recorded (the recorded occupant itself, or its successor: we
    /// cannot tell them apart, so both count as open).
    pub fn any_still_open(&self, occupied: &Occupied) -> bool {
        occupied.iter().any(|&(i, gen)| {
            let s = &self.slots[i];
            s.begin.load(SeqCst) != u64::MAX && s.generation.load(Relaxed) <= gen + 1
        })
    }

    /// Number of slots in use.
    pub fn open_count(&self) -> usize {
        let hw = self.high_water.load(SeqCst);
        self.slots[..hw]
            .iter()
            .filter(|s| s.begin.load(SeqCst) != u64::MAX)
            .count()
    }
}

/// The result of [`TidTable::committed_before`]: (slot, id, cstamp) of
/// each transaction found, usually none or one.
pub struct EarlierCommitters<'a> {
    found: smallvec::SmallVec<[(&'a Slot, u64, u64); 4]>,
}

impl EarlierCommitters<'_> {
    /// Calls `f(id, cstamp)` for each transaction found whose read filter
    /// may contain `addr`.
    #[inline]
    pub fn possible_readers(&self, addr: usize, mut f: impl FnMut(u64, u64)) {
        for &(s, tid, c) in &self.found {
            // Re-check the id after reading the filter: a reused slot's
            // filter belongs to someone else.
            if s.reads.may_contain(addr) && s.tid.load(SeqCst) == tid {
                f(tid, c);
            }
        }
    }
}

/// What storage's visibility check asks about the creator of a version.
impl TxnStates for TidTable {
    #[inline]
    fn settled(&self, id: u64) -> TxnState {
        txn_state(self.settled_status(id))
    }

    #[inline]
    fn decided(&self, id: u64) -> TxnState {
        txn_state(self.wait_decided(id))
    }

    #[inline]
    fn running_ts(&self, id: u64) -> Option<u64> {
        let ts = self.registered_begin(id);
        // Read after the timestamp: still ACTIVE means the timestamp was
        // this transaction's, not a later occupant's of the slot.
        (self.status(id) == Status::Active).then_some(ts)
    }
}

/// `settled_status` and `wait_decided` never return PRECOMMIT.
#[inline]
fn txn_state(s: Status) -> TxnState {
    match s {
        Status::Active => TxnState::Active,
        Status::Precommit => unreachable!("PRECOMMIT is waited out"),
        Status::Committing(c) => TxnState::Committing(c),
        Status::Committed(c) => TxnState::Committed(c),
        Status::Aborted => TxnState::Aborted,
        Status::Gone => TxnState::Gone,
    }
}

fn decode(st: u64) -> Status {
    let cts = st & CTS_MASK;
    match st >> STATUS_SHIFT {
        ACTIVE => Status::Active,
        COMMITTING if cts == PENDING_CTS => Status::Precommit,
        COMMITTING => Status::Committing(cts),
        COMMITTED => Status::Committed(cts),
        _ => Status::Aborted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_number_is_orphaned_once_and_only_when_no_running_thread_keeps_it() {
        let mut h = Homes::default();
        // X keeps 0 (one database); Y took fresh slot 0 on another before
        // X's thread-locals were dropped.
        h.keep(0);
        h.keep(0);
        h.leave(0);
        assert!(h.orphaned.is_empty(), "Y still keeps 0");
        h.leave(0);
        assert_eq!(h.orphaned, [0]);
        // A new thread takes it: no longer anybody's to take.
        h.keep(0);
        assert!(h.orphaned.is_empty());
        h.leave(0);
        // A leave of a number nobody keeps changes nothing.
        h.leave(0);
        h.leave(7);
        assert_eq!(h.orphaned, [0]);
    }

    /// A read filter never forgets a read (a writer would miss a reader)
    /// and, holding a short transaction's reads, rarely claims others.
    #[test]
    fn read_filters_keep_every_read_and_few_others() {
        let f = ReadFilter::default();
        // Version-like addresses: 16-byte aligned, 200 bytes apart.
        let addr = |i: usize| 0x7f00_0000_0000 + i * 208;
        for i in 0..10 {
            f.insert(addr(i));
        }
        assert!((0..10).all(|i| f.may_contain(addr(i))));
        let claimed = (10..10_010).filter(|&i| f.may_contain(addr(i))).count();
        assert!(
            claimed < 100,
            "{claimed} of 10,000 unread addresses claimed"
        );
        for i in 10..300 {
            f.insert(addr(i));
        }
        assert!((0..300).all(|i| f.may_contain(addr(i))));
        f.clear();
        assert!(!(0..300).any(|i| f.may_contain(addr(i))));
    }

    #[test]
    fn stale_ids_are_recognised_after_reuse() {
        let t = TidTable::new(2);
        let a = t.acquire(5, true).unwrap();
        assert_eq!(t.status(a), Status::Active);
        t.set_committing(a, 9);
        assert_eq!(t.status(a), Status::Committing(9));
        t.set_committed(a, 9);
        assert_eq!(t.status(a), Status::Committed(9));
        assert_eq!(t.min_begin(false), 5);
        t.release(a);
        assert_eq!(t.status(a), Status::Gone);
        let b = t.acquire(7, false).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.status(a), Status::Gone);
        assert_eq!(t.min_begin(true), u64::MAX);
        assert_eq!(t.min_begin(false), 7);
        // A free slot counts for nothing (its MAX is no lower bound).
        t.release(b);
        assert_eq!(t.min_begin(false), u64::MAX);
    }

    #[test]
    fn snapshots_are_every_registered_begin_sorted_with_the_old_horizon() {
        let t = TidTable::new(8);
        let clock = AtomicU64::new(100);
        // The horizon as `DbInner::compute_horizon` computed it before
        // `Snapshots` existed (before the protocol's bound).
        let old_horizon = || clock.load(SeqCst).min(t.min_begin(false));
        let check = |want: &[u64]| {
            let s = t.snapshots(|| clock.load(SeqCst));
            assert_eq!(s.as_slice(), want);
            assert_eq!(s.oldest(), old_horizon());
            assert_eq!(s.clock(), clock.load(SeqCst));
        };
        check(&[]);
        let ro = t.acquire(70, false).unwrap();
        let gone = t.acquire(40, true).unwrap();
        let w1 = t.acquire(90, true).unwrap();
        let w2 = t.acquire(55, true).unwrap();
        let ro2 = t.acquire(70, false).unwrap();
        // A released slot in the middle of the used prefix.
        t.release(gone);
        // Still beginning: lower bounds, no snapshot yet, but the floor (and
        // the horizon) is the smallest of them.
        check(&[]);
        let s = t.snapshots(|| clock.load(SeqCst));
        assert_eq!((s.floor(), s.oldest()), (55, 55));
        for (id, ts) in [(ro, 70), (w1, 90), (w2, 55), (ro2, 70)] {
            t.set_snapshot(id, ts);
        }
        check(&[55, 70, 70, 90]);
        let s = t.snapshots(|| clock.load(SeqCst));
        assert_eq!((s.floor(), s.oldest()), (100, 55));
        // A snapshot raised later (a lower bound is never above it).
        t.set_snapshot(w2, 95);
        check(&[70, 70, 90, 95]);
        assert_eq!(t.snapshots(|| clock.load(SeqCst)).oldest(), 70);
        // The clock bounds snapshots still to come.
        clock.store(60, SeqCst);
        check(&[70, 70, 90, 95]);
        assert_eq!(t.snapshots(|| clock.load(SeqCst)).oldest(), 60);
        for id in [ro, w1, w2, ro2] {
            t.release(id);
        }
        check(&[]);
    }

    #[test]
    fn table_refuses_when_full() {
        let t = TidTable::new(1);
        let a = t.acquire(0, true).unwrap();
        assert!(t.acquire(0, true).is_none());
        t.release(a);
        assert!(t.acquire(0, true).is_some());
    }

    #[test]
    fn a_thread_reuses_its_slot_and_concurrent_ones_get_distinct_slots() {
        let t = TidTable::new(8);
        let a = t.acquire(0, true).unwrap();
        t.release(a);
        let b = t.acquire(0, true).unwrap();
        assert_eq!(a & SLOT_MASK, b & SLOT_MASK, "the hint slot is reused");
        let c = t.acquire(0, false).unwrap();
        assert_ne!(b & SLOT_MASK, c & SLOT_MASK);
        assert_eq!(t.open_count(), 2);
        // Many threads claiming and releasing never share a slot.
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..2000 {
                        let id = t.acquire(1, true).unwrap();
                        let s = t.slot(id);
                        assert_eq!(s.tid.load(SeqCst), id, "slot taken by two transactions");
                        assert_eq!(t.status(id), Status::Active);
                        t.release(id);
                    }
                });
            }
        });
        assert_eq!(t.open_count(), 2);
        t.release(b);
        t.release(c);
        assert_eq!(t.open_count(), 0);
    }

    /// A thread that keeps two transactions open round after round (a
    /// reader beside a writer) holds on to two slots: its second
    /// transaction does not take a fresh slot each round (the hint once
    /// followed every claim, so `high_water`, and every snapshot scan,
    /// crept up to the table's capacity), and a third one open at once
    /// takes a free slot below `high_water` rather than a fresh one.
    #[test]
    fn two_transactions_a_round_keep_two_slots() {
        let t = TidTable::new(64);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut seen = std::collections::BTreeSet::new();
                for _ in 0..100 {
                    let a = t.acquire(0, true).unwrap();
                    let b = t.acquire(0, true).unwrap();
                    seen.extend([a & SLOT_MASK, b & SLOT_MASK]);
                    t.release(a);
                    t.release(b);
                }
                assert_eq!(seen.len(), 2, "slots used: {seen:?}");
                // Three at once: the third takes a free slot below
                // `high_water` (another thread's, idle now), none fresh.
                // (The other thread stays alive meanwhile: its slot is
                // idle, not left to new threads.)
                let (a, b) = (t.acquire(0, true).unwrap(), t.acquire(0, true).unwrap());
                let (idle, done) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
                let (hw, after) = std::thread::scope(|s2| {
                    s2.spawn(|| {
                        t.release(t.acquire(0, true).unwrap());
                        idle.wait();
                        done.wait();
                    });
                    idle.wait();
                    t.release(a);
                    t.release(b);
                    let hw = t.high_water.load(SeqCst);
                    let ids: Vec<u64> = (0..3).map(|_| t.acquire(0, true).unwrap()).collect();
                    let after = t.high_water.load(SeqCst);
                    ids.into_iter().for_each(|id| t.release(id));
                    done.wait();
                    (hw, after)
                });
                assert_eq!(after, hw, "a third took a fresh slot");
            });
        });
    }
}
