//! Transaction-level garbage collection with epochs (Peloton §5, ERMIA).
//!
//! A committing transaction hands over, for every row it overwrote, the
//! version it created, tagged with its commit timestamp. Once every open
//! transaction's snapshot is at or above that timestamp (the *horizon*,
//! [`Snapshots::oldest`]), every snapshot sees that version or a newer
//! one, so everything below it is garbage: the chain is cut there and the
//! tail is freed through `crossbeam-epoch` (a reader that was already
//! walking it finishes safely):
//!
//! ```text
//!  horizon = 40, entry (cts 38, v38)
//!  head ─> v(55) ─> v(38) ─╳─> v(20) ─> v(7)        cut below v(38),
//!                                                  v(20), v(7) freed
//!                                                  when the epoch advances
//! ```
//!
//! The entry points at the version directly, so GC does not walk the row
//! from its head (that was a cache miss per update on large tables). The
//! version stays valid until its entry is processed; see [`Garbage`].
//!
//! There is one queue per TID slot (a thread keeps its slot, so in
//! practice one per thread): a commit appends to its own slot's queue, a
//! single-producer single-consumer list of blocks ([`super::slot_queue`])
//! that takes no lock, so the commit path writes no cache line that
//! another thread writes, a pass included. (One queue under one mutex took
//! about 8% of the workers' samples on the 50%-update YCSB mix under skew
//! when cache lines crossed cores slowly; 64 shards under a mutex each
//! left the shard's lock, which a pass took too, as one shared line a
//! commit: issue 42's count.) A slot's entries are in commit order, so a
//! pass takes the ready prefix of every queue and processes the entries in
//! commit-timestamp order:
//!
//! ```text
//!  queue 0 (slot 0): (cts 31, r7) (cts 35, r2) (cts 52, r7)
//!  queue 1 (slot 1): (cts 33, r7) (cts 40, r9)
//!  horizon 45 ─> ready, by cts: (31, r7) (33, r7) (35, r2) (40, r9)
//! ```
//!
//! Why taking every entry at or below the horizon keeps each row's entries
//! in order: a writer queues its entry before it unlocks the row and while
//! it still holds its TID slot, and its slot keeps the horizon below its
//! commit timestamp until it is released. So an entry at or below the
//! horizon was queued before the pass read the horizon, and so was every
//! earlier entry of its row (queued before the row was unlocked for the
//! later writer).
//!
//! Committers run the passes, and a pass writes its own bookkeeping (the
//! `running` lock, the scratch space, each queue's consumer side, the
//! counters: about threads + 5 lines). If whichever committer's turn came
//! ran it, those lines would move between cores at every pass (0.18 shared
//! writes a commit at 2 threads, issue 42's count). So one committer leads:
//! each thread reaches a *turn* every `gc_every_commits` of its commits;
//! the leader's turn runs a pass, anybody else's skips, unless the leader
//! has fallen behind: the clock has moved [`TAKEOVER`] times the leader's
//! *pace* since the last pass (the leader stopped committing, went idle or
//! was descheduled). The pace is how far the clock moved between the last
//! two passes, at least `gc_every_commits` commits per queue that had
//! entries (a thread that commits each) and at most [`TAKEOVER`] times
//! that. That turn runs the pass and takes the lead, so the pass's lines
//! move once per takeover (`Stats::gc_pass_takeovers`) rather than once
//! per pass, and garbage waits about [`TAKEOVER`] times the leader's pace
//! when the leader stops. Passes come every `gc_every_commits` commits of
//! the leader: every threads × `gc_every_commits` commits of all threads,
//! in a balanced run. The clock moves a step per read-write commit, or
//! more (MVTO's read-write begins draw from it; with a write-ahead log it
//! is the log's reservation counter, `crate::log`, and
//! `Engine::clock_steps` converts): the pace, measured on the clock,
//! follows.
//!
//! ```text
//!  2 threads, every 16 commits, TAKEOVER 4
//!  clock   0 ..... 32 ..... 64 ..... 96 ........................ 224
//!  A leads: a pass at each of its turns (16 of its commits); pace 32,
//!           takeover_at = last pass + 4 × 32
//!  B's turns: skipped while clock < takeover_at
//!  A stops after the pass at 96: B's turn at clock 224 runs a pass; B leads
//! ```
//!
//! Which thread leads decides only who tries: passes are serialised by
//! `Common::running` whoever runs them (and a background thread's or
//! `Database::collect_garbage`'s pass moves `takeover_at` too, without
//! taking the lead).
//!
//! The GC thread (`Options::gc_interval`) is there for garbage nobody's
//! commits will reach: a long reader ends while nobody commits. At each
//! wake-up it looks at the clock of the last pass; if a committer's pass
//! ran since its last look, the leader keeps pace and it goes back to
//! sleep, writing nothing the passes write (`Stats::gc_background_skips`).
//! Otherwise it runs the pass. So garbage left when commits stop waits at
//! most two intervals.
//!
//! A deleted row whose tombstone is visible at the horizon is unlinked as a
//! whole and waits in limbo (see [`super::limbo`]). An entry queued before
//! the unlink committed at or below the clock read after it (the row's
//! `unlinked_at`), so once the horizon passes `unlinked_at` every such
//! entry has been taken and processed, and the row leaves limbo.

use super::limbo::Unlinked;
use super::slot_queue::SlotQueue;
use super::{
    finish_pass, prune_row, Collector, Committed, Common, Engine, Garbage, MayRemove, Pruned,
    Snapshots,
};
use crate::stats::Stats;
use crate::storage;
use crate::sync::counted::{AtomicU64, AtomicUsize};
use crate::table::TableInner;
use crossbeam_epoch as epoch;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The transaction-level collector: a queue of [`Garbage`] entries per
/// TID slot.
pub struct TransactionLevel {
    /// One per TID slot, made by the slot's first commit that queues.
    queues: Box<[OnceLock<Box<SlotQueue>>]>,
    /// Queues `0..used` may have been pushed to (a pass looks at no others).
    used: AtomicUsize,
    /// A pass's working space, kept between passes so that a pass in the
    /// steady state allocates nothing, and its deferred entries (only a
    /// pass, under `Common::running`, locks it).
    scratch: Mutex<Scratch>,
    /// Who runs the committers' passes (see the module doc): written by
    /// passes, read by every turn.
    turn: CachePadded<PassTurn>,
    /// The GC thread's last look (see the module doc): its own line.
    background: CachePadded<BackgroundLook>,
    /// `Options::gc_every_commits`.
    every_commits: u64,
}

impl TransactionLevel {
    /// A collector for a TID table of `slots` slots whose committers'
    /// passes come every `every_commits` commits of the pass leader (see
    /// the module doc).
    pub fn new(every_commits: u32, slots: usize) -> Self {
        TransactionLevel {
            queues: (0..slots).map(|_| OnceLock::new()).collect(),
            used: AtomicUsize::new(0),
            scratch: Mutex::default(),
            turn: CachePadded::default(),
            background: CachePadded::default(),
            every_commits: u64::from(every_commits),
        }
    }
}

/// How many times its pace a pass leader may fall behind before another
/// committer's turn takes over (see the module doc).
pub(super) const TAKEOVER: u64 = 4;

/// See `TransactionLevel::turn`.
#[derive(Default)]
struct PassTurn {
    /// The thread ([`pass_token`]) whose turns run the passes; 0: none yet.
    leader: AtomicU64,
    /// The clock at the last pass, and the clock from which another
    /// committer's turn runs a pass and takes the lead (written by every
    /// pass).
    last_pass: AtomicU64,
    takeover_at: AtomicU64,
    /// Passes a committer ran after taking the lead from another thread
    /// (`Stats::gc_pass_takeovers`).
    takeovers: AtomicU64,
}

/// See `TransactionLevel::background`: written by the GC thread alone.
#[derive(Default)]
struct BackgroundLook {
    /// `PassTurn::last_pass` at the GC thread's last look.
    seen: AtomicU64,
    /// Wake-ups that found a pass since the last look and ran none
    /// (`Stats::gc_background_skips`).
    skips: AtomicU64,
}

crate::sync::thread_local! {
    static PASS_TOKEN: u64 = {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, Relaxed)
    };
}

/// This thread's name for [`PassTurn::leader`]: unique, never 0.
fn pass_token() -> u64 {
    PASS_TOKEN.with(|t| *t)
}

/// See `TransactionLevel::scratch`.
#[derive(Default)]
struct Scratch {
    /// The entries a pass processes (empty between passes).
    ready: Vec<Garbage>,
    /// Row to its newest entry in `ready`, when rows may repeat.
    newest: NewestEntries,
    /// Entries of deleted rows that could not be unlinked yet
    /// (`Pruned::NotYet`), by (table, tuple), retried each pass. They stay
    /// out of the queues: a later write of the row may be queued before a
    /// re-pushed entry and, processed first, retire the tombstone the entry
    /// points at; here the later entry drops the deferred one instead.
    /// (Here rather than under a lock of its own: one line fewer that
    /// every pass writes.)
    deferred: FxHashMap<(u32, u64), Garbage>,
}

/// Row -> position of its newest entry in a pass's ready list: open
/// addressing with linear probing in a table of at least twice the
/// entries, cleared per use. (An `FxHashMap` here cost about 70
/// instructions per entry, about 350 per YCSB transaction of the
/// 50%-update mix under skew, where most passes repeat rows.)
#[derive(Default)]
struct NewestEntries {
    /// (table, tuple, position); position `u32::MAX`: empty.
    slots: Vec<(u32, u64, u32)>,
    mask: usize,
}

impl NewestEntries {
    const EMPTY: (u32, u64, u32) = (0, 0, u32::MAX);

    fn home(&self, table: u32, tuple: u64) -> usize {
        let h = (tuple ^ (u64::from(table) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & self.mask
    }

    /// Indexes `ready`; returns whether some row has several entries.
    fn fill(&mut self, ready: &[Garbage]) -> bool {
        let cap = (ready.len() * 2).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(cap, Self::EMPTY);
        self.mask = cap - 1;
        let mut repeats = false;
        for (i, g) in ready.iter().enumerate() {
            let mut s = self.home(g.table, g.tuple);
            loop {
                let e = &mut self.slots[s];
                if e.2 == u32::MAX {
                    *e = (g.table, g.tuple, i as u32);
                    break;
                }
                if e.0 == g.table && e.1 == g.tuple {
                    e.2 = i as u32;
                    repeats = true;
                    break;
                }
                s = (s + 1) & self.mask;
            }
        }
        repeats
    }

    /// The position of the newest entry of (table, tuple), which `fill`
    /// indexed.
    fn get(&self, table: u32, tuple: u64) -> usize {
        let mut s = self.home(table, tuple);
        loop {
            let e = &self.slots[s];
            if e.0 == table && e.1 == tuple && e.2 != u32::MAX {
                return e.2 as usize;
            }
            s = (s + 1) & self.mask;
        }
    }
}

/// Capacity the scratch space keeps after a pass: a backlog (a long reader
/// held the horizon back) does not pin its memory for good.
const SCRATCH_KEEP: usize = 4096;

impl Collector for TransactionLevel {
    #[inline]
    fn on_commit<'a>(&self, cts: u64, slot: usize, rows: impl Iterator<Item = Committed<'a>>) {
        // Only grows. A pass that must see our entries reads it after our
        // slot was released, so after this (see the module doc).
        if self.used.load(Relaxed) <= slot {
            self.used.fetch_max(slot + 1, SeqCst);
        }
        let queue = self.queues[slot].get_or_init(|| Box::new(SlotQueue::new()));
        let entries = rows.map(|r| Garbage {
            cts,
            table: r.table.id,
            tuple: r.tuple,
            version: r.version,
        });
        // SAFETY: the committer holds `slot` until after this call (the
        // `Collector::on_commit` contract), and claimed it after its
        // previous holder released it.
        unsafe { queue.push(entries) };
    }

    fn collect<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
    ) -> Option<u64> {
        let h = snaps.oldest();
        let tables = engine.tables();
        let may_remove = engine.may_remove();
        let (freed, sources) = self.cut(
            common,
            h,
            &|| engine.clock(),
            &|id| tables.get(id as usize).cloned(),
            &may_remove,
            wait,
        )?;
        // The leader's pace: how far the clock moved since the last pass,
        // at least `every_commits` commits per queue that had ready entries
        // (each stands for a thread that commits), and at most `TAKEOVER`
        // times that (a first pass after a long load, or after an idle
        // spell, does not put the next takeover far off). The clock moves
        // a step per read-write commit, or more (MVTO's begins draw from
        // it too; a log's LSNs move by record lengths).
        let now = engine.clock();
        let floor = engine.clock_steps(self.every_commits * sources.max(1) as u64);
        let since = now.saturating_sub(self.turn.last_pass.load(Relaxed));
        let pace = since.clamp(floor, TAKEOVER.saturating_mul(floor));
        self.turn.last_pass.store(now, Relaxed);
        (self.turn.takeover_at).store(now.saturating_add(TAKEOVER.saturating_mul(pace)), Relaxed);
        finish_pass(common, engine, &tables, h, wait);
        drop(tables);
        common.counters.gc_passes.fetch_add(1, SeqCst);
        Some(freed)
    }

    fn every_few_commits<E: Engine>(&self, common: &Common, engine: &E) {
        let me = pass_token();
        let turn = &self.turn;
        let leader = turn.leader.load(Relaxed);
        if leader == me {
            self.pass(common, engine, false);
        } else if engine.clock() >= turn.takeover_at.load(Relaxed)
            && self.pass(common, engine, false).is_some()
        {
            turn.leader.store(me, Relaxed);
            if leader != 0 {
                turn.takeovers.fetch_add(1, Relaxed);
            }
        }
    }

    fn fill_stats(&self, st: &mut Stats) {
        st.gc_pass_takeovers = self.turn.takeovers.load(Relaxed);
        st.gc_background_skips = self.background.skips.load(Relaxed);
    }

    fn background_threads(&self, every: Option<Duration>) -> usize {
        usize::from(every.is_some())
    }

    fn background<E: Engine>(&self, common: &Common, engine: &E, _thread: usize) {
        let look = &self.background;
        let last = self.turn.last_pass.load(Relaxed);
        if last != look.seen.load(Relaxed) {
            // A pass ran since our last look: its leader keeps pace.
            look.seen.store(last, Relaxed);
            look.skips.fetch_add(1, Relaxed);
            return;
        }
        self.pass(common, engine, false);
        look.seen.store(self.turn.last_pass.load(Relaxed), Relaxed);
    }

    fn forget_table(&self, table: u32) {
        for queue in self.queues[..self.used.load(SeqCst)].iter() {
            if let Some(q) = queue.get() {
                q.forget_table(table);
            }
        }
        (self.scratch.lock().deferred).retain(|&(t, _), _| t != table);
    }
}

impl TransactionLevel {
    /// Cuts the chains of every queued row whose overwriter committed at or
    /// before `horizon`, unlinks rows whose newest visible version is a
    /// tombstone, and frees unlinked rows no open transaction can hold.
    /// `clock` reads the global clock. With `wait`, waits for a pass that is
    /// running; otherwise returns None then. Returns the number of versions
    /// freed and the number of queues that had entries ready.
    fn cut(
        &self,
        common: &Common,
        horizon: u64,
        clock: &dyn Fn() -> u64,
        table: &dyn Fn(u32) -> Option<Arc<TableInner>>,
        may_remove: MayRemove<'_>,
        wait: bool,
    ) -> Option<(u64, usize)> {
        crate::sync::wrote(&common.running);
        let _running = if wait {
            common.running.lock()
        } else {
            common.running.try_lock()?
        };
        let mut scratch = self.scratch.lock();
        crate::sync::wrote(&*scratch);
        let Scratch {
            ready,
            newest,
            deferred,
        } = &mut *scratch;
        // (Empty unless a pass panicked: its entries are dropped, not
        // processed twice.)
        ready.clear();
        let mut sources = 0;
        for queue in self.queues[..self.used.load(SeqCst)].iter() {
            if let Some(q) = queue.get() {
                let before = ready.len();
                q.take_ready(horizon, ready);
                sources += usize::from(ready.len() > before);
            }
        }
        if sources > 1 {
            // Each queue's entries are in commit order already: the
            // stable sort merges runs.
            ready.sort_by_key(|g| g.cts);
        }
        // One cut per row where a table has secondary indexes: the newest
        // ready entry of a row covers the older ones (everything below it
        // is garbage), which are dropped. Cutting below each of them in turn
        // would walk the row's newer versions once per entry (index
        // cleanup), quadratic in a backlog of writes (a long reader held the
        // horizon back, or a slow pass let entries pile up). Without
        // secondary indexes a cut walks only what it retires, so cutting per
        // entry, in order, is linear and skips the table: under skewed
        // updates most passes repeat rows, and the table cost the 50%-update
        // YCSB mix about 1% of its throughput (interleaved A/B).
        // (A pass whose rows are all different, the usual case under
        // uniform keys, skips the table too: see `may_repeat_rows`; the
        // table itself is `NewestEntries`.)
        if ready.len() > 1
            && may_repeat_rows(ready)
            && any_indexed(ready, table)
            && newest.fill(ready)
        {
            let mut i = 0;
            ready.retain(|g| {
                i += 1;
                newest.get(g.table, g.tuple) == i - 1
            });
        }
        for g in ready.iter() {
            if !deferred.is_empty() {
                // Superseded: this later write's cut covers the deferred
                // tombstone (and may retire it).
                deferred.remove(&(g.table, g.tuple));
            }
        }
        let regular = ready.len();
        // Deferred entries not superseded point at tombstones that are
        // still alive (only processing a later entry of the row retires one).
        let due: Vec<(u32, u64)> = deferred
            .iter()
            .filter(|(_, g)| g.cts <= horizon)
            .map(|(k, _)| *k)
            .collect();
        ready.extend(due.iter().filter_map(|k| deferred.remove(k)));
        let guard = epoch::pin();
        let _batch = storage::RetireBatch::open();
        let mut freed = 0;
        let mut last: Option<Arc<TableInner>> = None;
        let mut unlinked = Vec::new();
        let mut waiting = Vec::new();
        for i in 0..ready.len() {
            prefetch_ahead(ready, i);
            let g = &ready[i];
            debug_assert!(i < regular || !deferred.contains_key(&(g.table, g.tuple)));
            if last.as_ref().map(|t| t.id) != Some(g.table) {
                last = table(g.table);
            }
            let Some(t) = &last else { continue };
            // (`forget_table` took its entries before the tombstone came.)
            debug_assert!(!t.tombstone, "an entry of reclaimed table {}", t.id);
            match prune_row(t, g, horizon, may_remove, &guard) {
                Pruned::Cut(n) => freed += n,
                Pruned::Unlinked(head) => unlinked.push(Unlinked::new(g.table, g.tuple, head)),
                Pruned::NotYet(after) => waiting.push((i, Garbage { cts: after, ..*g })),
            }
            if i % 1024 == 1023 {
                guard.flush();
            }
        }
        // A deleted row that must wait is kept for a later pass, unless a
        // later entry of the row in this batch (not deduplicated: a table
        // without indexes) was cut after it: that cut covers the tombstone
        // and may have retired it.
        for (i, g) in waiting {
            let superseded = ready[i + 1..]
                .iter()
                .any(|h| h.table == g.table && h.tuple == g.tuple);
            if !superseded {
                deferred.insert((g.table, g.tuple), g);
            }
        }
        ready.clear();
        if ready.capacity() > SCRATCH_KEEP {
            ready.shrink_to(SCRATCH_KEEP);
        }
        if newest.slots.capacity() > 2 * SCRATCH_KEEP {
            newest.slots.clear();
            newest.slots.shrink_to(2 * SCRATCH_KEEP);
        }
        drop(scratch);
        freed += common.limbo.retire(unlinked, horizon, clock, table, &guard);
        // Counted before `running` goes: a pass that waited for this one
        // then finds its work counted (`Stats::versions_reclaimed`).
        common.counters.versions_reclaimed.fetch_add(freed, SeqCst);
        Some((freed, sources))
    }
}

/// Whether two entries of `ready` may be of the same row; false only if
/// they are all of different rows. A filter of a few bits per entry on the
/// stack: most passes (one entry per committed write, a few dozen rows)
/// then skip the map of newest entries (about 70 instructions per entry).
fn may_repeat_rows(ready: &[Garbage]) -> bool {
    const WORDS: usize = 64;
    // Beyond this the filter fills up and rarely says no.
    if ready.len() > WORDS {
        return true;
    }
    let mut seen = [0u64; WORDS];
    use std::hash::BuildHasher;
    let hasher = rustc_hash::FxBuildHasher;
    for g in ready {
        let h = hasher.hash_one((g.table, g.tuple)) as usize % (WORDS * 64);
        let (word, bit) = (h / 64, 1u64 << (h % 64));
        if seen[word] & bit != 0 {
            return true;
        }
        seen[word] |= bit;
    }
    false
}

/// Whether a table of `ready`'s entries has secondary indexes (looked up
/// once per run of entries of one table: usually once).
fn any_indexed(ready: &[Garbage], table: &dyn Fn(u32) -> Option<Arc<TableInner>>) -> bool {
    let mut last = None;
    ready.iter().any(|g| {
        last != Some(g.table) && {
            last = Some(g.table);
            table(g.table).is_some_and(|t| crate::index::has_indexes(&t))
        }
    })
}

/// Entries ahead of the one being pruned: the version to read at
/// `i + 2 * AHEAD`, the next older version (the first one a cut retires) at
/// `i + AHEAD`. A pass is a walk over cold rows; issuing their misses early
/// lets them overlap (see [`crate::prefetch`]).
fn prefetch_ahead(ready: &[Garbage], i: usize) {
    const AHEAD: usize = 8;
    if let Some(g) = ready.get(i + 2 * AHEAD) {
        crate::prefetch::line(g.version);
    }
    if let Some(g) = ready.get(i + AHEAD) {
        // SAFETY: an entry's version is alive until the entry is processed
        // (see `Garbage`): processing the earlier entries before it retires
        // only versions older than it. Its next pointer may be retired
        // meanwhile; a prefetch of it is harmless.
        crate::prefetch::line(unsafe { (*g.version).next() });
    }
}

#[cfg(test)]
mod tests {
    use super::{may_repeat_rows, Garbage, NewestEntries};
    use std::ptr;

    fn entry(table: u32, tuple: u64) -> Garbage {
        Garbage {
            cts: 1,
            table,
            tuple,
            version: ptr::null_mut(),
        }
    }

    /// The newest-entry table keeps exactly the last entry of every row,
    /// with rows colliding in it (many rows, tables and repeats).
    #[test]
    fn newest_entries_finds_the_last_entry_of_every_row() {
        let mut t = NewestEntries::default();
        for n in [2usize, 9, 40, 300] {
            let ready: Vec<Garbage> = (0..n)
                .map(|i| entry((i % 3) as u32, (i as u64 * 7) % (n as u64 / 2 + 1)))
                .collect();
            let mut want = std::collections::HashMap::new();
            for (i, g) in ready.iter().enumerate() {
                want.insert((g.table, g.tuple), i);
            }
            assert_eq!(t.fill(&ready), want.len() < n, "n {n}");
            for g in &ready {
                assert_eq!(t.get(g.table, g.tuple), want[&(g.table, g.tuple)], "n {n}");
            }
        }
    }

    /// The filter may say "maybe" for different rows, never "no" for a
    /// repeated one (the pass would then cut a row once per entry and drop
    /// none), at any batch size and any two positions.
    #[test]
    fn may_repeat_rows_never_misses_a_repeated_row() {
        for n in 2..=70u64 {
            let rows: Vec<(u32, u64)> = (0..n).map(|i| ((i % 3) as u32, i * 7919)).collect();
            for i in 0..n as usize {
                for j in i + 1..n as usize {
                    let mut ready: Vec<Garbage> = rows.iter().map(|&(t, r)| entry(t, r)).collect();
                    ready[j] = entry(rows[i].0, rows[i].1);
                    assert!(may_repeat_rows(&ready), "n {n}: {i} and {j}");
                }
            }
        }
    }

    /// A pass of a few dozen different rows usually skips the map.
    #[test]
    fn different_rows_usually_skip_the_map() {
        let mut x = 88172645463325252u64;
        let mut maybe = 0;
        for _ in 0..1000 {
            let mut ready = Vec::new();
            while ready.len() < 16 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let tuple = x % 1_000_000;
                if ready.iter().all(|g: &Garbage| g.tuple != tuple) {
                    ready.push(entry(1, tuple));
                }
            }
            maybe += usize::from(may_repeat_rows(&ready));
        }
        assert!(maybe < 100, "{maybe} of 1000 batches of 16 rows");
    }
}
