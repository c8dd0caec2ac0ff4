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

use std::alloc::{alloc, dealloc, Layout};
use std::cell::RefCell;

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
            c.0.iter_mut().find(|s| s.layout == Some(l)).and_then(|s| {
                let p = s.blocks.pop();
                if let Some(&next) = s.blocks.last() {
                    crate::prefetch::range_for_write(next, l.size());
                }
                p
            })
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
    let kept = CACHE
        .try_with(|c| {
            // A free can run inside an allocation on this thread (an epoch
            // collecting while we hold the cache); then skip the cache.
            let Ok(mut c) = c.try_borrow_mut() else {
                return false;
            };
            let slot = match c.0.iter().position(|s| s.layout == Some(l)) {
                Some(i) => i,
                None => match c.0.iter().position(|s| s.layout.is_none()) {
                    Some(i) => {
                        c.0[i].layout = Some(l);
                        c.0[i].blocks.reserve(DEPTH);
                        i
                    }
                    None => return false,
                },
            };
            let s = &mut c.0[slot];
            if s.blocks.len() >= DEPTH {
                return false;
            }
            s.blocks.push(p);
            true
        })
        .unwrap_or(false);
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

    #[test]
    fn a_full_stack_and_extra_sizes_go_to_the_global_allocator() {
        let l = Layout::from_size_align(304, 8).unwrap();
        let before = cached();
        let blocks: Vec<*mut u8> = (0..DEPTH + 10).map(|_| unsafe { alloc_block(l) }).collect();
        for &p in &blocks {
            unsafe { free_block(p, l) };
        }
        assert_eq!(cached(), before + DEPTH);
        // Sizes beyond SIZES distinct ones are not cached.
        let extra: Vec<Layout> = (0..SIZES + 2)
            .map(|i| Layout::from_size_align(1024 + 16 * i, 8).unwrap())
            .collect();
        for l in &extra {
            let p = unsafe { alloc_block(*l) };
            unsafe { free_block(p, *l) };
        }
        let c = CACHE.with(|c| c.borrow().0.iter().filter(|s| s.layout.is_some()).count());
        assert_eq!(c, SIZES);
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
