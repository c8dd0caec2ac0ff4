//! `Database::snapshot`: a read-only snapshot shared by threads through
//! `&`, reading the state of its moment while writers change every row it
//! reads, under every storage scheme, and keeping those versions from GC.

use crate::common;
use std::ops::ControlFlow;
use strata::{key, row, Database, Error, Options, Protocol, Snapshot, Value};

const ROWS: i64 = 64;
const OPENING: i64 = 100;

fn is_shared<T: Send + Sync>() {}

/// Four threads read one `&Snapshot` (gets, scans, counts) while two
/// writers move amounts between rows and GC runs: every thread sees the
/// opening balances, the snapshot's state, to the end; a snapshot taken
/// afterwards sees the writers' total, also whole.
#[test]
fn threads_share_one_snapshot_while_writers_change_its_rows() {
    is_shared::<Snapshot>();
    for cfg in common::configs().storages().valid() {
        let db = cfg.open();
        let t = common::counters_table(&db, ROWS);
        db.run(|tx| {
            (0..ROWS).try_for_each(|k| tx.update(&t, &key![k], &[("v", Value::Int(OPENING))]))
        })
        .unwrap();
        let snap = db.snapshot().unwrap();
        std::thread::scope(|s| {
            for w in 0..2i64 {
                let (db, t) = (&db, &t);
                s.spawn(move || {
                    for i in 0..300i64 {
                        let (a, b) = ((i * 7 + w) % ROWS, (i * 13 + 5 + w) % ROWS);
                        let moved = db.run(|tx| {
                            let va = tx.get(t, &key![a])?.unwrap()[1].as_int().unwrap();
                            let vb = tx.get(t, &key![b])?.unwrap()[1].as_int().unwrap();
                            tx.update(t, &key![a], &[("v", Value::Int(va - 1))])?;
                            tx.update(t, &key![b], &[("v", Value::Int(vb + 1))])
                        });
                        if a != b {
                            moved.unwrap();
                        }
                        if i % 50 == 0 {
                            db.collect_garbage();
                        }
                    }
                });
            }
            for r in 0..4 {
                let (snap, t, cfg) = (&snap, &t, &cfg);
                s.spawn(move || {
                    for _ in 0..60 {
                        let gets: Vec<i64> = (0..ROWS)
                            .map(|k| snap.get(t, &key![k]).unwrap().unwrap()[1].as_int().unwrap())
                            .collect();
                        assert!(
                            gets.iter().all(|&v| v == OPENING),
                            "{cfg} reader {r}: {gets:?}"
                        );
                        let mut sum = 0;
                        snap.scan_while(t, .., |row| {
                            sum += row[1].as_int().unwrap();
                            ControlFlow::Continue(())
                        })
                        .unwrap();
                        assert_eq!(sum, ROWS * OPENING, "{cfg} reader {r}");
                        assert_eq!(snap.count(t, key![10]..key![20]).unwrap(), 10);
                    }
                });
            }
        });
        let after = db.snapshot().unwrap();
        let rows = after.scan(&t, ..).unwrap();
        let total: i64 = rows.iter().map(|r| r[1].as_int().unwrap()).sum();
        assert_eq!(total, ROWS * OPENING, "{cfg}");
        assert!(
            rows.iter().any(|r| r[1] != Value::Int(OPENING)),
            "{cfg}: the writers wrote"
        );
        assert_eq!(snap.scan(&t, ..).unwrap().len() as i64, ROWS);
    }
}

/// What a snapshot reads: absent keys, deleted rows, rows inserted after
/// it; bad keys and tables are typed errors.
#[test]
fn a_snapshot_reads_its_moment_and_refuses_bad_input() {
    let db = common::db(Protocol::SiSsn);
    let t = common::kv_table(&db);
    common::load(&db, &t, &[(1, 10), (2, 20), (3, 30)]);
    let snap = db.snapshot().unwrap();
    db.run(|tx| {
        tx.delete(&t, &key![1])?;
        tx.insert(&t, row![4, 40, "n"])
    })
    .unwrap();
    assert_eq!(snap.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(10));
    assert_eq!(snap.get(&t, &key![4]).unwrap(), None);
    assert_eq!(snap.get(&t, &key![9]).unwrap(), None);
    assert_eq!(snap.count(&t, ..).unwrap(), 3);
    assert_eq!(
        snap.read_with(&t, &key![2], |r| r[1].clone()).unwrap(),
        Some(Value::Int(20))
    );
    let now = db.snapshot().unwrap();
    let keys: Vec<_> = now
        .scan(&t, ..)
        .unwrap()
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(keys, [Value::Int(2), Value::Int(3), Value::Int(4)]);
    assert!(now.ts() > snap.ts());
    assert!(matches!(
        snap.get(&t, &key!["text"]),
        Err(Error::TypeMismatch { .. })
    ));
    let other = Database::open(Options::default()).unwrap();
    let u = common::kv_table(&other);
    assert!(matches!(snap.get(&u, &key![1]), Err(Error::Schema(_))));
    assert!(matches!(snap.scan(&u, ..), Err(Error::Schema(_))));
}

/// `Snapshot::range` from several threads at once, from either end: each
/// sees the snapshot's rows, lazily, whatever the writers did since.
#[test]
fn threads_walk_one_snapshot_lazily_from_either_end() {
    let db = common::db(Protocol::SiSsn);
    let t = common::counters_table(&db, 500);
    let snap = db.snapshot().unwrap();
    db.run(|tx| (0..250).try_for_each(|k| tx.delete(&t, &key![k])))
        .unwrap();
    std::thread::scope(|s| {
        for rev in [false, true] {
            let (snap, t) = (&snap, &t);
            s.spawn(move || {
                let it = snap.range(t, key![100]..key![400]).unwrap();
                let mut keys: Vec<i64> = if rev {
                    it.rev().map(|r| r.unwrap()[0].as_int().unwrap()).collect()
                } else {
                    it.map(|r| r.unwrap()[0].as_int().unwrap()).collect()
                };
                if rev {
                    keys.reverse();
                }
                assert_eq!(keys, (100..400).collect::<Vec<_>>(), "rev {rev}");
                let first: Vec<_> = snap
                    .range_keys(t, ..)
                    .unwrap()
                    .take(2)
                    .map(|k| k.unwrap())
                    .collect();
                assert_eq!(first, [key![0], key![1]]);
            });
        }
    });
    assert_eq!(db.snapshot().unwrap().range(&t, ..).unwrap().count(), 250);
}

/// Readers at one snapshot (`Snapshot::reader`), one per thread, scan a
/// secondary index as of the snapshot while a writer moves every row's
/// indexed value; a reader keeps that state after the snapshot is dropped
/// and GC has run.
#[test]
fn readers_at_one_snapshot_scan_an_index_as_of_it() {
    for kind in strata::IndexKind::ALL {
        let db = Database::open(Options::default().mvpbt_partition_records(16)).unwrap();
        let t = common::counters_table(&db, 200);
        let by_v = db
            .create_index_as("by_v", &t, &["v"], strata::Unique::No, kind)
            .unwrap();
        let snap = db.snapshot().unwrap();
        let late = snap.reader().unwrap();
        std::thread::scope(|s| {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for round in 1..=5 {
                    db.run(|tx| {
                        (0..200)
                            .try_for_each(|k| tx.update(t, &key![k], &[("v", Value::Int(round))]))
                    })
                    .unwrap();
                }
            });
            for _ in 0..2 {
                let (snap, by_v) = (&snap, &by_v);
                s.spawn(move || {
                    let mut r = snap.reader().unwrap();
                    assert_eq!(r.snapshot_ts(), snap.ts());
                    assert_eq!(r.index_get(by_v, &key![0]).unwrap().len(), 200, "{kind:?}");
                    assert!(
                        r.index_scan(by_v, key![1]..).unwrap().is_empty(),
                        "{kind:?}"
                    );
                });
            }
        });
        drop(snap);
        for _ in 0..4 {
            db.collect_garbage();
        }
        let mut late = late;
        assert_eq!(
            late.index_get(&by_v, &key![0]).unwrap().len(),
            200,
            "{kind:?}"
        );
        assert_eq!(
            late.scan(&t, ..)
                .unwrap()
                .iter()
                .filter(|r| r[1] == Value::Int(0))
                .count(),
            200
        );
    }
}
