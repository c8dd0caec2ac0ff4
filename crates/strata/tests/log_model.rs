//! Shuttle model of the central log buffer (`log/buffer.rs`) and the
//! flusher's sleep/wake handshake (`log/mod.rs::flusher`).
//!
//! Like `model.rs`, this is a *model*: it reproduces the protocol step for
//! step on shuttle atomics (a 4-word ring, records of 1 or 2 words) and
//! explores schedules; it checks interleavings, not weak-memory effects.
//! Keep it in step with `LogBuffer::{reserve, publish, ready, drain}` and
//! the flusher loop.
//!
//! Invariants: the flusher takes every record whole, exactly once, in LSN
//! order (a prefix of the log), never reads a record before it is published,
//! and never sleeps through a published record for ever (no lost wake-up:
//! the model's flusher sleeps without a timeout).

use shuttle::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use shuttle::sync::{Arc, Condvar, Mutex};
use shuttle::thread;

const WORDS: u64 = 4;

struct Ring {
    words: Vec<AtomicU64>,
    reserved: AtomicU64,
    released: AtomicU64,
    sleeping: AtomicBool,
    wake: Mutex<bool>,
    cv: Condvar,
}

impl Ring {
    fn word(&self, w: u64) -> &AtomicU64 {
        &self.words[(w % WORDS) as usize]
    }
    /// `Shared::wake`.
    fn wake(&self) {
        let mut g = self.wake.lock().unwrap();
        *g = true;
        self.cv.notify_one();
    }
    /// `LogBuffer::publish` for a record of `len` words whose first word
    /// encodes (writer id, length) and whose other words carry the id.
    fn publish(&self, id: u64, len: u64) {
        let lsn = self.reserved.fetch_add(len, SeqCst);
        while lsn + len > self.released.load(SeqCst) + WORDS {
            self.wake();
            thread::yield_now();
        }
        for i in 1..len {
            self.word(lsn + i).store(id, SeqCst);
        }
        self.word(lsn).store(id << 8 | len, SeqCst);
        if self.sleeping.load(SeqCst) {
            self.wake();
        }
    }
    /// `LogBuffer::drain`: (records taken as (id, len), new position).
    fn drain(&self, from: u64, out: &mut Vec<(u64, u64)>) -> u64 {
        let mut pos = from;
        loop {
            let first = self.word(pos).load(SeqCst);
            if first == 0 {
                break;
            }
            let (id, len) = (first >> 8, first & 0xff);
            self.word(pos).store(0, SeqCst);
            for i in 1..len {
                let w = self.word(pos + i);
                assert_eq!(w.load(SeqCst), id, "a word of record {id} is missing");
                w.store(0, SeqCst);
            }
            out.push((id, len));
            pos += len;
        }
        self.released.store(pos, SeqCst);
        pos
    }
}

fn model() {
    let ring = Arc::new(Ring {
        words: (0..WORDS).map(|_| AtomicU64::new(0)).collect(),
        reserved: AtomicU64::new(0),
        released: AtomicU64::new(0),
        sleeping: AtomicBool::new(false),
        wake: Mutex::new(false),
        cv: Condvar::new(),
    });
    // Three records over two writers: 2 + 1 + 2 words through a 4-word ring,
    // so the last one waits for room.
    let recs: [(u64, u64, u64); 3] = [(1, 2, 0), (2, 1, 1), (3, 2, 0)];
    let total: u64 = recs.iter().map(|r| r.1).sum();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let ring = Arc::clone(&ring);
            thread::spawn(move || {
                for &(id, len, who) in &recs {
                    if who == w {
                        ring.publish(id, len);
                    }
                }
            })
        })
        .collect();
    let flusher = {
        let ring = Arc::clone(&ring);
        thread::spawn(move || {
            let mut pos = 0;
            let mut out = Vec::new();
            while pos < total {
                let before = out.len();
                pos = ring.drain(pos, &mut out);
                if out.len() > before {
                    continue;
                }
                // The flusher's sleep: flag, re-check, wait (no timeout here,
                // so a lost wake-up deadlocks the model).
                let mut g = ring.wake.lock().unwrap();
                ring.sleeping.store(true, SeqCst);
                while !*g && ring.word(pos).load(SeqCst) == 0 {
                    g = ring.cv.wait(g).unwrap();
                }
                *g = false;
                ring.sleeping.store(false, SeqCst);
            }
            out
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    let out = flusher.join().unwrap();
    let mut ids: Vec<u64> = out.iter().map(|r| r.0).collect();
    assert_eq!(out.iter().map(|r| r.1).sum::<u64>(), total);
    ids.sort();
    assert_eq!(ids, vec![1, 2, 3], "every record exactly once");
    // Writer 0 publishes 1 before 3: LSN order keeps that.
    let p1 = out.iter().position(|r| r.0 == 1).unwrap();
    let p3 = out.iter().position(|r| r.0 == 3).unwrap();
    assert!(p1 < p3);
}

#[test]
fn log_buffer_takes_every_record_whole_once_in_order_without_lost_wakeups() {
    shuttle::check_random(model, 3000);
}

#[test]
fn log_buffer_model_pct() {
    shuttle::check_pct(model, 3000, 3);
}
