//! The global allocator: mimalloc, asked the way std asks the system's
//! `malloc`.
//!
//! The engine allocates and frees a version per write and the harness a
//! row per insert, so the allocator's fast path is on every write path.
//! The `mimalloc` crate's `GlobalAlloc` passes every request to
//! `mi_malloc_aligned`, whose checks of the alignment cost about 56
//! instructions a call (callgrind, TPC-C NewOrder + Payment: 54
//! allocations a transaction). Every request whose alignment `mi_malloc`
//! already guarantees (at most 16 bytes, and at most the size: the rule
//! std's own `System` allocator uses) goes to `mi_malloc` instead; the
//! rest still take the aligned entry points. Measured in
//! `docs/PERFORMANCE.md` ("The allocator's entry point").

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The alignment `mi_malloc` gives every block of at least this size
/// (`MI_MAX_ALIGN_SIZE` on the 64-bit targets we build for).
const MIN_ALIGN: usize = 16;

/// Whether `mi_malloc` of `size` bytes is aligned enough for `align`.
#[inline(always)]
fn plain(align: usize, size: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

pub struct MiMalloc;

// SAFETY: each method forwards to mimalloc, which returns null or a block
// of at least the requested size. `plain` sends a request to the
// unaligned entry points only when their guaranteed alignment covers
// `layout.align()`: mimalloc rounds small sizes to double words and keeps
// every block of 16 bytes or more 16-aligned (`MI_ALIGN2W`,
// `MI_MAX_ALIGN_SIZE` = 16; asserted in its `alloc.c`), and a block under
// 16 bytes 8-aligned, which covers every power-of-two alignment up to its
// size. Every block, aligned or not, is freed by `mi_free`.
// `tests::every_layout_comes_back_aligned_and_usable` checks each path.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the trait's contract).
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; the new
        // block keeps `layout.align()` by the same rule as `alloc`.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path (plain and aligned; alloc, zeroed, realloc up and down
    /// across the rule's edge) returns a block aligned as asked, writable
    /// over its whole size, and freeable.
    #[test]
    fn every_layout_comes_back_aligned_and_usable() {
        let a = MiMalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 3, 8, 15, 16, 17, 24, 48, 100, 4096, 70_000] {
                let l = Layout::from_size_align(size, align).unwrap();
                // SAFETY: `l` has a nonzero size; each block is written
                // within its size and freed once with its layout.
                unsafe {
                    let p = a.alloc(l);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "alloc {size}/{align}");
                    p.write_bytes(0xAB, size);
                    let z = a.alloc_zeroed(l);
                    assert_eq!(z as usize % align, 0, "zeroed {size}/{align}");
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, l);
                    a.dealloc(p, l);
                    for new in [size / 2 + 1, size * 3] {
                        let p = a.alloc(l);
                        p.write_bytes(0xAB, size);
                        let q = a.realloc(p, l, new);
                        assert_eq!(q as usize % align, 0, "realloc {size}->{new}/{align}");
                        let kept = size.min(new);
                        assert!(
                            (0..kept).all(|i| *q.add(i) == 0xAB),
                            "realloc kept the bytes"
                        );
                        a.dealloc(q, Layout::from_size_align(new, align).unwrap());
                    }
                }
            }
        }
    }
}
