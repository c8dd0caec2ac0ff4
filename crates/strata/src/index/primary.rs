//! The ordered primary index: encoded key -> tuple id.
//!
//! A concurrent B+-tree (`scc::TreeIndex`, lock-free reads) maps each
//! primary key to its row's tuple id; versions are found through the
//! indirection array, so updates never touch the index (logical pointers by
//! tuple id). A single-`Int` key is stored as a `u64`, other keys as
//! order-preserving byte strings ([`super::key`]).
//!
//! Entries are added by the inserting transaction before it commits and
//! removed again if it aborts; visibility is decided by the versions, never
//! by the index.
//!
//! Integer keys are also kept in a hash index ([`super::hash`]) that serves
//! point lookups: a B+-tree lookup in a 1M-row table costs several dependent
//! cache misses (`examples/index_lookup.rs` measures both). The tree stays
//! the source of truth for uniqueness and order: the hash entry is added
//! after the tree entry and removed before it, so a key found in the hash
//! is in the tree.

use super::hash::IntHashIndex;
use super::key::EncodedKey;
use scc::{Guard, TreeIndex};
use std::ops::Bound;

pub enum PrimaryIndex {
    Int(TreeIndex<u64, u64>, IntHashIndex),
    Bytes(TreeIndex<Box<[u8]>, u64>),
}

fn as_u64(k: &EncodedKey) -> u64 {
    match k {
        EncodedKey::U64(u) => *u,
        EncodedKey::Bytes(_) => unreachable!("byte key given to an integer-keyed index"),
    }
}

fn as_bytes(k: &EncodedKey) -> &[u8] {
    match k {
        EncodedKey::Bytes(b) => b,
        EncodedKey::U64(_) => unreachable!("integer key given to a byte-keyed index"),
    }
}

fn map_bound<'a, T, U: 'a>(b: &'a Bound<T>, f: impl Fn(&'a T) -> U) -> Bound<U> {
    match b {
        Bound::Included(x) => Bound::Included(f(x)),
        Bound::Excluded(x) => Bound::Excluded(f(x)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl PrimaryIndex {
    pub fn new(int_key: bool) -> Self {
        if int_key {
            PrimaryIndex::Int(TreeIndex::new(), IntHashIndex::new())
        } else {
            PrimaryIndex::Bytes(TreeIndex::new())
        }
    }

    /// The tuple id stored for `key`.
    #[inline]
    pub fn get(&self, key: &EncodedKey) -> Option<u64> {
        match self {
            PrimaryIndex::Int(_, h) => h.get(as_u64(key)),
            PrimaryIndex::Bytes(t) => t.peek(as_bytes(key), &Guard::new()).copied(),
        }
    }

    /// Adds `key -> tuple`; if the key is already there, returns the id it
    /// maps to (`u64::MAX` if that entry vanished meanwhile).
    pub fn insert(&self, key: &EncodedKey, tuple: u64) -> Result<(), u64> {
        let guard = Guard::new();
        match self {
            PrimaryIndex::Int(t, h) => {
                let k = as_u64(key);
                t.insert_sync(k, tuple)
                    .map_err(|_| t.peek(&k, &guard).copied().unwrap_or(u64::MAX))?;
                // The tree admitted the key, so no other hash entry exists.
                let _ = h.insert(k, tuple);
                Ok(())
            }
            PrimaryIndex::Bytes(t) => {
                let k = as_bytes(key);
                t.insert_sync(k.into(), tuple)
                    .map_err(|_| t.peek(k, &guard).copied().unwrap_or(u64::MAX))
            }
        }
    }

    /// Removes `key` if it still maps to `tuple`.
    pub fn remove(&self, key: &EncodedKey, tuple: u64) -> bool {
        match self {
            PrimaryIndex::Int(t, h) => {
                let k = as_u64(key);
                h.remove(k, tuple);
                t.remove_if_sync(&k, |v| *v == tuple)
            }
            PrimaryIndex::Bytes(t) => t.remove_if_sync(as_bytes(key), |v| *v == tuple),
        }
    }

    /// Tuple ids of keys in `[lo, hi]`-style bounds, in key order.
    pub fn range(&self, lo: &Bound<EncodedKey>, hi: &Bound<EncodedKey>, out: &mut Vec<u64>) {
        let guard = Guard::new();
        match self {
            PrimaryIndex::Int(t, _) => {
                let r = (map_bound(lo, as_u64), map_bound(hi, as_u64));
                out.extend(t.range(r, &guard).map(|(_, v)| *v));
            }
            PrimaryIndex::Bytes(t) => {
                let r: (Bound<&[u8]>, Bound<&[u8]>) =
                    (map_bound(lo, as_bytes), map_bound(hi, as_bytes));
                out.extend(t.range::<[u8], _>(r, &guard).map(|(_, v)| *v));
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            PrimaryIndex::Int(t, _) => t.len(),
            PrimaryIndex::Bytes(t) => t.len(),
        }
    }

    /// Approximate bytes per entry, for `Stats` (key + value + node overhead).
    pub fn approx_entry_bytes(&self) -> usize {
        match self {
            PrimaryIndex::Int(..) => (16 + 8) + (16 + 8),
            PrimaryIndex::Bytes(_) => 24 + 8 + 16,
        }
    }
}
