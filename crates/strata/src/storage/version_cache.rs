//! A per-thread cache of freed version blocks of the global allocator.
//!
//! Every update allocates a version and, a GC pass later, frees an older
//! one of the same size. Through the global allocator both ends touch the
//! block itself: a free writes the allocator's free-list link into it, an
//! allocation reads that link back. The block went cold while it waited
//! for its epoch, so each is a cache miss on the commit path. Here a freed
//! block's address goes onto a small per-thread stack (by block size) and
//! the next allocation of that size pops it, touching only the stack:
//!
//! ```text
//!  free(v, 224 B) ──> this thread's stack[224]: [p1, p2, ..., v]   (v untouched)
//!  alloc(224 B)   <── pop v                      (v's lines are written, not read)
//!  stack full / no stack for the size ──> the global allocator
//! ```
//!
//! Blocks keep their global-allocator layout, so whichever thread ends up
//! holding one may hand it back to the global allocator; a thread that
//! exits returns its stacks. Memory spaces ([`super::space`]) do not use
//! this cache: their point is to measure the spaces themselves.
//!
//! One thread may free what others allocated: the transaction-level
//! collector's pass leader (`gc::transaction_level`) or a background GC
//! thread frees every thread's old versions. Its stacks then fill while
//! the others' stay empty, and both sides would go to the global
//! allocator for every block (the 50%-update YCSB mix lost 12% of its
//! throughput at 2 threads when one thread took over every pass). So a
//! full stack hands its top half, as one batch, to a pool shared by all
//! threads, and an empty one takes a batch of its size from there: a lock
//! per [`BATCH`] blocks, not per block, as a transfer cache in `tcmalloc`
//! or `mimalloc` does:
//!
//! ```text
//!  leader: free ... stack[224] full ──> top half ──> POOL: [(224 B, 512 blocks), ...]
//!  other:  alloc    stack[224] empty <── a batch of 224 B <──┘
//! ```
//!
//! Invariant this module owns: a block is in at most one place (a
//! thread's stack, a batch of the pool, or in use), and a block of layout
//! `l` is handed out only for `l`.

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Block sizes cached per thread (a table's rows and tombstones are one
/// or two sizes; other sizes go straight to the global allocator).
const SIZES: usize = 4;
/// Blocks kept per size: a GC pass frees a few hundred at most.
const DEPTH: usize = 1024;

struct Stack {
    layout: Option<Layout>,
    blocks: Vec<*mut u8>,
}

struct Cache([Stack; SIZES]);

impl Drop for Cache {
    fn drop(&mut self) {
        for s in &mut self.0 {
            if let Some(l) = s.layout {
                for p in s.blocks.drain(..) {
                    // SAFETY: every cached block came from `alloc(l)` with
                    // the layout its stack records and is owned by the cache.
                    unsafe { dealloc(p, l) };
                }
            }
        }
    }
}

/// Blocks a pool batch holds: half a stack.
const BATCH: usize = DEPTH / 2;
/// Batches the pool keeps; a full stack's half beyond them goes to the
/// global allocator (the pool holds at most this many times [`BATCH`]
/// blocks).
const POOL_BATCHES: usize = 16;

/// A full stack's top half, waiting for a thread whose stack ran dry.
struct Batch {
    layout: Layout,
    blocks: Vec<*mut u8>,
}

/// See the module doc.
struct Pool(Vec<Batch>);

// SAFETY: the blocks are plain memory of the global allocator owned by
// the pool (no thread holds them while they are here), so any thread may
// take them; the pool is only reached under its mutex.
unsafe impl Send for Pool {}

static POOL: parking_lot::Mutex<Pool> = parking_lot::Mutex::new(Pool(Vec::new()));
/// The sizes the pool holds batches of, a bit per size (`size_bit`),
/// written under its lock: an empty stack looks here before it takes the
/// lock, so a thread whose sizes the pool lacks (or one that frees as much
/// as it allocates) writes no shared line. A bit two sizes share costs a
/// lock taken for nothing, never a wrong block.
static POOLED: AtomicU64 = AtomicU64::new(0);

fn size_bit(l: Layout) -> u64 {
    1 << ((l.size() / 8) % 64)
}

impl Pool {
    /// Republishes `POOLED` (under the lock).
    fn publish(&self) {
        let bits = self.0.iter().fold(0, |m, b| m | size_bit(b.layout));
        POOLED.store(bits, Relaxed);
    }
}

/// Hands `batch` to the pool, or its blocks to the global allocator if
/// the pool is full.
fn put_batch(batch: Batch) {
    let rejected = {
        let mut pool = POOL.lock();
        crate::sync::wrote(&POOL);
        if pool.0.len() < POOL_BATCHES {
            pool.0.push(batch);
            pool.publish();
            None
        } else {
            Some(batch)
        }
    };
    if let Some(b) = rejected {
        for p in b.blocks {
            // SAFETY: every pooled block came from `alloc(b.layout)` and is
            // owned by the batch.
            unsafe { dealloc(p, b.layout) };
        }
    }
}

/// A batch of blocks of layout `l` from the pool, if it has one.
fn take_batch(l: Layout) -> Option<Vec<*mut u8>> {
    if POOLED.load(Relaxed) & size_bit(l) == 0 {
        return None;
    }
    let mut pool = POOL.lock();
    crate::sync::wrote(&POOL);
    let i = pool.0.iter().position(|b| b.layout == l)?;
    let b = pool.0.swap_remove(i);
    pool.publish();
    Some(b.blocks)
}

/// The stack for `l`; if none has it yet, a free one claimed for it with
/// the blocks `claim` gives (`None`: not claimed). (Always inline: every
/// version allocated and freed looks its stack up, and LLVM's choice to
/// call it moved with unrelated code, about 90 instructions a YCSB
/// transaction when it did.)
#[inline(always)]
fn stack_for(
    c: &mut Cache,
    l: Layout,
    claim: impl FnOnce() -> Option<Vec<*mut u8>>,
) -> Option<&mut Stack> {
    let i = match c.0.iter().position(|s| s.layout == Some(l)) {
        Some(i) => i,
        None => {
            let i = c.0.iter().position(|s| s.layout.is_none())?;
            let blocks = claim()?;
            c.0[i].layout = Some(l);
            c.0[i].blocks.reserve(DEPTH);
            c.0[i].blocks.extend(blocks);
            i
        }
    };
    Some(&mut c.0[i])
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache(std::array::from_fn(|_| Stack {
        layout: None,
        blocks: Vec::new(),
    })));
}

/// A block for `l` (null if the global allocator fails).
///
/// # Safety
/// `l` has non-zero size.
#[inline]
pub unsafe fn alloc_block(l: Layout) -> *mut u8 {
    let cached = CACHE
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            // A size this thread has not freed takes a stack only for a
            // batch the pool holds (an inserted table's rows, never freed,
            // would take one for nothing).
            let s = stack_for(&mut c, l, || take_batch(l))?;
            if s.blocks.is_empty() {
                s.blocks.extend(take_batch(l)?);
            }
            let p = s.blocks.pop();
            if let Some(&next) = s.blocks.last() {
                crate::prefetch::range_for_write(next, l.size());
            }
            p
        })
        .ok()
        .flatten();
    // SAFETY: non-zero size per the contract.
    cached.unwrap_or_else(|| unsafe { alloc(l) })
}

/// Takes back a block from [`alloc_block`] (or the global allocator) with
/// layout `l`, whose contents are already dropped.
///
/// # Safety
/// `p` was allocated by the global allocator with layout `l` and is not
/// used again by the caller.
#[inline]
pub unsafe fn free_block(p: *mut u8, l: Layout) {
    let mut spilled = None;
    let kept = CACHE
        .try_with(|c| {
            // A free can run inside an allocation on this thread (an epoch
            // collecting while we hold the cache); then skip the cache.
            let Ok(mut c) = c.try_borrow_mut() else {
                return false;
            };
            let Some(s) = stack_for(&mut c, l, || Some(Vec::new())) else {
                return false;
            };
            if s.blocks.len() >= DEPTH {
                spilled = Some(Batch {
                    layout: l,
                    blocks: s.blocks.split_off(DEPTH - BATCH),
                });
            }
            s.blocks.push(p);
            true
        })
        .unwrap_or(false);
    // (Outside the cache's borrow: the pool may hand blocks back to the
    // global allocator.)
    if let Some(b) = spilled {
        put_batch(b);
    }
    if !kept {
        // SAFETY: per the contract.
        unsafe { dealloc(p, l) };
    }
}

/// Blocks cached on this thread (for tests).
#[cfg(test)]
fn cached() -> usize {
    CACHE.with(|c| c.borrow().0.iter().map(|s| s.blocks.len()).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_handed_out_again_for_its_size_only() {
        let a = Layout::from_size_align(224, 8).unwrap();
        let b = Layout::from_size_align(96, 8).unwrap();
        unsafe {
            let p = alloc_block(a);
            assert!(!p.is_null());
            p.write_bytes(0xab, 224);
            let before = cached();
            free_block(p, a);
            assert_eq!(cached(), before + 1);
            // Another size does not get it.
            let q = alloc_block(b);
            assert_ne!(q, p);
            // The same size does, last in first out.
            assert_eq!(alloc_block(a), p);
            assert_eq!(cached(), before);
            free_block(q, b);
            free_block(p, a);
        }
    }

    /// Blocks of layout `l` the pool holds.
    fn pooled(l: Layout) -> usize {
        let pool = POOL.lock();
        pool.0
            .iter()
            .filter(|b| b.layout == l)
            .map(|b| b.blocks.len())
            .sum()
    }

    // (Sizes no other test of this binary allocates: the pool is the
    // process's.)
    #[test]
    fn a_full_stack_hands_half_to_the_pool_and_extra_sizes_go_to_the_global_allocator() {
        let l = Layout::from_size_align(3000, 8).unwrap();
        let before = cached();
        let blocks: Vec<*mut u8> = (0..DEPTH + 10).map(|_| unsafe { alloc_block(l) }).collect();
        for &p in &blocks {
            unsafe { free_block(p, l) };
        }
        // The DEPTH + 1st free found the stack full and handed its top
        // half over.
        assert_eq!(cached(), before + DEPTH - BATCH + 10);
        assert_eq!(pooled(l), BATCH);
        // Sizes beyond SIZES distinct ones are not cached.
        let extra: Vec<Layout> = (0..SIZES + 2)
            .map(|i| Layout::from_size_align(2000 + 16 * i, 8).unwrap())
            .collect();
        for l in &extra {
            let p = unsafe { alloc_block(*l) };
            unsafe { free_block(p, *l) };
        }
        let c = CACHE.with(|c| c.borrow().0.iter().filter(|s| s.layout.is_some()).count());
        assert_eq!(c, SIZES);
        // (The pooled batch goes back where it came from.)
        for p in take_batch(l).unwrap() {
            unsafe { dealloc(p, l) };
        }
    }

    /// A thread that frees what another allocated (a GC pass leader)
    /// feeds that one through the pool: its stack never runs dry for
    /// long, and the other's never fills.
    #[test]
    fn a_thread_that_only_frees_feeds_one_that_only_allocates() {
        let l = Layout::from_size_align(3016, 8).unwrap();
        let ptrs: Vec<usize> = (0..2 * DEPTH)
            .map(|_| unsafe { alloc_block(l) } as usize)
            .collect();
        let freed = ptrs.clone();
        std::thread::spawn(move || {
            for &p in &freed {
                unsafe { free_block(p as *mut u8, l) };
            }
            // Spilled at the DEPTH + 1st and the 3 DEPTH / 2 + 1st frees.
            assert_eq!(cached(), 2 * DEPTH - 2 * BATCH);
        })
        .join()
        .unwrap();
        // (The freeing thread's stack went back to the global allocator
        // as it exited; its two batches stay pooled.)
        assert_eq!(pooled(l), 2 * BATCH);
        std::thread::spawn(move || {
            // A thread that never freed this size takes a stack for it
            // with a batch: every block of the batch is one of those freed.
            let got: Vec<usize> = (0..BATCH)
                .map(|_| unsafe { alloc_block(l) } as usize)
                .collect();
            assert!(got.iter().all(|p| ptrs.contains(p)));
            assert_eq!(pooled(l), BATCH);
            for p in got {
                unsafe { free_block(p as *mut u8, l) };
            }
        })
        .join()
        .unwrap();
        for p in take_batch(l).unwrap() {
            unsafe { dealloc(p, l) };
        }
    }

    #[test]
    fn blocks_freed_on_another_thread_are_reused_there_and_returned_at_exit() {
        let l = Layout::from_size_align(208, 8).unwrap();
        let ptrs: Vec<usize> = (0..100)
            .map(|_| unsafe { alloc_block(l) } as usize)
            .collect();
        let reused = std::thread::spawn(move || {
            for &p in &ptrs {
                unsafe { free_block(p as *mut u8, l) };
            }
            assert_eq!(cached(), 100);
            let p = unsafe { alloc_block(l) } as usize;
            let hit = ptrs.contains(&p);
            unsafe { free_block(p as *mut u8, l) };
            hit
            // The thread's cache returns its blocks as the thread exits.
        })
        .join()
        .unwrap();
        assert!(reused);
    }
}
