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
//! Every policy today needs only [`Snapshots::oldest`], the horizon: a
//! version overwritten at or below it is invisible to everyone. Pruning
//! versions in the middle of a chain (vDriver's dead zones) needs the whole
//! list: a version is dead if no snapshot in it, and none at or above
//! `clock`, falls inside its lifetime.
//!
//! Taken by `TidTable::snapshots`, which reads each slot's `begin` once and
//! writes nothing, so `begin` never waits for a collector.

/// The registered snapshots at one moment (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshots {
    /// The global clock, read before the slots: every transaction that
    /// registers after the scan has a snapshot at or above it.
    clock: u64,
    /// Registered begin timestamps (or lower bounds of them), ascending;
    /// one per open transaction, duplicates kept.
    begins: Vec<u64>,
    /// The horizon (see [`Snapshots::oldest`]).
    oldest: u64,
}

impl Snapshots {
    /// From one scan of the registered transactions: `clock` read before
    /// it, `begins` in any order.
    pub fn new(clock: u64, mut begins: Vec<u64>) -> Snapshots {
        begins.sort_unstable();
        let oldest = clock.min(begins.first().copied().unwrap_or(u64::MAX));
        Snapshots {
            clock,
            begins,
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
        self
    }

    /// Every registered begin timestamp, ascending.
    // Read by the tests today; pruning inside chains (vDriver's dead
    // zones) is the collector that needs the whole list.
    #[cfg_attr(not(test), allow(dead_code))]
    #[inline]
    pub fn as_slice(&self) -> &[u64] {
        &self.begins
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
}
