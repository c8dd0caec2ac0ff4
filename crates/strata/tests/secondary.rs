//! Secondary indexes: API, errors, visibility, uniqueness, abort and GC,
//! for every index pointer scheme.

use crate::common;
use strata::{
    key, row, ConflictKind, Database, Error, GcPolicy, Index, IndexPointers, Options, Protocol,
    Schema, Table, Type, Unique, Value, VersionStorage,
};

/// Every valid (version storage, pointer scheme) pair: physical pointers
/// need append-only storage (N2O, O2N).
type Cfg = (VersionStorage, IndexPointers);

fn open(p: Protocol, s: Cfg) -> Database {
    Database::open(
        Options::default()
            .protocol(p)
            .version_storage(s.0)
            .index_pointers(s.1)
            .gc_interval(None),
    )
    .unwrap()
}

/// customer(w, d, id, last TEXT, balance) with primary key (w, d, id).
fn customers(db: &Database) -> Table {
    db.create_table(
        Schema::new("customer")
            .column("w", Type::Int)
            .column("d", Type::Int)
            .column("id", Type::Int)
            .column("last", Type::Text)
            .column("balance", Type::Int)
            .primary_key(&["w", "d", "id"]),
    )
    .unwrap()
}

fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter().map(|r| r[2].as_int().unwrap()).collect()
}

fn load_customers(db: &Database, t: &Table) {
    let mut txn = db.begin().unwrap();
    let names = ["BAR", "ABLE", "BAR", "CALLY", "ABLE", "BAR"];
    for w in 1..=2i64 {
        for d in 1..=2i64 {
            for (i, n) in names.iter().enumerate() {
                txn.insert(t, row![w, d, i as i64, *n, 100]).unwrap();
            }
        }
    }
    txn.commit().unwrap();
}

#[test]
fn index_on_populated_table_scans_in_key_order_with_prefix_bounds() {
    for s in common::storage_pointer_schemes() {
        let db = open(Protocol::SiSsn, s);
        let t = customers(&db);
        load_customers(&db, &t);
        let idx = db
            .create_index("by_last", &t, &["w", "d", "last"], Unique::No)
            .unwrap();
        assert_eq!(idx.name(), "by_last");
        assert_eq!(idx.columns(), &["w", "d", "last"]);
        assert!(!idx.is_unique());
        let mut txn = db.begin().unwrap();
        // Exact key: ties in primary-key order.
        let bar = txn.index_get(&idx, &key![1, 2, "BAR"]).unwrap();
        assert_eq!(ids(&bar), vec![0, 2, 5], "{s:?}");
        assert!(bar
            .iter()
            .all(|r| r[0] == Value::Int(1) && r[1] == Value::Int(2)));
        // Prefix key: every customer of district (1, 2), ordered by last name.
        let d12 = txn.index_get(&idx, &key![1, 2]).unwrap();
        let names: Vec<&str> = d12.iter().map(|r| r[3].as_text().unwrap()).collect();
        assert_eq!(
            names,
            ["ABLE", "ABLE", "BAR", "BAR", "BAR", "CALLY"],
            "{s:?}"
        );
        // Prefix bounds: from the first key of (1, 2) through the last of (2, 1).
        assert_eq!(
            txn.index_scan(&idx, key![1, 2]..=key![2, 1]).unwrap().len(),
            12
        );
        // Excluded prefix lower bound: after every key starting with (1, 2).
        assert_eq!(
            txn.index_scan(
                &idx,
                (
                    std::ops::Bound::Excluded(key![1, 2]),
                    std::ops::Bound::Unbounded
                )
            )
            .unwrap()
            .len(),
            12
        );
        // Excluded upper bound: before the first key starting with (1, 2).
        assert_eq!(txn.index_scan(&idx, ..key![1, 2]).unwrap().len(), 6);
        assert_eq!(txn.index_scan(&idx, ..).unwrap().len(), 24);
        assert_eq!(
            txn.index_scan(&idx, key![1, 1, "B"]..key![1, 1, "C"])
                .unwrap()
                .len(),
            3
        );
        let mut n = 0;
        let count = txn
            .index_scan_with(&idx, key![2]..=key![2], |r| {
                assert_eq!(r[0], Value::Int(2));
                n += 1;
            })
            .unwrap();
        assert_eq!((count, n), (12, 12));
        txn.commit().unwrap();
        // The handle can be looked up again by name.
        let again = db.index("by_last").unwrap();
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_get(&again, &key![2, 2, "CALLY"]).unwrap().len(), 1);
        assert!(db.stats().secondary_index_entries >= 24, "{s:?}");
    }
}

#[test]
fn primary_scan_accepts_prefix_bounds() {
    let db = open(Protocol::SiSsn, common::storage_pointer_schemes()[0]);
    let t = customers(&db);
    load_customers(&db, &t);
    let mut txn = db.begin().unwrap();
    assert_eq!(txn.scan(&t, key![1, 2]..=key![1, 2]).unwrap().len(), 6);
    assert_eq!(txn.scan(&t, key![1]..=key![1]).unwrap().len(), 12);
    assert_eq!(txn.scan(&t, key![1, 2]..key![2]).unwrap().len(), 6);
    assert_eq!(txn.scan(&t, key![1, 1, 3]..=key![1, 2]).unwrap().len(), 9);
    assert_eq!(
        txn.scan(&t, key![1, 1, 3]..=key![1, 1, 4]).unwrap().len(),
        2
    );
    assert!(matches!(
        txn.scan(&t, key![1, 1, 1, 1]..),
        Err(Error::Schema(_))
    ));
    assert!(matches!(
        txn.scan(&t, key!["x"]..),
        Err(Error::TypeMismatch { .. })
    ));
}

#[test]
fn ddl_errors_are_typed() {
    let db = open(Protocol::SiSsn, common::storage_pointer_schemes()[0]);
    let t = customers(&db);
    let schema = |r: Result<Index, Error>| matches!(r, Err(Error::Schema(_)));
    assert!(matches!(
        db.create_index("i", &t, &["nope"], Unique::No),
        Err(Error::NoSuchColumn { column, .. }) if column == "nope"
    ));
    assert!(schema(db.create_index("i", &t, &[], Unique::No)));
    assert!(schema(db.create_index("i", &t, &["w", "w"], Unique::No)));
    assert!(schema(db.create_index("", &t, &["w"], Unique::No)));
    let idx = db.create_index("i", &t, &["last"], Unique::No).unwrap();
    assert!(matches!(
        db.create_index("i", &t, &["w"], Unique::No),
        Err(Error::IndexExists { index }) if index == "i"
    ));
    assert!(matches!(
        db.index("missing"),
        Err(Error::NoSuchIndex { index }) if index == "missing"
    ));
    assert!(matches!(
        db.drop_index("missing"),
        Err(Error::NoSuchIndex { .. })
    ));
    let other = open(Protocol::SiSsn, common::storage_pointer_schemes()[0]);
    assert!(schema(other.create_index("j", &t, &["w"], Unique::No)));
    let mut txn = db.begin().unwrap();
    // Too many values, wrong type.
    assert!(matches!(
        txn.index_get(&idx, &key!["a", 1]),
        Err(Error::Schema(_))
    ));
    assert!(matches!(
        txn.index_get(&idx, &key![1]),
        Err(Error::TypeMismatch { .. })
    ));
    txn.commit().unwrap();
    assert_eq!(db.index_names(), vec!["i".to_string()]);
    db.drop_index("i").unwrap();
    assert!(db.index_names().is_empty());
    let mut txn = db.begin().unwrap();
    assert!(matches!(
        txn.index_get(&idx, &key!["a"]),
        Err(Error::Schema(_))
    ));
    // Writes after the drop do not maintain it; the name can be reused.
    txn.insert(&t, row![1, 1, 1, "a", 0]).unwrap();
    txn.commit().unwrap();
    let again = db.create_index("i", &t, &["last"], Unique::No).unwrap();
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(ro.index_get(&again, &key!["a"]).unwrap().len(), 1);
    // A table dropped under an index.
    db.drop_table("customer").unwrap();
    assert!(matches!(
        ro.index_get(&again, &key!["a"]),
        Err(Error::TableDropped { .. })
    ));
    assert!(
        db.index_names().is_empty(),
        "the dropped table took its index along"
    );
}

#[test]
fn physical_pointers_need_append_only_storage() {
    for vs in common::storages_where(|s| !s.is_append_only()) {
        let r = Database::open(
            Options::default()
                .index_pointers(IndexPointers::Physical)
                .version_storage(vs),
        );
        match r {
            Err(Error::InvalidConfig(m)) => {
                assert!(
                    m.to_lowercase().contains("physical") && m.contains("append-only"),
                    "{m}"
                )
            }
            other => panic!("{vs:?}: {other:?}"),
        }
    }
    for s in common::storage_pointer_schemes() {
        assert!(
            Database::open(Options::default().version_storage(s.0).index_pointers(s.1)).is_ok()
        );
    }
}

fn accounts(db: &Database) -> (Table, Index) {
    let t = db
        .create_table(
            Schema::new("acct")
                .column("id", Type::Int)
                .column("email", Type::Text)
                .column("n", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    let idx = db
        .create_index("by_email", &t, &["email"], Unique::Yes)
        .unwrap();
    (t, idx)
}

fn emails(txn: &mut strata::Transaction, idx: &Index) -> Vec<(String, i64)> {
    txn.index_scan(idx, ..)
        .unwrap()
        .iter()
        .map(|r| (r[1].as_text().unwrap().to_string(), r[0].as_int().unwrap()))
        .collect()
}

#[test]
fn unique_index_refuses_duplicates_and_leaves_the_transaction_unchanged() {
    for p in common::protocols() {
        for s in common::storage_pointer_schemes() {
            let db = open(p, s);
            let (t, idx) = accounts(&db);
            let mut txn = db.begin().unwrap();
            txn.insert(&t, row![1, "a@x", 0]).unwrap();
            txn.insert(&t, row![2, "b@x", 0]).unwrap();
            txn.commit().unwrap();

            let mut txn = db.begin().unwrap();
            txn.insert(&t, row![3, "c@x", 0]).unwrap();
            let r = txn.insert(&t, row![4, "a@x", 0]);
            assert!(
                matches!(r, Err(Error::DuplicateKey { .. })),
                "{p} {s:?}: {r:?}"
            );
            let r = txn.update(&t, &key![2], &[("email", Value::from("a@x"))]);
            assert!(
                matches!(r, Err(Error::DuplicateKey { .. })),
                "{p} {s:?}: {r:?}"
            );
            // Within the transaction: its own row holds c@x.
            let r = txn.update(&t, &key![1], &[("email", Value::from("c@x"))]);
            assert!(
                matches!(r, Err(Error::DuplicateKey { .. })),
                "{p} {s:?}: {r:?}"
            );
            // Replacing our own uncommitted version (row 3) by a duplicate:
            // refused before the version store is touched.
            let r = txn.update(&t, &key![3], &[("email", Value::from("b@x"))]);
            assert!(
                matches!(r, Err(Error::DuplicateKey { .. })),
                "{p} {s:?}: {r:?}"
            );
            assert_eq!(
                txn.get(&t, &key![3]).unwrap(),
                Some(row![3, "c@x", 0]),
                "{p} {s:?}"
            );
            // Unchanged and still open: row 4 absent, row 2 keeps b@x.
            assert_eq!(txn.get(&t, &key![4]).unwrap(), None);
            assert_eq!(
                txn.get(&t, &key![2]).unwrap(),
                Some(row![2, "b@x", 0]),
                "{p} {s:?}"
            );
            assert_eq!(
                emails(&mut txn, &idx),
                vec![("a@x".into(), 1), ("b@x".into(), 2), ("c@x".into(), 3)],
                "{p} {s:?}"
            );
            // Moving a key away frees it for another row in the same txn.
            txn.update(&t, &key![1], &[("email", Value::from("z@x"))])
                .unwrap();
            txn.insert(&t, row![4, "a@x", 0]).unwrap();
            // Updating a non-indexed column of a unique row is fine.
            txn.update(&t, &key![4], &[("n", Value::Int(5))]).unwrap();
            txn.commit().unwrap();
            let mut ro = db.begin_read_only().unwrap();
            assert_eq!(
                emails(&mut ro, &idx),
                vec![
                    ("a@x".into(), 4),
                    ("b@x".into(), 2),
                    ("c@x".into(), 3),
                    ("z@x".into(), 1)
                ],
                "{p} {s:?}"
            );
            drop(ro);
            // A deleted row's key is free again.
            db.run(|x| x.delete(&t, &key![2])).unwrap();
            db.run(|x| x.insert(&t, row![9, "b@x", 0])).unwrap();
            let mut ro = db.begin_read_only().unwrap();
            assert_eq!(
                ro.index_get(&idx, &key!["b@x"]).unwrap()[0][0],
                Value::Int(9)
            );
        }
    }
}

#[test]
fn concurrent_claims_of_one_unique_key_admit_one() {
    for p in common::protocols() {
        for s in common::storage_pointer_schemes() {
            let db = open(p, s);
            let (t, _idx) = accounts(&db);
            let mut a = db.begin().unwrap();
            let mut b = db.begin().unwrap();
            let ra = a.insert(&t, row![1, "k", 0]);
            let rb = b.insert(&t, row![2, "k", 0]);
            let ra = ra.and_then(|_| a.commit());
            let rb = rb.and_then(|_| b.commit());
            assert_eq!(
                ra.is_ok() as u32 + rb.is_ok() as u32,
                1,
                "{p} {s:?}: {ra:?} {rb:?}"
            );
            assert!(
                matches!(
                    rb,
                    Err(Error::Conflict(_)) | Err(Error::DuplicateKey { .. })
                ),
                "{p} {s:?}: {rb:?}"
            );
        }
    }
}

#[test]
fn unique_index_over_duplicates_is_not_created() {
    for s in common::storage_pointer_schemes() {
        let db = open(Protocol::SiSsn, s);
        let t = customers(&db);
        load_customers(&db, &t);
        let r = db.create_index("u", &t, &["w", "d", "last"], Unique::Yes);
        assert!(matches!(r, Err(Error::DuplicateKey { .. })), "{s:?}: {r:?}");
        assert!(matches!(db.index("u"), Err(Error::NoSuchIndex { .. })));
        // A unique index over a unique column works.
        let u = db
            .create_index("u", &t, &["w", "d", "id"], Unique::Yes)
            .unwrap();
        let mut txn = db.begin().unwrap();
        assert!(matches!(txn.insert(&t, row![1, 1, 99, "X", 0]), Ok(())));
        let r = txn.update(&t, &key![1, 1, 99], &[("balance", Value::Int(1))]);
        assert!(r.is_ok());
        txn.commit().unwrap();
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_get(&u, &key![1, 1, 99]).unwrap().len(), 1);
    }
}

#[test]
fn old_snapshots_see_old_keys_and_moved_rows_appear_once() {
    for p in common::protocols() {
        for s in common::storage_pointer_schemes() {
            let db = open(p, s);
            let t = customers(&db);
            load_customers(&db, &t);
            let idx = db
                .create_index("by_last", &t, &["last"], Unique::No)
                .unwrap();
            let mut old = db.begin_read_only().unwrap();
            let mut old_rw = db.begin().unwrap();
            db.run(|x| x.update(&t, &key![1, 1, 0], &[("last", Value::from("ZED"))]))
                .unwrap();
            db.run(|x| x.update(&t, &key![1, 1, 3], &[("balance", Value::Int(7))]))
                .unwrap();
            db.run(|x| x.delete(&t, &key![1, 1, 1])).unwrap();
            // MV2PL's and OCC's read-write transactions read the newest data.
            let readers = if common::reads_newest_data(p) {
                vec![&mut old]
            } else {
                vec![&mut old, &mut old_rw]
            };
            for txn in readers {
                assert_eq!(
                    txn.index_get(&idx, &key!["BAR"]).unwrap().len(),
                    12,
                    "{p} {s:?}"
                );
                assert_eq!(txn.index_get(&idx, &key!["ZED"]).unwrap().len(), 0);
                assert_eq!(txn.index_get(&idx, &key!["ABLE"]).unwrap().len(), 8);
                assert_eq!(txn.index_scan(&idx, ..).unwrap().len(), 24);
            }
            // (Under MVTO a read-only snapshot stays below running writers.)
            drop(old_rw);
            let mut new = db.begin_read_only().unwrap();
            assert_eq!(
                new.index_get(&idx, &key!["BAR"]).unwrap().len(),
                11,
                "{p} {s:?}"
            );
            assert_eq!(new.index_get(&idx, &key!["ZED"]).unwrap().len(), 1);
            assert_eq!(new.index_get(&idx, &key!["ABLE"]).unwrap().len(), 7);
            let all = new.index_scan(&idx, ..).unwrap();
            assert_eq!(all.len(), 23, "{p} {s:?}");
            let cally = new.index_get(&idx, &key!["CALLY"]).unwrap();
            assert!(cally.iter().any(|r| r[4] == Value::Int(7)));
            // Own writes: visible to the writer under the new key only.
            let mut w = db.begin().unwrap();
            w.update(&t, &key![2, 2, 5], &[("last", Value::from("AARON"))])
                .unwrap();
            w.update(&t, &key![2, 2, 5], &[("last", Value::from("ABBOT"))])
                .unwrap();
            w.insert(&t, row![3, 3, 3, "ABBOT", 0]).unwrap();
            assert_eq!(
                w.index_get(&idx, &key!["ABBOT"]).unwrap().len(),
                2,
                "{p} {s:?}"
            );
            assert_eq!(w.index_get(&idx, &key!["AARON"]).unwrap().len(), 0);
            assert_eq!(w.index_get(&idx, &key!["BAR"]).unwrap().len(), 10);
            assert_eq!(new.index_get(&idx, &key!["ABBOT"]).unwrap().len(), 0);
            w.commit().unwrap();
        }
    }
}

/// Read-only snapshots against an overwriter in each state: in flight
/// (the old version's `end` holds its id; it replaced its own version
/// once and wrote a non-indexed column of another row), committed after
/// the snapshots, and aborted. Physical pointers check the pointed
/// version alone; it must be exactly the version the chain walk picks, so
/// every row appears once, under one key.
#[test]
fn an_overwriter_in_flight_committed_or_aborted_never_shows_a_row_twice() {
    fn check(txn: &mut strata::Transaction, idx: &Index, keys: &[(&str, usize)], what: &str) {
        let all = txn.index_scan(idx, ..).unwrap();
        let mut pks: Vec<Vec<i64>> = all
            .iter()
            .map(|r| r[..3].iter().map(|v| v.as_int().unwrap()).collect())
            .collect();
        pks.sort();
        pks.dedup();
        assert_eq!((all.len(), pks.len()), (24, 24), "{what}: every row once");
        for &(last, n) in keys {
            let got = txn.index_get(idx, &key![last]).unwrap();
            assert_eq!(got.len(), n, "{what}: {last}");
        }
    }
    for p in common::protocols() {
        for s in common::storage_pointer_schemes() {
            let db = open(p, s);
            let t = customers(&db);
            load_customers(&db, &t);
            let idx = db
                .create_index("by_last", &t, &["last"], Unique::No)
                .unwrap();
            let before = [("BAR", 12), ("YAK", 0), ("ZED", 0)];
            let mut ro_before = db.begin_read_only().unwrap();
            let mut w = db.begin().unwrap();
            w.update(&t, &key![1, 1, 0], &[("last", Value::from("ZED"))])
                .unwrap();
            w.update(&t, &key![1, 1, 0], &[("last", Value::from("YAK"))])
                .unwrap();
            w.update(&t, &key![1, 1, 2], &[("balance", Value::Int(5))])
                .unwrap();
            let mut ro_during = db.begin_read_only().unwrap();
            let what = format!("{p} {s:?}");
            check(&mut ro_before, &idx, &before, &format!("{what} in flight"));
            check(&mut ro_during, &idx, &before, &format!("{what} in flight"));
            w.commit().unwrap();
            check(
                &mut ro_before,
                &idx,
                &before,
                &format!("{what} committed after"),
            );
            check(
                &mut ro_during,
                &idx,
                &before,
                &format!("{what} committed after"),
            );
            let after = [("BAR", 11), ("YAK", 1), ("ZED", 0), ("XAV", 0)];
            let mut ro_after = db.begin_read_only().unwrap();
            check(&mut ro_after, &idx, &after, &format!("{what} after"));
            let mut a = db.begin().unwrap();
            a.update(&t, &key![1, 1, 0], &[("last", Value::from("XAV"))])
                .unwrap();
            check(
                &mut ro_after,
                &idx,
                &after,
                &format!("{what} abort in flight"),
            );
            a.abort();
            check(&mut ro_after, &idx, &after, &format!("{what} aborted"));
            let mut ro_last = db.begin_read_only().unwrap();
            check(
                &mut ro_last,
                &idx,
                &after,
                &format!("{what} aborted, new snapshot"),
            );
        }
    }
}

#[test]
fn aborts_remove_the_entries_they_added() {
    for s in common::storage_pointer_schemes() {
        let db = open(Protocol::SiSsn, s);
        let t = customers(&db);
        load_customers(&db, &t);
        let idx = db
            .create_index("by_last", &t, &["last"], Unique::No)
            .unwrap();
        db.collect_garbage();
        let before = db.stats().secondary_index_entries;
        let mut txn = db.begin().unwrap();
        txn.insert(&t, row![5, 5, 5, "NEW", 0]).unwrap();
        txn.update(&t, &key![1, 1, 0], &[("last", Value::from("MOVED"))])
            .unwrap();
        txn.update(&t, &key![1, 1, 2], &[("balance", Value::Int(1))])
            .unwrap();
        txn.delete(&t, &key![1, 1, 5]).unwrap();
        assert!(db.stats().secondary_index_entries > before, "{s:?}");
        txn.abort();
        assert_eq!(db.stats().secondary_index_entries, before, "{s:?}");
        let mut ro = db.begin_read_only().unwrap();
        assert!(ro.index_get(&idx, &key!["NEW"]).unwrap().is_empty());
        assert!(ro.index_get(&idx, &key!["MOVED"]).unwrap().is_empty());
        assert_eq!(ro.index_get(&idx, &key!["BAR"]).unwrap().len(), 12);
        drop(ro);
        // A conflict rolls back too.
        let mut a = db.begin().unwrap();
        let mut b = db.begin().unwrap();
        a.update(&t, &key![2, 1, 0], &[("last", Value::from("A"))])
            .unwrap();
        b.update(&t, &key![2, 1, 2], &[("last", Value::from("B"))])
            .unwrap();
        let r = b.update(&t, &key![2, 1, 0], &[("last", Value::from("C"))]);
        assert_eq!(r, Err(Error::Conflict(ConflictKind::WriteWrite)));
        a.commit().unwrap();
        db.collect_garbage();
        db.collect_garbage();
        let mut ro = db.begin_read_only().unwrap();
        assert!(ro.index_get(&idx, &key!["B"]).unwrap().is_empty(), "{s:?}");
        assert_eq!(ro.index_get(&idx, &key!["A"]).unwrap().len(), 1);
        // One entry per row once GC caught up (stale "BAR" of row (2,1,0) gone).
        assert_eq!(db.stats().secondary_index_entries, 24, "{s:?}");
    }
}

/// Endless updates of an indexed column: GC removes the stale entries
/// (logical) or the entries of pruned versions (physical), so the index
/// stays as large as the table — on every storage scheme, which is what
/// proves the O2N path (GC retires the prefix *older* than the survivor)
/// and the in-place ones (retired versions' values reconstructed).
#[test]
fn indexed_updates_leave_index_memory_bounded() {
    for s in common::storage_pointer_schemes() {
        for p in common::protocols_where(common::stresses_gc) {
            let db = open(p, s);
            let t = db
                .create_table(
                    Schema::new("kv")
                        .column("k", Type::Int)
                        .column("v", Type::Int)
                        .column("w", Type::Int)
                        .primary_key(&["k"]),
                )
                .unwrap();
            let by_v = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
            let by_w = db
                .create_index("by_w", &t, &["w", "k"], Unique::Yes)
                .unwrap();
            let mut txn = db.begin().unwrap();
            for k in 0..100 {
                txn.insert(&t, row![k, 0, 0]).unwrap();
            }
            txn.commit().unwrap();
            let base = db.stats();
            assert_eq!(base.secondary_index_entries, 200);
            let mut peak = 0;
            for i in 0..20_000i64 {
                let k = i % 100;
                let mut txn = db.begin().unwrap();
                // An indexed column, and (every other time) only a non-indexed one.
                let col = if (i / 100) % 2 == 0 { "v" } else { "w" };
                txn.update(&t, &key![k], &[(col, Value::Int(i))]).unwrap();
                txn.commit().unwrap();
                if i % 1000 == 999 {
                    peak = peak.max(db.stats().secondary_index_entries);
                }
            }
            db.collect_garbage();
            db.collect_garbage();
            let st = db.stats();
            assert!(peak < 200 + 2_000, "{p} {s:?}: peak {peak} entries");
            assert_eq!(st.secondary_index_entries, 200, "{p} {s:?}: {st:?}");
            assert!(
                st.live_versions <= 200,
                "{p} {s:?}: versions pruned too: {st:?}"
            );
            assert!(st.secondary_index_bytes < base.secondary_index_bytes * 2);
            let mut ro = db.begin_read_only().unwrap();
            assert_eq!(ro.index_scan(&by_v, ..).unwrap().len(), 100);
            assert_eq!(ro.index_scan(&by_w, ..).unwrap().len(), 100);
            let last = ro.index_get(&by_v, &key![19_898]).unwrap();
            assert_eq!(last, vec![row![98, 19_898, 19_998]], "{p} {s:?}");
            assert!(ro.index_get(&by_v, &key![19_798]).unwrap().is_empty());
        }
    }
}

#[test]
fn without_gc_every_version_keeps_its_physical_entry() {
    let db = Database::open(
        Options::default()
            .index_pointers(IndexPointers::Physical)
            .gc(GcPolicy::None),
    )
    .unwrap();
    let t = common::kvn_table(&db);
    db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
    db.create_index("by_k", &t, &["k"], Unique::No).unwrap();
    db.run(|x| x.insert(&t, row![1, 0, 0])).unwrap();
    for i in 0..50 {
        // Non-indexed column: physical pointers still add entries everywhere.
        db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(i))]))
            .unwrap();
    }
    assert_eq!(db.stats().secondary_index_entries, 2 * 51);
}

/// An open snapshot holds GC back while an indexed column is updated over
/// and over: it still finds every row under its old key; once it ends, GC
/// retires the long run of versions (under O2N the prefix *older* than the
/// survivor, under time-travel/delta headers whose values are rebuilt) and
/// the index shrinks back to one entry per row.
#[test]
fn gc_after_a_long_snapshot_drops_the_retired_versions_entries_on_every_storage() {
    for s in common::storage_pointer_schemes() {
        let db = open(Protocol::SiSsn, s);
        let t = db
            .create_table(
                Schema::new("kv")
                    .column("k", Type::Int)
                    .column("v", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        let by_v = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
        db.run(|x| (0..50).try_for_each(|k| x.insert(&t, row![k, k])))
            .unwrap();
        let mut old = db.begin_read_only().unwrap();
        for i in 0..3_000i64 {
            db.run(|x| x.update(&t, &key![i % 50], &[("v", Value::Int(1_000 + i))]))
                .unwrap();
        }
        db.collect_garbage();
        assert!(
            db.stats().secondary_index_entries > 3_000,
            "{s:?}: the snapshot keeps the versions and their entries"
        );
        for k in [0i64, 17, 49] {
            assert_eq!(
                old.index_get(&by_v, &key![k]).unwrap(),
                vec![row![k, k]],
                "{s:?}"
            );
        }
        assert_eq!(old.index_scan(&by_v, ..).unwrap().len(), 50, "{s:?}");
        drop(old);
        db.collect_garbage();
        db.collect_garbage();
        let st = db.stats();
        assert_eq!(st.secondary_index_entries, 50, "{s:?}: {st:?}");
        assert!(st.live_versions <= 50, "{s:?}: {st:?}");
        let mut ro = db.begin_read_only().unwrap();
        let now = ro.index_scan(&by_v, ..).unwrap();
        let want: Vec<Vec<Value>> = (2_950..3_000i64).map(|i| row![i % 50, 1_000 + i]).collect();
        assert_eq!(now, want, "{s:?}");
        assert!(ro.index_get(&by_v, &key![7]).unwrap().is_empty(), "{s:?}");
    }
}
