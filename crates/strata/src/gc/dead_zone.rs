//! Dead-zone pruning (vDriver, Kim et al., SIGMOD 2020, §3.1): the
//! [`DeadZone`] collector, which removes every version no live snapshot can
//! read, in the middle of a chain too.
//!
//! A horizon collector keeps everything newer than the oldest snapshot, so
//! one long-lived reader pins every version written after it began. But a
//! snapshot at `b` reads one version of a row: the one with
//! `begin <= b < end` (its commit timestamp, and its overwriter's). Sort the
//! live snapshots `b1 < b2 < ... < bm`; between two neighbours lies a *dead
//! zone* (Definition 3.4), and a version whose whole lifetime falls inside
//! one zone is read by nobody (Theorem 3.5):
//!
//! ```text
//!  time ──────────────────────────────────────────────────────────>
//!  snapshots        b1 (LLT)                     b2          floor
//!  zones     (-∞, b1]      [b1 ───────────────── b2]      [b2 ── floor]
//!  versions   v1 [3,8)  v2 [8,20)  v3 [20,31)  v4 [31,44)  v5 [44,60)  v6 [60,∞)
//!                       ^ b1 reads   dead        ^ b2 reads  dead       newest
//! ```
//!
//! So with one LLT a row keeps at most the LLT's version, the newest, and
//! one per other live snapshot, instead of everything since the LLT began.
//!
//! The zones come from [`Snapshots`] (`TidTable::snapshots`: a copy of
//! every slot's registered begin, read once each without stopping `begin`)
//! at each pass, so they are as fresh as the GC period. A snapshot not in
//! the copy (begun since, or beginning during the scan and registered with a
//! lower bound only, or drawn below the clock by MVTO) is at or above
//! [`Snapshots::floor`], so a version overwritten after the floor is never
//! dead. Timestamps are the versions' own `begin` and `end` words: a
//! version not yet stamped (its creator or overwriter is still deciding)
//! has a transaction id there and is kept.
//!
//! The collector works on the committing threads, from rows, not blocks
//! (vDriver prunes on the writer's path too, §3.3): each commit hands over
//! the rows it wrote, and every `gc_every_commits` commits a committer runs
//! a pass over them (one at a time; the others skip). A row's step is one
//! walk: every version the zones call dead goes, those below the horizon
//! (the first zone) with those above it, through `PrunePlan::Versions`,
//! their secondary entries first (`gc::prune_versions`); storage merges
//! the delta records of removed in-place versions into their older
//! neighbours. A deleted row is unlinked by VAC's row step once every
//! snapshot sees the delete.
//!
//! A row that keeps older versions is *watched* under the snapshots that
//! read them (one reader per kept version), and looked at again when one
//! of those ends; so a pass costs the rows written since the last one plus
//! the rows whose readers ended, not the rows a long reader pins:
//!
//! ```text
//!  written since last pass ──┐
//!  watch: snapshot 20 -> [r7, r9]   (20 ended) ──> rows of the pass ──> row step
//!         snapshot 50 -> [r9]       (50 live)         │
//!         next pass   -> [r4]  ───────────────────────┘   kept versions' readers
//!                                                          -> watch again
//! ```
//!
//! A background thread (with `gc_interval`) runs the same pass when nobody
//! commits; `Database::collect_garbage` looks at every watched row.
//!
//! On SIRO tables (`storage::siro`, `gc::siro`) each pass also publishes
//! its zones to the writers and cuts the sealed segments that lie in one
//! zone; and a committers' pass leaves a dead version that is still the
//! row's in-row previous one to the writer that moves it out (first prune:
//! dropped without a copy), while the GC thread's and explicit passes
//! *sweep* it if no write comes.
//!
//! Invariant: a pass removes exactly the versions that are neither the
//! newest, nor the newest committed, nor read by a snapshot in the copy or
//! at or above its floor (`tests/dead_zone.rs` checks this against a
//! model, on every storage scheme).

use super::limbo::Unlinked;
use super::vacuum::vacuum_row;
use super::{finish_pass, Collector, Committed, Common, Engine, Snapshots};
use crate::storage::dead_zones::{DeadZones, Pin};
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::storage::{self, PrunePlan, Span};
use crate::table::TableInner;
use crossbeam_epoch::{self as epoch, Guard};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

/// Why a row still holds versions other than its newest after its step.
#[derive(Default)]
pub(crate) struct Pins {
    /// A listed snapshot reading each kept older version (one per version:
    /// when it ends, the version may have died).
    pub snapshots: Vec<u64>,
    /// Something the next pass must look at again: a version a snapshot to
    /// come may read (it ended after the floor), or a deleted row that
    /// could not be unlinked yet.
    pub next_pass: bool,
    /// A dead version left in-row (SIRO) for its writer to drop when it
    /// relocates it (first prune); a sweeping pass removes it otherwise.
    pub in_row: bool,
}

/// Puts in `dead` the committed versions of `tuple` that `zones` say are
/// dead, other than the newest version and the newest committed one (the
/// plan's contract: a writer may overwrite or undo back to them), and in
/// `pins` what keeps the others. Returns how many of the dead ended at or
/// below `horizon` (what a horizon cut would have taken too). Pinned, by
/// the row's collector.
pub(crate) fn dead_versions(
    t: &TableInner,
    tuple: u64,
    zones: &DeadZones,
    horizon: u64,
    pins: &mut Pins,
    dead: &mut Vec<*mut Version>,
) -> u64 {
    let mut below = 0;
    let mut newest = true;
    let mut newest_committed_seen = false;
    for v in storage::versions(t, tuple, Span::ALL) {
        // SAFETY: pinned by the caller; the versions of a chain are alive.
        let r = unsafe { &*v };
        let begin = r.begin.load(SeqCst);
        let committed = begin & TID_MARK == 0;
        if std::mem::take(&mut newest) {
            newest_committed_seen = committed;
            continue;
        }
        if !committed {
            continue; // only a chain's newest version can be uncommitted
        }
        if !std::mem::replace(&mut newest_committed_seen, true) {
            continue;
        }
        let end = r.end.load(SeqCst);
        if end & TID_MARK != 0 || end == INF_TS {
            pins.next_pass = true;
            continue;
        }
        match zones.pin(begin, end) {
            Pin::Dead => {
                below += u64::from(end <= horizon);
                dead.push(v);
            }
            Pin::Snapshot(b) => pins.snapshots.push(b),
            Pin::Floor => pins.next_pass = true,
        }
    }
    below
}

/// The dead-zone step of one row: prunes its dead versions, below the
/// horizon and above it. Returns (versions retired, of which above the
/// horizon); `pins` says what keeps the rest. `dead` is scratch space.
pub(crate) fn prune_row(
    t: &TableInner,
    tuple: u64,
    pass: &PassView<'_>,
    pins: &mut Pins,
    dead: &mut Vec<*mut Version>,
    guard: &Guard,
) -> (u64, u64) {
    let PassView {
        zones,
        horizon,
        sweep,
    } = *pass;
    dead.clear();
    let mut below = dead_versions(t, tuple, zones, horizon, pins, dead);
    if !sweep && t.siro.is_some() {
        // SIRO (vDriver §3.3): a dead version whose image is still in-row
        // is dropped by the writer that moves it out (first prune, no
        // copy), so a committers' pass leaves it; a sweeping pass (the GC
        // thread's, an explicit one) takes it if no write came.
        let before = dead.len();
        // SAFETY: pinned by the caller; the chain's versions are alive.
        dead.retain(|&v| !storage::siro::is_in_row_copy(unsafe { &*v }));
        if dead.len() < before {
            pins.in_row = true;
            below = below.min(dead.len() as u64);
        }
    }
    if dead.is_empty() {
        return (0, 0);
    }
    // (A writer may have added a version since: its commit queues the row.)
    let freed = super::prune_versions(t, tuple, PrunePlan::versions(dead), guard);
    (freed, freed.saturating_sub(below))
}

/// What a pass's row step needs to know of the pass.
#[derive(Clone, Copy)]
pub(crate) struct PassView<'a> {
    pub zones: &'a DeadZones,
    pub horizon: u64,
    /// Also prune dead versions SIRO left in-row (see [`prune_row`]).
    pub sweep: bool,
}

/// A row: (table id, tuple).
type Row = (u32, u64);

/// Rows that keep older versions, and the snapshots that keep them: a
/// pass looks at a row again only when one of those ends (or a write
/// queues it), so its work follows the writes and the snapshots that end,
/// not the number of rows a long reader pins.
#[derive(Default)]
struct Watch {
    /// Each watched row's pins, sorted and deduplicated.
    rows: FxHashMap<Row, Vec<u64>>,
    /// Snapshot begin -> rows it pins (a row may stay listed under a
    /// snapshot no longer among its pins: checked when taken).
    by_snapshot: BTreeMap<u64, Vec<Row>>,
    /// Rows the next pass must look at whatever ends.
    next_pass: Vec<Row>,
    /// Rows with a dead version left in-row (SIRO), for the next sweeping
    /// pass: a set, since committers' passes meet a hot row again and again
    /// before a sweep (and there is no GC thread without `gc_interval`).
    in_row: FxHashSet<Row>,
}

impl Watch {
    /// Takes into `due` every row one of whose pins ended (is no longer a
    /// listed snapshot) or that asked for the next pass; `all` takes every
    /// watched row.
    fn take_due(&mut self, live: &[u64], all: bool, sweep: bool, due: &mut Vec<Row>) {
        due.append(&mut self.next_pass);
        if sweep {
            due.extend(self.in_row.drain());
        }
        if all {
            due.extend(self.rows.drain().map(|(row, _)| row));
            self.by_snapshot.clear();
            return;
        }
        let ended: Vec<u64> = (self.by_snapshot.keys().copied())
            .filter(|b| live.binary_search(b).is_err())
            .collect();
        for b in ended {
            for row in self.by_snapshot.remove(&b).unwrap_or_default() {
                if self
                    .rows
                    .get(&row)
                    .is_some_and(|p| p.binary_search(&b).is_ok())
                {
                    due.push(row);
                }
            }
        }
    }

    /// Records what keeps `row`'s older versions now (nothing: unwatched).
    fn set(&mut self, row: Row, pins: &mut Pins) {
        if pins.next_pass {
            self.next_pass.push(row);
        }
        if pins.in_row {
            self.in_row.insert(row);
        }
        if pins.snapshots.is_empty() {
            self.rows.remove(&row);
            return;
        }
        pins.snapshots.sort_unstable();
        pins.snapshots.dedup();
        let old = self.rows.entry(row).or_default();
        if *old == pins.snapshots {
            return; // the usual case under a long reader: nothing changed
        }
        for &b in &pins.snapshots {
            // Listed under `b` already (and still pinned by it then, so
            // not taken since): no second entry.
            if old.binary_search(&b).is_err() {
                self.by_snapshot.entry(b).or_default().push(row);
            }
        }
        old.clone_from(&pins.snapshots);
    }
}

/// The `GcPolicy::DeadZone` collector (see the module doc).
#[derive(Default)]
pub struct DeadZone {
    /// Rows written since the last pass, pushed by each commit (rows, not
    /// versions: a pass may free any version, so nothing queued points at
    /// one). On its own cache lines: every commit writes it.
    written: CachePadded<Mutex<Vec<Row>>>,
    /// Rows kept with older versions, and what keeps them. Only a pass,
    /// under `Common::running`, touches it.
    watch: Mutex<Watch>,
}

impl DeadZone {
    pub fn new() -> DeadZone {
        DeadZone::default()
    }

    /// One pass: the rows written since the last one, and the watched rows
    /// whose pins ended (`wait`, the explicit pass: every watched row).
    /// `sweep`: also the dead versions SIRO left in-row for first prune.
    /// Returns versions freed, None if another pass was running and `wait`
    /// is false.
    fn run<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
        sweep: bool,
    ) -> Option<u64> {
        let running = if wait {
            common.running.lock()
        } else {
            common.running.try_lock()?
        };
        let h = snaps.oldest();
        let zones = snaps.dead_zones();
        let may_remove = engine.may_remove();
        let tables: Vec<Arc<TableInner>> = engine.tables().clone();
        let mut rows = std::mem::take(&mut *self.written.lock());
        let mut watch = self.watch.lock();
        watch.take_due(snaps.as_slice(), wait, sweep, &mut rows);
        rows.sort_unstable();
        rows.dedup();
        let (mut freed, mut in_zones) = (0, 0);
        let mut unlinked = Vec::new();
        let mut pins = Pins::default();
        let mut dead = Vec::new();
        // SIRO tables (`gc::siro`): the zones go to their writers (first
        // prune at relocation) and sealed dead segments are cut, before
        // the row steps; a chain a cut left with a hole comes up at the
        // next pass.
        for t in tables.iter().filter(|t| !t.dropped.load(SeqCst)) {
            let cut = super::siro::on_pass(t, &zones);
            in_zones += cut.freed;
            (watch.next_pass).extend(cut.holes.into_iter().map(|tuple| (t.id, tuple)));
        }
        let mut guard = epoch::pin();
        let _batch = storage::RetireBatch::open();
        for (i, &(table, tuple)) in rows.iter().enumerate() {
            pins.snapshots.clear();
            pins.next_pass = false;
            pins.in_row = false;
            let Some(t) = tables
                .get(table as usize)
                .filter(|t| !t.dropped.load(SeqCst))
            else {
                watch.set((table, tuple), &mut pins);
                continue;
            };
            let newest = storage::newest(t, tuple);
            if newest.is_null() {
                watch.set((table, tuple), &mut pins);
                continue;
            }
            // SAFETY: pinned; the newest version of a chain is alive.
            if unsafe { (*newest).is_tombstone() } {
                // A deleted row: VAC's row step unlinks it once every
                // snapshot sees the delete.
                let r = vacuum_row(t, tuple, h, &may_remove, &guard);
                freed += r.freed;
                if let Some(head) = r.unlinked {
                    unlinked.push(Unlinked::new(table, tuple, head));
                    watch.set((table, tuple), &mut pins);
                    continue;
                }
                pins.next_pass |= r.leftover;
            }
            // Everything below the horizon lies in the first dead zone: one
            // walk prunes it with the versions dead above it.
            let view = PassView {
                zones: &zones,
                horizon: h,
                sweep,
            };
            let (n, above) = prune_row(t, tuple, &view, &mut pins, &mut dead, &guard);
            freed += n - above;
            in_zones += above;
            watch.set((table, tuple), &mut pins);
            if i % 1024 == 1023 {
                // A long pass must not hold back every other thread's
                // reclamation.
                guard.repin();
            }
        }
        drop(watch);
        // Nothing queued points into a row (rows, not versions, are).
        freed += common.limbo.retire(
            unlinked,
            h,
            &|| engine.clock(),
            &|id| tables.get(id as usize).cloned(),
            &guard,
        );
        drop(guard);
        // Counted before `running` goes (as transaction-level GC).
        let c = &common.counters;
        c.versions_reclaimed.fetch_add(freed + in_zones, SeqCst);
        c.dead_zone_pruned.fetch_add(in_zones, SeqCst);
        drop(running);
        finish_pass(common, engine, &tables, h, wait);
        c.gc_passes.fetch_add(1, SeqCst);
        Some(freed + in_zones)
    }
}

impl Collector for DeadZone {
    #[inline]
    fn on_commit<'a>(&self, _cts: u64, _slot: usize, rows: impl Iterator<Item = Committed<'a>>) {
        let mut w = self.written.lock();
        crate::sync::wrote(&*w);
        w.extend(rows.map(|r| (r.table.id, r.tuple)));
    }

    /// The explicit pass (`wait`) also looks at every watched row, so that
    /// it leaves exactly what the live snapshots read.
    fn collect<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
    ) -> Option<u64> {
        self.run(common, snaps, engine, wait, wait)
    }

    /// Committers run the passes (skipping while one runs): the work is
    /// proportional to their writes, and they cannot outrun it.
    fn every_few_commits<E: Engine>(&self, common: &Common, engine: &E) {
        let snaps = super::refresh(self, engine);
        self.run(common, &snaps, engine, false, false);
    }

    /// One thread, for the versions that die when snapshots end while
    /// nobody commits.
    fn background_threads(&self, every: Option<Duration>) -> usize {
        usize::from(every.is_some())
    }

    /// The GC thread's pass also sweeps what SIRO left in-row.
    fn background<E: Engine>(&self, common: &Common, engine: &E, _thread: usize) {
        let snaps = super::refresh(self, engine);
        self.run(common, &snaps, engine, false, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(clock: u64, begins: &[u64]) -> DeadZones {
        Snapshots::new(clock, begins.to_vec()).dead_zones()
    }

    /// Definition 3.4: the gaps between consecutive snapshots, from minus
    /// infinity to the floor; they merge as snapshots end.
    #[test]
    fn zones_are_the_gaps_between_live_snapshots() {
        assert_eq!(zones(100, &[]).zones(), [(0, 100)]);
        assert_eq!(
            zones(100, &[20, 50]).zones(),
            [(0, 20), (20, 50), (50, 100)]
        );
        // The snapshot at 50 ends: its two zones become one.
        assert_eq!(zones(100, &[20]).zones(), [(0, 20), (20, 100)]);
        // Duplicates and snapshots at the floor add nothing.
        assert_eq!(zones(100, &[20, 20, 100]).zones(), [(0, 20), (20, 100)]);
    }

    /// Theorem 3.5: dead exactly when no live snapshot falls in
    /// `[begin, end)` and the version ended at or below the floor.
    #[test]
    fn a_version_is_dead_when_its_lifetime_holds_no_snapshot() {
        let z = zones(100, &[20, 50]);
        assert!(z.is_dead(21, 50)); // inside [20, 50]: 50 sees its successor
        assert!(z.is_dead(3, 20));
        assert!(!z.is_dead(20, 30), "the snapshot at 20 reads it");
        assert!(!z.is_dead(30, 51), "the snapshot at 50 reads it");
        assert!(z.is_dead(51, 100));
        assert!(!z.is_dead(51, 101), "a snapshot to come may read it");
        // A transaction caught beginning lowers the floor to its bound.
        let pending = Snapshots::with_pending(100, vec![20], 60).dead_zones();
        assert!(!pending.is_dead(51, 70));
        assert!(pending.is_dead(21, 60));
    }

    /// What keeps a version: the oldest live snapshot inside its lifetime
    /// (the watch looks at the row again when that one ends), else the
    /// floor, else nothing.
    #[test]
    fn a_kept_version_names_the_oldest_snapshot_that_reads_it() {
        let z = zones(100, &[20, 35, 50]);
        assert_eq!(z.pin(10, 40), Pin::Snapshot(20));
        assert_eq!(z.pin(21, 40), Pin::Snapshot(35));
        assert_eq!(z.pin(36, 50), Pin::Dead, "50 reads the successor");
        assert_eq!(z.pin(51, 101), Pin::Floor);
        assert_eq!(z.pin(51, 100), Pin::Dead);
        // When 20 ends, the version it and 35 read is kept by 35 alone.
        assert_eq!(zones(100, &[35, 50]).pin(10, 40), Pin::Snapshot(35));
        assert_eq!(zones(100, &[50]).pin(10, 40), Pin::Dead);
    }

    fn pins(snapshots: &[u64], next_pass: bool) -> Pins {
        Pins {
            snapshots: snapshots.to_vec(),
            next_pass,
            in_row: false,
        }
    }

    fn due(w: &mut Watch, live: &[u64], all: bool) -> Vec<Row> {
        let mut rows = Vec::new();
        w.take_due(live, all, false, &mut rows);
        rows.sort_unstable();
        rows
    }

    /// A watched row comes back once when a snapshot keeping it ends, not
    /// while they live, and not twice for one ending; rows asking for the
    /// next pass come back at the next pass; the explicit pass takes all.
    #[test]
    fn the_watch_returns_a_row_when_a_snapshot_keeping_it_ends() {
        let mut w = Watch::default();
        w.set((0, 1), &mut pins(&[35, 20, 35], false));
        w.set((0, 2), &mut pins(&[20], false));
        w.set((0, 3), &mut pins(&[], true));
        assert_eq!(due(&mut w, &[20, 35], false), [(0, 3)]);
        assert_eq!(due(&mut w, &[20, 35], false), [], "nothing ended");
        // 35 ends: row 1 is looked at; it is kept by 20 alone now.
        assert_eq!(due(&mut w, &[20], false), [(0, 1)]);
        w.set((0, 1), &mut pins(&[20], false));
        // 20 ends: both rows, once each (row 1 is not listed twice).
        assert_eq!(due(&mut w, &[], false), [(0, 1), (0, 2)]);
        w.set((0, 1), &mut pins(&[], false));
        w.set((0, 2), &mut pins(&[60], false));
        assert!(!w.rows.contains_key(&(0, 1)), "nothing keeps row 1");
        assert_eq!(due(&mut w, &[60], true), [(0, 2)], "the explicit pass");
    }
}
