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
//! Rows the transaction will write ([`crate::Transaction::prefetch_for`])
//! have the lines the write stores to (hash entry, slot, the head's header)
//! asked for writable (`prefetchw`): a line loaded shared must be fetched
//! again, from the other cores' caches, when the store comes. On a hot row
//! that is a cross-core round trip per store (+3.5% on YCSB 50% updates,
//! Zipf 0.9, two threads in this VM's slow cross-core mode, four
//! interleaved pairs: 510-518K against 475-499K txn/s).
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

/// Starts loading a row's indirection `slot` (unless null) and its chain
/// `head` (`bytes` of it): writable for a row about to be written (see
/// [`crate::Transaction::prefetch_for`]; the head's first line holds the header
/// words a write stores to), shared otherwise.
#[inline(always)]
pub(crate) fn row<T>(slot: *const T, head: *const u8, bytes: usize, write: bool) {
    if write {
        if !slot.is_null() {
            line_for_write(slot);
        }
        line_for_write(head);
        range(head.wrapping_add(64), bytes.saturating_sub(64));
    } else {
        if !slot.is_null() {
            line(slot);
        }
        range(head, bytes);
    }
}
