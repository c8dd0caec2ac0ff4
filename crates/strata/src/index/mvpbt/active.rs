//! P_N, MV-PBT's writable partition: the engine's B+-tree
//! ([`crate::index::btree`], byte keys) from partition keys
//! (`ident ++ !seq`, `record.rs`) to records.
//!
//! ```text
//!  BTree::new(true):  partition key ──> u64 = Arc::into_raw(record)
//!                     (order words + owned bytes)     └ the tree's count of the record
//!  readers: pinned; a value read from a validated leaf is borrowed as
//!           a RecRef (an Arc that owns no count) until the guard goes
//!  writers: take / remove_if / upsert hand a value that left the tree
//!           to one caller, which gives its count back through the epoch
//! ```
//!
//! **Why a B+-tree.** P_N was a `crossbeam-skiplist` map of boxed byte
//! keys. A profile of TPC-C through MV-PBT put its search and `memcmp`
//! at 15.6% of the time, against about 7% for the B+-tree of the standard
//! secondary index: a pointer chase per level, a node allocation per
//! record, and every comparison a `memcmp` of the partition keys, which
//! share their identity's bytes. The engine's tree compares two order
//! words first and the bytes only on a tie, holds 32 keys a node, and is
//! what the standard index runs on, so MV-PBT against the B+-tree (the
//! paper's Fig. 14b) compares designs, not containers. The paper's P_N is
//! a B+-tree too (in its buffer).
//!
//! **Measured** (callgrind, instructions per committed transaction of
//! `bench tpcc --threads 1 --warehouses 1 --mix np --duration 4
//! --warmup 0`, collecting in `TpccWorker::step`, on `071bf5c`): 76.9K
//! with the skip list, 76.0K on the tree (75.8K once
//! `key::order_word_whole` copied text in one chunk); the standard
//! index 72.0K (71.85K). At `--items
//! 10000 --customers 300` 63.2K against 63.5K: there a scan of a few
//! records pays more to set up the tree's iterator (its bounds' order
//! words, a descent) than the skip list paid to seek. Wall-clock A/Bs
//! were within this VM's noise. The gap left to the standard index is
//! MV-PBT's own work: the commit-time re-scan by identity and
//! Algorithm 3 in scans (`docs/REPRODUCTION.md`, Fig. 14b).
//!
//! **Invariant (owned here): a record P_N hands out is alive while the
//! reader that got it is pinned.** The tree owns one strong count of each
//! record it holds. A value leaves the tree under its leaf's lock and is
//! handed to one caller ([`BTree::take`], [`BTree::remove_if`],
//! [`BTree::upsert`]: `index/btree/tests.rs`,
//! `upserts_and_takes_hand_each_value_back_once`), which gives the count
//! back through the epoch ([`release`]), so a reader pinned when it read
//! the value (every read here pins before it reads) still has the record
//! until it unpins; a reader that keeps one clones its `Arc`. Dropping
//! P_N (`&mut`: no reader left, readers reach it only through its `Arc`)
//! gives back the counts of the records still in it at once. Tests: this
//! file's, `records_outlive_pinned_readers` and
//! `every_record_is_freed_once`.

use super::record::Record;
use crate::index::btree::{BTree, Key};
use crossbeam_epoch::{self as epoch, Guard};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Bound, Deref};
use std::sync::Arc;

use super::super::secondary::Gauge;
use super::partitions::record_bytes;

/// The writable partition P_N (see the module doc).
pub(crate) struct Active {
    tree: BTree,
    /// The database's memory gauge (with a limit set): each record counts
    /// [`super::partitions::record_bytes`] of its key while it is here,
    /// added as it comes in, subtracted as it leaves (a removal, or the
    /// map's drop for those left).
    gauge: Option<Gauge>,
}

/// A record as a tree value: the tree's strong count of it.
fn into_value(r: Arc<Record>) -> u64 {
    Arc::into_raw(r) as u64
}

/// Gives back the count of a record that left the tree, once every thread
/// pinned now has unpinned.
///
/// # Safety
/// `v` came from [`into_value`], no slot of the tree names it any more,
/// and the tree handed it to this caller alone.
unsafe fn release(v: u64, g: &Guard) {
    // SAFETY: the count is the tree's (the caller's contract), given back
    // once; readers that read `v` from a slot were pinned then, and the
    // epoch runs this only after each of them unpinned.
    unsafe { g.defer_unchecked(move || drop(Arc::from_raw(v as *const Record))) };
}

/// A record P_N holds, borrowed while the guard `'g` pins: an `Arc` that
/// owns no count (never dropped); a reader that keeps the record clones it.
pub(crate) struct RecRef<'g> {
    arc: ManuallyDrop<Arc<Record>>,
    _pinned: PhantomData<&'g Guard>,
}

impl Deref for RecRef<'_> {
    type Target = Arc<Record>;

    #[inline]
    fn deref(&self) -> &Arc<Record> {
        &self.arc
    }
}

/// The record a tree value names.
///
/// # Safety
/// `v` was read from the tree (a validated read) while `_g` pinned.
#[inline]
unsafe fn borrow<'g>(v: u64, _g: &'g Guard) -> RecRef<'g> {
    // SAFETY: `v` came from `into_value`; the tree's count of it is given
    // back only through the epoch after the value left the tree, so not
    // before `_g` unpins (module doc). No count is taken or dropped here.
    let arc = ManuallyDrop::new(unsafe { Arc::from_raw(v as *const Record) });
    RecRef {
        arc,
        _pinned: PhantomData,
    }
}

impl Active {
    pub(crate) fn new(gauge: Option<Gauge>) -> Active {
        Active {
            tree: BTree::new(true),
            gauge,
        }
    }

    /// The gauge's count for a record of `key` that came in (`true`) or
    /// left.
    #[inline]
    fn count(&self, key: &[u8], came: bool) {
        if let Some(g) = &self.gauge {
            let n = record_bytes(key) as u64;
            if came {
                g.add(n, 0);
            } else {
                g.add(0, n);
            }
        }
    }

    /// Adds `rec` under `key`. A record present under it is replaced (and
    /// released): none is in practice, keys carry sequence numbers.
    pub(super) fn insert(&self, key: &[u8], rec: Arc<Record>) {
        let g = epoch::pin();
        match self.tree.upsert(&Key::Bytes(key), into_value(rec)) {
            // SAFETY: `upsert` replaced `old` in its slot under the leaf's
            // lock and handed it to this caller alone. (Same key: the
            // gauge's count stays.)
            Some(old) => unsafe { release(old, &g) },
            None => self.count(key, true),
        }
    }

    /// The record under `key`.
    pub(super) fn get(&self, key: &[u8]) -> Option<Arc<Record>> {
        let g = epoch::pin();
        let v = self.tree.get(&Key::Bytes(key))?;
        // SAFETY: read from the tree while `g` pinned (the tree's own pin
        // is nested in it).
        Some(Arc::clone(&*unsafe { borrow(v, &g) }))
    }

    /// Removes the record under `key`; whether there was one.
    pub(super) fn remove(&self, key: &[u8]) -> bool {
        let g = epoch::pin();
        let Some(v) = self.tree.take(&Key::Bytes(key)) else {
            return false;
        };
        // SAFETY: `take` removed `v` under the leaf's lock and handed it to
        // this caller alone.
        unsafe { release(v, &g) };
        self.count(key, false);
        true
    }

    /// Removes `key`'s entry if it still holds `rec` (a record this caller
    /// holds, so its address names no other record); whether this call
    /// removed it.
    pub(super) fn remove_if(&self, key: &[u8], rec: &Arc<Record>) -> bool {
        let v = Arc::as_ptr(rec) as u64;
        let g = epoch::pin();
        if !self.tree.remove_if(&Key::Bytes(key), v) {
            return false;
        }
        // SAFETY: `remove_if` removed `v` under the leaf's lock and told
        // this caller alone that it did.
        unsafe { release(v, &g) };
        self.count(key, false);
        true
    }

    /// The records within the bounds, in key order, borrowed while `guard`
    /// pins.
    pub(super) fn range<'g>(
        &'g self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        guard: &'g Guard,
    ) -> impl Iterator<Item = (&'g [u8], RecRef<'g>)> + 'g {
        let (lo, hi) = (lo.map(Key::Bytes), hi.map(Key::Bytes));
        self.tree
            .iter(lo.as_ref(), hi.as_ref(), guard)
            // SAFETY: the iterator reads validated leaves while `guard`
            // pins, and its items live no longer than the guard.
            .map(move |(k, v)| (k, unsafe { borrow(v, guard) }))
    }

    /// The lower fence of the leaf holding the records just below `hi`
    /// (`BTree::fence_below`): where a batch from the high end may start.
    pub(super) fn fence_below(&self, hi: Bound<&[u8]>, guard: &Guard) -> Option<Box<[u8]>> {
        let hi = hi.map(Key::Bytes);
        match self.tree.fence_below(hi.as_ref(), guard)? {
            crate::index::key::EncodedKey::Bytes(b) => Some(Box::from(&b[..])),
            crate::index::key::EncodedKey::U64(_) => None, // a byte tree
        }
    }

    /// Records held (walks the leaves: for statistics).
    pub(super) fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether P_N holds no record (walks to the first).
    pub(super) fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        let g = epoch::pin();
        let mut left = 0u64;
        for (k, v) in self.tree.iter(Bound::Unbounded, Bound::Unbounded, &g) {
            left += record_bytes(k) as u64;
            // SAFETY: `&mut self`: no reader is left (readers reach P_N
            // through its `Arc` and keep a record only as a clone), and
            // each value still in the tree holds the tree's one count.
            drop(unsafe { Arc::from_raw(v as *const Record) });
        }
        // The records left go with the map: the gauge counted each.
        if let Some(gauge) = &self.gauge {
            gauge.add(0, left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::RecordType;
    use super::*;
    use std::sync::Weak;

    fn rec(i: u64) -> Arc<Record> {
        Arc::new(Record::new(
            RecordType::Regular,
            i,
            i,
            std::ptr::null_mut(),
            0,
        ))
    }

    fn key(i: u64) -> Vec<u8> {
        // A shared prefix longer than the order words, so comparisons
        // reach the bytes, as an identity's records do.
        let mut k = b"an-identity-longer-than-two-words/".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        k
    }

    /// Runs the epoch on until `done` holds (other tests' threads pin
    /// briefly; a pinned one holds it back for a while).
    fn collect_until(done: impl Fn() -> bool) -> bool {
        for _ in 0..100_000 {
            if done() {
                return true;
            }
            epoch::pin().flush();
            std::thread::yield_now();
        }
        done()
    }

    /// A record removed, replaced or purged while a reader is pinned stays
    /// alive until that reader unpins, then goes (the epoch frees it).
    #[test]
    fn records_outlive_pinned_readers() {
        let p = Active::new(None);
        let recs: Vec<Arc<Record>> = (0..64).map(rec).collect();
        let weak: Vec<Weak<Record>> = recs.iter().map(Arc::downgrade).collect();
        for (i, r) in recs.into_iter().enumerate() {
            p.insert(&key(i as u64), r);
        }
        let reader = epoch::pin();
        let held: Vec<RecRef<'_>> = p
            .range(Bound::Unbounded, Bound::Unbounded, &reader)
            .map(|(_, r)| r)
            .collect();
        assert_eq!(held.len(), 64);
        // Another thread takes every record out, three ways.
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..64u64 {
                    match i % 3 {
                        0 => assert!(p.remove(&key(i))),
                        1 => p.insert(&key(i), rec(1000 + i)),
                        _ => {
                            let r = p.get(&key(i)).expect("present");
                            assert!(p.remove_if(&key(i), &r));
                        }
                    }
                }
                for _ in 0..1000 {
                    epoch::pin().flush();
                }
            });
        });
        // Our pin holds the epoch back: the records are alive and read.
        for _ in 0..1000 {
            epoch::pin().flush();
        }
        for (i, r) in held.iter().enumerate() {
            assert!(
                weak[i].strong_count() > 0,
                "record {i} freed under a reader"
            );
            assert_eq!(r.tuple, i as u64);
        }
        drop(held);
        drop(reader);
        assert!(
            collect_until(|| weak.iter().all(|w| w.strong_count() == 0)),
            "records left the tree but were never freed"
        );
        assert_eq!(p.len(), 64 / 3);
    }

    /// No leak, no double free: every record P_N took is freed once,
    /// whether it was removed, replaced, or still held when P_N dropped;
    /// a record a reader cloned lives on after P_N.
    #[test]
    fn every_record_is_freed_once() {
        let p = Active::new(None);
        let mut weak = Vec::new();
        for i in 0..5000u64 {
            let r = rec(i);
            weak.push(Arc::downgrade(&r));
            p.insert(&key(i % 3000), r);
        }
        for i in (0..3000).step_by(2) {
            assert!(p.remove(&key(i)));
            assert!(!p.remove(&key(i)));
        }
        assert_eq!(p.len(), 1500);
        // Key 1999 took record 1999, then 4999 in its place.
        let kept = p.get(&key(1999)).expect("present");
        drop(p);
        let alive = || weak.iter().filter(|w| w.strong_count() > 0).count();
        assert!(collect_until(|| alive() == 1), "{} records alive", alive());
        assert_eq!(Arc::strong_count(&kept), 1);
        assert_eq!(kept.stamp(), 4999);
    }
}
