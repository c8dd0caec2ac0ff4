//! Every operation and error path of the public API, under every protocol.

use crate::common;
use common::*;
use std::ops::ControlFlow;
use strata::{
    key, row, ConflictKind, Database, Error, Key, Options, Protocol, Row, Schema, Type, Value,
};

#[test]
fn insert_get_update_delete_roundtrip() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        let mut txn = db.begin().unwrap();
        txn.insert(&t, row![1, 10, "a"]).unwrap();
        txn.insert(&t, row![2, 20, "b"]).unwrap();
        // Own writes are visible before commit.
        assert_eq!(
            txn.get(&t, &key![1]).unwrap(),
            Some(row![1, 10, "a"]),
            "{p}"
        );
        txn.commit().unwrap();

        let mut txn = db.begin().unwrap();
        txn.update(&t, &key![1], &[("v", Value::Int(11))]).unwrap();
        txn.update(&t, &key![1], &[(2usize, Value::from("aa"))])
            .unwrap();
        txn.delete(&t, &key![2]).unwrap();
        assert_eq!(txn.get(&t, &key![2]).unwrap(), None, "{p}");
        txn.commit().unwrap();

        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.get(&t, &key![1]).unwrap(),
            Some(row![1, 11, "aa"]),
            "{p}"
        );
        assert_eq!(ro.get(&t, &key![2]).unwrap(), None, "{p}");
        ro.commit().unwrap();

        // A deleted key can be inserted again.
        let mut txn = db.begin().unwrap();
        txn.insert(&t, row![2, 22, "b2"]).unwrap();
        txn.commit().unwrap();
        assert_eq!(value(&db, &t, 2), Some(22), "{p}");
    }
}

#[test]
fn scan_returns_visible_rows_in_key_order() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(5, 50), (1, 10), (3, 30), (-2, -20), (9, 90)]);
        let mut txn = db.begin().unwrap();
        txn.delete(&t, &key![3]).unwrap();
        let keys: Vec<i64> = txn
            .scan(&t, key![-5]..key![9])
            .unwrap()
            .iter()
            .map(|r| r[0].as_int().unwrap())
            .collect();
        assert_eq!(keys, vec![-2, 1, 5], "{p}");
        let all = txn.scan(&t, ..).unwrap().len();
        assert_eq!(all, 4, "{p}");
        let incl = txn.scan(&t, key![1]..=key![9]).unwrap().len();
        assert_eq!(incl, 3, "{p}");
        txn.commit().unwrap();
    }
}

/// `scan_limit` and `scan_while` stop early: the first rows visible to the
/// transaction (its own writes in, its deletes out), in key order.
#[test]
fn limited_scans_return_the_first_visible_rows() {
    let ints = |rows: &[Row]| -> Vec<i64> { rows.iter().map(|r| r[0].as_int().unwrap()).collect() };
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(5, 50), (1, 10), (3, 30), (-2, -20), (9, 90)]);
        let mut txn = db.begin().unwrap();
        txn.delete(&t, &key![1]).unwrap();
        txn.insert(&t, row![2, 20, "own"]).unwrap();
        let first = txn.scan_limit(&t, key![-5]..key![9], 3).unwrap();
        assert_eq!(ints(&first), vec![-2, 2, 3], "{p}");
        // More than the range holds: all of it, as `scan`.
        let all = txn.scan_limit(&t, .., 100).unwrap();
        assert_eq!(all, txn.scan(&t, ..).unwrap(), "{p}");
        assert_eq!(ints(&all), vec![-2, 2, 3, 5, 9], "{p}");
        assert!(txn.scan_limit(&t, .., 0).unwrap().is_empty(), "{p}");
        // The row that breaks is the last one read and counted.
        let mut read = Vec::new();
        let n = txn
            .scan_while(&t, key![0].., |r| {
                read.push(r[0].as_int().unwrap());
                if r[1].as_int() == Some(50) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!((n, read), (3, vec![2, 3, 5]), "{p}");
        // Bad bounds are refused also when nothing would be read.
        for limit in [0, 1] {
            assert!(
                matches!(
                    txn.scan_limit(&t, key!["x"]..key!["y"], limit),
                    Err(Error::TypeMismatch { .. })
                ),
                "{p}"
            );
        }
        txn.commit().unwrap();
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ints(&ro.scan_limit(&t, key![3].., 2).unwrap()),
            vec![3, 5],
            "{p}"
        );
        ro.commit().unwrap();
    }
}

#[test]
fn composite_and_text_primary_keys_keep_order() {
    let db = Database::open(Options::default()).unwrap();
    let t = db
        .create_table(
            Schema::new("c")
                .column("a", Type::Text)
                .column("b", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["a", "b"]),
        )
        .unwrap();
    let mut txn = db.begin().unwrap();
    for (a, b) in [("b", 1), ("a", 2), ("a", -1), ("ab", 0), ("b", -3)] {
        txn.insert(&t, row![a, b, 0]).unwrap();
    }
    let got: Vec<(String, i64)> = txn
        .scan(&t, ..)
        .unwrap()
        .into_iter()
        .map(|r| (r[0].as_text().unwrap().to_string(), r[1].as_int().unwrap()))
        .collect();
    let want: Vec<(String, i64)> = [("a", -1), ("a", 2), ("ab", 0), ("b", -3), ("b", 1)]
        .iter()
        .map(|(a, b)| (a.to_string(), *b))
        .collect();
    assert_eq!(got, want);
    assert_eq!(txn.scan(&t, key!["a", 0]..key!["b", 0]).unwrap().len(), 3);
    txn.commit().unwrap();
}

#[test]
fn typed_errors_for_bad_input_leave_the_transaction_usable() {
    let db = db(Protocol::SiSsn);
    let t = kv_table(&db);
    load(&db, &t, &[(1, 10)]);
    let mut txn = db.begin().unwrap();
    assert!(matches!(
        txn.insert(&t, row![1, 5, "x"]),
        Err(Error::DuplicateKey { .. })
    ));
    assert!(matches!(
        txn.insert(&t, row![2, "oops", "x"]),
        Err(Error::TypeMismatch { table, column, expected: Type::Int, found: Type::Text })
            if table == "kv" && column == "v"
    ));
    assert!(matches!(txn.insert(&t, row![2, 5]), Err(Error::Schema(_))));
    assert!(matches!(
        txn.get(&t, &key!["text"]),
        Err(Error::TypeMismatch { .. })
    ));
    assert!(matches!(txn.get(&t, &key![1, 2]), Err(Error::Schema(_))));
    assert!(matches!(
        txn.update(&t, &key![1], &[("nope", Value::Int(1))]),
        Err(Error::NoSuchColumn { table, column }) if table == "kv" && column == "nope"
    ));
    assert!(matches!(
        txn.update(&t, &key![1], &[("v", Value::from("s"))]),
        Err(Error::TypeMismatch { .. })
    ));
    // A null for a column not declared nullable, in a row, an update, a key.
    assert!(matches!(
        txn.insert(&t, row![2, None::<i64>, "x"]),
        Err(Error::NullNotAllowed { table, column }) if table == "kv" && column == "v"
    ));
    assert!(matches!(
        txn.update(&t, &key![1], &[("v", Value::Null)]),
        Err(Error::NullNotAllowed { .. })
    ));
    assert!(matches!(
        txn.get(&t, &Key(vec![Value::Null])),
        Err(Error::NullNotAllowed { .. })
    ));
    assert!(matches!(
        txn.update(&t, &key![1], &[("k", Value::Int(7))]),
        Err(Error::Schema(_))
    ));
    assert!(matches!(
        txn.update(&t, &key![9], &[("v", Value::Int(1))]),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        txn.delete(&t, &key![9]),
        Err(Error::NotFound { .. })
    ));
    // None of that changed anything, and the transaction still works.
    txn.update(&t, &key![1], &[("v", Value::Int(11))]).unwrap();
    txn.commit().unwrap();
    assert_eq!(value(&db, &t, 1), Some(11));

    let mut ro = db.begin_read_only().unwrap();
    assert!(matches!(
        ro.insert(&t, row![3, 3, "x"]),
        Err(Error::WriteInReadOnlyTransaction)
    ));
}

/// `update_with` reads the row and writes what its closure chose, under
/// every protocol and both write installs: its own write is seen by the
/// transaction's later reads and a second `update_with`, a missing key is
/// `NotFound` without calling the closure, bad changes are typed errors
/// that change nothing, and the transaction stays usable.
#[test]
fn update_with_reads_and_writes_one_row_and_checks_its_changes() {
    for c in configs().protocols().installs().valid() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let mut txn = db.begin().unwrap();
        let seen = txn
            .update_with(&t, &key![1], |r| {
                let v = r[1].as_int().unwrap();
                ([("v", Value::Int(v + 5))], v)
            })
            .unwrap();
        assert_eq!(seen, 10, "{c}");
        assert_eq!(
            txn.get(&t, &key![1]).unwrap(),
            Some(row![1, 15, "n"]),
            "{c}"
        );
        // Over our own write, with changes given as a Vec of positions.
        let note = txn
            .update_with(&t, &key![1], |r| {
                let changes = vec![(1usize, Value::Int(r[1].as_int().unwrap() * 2))];
                (changes, r[2].clone())
            })
            .unwrap();
        assert_eq!(note, Value::from("n"), "{c}");
        let mut called = false;
        let e = txn
            .update_with(&t, &key![9], |_| {
                called = true;
                ([("v", Value::Int(0))], ())
            })
            .unwrap_err();
        assert!(
            matches!(e, Error::NotFound { ref table, .. } if table == "kv"),
            "{c}: {e:?}"
        );
        assert!(!called, "{c}: the closure ran for a missing row");
        for bad in [
            ("nope", Value::Int(1)),
            ("v", Value::from("s")),
            ("k", Value::Int(3)),
        ] {
            let e = txn
                .update_with(&t, &key![2], |_| ([bad.clone()], ()))
                .unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::NoSuchColumn { .. } | Error::TypeMismatch { .. } | Error::Schema(_)
                ),
                "{c}: {e:?}"
            );
        }
        assert!(matches!(
            txn.update_with(&t, &key!["text"], |_| ([("v", Value::Int(0))], ())),
            Err(Error::TypeMismatch { .. })
        ));
        // No changes: a read, which takes no write lock (another writer
        // of the row is refused only where readers lock).
        let seen = txn
            .update_with(&t, &key![2], |r| {
                (Vec::<(usize, Value)>::new(), r[1].clone())
            })
            .unwrap();
        assert_eq!(seen, Value::Int(20), "{c}");
        let mut other = db.begin().unwrap();
        match other.update(&t, &key![2], &[("v", Value::Int(21))]) {
            Err(Error::Conflict(ConflictKind::ReadLock)) if readers_lock(c.protocol) => {}
            r => {
                r.unwrap();
                other.abort();
            }
        }
        txn.commit().unwrap();
        assert_eq!(value(&db, &t, 1), Some(30), "{c}");
        assert_eq!(value(&db, &t, 2), Some(20), "{c}: a refused change wrote");
        // A read-only transaction refuses it before reading.
        let mut ro = db.begin_read_only().unwrap();
        assert!(matches!(
            ro.update_with(&t, &key![1], |_| ([("v", Value::Int(0))], ())),
            Err(Error::WriteInReadOnlyTransaction)
        ));
    }
}

/// `Schema::primary_key` is a public field: positions set on it directly
/// (no names to resolve) must be checked, not trusted, by `create_table`.
#[test]
fn primary_key_positions_set_directly_are_checked() {
    let db = Database::open(Options::default()).unwrap();
    let base = || {
        Schema::new("p")
            .column("a", Type::Int)
            .column("b", Type::Int)
    };
    let mut out_of_range = base();
    out_of_range.primary_key = vec![9];
    match db.create_table(out_of_range) {
        Err(Error::Schema(why)) => assert!(why.contains("position 9"), "{why}"),
        other => panic!("out-of-range key position: {other:?}"),
    }
    let mut twice = base();
    twice.primary_key = vec![1, 1];
    match db.create_table(twice) {
        Err(Error::Schema(why)) => assert!(why.contains("names b twice"), "{why}"),
        other => panic!("duplicate key position: {other:?}"),
    }
    // Nothing was created by the refused schemas; valid positions work.
    assert!(matches!(db.table("p"), Err(Error::NoSuchTable { .. })));
    let mut ok = base();
    ok.primary_key = vec![1, 0];
    let t = db.create_table(ok).unwrap();
    assert_eq!(t.schema().primary_key, vec![1, 0]);
}

#[test]
fn catalog_errors() {
    let db = Database::open(Options::default()).unwrap();
    kv_table(&db);
    assert!(matches!(
        db.create_table(Schema::new("kv").column("k", Type::Int).primary_key(&["k"])),
        Err(Error::TableExists { table }) if table == "kv"
    ));
    assert!(matches!(
        db.create_table(Schema::new("x").column("k", Type::Int)),
        Err(Error::Schema(_))
    ));
    assert!(matches!(
        db.create_table(Schema::new("x").column("k", Type::Int).primary_key(&["z"])),
        Err(Error::NoSuchColumn { table, column }) if table == "x" && column == "z"
    ));
    assert!(matches!(
        db.create_table(
            Schema::new("x")
                .column("k", Type::Int)
                .column("k", Type::Text)
                .primary_key(&["k"])
        ),
        Err(Error::Schema(_))
    ));
    assert!(matches!(
        db.table("missing"),
        Err(Error::NoSuchTable { table }) if table == "missing"
    ));
    let t = db.table("kv").unwrap();
    assert_eq!(t.schema().columns.len(), 3);
    db.drop_table("kv").unwrap();
    assert!(matches!(
        db.drop_table("kv"),
        Err(Error::NoSuchTable { .. })
    ));
    let mut txn = db.begin().unwrap();
    assert!(matches!(
        txn.get(&t, &key![1]),
        Err(Error::TableDropped { table }) if table == "kv"
    ));
    // A table of another database is refused.
    let other = Database::open(Options::default()).unwrap();
    let t2 = kv_table(&other);
    assert!(matches!(txn.get(&t2, &key![1]), Err(Error::Schema(_))));
}

#[test]
fn unimplemented_design_choices_are_refused_with_a_clear_error() {
    // Every combination the validity matrix refuses (COOP off O2N,
    // physical pointers on an in-place scheme, ...), and a bad count.
    let refused = configs()
        .storages()
        .gc_policies()
        .pointers()
        .rejected()
        .into_iter()
        .map(|c| (c.to_string(), c.opts))
        .chain([(
            "max_open_transactions 0".to_string(),
            Options::default().max_open_transactions(0),
        )]);
    for (what, o) in refused {
        match Database::open(o) {
            Err(Error::InvalidConfig(msg)) => assert!(!msg.is_empty(), "{what}"),
            other => panic!("{what}: expected InvalidConfig, got {other:?}"),
        }
    }
    assert!("nope".parse::<Protocol>().is_err());
    assert_eq!("SSN".parse::<Protocol>().unwrap(), Protocol::SiSsn);
}

#[test]
fn abort_and_drop_undo_everything() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let mut txn = db.begin().unwrap();
        txn.insert(&t, row![3, 30, "c"]).unwrap();
        txn.update(&t, &key![1], &[("v", Value::Int(11))]).unwrap();
        txn.update(&t, &key![1], &[("v", Value::Int(12))]).unwrap();
        txn.delete(&t, &key![2]).unwrap();
        txn.abort();
        {
            let mut txn = db.begin().unwrap();
            txn.insert(&t, row![4, 40, "d"]).unwrap();
            // dropped without commit
        }
        assert_eq!(value(&db, &t, 1), Some(10), "{p}");
        assert_eq!(value(&db, &t, 2), Some(20), "{p}");
        assert_eq!(value(&db, &t, 3), None, "{p}");
        assert_eq!(value(&db, &t, 4), None, "{p}");
        // The aborted keys can be inserted (index entries were removed) and
        // the rows can be written (locks were released).
        load(&db, &t, &[(3, 33), (4, 44)]);
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(13))]))
            .unwrap();
        assert_eq!(value(&db, &t, 3), Some(33), "{p}");
        let st = db.stats();
        assert_eq!(st.user_aborts, 2, "{p}");
        assert_eq!(st.rows, 4, "{p}");
        assert_eq!(st.open_transactions, 0, "{p}");
    }
}

#[test]
fn finished_transactions_refuse_use_and_conflicts_roll_back() {
    let db = db(Protocol::Si);
    let t = kv_table(&db);
    load(&db, &t, &[(1, 10)]);
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    a.update(&t, &key![1], &[("v", Value::Int(1))]).unwrap();
    let e = b.update(&t, &key![1], &[("v", Value::Int(2))]).unwrap_err();
    assert_eq!(e, Error::Conflict(ConflictKind::WriteWrite));
    assert!(e.is_retryable());
    assert!(matches!(
        b.get(&t, &key![1]),
        Err(Error::TransactionFinished)
    ));
    assert!(matches!(b.commit(), Err(Error::TransactionFinished)));
    a.commit().unwrap();
    assert_eq!(db.stats().aborts_of(ConflictKind::WriteWrite), 1);
}

#[test]
fn many_transactions_on_one_thread_and_sent_between_threads() {
    let db = Database::open(Options::default().max_open_transactions(8)).unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 1)]);
    let mut open: Vec<_> = (0..8).map(|_| db.begin_read_only().unwrap()).collect();
    assert!(matches!(db.begin(), Err(Error::TooManyTransactions(8))));
    for o in &mut open {
        assert_eq!(o.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(1));
    }
    open.clear();
    let mut txn = db.begin().unwrap();
    txn.insert(&t, row![2, 2, "x"]).unwrap();
    let t2 = t.clone();
    std::thread::spawn(move || txn.commit().map(|_| drop(t2)))
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(value(&db, &t, 2), Some(2));
}

#[test]
fn run_retries_conflicts_until_success() {
    let db = db(Protocol::Si);
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    let mut blocker = Some(db.begin().unwrap());
    blocker
        .as_mut()
        .unwrap()
        .update(&t, &key![1], &[("v", Value::Int(100))])
        .unwrap();
    let mut attempts = 0;
    db.run(|txn| {
        attempts += 1;
        if attempts == 2 {
            blocker.take().unwrap().commit().unwrap();
        }
        let v = txn.get(&t, &key![1])?.unwrap()[1].as_int().unwrap();
        txn.update(&t, &key![1], &[("v", Value::Int(v + 1))])
    })
    .unwrap();
    assert!(attempts >= 2);
    assert_eq!(value(&db, &t, 1), Some(101));
    // Non-conflict errors are not retried.
    let mut calls = 0;
    let e = db.run(|txn| {
        calls += 1;
        txn.delete(&t, &key![77])
    });
    assert!(matches!(e, Err(Error::NotFound { .. })));
    assert_eq!(calls, 1);
}

#[test]
fn text_is_shared_between_versions_not_copied() {
    let db = db(Protocol::SiSsn);
    let t = kv_table(&db);
    let big = "x".repeat(10_000);
    let mut txn = db.begin().unwrap();
    txn.insert(&t, row![1, 0, big.as_str()]).unwrap();
    txn.commit().unwrap();
    // Keep an old snapshot open so versions are not collected.
    let mut old = db.begin_read_only().unwrap();
    for i in 0..10 {
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
            .unwrap();
    }
    let a = old.get(&t, &key![1]).unwrap().unwrap();
    let mut ro = db.begin_read_only().unwrap();
    let b = ro.get(&t, &key![1]).unwrap().unwrap();
    match (&a[2], &b[2]) {
        (Value::Text(x), Value::Text(y)) => {
            assert!(strata::Text::ptr_eq(x, y), "text was copied")
        }
        _ => unreachable!(),
    }
    assert_eq!(db.stats().longest_chain, 11);
}

#[test]
fn inverted_and_empty_ranges_return_nothing() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 1), (5, 5), (9, 9)]);
        let mut txn = db.begin().unwrap();
        assert!(txn.scan(&t, key![9]..key![1]).unwrap().is_empty(), "{p}");
        assert!(txn.scan(&t, key![5]..key![5]).unwrap().is_empty(), "{p}");
        assert_eq!(txn.scan(&t, key![5]..=key![5]).unwrap().len(), 1, "{p}");
        assert!(
            matches!(
                txn.scan(&t, key!["x"]..key!["y"]),
                Err(Error::TypeMismatch { .. })
            ),
            "{p}"
        );
        txn.commit().unwrap();
    }
}

#[test]
fn run_gives_up_after_max_retries() {
    let db = Database::open(Options::default().protocol(Protocol::Si).max_retries(2)).unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    let mut blocker = db.begin().unwrap();
    blocker
        .update(&t, &key![1], &[("v", Value::Int(9))])
        .unwrap();
    let mut attempts = 0;
    let r = db.run(|x| {
        attempts += 1;
        x.update(&t, &key![1], &[("v", Value::Int(1))])
    });
    assert_eq!(r, Err(Error::Conflict(ConflictKind::WriteWrite)));
    assert_eq!(attempts, 3, "one try and two retries");
    blocker.commit().unwrap();
    assert_eq!(value(&db, &t, 1), Some(9));
}

#[test]
fn small_accessors_report_what_they_should() {
    let db = Database::open(Options::default()).unwrap();
    let t = kv_table(&db);
    db.create_table(Schema::new("a").column("x", Type::Int).primary_key(&["x"]))
        .unwrap();
    assert_eq!(db.table_names(), vec!["a".to_string(), "kv".to_string()]);
    assert_eq!(t.column("note").unwrap(), 2);
    assert!(matches!(t.column("nope"), Err(Error::NoSuchColumn { .. })));
    assert_eq!(t.name(), "kv");
    load(&db, &t, &[(1, 10), (2, 20)]);
    let ro = db.begin_read_only().unwrap();
    let rw = db.begin().unwrap();
    assert!(ro.is_read_only() && !rw.is_read_only());
    assert!(rw.snapshot_ts() >= ro.snapshot_ts());
    drop((ro, rw));
    // Columns by owned name, and keys printed in errors.
    let mut x = db.begin().unwrap();
    x.update(&t, &key![1], &[(String::from("v"), Value::Int(11))])
        .unwrap();
    match x.delete(&t, &key![42]) {
        Err(e @ Error::NotFound { .. }) => {
            assert!(!e.is_retryable());
            assert!(e.to_string().contains("(42)"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    x.commit().unwrap();
    let st = db.stats();
    assert_eq!(st.rows, 2);
    assert_eq!(st.aborts(), 0);
    assert!(st.bytes_per_row() > strata::VERSION_HEADER_BYTES as f64);
    assert_eq!(strata::VERSION_HEADER_BYTES, 48);
}

/// `prefetch` is only a hint: it records no read, creates no ghost, takes no
/// lock, and a later read sees exactly what it would have seen without it.
#[test]
fn prefetch_records_nothing_and_checks_its_arguments() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20), (3, 30)]);
        // Older than `a` (MVTO orders by begin timestamp).
        let mut older = db.begin().unwrap();
        let mut a = db.begin().unwrap();
        a.prefetch(&t, &[key![1], key![2], key![99]]).unwrap();
        // Had the prefetch read key 1, this overwrite would fail `a`'s
        // validation (MVOCC) or close an rw edge (SSN/SSI) ...
        let mut b = db.begin().unwrap();
        b.update(&t, &key![1], &[("v", Value::Int(11))]).unwrap();
        b.commit().unwrap();
        // ... and had it read the absent key 99 (an MVTO ghost with `a`'s
        // read timestamp), this older insert would be refused.
        older.insert(&t, row![99, 990, "x"]).unwrap();
        older.commit().unwrap();
        a.update(&t, &key![3], &[("v", Value::Int(31))]).unwrap();
        assert_eq!(a.get(&t, &key![2]).unwrap(), Some(row![2, 20, "n"]), "{p}");
        a.commit().unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(value(&db, &t, 3), Some(31), "{p}");

        // Bad arguments are refused like a read's.
        let mut c = db.begin().unwrap();
        assert!(
            matches!(
                c.prefetch(&t, &[key!["one"]]),
                Err(Error::TypeMismatch { .. })
            ),
            "{p}"
        );
        assert!(
            matches!(c.prefetch(&t, &[key![1, 2]]), Err(Error::Schema(_))),
            "{p}"
        );
        let other = Database::open(Options::default().protocol(p)).unwrap();
        let foreign = kv_table(&other);
        assert!(
            matches!(c.prefetch(&foreign, &[key![1]]), Err(Error::Schema(_))),
            "{p}"
        );
        // Byte-keyed tables have no stage to overlap; still fine.
        let s = db
            .create_table(
                Schema::new("s")
                    .column("name", Type::Text)
                    .primary_key(&["name"]),
            )
            .unwrap();
        c.prefetch(&s, &[key!["x"]]).unwrap();
        // More keys than one batch.
        let many: Vec<_> = (0..100).map(|k| key![k]).collect();
        c.prefetch(&t, &many).unwrap();
        assert_eq!(c.get(&t, &key![1]).unwrap(), Some(row![1, 11, "n"]), "{p}");
        c.commit().unwrap();

        // Keys of a few small integers hash like integer keys and are
        // staged too; still no read recorded (MVOCC would fail `d`'s
        // validation, MV2PL would refuse `e`'s write).
        let ct = db
            .create_table(
                Schema::new("c")
                    .column("a", Type::Int)
                    .column("b", Type::Int)
                    .column("v", Type::Int)
                    .primary_key(&["a", "b"]),
            )
            .unwrap();
        db.run(|x| {
            x.insert(&ct, row![1, 2, 0])?;
            x.insert(&ct, row![3, 4, 0])
        })
        .unwrap();
        let mut d = db.begin().unwrap();
        d.prefetch(&ct, &[key![1, 2], key![7, 8]]).unwrap();
        let mut e = db.begin().unwrap();
        e.update(&ct, &key![1, 2], &[("v", Value::Int(1))]).unwrap();
        e.commit().unwrap();
        d.update(&ct, &key![3, 4], &[("v", Value::Int(1))]).unwrap();
        d.commit().unwrap_or_else(|e| panic!("{p}: {e}"));
    }
}

/// Under the in-place schemes `prefetch` goes on from each row's head to
/// its master (a fourth stage, reading the heads it prefetched): keys of
/// live rows, rows updated, deleted, deleted and collected (an empty
/// slot) and keys never there, under every storage scheme and collector,
/// must be prefetched safely, and reads after it see what they would see
/// without it.
#[test]
fn prefetch_reaches_masters_of_every_kind_of_row() {
    for c in configs().storages().gc_policies() {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &(0..40).map(|k| (k, k)).collect::<Vec<_>>());
        db.run(|x| {
            (0..10).try_for_each(|k| x.update(&t, &key![k], &[("v", Value::Int(k + 100))]))?;
            (10..20).try_for_each(|k| x.delete(&t, &key![k]))
        })
        .unwrap();
        db.collect_garbage();
        db.run(|x| (15..20).try_for_each(|k| x.insert(&t, row![k, k + 200, "again"])))
            .unwrap();
        db.collect_garbage();
        let keys: Vec<_> = (0..50).map(|k| key![k]).collect();
        let mut x = db.begin().unwrap();
        x.prefetch(&t, &keys).unwrap();
        let got: Vec<Option<i64>> = (0..50)
            .map(|k| x.get(&t, &key![k]).unwrap().map(|r| r[1].as_int().unwrap()))
            .collect();
        x.commit().unwrap();
        let want: Vec<Option<i64>> = (0..50)
            .map(|k| match k {
                0..10 => Some(k + 100),
                10..15 => None,
                15..20 => Some(k + 200),
                20..40 => Some(k),
                _ => None,
            })
            .collect();
        assert_eq!(got, want, "{:?} {:?}", c.storage, c.gc);
    }
}

/// A version counts its values in 16 bits: a wider table is refused when
/// it is created, with the limit in the message, and nothing is created.
#[test]
fn a_table_wider_than_the_value_count_is_refused() {
    let db = Database::open(Options::default()).unwrap();
    let wide = |n: usize| {
        (0..n)
            .fold(Schema::new("wide"), |s, i| {
                s.column(format!("c{i}"), Type::Int)
            })
            .primary_key(&["c0"])
    };
    match db.create_table(wide(65_536)) {
        Err(Error::Schema(m)) => assert!(m.contains("65535"), "{m}"),
        Err(e) => panic!("expected a schema error, got {e}"),
        Ok(_) => panic!("a table of 65536 columns was created"),
    }
    assert!(db.table("wide").is_err());
    db.create_table(wide(64)).unwrap();
}
