//! No garbage collection (`GcPolicy::None`): every version stays until the
//! database is dropped, so memory grows with every update (a baseline for
//! the GC experiments).
//!
//! It keeps nothing either: commits hand over nothing (no queue that
//! nobody drains), no thread runs, no horizon is published, and a pass
//! frees nothing.

use super::{Collector, Committed, Common, Engine, Snapshots};
use std::time::Duration;

/// The collector that collects nothing.
pub struct NoGc;

impl Collector for NoGc {
    #[inline]
    fn on_commit<'a>(&self, _cts: u64, _slot: usize, _rows: impl Iterator<Item = Committed<'a>>) {}

    fn collect<E: Engine>(&self, _: &Common, _: &Snapshots, _: &E, _wait: bool) -> Option<u64> {
        Some(0)
    }

    /// Not even the snapshots are taken.
    fn pass<E: Engine>(&self, _: &Common, _: &E, _wait: bool) -> Option<u64> {
        Some(0)
    }

    fn every_few_commits<E: Engine>(&self, _: &Common, _: &E) {}

    fn background_threads(&self, _every: Option<Duration>) -> usize {
        0
    }

    fn background<E: Engine>(&self, _: &Common, _: &E, _thread: usize) {}
}
