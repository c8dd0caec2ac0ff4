//! The ordered indexes' map (the primary index's ordered side and the
//! secondary indexes' entries): a B+-tree with optimistic lock coupling (Leis et al., "The ART of practical synchronization", DaMoN
//! 2016, and LeanStore's `BTreeOLC`), keys held as words.
//!
//! Readers take no lock and write nothing: they read a node's version,
//! read what they need, and check the version again; a writer locks one
//! node (two while it splits) by setting the version's lock bit and bumps
//! the version when it unlocks, so a reader that raced a writer sees the
//! version change and starts over. The skip list this replaces paid a
//! dependent pointer chase per level and a node allocation per entry; a
//! node here holds 32 keys in two contiguous arrays.
//!
//! ```text
//!                    [ k7 | k15 ]                 inner: keys k_i, children c_0..c_n;
//!                   /     |      \                c_i holds keys in [k_{i-1}, k_i)
//!      [k1 .. k7] ─> [k8 .. k15] ─> [k16 ..]      leaves: keys, values, right sibling
//!
//!  a key = (word0, word1, full)   word: the key itself (integers) or
//!                                 `key::order_word_whole` of its bytes;
//!                                 full: the bytes (owned, one allocation),
//!                                 compared only when the words tie, or
//!                                 WHOLE where the word is the key
//!                                 (`BTree::new_whole_words`)
//! ```
//!
//! Invariants this module owns:
//! - **Keys move right, or left only into empty ranges.** Splits move
//!   keys into a new right sibling. A removal that empties a leaf takes it
//!   out of the tree (`unlink_empty_leaf`), and with it the ancestors it
//!   leaves without keys: their range joins their left neighbour's, that
//!   neighbour's last leaf links past the leaf, and the nodes are freed
//!   through the epoch (every tree operation pins), the leaf keeping its
//!   own link so that a scan standing on it goes on. A first child whose
//!   parent still holds keys stays until the parent empties, so a range
//!   emptied for good (a queue's, TPC-C's new orders) leaves an empty leaf
//!   at the tree's left edge, not a trail. So a range scan that follows
//!   right-sibling links from the leaf its lower bound fell in sees every
//!   key present from the scan's start to its end: a key it has not
//!   reached can only have moved further right, into a leaf the links
//!   lead to, and a leaf that leaves held no key. This is the property
//!   `scc::TreeIndex` lacked (`primary.rs`: its range could start in a
//!   leaf emptied under it and stop there).
//! - **A validated read is a snapshot of the node.** Every field is an
//!   atomic word (racing reads are defined); a reader acts on what it read
//!   only after the node's version is unchanged (`validate`), and bounds
//!   a count it read racily before indexing with it.
//! - **A full key a reader may compare is alive.** Leaf slots own their
//!   full keys; inner separators own copies of theirs (the leaf's may be
//!   removed while the separator stays). A removed key is freed through
//!   the epoch (`defer`), and every slot a removal or split vacates is
//!   zeroed, so a reader pinned while it reads a slot never follows a
//!   freed key (a zero one it skips: its validation is bound to fail). A
//!   key held as its word alone has nothing to free; a tie with a key that
//!   is not decodes the word.
//! - **Uniqueness under the leaf's lock.** An insert checks for its key
//!   and adds it in one write section of the leaf the key belongs to;
//!   `insert` returns the value present instead, so of racing inserters
//!   of a key exactly one is told it inserted (only the caller whose value
//!   went in may remove the entry on abort).
//!
//! - **A named version moves with its key.** A tree built
//!   `naming_versions` (a primary index of physical pointers with no hash
//!   side) keeps each leaf entry's version in a per-leaf array beside the
//!   values; every shift, split and removal that moves a value moves its
//!   named version under the same lock, and `name_version` rewrites one
//!   under the leaf's lock (`tests::named_versions_move_with_their_keys`).
//!
//! Splits happen on the way down (a full node met by an insert is split
//! first, with its parent locked, then the insert starts over), so a
//! parent always has room for the separator of a child's split.
//! Under the model build (`crate::sync`) every word is a shuttle atomic
//! and a node holds four keys, so `tests/btree_model.rs` interleaves
//! splits, removals and scans step by step.

use super::key::{key_of_whole_word, order_word_whole, ByteKey, EncodedKey};
use crate::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::sync::atomic::{fence, AtomicPtr, AtomicU64};
use crate::sync::{broken, Break};
use crossbeam_epoch::Guard;
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::mem::ManuallyDrop;
use std::ops::Bound;

/// Keys a node holds (a leaf's entries, an inner node's separators). Under
/// the model, four: a few inserts split leaves, inner nodes and the root.
const CAP: usize = if cfg!(strata_model) { 4 } else { 32 };
/// The version's lock bit; unlocking adds it again (the version moves on).
const LOCKED: u64 = 0b10;

/// A key in a node: its two order words and its full bytes (a leaked
/// [`Full`], 0 in trees of integer keys).
struct Slot {
    w: [AtomicU64; 2],
    full: AtomicU64,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            w: [AtomicU64::new(0), AtomicU64::new(0)],
            full: AtomicU64::new(0),
        }
    }
}

/// A key as read from a slot (possibly torn; see `Node::validate`).
#[derive(Clone, Copy, Default)]
struct Raw {
    w: [u64; 2],
    full: u64,
}

impl Slot {
    #[inline(always)]
    fn load(&self) -> Raw {
        Raw {
            w: [self.w[0].load(Relaxed), self.w[1].load(Relaxed)],
            full: self.full.load(Relaxed),
        }
    }

    #[inline]
    fn store(&self, r: Raw) {
        self.w[0].store(r.w[0], Relaxed);
        self.w[1].store(r.w[1], Relaxed);
        self.full.store(r.full, Relaxed);
    }
}

/// A slot's full key: length and bytes in one allocation behind a thin
/// pointer (`triomphe`; its count is unused: a key has one owner).
type Full = triomphe::ThinArc<(), u8>;

/// A new full key of `b`, as a slot word.
fn full_new(b: &[u8]) -> u64 {
    Full::into_raw(Full::from_header_and_slice((), b)) as u64
}

/// A slot's `full` in a tree that keeps words holding their keys whole
/// (`BTree::new_whole_words`): no bytes allocated, the word is the key.
const WHOLE: u64 = 1;

/// The bytes of a full key (none for 0 or [`WHOLE`]).
///
/// # Safety
/// `p` is 0, [`WHOLE`], or came from [`full_new`] and is not freed for `'a`.
unsafe fn full_bytes<'a>(p: u64) -> &'a [u8] {
    if p <= WHOLE {
        return &[];
    }
    // SAFETY: the caller's: `p` names a live key; not dropped here.
    let a = ManuallyDrop::new(unsafe { Full::from_raw(p as *const std::ffi::c_void) });
    let s: &[u8] = &a.slice;
    // SAFETY: the bytes live in the allocation, alive for 'a.
    unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) }
}

/// Frees a full key.
///
/// # Safety
/// `p` came from [`full_new`], is freed once, and nothing reads it after.
unsafe fn full_free(p: u64) {
    // SAFETY: the caller's.
    drop(unsafe { Full::from_raw(p as *const std::ffi::c_void) });
}

/// A key to look for: its words and, for byte keys, its bytes.
#[derive(Clone, Copy)]
struct Probe<'a> {
    w: [u64; 2],
    bytes: Option<&'a [u8]>,
    /// The word holds the key whole (`key::order_word_whole`).
    whole: bool,
}

impl<'a> Probe<'a> {
    fn int(k: u64) -> Probe<'static> {
        Probe {
            w: [k, 0],
            bytes: None,
            whole: true,
        }
    }

    fn bytes(b: &'a [u8]) -> Probe<'a> {
        let (w, whole) = order_word_whole(b);
        Probe {
            w,
            bytes: Some(b),
            whole,
        }
    }

    /// The slot key `r` against this probe (`Less`: `r` sorts first).
    // (The search loops' helpers are always inline, with the byte
    // comparison out of line: with plain hints LLVM inlined them into
    // `put` in one build and not in the next, as unrelated code changed,
    // about 1,000 instructions a TPC-C transaction either way.)
    #[inline(always)]
    fn cmp_raw(&self, r: &Raw) -> Ordering {
        match r.w.cmp(&self.w) {
            Ordering::Equal => match self.bytes {
                None => Ordering::Equal,
                // A zero `full` is a slot being written: any answer will
                // do, the node's validation fails.
                Some(_) if r.full == 0 => Ordering::Less,
                // Both words hold their keys whole: one word, one key.
                Some(_) if r.full == WHOLE && self.whole => Ordering::Equal,
                Some(b) => cmp_full(r, b),
            },
            o => o,
        }
    }
}

/// Slot key `r`, whose word equals the probe's, against the probe's bytes.
#[inline(never)]
fn cmp_full(r: &Raw, b: &[u8]) -> Ordering {
    if r.full == WHOLE {
        return key_of_whole_word(r.w)[..].cmp(b);
    }
    // SAFETY: a nonzero `full` read from a slot is a key some node owned
    // while this thread was pinned (the callers hold a guard), and keys
    // are freed only through the epoch after the slots naming them are
    // zeroed or overwritten (module doc, third invariant).
    unsafe { full_bytes(r.full) }.cmp(b)
}

struct Node {
    version: AtomicU64,
    count: AtomicU64,
    leaf: bool,
    keys: [Slot; CAP],
    /// A leaf's values, or an inner node's children (`count + 1`).
    vals: [AtomicU64; CAP + 1],
    /// A leaf's right sibling.
    next: AtomicPtr<Node>,
    /// The version each of a leaf's entries names, in a tree built
    /// [`BTree::naming_versions`] (physical pointers); None elsewhere, so a
    /// tree of logical pointers pays a word per node.
    named: Option<Box<[AtomicU64; CAP]>>,
}

impl Node {
    fn new(leaf: bool, names: bool) -> Box<Node> {
        Box::new(Node {
            version: AtomicU64::new(0),
            count: AtomicU64::new(0),
            leaf,
            keys: std::array::from_fn(|_| Slot::default()),
            vals: std::array::from_fn(|_| AtomicU64::new(0)),
            next: AtomicPtr::new(std::ptr::null_mut()),
            named: (leaf && names).then(|| Box::new(std::array::from_fn(|_| AtomicU64::new(0)))),
        })
    }

    /// Moves leaf entry `from`'s named version to `to` (a leaf's entries
    /// move with their keys: a gap opened, a removal closed, a split).
    /// Locked.
    #[inline]
    fn move_named(&self, from: usize, to: &Node, to_slot: usize) {
        if let (Some(a), Some(b)) = (&self.named, &to.named) {
            b[to_slot].store(a[from].load(Relaxed), Relaxed);
        }
    }

    /// Sets leaf entry `i`'s named version. Locked.
    #[inline]
    fn set_named(&self, i: usize, v: u64) {
        if let Some(a) = &self.named {
            a[i].store(v, Relaxed);
        }
    }

    /// Waits out a writer; the version to validate against.
    #[inline]
    fn read_lock(&self) -> u64 {
        let backoff = crate::sync::Backoff::new();
        loop {
            let v = self.version.load(Acquire);
            if v & LOCKED == 0 {
                return v;
            }
            backoff.snooze();
        }
    }

    /// Whether nothing changed the node since `read_lock` returned `v`
    /// (the seqlock reader's closing check: the fence keeps the data
    /// reads before it).
    #[inline]
    fn validate(&self, v: u64) -> bool {
        fence(Acquire);
        self.version.load(Relaxed) == v
    }

    /// Locks the node if it is still at `v`.
    #[inline]
    fn upgrade(&self, v: u64) -> bool {
        let ok = self
            .version
            .compare_exchange(v, v + LOCKED, Acquire, Relaxed)
            .is_ok();
        // The data writes that follow must not be seen before the lock
        // bit (pairs with `validate`'s fence).
        fence(Release);
        ok
    }

    #[inline]
    fn unlock(&self) {
        self.version.fetch_add(LOCKED, Release);
    }

    /// The key count, bounded (a racing read can see anything).
    #[inline]
    fn count(&self) -> usize {
        (self.count.load(Relaxed) as usize).min(CAP)
    }

    #[inline]
    fn val(&self, i: usize) -> u64 {
        self.vals[i].load(Relaxed)
    }

    /// The first of the `n` keys at or above `p`, and whether it is `p`.
    #[inline(always)]
    fn lower_bound(&self, n: usize, p: &Probe) -> (usize, bool) {
        let lo = self.partition(0, n, |r| p.cmp_raw(r) == Ordering::Less);
        let eq = lo < n && p.cmp_raw(&self.keys[lo].load()) == Ordering::Equal;
        (lo, eq)
    }

    /// The first of the keys `from..n` for which `before` fails, where
    /// `before` holds for a prefix of them (sorted keys against a bound).
    #[inline(always)]
    fn partition(&self, from: usize, n: usize, before: impl Fn(&Raw) -> bool) -> usize {
        let (mut lo, mut hi) = (from, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if before(&self.keys[mid].load()) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// How many of the `n` keys are at or below `p`: an inner node's
    /// child for `p` (child i holds keys from separator i - 1 on, below
    /// separator i).
    #[inline(always)]
    fn upper_bound(&self, n: usize, p: &Probe) -> usize {
        self.partition(0, n, |r| p.cmp_raw(r) != Ordering::Greater)
    }

    /// Child `i` of this inner node (read at `v`), read-locked; None if
    /// this node changed meanwhile (start over).
    #[inline]
    fn child(&self, v: u64, i: usize) -> Option<(&Node, u64)> {
        let c = self.val(i) as *const Node;
        if !self.validate(v) {
            return None;
        }
        let c = node(c);
        let cv = c.read_lock();
        // The child may have split between our reads: its parent (this
        // node) then changed too.
        self.validate(v).then_some((c, cv))
    }

    /// Opens a gap at `i` (keys and values from `i` move up by one; an
    /// inner node's children from `i + 1`). Locked.
    fn shift_up(&self, i: usize, n: usize) {
        let extra = usize::from(!self.leaf);
        for j in (i..n).rev() {
            self.keys[j + 1].store(self.keys[j].load());
            self.vals[j + 1 + extra].store(self.val(j + extra), Relaxed);
            self.move_named(j, self, j + 1);
        }
    }
}

/// Reads a node pointer read from a validated node.
#[inline]
fn node<'t>(p: *const Node) -> &'t Node {
    // SAFETY: this pointer came from the root or from a node whose version
    // validated after the read, so it named a node of this tree when read;
    // a node leaves the tree (an emptied leaf) only through the epoch, and
    // every caller is pinned (first invariant), so it is not freed yet.
    unsafe { &*p }
}

/// A B+-tree of word keys (see the module doc) to `u64` values.
pub struct BTree {
    root: AtomicPtr<Node>,
    /// Whether keys carry full bytes (owned by the slots).
    bytes: bool,
    /// Whether a byte key its word holds whole is kept as the word alone
    /// (no allocation; the iterator then yields no bytes for it).
    whole_words: bool,
    /// Whether leaves keep a named version per entry
    /// ([`BTree::naming_versions`]).
    names: bool,
}

impl BTree {
    /// A tree of integer keys (`bytes: false`, probes by `Probe::int`) or
    /// of byte keys (`Probe::bytes`).
    pub fn new(bytes: bool) -> BTree {
        BTree {
            root: AtomicPtr::new(Box::into_raw(Node::new(true, false))),
            bytes,
            whole_words: false,
            names: false,
        }
    }

    /// A tree of byte keys that keeps each key its order word holds whole
    /// (`key::order_word_whole`: every TPC-C key) as the word alone: an
    /// insert allocates nothing but its share of a leaf. For callers that
    /// never ask the iterator for keys (the primary index's ranges read
    /// values only): those keys come back empty.
    pub fn new_whole_words() -> BTree {
        BTree {
            root: AtomicPtr::new(Box::into_raw(Node::new(true, false))),
            bytes: true,
            whole_words: true,
            names: false,
        }
    }

    /// This (new, empty) tree with a named version beside each entry
    /// (physical pointers on a primary index with no hash side:
    /// `index::primary`). [`BTree::name_version`] sets one under its
    /// leaf's lock, an index write like an insert's.
    pub fn naming_versions(mut self) -> BTree {
        debug_assert!(self.is_empty(), "set before the first insert");
        self.names = true;
        let root = std::mem::replace(self.root.get_mut(), Box::into_raw(Node::new(true, true)));
        // SAFETY: the tree is new and owned here: nothing else names its
        // (empty, leaf) root.
        drop(unsafe { Box::from_raw(root) });
        self
    }

    /// Whether entries name versions ([`BTree::naming_versions`]).
    pub fn names_versions(&self) -> bool {
        self.names
    }

    /// Names version `version` in `k`'s entry if it maps to `value`, under
    /// the leaf's lock (readers of the leaf start over, as after any
    /// write). False if `k` maps elsewhere or the tree names no versions.
    pub fn name_version(&self, k: &Key, value: u64, version: u64) -> bool {
        if !self.names {
            return false;
        }
        let p = self.probe(k);
        let _g = crossbeam_epoch::pin();
        loop {
            let (leaf, v) = self.find_leaf(Some(&p));
            let (i, eq) = leaf.lower_bound(leaf.count(), &p);
            if !eq || leaf.val(i) != value {
                if leaf.validate(v) {
                    return false;
                }
                continue;
            }
            if !leaf.upgrade(v) {
                continue;
            }
            leaf.set_named(i, version);
            leaf.unlock();
            return true;
        }
    }

    /// `k`'s value and the version its entry names (0: none).
    #[cfg(test)]
    pub fn named(&self, k: &Key) -> Option<(u64, u64)> {
        let p = self.probe(k);
        let _g = crossbeam_epoch::pin();
        loop {
            let (leaf, v) = self.find_leaf(Some(&p));
            let (i, eq) = leaf.lower_bound(leaf.count(), &p);
            let got = eq.then(|| {
                let named = leaf.named.as_ref().map_or(0, |a| a[i].load(Relaxed));
                (leaf.val(i), named)
            });
            if leaf.validate(v) {
                return got;
            }
        }
    }

    /// The root, read-locked, and its version (the root pointer checked
    /// again: a root that split before we read its version is a stale
    /// root covering part of the keys).
    #[inline]
    fn root(&self) -> Option<(&Node, u64)> {
        let r = self.root.load(Acquire);
        let n = node(r);
        let v = n.read_lock();
        (self.root.load(Acquire) == r).then_some((n, v))
    }

    /// The leaf `p` belongs in (None: the leftmost), read-locked.
    fn find_leaf(&self, p: Option<&Probe>) -> (&Node, u64) {
        'restart: loop {
            let Some((mut n, mut v)) = self.root() else {
                continue;
            };
            while !n.leaf {
                let i = p.map_or(0, |p| n.upper_bound(n.count(), p));
                let Some(c) = n.child(v, i) else {
                    continue 'restart;
                };
                (n, v) = c;
            }
            return (n, v);
        }
    }

    fn probe<'a>(&self, k: &Key<'a>) -> Probe<'a> {
        debug_assert_eq!(
            matches!(k, Key::Bytes(_)),
            self.bytes,
            "a tree takes the kind of key it was made for"
        );
        match *k {
            Key::Int(i) => Probe::int(i),
            Key::Bytes(b) => Probe::bytes(b),
        }
    }

    /// The value of `k` (a primary index with a hash side reads through
    /// that).
    pub fn get(&self, k: &Key) -> Option<u64> {
        let p = self.probe(k);
        let _g = crossbeam_epoch::pin();
        loop {
            let (leaf, v) = self.find_leaf(Some(&p));
            let (i, eq) = leaf.lower_bound(leaf.count(), &p);
            let val = eq.then(|| leaf.val(i));
            if leaf.validate(v) {
                return val;
            }
        }
    }

    /// Adds `k -> value` unless `k` is present; Err(the value present).
    pub fn insert(&self, k: &Key, value: u64) -> Result<(), u64> {
        self.put::<false>(k, value, 0)
    }

    /// [`BTree::insert`], the entry naming `version` in a tree that names
    /// versions ([`BTree::naming_versions`]).
    pub fn insert_named(&self, k: &Key, value: u64, version: u64) -> Result<(), u64> {
        self.put::<false>(k, value, version)
    }

    /// Maps `k` to `value`, present or not; the value it replaced. The
    /// swap is made under the leaf's lock, so of racing upserts and
    /// removals of a key each value that went in is handed back to one
    /// caller at most (an owner of what values point at frees each once).
    pub fn upsert(&self, k: &Key, value: u64) -> Option<u64> {
        self.put::<true>(k, value, 0).err()
    }

    /// Adds `k -> value`; if `k` is present, Err(the value present), and
    /// with `REPLACE` that value is replaced. (A constant: an insert's code
    /// is the one it was before upserts, whose branch cost a primary
    /// insert the inlining of its key comparisons: +2% instructions a
    /// TPC-C transaction under callgrind.)
    fn put<const REPLACE: bool>(&self, k: &Key, value: u64, version: u64) -> Result<(), u64> {
        let p = self.probe(k);
        let g = crossbeam_epoch::pin();
        'restart: loop {
            let Some((mut n, mut v)) = self.root() else {
                continue;
            };
            let mut parent: Option<(&Node, u64, usize)> = None;
            loop {
                let count = n.count();
                if count == CAP {
                    // Split first (with the parent, which has room: it
                    // was split on the way down if full), then start over.
                    self.split(n, v, parent, &p);
                    continue 'restart;
                }
                if n.leaf {
                    break;
                }
                let i = n.upper_bound(count, &p);
                let Some(c) = n.child(v, i) else {
                    continue 'restart;
                };
                parent = Some((n, v, i));
                (n, v) = c;
            }
            // A leaf with room, at `v`: unchanged since we chose it, so
            // still the leaf of `p` (keys only move right by a split,
            // which would have moved `v`).
            if !n.upgrade(v) {
                continue 'restart;
            }
            let count = n.count();
            debug_assert!(count < CAP, "a leaf at its validated version has room");
            let (i, eq) = n.lower_bound(count, &p);
            if eq {
                let present = n.val(i);
                if REPLACE {
                    n.vals[i].store(value, Relaxed);
                    n.set_named(i, version);
                }
                n.unlock();
                return Err(present);
            }
            n.shift_up(i, count);
            n.keys[i].store(self.own(&p));
            n.vals[i].store(value, Relaxed);
            n.set_named(i, version);
            n.count.store(count as u64 + 1, Relaxed);
            n.unlock();
            drop(g);
            return Ok(());
        }
    }

    /// A slot key for `p`, owning a copy of its bytes (none if its word
    /// holds it whole and this tree keeps such words alone).
    fn own(&self, p: &Probe) -> Raw {
        let full = match p.bytes {
            None => 0,
            Some(_) if p.whole && self.whole_words => WHOLE,
            Some(b) => full_new(b),
        };
        Raw { w: p.w, full }
    }

    /// A copy of a slot key that owns its own bytes (a separator).
    fn copy(&self, r: Raw) -> Raw {
        let full = if r.full <= WHOLE {
            r.full
        } else {
            // SAFETY: called under the node's write lock on one of its
            // own slots: the key is owned by the node and alive.
            full_new(unsafe { full_bytes(r.full) })
        };
        Raw { w: r.w, full }
    }

    /// Splits the full node `n` (at `v`) under `parent` (at its version,
    /// the child's index in it), or under a new root; nothing if a version
    /// moved (the caller starts over either way).
    fn split(&self, n: &Node, v: u64, parent: Option<(&Node, u64, usize)>, p: &Probe) {
        if let Some((pn, pv, _)) = parent {
            if !pn.upgrade(pv) {
                return;
            }
        }
        if !n.upgrade(v) {
            if let Some((pn, ..)) = parent {
                pn.unlock();
            }
            return;
        }
        let is_root = std::ptr::eq(self.root.load(Relaxed), n);
        if parent.is_none() && !is_root {
            // The root split under us: `n` is no longer the root.
            n.unlock();
            return;
        }
        let count = n.count();
        let right = Node::new(n.leaf, self.names);
        // Split where the key goes when that is in the upper half, and the
        // key goes left: an append (past every key: a growing key) keeps
        // the node full and starts the next one empty, and a key appended
        // to one range among others (TPC-C's twenty districts, each
        // growing its own orders) keeps going into its range's node, which
        // fills, instead of into a sibling that starts with the next
        // range's keys (half-full leaves). Elsewhere, halves.
        let i = if n.leaf {
            n.lower_bound(count, p).0
        } else {
            n.upper_bound(count, p)
        };
        let m = match (i >= count / 2, n.leaf) {
            (true, true) => i,
            (true, false) => i.min(count - 1),
            (false, _) => count / 2,
        };
        let sep = if n.leaf {
            // Left keeps [0, m), right takes [m, count); the separator is
            // a copy of the right's first key (or, if it takes none, of
            // the key going in: at or below everything the right will hold).
            for j in m..count {
                right.keys[j - m].store(n.keys[j].load());
                right.vals[j - m].store(n.val(j), Relaxed);
                n.move_named(j, &right, j - m);
            }
            right.count.store((count - m) as u64, Relaxed);
            right.next.store(n.next.load(Relaxed), Relaxed);
            if m < count {
                self.copy(n.keys[m].load())
            } else {
                self.own(p)
            }
        } else {
            // Left keeps keys [0, m) and children [0, m]; key m goes up
            // (its bytes with it); right takes keys (m, count) and
            // children [m + 1, count].
            for j in m + 1..count {
                right.keys[j - m - 1].store(n.keys[j].load());
            }
            for j in m + 1..=count {
                right.vals[j - m - 1].store(n.val(j), Relaxed);
            }
            right.count.store((count - m - 1) as u64, Relaxed);
            n.keys[m].load()
        };
        let right = Box::into_raw(right);
        // Publish the right node before the left stops holding its keys:
        // a scan that read the left before the split follows `next` to the
        // old sibling and has those keys from its snapshot already.
        if n.leaf {
            n.next.store(right, Release);
        }
        n.count.store(m as u64, Relaxed);
        // The vacated slots' keys belong to the right node or the parent
        // now; zeroed, the left owns none of them.
        for j in m..count {
            n.keys[j].store(Raw::default());
        }
        match parent {
            Some((pn, _, i)) => {
                let pc = pn.count();
                pn.shift_up(i, pc);
                pn.keys[i].store(sep);
                pn.vals[i + 1].store(right as u64, Relaxed);
                pn.count.store(pc as u64 + 1, Relaxed);
                pn.unlock();
            }
            None => {
                let root = Node::new(false, self.names);
                root.keys[0].store(sep);
                root.vals[0].store(n as *const Node as u64, Relaxed);
                root.vals[1].store(right as u64, Relaxed);
                root.count.store(1, Relaxed);
                self.root.store(Box::into_raw(root), Release);
            }
        }
        n.unlock();
    }

    /// Removes `k` if it maps to `value`.
    pub fn remove_if(&self, k: &Key, value: u64) -> bool {
        self.remove_where(k, |v| v == value).is_some()
    }

    /// Removes `k`, whatever it maps to.
    pub fn remove(&self, k: &Key) -> bool {
        self.remove_where(k, |_| true).is_some()
    }

    /// Removes `k`; the value it mapped to. Taken under the leaf's lock:
    /// of racing takes (and upserts) of a key, one caller gets the value.
    pub fn take(&self, k: &Key) -> Option<u64> {
        self.remove_where(k, |_| true)
    }

    /// Removes `k` if its value `matches`; the value removed.
    fn remove_where(&self, k: &Key, matches: impl Fn(u64) -> bool) -> Option<u64> {
        let p = self.probe(k);
        let g = crossbeam_epoch::pin();
        loop {
            let (leaf, v) = self.find_leaf(Some(&p));
            let (i, eq) = leaf.lower_bound(leaf.count(), &p);
            if !eq || !matches(leaf.val(i)) {
                if leaf.validate(v) {
                    return None;
                }
                continue;
            }
            if !leaf.upgrade(v) {
                continue;
            }
            let count = leaf.count();
            // Locked at the version `matches` was asked at: the same value.
            let value = leaf.val(i);
            let full = leaf.keys[i].load().full;
            for j in i..count - 1 {
                leaf.keys[j].store(leaf.keys[j + 1].load());
                leaf.vals[j].store(leaf.val(j + 1), Relaxed);
                leaf.move_named(j + 1, leaf, j);
            }
            leaf.keys[count - 1].store(Raw::default());
            leaf.count.store(count as u64 - 1, Relaxed);
            leaf.unlock();
            if full > WHOLE {
                // SAFETY: the key was this slot's own (leaf slots own
                // their bytes), no slot names it any more, and readers
                // that may still hold it are pinned: the epoch frees it
                // after them.
                unsafe { g.defer_unchecked(move || full_free(full)) };
            }
            if count == 1 {
                self.unlink_empty_leaf(&p, &g);
            }
            return Some(value);
        }
    }

    /// Takes the leaf of `p`, if it is empty, out of the tree, with the
    /// ancestors it leaves empty: the highest node X on its path whose
    /// subtree holds no key (X and every node below it down to the leaf
    /// have no separator, so one child each) and which has a left sibling
    /// S under its parent Y. X's range joins S's, the last leaf Q of S's
    /// subtree links past X's leaf, and X's nodes are freed through the
    /// epoch:
    ///
    /// ```text
    ///  Y  [ .. s_{j-1} | s_j .. ]              [ .. s_j .. ]
    ///          /       |      \                   /       \
    ///        S ..      X        ..      ->      S ..        ..
    ///       ..  \      |                       ..  \
    ///      [Q: a b] ─> [L: ] ─> [R: x]        [Q: a b] ──────> [R: x]
    ///                  (L.next still R: a scan standing on L goes on)
    /// ```
    ///
    /// Y, X's nodes down to L, and Q are locked together, each a try at
    /// the version the descents validated that gives up on a moved one (no
    /// lock is waited for, so none is held while waiting); Q's link naming
    /// L under Q's lock is what makes Q its left neighbour. Keys of X's
    /// range go into S's subtree from now on: they move left, but only
    /// into ranges that held no key, so a scan still sees every key
    /// present throughout it. A writer or reader that reached a node of X
    /// before finds its version moved and starts over from the root, which
    /// no longer leads there. A first child (no left sibling under its
    /// parent) with a parent that keeps other children stays: the tree's
    /// left edge, and a parent whose first leaf emptied while others hold
    /// keys, each keep one empty leaf until that parent empties too.
    fn unlink_empty_leaf(&self, p: &Probe, g: &Guard) {
        // A few tries against racing writers, and a try one level up
        // after an unlink that left its parent a single child; an empty
        // leaf left behind is only a cost (the next removal that empties
        // a leaf near it tries again).
        'retry: for _ in 0..8 {
            let Some((mut n, mut v)) = self.root() else {
                continue;
            };
            // The path: (node, version, index of the next node in it).
            let mut path: SmallVec<[(&Node, u64, usize); 8]> = SmallVec::new();
            while !n.leaf {
                let i = n.upper_bound(n.count(), p);
                let Some(c) = n.child(v, i) else {
                    continue 'retry;
                };
                path.push((n, v, i));
                (n, v) = c;
            }
            if n.count() != 0 {
                return;
            }
            // X = path[k + 1..] and the leaf, under Y = path[k] at j >= 1.
            let mut k = path.len();
            loop {
                let Some(up) = k.checked_sub(1) else {
                    return; // the tree's left edge, or the root leaf
                };
                let (y, _, j) = path[up];
                if j >= 1 {
                    k = up;
                    break;
                }
                if y.count() != 0 || up == 0 {
                    return; // a first child beside keys, or the root's
                }
                k = up;
            }
            let (y, yv, j) = path[k];
            // Q: the last leaf of S = Y's child j - 1.
            let Some((mut q, mut qv)) = y.child(yv, j - 1) else {
                continue;
            };
            while !q.leaf {
                let last = q.count();
                let Some(c) = q.child(qv, last) else {
                    continue 'retry;
                };
                (q, qv) = c;
            }
            // Lock Y, X's nodes down to the leaf, then Q.
            let mut held: SmallVec<[&Node; 8]> = SmallVec::new();
            let ok = std::iter::once((y, yv))
                .chain(path[k + 1..].iter().map(|&(x, xv, _)| (x, xv)))
                .chain([(n, v), (q, qv)])
                .all(|(x, xv)| {
                    let locked = x.upgrade(xv);
                    if locked {
                        held.push(x);
                    }
                    locked
                });
            // Validated under the locks: X's nodes have no separator and
            // the leaf no key (versions unchanged since the descent read
            // them), and Q links to the leaf.
            let linked = ok && std::ptr::eq(q.next.load(Relaxed), n);
            if !linked {
                held.iter().rev().for_each(|x| x.unlock());
                if ok {
                    return; // Q is not L's neighbour: leave it
                }
                continue;
            }
            q.next.store(n.next.load(Relaxed), Release);
            let yc = y.count();
            let sep = y.keys[j - 1].load();
            for i in j - 1..yc - 1 {
                y.keys[i].store(y.keys[i + 1].load());
            }
            for i in j..yc {
                y.vals[i].store(y.val(i + 1), Relaxed);
            }
            y.keys[yc - 1].store(Raw::default());
            y.vals[yc].store(0, Relaxed);
            y.count.store(yc as u64 - 1, Relaxed);
            held.iter().rev().for_each(|x| x.unlock());
            for x in path[k + 1..].iter().map(|&(x, ..)| x).chain([n]) {
                let dead = x as *const Node as *mut Node;
                // SAFETY: no node of the tree points at `dead` any more
                // (Y dropped X, X's nodes point only at each other, Q
                // skips the leaf; all changed under their locks), every
                // thread that may still hold it is pinned (all tree
                // operations pin), so the epoch frees it after them; its
                // slots own nothing (an empty leaf's are zeroed, a node
                // without separators holds no key).
                unsafe { g.defer_unchecked(move || drop(Box::from_raw(dead))) };
            }
            if sep.full > WHOLE {
                // SAFETY: the separator was Y's own copy, no slot names
                // it now, and readers that compared it are pinned.
                unsafe { g.defer_unchecked(move || full_free(sep.full)) };
            }
            if yc > 1 {
                return;
            }
            // Y has one child left now, perhaps an empty one: Y's subtree
            // may go as a whole (the next descent, through Y, finds out).
        }
    }

    /// Calls `f(value)` for each key within the bounds, in key order.
    pub fn range(&self, lo: Bound<&Key>, hi: Bound<&Key>, mut f: impl FnMut(u64)) {
        let g = crossbeam_epoch::pin();
        self.iter(lo, hi, &g).for_each(|(_, v)| f(v));
    }

    /// The entries within the bounds, in key order, as (key bytes, value)
    /// (the bytes are empty in a tree of integer keys). The keys are
    /// borrowed for as long as `guard` pins: a removed key is freed only
    /// through the epoch.
    pub fn iter<'g>(&'g self, lo: Bound<&Key>, hi: Bound<&Key>, guard: &'g Guard) -> Iter<'g> {
        let lo = map_bound(lo, |k| self.probe(k).owned());
        let hi = map_bound(hi, |k| self.probe(k).owned());
        let start = match &lo {
            Bound::Included(p) | Bound::Excluded(p) => Some(p.probe()),
            Bound::Unbounded => None,
        };
        let (leaf, _) = self.find_leaf(start.as_ref());
        Iter {
            tree: self,
            leaf: Some(leaf),
            lo,
            hi,
            buf: [(Raw::default(), 0); CAP],
            at: 0,
            k: 0,
            _guard: guard,
        }
    }

    /// The lower fence of the leaf that holds the keys just below `hi`:
    /// the separator left of the descent's path at its deepest turn, so
    /// that every key in `[fence, hi)` (`hi` too, if included) was in that
    /// leaf when the descent passed, and the keys below the fence are in
    /// leaves to its left. None: the path ran down the tree's left edge.
    /// A reverse walk ([`super::primary::PrimaryIndex::batch_from_high`])
    /// steps leftwards with it: iterate `[fence, hi)` forwards (keys only
    /// move right, so the forward walk from the fence finds every key
    /// present meanwhile), then go on below the fence. The tree keeps no
    /// left links: a reverse step is a descent.
    ///
    /// ```text
    ///            [ 10 | 20 ]          fence_below(< 25) = 20: [20, 25) is in c2
    ///           /     |     \         fence_below(< 20) = 10: [10, 20) is in c1
    ///        c0      c1      c2       fence_below(< 10) = None: all in c0
    /// ```
    pub fn fence_below(&self, hi: Bound<&Key>, guard: &Guard) -> Option<EncodedKey> {
        let _ = guard; // the separator's bytes live while the caller pins
        let p = match hi {
            Bound::Included(k) | Bound::Excluded(k) => Some(self.probe(k)),
            Bound::Unbounded => None,
        };
        let strict = matches!(hi, Bound::Excluded(_));
        'restart: loop {
            let Some((mut n, mut v)) = self.root() else {
                continue;
            };
            let mut fence = None;
            while !n.leaf {
                let c = n.count();
                // The child holding the keys just below `hi`: past every
                // separator below it (at or below it, when included).
                let i = match &p {
                    None => c,
                    Some(p) if strict => n.partition(0, c, |r| p.cmp_raw(r) == Ordering::Less),
                    Some(p) => n.upper_bound(c, p),
                };
                if i > 0 {
                    fence = Some(n.keys[i - 1].load());
                }
                // `child` validates this node: the separator read above
                // is one the node held.
                let Some(next) = n.child(v, i) else {
                    continue 'restart;
                };
                (n, v) = next;
            }
            // SAFETY: a validated separator, its bytes (an inner node's own
            // copy) freed only through the epoch, and the caller pins.
            return fence.map(|r| unsafe { self.key_of_raw(&r) });
        }
    }

    /// The key a validated slot holds, owned.
    ///
    /// # Safety
    /// `r` was read from a validated node while the caller pinned.
    unsafe fn key_of_raw(&self, r: &Raw) -> EncodedKey {
        if !self.bytes {
            EncodedKey::U64(r.w[0])
        } else if r.full == WHOLE {
            EncodedKey::Bytes(key_of_whole_word(r.w))
        } else {
            // SAFETY: the caller's.
            EncodedKey::Bytes(ByteKey::from_slice(unsafe { full_bytes(r.full) }))
        }
    }

    /// Whether the tree has no entries (walks to the first one).
    pub fn is_empty(&self) -> bool {
        let g = crossbeam_epoch::pin();
        self.iter(Bound::Unbounded, Bound::Unbounded, &g)
            .next()
            .is_none()
    }

    /// Entries (walks the leaves; for statistics).
    pub fn len(&self) -> usize {
        let mut n = 0;
        self.range(Bound::Unbounded, Bound::Unbounded, |_| n += 1);
        n
    }
}

impl BTree {
    /// (leaves, entries, height): how full the leaves are (tests; the
    /// tree may change meanwhile, so only for a quiet tree).
    #[cfg(test)]
    fn shape(&self) -> (usize, usize, usize) {
        let mut n = node(self.root.load(Acquire));
        let mut height = 1;
        while !n.leaf {
            n = node(n.val(0) as *const Node);
            height += 1;
        }
        let (mut leaves, mut entries) = (0, 0);
        let mut l: *const Node = n;
        while !l.is_null() {
            leaves += 1;
            entries += node(l).count();
            l = node(l).next.load(Acquire);
        }
        (leaves, entries, height)
    }
}

/// A bound held by an iterator: the words and a copy of the bytes.
struct OwnedProbe {
    w: [u64; 2],
    bytes: Option<ByteKey>,
    whole: bool,
}

impl Probe<'_> {
    fn owned(&self) -> OwnedProbe {
        OwnedProbe {
            w: self.w,
            bytes: self.bytes.map(ByteKey::from_slice),
            whole: self.whole,
        }
    }
}

impl OwnedProbe {
    fn probe(&self) -> Probe<'_> {
        Probe {
            w: self.w,
            bytes: self.bytes.as_deref(),
            whole: self.whole,
        }
    }
}

/// [`BTree::iter`]: one validated snapshot of a leaf at a time.
pub struct Iter<'g> {
    tree: &'g BTree,
    leaf: Option<&'g Node>,
    lo: Bound<OwnedProbe>,
    hi: Bound<OwnedProbe>,
    /// The snapshot's entries in bounds: (key, value).
    buf: [(Raw, u64); CAP],
    at: usize,
    k: usize,
    _guard: &'g Guard,
}

impl Iter<'_> {
    /// Takes one validated snapshot of the current leaf: its keys in
    /// bounds, and where to go next (its sibling, or nowhere once a key
    /// passed `hi`). A leaf that split meanwhile is read again: keys only
    /// move right, so what left it is in a leaf its links lead to.
    fn fill(&mut self, leaf: &Node) -> Option<*const Node> {
        let above_lo = |r: &Raw| match &self.lo {
            Bound::Included(p) => p.probe().cmp_raw(r) != Ordering::Less,
            Bound::Excluded(p) => p.probe().cmp_raw(r) == Ordering::Greater,
            Bound::Unbounded => true,
        };
        let below_hi = |r: &Raw| match &self.hi {
            Bound::Included(p) => p.probe().cmp_raw(r) != Ordering::Greater,
            Bound::Excluded(p) => p.probe().cmp_raw(r) == Ordering::Less,
            Bound::Unbounded => true,
        };
        loop {
            let v = leaf.read_lock();
            let n = leaf.count();
            // The keys in bounds are one run of the sorted keys: two
            // binary searches find it, each settled by one comparison when
            // the whole leaf is on one side. Comparing every key with both
            // bounds cost a look at the key's bytes (a miss) for each one
            // whose words tie with a bound, as a prefix scan's keys do.
            let start = if n == 0 || above_lo(&leaf.keys[0].load()) {
                0
            } else {
                leaf.partition(0, n, |r| !above_lo(r))
            };
            let end = if start == n || below_hi(&leaf.keys[n - 1].load()) {
                n
            } else {
                leaf.partition(start, n, below_hi)
            };
            for (i, b) in (start..end).zip(self.buf.iter_mut()) {
                *b = (leaf.keys[i].load(), leaf.val(i));
            }
            let (k, done) = (end - start, end < n);
            let next = leaf.next.load(Acquire);
            if leaf.validate(v) || broken(Break::TreeScanTrustsItsRead) {
                (self.at, self.k) = (0, k);
                return (!done && !next.is_null()).then_some(next as *const Node);
            }
        }
    }
}

impl Iter<'_> {
    /// The next entry of the snapshot, as read.
    #[inline]
    fn next_raw(&mut self) -> Option<(Raw, u64)> {
        while self.at == self.k {
            let leaf = self.leaf.take()?;
            self.leaf = self.fill(leaf).map(node);
        }
        let e = self.buf[self.at];
        self.at += 1;
        Some(e)
    }

    /// The next entry with its key owned, whatever the tree keeps of it
    /// (integer, word or bytes): for walks that resume from where they
    /// stopped ([`BTree::fence_below`]'s caller).
    pub fn next_keyed(&mut self) -> Option<(EncodedKey, u64)> {
        let (r, v) = self.next_raw()?;
        // SAFETY: `r` was in a validated snapshot of a leaf, read while
        // `_guard` pinned.
        Some((unsafe { self.tree.key_of_raw(&r) }, v))
    }
}

impl<'g> Iterator for Iter<'g> {
    type Item = (&'g [u8], u64);

    fn next(&mut self) -> Option<Self::Item> {
        let (r, v) = self.next_raw()?;
        // SAFETY: `r.full` was in a validated snapshot of a leaf, read
        // while `_guard` pinned: freed only through the epoch, after 'g.
        Some((unsafe { full_bytes(r.full) }, v))
    }
}

fn map_bound<T, U>(b: Bound<T>, f: impl Fn(T) -> U) -> Bound<U> {
    match b {
        Bound::Included(x) => Bound::Included(f(x)),
        Bound::Excluded(x) => Bound::Excluded(f(x)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A key handed to the tree: an integer (trees of integer keys) or
/// encoded bytes (trees of byte keys).
#[derive(Clone, Copy, Debug)]
pub enum Key<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

impl Drop for BTree {
    fn drop(&mut self) {
        // Plain reads through `&mut` (`get_mut`): no reader is left, and
        // under the model a drop may run after shuttle's execution ended
        // (a failing model unwinds), where an atomic load would panic.
        fn free(n: *mut Node) {
            // SAFETY: `&mut BTree`: no reader or writer is left, and each
            // node is reached once (every node has one parent).
            let mut b = unsafe { Box::from_raw(n) };
            let count = (*b.count.get_mut() as usize).min(CAP);
            for s in &mut b.keys[..count] {
                let f = *s.full.get_mut();
                if f > WHOLE {
                    // SAFETY: each slot below the count owns its key.
                    unsafe { full_free(f) };
                }
            }
            if !b.leaf {
                for c in &mut b.vals[..=count] {
                    free(*c.get_mut() as *mut Node);
                }
            }
        }
        free(*self.root.get_mut());
    }
}

#[cfg(test)]
mod tests;
