//! The per-component time breakdown (`Options::time_breakdown`, ERMIA
//! Fig. 11): a durable mixed workload charges every component, the
//! components add up to no more than the transactions' time, and that to
//! no more than the workers' wall time; off, nothing is counted.

use crate::common;
use common::TestDir;
use std::time::Instant;
use strata::{
    key, row, Database, Durability, LogGranularity, LogTuning, Options, Schema, SyncPolicy, Table,
    Type, Unique, Value,
};

fn table(db: &Database) -> Table {
    let t = db
        .create_table(
            Schema::new("acct")
                .column("id", Type::Int)
                .column("branch", Type::Int)
                .column("balance", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    db.create_index("acct_by_branch", &t, &["branch", "id"], Unique::No)
        .unwrap();
    t
}

/// Reads, scans, index scans, updates, inserts and deletes, some of them
/// conflicting, on `threads` threads; returns the sum of the threads' wall
/// times in nanoseconds and the transactions they ended.
fn workload(db: &Database, t: &Table, threads: i64, per: i64) -> (u64, u64) {
    let idx = db.index("acct_by_branch").unwrap();
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (db, t, idx) = (db.clone(), t.clone(), idx.clone());
            std::thread::spawn(move || {
                let started = Instant::now();
                let mut ended = 0u64;
                for n in 0..per {
                    let k = n % 50;
                    let mut x = db.begin().unwrap();
                    let r = (|| {
                        let b = x.get(&t, &key![k])?.unwrap()[2].as_int().unwrap();
                        x.update(&t, &key![k], &[("balance", Value::Int(b + 1))])?;
                        x.insert(&t, row![1000 * (i + 1) + n, k % 5, 0i64])?;
                        if n > 0 {
                            x.delete(&t, &key![1000 * (i + 1) + n - 1])?;
                        }
                        x.scan_with(&t, key![0i64]..key![10i64], |_| {})?;
                        x.index_scan_with(&idx, key![k % 5]..=key![k % 5], |_| {})?;
                        Ok::<_, strata::Error>(())
                    })();
                    ended += 1;
                    // One transaction at a time per thread (an open one
                    // would run on in the read-only one's time).
                    match r {
                        Ok(()) => drop(x.commit()),
                        Err(_) => drop(x),
                    }
                    let mut ro = db.begin_read_only().unwrap();
                    ro.get(&t, &key![k]).unwrap();
                    ro.commit().unwrap();
                    ended += 1;
                }
                (started.elapsed().as_nanos() as u64, ended)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

#[test]
fn every_component_is_charged_and_they_add_up_within_the_workers_time() {
    for g in LogGranularity::ALL {
        let d = TestDir::new(&format!("strata-breakdown-{}", g.name()));
        let db = Database::open(
            Options::default()
                .durability(Durability::Wal {
                    dir: d.to_path_buf(),
                    sync: SyncPolicy::GroupCommit,
                })
                .log_tuning(LogTuning {
                    checkpoint_every_bytes: None,
                    ..LogTuning::default()
                })
                .log_granularity(g)
                .gc_every_commits(1)
                .time_breakdown(true),
        )
        .unwrap();
        let t = table(&db);
        db.run(|x| {
            for k in 0..50i64 {
                x.insert(&t, row![k, k % 5, 0i64])?;
            }
            Ok(())
        })
        .unwrap();
        let before = db.time_breakdown().expect("on");
        let (wall, ended) = workload(&db, &t, 2, 200);
        // GC is charged only by a read-write commit, and the two workers
        // can abort each other's every write (each inserts into the
        // ranges the other scans): in one CI run none of 400 committed
        // under PerOperation. One more writer, alone, commits for sure.
        let started = Instant::now();
        let mut x = db.begin().unwrap();
        x.update(&t, &key![0i64], &[("balance", Value::Int(-1))])
            .unwrap();
        x.commit().unwrap();
        let (wall, ended) = (wall + started.elapsed().as_nanos() as u64, ended + 1);
        let s = db.time_breakdown().unwrap().since(&before);
        assert_eq!(s.transactions, ended, "{g:?}: {s:?}");
        assert!(s.committed > 0 && s.committed <= ended, "{s:?}");
        for (name, ns) in s.components() {
            assert!(ns > 0, "{g:?}: {name} was not charged: {s:?}");
        }
        let named: u64 = s.components()[..7].iter().map(|c| c.1).sum();
        assert!(
            named <= s.total_ns,
            "{g:?}: components {named} > total: {s:?}"
        );
        assert!(
            s.total_ns <= wall,
            "{g:?}: transactions' time {} > the workers' wall time {wall}: {s:?}",
            s.total_ns
        );
    }
}

#[test]
fn off_nothing_is_counted() {
    let db = Database::open(Options::default()).unwrap();
    let t = table(&db);
    db.run(|x| x.insert(&t, row![1i64, 1i64, 0i64])).unwrap();
    assert_eq!(db.time_breakdown(), None);
    // On for an in-memory database: no log, no log time.
    let db = Database::open(Options::default().time_breakdown(true)).unwrap();
    let t = table(&db);
    db.run(|x| x.insert(&t, row![1i64, 1i64, 0i64])).unwrap();
    let s = db.time_breakdown().unwrap();
    assert!(s.committed >= 1 && s.committed <= s.transactions, "{s:?}");
    assert_eq!((s.log_ns, s.log_wait_ns), (0, 0), "{s:?}");
    assert!(s.index_ns > 0 && s.version_install_ns > 0, "{s:?}");
}
