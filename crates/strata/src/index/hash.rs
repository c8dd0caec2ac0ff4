//! A hash index for integer keys: `u64` key -> tuple id, one cache miss per
//! lookup.
//!
//! Point lookups are most of an OLTP workload's index work. `scc::HashIndex`
//! took ~29% of the cycles of a 1M-row YCSB run (perf) with about two
//! dependent misses per lookup; this table keeps key and value side by side
//! in one open-addressing array (four entries per cache line, linear
//! probing), so a lookup usually touches one line:
//!
//! ```text
//!  shard = hash >> 58 ──> table (epoch-protected) ──> [k|v][k|v][k|v][k|v] ...
//!                                                     probe from hash & mask
//! ```
//!
//! Readers never lock: an entry's key is written before its value (release)
//! and never changes while the entry holds a value, so a reader that sees a
//! value sees its key. Writers (inserts, removes, resizes) take their
//! shard's mutex. A resize builds a new table and swaps it in; the old one
//! is freed through `crossbeam-epoch` once no reader can hold it. A removed
//! key leaves a tombstone (value 1) that only the same key may reuse; a
//! resize drops tombstones.

use crossbeam_epoch::{self as epoch, Atomic, Owned};
use parking_lot::Mutex;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;
const EMPTY: u64 = 0;
const REMOVED: u64 = 1;
/// Stored values are tuple ids shifted past EMPTY and REMOVED.
const VALUE_BASE: u64 = 2;
const MIN_CAPACITY: usize = 64;

#[derive(Default)]
struct Entry {
    key: AtomicU64,
    value: AtomicU64,
}

struct Table {
    entries: Box<[Entry]>,
    mask: usize,
}

impl Table {
    fn new(capacity: usize) -> Table {
        let capacity = capacity.next_power_of_two().max(MIN_CAPACITY);
        Table {
            entries: (0..capacity).map(|_| Entry::default()).collect(),
            mask: capacity - 1,
        }
    }
}

struct Shard {
    table: Atomic<Table>,
    /// Serialises writers; counts (live, tombstone) entries.
    writer: Mutex<(usize, usize)>,
}

/// The hash side of the primary index for single-`Int` keys.
pub struct IntHashIndex {
    shards: Box<[Shard]>,
}

#[inline]
fn hash(key: u64) -> u64 {
    // A 64-bit mix (SplitMix64's finaliser): keys are often dense integers.
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Default for IntHashIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl IntHashIndex {
    pub fn new() -> Self {
        IntHashIndex {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    table: Atomic::new(Table::new(MIN_CAPACITY)),
                    writer: Mutex::new((0, 0)),
                })
                .collect(),
        }
    }

    fn shard(&self, h: u64) -> &Shard {
        &self.shards[(h >> (64 - SHARD_BITS)) as usize]
    }

    /// Starts loading the entry where the probe for `key` begins (see
    /// [`crate::prefetch`]).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        let guard = epoch::pin();
        let h = hash(key);
        let t = table_ref(self.shard(h).table.load(Acquire, &guard));
        crate::prefetch::line(&t.entries[h as usize & t.mask]);
    }

    /// The tuple id of `key`, if present.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        let guard = epoch::pin();
        let h = hash(key);
        let t = table_ref(self.shard(h).table.load(Acquire, &guard));
        // Use the value the probe saw: the empty entry it stopped at may be
        // filled with another key a moment later.
        let (_, v) = probe(t, h, key);
        (v >= VALUE_BASE).then(|| v - VALUE_BASE)
    }

    /// Adds `key -> tuple`; `Err(existing)` if the key is present.
    pub fn insert(&self, key: u64, tuple: u64) -> Result<(), u64> {
        let shard = self.shard(hash(key));
        let mut counts = shard.writer.lock();
        let guard = epoch::pin();
        let (t, e, v) = locate(shard, key, &guard);
        match v {
            EMPTY => {
                // (Writers hold the shard lock, so `v` is still current.)
                e.key.store(key, Relaxed);
                e.value.store(tuple + VALUE_BASE, Release);
                counts.0 += 1;
            }
            v if v >= VALUE_BASE => return Err(v - VALUE_BASE),
            _ => {
                // Reuse this key's own tombstone.
                e.value.store(tuple + VALUE_BASE, Release);
                counts.0 += 1;
                counts.1 -= 1;
            }
        }
        // Keep probes short: grow (or clean) past 70% occupancy.
        if (counts.0 + counts.1) * 10 > (t.mask + 1) * 7 {
            let mut fresh = Table::new((counts.0 * 2).max(MIN_CAPACITY));
            for e in t.entries.iter() {
                let v = e.value.load(Acquire);
                if v >= VALUE_BASE {
                    put(&mut fresh, e.key.load(Relaxed), v);
                }
            }
            let old = shard.table.swap(Owned::new(fresh), Release, &guard);
            // SAFETY: `old` is no longer reachable from the shard; readers
            // that loaded it are pinned, and it is freed only after they
            // unpin. It was created by `Owned::new` and is destroyed once.
            unsafe { guard.defer_destroy(old) };
            counts.1 = 0;
        }
        Ok(())
    }

    /// Removes `key` if it maps to `tuple`.
    pub fn remove(&self, key: u64, tuple: u64) -> bool {
        let shard = self.shard(hash(key));
        let mut counts = shard.writer.lock();
        let guard = epoch::pin();
        let (_, e, v) = locate(shard, key, &guard);
        if v != tuple + VALUE_BASE {
            return false;
        }
        e.value.store(REMOVED, Release);
        counts.0 -= 1;
        counts.1 += 1;
        true
    }
}

/// The shard's current table and `probe`'s answer in it.
fn locate<'g>(shard: &Shard, key: u64, guard: &'g epoch::Guard) -> (&'g Table, &'g Entry, u64) {
    let t = table_ref(shard.table.load(Acquire, guard));
    let (e, v) = probe(t, hash(key), key);
    (t, e, v)
}

/// The entry holding `key` (live or removed) with the value read from it,
/// or the empty entry where the probe for it ends (value `EMPTY`). Tables
/// are never full (see `insert`), so the probe ends.
#[inline]
fn probe(t: &Table, h: u64, key: u64) -> (&Entry, u64) {
    let mut i = h as usize & t.mask;
    loop {
        let e = &t.entries[i];
        let v = e.value.load(Acquire);
        if v == EMPTY || e.key.load(Relaxed) == key {
            return (e, v);
        }
        i = (i + 1) & t.mask;
    }
}

/// Inserts into a table that is not shared yet.
fn put(t: &mut Table, key: u64, value: u64) {
    let mut i = hash(key) as usize & t.mask;
    while t.entries[i].value.load(Relaxed) != EMPTY {
        i = (i + 1) & t.mask;
    }
    t.entries[i].key.store(key, Relaxed);
    t.entries[i].value.store(value, Relaxed);
}

/// Dereferences a table loaded under a guard.
fn table_ref<'g>(t: epoch::Shared<'g, Table>) -> &'g Table {
    // SAFETY: shard tables are never null (created in `new`, replaced by
    // `swap` with a new one) and are freed only through `defer_destroy`,
    // after every guard that could have loaded them is dropped; the
    // reference's lifetime is tied to the guard by `Shared<'g>`.
    unsafe { t.deref() }
}

impl Drop for IntHashIndex {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no other thread can access the shards.
        let guard = unsafe { epoch::unprotected() };
        for s in self.shards.iter() {
            let t = s.table.swap(epoch::Shared::null(), Relaxed, guard);
            // SAFETY: `&mut self`: no reader exists; each table is owned by
            // its shard and dropped once.
            if !t.is_null() {
                drop(unsafe { t.into_owned() });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_map_through_growth_and_removal() {
        let idx = IntHashIndex::new();
        let mut model = HashMap::new();
        let mut x = 12345u64;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = if step % 7 == 0 {
                u64::MAX - x % 5
            } else {
                x % 3000
            };
            match x % 3 {
                0 | 1 => {
                    let r = idx.insert(key, step);
                    match model.get(&key) {
                        Some(&old) => assert_eq!(r, Err(old)),
                        None => {
                            assert_eq!(r, Ok(()));
                            model.insert(key, step);
                        }
                    }
                }
                _ => match model.remove(&key) {
                    Some(v) => {
                        assert!(!idx.remove(key, v + 1), "removed with the wrong tuple");
                        assert!(idx.remove(key, v));
                    }
                    None => assert!(!idx.remove(key, 7)),
                },
            }
            assert_eq!(idx.get(key), model.get(&key).copied());
        }
        for (k, v) in &model {
            assert_eq!(idx.get(*k), Some(*v));
        }
    }

    #[test]
    fn concurrent_readers_see_every_committed_insert() {
        let idx = IntHashIndex::new();
        std::thread::scope(|s| {
            for w in 0..2u64 {
                let idx = &idx;
                s.spawn(move || {
                    for k in 0..20_000u64 {
                        let key = k * 2 + w;
                        idx.insert(key, key + 1).unwrap();
                        assert_eq!(idx.get(key), Some(key + 1));
                    }
                });
            }
            let idx = &idx;
            s.spawn(move || {
                for k in 0..40_000u64 {
                    if let Some(v) = idx.get(k) {
                        assert_eq!(v, k + 1, "torn entry");
                    }
                }
            });
        });
        for k in 0..40_000u64 {
            assert_eq!(idx.get(k), Some(k + 1));
        }
    }
}
