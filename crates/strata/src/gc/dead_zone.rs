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
//! The collector is VAC's pass (`gc::vacuum`: the dirty-block bitmap, the
//! partitions, the GC threads, the horizon cut and the unlinking of deleted
//! rows) with this module's row step after the horizon cut: the dead
//! versions above the horizon go through `PrunePlan::Versions`, their
//! secondary entries first (`gc::prune_versions`); storage merges the delta
//! records of removed in-place versions into their older neighbours. A
//! block keeps its dirty bit while a row in it has more than one version, so
//! versions that die when a snapshot ends (with no new write to the row)
//! are found by the next pass.
//!
//! Invariant: a pass removes exactly the versions that are neither the
//! newest, nor the newest committed, nor read by a snapshot in the copy or
//! at or above its floor (`tests/dead_zone.rs` checks this against a
//! model, on every storage scheme).

use super::vacuum::Vacuum;
use super::{Collector, Committed, Common, Engine, Snapshots};
use crate::storage::dead_zones::DeadZones;
use crate::storage::version::{Version, INF_TS, TID_MARK};
use crate::storage::{self, PrunePlan, Span};
use crate::table::TableInner;
use crossbeam_epoch::Guard;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

/// The committed versions of `tuple` that `zones` say are dead, other than
/// the newest version and the newest committed one (the plan's contract:
/// a writer may overwrite or undo back to them), and the chain's length.
/// Pinned, by the row's collector.
pub(crate) fn dead_versions(
    t: &TableInner,
    tuple: u64,
    zones: &DeadZones,
) -> (Vec<*mut Version>, u64) {
    let mut dead = Vec::new();
    let mut len = 0;
    let mut newest = true;
    let mut newest_committed_seen = false;
    for v in storage::versions(t, tuple, Span::ALL) {
        len += 1;
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
        if end & TID_MARK == 0 && end != INF_TS && zones.is_dead(begin, end) {
            dead.push(v);
        }
    }
    (dead, len)
}

/// The dead-zone step of one row, after the horizon cut: prunes its dead
/// versions. Returns (versions retired, whether the row still has more
/// than one version and needs another look when snapshots end).
pub(crate) fn prune_row(
    t: &TableInner,
    tuple: u64,
    zones: &DeadZones,
    guard: &Guard,
) -> (u64, bool) {
    let (mut dead, len) = dead_versions(t, tuple, zones);
    let freed = if dead.is_empty() {
        0
    } else {
        super::prune_versions(t, tuple, PrunePlan::versions(&mut dead), guard)
    };
    // (A writer may have added a version since: the next pass sees it, its
    // commit marks the block dirty.)
    (freed, len.saturating_sub(freed) > 1)
}

/// The `GcPolicy::DeadZone` collector: VAC's pass with the dead-zone row
/// step (see the module doc).
pub struct DeadZone {
    pass: Vacuum,
}

impl DeadZone {
    pub fn new(threads: usize, background: bool) -> DeadZone {
        DeadZone {
            pass: Vacuum::new(threads, false, background).with_dead_zones(),
        }
    }
}

impl Collector for DeadZone {
    #[inline]
    fn on_commit<'a>(&self, cts: u64, rows: impl Iterator<Item = Committed<'a>>) {
        self.pass.on_commit(cts, rows)
    }

    fn collect<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
    ) -> Option<u64> {
        self.pass.collect(common, snaps, engine, wait)
    }

    fn every_few_commits<E: Engine>(&self, common: &Common, engine: &E) {
        self.pass.every_few_commits(common, engine)
    }

    fn background_threads(&self, every: Option<Duration>) -> usize {
        self.pass.background_threads(every)
    }

    fn background<E: Engine>(&self, common: &Common, engine: &E, thread: usize) {
        self.pass.background(common, engine, thread)
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
}
