//! What a collector knows about the transactions it must not disturb: the
//! begin timestamp of every registered transaction, sorted, and the clock
//! value read before they were collected.
//!
//! ```text
//!  clock read first: 90
//!  slots:   [begin 52] [free] [begin 87] [begin 52] [begin 61]
//!  Snapshots { begins: [52, 52, 61, 87], clock: 90 }   oldest() = 52
//!  a transaction that registers after the scan reads the clock after
//!  us, so its snapshot is at least 90: the list plus "anything >= clock"
//!  covers every snapshot that exists or can still appear
//! ```
//!
//! Most policies need only [`Snapshots::oldest`], the horizon: a version
//! overwritten at or below it is invisible to everyone. Pruning versions in
//! the middle of a chain (vDriver's dead zones, `gc::dead_zone`) needs the
//! whole list and the [`Snapshots::floor`]: a version is dead if no
//! snapshot in the list, and none at or above the floor, falls inside its
//! lifetime. The floor is the clock, lowered by a transaction caught while
//! it begins (its slot holds a lower bound of a snapshot not taken yet) and
//! by the protocol (MVTO: a read-only snapshot may be drawn below a running
//! writer's timestamp).
//!
//! Taken by `TidTable::snapshots`, which reads each slot's `begin` once and
//! writes nothing, so `begin` never waits for a collector.

use crate::storage::dead_zones::DeadZones;

/// The registered snapshots at one moment (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshots {
    /// The global clock, read before the slots: every transaction that
    /// registers after the scan has a snapshot at or above it.
    clock: u64,
    /// Registered begin timestamps (or lower bounds of them), ascending;
    /// one per open transaction, duplicates kept.
    begins: Vec<u64>,
    /// Every snapshot not in `begins` is at or above this (see
    /// [`Snapshots::floor`]).
    floor: u64,
    /// The horizon (see [`Snapshots::oldest`]).
    oldest: u64,
}

impl Snapshots {
    /// From one scan of the registered transactions: `clock` read before
    /// it, `begins` in any order.
    #[cfg(test)]
    pub fn new(clock: u64, begins: Vec<u64>) -> Snapshots {
        Snapshots::with_pending(clock, begins, u64::MAX)
    }

    /// As [`Snapshots::new`], with `pending` the smallest lower bound found
    /// of a transaction still taking its snapshot (MAX: none).
    pub fn with_pending(clock: u64, mut begins: Vec<u64>, pending: u64) -> Snapshots {
        begins.sort_unstable();
        let floor = clock.min(pending);
        let oldest = floor.min(begins.first().copied().unwrap_or(u64::MAX));
        Snapshots {
            clock,
            begins,
            floor,
            oldest,
        }
    }

    /// The garbage-collection horizon: no open or future transaction can
    /// see a version that a version committed at or below this overwrote.
    #[inline]
    pub fn oldest(&self) -> u64 {
        self.oldest
    }

    /// The same snapshots with the horizon held at or below `horizon`: the
    /// protocol's bound (`Cc::bound_horizon`; MVTO keeps it below every
    /// running writer's timestamp, since a writer may still commit at it).
    pub fn bounded(mut self, horizon: u64) -> Snapshots {
        self.oldest = self.oldest.min(horizon);
        self.floor = self.floor.min(horizon);
        self
    }

    /// Every registered snapshot, ascending.
    #[inline]
    pub fn as_slice(&self) -> &[u64] {
        &self.begins
    }

    /// Every snapshot that is not in [`Snapshots::as_slice`] (it begins
    /// after the scan, or was beginning during it, or the protocol may draw
    /// it below the clock) is at or above this.
    #[inline]
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The complete dead zones of these snapshots (vDriver's Definition
    /// 3.4), for pruning above the horizon.
    pub fn dead_zones(&self) -> DeadZones {
        DeadZones::new(self.as_slice().to_vec(), self.floor())
    }

    /// The clock value read before the scan: snapshots that appear later
    /// are at or above it.
    #[cfg_attr(not(test), allow(dead_code))]
    #[inline]
    pub fn clock(&self) -> u64 {
        self.clock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_is_the_smallest_of_clock_and_begins_unless_bounded() {
        let s = Snapshots::new(90, vec![87, 52, 61, 52]);
        assert_eq!(s.as_slice(), &[52, 52, 61, 87]);
        assert_eq!(s.oldest(), 52);
        assert_eq!(s.clock(), 90);
        // Nobody registered: the clock bounds every snapshot to come.
        assert_eq!(Snapshots::new(90, vec![]).oldest(), 90);
        // A protocol's bound only ever lowers it; the list stays.
        let b = s.clone().bounded(51);
        assert_eq!((b.oldest(), b.as_slice()), (51, s.as_slice()));
        assert_eq!(s.bounded(60).oldest(), 52);
    }

    /// A transaction caught beginning is no snapshot of the list, but
    /// lowers the floor (and the horizon) to its lower bound; so does a
    /// protocol's bound.
    #[test]
    fn the_floor_is_the_clock_lowered_by_pending_registrations_and_bounds() {
        let s = Snapshots::with_pending(90, vec![87, 52], 70);
        assert_eq!(
            (s.as_slice(), s.floor(), s.oldest()),
            (&[52, 87][..], 70, 52)
        );
        assert_eq!(Snapshots::new(90, vec![52]).floor(), 90);
        let b = Snapshots::with_pending(90, vec![], 95).bounded(80);
        assert_eq!((b.floor(), b.oldest()), (80, 80));
    }
}
