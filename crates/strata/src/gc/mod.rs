//! Garbage collection: one seam, five collectors.
//!
//! The engine talks to garbage collection through [`Gc`] only, at three
//! points, and the collector sees the engine through [`Engine`]:
//!
//! ```text
//!  commit (txn) ────── on_commit(cts, slot, rows) ───┐
//!  storage's read path ───── chain_walk_hook (COOP;  │
//!    each table carries it: TableInner::coop) ───────┤
//!  every N commits, GC threads,                      │
//!  Database::collect_garbage ── collect(&Snapshots) ─┤
//!                                                    ▼
//!    Gc: the one match on GcPolicy (Gc::new), then dispatch! to
//!        none | transaction_level | vacuum | coop | dead_zone
//!                                                    │ Engine (db/mod.rs)
//!                                                    ▼
//!    Snapshots (TID table; horizon bounded by Cc::bound_horizon),
//!    tables, clock, Cc::may_remove, Cc::prune
//! ```
//!
//! A pass starts from a [`Snapshots`]: the sorted begin timestamps of every
//! registered transaction and the clock read before them, taken without
//! stopping `begin` (`TidTable::snapshots`). Every collector uses its
//! `oldest()`, the *horizon*: a version that a version committed at or
//! below it overwrote is invisible to every open and future snapshot.
//! [`dead_zone`] also uses the whole list, to prune above the horizon.
//!
//! What each collector owns:
//!
//! | module | finds garbage by | invariant it keeps |
//! |---|---|---|
//! | [`none`] | nothing | frees nothing, keeps nothing (no queue grows) |
//! | [`transaction_level`] | entries queued by each commit | an entry's version stays valid until the entry is processed; entries are cut in commit order (one cut per row, the newest, where the table has secondary indexes) |
//! | [`vacuum`] (VAC) | scanning dirty blocks | a block's dirty bit is cleared before its scan and set again while garbage remains; one pass per partition at a time |
//! | [`coop`] (COOP) | readers walking O2N chains, plus a full pass | a slot moves only by compare-and-swap; the cached horizon only grows |
//! | [`dead_zone`] (vDriver) | rows each commit wrote, and rows whose versions' readers ended; every version whose lifetime holds no live snapshot goes | a pass keeps exactly the newest version, the newest committed one, and those a listed snapshot or one at or above the floor reads |
//!
//! And what they share, here: the cut rule ([`prune_row`]: never above the
//! newest version visible at the horizon), unlinking of deleted rows and
//! their [`limbo`] (freed only once every transaction open at the unlink
//! has ended), and [`Common`]'s pause, which stops every chain cut while an
//! index back-fill runs.

pub mod coop;
pub mod dead_zone;
pub(crate) mod dropped;
pub(crate) mod limbo;
pub mod none;
pub(crate) mod siro;
mod slot_queue;
pub mod transaction_level;
pub mod vacuum;

pub use crate::tid::snapshots::Snapshots;

use crate::error::{Error, Result};
use crate::options::{GcPolicy, Options};
use crate::stats::{Counters, Stats};
use crate::storage::Coop;
use crate::storage::{
    self,
    version::{Version, TID_MARK},
    PrunePlan,
};
use crate::table::TableInner;
use crate::value::Key;
use crossbeam_epoch::Guard;
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// What a collector needs from the engine above it; the database
/// implements it (`db/mod.rs`). The protocol's say (the horizon bound inside
/// `snapshots`, `may_remove`, `prune_protocol_state`,
/// `index_gc_prunes_scans`: its `Cc` hooks) comes through here.
pub trait Engine: Send + Sync + 'static {
    fn collector(&self) -> &Gc;
    /// The registered snapshots now (`TidTable::snapshots`), their horizon
    /// bounded by the protocol (`Cc::bound_horizon`).
    fn snapshots(&self) -> Snapshots;
    /// Publishes a horizon (MVTO read-only snapshots start at or above it).
    fn publish_horizon(&self, horizon: u64);
    /// The global clock.
    fn clock(&self) -> u64;
    /// How far the clock moves in `commits` read-write commits.
    fn clock_steps(&self, commits: u64) -> u64;
    /// Tables by id (dropped ones included; a reclaimed one is an empty
    /// tombstone: see [`dropped`]).
    fn tables(&self) -> RwLockReadGuard<'_, Vec<Arc<TableInner>>>;
    /// The TID table (whether the transactions open at a drop have ended).
    fn tids(&self) -> &crate::tid::TidTable;
    /// Puts an empty tombstone in dropped table `id`'s place in the catalog
    /// and returns the table (None if it is one already).
    fn tombstone(&self, id: u32) -> Option<Arc<TableInner>>;
    /// Whether a deleted row whose tombstone is visible at the horizon may
    /// be unlinked (see [`MayRemove`]); asked once per pass.
    fn may_remove(&self) -> fn(&Version, u64) -> bool;
    /// Drops the protocol's bookkeeping no snapshot at or above `horizon`
    /// needs (scan records, SSI marks); with `every_shard`, from every
    /// scan-log shard, not only those whose scanners have gone idle
    /// (`index::scan_log`).
    fn prune_protocol_state(&self, tables: &[Arc<TableInner>], horizon: u64, every_shard: bool);
    /// Whether a pass also prunes secondary-index scan records: then the
    /// quiescence epoch the protocol state's prune reached
    /// (`cc::quiescence`).
    fn index_gc_prunes_scans(&self) -> Option<u64>;
}

/// A row a committing transaction overwrote or deleted, with the version
/// its write created.
#[derive(Clone, Copy)]
pub struct Committed<'a> {
    pub table: &'a TableInner,
    pub tuple: u64,
    pub version: *mut Version,
}

/// The collector interface: every [`GcPolicy`] implements it in its own
/// module, and [`Gc`] dispatches to it.
pub trait Collector {
    /// On commit: a transaction that committed at `cts` hands over the rows
    /// it overwrote or deleted, before it unlocks them (the next writer of
    /// a row hands its row over after us). `slot`: the index of the
    /// transaction's TID slot, which it holds until after this returns. On
    /// the commit path: no allocation beyond what the policy keeps, no
    /// indirect call.
    fn on_commit<'a>(&self, cts: u64, slot: usize, rows: impl Iterator<Item = Committed<'a>>);

    /// On chain walk: the state storage's read path consults before it
    /// walks a chain (storage has no database, so every table carries it,
    /// set when the table is created). Only COOP has one.
    fn chain_walk_hook(&self) -> Option<Arc<Coop>> {
        None
    }

    /// A horizon was just published.
    fn on_horizon(&self, _horizon: u64) {}

    /// Collect: one pass over the garbage these snapshots leave. With
    /// `wait`, waits for a pass already running instead of skipping
    /// (returning `None`). Returns versions freed.
    fn collect<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
    ) -> Option<u64>;

    /// A whole pass now: take the snapshots, publish the horizon, collect.
    fn pass<E: Engine>(&self, common: &Common, engine: &E, wait: bool) -> Option<u64> {
        let snaps = refresh(self, engine);
        self.collect(common, &snaps, engine, wait)
    }

    /// Runs on the committing thread every `gc_every_commits` commits.
    fn every_few_commits<E: Engine>(&self, common: &Common, engine: &E);

    /// How many background threads to start (`every`: `gc_interval`).
    fn background_threads(&self, every: Option<Duration>) -> usize;

    /// Background thread `thread`'s work, every `gc_interval`.
    fn background<E: Engine>(&self, common: &Common, engine: &E, thread: usize);

    /// Adds the policy's own counters.
    fn fill_stats(&self, _st: &mut Stats) {}

    /// Table `table` was dropped and no transaction can reach it: drop
    /// every queued entry of it that names one of its versions, which are
    /// about to be freed (the transaction-level queue's; the others queue
    /// rows or nothing, and a pass skips a dropped table's rows). Called
    /// under `Common::running`.
    fn forget_table(&self, _table: u32) {}
}

/// Takes the snapshots and publishes their horizon.
fn refresh<C: Collector + ?Sized, E: Engine>(c: &C, engine: &E) -> Snapshots {
    let snaps = engine.snapshots();
    engine.publish_horizon(snaps.oldest());
    c.on_horizon(snaps.oldest());
    snaps
}

/// State every collector shares.
#[derive(Default)]
pub struct Common {
    /// Serialises transaction-level passes (one at a time, the others
    /// skip) and stops them during a pause.
    running: Mutex<()>,
    /// Tuple-level GC (vacuum passes, cooperating workers) holds this
    /// shared while it cuts chains; whoever must stop every chain cut (an
    /// index back-fill) takes it exclusively.
    pub(crate) tuple_passes: Arc<RwLock<()>>,
    /// Deleted rows unlinked and waiting to be freed.
    limbo: limbo::Limbo,
    /// Dropped tables waiting for the transactions open at their drop.
    dropped: dropped::DroppedTables,
    /// Written by every pass: on their own cache lines, so they do not
    /// invalidate the read-mostly fields around them (sharing a line with
    /// them cost 20% of a 16-thread update mix).
    counters: CachePadded<Counters>,
    /// The engine's bytes in use against `Options::memory_limit`
    /// (written by every hand-over when a limit is set: a line of its
    /// own). Shared with the secondary indexes, which give it back their
    /// entries' bytes when they are freed (a dropped index, a dropped
    /// table's).
    pub(crate) memory: Arc<CachePadded<crate::stats::MemoryGauge>>,
}

impl Common {
    /// Runs `f` with garbage collection paused (an index back-fill must not
    /// race with chain cuts).
    pub fn paused<R>(&self, f: impl FnOnce() -> R) -> R {
        let _running = self.running.lock();
        // Tuple-level GC (vacuum passes, cooperating workers) cuts chains
        // under `tuple_passes` shared, not under `running`.
        let _tuple = self.tuple_passes.write();
        f()
    }

    /// Runs `f` exclusively with GC passes, unless one is running now.
    pub fn try_exclusive<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let _running = self.running.try_lock()?;
        let _tuple = self.tuple_passes.try_write()?;
        Some(f())
    }
}

/// The end of every pass that cut chains: the protocol's state below the
/// horizon, then the secondary-index entries GC could not remove because
/// their rows were locked. Those lock rows like a pass does, so they run
/// exclusively with every other pass (waiting for one with `wait`, else
/// skipped while one runs).
fn finish_pass<E: Engine>(
    common: &Common,
    engine: &E,
    tables: &[Arc<TableInner>],
    horizon: u64,
    wait: bool,
) {
    // (A pass someone waits for, `Database::collect_garbage`, leaves no
    // prunable scan record behind.)
    engine.prune_protocol_state(tables, horizon, wait);
    let prune = engine.index_gc_prunes_scans();
    // (`prune` is read after `prune_protocol_state` advanced the epoch.)
    let secondary = || {
        for t in tables {
            crate::index::secondary::after_gc_pass(t, horizon, prune, wait);
        }
    };
    if wait {
        common.paused(secondary);
    } else {
        common.try_exclusive(secondary);
    }
}

/// The collectors, one per [`GcPolicy`].
// Made once per database and never moved: the size of the transaction-level
// variant (its queue padded onto cache lines of its own) costs nothing.
#[allow(clippy::large_enum_variant)]
enum Policy {
    None(none::NoGc),
    TransactionLevel(transaction_level::TransactionLevel),
    Vacuum(vacuum::Vacuum),
    Cooperative(coop::Cooperative),
    DeadZone(dead_zone::DeadZone),
}

/// Calls `$body` with `$p` bound to the collector: the one dispatch point
/// (statically dispatched, so the commit path makes no indirect call).
macro_rules! dispatch {
    ($policy:expr, $p:ident => $body:expr) => {
        match $policy {
            Policy::None($p) => $body,
            Policy::TransactionLevel($p) => $body,
            Policy::Vacuum($p) => $body,
            Policy::Cooperative($p) => $body,
            Policy::DeadZone($p) => $body,
        }
    };
}

/// The database's collector (see the module doc).
pub struct Gc {
    policy: Policy,
    pub(crate) common: Common,
    /// `Options::gc_every_commits`.
    every_commits: u32,
}

thread_local! {
    static COMMITS_SINCE_GC: Cell<u32> = const { Cell::new(0) };
}

impl Gc {
    /// The collector `opts.gc` names. Starts no thread (see [`Gc::start`]).
    pub fn new(opts: &Options) -> Gc {
        let common = Common {
            memory: Arc::new(CachePadded::new(crate::stats::MemoryGauge::new(
                opts.memory_limit,
            ))),
            limbo: limbo::Limbo::new(storage::meter::Gauged::of(opts.memory_limit)),
            ..Common::default()
        };
        // The one place the policy is decided.
        let policy = match opts.gc {
            GcPolicy::None => Policy::None(none::NoGc),
            GcPolicy::TransactionLevel => {
                Policy::TransactionLevel(transaction_level::TransactionLevel::new(
                    opts.gc_every_commits,
                    opts.max_open_transactions,
                ))
            }
            GcPolicy::Vacuum => Policy::Vacuum(vacuum::Vacuum::new(
                opts.gc_threads,
                false,
                opts.gc_interval.is_some(),
            )),
            GcPolicy::Cooperative => Policy::Cooperative(coop::Cooperative::new(
                opts.gc_threads,
                Arc::clone(&common.tuple_passes),
            )),
            GcPolicy::DeadZone => Policy::DeadZone(dead_zone::DeadZone::new()),
        };
        Gc {
            policy,
            common,
            every_commits: opts.gc_every_commits,
        }
    }

    /// Starts the policy's background threads, each running its work
    /// every `every`. They hold only a weak reference, so they never keep a
    /// database alive, and end once it is gone.
    pub fn start<E: Engine>(&self, db: &Weak<E>, every: Option<Duration>) -> Result<()> {
        let n = dispatch!(&self.policy, p => p.background_threads(every));
        let Some(every) = every else { return Ok(()) };
        for thread in 0..n {
            let db = Weak::clone(db);
            std::thread::Builder::new()
                .name("strata-gc".into())
                .spawn(move || loop {
                    std::thread::sleep(every);
                    match db.upgrade() {
                        Some(db) => db.collector().background(&*db, thread),
                        None => return,
                    }
                })
                .map_err(|e| Error::io("cannot start the GC thread", e))?;
        }
        Ok(())
    }

    /// See [`Collector::on_commit`].
    #[inline]
    pub fn on_commit<'a>(&self, cts: u64, slot: usize, rows: impl Iterator<Item = Committed<'a>>) {
        dispatch!(&self.policy, p => p.on_commit(cts, slot, rows))
    }

    /// See [`Collector::chain_walk_hook`].
    pub fn chain_walk_hook(&self) -> Option<Arc<Coop>> {
        dispatch!(&self.policy, p => p.chain_walk_hook())
    }

    /// One whole pass now; with `wait`, waits for a pass already running
    /// instead of skipping (the explicit `Database::collect_garbage` waits).
    /// Returns versions freed.
    pub fn collect<E: Engine>(&self, engine: &E, wait: bool) -> Option<u64> {
        let freed =
            self.metered(|| dispatch!(&self.policy, p => p.pass(&self.common, engine, wait)));
        self.reclaim_dropped(engine);
        freed
    }

    /// A table was just frozen by a drop (`dropped` set): retire it, with
    /// the transactions open now (see [`dropped`]).
    pub fn retire_table(&self, id: u32, tids: &crate::tid::TidTable) {
        self.common.dropped.retire(id, tids.occupied());
    }

    /// Frees the dropped tables no transaction open at their drop can
    /// reach any more (see [`dropped`]); every kind of pass ends with it,
    /// `GcPolicy::None`'s included. Returns the tables freed.
    pub fn reclaim_dropped<E: Engine>(&self, engine: &E) -> u64 {
        self.common.dropped.reclaim(
            &self.common,
            |id| dispatch!(&self.policy, p => p.forget_table(id)),
            engine,
        )
    }

    /// Runs a collector's work, adding what it allocated in and retired
    /// from the version store to the GC counters (`Stats::gc_bytes_freed`,
    /// `Stats::storage_allocations`): storage counts per thread
    /// (`storage::meter`), and this thread does only this collector's work
    /// meanwhile.
    #[inline]
    fn metered<R>(&self, work: impl FnOnce() -> R) -> R {
        // (What a transaction still open on this thread allocated stays
        // its own: taken aside, handed back after.)
        let theirs = storage::meter::take_unflushed();
        let theirs_retired = storage::meter::take_unflushed_retired();
        let start = crate::trace::gc_start();
        let r = work();
        let ours = storage::meter::take_unflushed();
        let freed = storage::meter::take_unflushed_retired();
        storage::meter::untake(theirs);
        storage::meter::untake_retired(theirs_retired);
        self.common.counters.storage(ours, freed);
        if self.common.memory.limit().is_some() {
            // (Payloads and index entries feed the gauge alone: theirs go
            // with ours, see `storage::meter::take_unflushed_held`.)
            let (held, released) = storage::meter::take_unflushed_held();
            self.common.memory.add(ours.1 + held, freed + released);
        }
        if freed != 0 || ours.1 != 0 {
            crate::trace::gc_pass(freed, ours.1, start);
        }
        r
    }

    /// Called after each read-write commit; the policy's periodic work
    /// runs every `gc_every_commits` commits of a thread.
    #[inline]
    pub fn after_commit<E: Engine>(&self, engine: &E) {
        // (A read, then a write with the smallest closure: one closure
        // doing both kept `with` an out-of-line call through the key's
        // accessor, ~25 instructions a commit.)
        let n = COMMITS_SINCE_GC.get() + 1;
        let due = n >= self.every_commits;
        COMMITS_SINCE_GC.with(|c| c.set(if due { 0 } else { n }));
        if due {
            self.every_few_commits(engine);
        }
    }

    fn every_few_commits<E: Engine>(&self, engine: &E) {
        self.metered(|| dispatch!(&self.policy, p => p.every_few_commits(&self.common, engine)));
        self.reclaim_dropped(engine);
    }

    fn background<E: Engine>(&self, engine: &E, thread: usize) {
        self.metered(|| dispatch!(&self.policy, p => p.background(&self.common, engine, thread)));
        self.reclaim_dropped(engine);
    }

    /// Runs `f` with garbage collection paused (see [`Common::paused`]).
    pub fn paused<R>(&self, f: impl FnOnce() -> R) -> R {
        self.common.paused(f)
    }

    /// GC's counters, for `Database::stats`.
    pub fn fill_stats(&self, st: &mut Stats) {
        self.common.counters.fill(st);
        st.dropped_tables_waiting = self.common.dropped.waiting();
        st.tables_reclaimed = self.common.dropped.reclaimed();
        dispatch!(&self.policy, p => p.fill_stats(st))
    }
}

/// Work for GC left by a committed write: once the horizon reaches `cts`,
/// everything below `version` (the version the write created) is garbage.
///
/// `version` stays valid until the entry is processed: entries of one row
/// are queued in the order of its writes (a writer queues before it
/// unlocks), a pass takes every entry at or below its horizon (with every
/// earlier entry of each of their rows: see [`transaction_level`]) and
/// processes them in commit order (an entry that a later ready entry of
/// its row supersedes is dropped unprocessed), a version is
/// retired only by processing a later write's entry of its row, and a row
/// unlinked from its table leaves limbo only after every entry queued
/// before the unlink has been processed (or dropped).
#[derive(Clone, Copy)]
pub struct Garbage {
    pub cts: u64,
    pub table: u32,
    pub tuple: u64,
    pub version: *mut Version,
}

// SAFETY: see the lifetime argument above; only the collector dereferences
// `version`, under the `running` lock.
unsafe impl Send for Garbage {}

use crate::storage::version::GC_TID;

/// Whether a deleted row (its head is a tombstone visible at the horizon)
/// may be unlinked now. Protocols that keep per-version read state on the
/// tombstone say no while a running transaction may rely on it.
pub type MayRemove<'a> = &'a dyn Fn(&Version, u64) -> bool;

pub(crate) enum Pruned {
    /// The chain was cut; this many versions were retired.
    Cut(u64),
    /// The whole row was unlinked (its head returned).
    Unlinked(*mut Version),
    /// A deleted row that cannot be unlinked yet: retry at every later pass
    /// whose horizon is at least this. (Not `horizon + 1`: what blocks the
    /// unlink, a read lock, a reader's timestamp at or below the clock, a
    /// writer's lock, ends without the clock moving, and a database with no
    /// more commits would keep the row forever; found by
    /// tests/gc_waiting_deletes.rs.)
    NotYet(u64),
}

/// Prunes below one committed write: unlinks the row if that write was a
/// delete that every open snapshot sees, otherwise cuts the chain below
/// the written version (its begin is `<= horizon`, so nothing older is
/// visible to anyone). Touches the row's slot only for deletes.
pub(crate) fn prune_row(
    t: &TableInner,
    g: &Garbage,
    horizon: u64,
    may_remove: MayRemove<'_>,
    guard: &Guard,
) -> Pruned {
    // SAFETY: `g.version` is alive until its entry is processed (see
    // `Garbage`), and we are pinned.
    let v = unsafe { &*g.version };
    if v.is_tombstone() {
        let newest = storage::newest(t, g.tuple);
        // SAFETY: as above; the newest version is alive while we are pinned.
        if newest != g.version
            && unsafe { newest.as_ref() }
                .is_some_and(|n| n.begin.load(Ordering::SeqCst) & TID_MARK != 0)
        {
            // An uncommitted write sits on the tombstone. If it aborts, the
            // tombstone is the row's newest version again and nothing else
            // would queue the row: keep the entry (if it commits, its own
            // entry supersedes this one).
            return Pruned::NotYet(horizon);
        }
    }
    if v.is_tombstone() && storage::newest(t, g.tuple) == g.version {
        let asked_first = crate::sync::broken(crate::sync::Break::UnlinkAsksBeforeLock);
        if asked_first && !may_remove(v, horizon) {
            return Pruned::NotYet(horizon);
        }
        // Lock it like a writer would, so no insert can resurrect the row
        // while we unlink it. The lock comes before the protocol's say
        // (`may_remove`): a reader publishes its read state on the
        // tombstone (MVTO's read timestamp, MV2PL's read lock) and then
        // looks at the lock, so with the lock taken first either we see
        // its read or it sees our lock. Asked before the lock, a reader
        // could slip in between: it reads the key as absent, we unlink
        // the row, and an older writer inserts the key as a new row that
        // nothing guards (`tests/model.rs`,
        // `an_unlink_asking_before_its_lock_is_caught`).
        if v.txn_id
            .compare_exchange(0, GC_TID, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            if !asked_first && !may_remove(v, horizon) {
                v.txn_id.store(0, Ordering::SeqCst);
                return Pruned::NotYet(horizon);
            }
            if storage::newest(t, g.tuple) == g.version {
                let ek = t.encode(&Key(v.data().to_vec()));
                crate::index::on_unlink(t, g.tuple);
                t.index.remove(&ek, g.tuple, t.gauged);
                // The slot holds the chain's first version: the tombstone
                // itself (N2O, in-place) or the oldest version (O2N).
                let head = t.rows.slot(g.tuple).swap(ptr::null_mut(), Ordering::SeqCst);
                return Pruned::Unlinked(head);
            }
            v.txn_id.store(0, Ordering::SeqCst);
        } else {
            // A writer holds the tombstone. If it commits, its entry
            // supersedes ours (see `deferred`); if it aborts, nothing else
            // would ever queue this row again and the deleted row would stay
            // linked for good (found by tests/gc_waiting_deletes.rs), so we
            // retry rather than consume the entry.
            return Pruned::NotYet(horizon);
        }
    }
    // Secondary entries only the retired versions need go first (every
    // caller, the transaction-level queue or a tuple-level collector, gets
    // this by pruning here).
    Pruned::Cut(prune_versions(
        t,
        g.tuple,
        PrunePlan::OlderThan(g.version),
        guard,
    ))
}

/// Retires the versions of `tuple` that `plan` names: their secondary
/// entries first (the index kind's `before_prune`), then the versions
/// (`storage::prune`). The one way a collector removes versions of a live
/// row. Returns versions retired.
#[inline]
pub(crate) fn prune_versions(
    t: &TableInner,
    tuple: u64,
    plan: PrunePlan<'_>,
    guard: &Guard,
) -> u64 {
    crate::index::before_prune(t, tuple, plan, guard);
    if t.prunes_name_versions() {
        return prune_renaming(t, tuple, plan, guard);
    }
    storage::prune(t, tuple, plan, guard)
}

/// [`prune_versions`]' prune under physical pointers on an O2N chain: its
/// entry point is its oldest version, which the prune may take; the
/// primary entry then names the new one.
#[cold]
#[inline(never)]
fn prune_renaming(t: &TableInner, tuple: u64, plan: PrunePlan<'_>, guard: &Guard) -> u64 {
    let first = t.rows.head(tuple);
    let n = storage::prune(t, tuple, plan, guard);
    if t.rows.head(tuple) != first {
        t.rename_entry_point(None, tuple);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::Engine;
    use crate::{Database, Options, Protocol};
    use std::sync::atomic::Ordering::SeqCst;

    /// The database's snapshots carry the protocol's bound: their horizon
    /// is the one `DbInner::compute_horizon` gave (clock, then the oldest
    /// registered snapshot, then MVTO's writers), for every protocol.
    #[test]
    fn database_snapshots_keep_the_old_horizon_for_every_protocol() {
        for p in Protocol::ALL {
            let db = Database::open(Options::default().protocol(p)).unwrap();
            let inner = &*db.inner;
            let old_horizon = || {
                let mut h = inner.clock.load(SeqCst).min(inner.tids.min_begin(false));
                if p == Protocol::Mvto {
                    h = h.min(inner.tids.min_begin(true).saturating_sub(1));
                }
                h
            };
            let rw = db.begin().unwrap();
            let s = inner.snapshots();
            assert_eq!(s.oldest(), old_horizon(), "{p}");
            assert_eq!(s.as_slice(), &[rw.ts], "{p}");
            // MVTO: the writer drew a timestamp past the clock it read and
            // may still commit at it.
            let below = u64::from(p == Protocol::Mvto);
            assert_eq!(s.oldest(), rw.ts - below, "{p}");
            let ro = db.begin_read_only().unwrap();
            let s = inner.snapshots();
            assert_eq!(s.oldest(), old_horizon(), "{p}");
            assert_eq!(s.as_slice().len(), 2, "{p}");
            drop((ro, rw));
            assert_eq!(inner.snapshots().as_slice(), &[] as &[u64]);
        }
    }

    /// A plan that removes versions in the middle of a chain (what a
    /// dead-zone collector makes) removes their secondary entries too, under
    /// every storage scheme and index kind, and leaves every snapshot its
    /// version, through the primary key and through the index.
    #[test]
    fn pruning_middle_versions_removes_their_index_entries() {
        use crate::storage::{self, PrunePlan, Span};
        use crate::{
            key, row, GcPolicy, IndexPointers, Schema, Type, Unique, Value, VersionStorage,
        };
        for s in VersionStorage::ALL {
            for p in IndexPointers::ALL {
                let opts = Options::default()
                    .version_storage(s)
                    .index_pointers(p)
                    .gc(GcPolicy::None);
                if opts.validate().is_err() {
                    continue; // refused by the validity matrix
                }
                let db = Database::open(opts).unwrap();
                let t = db
                    .create_table(
                        Schema::new("t")
                            .column("k", Type::Int)
                            .column("v", Type::Int)
                            .primary_key(&["k"]),
                    )
                    .unwrap();
                let by_v = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
                db.run(|x| x.insert(&t, row![1, 10])).unwrap();
                let set = |v: i64| {
                    db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(v))]))
                        .unwrap()
                };
                let mut s1 = db.begin_read_only().unwrap(); // sees 10
                set(20);
                set(30);
                let mut s2 = db.begin_read_only().unwrap(); // sees 30
                set(40);
                set(50);
                let ti = &t.inner;
                let tuple = ti.index.get(&ti.encode(&key![1])).unwrap();
                let guard = crossbeam_epoch::pin();
                let mut dead = Vec::new();
                let mut chain = storage::chain(ti, tuple, Span::ALL);
                while let Some((v, img)) = chain.step() {
                    if img.is_some_and(|r| r[1] == Value::Int(20) || r[1] == Value::Int(40)) {
                        dead.push(v);
                    }
                }
                assert_eq!(dead.len(), 2, "{s} {p:?}");
                let entries = || db.stats().secondary_index_entries;
                assert_eq!(entries(), 5, "{s} {p:?}: one entry per key");
                let freed =
                    super::prune_versions(ti, tuple, PrunePlan::versions(&mut dead), &guard);
                drop(guard);
                assert_eq!(freed, 2, "{s} {p:?}");
                assert_eq!(entries(), 3, "{s} {p:?}: the entries of 20 and 40 are gone");
                assert_eq!(db.stats().longest_chain, 3, "{s} {p:?}");
                let mut now = db.begin_read_only().unwrap();
                for (x, v) in [(&mut s1, 10), (&mut s2, 30), (&mut now, 50)] {
                    assert_eq!(
                        x.get(&t, &key![1]).unwrap().unwrap()[1],
                        Value::Int(v),
                        "{s} {p:?}"
                    );
                    let hits = x.index_get(&by_v, &key![v]).unwrap();
                    assert_eq!(hits.len(), 1, "{s} {p:?}: snapshot of {v}");
                    for gone in [20, 40] {
                        assert!(x.index_get(&by_v, &key![gone]).unwrap().is_empty());
                    }
                }
            }
        }
    }
}
