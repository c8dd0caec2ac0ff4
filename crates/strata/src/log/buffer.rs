//! The central log buffer: one fetch-and-add reserves a record's place.
//! With LSN commit stamps the counter it adds to is the database's clock,
//! and the same fetch-and-add draws the commit timestamp (see `log`).
//!
//! The buffer is a ring of 8-byte words indexed by LSN (a byte offset in the
//! log, LSN / 8 mod capacity). A committing transaction reserves its
//! record's bytes with one `fetch_add` on `reserved`, waits until the ring
//! has room (the flusher has released everything a lap earlier), copies its
//! words in, and publishes the record by storing its first word last:
//!
//! ```text
//!             released             flushed position              reserved
//!                │ (flusher took    │                               │
//!                ▼  and zeroed)     ▼                               ▼
//!  ring: ...  ───┼──────────────────┬────────┬──────────┬───────────┼── free
//!                │  [rec A ✓]        │[rec B …]│[rec C ✓] │[rec D ✓] │
//!                                   word 0 of B still 0: the flusher stops
//!                                   here until B's writer publishes it
//! ```
//!
//! The flusher takes published records strictly in LSN order, so what it
//! writes is always a prefix of the log: a record is never on disk while a
//! record before it is missing. Taken words are zeroed before `released`
//! moves past them, so a non-zero first word is always the current lap's.
//!
//! All accesses are atomic word loads and stores (plain moves on x86), so
//! the ring needs no `unsafe`.
//!
//! The buffer also holds the flusher's doorbell. The flusher sleeps only
//! after raising `flusher_sleeping` and then re-checking the next record
//! (under the doorbell's lock); a publisher stores its record and then
//! checks the flag. Whichever goes second sees the other's step: either the
//! flusher finds the record, or the publisher rings the bell, whose lock
//! the flusher holds until it waits. No wake-up is lost.
//!
//! Its atomics and locks come from `crate::sync`: `tests/log_model.rs` runs
//! `reserve`, `publish`, `drain` and the doorbell under shuttle.

use crate::sync::atomic::{
    fence, AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
use crate::sync::{broken, thread, Break, Condvar, Mutex};
use crossbeam_utils::CachePadded;
use std::time::Duration;

/// The reservation counter. With LSN commit stamps it is also the
/// database's clock (`cc::Shared::clock`): the two are one atomic.
pub use crate::sync::{counter, Counter};

pub struct LogBuffer {
    words: Box<[AtomicU64]>,
    mask: u64,
    cap_bytes: u64,
    /// Next free LSN. The one global atomic operation of a commit; shared
    /// with the clock when commit stamps are LSNs (see `log`).
    reserved: Counter,
    /// `reserved` holds LSN + `offset` (0 unless it is the clock, whose
    /// value the log took over at open: see `log`, "LSN commit stamps").
    offset: u64,
    /// Everything below this LSN was taken out of the ring by the flusher.
    released: CachePadded<AtomicU64>,
    /// Set by the flusher just before it sleeps; a publisher that sees it
    /// wakes the flusher (see `publish`).
    flusher_sleeping: AtomicBool,
    /// The doorbell: rung (true) by `wake`, cleared by the flusher when it
    /// looks for work; its lock is held from the flusher's last check until
    /// it waits.
    bell: Mutex<bool>,
    bell_cv: Condvar,
}

impl LogBuffer {
    /// A ring of `cap_bytes` (a power of two) starting at `start_lsn`.
    pub fn new(cap_bytes: usize, start_lsn: u64) -> Self {
        Self::on_counter(cap_bytes, start_lsn, counter(start_lsn), 0)
    }

    /// A ring whose reservations advance `counter`, which holds LSN +
    /// `offset` (set to `start_lsn + offset` here; nothing may move it but
    /// reservations from now on).
    pub fn on_counter(cap_bytes: usize, start_lsn: u64, counter: Counter, offset: u64) -> Self {
        debug_assert!(cap_bytes.is_power_of_two() && start_lsn.is_multiple_of(8));
        counter.store(start_lsn + offset, SeqCst);
        let n = cap_bytes / 8;
        LogBuffer {
            words: (0..n).map(|_| AtomicU64::new(0)).collect(),
            mask: n as u64 - 1,
            cap_bytes: cap_bytes as u64,
            reserved: counter,
            offset,
            released: CachePadded::new(AtomicU64::new(start_lsn)),
            flusher_sleeping: AtomicBool::new(false),
            bell: Mutex::new(false),
            bell_cv: Condvar::new(),
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap_bytes as usize
    }

    /// The LSN the next reservation will get.
    pub fn reserved(&self) -> u64 {
        self.reserved.load(SeqCst) - self.offset
    }

    /// Reserves `len` bytes (a multiple of 8) and returns their LSN.
    #[inline]
    pub fn reserve(&self, len: usize) -> u64 {
        self.reserved.fetch_add(len as u64, SeqCst) - self.offset
    }

    #[inline]
    fn word(&self, lsn: u64) -> &AtomicU64 {
        &self.words[((lsn / 8) & self.mask) as usize]
    }

    /// Copies the sealed record `rec` into its reserved place `lsn`. Waits
    /// for room (ringing the flusher's bell); gives up (returns false) if
    /// `failed` turns true meanwhile, because then the flusher will never
    /// free the room.
    pub fn publish(&self, lsn: u64, rec: &[u8], failed: &std::sync::atomic::AtomicBool) -> bool {
        let end = lsn + rec.len() as u64;
        let mut spins = 0u32;
        while end > self.released.load(Acquire) + self.cap_bytes {
            if failed.load(SeqCst) {
                return false;
            }
            self.wake();
            spins += 1;
            if spins < 64 {
                thread::spin_loop();
            } else if spins < 256 {
                thread::yield_now();
            } else {
                thread::sleep(Duration::from_micros(50));
            }
        }
        let mut chunks = rec.chunks_exact(8);
        let first = u64::from_le_bytes(
            chunks
                .next()
                .expect("records are >= 8 bytes")
                .try_into()
                .unwrap(),
        );
        debug_assert_ne!(first, 0, "a record's first word carries its magic");
        if broken(Break::PublishFirstWordFirst) {
            self.word(lsn).store(first, Release);
        }
        for (i, c) in chunks.enumerate() {
            let w = u64::from_le_bytes(c.try_into().unwrap());
            self.word(lsn + 8 * (i as u64 + 1)).store(w, Relaxed);
        }
        // Publishing: the first word last, so a flusher that sees it sees
        // the whole record.
        self.word(lsn).store(first, Release);
        // Pairs with the fence in `may_sleep`: either the flusher sees our
        // record before sleeping, or we see it sleeping and wake it.
        fence(SeqCst);
        if self.flusher_sleeping.load(SeqCst) {
            self.wake();
        }
        true
    }

    /// Rings the flusher's bell: it looks for work now, or as soon as it
    /// next would sleep.
    pub fn wake(&self) {
        let mut g = self.bell.lock();
        *g = true;
        self.bell_cv.notify_one();
    }

    /// Flusher: sleeps for up to `t` unless the bell rang since it last
    /// slept or `more()` says there is other work; under GroupCommit
    /// (`group`) also unless the record at `pos` is published, and a
    /// publisher that finishes one meanwhile wakes it. `idle` is true while
    /// it sleeps.
    pub fn sleep(
        &self,
        pos: u64,
        group: bool,
        t: Duration,
        more: impl Fn() -> bool,
        idle: &std::sync::atomic::AtomicBool,
    ) {
        let mut g = self.bell.lock();
        let flag_late = broken(Break::FlusherChecksBeforeFlag);
        if group && !flag_late {
            self.flusher_sleeping.store(true, SeqCst);
        }
        let work = *g || more() || (group && self.ready(pos));
        if group && flag_late {
            self.flusher_sleeping.store(true, SeqCst);
        }
        if !work && !t.is_zero() {
            idle.store(true, SeqCst);
            self.bell_cv.wait_for(&mut g, t);
            idle.store(false, SeqCst);
        }
        *g = false;
        self.flusher_sleeping.store(false, SeqCst);
    }

    /// Whether the flusher sleeps with no ring pending: `idle` (its flag,
    /// set in [`LogBuffer::sleep`]) and the bell read under the bell's
    /// lock, so a ring that just woke it, whose pass is still to come, is
    /// not taken for quiet (it sets `idle` false only once it holds the
    /// lock again, before it clears the bell).
    pub fn quiet(&self, idle: &std::sync::atomic::AtomicBool) -> bool {
        let g = self.bell.lock();
        idle.load(SeqCst) && !*g
    }

    /// Flusher: whether the record at `lsn` is published (called after
    /// setting `flusher_sleeping`, so no wake-up is lost).
    fn ready(&self, lsn: u64) -> bool {
        fence(SeqCst);
        self.word(lsn).load(Acquire) != 0
    }

    /// Flusher: appends the published records starting at `from` (in LSN
    /// order, stopping at the first unpublished one) to `out`, zeroes their
    /// words and releases them. Returns the LSN after the last one taken
    /// and how many records it took.
    pub fn drain(&self, from: u64, out: &mut Vec<u8>) -> (u64, u64) {
        let mut pos = from;
        let mut n = 0;
        loop {
            let first = self.word(pos).load(Acquire);
            if first == 0 {
                break;
            }
            let total = first >> 32;
            out.extend_from_slice(&first.to_le_bytes());
            self.word(pos).store(0, Relaxed);
            let mut p = pos + 8;
            while p < pos + total {
                let w = self.word(p);
                out.extend_from_slice(&w.load(Relaxed).to_le_bytes());
                w.store(0, Relaxed);
                p += 8;
            }
            pos += total;
            n += 1;
            if pos - from >= self.cap_bytes / 2 {
                // Hand room back to waiting writers now and then.
                self.released.store(pos, Release);
            }
        }
        self.released.store(pos, Release);
        (pos, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::{seal, CommitBuilder};
    use crate::value::Value;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn rec(n: i64, pad_vals: usize) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut b = CommitBuilder::new(&mut buf);
        let row: Vec<Value> = (0..pad_vals as i64).map(|i| Value::Int(n + i)).collect();
        b.put(1, &row);
        b.finish();
        buf
    }

    /// Many threads reserve and publish records of different sizes through
    /// a ring much smaller than the total: the drained stream is exactly
    /// the records, each whole, in LSN order.
    #[test]
    fn concurrent_publish_drains_every_record_whole_in_lsn_order() {
        crate::test_util::within("publishing and draining through a small ring", || {
            let buf = Arc::new(LogBuffer::new(4096, 64));
            let failed = Arc::new(AtomicBool::new(false));
            let threads = 4;
            let per = 2000;
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (buf, failed) = (Arc::clone(&buf), Arc::clone(&failed));
                    std::thread::spawn(move || {
                        for i in 0..per {
                            let id = (t * per + i) as i64;
                            let mut r = rec(id, 1 + (i % 7));
                            let lsn = buf.reserve(r.len());
                            seal(&mut r, lsn, id as u64);
                            assert!(buf.publish(lsn, &r, &failed));
                        }
                    })
                })
                .collect();
            let mut out = Vec::new();
            let mut pos = 64;
            let total_records = threads * per;
            let mut seen = 0;
            let mut ids = std::collections::HashSet::new();
            while seen < total_records {
                let start = out.len();
                pos = buf.drain(pos, &mut out).0;
                let mut off = start;
                while off < out.len() {
                    let h = crate::log::record::parse_header(&out[off..]).expect("whole header");
                    assert_eq!(h.lsn, 64 + off as u64, "records are in LSN order");
                    let payload = &out[off + 32..off + h.total];
                    assert_eq!(crc32c::crc32c(payload), h.payload_crc, "record is whole");
                    assert!(ids.insert(h.cts));
                    off += h.total;
                    seen += 1;
                }
                std::thread::yield_now();
            }
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(ids.len(), total_records);
            assert_eq!(pos, buf.reserved());
        })
    }

    /// `quiet`: only a flusher asleep (`idle`) with no ring pending. A ring
    /// that woke it, before it took the bell's lock back, is still pending:
    /// its pass is to come. A flusher that found the ring does not go idle.
    #[test]
    fn the_flusher_is_quiet_only_asleep_with_no_ring_pending() {
        let buf = LogBuffer::new(4096, 0);
        let idle = AtomicBool::new(false);
        assert!(!buf.quiet(&idle), "working");
        idle.store(true, SeqCst);
        assert!(buf.quiet(&idle), "asleep, nothing rung");
        buf.wake();
        assert!(!buf.quiet(&idle), "rung while asleep: a pass to come");
        idle.store(false, SeqCst);
        buf.sleep(0, false, Duration::from_secs(3600), || false, &idle);
        assert!(
            !idle.load(SeqCst) && !buf.quiet(&idle),
            "took the ring: working"
        );
    }

    /// The doorbell, sequentially (its races are checked by
    /// `tests/log_model.rs`): the flusher does not sleep when the bell rang
    /// or, under GroupCommit, when the next record is published; asleep, it
    /// is woken by a publisher. A broken handshake would sleep here for an
    /// hour: `within` fails it instead.
    #[test]
    fn the_flusher_does_not_sleep_through_a_bell_or_a_published_record() {
        crate::test_util::within("the flusher's sleep/wake handshake", || {
            let buf = Arc::new(LogBuffer::new(4096, 0));
            let failed = AtomicBool::new(false);
            let hour = Duration::from_secs(3600);
            let idle = AtomicBool::new(false);
            buf.wake();
            buf.sleep(0, true, hour, || false, &idle);
            buf.sleep(0, false, hour, || true, &idle);
            let publish = |n: u64| {
                let mut r = rec(n as i64, 1);
                let lsn = buf.reserve(r.len());
                seal(&mut r, lsn, n);
                assert!(buf.publish(lsn, &r, &failed));
                lsn + r.len() as u64
            };
            let end = publish(1);
            buf.sleep(0, true, hour, || false, &idle);
            // Asleep at `end` (no record there yet) until the next publish.
            let flusher = {
                let buf = Arc::clone(&buf);
                std::thread::spawn(move || {
                    buf.sleep(end, true, hour, || false, &AtomicBool::new(false));
                })
            };
            while !buf.flusher_sleeping.load(SeqCst) {
                std::thread::yield_now();
            }
            publish(2);
            flusher.join().unwrap();
        })
    }

    /// On a shared counter (the clock, LSN commit stamps): reservations
    /// return LSNs while the counter holds LSN + offset, so the counter's
    /// value after a reservation is that record's end + offset, and a
    /// reader of the counter (a snapshot) is ordered against it.
    #[test]
    fn a_shared_counter_holds_lsn_plus_offset() {
        let clock = counter(1);
        let buf = LogBuffer::on_counter(4096, 64, Arc::clone(&clock), 5);
        assert_eq!(clock.load(SeqCst), 69);
        assert_eq!(buf.reserved(), 64);
        let r = rec(1, 1);
        let lsn = buf.reserve(r.len());
        assert_eq!(lsn, 64);
        assert_eq!(clock.load(SeqCst), 64 + r.len() as u64 + 5);
        assert_eq!(buf.reserved(), 64 + r.len() as u64);
        let mut out = Vec::new();
        let mut rr = r.clone();
        seal(&mut rr, lsn, clock.load(SeqCst));
        assert!(buf.publish(lsn, &rr, &AtomicBool::new(false)));
        assert_eq!(buf.drain(64, &mut out), (64 + r.len() as u64, 1));
    }

    #[test]
    fn publish_gives_up_when_the_log_failed() {
        crate::test_util::within("a publish into a full ring of a failed log", || {
            let buf = LogBuffer::new(4096, 0);
            let failed = AtomicBool::new(false);
            // Fill the ring without draining it.
            let r = {
                let mut r = rec(1, 60);
                seal(&mut r, 0, 1);
                r
            };
            let mut lsn = 0;
            while lsn + (r.len() as u64) <= 4096 {
                lsn = buf.reserve(r.len());
                let mut rr = r.clone();
                seal(&mut rr, lsn, 1);
                assert!(buf.publish(lsn, &rr, &failed));
                lsn += r.len() as u64;
            }
            let next = buf.reserve(r.len());
            failed.store(true, SeqCst);
            assert!(!buf.publish(next, &r, &failed));
        })
    }
}
