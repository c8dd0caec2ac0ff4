//! Dead zones (vDriver, Kim et al., SIGMOD 2020, §3.1, Definition 3.4 and
//! Theorem 3.5): which version lifetimes no live snapshot reads.
//!
//! They live in storage, below the collectors, because version stores
//! prune with them too (SIRO's first prune at relocation and its segment
//! pruning). The collectors build them from a copy of the live snapshots
//! (`Snapshots::dead_zones`); see `gc::dead_zone` for the whole idea.
//!
//! Invariant: `is_dead(begin, end)` is false whenever a listed snapshot, or
//! one that may still appear (at or above the floor), reads the version.

/// The complete dead zones of one set of snapshots (Definition 3.4): the
/// gaps between consecutive live snapshots, from minus infinity up to the
/// floor above which unlisted snapshots may appear.
#[derive(Debug, Clone)]
pub struct DeadZones {
    /// Live snapshots, ascending (duplicates kept: they change nothing).
    begins: Vec<u64>,
    /// No version overwritten after this is dead.
    floor: u64,
}

impl DeadZones {
    /// The zones of the live snapshots `begins` (ascending) below `floor`.
    pub fn new(begins: Vec<u64>, floor: u64) -> DeadZones {
        debug_assert!(begins.windows(2).all(|w| w[0] <= w[1]));
        DeadZones { begins, floor }
    }

    /// Whether a version committed at `begin` and overwritten at `end`
    /// (commit timestamps) is read by no snapshot: no live snapshot `b`
    /// with `begin <= b < end`, and `end <= floor` (Theorem 3.5).
    #[inline]
    pub fn is_dead(&self, begin: u64, end: u64) -> bool {
        matches!(self.pin(begin, end), Pin::Dead)
    }

    /// What keeps a version committed at `begin` and overwritten at `end`
    /// alive, if anything: the oldest listed snapshot that reads it, or
    /// the floor (a snapshot to come may read it).
    #[inline]
    pub fn pin(&self, begin: u64, end: u64) -> Pin {
        if begin >= end {
            return Pin::Dead;
        }
        let first_at_or_after = self.begins.partition_point(|&b| b < begin);
        match self.begins.get(first_at_or_after) {
            Some(&b) if b < end => Pin::Snapshot(b),
            _ if end > self.floor => Pin::Floor,
            _ => Pin::Dead,
        }
    }

    /// The oldest listed snapshot (an LLT's, while one is open).
    #[inline]
    pub fn oldest(&self) -> Option<u64> {
        self.begins.first().copied()
    }

    /// The timestamp at which these zones were built: snapshots not listed
    /// began at or above it.
    #[inline]
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Whether a listed snapshot that began below `before` reads a
    /// version committed at `begin` and overwritten at `end` (SIRO's LLT
    /// test: is it a snapshot read of a long-lived transaction?).
    pub fn read_by_snapshot_below(&self, begin: u64, end: u64, before: u64) -> bool {
        let first = self.begins.partition_point(|&b| b < begin);
        self.begins
            .get(first)
            .is_some_and(|&b| b < end && b < before)
    }

    /// The zones as closed ranges `[start, end]` of timestamps (minus
    /// infinity is 0): versions living strictly inside one are dead.
    #[cfg(test)]
    pub fn zones(&self) -> Vec<(u64, u64)> {
        let mut points = vec![0];
        points.extend(self.begins.iter().copied().filter(|&b| b < self.floor));
        points.dedup();
        points.push(self.floor);
        points.windows(2).map(|w| (w[0], w[1])).collect()
    }
}

/// What [`DeadZones::pin`] found keeps a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// Nothing: the version is dead.
    Dead,
    /// The live snapshot at this begin timestamp reads it (perhaps others
    /// too): it is dead once those end.
    Snapshot(u64),
    /// It ended after the floor: a snapshot beginning now may read it;
    /// the next pass decides.
    Floor,
}
