//! Cooperative cleaning (COOP, Peloton §5; append-only O2N only).
//!
//! Commits hand over nothing. A worker about to walk an O2N chain from its
//! oldest end meets the obsolete versions first: storage's read path runs
//! `storage::append_only::cooperate` with the horizon this collector caches in
//! the table's hook ([`Coop`], handed to every table at creation), which
//! moves the slot past the obsolete prefix by compare-and-swap and retires
//! it. Rows nobody touches again ("dusty corners") are left to a full
//! vacuum pass over every block, dirty or not, by one background thread
//! (or `Database::collect_garbage`).
//!
//! ```text
//!  every N commits: horizon ──fetch_max──> Coop::horizon (cached)
//!  reader: slot ─> v1 ─> v2 ─> v3(begin 40) ─> v4     cached horizon 50
//!          slot ──────────────> v3 ─> v4               v1, v2 retired
//! ```
//!
//! Invariant: the cached horizon only grows (`fetch_max`), and a stale one
//! is lower, so a worker never retires a version some snapshot still sees.

use super::vacuum::Vacuum;
use super::{Collector, Committed, Common, Engine, Snapshots};
use crate::stats::Stats;
use crate::storage::Coop;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// The COOP collector: the workers' shared state and the full pass.
pub struct Cooperative {
    shared: Arc<Coop>,
    full_pass: Vacuum,
}

impl Cooperative {
    /// `passes`: the lock tuple-level cuts hold shared ([`Common`]'s), so a
    /// pause stops the workers too.
    pub fn new(threads: usize, passes: Arc<RwLock<()>>) -> Cooperative {
        Cooperative {
            shared: Arc::new(Coop {
                horizon: AtomicU64::new(0),
                reclaimed: AtomicU64::new(0),
                reclaimed_bytes: AtomicU64::new(0),
                passes,
            }),
            full_pass: Vacuum::new(threads, true, false),
        }
    }
}

impl Collector for Cooperative {
    /// Nothing: workers find the garbage on their chain walks.
    #[inline]
    fn on_commit<'a>(&self, _cts: u64, _slot: usize, _rows: impl Iterator<Item = Committed<'a>>) {}

    fn chain_walk_hook(&self) -> Option<Arc<Coop>> {
        Some(Arc::clone(&self.shared))
    }

    fn on_horizon(&self, horizon: u64) {
        self.shared.horizon.fetch_max(horizon, SeqCst);
    }

    /// The dusty-corner pass: every block of every partition.
    fn collect<E: Engine>(
        &self,
        common: &Common,
        snaps: &Snapshots,
        engine: &E,
        wait: bool,
    ) -> Option<u64> {
        Some(self.full_pass.vacuum(common, snaps, engine, None, wait))
    }

    /// Workers clean; committers only keep the cached horizon (and the
    /// protocols' state) fresh.
    fn every_few_commits<E: Engine>(&self, _common: &Common, engine: &E) {
        Vacuum::refresh_only(self, engine);
    }

    /// One thread for the dusty-corner pass.
    fn background_threads(&self, every: Option<Duration>) -> usize {
        usize::from(every.is_some())
    }

    fn background<E: Engine>(&self, common: &Common, engine: &E, _thread: usize) {
        self.pass(common, engine, false);
    }

    /// Versions the workers retired.
    fn fill_stats(&self, st: &mut Stats) {
        st.versions_reclaimed += self.shared.reclaimed.load(SeqCst);
        st.gc_bytes_freed += self.shared.reclaimed_bytes.load(SeqCst);
    }
}
