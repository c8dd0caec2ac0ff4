//! One TID slot's queue of transaction-level GC entries: a single-producer,
//! single-consumer list of blocks, with no lock on either side.
//!
//! The producer is the transaction holding the slot: it pushes its
//! entries at commit, before it releases the slot, and whoever claims the
//! slot next is ordered after that release (so producers never overlap).
//! The consumer is a GC pass, under `Common::running` (and this queue's
//! consumer mutex, which only passes take). Each side writes only lines of
//! its own, so a commit writes no line a pass writes (issue 42's shared-
//! write count: the shard lock both took was one shared line a commit):
//!
//! ```text
//!  producer (the slot's holder)            consumer (a pass)
//!  writes: the tail block's entries,        writes: head, taken, held
//!          links a new block, then          reads:  pushed (Acquire), then
//!          `pushed` (Release)                       the entries below it;
//!                                                   frees the blocks it left
//!   head                              tail
//!   [e e e e ... e] ──next──> [e e e . . . .]
//!        ^ taken                    ^ pushed % BLOCK
//! ```
//!
//! A slot's entries are in commit order: a holder draws its commit
//! timestamp after it claimed the slot, so after the previous holder drew
//! its own and released the slot. A pass therefore takes a prefix: every
//! entry at or below its horizon, up to the first one above it.
//!
//! Invariant this module owns: **the consumer reads an entry only after
//! `pushed` counts it, and frees a block only after it has taken every
//! entry of the block and found the next block linked** (the producer
//! links the next block before it publishes the first entry in it, and
//! never touches a block again once it has linked the next). Checked by the
//! unit tests below (sequential, and a producer thread against a consumer
//! thread across many blocks) and by the shuttle model
//! `gc_queue_producer_vs_pass` in `tests/model.rs`, where a block holds two
//! entries so that every pass crosses blocks, and which catches a producer
//! that publishes before it links (`Break::QueuePublishesBeforeLink`).

use super::Garbage;
use crate::sync::atomic::{AtomicPtr, AtomicU64};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Entries a block holds: a block is about 4 KiB (entries are 32 bytes).
/// Two under the model, so that a model's few commits cross blocks.
const BLOCK: usize = if cfg!(strata_model) { 2 } else { 127 };

struct Block {
    entries: [UnsafeCell<MaybeUninit<Garbage>>; BLOCK],
    /// The next block, linked by the producer before it publishes an entry
    /// in it.
    next: AtomicPtr<Block>,
}

impl Block {
    fn alloc() -> *mut Block {
        Box::into_raw(Box::new(Block {
            entries: [const { UnsafeCell::new(MaybeUninit::uninit()) }; BLOCK],
            next: AtomicPtr::new(ptr::null_mut()),
        }))
    }
}

/// The slot holder's side.
struct Producer {
    /// The block of the last entry pushed (the first block before any).
    tail: AtomicPtr<Block>,
    /// Entries pushed so far: storing it publishes them.
    pushed: AtomicU64,
}

/// A pass's side.
struct Consumer {
    /// The block of the entry `taken`, or of `taken - 1` where the next
    /// block is not reached yet (`taken` at a block's end).
    head: *mut Block,
    /// The position of `head`'s first entry.
    head_first: u64,
    /// Entries moved out of the blocks so far.
    taken: u64,
    /// Entries moved out of the blocks but not handed to a pass yet
    /// ([`SlotQueue::forget_table`] looked through them); they come before
    /// the blocks' entries.
    held: VecDeque<Garbage>,
    /// The commit timestamp of the last entry taken (checks the order).
    last_cts: u64,
}

pub(super) struct SlotQueue {
    producer: CachePadded<Producer>,
    consumer: CachePadded<Mutex<Consumer>>,
}

// SAFETY: the producer's side is used by the slot's holder alone (one
// thread at a time, ordered by the slot's release and claim: `push`'s
// contract), the consumer's under its mutex; the entries a block holds are
// written by the producer before it publishes them (Release) and read by
// the consumer after it loads the count (Acquire). `Garbage` is `Send`.
unsafe impl Send for SlotQueue {}
// SAFETY: as for `Send`: no `&self` method lets two threads at one side.
unsafe impl Sync for SlotQueue {}

impl SlotQueue {
    pub(super) fn new() -> SlotQueue {
        let first = Block::alloc();
        SlotQueue {
            producer: CachePadded::new(Producer {
                tail: AtomicPtr::new(first),
                pushed: AtomicU64::new(0),
            }),
            consumer: CachePadded::new(Mutex::new(Consumer {
                head: first,
                head_first: 0,
                taken: 0,
                held: VecDeque::new(),
                last_cts: 0,
            })),
        }
    }

    /// Appends `entries` and publishes them at once.
    ///
    /// # Safety
    ///
    /// The caller holds the queue's TID slot: no other thread pushes
    /// meanwhile, and every earlier push happened before (the previous
    /// holder's release of the slot, our claim of it).
    #[inline]
    pub(super) unsafe fn push(&self, entries: impl Iterator<Item = Garbage>) {
        let p = &*self.producer;
        let start = p.pushed.load(Relaxed);
        let mut n = start;
        let mut tail = p.tail.load(Relaxed);
        let mut late_link = None;
        for g in entries {
            let i = (n % BLOCK as u64) as usize;
            if i == 0 && n != 0 {
                let b = Block::alloc();
                if crate::sync::broken(crate::sync::Break::QueuePublishesBeforeLink) {
                    late_link = Some((tail, b));
                } else {
                    // SAFETY: `tail` is the producer's block, alive until
                    // the consumer has taken all of it and seen this link.
                    // (`tests/shared_writes.rs` names this line.)
                    unsafe { (*tail).next.store(b, Release) };
                }
                tail = b;
            }
            // SAFETY: entry `n` is unpublished (n >= pushed), so the
            // consumer does not read it; `tail` is alive (above).
            unsafe { (*(*tail).entries[i].get()).write(g) };
            n += 1;
        }
        if n != start {
            p.tail.store(tail, Relaxed);
            p.pushed.store(n, Release);
        }
        if let Some((old, b)) = late_link {
            // SAFETY: the broken order under test; the model catches the
            // consumer finding no next block.
            unsafe { (*old).next.store(b, Release) };
        }
    }

    /// Moves to `out`, oldest first, every entry committed at or below
    /// `horizon` up to the first one above it (entries are in commit
    /// order: see the module doc). The caller is a pass.
    pub(super) fn take_ready(&self, horizon: u64, out: &mut Vec<Garbage>) {
        let mut c = self.consumer.lock();
        crate::sync::wrote(&*c);
        while let Some(g) = c.held.front() {
            if g.cts > horizon {
                return;
            }
            out.extend(c.held.pop_front());
        }
        let pushed = self.producer.pushed.load(Acquire);
        while c.taken < pushed {
            // SAFETY: `taken < pushed`, loaded above (Acquire).
            let g = unsafe { c.peek() };
            if g.cts > horizon {
                break;
            }
            c.advance(g);
            out.push(g);
        }
    }

    /// Drops every entry of `table`. The caller is the consumer (it holds
    /// `Common::running`).
    pub(super) fn forget_table(&self, table: u32) {
        let mut c = self.consumer.lock();
        let pushed = self.producer.pushed.load(Acquire);
        while c.taken < pushed {
            // SAFETY: as in `take_ready`.
            let g = unsafe { c.peek() };
            c.advance(g);
            c.held.push_back(g);
        }
        c.held.retain(|g| g.table != table);
    }
}

impl Consumer {
    /// Entry `taken`; moves `head` to its block, freeing the block left.
    ///
    /// # Safety
    ///
    /// `taken` is below a count of `pushed` loaded with Acquire.
    #[inline]
    unsafe fn peek(&mut self) -> Garbage {
        if self.taken == self.head_first + BLOCK as u64 {
            // SAFETY: `head` is alive (we free blocks only here); entry
            // `taken` is published, so the producer linked its block first.
            let next = unsafe { (*self.head).next.load(Acquire) };
            assert!(
                !next.is_null(),
                "GC queue: entry {} published before its block was linked",
                self.taken
            );
            // SAFETY: we took every entry of `head` and its successor is
            // linked: the producer never touches it again, and nobody
            // else holds it.
            drop(unsafe { Box::from_raw(self.head) });
            self.head = next;
            self.head_first = self.taken;
        }
        let i = (self.taken - self.head_first) as usize;
        // SAFETY: entry `taken` is published (the caller's contract), and
        // written before that (Release/Acquire on `pushed`).
        unsafe { (*(*self.head).entries[i].get()).assume_init() }
    }

    #[inline]
    fn advance(&mut self, g: Garbage) {
        debug_assert!(
            g.cts >= self.last_cts,
            "a slot's entries out of commit order: {} after {}",
            g.cts,
            self.last_cts
        );
        self.last_cts = g.cts;
        self.taken += 1;
    }
}

impl Drop for SlotQueue {
    fn drop(&mut self) {
        let mut b = self.consumer.get_mut().head;
        while !b.is_null() {
            // SAFETY: we are the last owner; every block from `head` on is
            // linked from its predecessor and freed once here.
            let block = unsafe { Box::from_raw(b) };
            b = block.next.load(Relaxed);
        }
    }
}

#[cfg(all(test, not(strata_model)))]
mod tests {
    use super::{SlotQueue, BLOCK};
    use crate::gc::Garbage;
    use std::ptr;

    fn entry(cts: u64, table: u32) -> Garbage {
        Garbage {
            cts,
            table,
            tuple: cts,
            version: ptr::null_mut(),
        }
    }

    fn taken(q: &SlotQueue, horizon: u64) -> Vec<u64> {
        let mut out = Vec::new();
        q.take_ready(horizon, &mut out);
        out.iter().map(|g| g.cts).collect()
    }

    /// A pass takes the prefix at or below its horizon, across blocks, and
    /// leaves the rest for the next one; a forgotten table's entries never
    /// come out, the others keep their order.
    #[test]
    fn a_pass_takes_the_ready_prefix_across_blocks() {
        let q = SlotQueue::new();
        let n = 3 * BLOCK as u64 + 5;
        // SAFETY: this thread is the only producer.
        unsafe { q.push((1..=n).map(|c| entry(c, (c % 3) as u32))) };
        assert_eq!(taken(&q, 0), Vec::<u64>::new());
        assert_eq!(taken(&q, 100), (1..=100).collect::<Vec<_>>());
        q.forget_table(1);
        let want: Vec<u64> = (101..=n).filter(|c| c % 3 != 1).collect();
        // SAFETY: as above.
        unsafe { q.push((n + 1..=n + 2).map(|c| entry(c, 1))) };
        let mut rest = taken(&q, n + 1);
        assert_eq!(rest[..want.len()], want[..]);
        assert_eq!(rest.split_off(want.len()), [n + 1]);
        assert_eq!(taken(&q, u64::MAX), [n + 2]);
        assert_eq!(taken(&q, u64::MAX), Vec::<u64>::new());
    }

    /// A producer thread pushing in batches of every size against a
    /// consumer thread taking as it goes: every entry comes out once, in
    /// order, across hundreds of blocks (freed as the consumer leaves
    /// them; the queue frees the rest when dropped, with entries left).
    #[test]
    fn a_producer_and_a_consumer_thread_lose_and_repeat_nothing() {
        let q = SlotQueue::new();
        let total = 200 * BLOCK as u64;
        let got = std::thread::scope(|s| {
            s.spawn(|| {
                let mut next = 1;
                let mut batch = 0;
                while next <= total {
                    batch = batch % 7 + 1;
                    let end = (next + batch).min(total + 1);
                    // SAFETY: this thread is the only producer.
                    unsafe { q.push((next..end).map(|c| entry(c, 0))) };
                    next = end;
                }
            });
            let mut got = Vec::new();
            while got.len() < total as usize {
                let mut out = Vec::new();
                // A horizon that lags: some entries wait a round.
                let horizon = got.len() as u64 + 50;
                q.take_ready(horizon, &mut out);
                got.extend(out.iter().map(|g| g.cts));
            }
            got
        });
        assert!(got.iter().copied().eq(1..=total));
        // SAFETY: the producer thread has ended.
        unsafe { q.push((total + 1..total + 300).map(|c| entry(c, 0))) };
    }
}
