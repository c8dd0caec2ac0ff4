//! A hash index for integer keys: `u64` key -> tuple id (and a chain-head
//! hint), one cache miss per lookup.
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
//!
//! **Chain-head hints.** A point read is three dependent misses: this
//! entry, the tuple's indirection slot, the chain head. The value word has
//! room to spare (tuple ids take 30 bits), so its high half holds a hint:
//! the cache line number of the row's chain head, as last seen. A reader
//! prefetches the hinted head before it loads the slot, so the last two
//! misses overlap (one read-only get: ~530 -> ~410 ns on the development VM):
//!
//! ```text
//!  value = [ head line, address bits 6..38 | tuple id + 2 ]
//!          (address bits 38.. : `hint_high`, one word per index)
//!
//!  without: entry ──> slot ──> head      three misses in a row
//!  with:    entry ──> slot ─┐            two: the slot's and the
//!                 └──> head ┘ prefetch        head's overlap
//! ```
//!
//! The hint is never dereferenced, only prefetched, so a stale one (an
//! update, GC or an abort moved the head; a head outside the 256 GiB
//! window `hint_high` names) costs a wasted line, never a wrong answer.
//! Writers set it on insert and update; readers that find it stale refresh
//! it with a CAS that keeps the tuple id, so a hint can never revive a
//! removed key. Both write it in the entry their own lookup found
//! ([`Found`], held under the lookup's guard), not after a second probe.
//! Entries stay 16 bytes: a separate 8-byte hint made the table bigger and
//! cost more than it saved (README, Performance).
//!
//! **Named versions (physical pointers).** Under `IndexPointers::Physical`
//! the primary index names a version, as a physical secondary entry does
//! (Wu et al. §6: "the value is the location of an exact version"; MV-PBT
//! §3.5: "changes to the latest version ... result in index-record
//! modifications"). An index built [`IntHashIndex::naming_versions`] keeps
//! each entry's version address exactly, in an array beside the entries
//! (slot `i` of `named` belongs to entry `i`, and a resize moves both), so
//! the probed array keeps its 16-byte entries and an index of logical
//! pointers pays nothing. [`IntHashIndex::name_version`] re-points an entry
//! under the shard's writer lock: an index write like an insert's, which
//! every new entry point of an N2O chain costs.

use crate::sync::counted::AtomicU64;
use crossbeam_epoch::{self as epoch, Atomic, Owned};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;
const EMPTY: u64 = 0;
const REMOVED: u64 = 1;
/// Stored values are tuple ids shifted past EMPTY and REMOVED.
const VALUE_BASE: u64 = 2;
const MIN_CAPACITY: usize = 64;
/// The low half of a value holds the tuple id (+ VALUE_BASE); the high half
/// a hint: bits 6..38 of the row's chain head (its cache line number).
const ID_BITS: u64 = 0xFFFF_FFFF;

const LINE_SHIFT: u32 = 6;
const _: () = assert!(
    crate::storage::indirection::MAX_TUPLES + VALUE_BASE <= ID_BITS,
    "tuple ids must fit the low half of a value"
);

#[inline]
fn id_part(v: u64) -> u64 {
    v & ID_BITS
}

/// Whether `hint` (from [`IntHashIndex::get_hinted`]) names another cache
/// line than `head`. Compares only the stored bits, so a head outside the
/// window `hint_high` describes does not make readers rewrite it forever.
#[inline]
pub fn hint_is_stale(hint: *const u8, head: *const u8) -> bool {
    (hint as u64 >> LINE_SHIFT) & ID_BITS != (head as u64 >> LINE_SHIFT) & ID_BITS
}

/// A probe whose first line is on its way ([`IntHashIndex::start`]): the
/// prefetch walk's first stage, finished by its second. It probes the
/// table the start saw; a resize since leaves that one readable (freed
/// only through the epoch) but blind to later inserts, which for a hint
/// means only a key not prefetched.
pub struct Started<'g> {
    index: &'g IntHashIndex,
    table: &'g Table,
    h: u64,
    key: u64,
}

impl Started<'_> {
    /// [`IntHashIndex::get_hinted`] of the started key.
    #[inline]
    pub fn get_hinted(&self) -> Option<(u64, *const u8)> {
        self.index.decode(probe(self.table, self.h, self.key).1)
    }
}

/// A key's entry as a lookup found it (`IntHashIndex::find`), valid while
/// the lookup's guard is: the table it lies in is freed only through the
/// epoch, so a resize since leaves it readable, merely unreachable.
pub struct Found<'g> {
    /// The key's tuple id.
    pub tuple: u64,
    /// The hinted chain head (null: none); prefetch it, never dereference it.
    pub hint: *const u8,
    index: &'g IntHashIndex,
    value: &'g AtomicU64,
    /// The value word the lookup read.
    seen: u64,
}

impl Found<'_> {
    /// Records `head` as the hint in the entry the lookup found (what
    /// [`IntHashIndex::set_hint`] does after a lookup of its own). The CAS
    /// keeps the tuple id: if the entry changed since (another hint: try
    /// once more over it; another tuple, a removal, or an entry a resize
    /// left behind that nobody reads any more) the hint is merely lost.
    #[inline(always)]
    pub fn set_hint(&self, head: *const u8) {
        let new = self.index.hinted(self.tuple, head);
        if self.seen == new {
            return;
        }
        // Relaxed: the hint orders nothing; a lost race keeps the other
        // writer's (newer or older) hint, both merely hints.
        if let Err(now) = self
            .value
            .compare_exchange(self.seen, new, Relaxed, Relaxed)
        {
            if id_part(now) == id_part(new) && now != new {
                let _ = self.value.compare_exchange(now, new, Relaxed, Relaxed);
            }
        }
    }
}

#[derive(Default)]
struct Entry {
    key: AtomicU64,
    value: AtomicU64,
}

struct Table {
    entries: Box<[Entry]>,
    mask: usize,
    /// The version entry `i` names (`named[i]`; 0: none), written under
    /// the shard's lock; empty unless the index names versions.
    named: Box<[AtomicU64]>,
}

impl Table {
    fn new(capacity: usize, names: bool) -> Table {
        let capacity = capacity.next_power_of_two().max(MIN_CAPACITY);
        Table {
            entries: (0..capacity).map(|_| Entry::default()).collect(),
            mask: capacity - 1,
            named: (0..if names { capacity } else { 0 })
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The position of `e`, one of this table's entries (its slot in
    /// `named`).
    fn index_of(&self, e: &Entry) -> usize {
        (e as *const Entry as usize - self.entries.as_ptr() as usize) / std::mem::size_of::<Entry>()
    }

    /// Records that entry `i` names `v` (a no-op unless the index names
    /// versions). The caller holds the shard's lock.
    fn set_named(&self, i: usize, v: *const u8) {
        if let Some(n) = self.named.get(i) {
            n.store(v as u64, Release);
        }
    }
}

struct Shard {
    table: Atomic<Table>,
}

/// A shard's writer lock, with its (live, tombstone) entry counts.
type Writer = Mutex<(usize, usize)>;

/// The hash side of the primary index for single-`Int` keys.
pub struct IntHashIndex {
    /// Read by every lookup, written by resizes only.
    shards: Box<[Shard]>,
    /// Serialise each shard's writers; count its (live, tombstone)
    /// entries. A line each, apart from the tables: two threads inserting
    /// anywhere in one table (TPC-C's order lines) would otherwise move
    /// the line every lookup reads between their cores on each insert.
    writers: Box<[CachePadded<Writer>]>,
    /// Bits 38.. of the last hinted chain head.
    hint_high: AtomicU64,
    /// Whether entries name versions ([`IntHashIndex::naming_versions`]).
    names: bool,
}

#[inline]
fn shard_of(h: u64) -> usize {
    (h >> (64 - SHARD_BITS)) as usize
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
        Self::build(false)
    }

    /// An index whose entries name versions (see the module doc).
    pub fn naming_versions() -> Self {
        Self::build(true)
    }

    fn build(names: bool) -> Self {
        IntHashIndex {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    table: Atomic::new(Table::new(MIN_CAPACITY, names)),
                })
                .collect(),
            writers: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new((0, 0))))
                .collect(),
            hint_high: AtomicU64::new(0),
            names,
        }
    }

    /// Whether entries name versions.
    pub fn names_versions(&self) -> bool {
        self.names
    }

    fn shard(&self, h: u64) -> &Shard {
        &self.shards[shard_of(h)]
    }

    /// The shard of `key`, locked.
    fn lock(&self, key: u64) -> (&Shard, parking_lot::MutexGuard<'_, (usize, usize)>) {
        let i = shard_of(hash(key));
        (&self.shards[i], self.writers[i].lock())
    }

    /// Starts loading the entry where the probe for `key` begins (see
    /// [`crate::prefetch`]), keeping what the probe needs to finish later
    /// ([`Started::get_hinted`]) without hashing the key again; a caller
    /// that only prefetches drops it. `guard`: the caller's pin, as in
    /// `get_hinted`.
    #[inline]
    pub fn start<'g>(&'g self, key: u64, guard: &'g epoch::Guard) -> Started<'g> {
        let h = hash(key);
        let table = table_ref(self.shard(h).table.load(Acquire, guard));
        crate::prefetch::line(&table.entries[h as usize & table.mask]);
        Started {
            index: self,
            table,
            h,
            key,
        }
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
        let id = id_part(v);
        (id >= VALUE_BASE).then(|| id - VALUE_BASE)
    }

    /// The tuple id of `key` and the hinted address of its chain head (null
    /// when there is no hint). The hint may be stale: prefetch it, never
    /// dereference it.
    /// `guard`: the caller's pin (pinning again costs a thread-local lookup).
    #[inline]
    pub fn get_hinted(&self, key: u64, guard: &epoch::Guard) -> Option<(u64, *const u8)> {
        self.decode(self.entry(key, guard).1)
    }

    /// [`IntHashIndex::get_hinted`] with the entry it was found in, so that
    /// [`Found::set_hint`] rewrites the hint without hashing and probing
    /// again.
    #[inline]
    pub fn find<'g>(&'g self, key: u64, guard: &'g epoch::Guard) -> Option<Found<'g>> {
        let (e, v) = self.entry(key, guard);
        let (tuple, hint) = self.decode(v)?;
        Some(Found {
            tuple,
            hint,
            index: self,
            value: &e.value,
            seen: v,
        })
    }

    /// The entry where `key`'s probe stops, and the value it read there.
    #[inline(always)]
    fn entry<'g>(&self, key: u64, guard: &'g epoch::Guard) -> (&'g Entry, u64) {
        let h = hash(key);
        probe(table_ref(self.shard(h).table.load(Acquire, guard)), h, key)
    }

    /// A value word's tuple id and hinted head (None: no tuple).
    #[inline(always)]
    fn decode(&self, v: u64) -> Option<(u64, *const u8)> {
        let id = id_part(v);
        if id < VALUE_BASE {
            return None;
        }
        let line = v >> 32;
        let hint = if line == 0 {
            std::ptr::null()
        } else {
            (((self.hint_high.load(Relaxed) << 32) | line) << LINE_SHIFT) as *const u8
        };
        Some((id - VALUE_BASE, hint))
    }

    /// Records `head` as the chain-head hint of `key` if the key still maps
    /// to `tuple`. Lock-free and best effort: a concurrent insert, remove
    /// or resize may drop it, which costs a later reader only the overlap.
    /// `guard`: the caller's pin, as in `get_hinted`.
    pub fn set_hint(&self, key: u64, tuple: u64, head: *const u8, guard: &epoch::Guard) {
        if let Some(f) = self.find(key, guard).filter(|f| f.tuple == tuple) {
            f.set_hint(head);
        }
    }

    /// The stored value for `tuple` with `head`'s line number in its high
    /// half, noting the line's high bits in `hint_high` (stored only when
    /// they change, so writers do not bounce its cache line).
    fn hinted(&self, tuple: u64, head: *const u8) -> u64 {
        debug_assert!(tuple + VALUE_BASE <= ID_BITS);
        let line = head as u64 >> LINE_SHIFT;
        let high = line >> 32;
        if !head.is_null() && self.hint_high.load(Relaxed) != high {
            self.hint_high.store(high, Relaxed);
        }
        ((line & ID_BITS) << 32) | (tuple + VALUE_BASE)
    }

    /// Adds `key -> tuple` with `head` as its chain-head hint (null: none);
    /// `Err(existing)` if the key is present.
    pub fn insert(&self, key: u64, tuple: u64, head: *const u8) -> Result<(), u64> {
        let value = self.hinted(tuple, head);
        let (shard, mut counts) = self.lock(key);
        let guard = epoch::pin();
        let (t, e, v) = locate(shard, key, &guard);
        let i = t.index_of(e);
        match v {
            EMPTY => {
                // (Writers hold the shard lock, so `v` is still current.)
                e.key.store(key, Relaxed);
                t.set_named(i, head);
                e.value.store(value, Release);
                counts.0 += 1;
            }
            v if id_part(v) >= VALUE_BASE => return Err(id_part(v) - VALUE_BASE),
            _ => {
                // Reuse this key's own tombstone.
                t.set_named(i, head);
                e.value.store(value, Release);
                counts.0 += 1;
                counts.1 -= 1;
            }
        }
        // Keep probes short: grow (or clean) past 70% occupancy.
        if (counts.0 + counts.1) * 10 > (t.mask + 1) * 7 {
            let mut fresh = Table::new((counts.0 * 2).max(MIN_CAPACITY), self.names);
            for (i, e) in t.entries.iter().enumerate() {
                let v = e.value.load(Acquire);
                if id_part(v) >= VALUE_BASE {
                    let j = put(&mut fresh, e.key.load(Relaxed), v);
                    if let (Some(to), Some(from)) = (fresh.named.get(j), t.named.get(i)) {
                        to.store(from.load(Relaxed), Relaxed);
                    }
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
        let (shard, mut counts) = self.lock(key);
        let guard = epoch::pin();
        let (t, e, v) = locate(shard, key, &guard);
        if id_part(v) != tuple + VALUE_BASE {
            return false;
        }
        e.value.store(REMOVED, Release);
        t.set_named(t.index_of(e), std::ptr::null());
        counts.0 -= 1;
        counts.1 += 1;
        true
    }

    /// Re-points `key`'s entry at version `v` if the key still maps to
    /// `tuple`, under the shard's writer lock (the entry's hint moves to
    /// `v` with it). False if the key maps elsewhere, or the index names
    /// no versions.
    pub fn name_version(&self, key: u64, tuple: u64, v: *const u8) -> bool {
        if !self.names {
            return false;
        }
        let value = self.hinted(tuple, v);
        let (shard, _counts) = self.lock(key);
        let guard = epoch::pin();
        let (t, e, old) = locate(shard, key, &guard);
        if id_part(old) != tuple + VALUE_BASE {
            return false;
        }
        t.set_named(t.index_of(e), v);
        e.value.store(value, Release);
        true
    }

    /// The version `key`'s entry names (null: none, or the index names no
    /// versions), with its tuple id.
    #[cfg(test)]
    pub fn named(&self, key: u64, guard: &epoch::Guard) -> Option<(u64, *const u8)> {
        let h = hash(key);
        let t = table_ref(self.shard(h).table.load(Acquire, guard));
        let (e, v) = probe(t, h, key);
        let id = id_part(v);
        if id < VALUE_BASE {
            return None;
        }
        let named = t.named.get(t.index_of(e)).map_or(0, |n| n.load(Acquire));
        Some((id - VALUE_BASE, named as *const u8))
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

/// Inserts into a table that is not shared yet; returns the entry's index.
fn put(t: &mut Table, key: u64, value: u64) -> usize {
    let mut i = hash(key) as usize & t.mask;
    while t.entries[i].value.load(Relaxed) != EMPTY {
        i = (i + 1) & t.mask;
    }
    t.entries[i].key.store(key, Relaxed);
    t.entries[i].value.store(value, Relaxed);
    i
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
    use crate::storage::indirection::MAX_TUPLES;
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
                    let r = idx.insert(key, step, std::ptr::null());
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

    /// A hint rewritten through the entry a lookup found: it lands over a
    /// hint set since, and never brings back a key removed since (or lands
    /// on the tuple that took the key over).
    #[test]
    fn hints_set_where_the_lookup_found_them_keep_the_tuple() {
        let idx = IntHashIndex::new();
        let guard = epoch::pin();
        idx.insert(5, 50, fake_head(1)).unwrap();
        let found = idx.find(5, &guard).unwrap();
        assert_eq!((found.tuple, found.hint), (50, fake_head(1)));
        found.set_hint(fake_head(2));
        assert_eq!(idx.get_hinted(5, &guard), Some((50, fake_head(2))));
        // Another hint since the lookup: ours still lands.
        let found = idx.find(5, &guard).unwrap();
        idx.set_hint(5, 50, fake_head(3), &guard);
        found.set_hint(fake_head(4));
        assert_eq!(idx.get_hinted(5, &guard), Some((50, fake_head(4))));
        // Removed since: no revival; re-inserted as another tuple: kept.
        let found = idx.find(5, &guard).unwrap();
        assert!(idx.remove(5, 50));
        found.set_hint(fake_head(5));
        assert_eq!(idx.get(5), None);
        idx.insert(5, 60, fake_head(6)).unwrap();
        found.set_hint(fake_head(7));
        assert_eq!(idx.get_hinted(5, &guard), Some((60, fake_head(6))));
    }

    /// A probe started before its lookup (the prefetch walk's two stages)
    /// answers as a whole lookup would, also for a key that is absent,
    /// and through a resize between the stages it still finds what the
    /// table it started in held.
    #[test]
    fn a_started_probe_finishes_as_a_lookup_does() {
        let idx = IntHashIndex::new();
        let guard = epoch::pin();
        for k in 0..40u64 {
            idx.insert(k, k + 100, fake_head(k)).unwrap();
        }
        let started: Vec<_> = (0..50u64).map(|k| idx.start(k, &guard)).collect();
        for (k, s) in (0..50u64).zip(&started) {
            assert_eq!(s.get_hinted(), idx.get_hinted(k, &guard), "key {k}");
        }
        // Enough inserts to grow every shard's table past its first.
        for k in 1_000..(1_000 + 64 * MIN_CAPACITY as u64) {
            idx.insert(k, k, fake_head(k)).unwrap();
        }
        for (k, s) in (0..40u64).zip(&started) {
            assert_eq!(s.get_hinted(), Some((k + 100, fake_head(k))), "key {k}");
        }
    }

    /// A fake chain head: hints are only prefetched, never dereferenced.
    fn fake_head(n: u64) -> *const u8 {
        (0x7f12_0000_0000u64 + (n % (1 << 30)) * 64) as *const u8
    }

    #[test]
    fn hints_ride_along_without_changing_the_map() {
        let idx = IntHashIndex::new();
        // key -> (tuple, hint)
        let mut model: HashMap<u64, (u64, *const u8)> = HashMap::new();
        let mut x = 99u64;
        for step in 1..30_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Large tuple ids too: the id shares the word with the hint.
            let key = x % 2000;
            let tuple = if step % 5 == 0 {
                MAX_TUPLES - step
            } else {
                step
            };
            match x % 4 {
                0 => {
                    let r = idx.insert(key, tuple, fake_head(step));
                    match model.get(&key) {
                        Some(&(old, _)) => assert_eq!(r, Err(old)),
                        None => {
                            assert_eq!(r, Ok(()));
                            model.insert(key, (tuple, fake_head(step)));
                        }
                    }
                }
                1 => match model.remove(&key) {
                    Some((t, _)) => assert!(idx.remove(key, t)),
                    None => assert!(!idx.remove(key, tuple)),
                },
                _ => {
                    // Setting the hint of a key that maps elsewhere (or not
                    // at all) must change nothing.
                    let target = model.get(&key).map_or(tuple, |e| e.0);
                    let wrong = x.is_multiple_of(3);
                    let t = if wrong { target ^ 1 } else { target };
                    idx.set_hint(key, t, fake_head(step + 7), &epoch::pin());
                    if let Some(e) = model.get_mut(&key).filter(|_| !wrong) {
                        e.1 = fake_head(step + 7);
                    }
                }
            }
            assert_eq!(idx.get(key), model.get(&key).map(|e| e.0));
            assert_eq!(idx.get_hinted(key, &epoch::pin()), model.get(&key).copied());
        }
        // Growth (several resizes above) kept every id and hint.
        for (k, e) in &model {
            assert_eq!(idx.get_hinted(*k, &epoch::pin()), Some(*e));
        }
    }

    #[test]
    fn no_hint_reads_null_and_staleness_compares_the_stored_bits() {
        let idx = IntHashIndex::new();
        idx.insert(1, 10, std::ptr::null()).unwrap();
        assert_eq!(
            idx.get_hinted(1, &epoch::pin()),
            Some((10, std::ptr::null()))
        );
        let a = 0x7f00_0000_1040 as *const u8;
        idx.set_hint(1, 10, a, &epoch::pin());
        let (_, h) = idx.get_hinted(1, &epoch::pin()).unwrap();
        // The hint names the cache line, not the byte.
        assert_eq!(h as u64, 0x7f00_0000_1040 & !63);
        assert!(!hint_is_stale(h, a));
        assert!(hint_is_stale(h, 0x7f00_0000_1080 as *const u8));
        // A head in another 256 GiB window moves `hint_high`: the old hint
        // now reconstructs to a wrong address, yet it is not called stale,
        // so readers do not rewrite hints back and forth.
        let far = 0x10_0000_1040u64 as *const u8;
        idx.insert(2, 20, far).unwrap();
        let (_, h1) = idx.get_hinted(1, &epoch::pin()).unwrap();
        assert_ne!(h1 as u64 >> 6, a as u64 >> 6);
        assert!(!hint_is_stale(h1, a));
        assert_eq!(
            idx.get_hinted(2, &epoch::pin()).unwrap().1 as u64,
            far as u64 & !63
        );
    }

    #[test]
    fn a_racing_hint_never_brings_a_removed_key_back() {
        // The hint is set without the shard lock; a plain store of
        // `hint | id` after a remove would resurrect the key.
        let idx = IntHashIndex::new();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let hints = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    n += 1;
                    for t in 0..4 {
                        idx.set_hint(42, t, fake_head(n), &epoch::pin());
                    }
                    hints.store(n, Relaxed);
                }
            });
            while hints.load(Relaxed) == 0 {
                std::hint::spin_loop();
            }
            // Stops the hinter even when an assertion below fails.
            struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Relaxed);
                }
            }
            let _stop = Stop(&stop);
            for round in 0..200_000u64 {
                let t = round % 4;
                assert_eq!(idx.insert(42, t, std::ptr::null()), Ok(()), "round {round}");
                assert_eq!(idx.get(42), Some(t));
                assert!(idx.remove(42, t));
                assert_eq!(idx.get(42), None, "round {round}: removed key came back");
            }
        });
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
                        idx.insert(key, key + 1, std::ptr::null()).unwrap();
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
