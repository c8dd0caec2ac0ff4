//! Shuttle model check of the central log buffer and the flusher's
//! sleep/wake handshake, on the engine's own code (`log/buffer.rs`:
//! `LogBuffer::{reserve, publish, drain, sleep, wake}`).
//!
//! Built with `--cfg strata_model` (see `src/sync/mod.rs`), so the ring's
//! atomics and the doorbell's lock and condition variable are shuttle's,
//! and a timed sleep waits untimed: a lost wake-up deadlocks the model
//! instead of being hidden by the flusher's 5 ms backstop. Two writers
//! publish three sealed commit records (48 to 56 bytes) through a 128-byte
//! ring, so the last waits for room; a flusher runs the loop of
//! `log/mod.rs::flusher` without the file I/O (drain; after records, look
//! again; else sleep as GroupCommit does).
//!
//! Invariants: the flusher takes every record whole (byte for byte),
//! exactly once, in LSN order (a prefix of the log), and never
//! sleeps through a published record for ever. `*_is_caught` break one
//! step each and show the model fails.
//!
//! `lsn_stamps_*`: the same ring on a shared counter (the clock, LSN
//! commit stamps): each writer's one reservation gives its LSN and its
//! commit timestamp (end LSN + K); one writer "fails validation" after
//! reserving and publishes a skip record in its range instead. The flusher
//! still drains everything, the skip in its place; the commit records'
//! timestamps are end LSN + K and increase in log order; the counter ends
//! at the log's end + K.
#![cfg(strata_model)]

use shuttle::sync::Arc;
use shuttle::thread;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use strata::model::{
    caught, counter, parse_header, seal, skip_record, Break, CommitBuilder, LogBuffer, KIND_SKIP,
};
use strata::Value;

const RING: usize = 128;

/// A commit record (unsealed) whose row has `vals` integers.
fn record(vals: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = CommitBuilder::new(&mut buf);
    b.put(1, &vec![Value::Int(7); vals]);
    b.finish();
    buf
}

/// The three records: (commit timestamp = id, values, writer). Writer 0
/// publishes 1 then 3.
const RECS: [(u64, usize, usize); 3] = [(1, 1, 0), (2, 0, 1), (3, 1, 0)];

/// Checks the records in `out[from..]` (which start at LSN `from`): each
/// whole (byte for byte the record its writer sealed) and in LSN order;
/// returns their ids.
fn check(out: &[u8], from: usize) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut off = from;
    while off < out.len() {
        let h = parse_header(&out[off..]).expect("a record taken before its header was published");
        assert_eq!(h.lsn, off as u64, "records out of LSN order");
        let (_, vals, _) = RECS.iter().find(|r| r.0 == h.cts).expect("a known record");
        let mut want = record(*vals);
        seal(&mut want, h.lsn, h.cts);
        assert_eq!(
            out.get(off..off + want.len()),
            Some(&want[..]),
            "record {} taken before it was whole",
            h.cts
        );
        ids.push(h.cts);
        off += h.total;
    }
    ids
}

fn model() {
    let buf = Arc::new(LogBuffer::new(RING, 0));
    let total: u64 = RECS.iter().map(|r| record(r.1).len() as u64).sum();
    assert!(total > RING as u64, "the last record must wait for room");
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let buf = Arc::clone(&buf);
            thread::spawn(move || {
                let failed = AtomicBool::new(false);
                for &(id, vals, who) in &RECS {
                    if who == w {
                        let mut r = record(vals);
                        let lsn = buf.reserve(r.len());
                        seal(&mut r, lsn, id);
                        assert!(buf.publish(lsn, &r, &failed));
                    }
                }
            })
        })
        .collect();
    let flusher = {
        let buf = Arc::clone(&buf);
        thread::spawn(move || {
            let idle = AtomicBool::new(false);
            let mut pos = 0;
            let mut out = Vec::new();
            let mut ids = Vec::new();
            loop {
                let start = out.len();
                let (next, n) = buf.drain(pos, &mut out);
                pos = next;
                ids.extend(check(&out, start));
                if n > 0 {
                    continue;
                }
                if pos == total {
                    return ids;
                }
                buf.sleep(pos, true, Duration::from_millis(5), || false, &idle);
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    let ids = flusher.join().unwrap();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(sorted, vec![1, 2, 3], "every record exactly once");
    // Writer 0 reserved 1 before 3: LSN order keeps that.
    let p1 = ids.iter().position(|&i| i == 1).unwrap();
    let p3 = ids.iter().position(|&i| i == 3).unwrap();
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

#[test]
fn publishing_the_first_word_first_is_caught() {
    assert!(
        caught(Break::PublishFirstWordFirst, || shuttle::check_random(
            model, 3000
        )),
        "the model must find a record taken in part"
    );
}

#[test]
fn a_flusher_that_checks_before_raising_its_flag_is_caught() {
    assert!(
        caught(Break::FlusherChecksBeforeFlag, || shuttle::check_random(
            model, 3000
        )),
        "the model must find the lost wake-up"
    );
}

/// K of the LSN-stamps model (the clock's value at LSN 0).
const K: u64 = 1;

fn lsn_stamps_model() {
    let clock = counter(7);
    let buf = Arc::new(LogBuffer::on_counter(
        RING,
        0,
        std::sync::Arc::clone(&clock),
        K,
    ));
    let total: u64 = RECS.iter().map(|r| record(r.1).len() as u64).sum();
    // Writer 0 reserves records 1 and 3 and aborts 1 after reserving;
    // writer 1 commits 2.
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let buf = Arc::clone(&buf);
            thread::spawn(move || {
                let failed = AtomicBool::new(false);
                let mut stamps = Vec::new();
                for &(id, vals, who) in &RECS {
                    if who != w {
                        continue;
                    }
                    let mut r = record(vals);
                    let lsn = buf.reserve(r.len());
                    let cts = lsn + r.len() as u64 + K;
                    thread::yield_now(); // validation
                    if id == 1 {
                        skip_record(&mut r);
                        seal(&mut r, lsn, 0);
                    } else {
                        seal(&mut r, lsn, cts);
                        stamps.push((lsn, cts));
                    }
                    assert!(buf.publish(lsn, &r, &failed));
                }
                stamps
            })
        })
        .collect();
    let flusher = {
        let buf = Arc::clone(&buf);
        thread::spawn(move || {
            let idle = AtomicBool::new(false);
            let mut pos = 0;
            let mut out = Vec::new();
            loop {
                let (next, n) = buf.drain(pos, &mut out);
                pos = next;
                if n > 0 {
                    continue;
                }
                if pos == total {
                    return out;
                }
                buf.sleep(pos, true, Duration::from_millis(5), || false, &idle);
            }
        })
    };
    let mut stamps: Vec<(u64, u64)> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    stamps.sort();
    let out = flusher.join().unwrap();
    let (mut off, mut skips, mut seen) = (0usize, 0, Vec::new());
    while off < out.len() {
        let h = parse_header(&out[off..]).expect("a whole header");
        assert_eq!(h.lsn, off as u64, "records out of LSN order");
        assert_eq!(
            crc32c::crc32c(&out[off + 32..off + h.total]),
            h.payload_crc,
            "a record taken in part"
        );
        if out[off + 32] == KIND_SKIP {
            assert_eq!(h.cts, 0);
            skips += 1;
        } else {
            assert_eq!(h.cts, h.lsn + h.total as u64 + K, "stamp = end LSN + K");
            seen.push((h.lsn, h.cts));
        }
        off += h.total;
    }
    assert_eq!(skips, 1, "the aborted reservation is a skip record");
    assert_eq!(seen, stamps, "the commits, in log order, with their stamps");
    assert!(seen.windows(2).all(|w| w[0].1 < w[1].1));
    assert_eq!(
        clock.load(std::sync::atomic::Ordering::SeqCst),
        total + K,
        "the clock ends at the log's end + K"
    );
}

#[test]
fn lsn_stamps_skip_records_and_stamps_in_log_order() {
    shuttle::check_random(lsn_stamps_model, 3000);
}

#[test]
fn lsn_stamps_model_pct() {
    shuttle::check_pct(lsn_stamps_model, 3000, 3);
}
