//! Concurrent bank transfers under every protocol: the total never changes,
//! in any snapshot, and every committed transfer is counted; and again on
//! every other version storage scheme (smaller runs).

use crate::common;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use strata::{key, row, Error, MemorySpaces, Schema, Type, Value};

const ACCOUNTS: i64 = 20;
const INITIAL: i64 = 1_000;
/// Audits that must have run during the transfers (begun after the first
/// transfer committed, before the last transfer thread finished).
const MIN_OVERLAPPING: u64 = 20;
/// Only turns a stuck auditor into a failure (no timing is asserted).
const HANG_GUARD: Duration = Duration::from_secs(120);

/// `STRATA_SOAK` (see `common::soak`).
fn soak() -> u64 {
    crate::common::soak().into()
}

fn run_bank(c: &Config, threads: usize, transfers_per_thread: u64) {
    let db = c.open();
    let t = db
        .create_table(
            Schema::new("accounts")
                .column("id", Type::Int)
                .column("balance", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    let mut txn = db.begin().unwrap();
    for i in 0..ACCOUNTS {
        txn.insert(&t, row![i, INITIAL]).unwrap();
    }
    txn.commit().unwrap();
    let done = AtomicU64::new(0);
    // Transfer threads still running; the auditor audits until it is 0.
    let running = AtomicUsize::new(threads);
    // Audits that passed, and those of them that began after the first
    // transfer committed and before the last transfer thread finished.
    let audits = AtomicU64::new(0);
    let overlapping = AtomicU64::new(0);
    let auditor_gone = AtomicBool::new(false);
    std::thread::scope(|s| {
        for th in 0..threads {
            let (db, t, done, running) = (&db, &t, &done, &running);
            let (overlapping, auditor_gone) = (&overlapping, &auditor_gone);
            s.spawn(move || {
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ th as u64;
                let mut next = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                // The transfers asked for, then more until the auditor has
                // audited MIN_OVERLAPPING times during them (it may have
                // been slow to start on a loaded machine); the deadline
                // only turns a stuck auditor into a failure.
                let hang_guard = Instant::now() + HANG_GUARD;
                let mut i = 0u64;
                while i < transfers_per_thread
                    || (overlapping.load(Ordering::SeqCst) < MIN_OVERLAPPING
                        && !auditor_gone.load(Ordering::SeqCst))
                {
                    assert!(
                        Instant::now() < hang_guard,
                        "{c}: the auditor audited {} times in {HANG_GUARD:?} of transfers",
                        overlapping.load(Ordering::SeqCst)
                    );
                    i += 1;
                    let from = (next() % ACCOUNTS as u64) as i64;
                    let to = (from + 1 + (next() % (ACCOUNTS as u64 - 1)) as i64) % ACCOUNTS;
                    let amount = (next() % 50) as i64;
                    let r = db.run(|x| {
                        let a = x.get(t, &key![from])?.unwrap()[1].as_int().unwrap();
                        let b = x.get(t, &key![to])?.unwrap()[1].as_int().unwrap();
                        x.update(t, &key![from], &[("balance", Value::Int(a - amount))])?;
                        x.update(t, &key![to], &[("balance", Value::Int(b + amount))])
                    });
                    match r {
                        Ok(()) => {
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(Error::Conflict(_)) => {} // gave up after max_retries
                        Err(e) => panic!("{c}: unexpected error {e}"),
                    }
                }
                running.fetch_sub(1, Ordering::SeqCst);
            });
        }
        // An auditor: every snapshot, read-only or read-write, sums to the
        // total. It audits until the last transfer thread has finished;
        // only a conflict (a read-write audit that lost, after its
        // retries) is tolerated.
        let (db, t, audits, overlapping) = (&db, &t, &audits, &overlapping);
        let (done, running, auditor_gone) = (&done, &running, &auditor_gone);
        s.spawn(move || {
            // Set however the auditor ends (a failed audit panics), so
            // that the transfer threads stop waiting for it.
            struct Gone<'a>(&'a AtomicBool);
            impl Drop for Gone<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let _gone = Gone(auditor_gone);
            let mut i = 0u64;
            while running.load(Ordering::SeqCst) > 0 {
                i += 1;
                // Observed before the audit's snapshot: a transfer had
                // committed and a transfer thread was still running.
                let during = done.load(Ordering::SeqCst) > 0 && running.load(Ordering::SeqCst) > 0;
                let sum: i64 = if i.is_multiple_of(2) {
                    let mut ro = db.begin_read_only().unwrap();
                    ro.scan(t, ..)
                        .unwrap_or_else(|e| panic!("{c}: read-only audit failed: {e}"))
                        .iter()
                        .map(|r| r[1].as_int().unwrap())
                        .sum()
                } else {
                    match db.run(|x| {
                        Ok(x.scan(t, ..)?
                            .iter()
                            .map(|r| r[1].as_int().unwrap())
                            .sum::<i64>())
                    }) {
                        Ok(s) => s,
                        Err(e) if e.is_retryable() => continue,
                        Err(e) => panic!("{c}: read-write audit failed: {e}"),
                    }
                };
                assert_eq!(sum, ACCOUNTS * INITIAL, "{c}: audit saw a broken total");
                audits.fetch_add(1, Ordering::SeqCst);
                if during {
                    overlapping.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    });
    let mut ro = db.begin_read_only().unwrap();
    let total: i64 = ro
        .scan(&t, ..)
        .unwrap()
        .iter()
        .map(|r| r[1].as_int().unwrap())
        .sum();
    assert_eq!(total, ACCOUNTS * INITIAL, "{c}");
    let st = db.stats();
    let committed = done.load(Ordering::Relaxed);
    assert!(
        committed >= threads as u64 * transfers_per_thread * 9 / 10,
        "{c}: only {committed} transfers committed"
    );
    assert!(st.commits >= committed, "{c}");
    // The auditor ran while transfers did: audits that began after the
    // first transfer committed and before the last transfer thread ended.
    let overlapping = overlapping.load(Ordering::SeqCst);
    assert!(
        overlapping >= MIN_OVERLAPPING,
        "{c}: only {overlapping} audits overlapped the transfers"
    );
    assert_eq!(st.open_transactions, 1, "{c}: only our reader is open");
    eprintln!(
        "{c}: {committed} transfers, {} commits, {} aborts, {} audits ({overlapping} during transfers)",
        st.commits,
        st.aborts(),
        audits.load(Ordering::SeqCst)
    );
}

/// Every protocol on the default storage: 4 threads x 2,500 = 10,000
/// transfers each.
#[test]
fn bank_every_protocol() {
    for c in configs().protocols() {
        eprintln!("-- {c}");
        run_bank(&c, 4, 2_500 * soak());
    }
}

/// Writes installed at commit (`WriteInstall::AtCommit`), on a sample of
/// protocol x storage pairs with every protocol that takes it and every
/// storage scheme: 4 threads x 1,000 transfers each.
#[test]
fn bank_with_installs_at_commit() {
    let sample = configs()
        .protocols()
        .storages()
        .install(strata::WriteInstall::AtCommit);
    for c in sample.covering() {
        eprintln!("-- {c}");
        run_bank(&c, 4, 1_000 * soak());
    }
}

/// Every protocol on every other storage scheme: 4 threads x 1,000
/// transfers each.
#[test]
fn bank_every_protocol_on_the_other_storages() {
    for c in configs()
        .protocols()
        .storages_where(|s| s != default_storage())
    {
        eprintln!("-- {c}");
        run_bank(&c, 4, 1_000 * soak());
    }
}

/// Versions from memory spaces (one shared space, and one per thread, with
/// 4 KiB chunks so that many chunks are in play), on a sample of protocol x
/// storage pairs that has every protocol and every storage scheme.
#[test]
fn bank_memory_spaces() {
    for count in [1, 4] {
        let sample = configs().protocols().storages().with(|o| {
            o.memory_spaces(MemorySpaces::Spaces {
                count,
                increment: 4096,
            })
        });
        for c in sample.covering() {
            eprintln!("-- {count} spaces, {c}");
            run_bank(&c, 4, 1_000 * soak());
        }
    }
}
