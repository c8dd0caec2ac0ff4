//! The indirection array: tuple id -> head of the version chain (ERMIA).
//!
//! Indexes store a stable tuple id instead of a version pointer, so an
//! update swaps one slot here and touches no index:
//!
//! ```text
//!  index: key ──> tuple 42
//!  segments[42 >> 16][42 & 0xFFFF] : AtomicPtr ──> newest version ──> ...
//! ```
//!
//! The array is two-level so it grows without moving: a fixed directory of
//! segment pointers, each segment allocated (once, by CAS) on first use.
//! Reads are two dependent loads and never lock. An id is counted in the
//! high-water mark only once its segment exists, so a pass over
//! `0..capacity_used` (vacuum) may read every slot it names.
//!
//! Ids are reused: an aborted insert's, a ghost's or an unlinked row's id
//! goes back to a free list through the epoch (`release`), so a thread
//! that found the id pinned never sees it name another row. A reader that
//! keeps an id *across* pins (a lazy range's fetched entries) cannot rely
//! on that, so the array counts the ids it makes reusable
//! ([`IndirectionArray::releases`], bumped before the id is on the free
//! list): an id read while the count was `n` still names the same row as
//! long as the count is `n` after its slot was read.
//!
//! Fresh ids come from `next_id` a chunk at a time (ERMIA §3.3's
//! per-thread allocation): a thread keeps its chunk of each table it
//! inserts into, so `next_id`'s line is written once every [`CHUNK`]
//! inserts instead of by every insert on every thread (the one shared
//! write per TPC-C insert that `--shared-writes` counted, issue 42). Ids
//! of a chunk its thread never uses stay null slots, which every walk
//! over `0..capacity_used` already skips (an id between its allocation
//! and its install looks the same).
//!
//! ```text
//!  next_id ─────────────────────────────> 192
//!  thread A's chunk  [0 ........ 63]      (uses 0..=5 so far)
//!  thread B's chunk  [64 ....... 127]
//!  thread A's next   [128 ...... 191]     (once 0..=63 are used)
//! ```

use super::version::Version;
use crate::sync::atomic::AtomicPtr;
use crate::sync::counted::{AtomicBool, AtomicU64};
use parking_lot::Mutex;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

// Under the model a slot is a shuttle atomic (about 100 bytes, built per
// schedule): a small segment keeps a model's table cheap to create.
#[cfg(not(strata_model))]
const SEG_BITS: u32 = 16;
#[cfg(strata_model)]
const SEG_BITS: u32 = 4;
const SEG_SIZE: usize = 1 << SEG_BITS;

/// Fresh ids a thread takes at a time (see the module doc). A divisor of
/// `SEG_SIZE`, so a chunk never spans two segments. The model build takes
/// one id at a time: its threads share one OS thread's thread-locals, and
/// each allocation stays a step of the model.
#[cfg(not(strata_model))]
pub const CHUNK: u64 = 64;
#[cfg(strata_model)]
pub const CHUNK: u64 = 1;
const DIR_SIZE: usize = 1 << 14;

/// Largest number of tuple ids one table can hand out.
pub const MAX_TUPLES: u64 = (SEG_SIZE * DIR_SIZE) as u64;

/// The slots are `crate::sync`'s (under the model, shuttle's: installs,
/// undos and GC's unlinks are steps of the models).
type Segment = [AtomicPtr<Version>; SEG_SIZE];
/// The directory's entries stay `std`'s: a segment is published once, and
/// is no step of any protocol.
type DirEntry = std::sync::atomic::AtomicPtr<Segment>;

/// Tuple id -> chain head, for one table.
pub struct IndirectionArray {
    dir: Box<[DirEntry]>,
    /// Names this array in the threads' chunk caches: never reused, so a
    /// dropped table's leftover chunk names no later table.
    uid: u64,
    next_id: AtomicU64,
    /// Ids released by aborted inserts, reusable after an epoch (see
    /// `release`), so no reader still holding the id can see a new row.
    free: Arc<Mutex<Vec<u64>>>,
    /// Ids made reusable so far (see the module doc): bumped before each
    /// goes on `free`, so whoever allocates it, and whoever reads the slot
    /// after that, sees the count moved.
    released: Arc<AtomicU64>,
    /// Whether `free` may hold an id: inserts read this line, which only
    /// an aborted insert's release writes, instead of taking the mutex
    /// (a shared line written by every insert, on every thread).
    maybe_free: Arc<AtomicBool>,
}

impl Default for IndirectionArray {
    fn default() -> Self {
        Self::new()
    }
}

impl IndirectionArray {
    pub fn new() -> Self {
        IndirectionArray {
            dir: (0..DIR_SIZE)
                .map(|_| DirEntry::new(ptr::null_mut()))
                .collect(),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            next_id: AtomicU64::new(0),
            free: Arc::new(Mutex::new(Vec::new())),
            released: Arc::new(AtomicU64::new(0)),
            maybe_free: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Hands out an unused tuple id, or None when the table is full.
    pub fn allocate(&self) -> Option<u64> {
        // (A release racing with this check is seen by a later allocate: the
        // id is only reused later, never lost.)
        if self.maybe_free.load(Ordering::Acquire) {
            let mut free = self.free.lock();
            let id = free.pop();
            if free.is_empty() {
                self.maybe_free.store(false, Ordering::Release);
            }
            if id.is_some() {
                return id;
            }
        }
        if CHUNK == 1 {
            return self.reserve().map(|(lo, _)| lo);
        }
        // (`try_with`: a thread-local's destructor that inserts, after this
        // one's is gone, takes a chunk and keeps one id of it.)
        let cached = CHUNKS.try_with(|c| {
            let mut c = c.borrow_mut();
            if let Some(ch) = c.iter_mut().find(|ch| ch.array == self.uid) {
                if ch.next < ch.end {
                    ch.next += 1;
                    return Some(ch.next - 1);
                }
                let (lo, hi) = self.reserve()?;
                (ch.next, ch.end) = (lo + 1, hi);
                return Some(lo);
            }
            let (lo, hi) = self.reserve()?;
            if c.len() == CACHED_TABLES {
                // The oldest table's leftover ids become null slots.
                c.remove(0);
            }
            c.push(Chunk {
                array: self.uid,
                next: lo + 1,
                end: hi,
            });
            Some(lo)
        });
        match cached {
            Ok(id) => id,
            Err(_) => self.reserve().map(|(lo, _)| lo),
        }
    }

    /// Takes the next chunk of fresh ids, `lo..hi`, from `next_id` (fewer
    /// than `CHUNK` at the table's end), or None when the table is full.
    fn reserve(&self) -> Option<(u64, u64)> {
        // The segment first, then the counter: every id below
        // `capacity_used` has its segment, so a vacuum pass (which walks
        // `0..capacity_used` and reads each slot) never meets a counted id
        // whose segment is still being allocated. With a `fetch_add` first,
        // a pass that ran during the first insert's 512 KiB allocation read
        // the slot of tuple 0 through a null segment.
        let mut id = self.next_id.load(Ordering::Acquire);
        loop {
            if id >= MAX_TUPLES {
                return None;
            }
            let hi = (id + CHUNK).min(MAX_TUPLES);
            self.ensure_segment(id);
            self.ensure_segment(hi - 1);
            // Release: whoever reads the new count sees the segment (its
            // pointer was published by a CAS we ordered before this one).
            match self
                .next_id
                .compare_exchange_weak(id, hi, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some((id, hi)),
                Err(now) => id = now,
            }
        }
    }

    /// Returns `id` for reuse once no pinned thread can still hold it.
    pub fn release(&self, id: u64, guard: &crossbeam_epoch::Guard) {
        let (free, maybe) = (Arc::clone(&self.free), Arc::clone(&self.maybe_free));
        let released = Arc::clone(&self.released);
        guard.defer(move || {
            // Before the push: an allocate that pops the id (under the
            // mutex, after the push) and the row it installs come after
            // the bump, so a reader that sees that row's slot sees it.
            released.fetch_add(1, Ordering::SeqCst);
            free.lock().push(id);
            // After the push (and under no lock): an allocate that sees the
            // flag finds the id, or a later one does.
            maybe.store(true, Ordering::Release);
        });
    }

    /// How many ids were made reusable so far (see the module doc). Read
    /// it before finding ids (an index walk) and again after reading their
    /// slots: unchanged, no id found in between names another row.
    #[inline]
    pub fn releases(&self) -> u64 {
        self.released.load(Ordering::SeqCst)
    }

    /// Number of tuple ids handed out (high-water mark). Every id below it
    /// has its segment (see `allocate`), so `slot` may be called on each.
    pub fn capacity_used(&self) -> u64 {
        self.next_id.load(Ordering::Acquire).min(MAX_TUPLES)
    }

    fn ensure_segment(&self, id: u64) {
        let d = &self.dir[(id >> SEG_BITS) as usize];
        if d.load(Ordering::Acquire).is_null() {
            // Built on the heap: a 512 KiB array on the stack could overflow it.
            let seg: Box<[AtomicPtr<Version>]> = (0..SEG_SIZE)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect();
            let seg: Box<Segment> = seg.try_into().expect("segment has SEG_SIZE slots");
            let raw = Box::into_raw(seg);
            if d.compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                // SAFETY: `raw` came from Box::into_raw above and lost the race,
                // so no other thread ever saw it.
                drop(unsafe { Box::from_raw(raw) });
            }
        }
    }

    /// The slot of tuple `id` (which must have been allocated).
    #[inline]
    pub fn slot(&self, id: u64) -> &AtomicPtr<Version> {
        let seg = self.dir[(id >> SEG_BITS) as usize].load(Ordering::Acquire);
        debug_assert!(!seg.is_null(), "tuple id {id} was never allocated");
        // SAFETY: segments are allocated before their first id is handed out
        // (allocate -> ensure_segment) and freed only in Drop, which needs
        // `&mut self`; the index is masked into range.
        unsafe { &(*seg)[(id as usize) & (SEG_SIZE - 1)] }
    }

    /// The chain head of tuple `id`.
    #[inline]
    pub fn head(&self, id: u64) -> *mut Version {
        self.slot(id).load(Ordering::Acquire)
    }

    /// Every allocated tuple id with a non-null head (for drop and stats).
    pub fn for_each_head(&self, mut f: impl FnMut(u64, *mut Version)) {
        for id in 0..self.capacity_used() {
            // Counted ids have their segments (see `allocate`).
            let h = self.head(id);
            if !h.is_null() {
                f(id, h);
            }
        }
    }
}

/// Source of [`IndirectionArray`]'s `uid`s.
static NEXT_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Tables a thread keeps a chunk of at once: enough for TPC-C's four
/// insert targets and a few more; past it the oldest chunk is let go.
const CACHED_TABLES: usize = 8;

/// A thread's unused fresh ids of one table: `next..end`.
struct Chunk {
    array: u64,
    next: u64,
    end: u64,
}

thread_local! {
    static CHUNKS: std::cell::RefCell<Vec<Chunk>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for IndirectionArray {
    fn drop(&mut self) {
        for d in self.dir.iter() {
            let seg = d.load(Ordering::Acquire);
            if seg.is_null() {
                continue;
            }
            // SAFETY: we have exclusive access (`&mut self`); each segment was
            // created by Box::into_raw and is dropped exactly once here.
            let seg = unsafe { Box::from_raw(seg) };
            for slot in seg.iter() {
                // SAFETY: chains are owned by their slot; with exclusive
                // access no reader exists, and each version (and master) is
                // reachable from exactly one chain (GC unlinks before it
                // frees).
                unsafe { super::free_row(slot.load(Ordering::Acquire)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An id an aborted insert released is handed out again after the
    /// epoch, and the fast path (no lock while nothing was released) still
    /// hands out fresh ids afterwards.
    #[test]
    fn released_ids_are_reused_then_fresh_ones_follow() {
        let a = IndirectionArray::new();
        let (x, y) = (a.allocate().unwrap(), a.allocate().unwrap());
        a.release(x, &crossbeam_epoch::pin());
        // Let the epoch run the deferred push (it advances only once every
        // pinned thread has caught up: other tests pin too, some for a
        // whole scan, so wait for the push itself rather than for a count
        // of tries or a time; the bound only turns a lost push into a
        // failure).
        let pushed = crate::test_util::eventually(|| {
            crossbeam_epoch::pin().flush();
            a.maybe_free.load(Ordering::Acquire)
        });
        assert!(pushed, "the released id never came back");
        assert_eq!(a.releases(), 1, "counted before it is on the free list");
        let reused = a.allocate();
        assert_eq!(reused, Some(x));
        assert!(!a.maybe_free.load(Ordering::Acquire));
        assert_eq!(a.allocate(), Some(y + 1));
    }

    /// Whoever sees an id counted may read its slot, as a vacuum pass over
    /// `0..capacity_used` does: a thread spinning on `capacity_used` watches
    /// the first allocation of a fresh array, the one that allocates the
    /// first segment (the window the old `fetch_add`-first order left open
    /// for the whole 512 KiB allocation: `slot` panicked, "tuple id 0 was
    /// never allocated", on the GC thread).
    #[test]
    fn a_counted_tuple_id_has_its_segment() {
        for _ in 0..50 {
            let a = IndirectionArray::new();
            let ready = AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| {
                    ready.store(true, Ordering::SeqCst);
                    while a.capacity_used() == 0 {
                        std::hint::spin_loop();
                    }
                    assert!(a.head(0).is_null());
                });
                while !ready.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                assert_eq!(a.allocate(), Some(0));
            });
        }
    }

    /// Concurrent allocations hand out each id once; each thread draws
    /// from `next_id` once a chunk, so at most one chunk per thread is
    /// left unused.
    #[test]
    fn concurrent_allocations_hand_out_distinct_ids() {
        let a = IndirectionArray::new();
        let mut ids: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        (0..2_000)
                            .map(|_| a.allocate().unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n, "an id was handed out twice");
        let used = a.capacity_used();
        assert!(*ids.last().unwrap() < used);
        assert!(used < 4_000 + 2 * CHUNK, "{used} counted for 4,000 ids");
    }

    /// One thread's inserts move the shared counter once a chunk: the
    /// counter's line is written `CHUNK` times less often (issue 42's
    /// shared-write budget), and a second thread gets its own chunk.
    #[test]
    fn a_thread_takes_fresh_ids_a_chunk_at_a_time() {
        let a = IndirectionArray::new();
        let first: Vec<u64> = (0..CHUNK).map(|_| a.allocate().unwrap()).collect();
        assert_eq!(first, (0..CHUNK).collect::<Vec<_>>());
        assert_eq!(a.capacity_used(), CHUNK, "one draw for the whole chunk");
        let other = std::thread::scope(|s| s.spawn(|| a.allocate().unwrap()).join().unwrap());
        assert_eq!(other, CHUNK, "the other thread's chunk starts after ours");
        assert_eq!(a.allocate(), Some(2 * CHUNK), "ours was used up");
        assert_eq!(a.capacity_used(), 3 * CHUNK);
        // A second table's chunk is kept apart from the first's.
        let b = IndirectionArray::new();
        assert_eq!(b.allocate(), Some(0));
        assert_eq!(a.allocate(), Some(2 * CHUNK + 1));
    }
}
