//! Concurrent bank transfers under every protocol: the total never changes,
//! in any snapshot, and every committed transfer is counted; and again on
//! every other version storage scheme (smaller runs).

mod common;
use std::sync::atomic::{AtomicU64, Ordering};
use strata::{
    key, row, Database, Error, MemorySpaces, Options, Protocol, Schema, Type, Value, VersionStorage,
};

const ACCOUNTS: i64 = 20;
const INITIAL: i64 = 1_000;

fn soak() -> u64 {
    std::env::var("STRATA_SOAK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

fn run_bank(p: Protocol, threads: usize, transfers_per_thread: u64) {
    run_bank_on(
        p,
        VersionStorage::AppendNewToOld,
        threads,
        transfers_per_thread,
    )
}

fn run_bank_on(p: Protocol, storage: VersionStorage, threads: usize, transfers_per_thread: u64) {
    run_bank_with(
        Options::default().protocol(p).version_storage(storage),
        threads,
        transfers_per_thread,
    )
}

fn run_bank_with(opts: Options, threads: usize, transfers_per_thread: u64) {
    let p = opts.protocol;
    let db = Database::open(opts).unwrap();
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
                        Err(e) => panic!("{p}: unexpected error {e}"),
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
                assert_eq!(sum, ACCOUNTS * INITIAL, "{p}: audit saw a broken total");
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
    assert_eq!(total, ACCOUNTS * INITIAL, "{p}");
    let st = db.stats();
    let committed = done.load(Ordering::Relaxed);
    assert!(
        committed >= threads as u64 * transfers_per_thread * 9 / 10,
        "{p}: only {committed} transfers committed"
    );
    assert!(st.commits >= committed, "{p}");
    assert!(audits.load(Ordering::Relaxed) > 0);
    assert_eq!(st.open_transactions, 1, "{p}: only our reader is open");
    eprintln!(
        "{p}: {committed} transfers, {} commits, {} aborts, {} audits",
        st.commits,
        st.aborts(),
        audits.load(Ordering::Relaxed)
    );
}

macro_rules! bank_test {
    ($name:ident, $p:expr) => {
        #[test]
        fn $name() {
            // 4 threads x 2,500 = 10,000 transfers per protocol.
            run_bank($p, 4, 2_500 * soak());
        }
    };
}

bank_test!(bank_mvto, Protocol::Mvto);
bank_test!(bank_mvocc, Protocol::Mvocc);
bank_test!(bank_mv2pl, Protocol::Mv2pl);
bank_test!(bank_si, Protocol::Si);
bank_test!(bank_ssn, Protocol::SiSsn);
bank_test!(bank_ssi, Protocol::SiSsi);

/// Every protocol on O2N, time-travel and delta: 4 threads x 1,000 transfers.
macro_rules! bank_storage_test {
    ($($name:ident => $p:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            for s in [
                VersionStorage::AppendOldToNew,
                VersionStorage::TimeTravel,
                VersionStorage::Delta,
            ] {
                eprintln!("-- {s}");
                run_bank_on(Protocol::$p, s, 4, 1_000 * soak());
            }
        }
    )*};
}

bank_storage_test!(
    bank_storages_mvto => Mvto,
    bank_storages_mvocc => Mvocc,
    bank_storages_mv2pl => Mv2pl,
    bank_storages_si => Si,
    bank_storages_ssn => SiSsn,
    bank_storages_ssi => SiSsi,
);

/// Versions from memory spaces (one shared space, and one per thread, with
/// 4 KiB chunks so that many chunks are in play), append-only and delta.
#[test]
fn bank_memory_spaces() {
    for count in [1, 4] {
        for (p, s) in [
            (Protocol::SiSsn, VersionStorage::AppendNewToOld),
            (Protocol::Mvto, VersionStorage::Delta),
            (Protocol::Mv2pl, VersionStorage::TimeTravel),
        ] {
            eprintln!("-- {count} spaces, {p} on {s}");
            let opts = Options::default()
                .protocol(p)
                .version_storage(s)
                .memory_spaces(MemorySpaces::Spaces {
                    count,
                    increment: 4096,
                });
            run_bank_with(opts, 4, 1_000 * soak());
        }
    }
}
