use crate::index::hash::hint_is_stale;
use crate::index::key::EncodedKey;
use crate::{key, Database, Options, Schema, Table, Type, Value, VersionStorage};

/// Table `t (k Int primary key, v Int)`.
fn kv_table(db: &Database) -> Table {
    db.create_table(
        Schema::new("t")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .primary_key(&["k"]),
    )
    .unwrap()
}

/// (hint, chain head) of integer key `k`.
fn hint_and_head(t: &Table, k: i64) -> (*const u8, *const u8) {
    let ti = &t.inner;
    let (tuple, hint) = ti
        .index
        .get_hinted(&ti.encode(&key![k]), &crossbeam_epoch::pin())
        .unwrap();
    (hint, ti.rows.head(tuple) as *const u8)
}

fn assert_current(t: &Table, k: i64, when: &str) {
    let (hint, head) = hint_and_head(t, k);
    assert!(!hint.is_null(), "{when}: no hint");
    assert!(!hint_is_stale(hint, head), "{when}: stale hint");
}

/// LSN commit stamps: a panic between a commit's log reservation and
/// its publication (in validation) drops the reservation unpublished;
/// the transaction's rollback, during the same unwinding, fills the
/// range with a skip record. Without it the flusher would stop at the
/// hole and this later durable commit would never return.
#[test]
fn a_panic_after_reserving_leaves_a_skip_record_not_a_stalled_log() {
    use crate::{row, Durability, SyncPolicy};
    // Removed when `tmp` drops, so test runs leave nothing behind; the
    // database's own directory is made by `Database::open`, as before.
    let tmp = tempfile::Builder::new()
        .prefix("strata-lost-")
        .tempdir()
        .unwrap();
    let d = tmp.path().join("wal");
    let o = Options::default().durability(Durability::Wal {
        dir: d.clone(),
        sync: SyncPolicy::GroupCommit,
    });
    {
        let db = Database::open(o.clone()).unwrap();
        let t = db
            .create_table(Schema::new("t").column("k", Type::Int).primary_key(&["k"]))
            .unwrap();
        let mut tx = db.begin().unwrap();
        tx.insert(&t, row![1]).unwrap();
        let inner = std::sync::Arc::clone(&db.inner);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let tx = tx;
            let log = inner.log.get().unwrap();
            assert!(log.lsn_stamps());
            let _reserved = log.reserve(log.prepare(0, &tx.writes).unwrap());
            panic!("a bug in validation");
        }));
        assert!(r.is_err());
        let (done, wait) = std::sync::mpsc::channel();
        let db2 = db.clone();
        let t2 = t.clone();
        std::thread::spawn(move || {
            let r = db2.run(|tx| tx.insert(&t2, row![2]));
            let _ = done.send(r.is_ok());
        });
        assert_eq!(
            wait.recv_timeout(std::time::Duration::from_secs(20)),
            Ok(true),
            "a later durable commit returns"
        );
    }
    let db = Database::open(o).unwrap();
    assert_eq!(db.recovery_report().unwrap().skip_records, 1);
    let t = db.table("t").unwrap();
    let mut ro = db.begin_read_only().unwrap();
    assert!(ro.get(&t, &key![1]).unwrap().is_none());
    assert!(ro.get(&t, &key![2]).unwrap().is_some());
}

/// A thread's next read-write transaction starts with the last one's
/// (emptied) sets, so steady work allocates none; a bulk transaction's
/// big sets are freed, not kept.
#[test]
fn finished_sets_are_reused_by_the_threads_next_transaction() {
    let db = Database::open(Options::default()).unwrap();
    let t = kv_table(&db);
    let mut txn = db.begin().unwrap();
    for k in 0..5000 {
        txn.insert(&t, vec![Value::Int(k), Value::Int(0)]).unwrap();
    }
    txn.commit().unwrap();
    let txn = db.begin().unwrap();
    assert_eq!(txn.writes.capacity(), 0, "5,000 entries are not stashed");
    drop(txn);
    let mut txn = db.begin().unwrap();
    txn.update(&t, &key![1], &[("v", Value::Int(1))]).unwrap();
    txn.get(&t, &key![2]).unwrap();
    txn.commit().unwrap();
    let mut txn = db.begin().unwrap();
    assert!(txn.writes.capacity() > 0 && txn.reads.capacity() > 0);
    assert!(txn.writes.is_empty() && txn.reads.is_empty());
    // An abort hands its sets back too, emptied.
    txn.update(&t, &key![3], &[("v", Value::Int(3))]).unwrap();
    drop(txn);
    let mut txn = db.begin().unwrap();
    assert!(txn.writes.capacity() > 0 && txn.writes.is_empty());
    let v = txn.get(&t, &key![3]).unwrap().unwrap();
    assert_eq!(v[1], Value::Int(0), "the aborted update left no trace");
}

#[test]
fn chain_head_hints_follow_inserts_updates_and_reads() {
    for storage in VersionStorage::ALL {
        let mut o = Options::default().version_storage(storage);
        if storage == VersionStorage::Siro {
            o = o.gc(crate::GcPolicy::DeadZone); // the only GC it runs with
        }
        let db = Database::open(o).unwrap();
        let t = kv_table(&db);
        let mut txn = db.begin().unwrap();
        txn.insert(&t, vec![Value::Int(1), Value::Int(10)]).unwrap();
        txn.commit().unwrap();
        assert_current(&t, 1, &format!("{storage:?} after insert"));

        let mut txn = db.begin().unwrap();
        txn.update(&t, &key![1], &[("v", Value::Int(11))]).unwrap();
        txn.commit().unwrap();
        assert_current(&t, 1, &format!("{storage:?} after update"));

        // A hint gone stale (here: pointing nowhere) is only a wasted
        // prefetch; the read still returns the row and repairs it.
        let ti = &t.inner;
        let ek = ti.encode(&key![1]);
        let tuple = ti.index.get(&ek).unwrap();
        ti.index
            .set_hint(&ek, tuple, 0x40 as *const u8, &crossbeam_epoch::pin());
        assert!(hint_is_stale(
            hint_and_head(&t, 1).0,
            hint_and_head(&t, 1).1
        ));
        let mut r = db.begin_read_only().unwrap();
        assert_eq!(r.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(11));
        r.commit().unwrap();
        assert_current(&t, 1, &format!("{storage:?} after a read"));

        // An aborted update leaves a hint to a freed version behind.
        let mut txn = db.begin().unwrap();
        txn.update(&t, &key![1], &[("v", Value::Int(12))]).unwrap();
        txn.abort();
        let mut txn = db.begin().unwrap();
        assert_eq!(txn.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(11));
        txn.commit().unwrap();
        assert_current(&t, 1, &format!("{storage:?} after an abort"));
        assert!(matches!(ek, EncodedKey::U64(_)));
    }
}

/// A lazy range holds no epoch pin between its steps, so a tuple id it
/// fetched can be released (here: an insert in the range rolls back) and
/// handed to another row (a key far outside the range) before the
/// iterator reaches it. The iterator must skip the entry, not read the
/// id's new row: under OCC, which reads the newest committed version, it
/// would return key 1,000,000+ in the middle of `[0, 100]`.
#[test]
fn a_range_skips_a_fetched_tuple_id_that_names_another_row_by_now() {
    use crate::{row, Protocol};
    let db = Database::open(Options::default().protocol(Protocol::Occ)).unwrap();
    let t = kv_table(&db);
    db.run(|tx| (0..=10).try_for_each(|k| tx.insert(&t, row![k * 10, k])))
        .unwrap();
    let ti = &t.inner;
    let mut inserter = db.begin().unwrap();
    inserter.insert(&t, row![55, 0]).unwrap();
    let gone = ti.index.get(&ti.encode(&key![55])).unwrap();
    let mut scanner = db.begin().unwrap();
    let mut it = scanner.range(&t, key![0]..=key![100]).unwrap();
    // The first step fetched the whole range, 55's entry included.
    assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(0));
    drop(inserter); // rolls back: 55's entry goes, its id is released
    let mut far = 1_000_000;
    let reused = crate::test_util::eventually(|| {
        crossbeam_epoch::pin().flush();
        db.run(|tx| tx.insert(&t, row![far, 0])).unwrap();
        far += 1;
        ti.index.get(&ti.encode(&key![far - 1])) == Some(gone)
    });
    assert!(reused, "the released id was never handed out again");
    let rest: Vec<Value> = it.map(|r| r.unwrap()[0].clone()).collect();
    let want: Vec<Value> = (1..=10).map(|k| Value::Int(k * 10)).collect();
    assert_eq!(
        rest,
        want,
        "the id's new row (key {}) is no row of the range",
        far - 1
    );
    scanner.commit().unwrap();
}

/// `SecondaryIndex::may_be_stale` stays false through inserts of new
/// rows and updates of other columns, and turns true, for good, at the
/// first write that can leave a stale entry: an update of an indexed
/// column, a delete, an undone insert, an index built over rows. Only
/// the indexes the write concerns turn.
#[test]
fn an_index_may_hold_stale_entries_only_after_a_write_that_makes_them() {
    use crate::{row, Unique};
    let db = Database::open(Options::default()).unwrap();
    let s = db
        .create_table(
            Schema::new("s")
                .column("k", Type::Int)
                .column("a", Type::Int)
                .column("b", Type::Int)
                .column("c", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    let on_a = db.create_index("on_a", &s, &["a"], Unique::No).unwrap();
    let on_b = db.create_index("on_b", &s, &["b"], Unique::No).unwrap();
    let stale = || (on_a.inner.may_be_stale(), on_b.inner.may_be_stale());
    db.run(|x| (1..=3).try_for_each(|k| x.insert(&s, row![k, k, k, k])))
        .unwrap();
    db.run(|x| x.update(&s, &key![1], &[(3, Value::Int(9))]))
        .unwrap();
    db.run(|x| x.update(&s, &key![2], &[(1, Value::Int(2))]))
        .unwrap();
    assert_eq!(stale(), (false, false), "inserts, unchanged keys");
    db.run(|x| x.update(&s, &key![1], &[(2, Value::Int(7))]))
        .unwrap();
    assert_eq!(stale(), (false, true), "an update of b");
    db.run(|x| x.delete(&s, &key![3])).unwrap();
    assert_eq!(stale(), (true, true), "a delete");

    let u = kv_table(&db);
    let on_v = db.create_index("on_v", &u, &["v"], Unique::No).unwrap();
    let mut x = db.begin().unwrap();
    x.insert(&u, row![1, 1]).unwrap();
    assert!(!on_v.inner.may_be_stale(), "an insert in flight");
    x.abort();
    assert!(on_v.inner.may_be_stale(), "an undone insert");

    let w = db
        .create_table(Schema::new("w").column("k", Type::Int).primary_key(&["k"]))
        .unwrap();
    let empty = db.create_index("w_empty", &w, &["k"], Unique::No).unwrap();
    assert!(!empty.inner.may_be_stale(), "built over no row");
    db.run(|x| x.insert(&w, row![1])).unwrap();
    let built = db.create_index("w_built", &w, &["k"], Unique::No).unwrap();
    assert!(built.inner.may_be_stale(), "built over a row");
    assert!(!empty.inner.may_be_stale());
}
