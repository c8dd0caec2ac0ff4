//! Per-operation logging (`LogGranularity::PerOperation`, ERMIA Fig. 10's
//! "traditional" logging): every write reserves its own record in the log
//! buffer; recovery applies a transaction's operation records only when a
//! commit record names them, also across checkpoints taken while they
//! were open.

use crate::common;
use common::{protocols_where, TestDir};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use strata::{
    key, row, Database, Durability, Error, LogGranularity, LogTuning, Options, Protocol, Schema,
    SyncPolicy, Table, Type, Value,
};

fn dir(name: &str) -> TestDir {
    TestDir::new(&format!("strata-opslog-{name}"))
}

fn opts(d: &Path, g: LogGranularity, t: LogTuning) -> Options {
    Options::default()
        .durability(Durability::Wal {
            dir: d.to_path_buf(),
            sync: SyncPolicy::GroupCommit,
        })
        .log_tuning(t)
        .log_granularity(g)
}

fn no_checkpoints() -> LogTuning {
    LogTuning {
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    }
}

fn open(d: &Path, g: LogGranularity) -> Database {
    Database::open(opts(d, g, no_checkpoints())).expect("open")
}

fn kv(db: &Database) -> Table {
    db.create_table(
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .primary_key(&["k"]),
    )
    .unwrap()
}

fn all(db: &Database, t: &Table) -> BTreeMap<i64, i64> {
    db.begin_read_only()
        .unwrap()
        .scan(t, ..)
        .unwrap()
        .into_iter()
        .map(|r| (r[0].as_int().unwrap(), r[1].as_int().unwrap()))
        .collect()
}

fn copy_dir(from: &Path, name: &str) -> TestDir {
    let to = dir(name);
    fs::create_dir_all(&to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    to
}

/// The files as a crash leaves them (see `durability.rs`): `db` is leaked
/// and its directory copied while it is open.
fn crash_copy(db: Database, d: &Path, name: &str) -> TestDir {
    std::mem::forget(db);
    copy_dir(d, name)
}

/// Per transaction: one reservation (one record) per committing writer.
/// Per operation: one per write (an insert, an update of our own insert,
/// an update of a committed row, a delete) and one for the commit; a
/// read-only transaction reserves nothing either way.
#[test]
fn log_buffer_reservations_are_one_per_transaction_or_one_per_write_plus_commit() {
    for g in LogGranularity::ALL {
        let d = dir(&format!("count-{}", g.name()));
        let db = open(&d, g);
        let t = kv(&db);
        db.run(|x| x.insert(&t, row![-1i64, 0i64])).unwrap();
        db.sync_log().unwrap();
        let before = db.log_stats().unwrap();
        let n = 20i64;
        for i in 0..n {
            db.run(|x| {
                x.insert(&t, row![i, i])?;
                x.update(&t, &key![i], &[("v", Value::Int(i + 1))])?;
                x.update(&t, &key![-1i64], &[("v", Value::Int(i))])?;
                if i > 0 {
                    x.delete(&t, &key![i - 1])?;
                }
                Ok(())
            })
            .unwrap();
            db.begin_read_only().unwrap().get(&t, &key![i]).unwrap();
        }
        db.sync_log().unwrap();
        let after = db.log_stats().unwrap();
        let writes = (4 * n - 1) as u64;
        let (records, ops) = match g {
            LogGranularity::PerTransaction => (n as u64, 0),
            LogGranularity::PerOperation => (n as u64 + writes, writes),
        };
        assert_eq!(after.records - before.records, records, "{g:?}");
        assert_eq!(
            after.operation_records - before.operation_records,
            ops,
            "{g:?}"
        );
        assert_eq!(db.stats().commits, n as u64 + 1);
        assert_eq!(all(&db, &t).len(), 2, "{g:?}");
    }
}

/// A run with per-operation logging, crashed: commits of every kind of
/// write come back; transactions that logged operations and then rolled
/// back (by `abort`, by being dropped, by a conflict at commit), and one
/// still open at the crash, leave nothing. The recovered state is the one
/// per-transaction logging recovers from the same run.
#[test]
fn recovery_replays_committed_operations_and_discards_those_of_aborted_transactions() {
    // Live directories stay to the end: leaked databases still hold them.
    let mut live = Vec::new();
    for p in protocols_where(|p| p != Protocol::Mvto) {
        let mut recovered = Vec::new();
        for g in LogGranularity::ALL {
            let name = format!("recover-{}-{}", p.name(), g.name());
            let d = dir(&format!("{name}-live"));
            let db = Database::open(opts(&d, g, no_checkpoints()).protocol(p)).unwrap();
            let t = kv(&db);
            let mut want = BTreeMap::new();
            for k in 0..30i64 {
                db.run(|x| x.insert(&t, row![k, k])).unwrap();
                want.insert(k, k);
            }
            // Aborted after logging: explicitly, and by drop.
            let mut a = db.begin().unwrap();
            a.update(&t, &key![1i64], &[("v", Value::Int(-1))]).unwrap();
            a.insert(&t, row![100i64, 100i64]).unwrap();
            a.delete(&t, &key![2i64]).unwrap();
            a.abort();
            {
                let mut b = db.begin().unwrap();
                b.update(&t, &key![3i64], &[("v", Value::Int(-3))]).unwrap();
                b.insert(&t, row![101i64, 101i64]).unwrap();
            }
            // Committed: updates (twice one row), a delete, an insert then
            // an update and a delete of it, a re-insert over a delete.
            db.run(|x| {
                x.update(&t, &key![4i64], &[("v", Value::Int(40))])?;
                x.update(&t, &key![4i64], &[("v", Value::Int(41))])?;
                x.delete(&t, &key![5i64])?;
                x.insert(&t, row![200i64, 1i64])?;
                x.update(&t, &key![200i64], &[("v", Value::Int(2))])?;
                x.insert(&t, row![201i64, 1i64])?;
                x.delete(&t, &key![201i64])?;
                x.delete(&t, &key![6i64])?;
                x.insert(&t, row![6i64, 66i64])
            })
            .unwrap();
            want.insert(4, 41);
            want.remove(&5);
            want.insert(200, 2);
            want.insert(6, 66);
            // A conflict: the loser logged its update, then rolled back.
            let mut c = db.begin().unwrap();
            c.update(&t, &key![7i64], &[("v", Value::Int(-7))]).unwrap();
            let mut w = db.begin().unwrap();
            match w.update(&t, &key![7i64], &[("v", Value::Int(70))]) {
                Err(Error::Conflict(_)) => {}
                r => panic!("{p:?}: expected a write-write conflict, got {r:?}"),
            }
            c.commit().unwrap();
            want.insert(7, -7);
            // Open at the crash, its operations flushed by a later commit.
            let mut open_txn = db.begin().unwrap();
            open_txn
                .update(&t, &key![8i64], &[("v", Value::Int(-8))])
                .unwrap();
            open_txn.insert(&t, row![300i64, 300i64]).unwrap();
            db.run(|x| x.update(&t, &key![9i64], &[("v", Value::Int(99))]))
                .unwrap();
            want.insert(9, 99);
            db.sync_log().unwrap();
            assert_eq!(all(&db, &t), {
                let mut seen = want.clone();
                // (The open transaction's writes are its own.)
                seen.insert(8, 8);
                seen
            });
            let crashed = crash_copy(db, &d, &name);
            std::mem::forget(open_txn);
            let db = open(&crashed, g);
            let r = db.recovery_report().unwrap();
            assert_eq!(
                all(&db, &db.table("kv").unwrap()),
                want,
                "{p:?} {g:?}: {r:?}"
            );
            match g {
                LogGranularity::PerTransaction => {
                    assert_eq!(r.operation_records, 0, "{r:?}");
                }
                LogGranularity::PerOperation => {
                    // 30 inserts, 9 writes of one commit, the conflict's
                    // winner and the later update: 41 claimed; 3 + 2
                    // rolled back and 2 open: 7 discarded.
                    assert_eq!(r.operation_records, 48, "{p:?}: {r:?}");
                    assert_eq!(r.operation_records_discarded, 7, "{p:?}: {r:?}");
                }
            }
            recovered.push(all(&db, &db.table("kv").unwrap()));
            live.push(d);
        }
        assert_eq!(recovered[0], recovered[1], "{p:?}");
    }
}

/// A checkpoint taken while a transaction has logged operations but not
/// committed: the transaction commits after the checkpoint's begin LSN,
/// so its writes are not in the checkpoint, and its operation records lie
/// before that LSN. Replay starts low enough to find them (the segments
/// holding them survive the checkpoint), and passes over the catalog
/// record it meets below the begin LSN (the checkpoint's catalog has it).
#[test]
fn a_checkpoint_keeps_the_operation_records_of_open_transactions() {
    let d = dir("ckpt");
    let tuning = LogTuning {
        segment_bytes: 4096,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let g = LogGranularity::PerOperation;
    let (want, open_ops_lsn) = {
        let db = Database::open(opts(&d, g, tuning.clone())).unwrap();
        let t = kv(&db);
        for k in 0..200i64 {
            db.run(|x| x.insert(&t, row![k, k])).unwrap();
        }
        let mut long = db.begin().unwrap();
        for k in 0..20i64 {
            long.update(&t, &key![k], &[("v", Value::Int(-k))]).unwrap();
        }
        let at = db.log_stats().unwrap().bytes;
        let other = db
            .create_table(
                Schema::new("other")
                    .column("k", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        // Enough log after the open transaction's records to fill several
        // segments, which the checkpoint could remove.
        for k in 200..400i64 {
            db.run(|x| x.insert(&t, row![k, k])).unwrap();
        }
        db.run(|x| x.insert(&other, row![1i64])).unwrap();
        assert_eq!(db.checkpoint().unwrap(), 401);
        for k in 20..25i64 {
            long.update(&t, &key![k], &[("v", Value::Int(-k))]).unwrap();
        }
        long.commit().unwrap();
        db.run(|x| x.update(&t, &key![300i64], &[("v", Value::Int(0))]))
            .unwrap();
        let want = all(&db, &t);
        assert_eq!(want[&3], -3);
        (want, at)
    };
    let db = Database::open(opts(&d, g, tuning)).unwrap();
    let r = db.recovery_report().unwrap();
    assert!(r.checkpoint.is_some(), "{r:?}");
    assert_eq!(all(&db, &db.table("kv").unwrap()), want, "{r:?}");
    assert!(
        r.replay_from_lsn <= open_ops_lsn,
        "replay starts at or below the open transaction's records: {r:?}"
    );
    let other = db.table("other").unwrap();
    assert_eq!(
        db.begin_read_only()
            .unwrap()
            .scan(&other, ..)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(r.catalog_records_replayed, 0, "{r:?}");
}

/// Threads commit, conflict, retry and abort under per-operation logging
/// while background checkpoints run; after a crash, every committed
/// increment of the shared counters and every committed row is back, and
/// nothing of the aborted transactions (after a clean close: a crash
/// copy could race the checkpointer's removal of segments).
#[test]
fn concurrent_writers_and_background_checkpoints_recover_exactly_the_commits() {
    let d = dir("concurrent");
    let tuning = LogTuning {
        segment_bytes: 8192,
        checkpoint_every_bytes: Some(32 << 10),
        ..LogTuning::default()
    };
    let g = LogGranularity::PerOperation;
    let db = Database::open(opts(&d, g, tuning)).unwrap();
    let t = kv(&db);
    let counters = 4i64;
    for c in 0..counters {
        db.run(|x| x.insert(&t, row![c, 0i64])).unwrap();
    }
    let per = 150 * common::soak() as i64;
    let threads: Vec<_> = (0..3i64)
        .map(|i| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                let mut mine = BTreeMap::new();
                for n in 0..per {
                    let c = n % counters;
                    let k = 1000 * (i + 1) + n;
                    db.run(|x| {
                        let v = x.get(&t, &key![c])?.unwrap()[1].as_int().unwrap();
                        x.update(&t, &key![c], &[("v", Value::Int(v + 1))])?;
                        x.insert(&t, row![k, n])
                    })
                    .unwrap();
                    mine.insert(k, n);
                    // Logged, then rolled back.
                    let mut a = db.begin().unwrap();
                    if a.insert(&t, row![-k, n]).is_ok() {
                        let _ = a.update(&t, &key![k], &[("v", Value::Int(-1))]);
                    }
                    a.abort();
                }
                mine
            })
        })
        .collect();
    let mut want = BTreeMap::new();
    for h in threads {
        want.extend(h.join().unwrap());
    }
    db.sync_log().unwrap();
    common::eventually(|| db.log_stats().unwrap().checkpoints > 0);
    drop((db, t));
    let db = open(&d, g);
    let r = db.recovery_report().unwrap();
    assert!(r.checkpoint.is_some(), "{r:?}");
    let got = all(&db, &db.table("kv").unwrap());
    let increments: i64 = (0..counters).map(|c| got[&c]).sum();
    assert_eq!(increments, 3 * per, "{r:?}");
    let rows: BTreeMap<i64, i64> = got.into_iter().filter(|(k, _)| *k >= counters).collect();
    assert_eq!(rows, want, "{r:?}");
}

#[test]
fn per_operation_logging_needs_the_log_and_lsn_stamps() {
    let mem = Options::default().log_granularity(LogGranularity::PerOperation);
    match Database::open(mem) {
        Err(Error::InvalidConfig(m)) => assert!(m.contains("write-ahead log"), "{m}"),
        r => panic!("expected InvalidConfig, got {:?}", r.map(|_| ())),
    }
    let d = dir("mvto");
    let mvto = opts(&d, LogGranularity::PerOperation, no_checkpoints()).protocol(Protocol::Mvto);
    match Database::open(mvto) {
        Err(Error::InvalidConfig(m)) => assert!(m.contains("mvto"), "{m}"),
        r => panic!("expected InvalidConfig, got {:?}", r.map(|_| ())),
    }
}
