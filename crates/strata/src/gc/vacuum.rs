//! Tuple-level garbage collection by background vacuuming (VAC, Peloton
//! §5), the [`Vacuum`] collector; COOP ([`super::coop`]) runs the same pass
//! over every block (its workers' `cooperate` is chain manipulation and
//! lives in storage: `storage::append_only::cooperate`).
//!
//! Transaction-level GC is told which rows each commit dirtied. Tuple-level
//! GC is not: it looks at the rows themselves. A vacuum pass walks a
//! table's tuples and, per row, finds the newest committed version at or
//! below the horizon (`keep`): everything older is invisible to every open
//! snapshot and is cut off (the same per-row pruning as transaction-level
//! GC, [`super::prune_row`]), and a row whose `keep` is a tombstone is
//! unlinked whole (index entry, slot, limbo).
//!
//! To not rescan a large, mostly cold table, a commit sets one bit per
//! block of [`BLOCK_TUPLES`] tuples in a *dirty-block bitmap* (that is all
//! it hands over: a queue entry would point at a version a scan may free);
//! the vacuum clears a block's bit before it scans the block, skips clean
//! blocks, and sets the bit again for a block that still holds rows with
//! more than one version (garbage not below the horizon yet, e.g. under a
//! long reader):
//!
//! ```text
//!  bitmap   1 0 0 1 0 ...         GC thread k of n scans blocks b with
//!  blocks  [0 ][1 ][2 ][3 ][4 ]   b % n == k whose bit is set
//!           ^vacuum       ^vacuum
//! ```
//!
//! With `gc_interval`, GC thread k vacuums partition k, under that
//! partition's lock (no two passes prune one row), and committers only
//! refresh the horizon; without it, committers run the whole pass.
//!
//! COOP (append-only O2N only): a worker walking a chain from its oldest
//! end meets the obsolete versions first; when the version after the head
//! is committed at or below the (cached) horizon, the head is garbage, and
//! the worker moves the slot forward by compare-and-swap (one winner per
//! prefix) and retires the prefix. `tests/coop_model.rs` runs `cooperate`
//! under shuttle against another cleaner, a vacuum and an unlink.
//!
//! ```text
//!  slot ──> v1 ──> v2 ──> v3(begin 40) ──> v4(begin 90)    horizon 50
//!  slot ─────────────────> v3 ──> v4       v1, v2 retired by the reader
//! ```

use super::limbo::Unlinked;
use super::{
    finish_pass, prune_row, refresh, Collector, Committed, Common, Engine, Garbage, MayRemove,
    Pruned, Snapshots,
};
use crate::storage;
use crate::storage::append_only::committed_at_or_below;
use crate::storage::dirty::BLOCK_TUPLES;
use crate::storage::version::Version;
use crate::table::TableInner;
use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What one vacuum pass over some blocks did.
#[derive(Default, Debug, Clone, Copy)]
pub struct PassReport {
    pub freed: u64,
    pub blocks_scanned: u64,
    pub blocks_skipped: u64,
}

/// Which blocks a pass visits.
#[derive(Clone, Copy)]
pub struct Partition {
    pub index: u64,
    pub count: u64,
    /// Scan every block, dirty or not (COOP's dusty-corner pass).
    pub full: bool,
}

/// The VAC collector (and the pass COOP runs over every block).
pub struct Vacuum {
    /// One lock per GC-thread partition of the blocks, so no two passes
    /// prune the same row.
    parts: Vec<Mutex<()>>,
    /// Scan every block, dirty or not (COOP's dusty-corner pass).
    full: bool,
    /// Whether GC threads run the passes (`gc_interval`); otherwise
    /// committers do.
    background: bool,
}

impl Vacuum {
    pub fn new(threads: usize, full: bool, background: bool) -> Vacuum {
        Vacuum {
            parts: (0..threads.max(1)).map(|_| Mutex::new(())).collect(),
            full,
            background,
        }
    }

    /// Vacuums partition `part`, or all of them, below the horizon.
    /// Partitions another pass holds are waited for (`wait`) or skipped.
    /// Returns versions freed.
    pub(crate) fn vacuum<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        part: Option<usize>,
        wait: bool,
    ) -> u64 {
        let h = snaps.oldest();
        let may_remove = engine.may_remove();
        let tables: Vec<Arc<TableInner>> = engine.tables().clone();
        let count = self.parts.len();
        let parts = match part {
            Some(i) => i..i + 1,
            None => 0..count,
        };
        let mut freed = 0;
        let mut scanned = 0;
        let mut skipped = 0;
        let _passes = if wait {
            common.tuple_passes.read()
        } else {
            match common.tuple_passes.try_read() {
                Some(l) => l,
                None => return 0,
            }
        };
        let c = &common.counters;
        for i in parts {
            let before = freed;
            let _lock = if wait {
                self.parts[i].lock()
            } else {
                match self.parts[i].try_lock() {
                    Some(l) => l,
                    None => continue,
                }
            };
            let p = Partition {
                index: i as u64,
                count: count as u64,
                full: self.full,
            };
            for t in &tables {
                if t.dropped.load(Ordering::SeqCst) {
                    continue;
                }
                let mut unlinked = Vec::new();
                let r = vacuum_table(t, p, h, &may_remove, &mut unlinked);
                freed += r.freed;
                scanned += r.blocks_scanned;
                skipped += r.blocks_skipped;
                let limbo = unlinked
                    .into_iter()
                    .map(|(tuple, head)| Unlinked::new(t.id, tuple, head))
                    .collect();
                let guard = epoch::pin();
                // Nothing is queued under tuple-level GC: no entry can
                // point into an unlinked row.
                freed += common.limbo.retire(
                    limbo,
                    h,
                    &|| engine.clock(),
                    &|id| tables.get(id as usize).cloned(),
                    &guard,
                );
            }
            // Counted before the partition's lock goes: a pass that waited
            // for it (`Database::collect_garbage`) then finds this one's
            // work counted, not only done (`Stats::versions_reclaimed`).
            c.versions_reclaimed
                .fetch_add(freed - before, Ordering::SeqCst);
        }
        drop(_passes);
        // Secondary-index entries whose rows were locked during the cut:
        // retried as transaction-level GC does.
        finish_pass(common, engine, &tables, h, wait);
        c.gc_passes.fetch_add(1, Ordering::SeqCst);
        c.blocks_scanned.fetch_add(scanned, Ordering::SeqCst);
        c.blocks_skipped.fetch_add(skipped, Ordering::SeqCst);
        freed
    }

    /// Between passes, committers keep the horizon and the protocols'
    /// state fresh.
    pub(crate) fn refresh_only<C: Collector, E: Engine>(c: &C, engine: &E) {
        let h = refresh(c, engine).oldest();
        engine.prune_protocol_state(&engine.tables(), h, false);
    }
}

impl Collector for Vacuum {
    /// Only the dirty-block bit (set after the install; a pass that
    /// cleared it before sees the row next time). Queue entries would
    /// point at versions a scan may free.
    #[inline]
    fn on_commit<'a>(&self, _cts: u64, _slot: usize, rows: impl Iterator<Item = Committed<'a>>) {
        rows.for_each(|r| r.table.dirty.mark(r.tuple));
    }

    /// Every partition (waiting for, or skipping, busy ones).
    fn collect<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
    ) -> Option<u64> {
        Some(self.vacuum(common, snaps, engine, None, wait))
    }

    fn every_few_commits<E: Engine>(&self, common: &Common, engine: &E) {
        if self.background {
            Vacuum::refresh_only(self, engine);
        } else {
            self.pass(common, engine, false);
        }
    }

    /// One thread per partition.
    fn background_threads(&self, every: Option<Duration>) -> usize {
        every.map_or(0, |_| self.parts.len())
    }

    fn background<E: Engine>(&self, common: &Common, engine: &E, thread: usize) {
        let snaps = refresh(self, engine);
        self.vacuum(common, &snaps, engine, Some(thread), true);
    }
}

/// Vacuums the blocks of `t` in `part`. Rows that become unlinked (deleted)
/// are pushed to `unlinked` as (tuple, head) for the caller's limbo.
/// The caller holds `part`'s lock, so no other pass touches these rows.
pub fn vacuum_table(
    t: &TableInner,
    part: Partition,
    horizon: u64,
    may_remove: MayRemove<'_>,
    unlinked: &mut Vec<(u64, *mut Version)>,
) -> PassReport {
    let mut rep = PassReport::default();
    let used = t.rows.capacity_used();
    let blocks = used.div_ceil(BLOCK_TUPLES);
    let mut b = part.index;
    while b < blocks {
        let dirty = t.dirty.take(b);
        if !dirty && !part.full {
            rep.blocks_skipped += 1;
            b += part.count;
            continue;
        }
        rep.blocks_scanned += 1;
        // Pinned per block, not per pass: a pass over a large table must not
        // hold back every other thread's reclamation.
        let guard = epoch::pin();
        let _batch = storage::RetireBatch::open();
        let mut leftover = false;
        let end = ((b + 1) * BLOCK_TUPLES).min(used);
        for tuple in b * BLOCK_TUPLES..end {
            let r = vacuum_row(t, tuple, horizon, may_remove, &guard);
            rep.freed += r.freed;
            leftover |= r.leftover;
            if let Some(h) = r.unlinked {
                unlinked.push((tuple, h));
            }
        }
        if leftover {
            t.dirty.set(b);
        }
        drop(guard);
        b += part.count;
    }
    rep
}

/// What [`vacuum_row`] did.
pub(super) struct RowResult {
    pub freed: u64,
    /// The row keeps garbage not below the horizon yet (or is a deleted
    /// row that cannot be unlinked yet).
    pub leftover: bool,
    /// The row was unlinked (deleted); its chain's first version.
    pub unlinked: Option<*mut Version>,
}

/// Prunes one row below its newest committed version at or below the
/// horizon (`keep`), or unlinks it if `keep` is its newest version and a
/// tombstone.
pub(super) fn vacuum_row(
    t: &TableInner,
    tuple: u64,
    horizon: u64,
    may_remove: MayRemove<'_>,
    guard: &Guard,
) -> RowResult {
    let mut out = RowResult {
        freed: 0,
        leftover: false,
        unlinked: None,
    };
    let found = storage::survivor(t, tuple, |r| committed_at_or_below(r, horizon));
    if found.keep.is_null() {
        out.leftover = found.len > 1;
        return out;
    }
    let (keep, newer) = (found.keep, found.newer);
    // SAFETY: pinned; `keep` is in the chain.
    let kv = unsafe { &*keep };
    if !found.older && !kv.is_tombstone() {
        out.leftover = newer;
        return out;
    }
    let g = Garbage {
        cts: kv.begin.load(Ordering::SeqCst),
        table: t.id,
        tuple,
        version: keep,
    };
    match prune_row(t, &g, horizon, may_remove, guard) {
        Pruned::Cut(n) => {
            out.freed = n;
            // Versions newer than `keep`, or a tombstone a writer is
            // overwriting, need another look.
            out.leftover = newer || kv.is_tombstone();
        }
        Pruned::Unlinked(h) => out.unlinked = Some(h),
        Pruned::NotYet(_) => out.leftover = true,
    }
    out
}
