//! Shuttle model of the in-place master's seqlock
//! (`storage/in_place.rs`: `Master::write`, `WriteSection`, `Master::read`).
//!
//! Like `model.rs`, this is a *model*: it reproduces the protocol step for
//! step on shuttle atomics and explores random schedules. One writer holds
//! the row lock and rewrites a 3-cell master (all cells = n) a few times,
//! aborting some writes (restore = a second write section); readers take
//! snapshots with the engine's retry rule. The invariant: a snapshot a reader
//! accepts has all cells equal (never a torn row). The test
//! `a_reader_without_the_recheck_is_caught` shows the model can fail.

use shuttle::sync::atomic::{fence, AtomicU64, Ordering};
use shuttle::sync::Arc;
use shuttle::thread;

use Ordering::{Acquire, Relaxed, Release};

const CELLS: usize = 3;

struct Master {
    seq: AtomicU64,
    cells: [AtomicU64; CELLS],
}

impl Master {
    fn new() -> Master {
        Master {
            seq: AtomicU64::new(0),
            cells: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// `Master::write` .. `WriteSection::drop`: odd seq, cells, even seq.
    fn write_all(&self, n: u64) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s + 1, Relaxed);
        fence(Release);
        for c in &self.cells {
            c.store(n, Relaxed);
        }
        self.seq.store(s + 2, Release);
    }

    /// `Master::read`: returns an accepted snapshot.
    fn read(&self, recheck: bool) -> [u64; CELLS] {
        loop {
            let s1 = self.seq.load(Acquire);
            if recheck && s1 & 1 == 1 {
                thread::yield_now();
                continue;
            }
            let snap: [u64; CELLS] = std::array::from_fn(|i| self.cells[i].load(Relaxed));
            fence(Acquire);
            if recheck && self.seq.load(Relaxed) != s1 {
                continue;
            }
            return snap;
        }
    }
}

fn model(recheck: bool) {
    let m = Arc::new(Master::new());
    let w = {
        let m = m.clone();
        thread::spawn(move || {
            for n in 1..=3u64 {
                m.write_all(n);
                if n == 2 {
                    // An abort: restore the previous values in a new section.
                    m.write_all(1);
                }
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    let s = m.read(recheck);
                    assert!(s.iter().all(|&x| x == s[0]), "torn snapshot {s:?}");
                }
            })
        })
        .collect();
    w.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn seqlock_readers_never_accept_a_torn_row() {
    shuttle::check_random(|| model(true), 5000);
    shuttle::check_pct(|| model(true), 3000, 3);
}

#[test]
fn a_reader_without_the_recheck_is_caught() {
    let r = std::panic::catch_unwind(|| shuttle::check_random(|| model(false), 5000));
    assert!(r.is_err(), "the model must be able to find a torn read");
}
