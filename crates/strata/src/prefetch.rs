//! Batched prefetching of a transaction's rows (memory-level parallelism).
//!
//! A point access walks three dependent cache misses: the hash entry of
//! the key, the tuple's indirection slot, the chain head. Done one key at
//! a time, a 10-operation transaction waits for 30 misses in a row. When the
//! keys are known in advance, [`crate::Transaction::prefetch`] walks all of
//! them stage by stage, so the misses of one stage overlap (the hardware
//! keeps about ten in flight) and later accesses hit the cache:
//!
//! ```text
//!  one at a time:  h1 -> s1 -> v1 -> h2 -> s2 -> v2 -> ...   30 x latency
//!  staged:         h1 h2 .. h10 | s1 s2 .. s10 | v1 v2 .. v10  ~3 x latency
//!                  (prefetch)     (read h, prefetch s) (read s, prefetch v)
//! ```
//!
//! A prefetch is only a hint: it changes no state, takes no locks, does no
//! concurrency-control bookkeeping, and a stale address (a row written or
//! collected meanwhile) costs a wasted cache line, never a wrong answer.

/// Asks the CPU to bring the cache line holding `p` into L1.
#[inline(always)]
pub(crate) fn line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch instruction never faults and has no architectural
    // effect (invalid or freed addresses are ignored), so any pointer value
    // is acceptable; SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks the CPU for the cache line holding `p` in a writable state
/// (`prefetchw`): a later store then does not wait for the line's
/// ownership.
#[inline(always)]
pub(crate) fn line_for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: like `line`: a prefetch never faults and has no
    // architectural effect; `prefetchw` is a NOP where unsupported.
    unsafe {
        std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// `range` for lines about to be written.
#[inline(always)]
pub(crate) fn range_for_write<T>(p: *const T, bytes: usize) {
    each_line(p, bytes, line_for_write);
}

/// Prefetches `bytes` bytes starting at `p`, one line at a time.
#[inline(always)]
pub(crate) fn range<T>(p: *const T, bytes: usize) {
    each_line(p, bytes, line);
}

#[inline(always)]
fn each_line<T>(p: *const T, bytes: usize, prefetch: impl Fn(*const u8)) {
    let p = p as *const u8;
    let mut off = 0;
    while off < bytes {
        prefetch(p.wrapping_add(off));
        off += 64;
    }
}
