//! `WriteInstall::AtCommit` (issue 42, item 4; `txn::deferred`): updates
//! and deletes are buffered and installed at commit, so a second writer
//! of a row is not refused while the first one runs; a transaction reads
//! its own buffered writes (point reads, scans, iterators, secondary
//! indexes); a write that loses its row before the commit is a retryable
//! conflict then; MV2PL refuses the combination. The history checker
//! (`tests/verify.rs`), the anomaly scenarios (`tests/anomalies.rs`) and
//! the shuttle model (`tests/model.rs`) run over both installs too.

use crate::common::{self, configs, kv_table, load, value};
use strata::{
    key, row, ConflictKind, Database, Error, Options, Protocol, Unique, Value, WriteInstall,
};

fn at_commit() -> impl Iterator<Item = common::Config> {
    configs()
        .protocols()
        .install(WriteInstall::AtCommit)
        .into_iter()
}

fn set(tx: &mut strata::Transaction, t: &strata::Table, k: i64, v: i64) -> strata::Result<()> {
    tx.update(t, &key![k], &[("v", Value::Int(v))])
}

fn v_of(tx: &mut strata::Transaction, t: &strata::Table, k: i64) -> Option<i64> {
    tx.get(t, &key![k]).unwrap().map(|r| r[1].as_int().unwrap())
}

/// The defining difference: under Eager a second writer of a row is
/// refused while the first one is open; at commit both writes are taken,
/// and the first to commit wins the row (the second's commit then decides
/// by its protocol's write check, as a write made at that moment would).
#[test]
fn a_second_writer_is_not_refused_while_the_first_runs() {
    for c in configs()
        .protocols_where(|p| p != Protocol::Mv2pl)
        .installs()
    {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10)]);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        set(&mut t1, &t, 1, 11).unwrap();
        let second = set(&mut t2, &t, 1, 12);
        if c.install == WriteInstall::Eager {
            assert!(
                matches!(second, Err(Error::Conflict(ConflictKind::WriteWrite))),
                "{c}: {second:?}"
            );
            t1.commit().unwrap();
            assert_eq!(value(&db, &t, 1), Some(11), "{c}");
            continue;
        }
        second.unwrap_or_else(|e| panic!("{c}: {e}"));
        assert_eq!(db.stats().deferred_writes, 2, "{c}");
        t1.commit().unwrap();
        let r2 = t2.commit();
        // Snapshot protocols with first-updater-wins refuse a write over a
        // version committed after the snapshot; SSN's blind overwrites,
        // timestamp order (T1 is older) and the OCCs take it.
        let refused = common::refuses_blind_overwrites(c.protocol);
        if refused {
            assert!(
                matches!(r2, Err(Error::Conflict(ConflictKind::WriteWrite))),
                "{c}: {r2:?}"
            );
            assert_eq!(value(&db, &t, 1), Some(11), "{c}");
        } else {
            r2.unwrap_or_else(|e| panic!("{c}: {e}"));
            assert_eq!(value(&db, &t, 1), Some(12), "{c}");
        }
    }
}

/// A transaction sees its own buffered writes through every read: point
/// reads, projections, scans, ranges both ways, counts, and a second
/// update of the same row builds on the first.
#[test]
fn own_buffered_writes_are_read_back() {
    for c in at_commit() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20), (3, 30)]);
        let mut tx = db.begin().unwrap();
        set(&mut tx, &t, 1, 11).unwrap();
        tx.delete(&t, &key![3]).unwrap();
        assert_eq!(db.stats().deferred_writes, 2, "{c}");
        assert_eq!(v_of(&mut tx, &t, 1), Some(11), "{c}");
        // Settled by the read: a second update writes over our version.
        set(&mut tx, &t, 1, 12).unwrap();
        let cols = tx.get_columns(&t, &key![1], &["v"]).unwrap();
        assert_eq!(cols, Some(vec![Value::Int(12)]), "{c}");
        set(&mut tx, &t, 2, 21).unwrap();
        let rows: Vec<i64> = tx
            .scan(&t, ..)
            .unwrap()
            .iter()
            .map(|r| r[1].as_int().unwrap())
            .collect();
        assert_eq!(
            rows,
            vec![12, 21],
            "{c}: the scan sees the update and the delete"
        );
        set(&mut tx, &t, 2, 22).unwrap();
        let back: Vec<i64> = tx
            .range(&t, ..)
            .unwrap()
            .rev()
            .map(|r| r.unwrap()[1].as_int().unwrap())
            .collect();
        assert_eq!(back, vec![22, 12], "{c}");
        tx.delete(&t, &key![2]).unwrap();
        assert_eq!(tx.count(&t, ..).unwrap(), 1, "{c}");
        tx.commit().unwrap();
        assert_eq!(
            (value(&db, &t, 1), value(&db, &t, 2), value(&db, &t, 3)),
            (Some(12), None, None),
            "{c}"
        );
    }
}

/// A buffered delete frees its key for an insert in the same
/// transaction; a buffered update of a row we then read as absent (our
/// delete) is NotFound at once, as under Eager.
#[test]
fn a_buffered_delete_frees_the_key() {
    for c in at_commit() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10)]);
        let mut tx = db.begin().unwrap();
        tx.delete(&t, &key![1]).unwrap();
        tx.insert(&t, row![1, 100, "again"]).unwrap();
        assert_eq!(v_of(&mut tx, &t, 1), Some(100), "{c}");
        tx.delete(&t, &key![1]).unwrap();
        assert!(
            matches!(set(&mut tx, &t, 1, 5), Err(Error::NotFound { .. })),
            "{c}"
        );
        tx.commit().unwrap();
        assert_eq!(value(&db, &t, 1), None, "{c}");
    }
}

/// A write whose row another transaction deletes and commits before our
/// commit: the commit is a retryable write-write conflict and changes
/// nothing; the retry's update finds the row gone (NotFound).
#[test]
fn a_row_deleted_before_the_commit_is_a_conflict_then() {
    for c in at_commit() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let mut tx = db.begin().unwrap();
        set(&mut tx, &t, 2, 21).unwrap();
        set(&mut tx, &t, 1, 11).unwrap();
        db.run(|x| x.delete(&t, &key![1])).unwrap();
        // (MVTO refuses by timestamp order first: the deleter is younger.)
        let r = tx.commit();
        let want = match c.protocol {
            Protocol::Mvto => ConflictKind::TimestampOrder,
            _ => ConflictKind::WriteWrite,
        };
        assert!(
            matches!(r, Err(Error::Conflict(k)) if k == want),
            "{c}: {r:?}"
        );
        assert!(r.unwrap_err().is_retryable(), "{c}");
        assert_eq!(
            (value(&db, &t, 1), value(&db, &t, 2)),
            (None, Some(20)),
            "{c}"
        );
        let mut again = db.begin().unwrap();
        assert!(
            matches!(set(&mut again, &t, 1, 11), Err(Error::NotFound { .. })),
            "{c}"
        );
    }
}

/// What cannot be deferred takes the eager path, with its answer at the
/// call: an absent key is NotFound, a table with a unique secondary index
/// answers a duplicate at the update (nothing buffered).
#[test]
fn writes_that_must_answer_at_the_call_stay_eager() {
    for c in at_commit() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let mut tx = db.begin().unwrap();
        assert!(
            matches!(set(&mut tx, &t, 9, 1), Err(Error::NotFound { .. })),
            "{c}"
        );
        tx.abort();
        db.create_index("by_v", &t, &["v"], Unique::Yes).unwrap();
        let before = db.stats().deferred_writes;
        let mut tx = db.begin().unwrap();
        let dup = set(&mut tx, &t, 1, 20);
        assert!(
            matches!(dup, Err(Error::DuplicateKey { .. })),
            "{c}: {dup:?}"
        );
        set(&mut tx, &t, 1, 15).unwrap();
        assert_eq!(db.stats().deferred_writes, before, "{c}: nothing buffered");
        tx.commit().unwrap();
        assert_eq!(value(&db, &t, 1), Some(15), "{c}");
    }
}

/// A non-unique secondary index sees a buffered update of its column
/// once the transaction reads through it (the read settles the table).
#[test]
fn a_secondary_index_read_sees_buffered_writes() {
    for c in at_commit() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let by_v = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
        let mut tx = db.begin().unwrap();
        set(&mut tx, &t, 1, 30).unwrap();
        assert_eq!(db.stats().deferred_writes, 1, "{c}");
        let keys: Vec<i64> = tx
            .index_scan(&by_v, ..)
            .unwrap()
            .iter()
            .map(|r| r[0].as_int().unwrap())
            .collect();
        assert_eq!(keys, vec![2, 1], "{c}: key 1 now sorts by v = 30");
        let old = tx.index_get(&by_v, &key![10]).unwrap();
        assert!(old.is_empty(), "{c}: {old:?}");
        tx.commit().unwrap();
    }
}

/// A rolled-back transaction's buffered writes were never made, and the
/// next transaction in its slot (the buffers are per slot) does not make
/// them either.
#[test]
fn an_abort_drops_buffered_writes() {
    for c in at_commit() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let mut tx = db.begin().unwrap();
        set(&mut tx, &t, 1, 11).unwrap();
        tx.abort();
        let mut tx = db.begin().unwrap();
        set(&mut tx, &t, 1, 12).unwrap();
        drop(tx);
        db.run(|x| set(x, &t, 2, 21)).unwrap();
        assert_eq!(value(&db, &t, 1), Some(10), "{c}");
        assert_eq!(value(&db, &t, 2), Some(21), "{c}");
        // Nothing was left locked: a writer goes through.
        db.run(|x| set(x, &t, 1, 13)).unwrap();
        assert_eq!(value(&db, &t, 1), Some(13), "{c}");
    }
}

/// MV2PL refuses installs at commit, naming why; the others accept them.
#[test]
fn mv2pl_refuses_installs_at_commit() {
    let r = Options::default()
        .protocol(Protocol::Mv2pl)
        .write_install(WriteInstall::AtCommit)
        .validate();
    assert!(
        matches!(&r, Err(Error::InvalidConfig(m)) if m.contains("mv2pl") && m.contains("two-phase")),
        "{r:?}"
    );
    let refused: Vec<String> = configs()
        .protocols()
        .install(WriteInstall::AtCommit)
        .rejected()
        .iter()
        .map(|c| c.protocol.to_string())
        .collect();
    assert_eq!(refused, vec!["mv2pl"]);
    assert!(Database::open(Options::default().write_install(WriteInstall::AtCommit)).is_ok());
}

/// Hot rows: four threads add to two counters. Every committed increment
/// is in the final sums (no update is lost), under every protocol and
/// both installs; at commit the rows' conflicts come at commit.
#[test]
fn hot_counters_lose_no_increment() {
    for c in configs().protocols().installs() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0), (2, 0)]);
        let done = std::sync::atomic::AtomicI64::new(0);
        std::thread::scope(|s| {
            for th in 0..4i64 {
                let (db, t, done) = (&db, &t, &done);
                s.spawn(move || {
                    for i in 0..100i64 {
                        let k = 1 + (th + i) % 2;
                        db.run(|x| {
                            let v = x.get(t, &key![k])?.unwrap()[1].as_int().unwrap();
                            set(x, t, k, v + 1)
                        })
                        .unwrap();
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        let sum = value(&db, &t, 1).unwrap() + value(&db, &t, 2).unwrap();
        assert_eq!(sum, done.into_inner(), "{c}");
    }
}
