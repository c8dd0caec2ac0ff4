//! Concurrent bank transfers under every protocol: the total never changes,
//! in any snapshot, and every committed transfer is counted; and again on
//! every other version storage scheme (smaller runs).

use crate::common;
use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use strata::{key, row, Error, MemorySpaces, Schema, Type, Value};

const ACCOUNTS: i64 = 20;
const INITIAL: i64 = 1_000;

fn soak() -> u64 {
    std::env::var("STRATA_SOAK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
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
    let audits = AtomicU64::new(0);
    std::thread::scope(|s| {
        for th in 0..threads {
            let (db, t, done) = (&db, &t, &done);
            s.spawn(move || {
                let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ th as u64;
                let mut next = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                for _ in 0..transfers_per_thread {
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
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(Error::Conflict(_)) => {} // gave up after max_retries
                        Err(e) => panic!("{c}: unexpected error {e}"),
                    }
                }
            });
        }
        // An auditor: every snapshot, read-only or read-write, sums to the total.
        let (db, t, audits) = (&db, &t, &audits);
        s.spawn(move || {
            for i in 0..200 {
                let sum: i64 = if i % 2 == 0 {
                    let mut ro = db.begin_read_only().unwrap();
                    ro.scan(t, ..)
                        .unwrap()
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
                        Err(_) => continue,
                    }
                };
                assert_eq!(sum, ACCOUNTS * INITIAL, "{c}: audit saw a broken total");
                audits.fetch_add(1, Ordering::Relaxed);
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
    assert!(audits.load(Ordering::Relaxed) > 0);
    assert_eq!(st.open_transactions, 1, "{c}: only our reader is open");
    eprintln!(
        "{c}: {committed} transfers, {} commits, {} aborts, {} audits",
        st.commits,
        st.aborts(),
        audits.load(Ordering::Relaxed)
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
