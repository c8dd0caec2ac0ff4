//! `Database::alter_table`: each change keeps every row (in memory, across
//! a restart, after a checkpoint), a refused change changes nothing, and
//! writers running through the alter lose nothing: each commit is in the
//! new table or was refused. A table's secondary indexes move with it
//! (in memory and across a restart), and a copy that fails part way
//! leaves the table as it was.

use crate::common::{self, TestDir};
use strata::{
    key, row, Alter, Database, Durability, Error, IndexKind, Options, Protocol, Row, Schema,
    SyncPolicy, Table, Type, Unique, Value,
};

fn people(db: &Database) -> Table {
    let t = db
        .create_table(
            Schema::new("people")
                .column("id", Type::Int)
                .column("name", Type::Text)
                .column("age", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    db.run(|tx| (0..5000).try_for_each(|k| tx.insert(&t, row![k, format!("p{k}"), k % 90])))
        .unwrap();
    t
}

/// Adds a nullable text column `c` to table `t`.
fn add_text(db: &Database, t: &str, c: &str) -> Table {
    let change = Alter::AddColumn {
        name: c.into(),
        ty: Type::Text,
    };
    db.alter_table(t, change).unwrap()
}

fn rows(db: &Database, t: &Table) -> Vec<strata::Row> {
    db.begin_read_only().unwrap().scan(t, ..).unwrap()
}

#[test]
fn each_change_keeps_every_row() {
    let db = common::db(Protocol::SiSsn);
    let old = people(&db);
    let t = add_text(&db, "people", "email");
    assert!(matches!(
        db.begin().unwrap().get(&old, &key![1]),
        Err(Error::TableDropped { .. })
    ));
    let all = rows(&db, &t);
    assert_eq!(all.len(), 5000);
    assert!(all
        .iter()
        .enumerate()
        .all(|(k, r)| *r == row![k as i64, format!("p{k}"), k as i64 % 90, Value::Null]));
    db.run(|tx| tx.insert(&t, row![9000, "new", 1, "n@x"]))
        .unwrap();

    let t = db
        .alter_table("people", Alter::DropColumn("age".into()))
        .unwrap();
    assert_eq!(t.schema().columns.len(), 3);
    assert_eq!(rows(&db, &t)[7], row![7, "p7", Value::Null]);

    let t = db
        .alter_table(
            "people",
            Alter::RenameColumn {
                from: "id".into(),
                to: "pid".into(),
            },
        )
        .unwrap();
    assert_eq!(t.schema().columns[t.schema().primary_key[0]].name, "pid");

    let t = db
        .alter_table("people", Alter::Rename("persons".into()))
        .unwrap();
    assert!(matches!(db.table("people"), Err(Error::NoSuchTable { .. })));
    assert_eq!(db.table("persons").unwrap().name(), "persons");
    let all = rows(&db, &t);
    assert_eq!(all.len(), 5001);
    assert_eq!(all[5000], row![9000, "new", "n@x"]);
    // The last table is a table like any: an index on it, then writes.
    db.create_index("by_name", &t, &["name"], Unique::No)
        .unwrap();
    db.run(|tx| tx.update(&t, &key![3], &[("name", Value::from("three"))]))
        .unwrap();
    let by = db.index("by_name").unwrap();
    assert_eq!(
        db.begin()
            .unwrap()
            .index_get(&by, &key!["three"])
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_refused_change_changes_nothing() {
    let db = common::db(Protocol::SiSsn);
    let t = people(&db);
    let other = db
        .create_table(
            Schema::new("other")
                .column("k", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    type Expect = fn(&Error) -> bool;
    let cases: Vec<(Alter, Expect)> = vec![
        (Alter::DropColumn("nope".into()), |e| {
            matches!(e, Error::NoSuchColumn { .. })
        }),
        (Alter::DropColumn("id".into()), |e| {
            matches!(e, Error::Schema(_))
        }),
        (
            Alter::AddColumn {
                name: "age".into(),
                ty: Type::Int,
            },
            |e| matches!(e, Error::Schema(_)),
        ),
        (
            Alter::RenameColumn {
                from: "age".into(),
                to: "name".into(),
            },
            |e| matches!(e, Error::Schema(_)),
        ),
        (Alter::Rename("other".into()), |e| {
            matches!(e, Error::TableExists { .. })
        }),
    ];
    for (change, want) in cases {
        let e = db.alter_table("people", change.clone()).unwrap_err();
        assert!(want(&e), "{change:?}: {e}");
    }
    assert!(matches!(
        db.alter_table("ghost", Alter::Rename("g".into())),
        Err(Error::NoSuchTable { .. })
    ));
    db.create_index("by_age", &t, &["age"], Unique::No).unwrap();
    let e = db
        .alter_table("people", Alter::DropColumn("age".into()))
        .unwrap_err();
    assert_eq!(
        e,
        Error::ColumnIndexed {
            table: "people".into(),
            column: "age".into(),
            index: "by_age".into()
        }
    );
    assert!(e.to_string().contains("drop the index"), "{e}");
    assert_eq!(db.index("by_age").unwrap().table().name(), "people");
    // The table and its handle are as they were.
    db.run(|tx| tx.update(&t, &key![1], &[("age", Value::Int(1))]))
        .unwrap();
    assert_eq!(rows(&db, &t).len(), 5000);
    assert_eq!(db.table_names(), ["other", "people"]);
    drop(other);
}

/// The alter is one log record: a restart replays it (with or without a
/// checkpoint after it) and finds the altered table with every row.
#[test]
fn an_alter_survives_a_restart_and_a_checkpoint() {
    for checkpoint in [false, true] {
        let dir = TestDir::new("alter-restart");
        let opts = || {
            Options::default().durability(Durability::Wal {
                dir: dir.to_path_buf(),
                sync: SyncPolicy::GroupCommit,
            })
        };
        {
            let db = Database::open(opts()).unwrap();
            people(&db);
            let t = add_text(&db, "people", "email");
            db.run(|tx| tx.update(&t, &key![4], &[("email", Value::from("f@x"))]))
                .unwrap();
            let t = db
                .alter_table("people", Alter::Rename("persons".into()))
                .unwrap();
            db.run(|tx| tx.delete(&t, &key![0])).unwrap();
            if checkpoint {
                db.checkpoint().unwrap();
            }
        }
        let db = Database::open(opts()).unwrap();
        assert_eq!(db.table_names(), ["persons"], "checkpoint {checkpoint}");
        let t = db.table("persons").unwrap();
        let all = rows(&db, &t);
        assert_eq!(all.len(), 4999);
        assert_eq!(all[3], row![4, "p4", 4, "f@x"]);
        assert_eq!(all[0], row![1, "p1", 1, Value::Null]);
    }
}

/// Writers moving amounts through the old handle while the table is
/// altered: every transfer that committed is in the new table, and every
/// one after the freeze was refused (`TableDropped`); the writers stop at
/// their first refusal, or a while after the alter returned.
#[test]
fn writers_through_the_alter_lose_nothing() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    for p in common::protocols() {
        let db = common::db(p);
        let t = db
            .create_table(
                Schema::new("acct")
                    .column("k", Type::Int)
                    .column("v", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.run(|tx| (0..64).try_for_each(|k| tx.insert(&t, row![k, 100])))
            .unwrap();
        let done = AtomicBool::new(false);
        let (altered, moved) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..2i64)
                .map(|w| {
                    let (db, t, done) = (&db, &t, &done);
                    s.spawn(move || {
                        let mut moved = Vec::new();
                        for i in 0..200_000 {
                            let (a, b) = ((i * 7 + w) % 64, (i * 11 + 3 + w) % 64);
                            let r = db.run(|tx| {
                                let va = tx.get(t, &key![a])?.unwrap()[1].as_int().unwrap();
                                let vb = tx.get(t, &key![b])?.unwrap()[1].as_int().unwrap();
                                tx.update(t, &key![a], &[("v", Value::Int(va - 1))])?;
                                tx.update(t, &key![b], &[("v", Value::Int(vb + 1))])
                            });
                            match r {
                                Err(Error::TableDropped { .. }) => break,
                                r => r.unwrap(),
                            }
                            moved.push((a, b));
                            if done.load(SeqCst) && i % 64 == 0 {
                                break; // (a freeze that refused nothing)
                            }
                        }
                        moved
                    })
                })
                .collect();
            // Let the writers commit some first.
            while db.counters().commits < 200 {
                std::thread::yield_now();
            }
            let altered = add_text(&db, "acct", "note");
            done.store(true, SeqCst);
            let moved: Vec<(i64, i64)> = writers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect();
            (altered, moved)
        });
        let mut want = vec![100i64; 64];
        for &(a, b) in &moved {
            want[a as usize] -= 1;
            want[b as usize] += 1;
        }
        let got: Vec<i64> = rows(&db, &altered)
            .iter()
            .map(|r| r[1].as_int().unwrap())
            .collect();
        assert_eq!(got, want, "{p}: {} transfers committed", moved.len());
    }
}

/// `shop(id, sku, cat, price)` with 300 rows (sku `s<id>`, cat `id % 7`),
/// a unique index `by_sku` and a non-unique `by_cat`, both of `kind`.
fn shop(db: &Database, kind: IndexKind) -> Table {
    let t = db
        .create_table(
            Schema::new("shop")
                .column("id", Type::Int)
                .column("sku", Type::Text)
                .column("cat", Type::Int)
                .column("price", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    db.run(|tx| (0..300).try_for_each(|k| tx.insert(&t, row![k, format!("s{k}"), k % 7, k * 3])))
        .unwrap();
    db.create_index_as("by_sku", &t, &["sku"], Unique::Yes, kind)
        .unwrap();
    db.create_index_as("by_cat", &t, &["cat"], Unique::No, kind)
        .unwrap();
    t
}

/// The ids of the rows `rows` holds (the primary key is column 0).
fn ids(rows: &[Row]) -> Vec<i64> {
    rows.iter().map(|r| r[0].as_int().unwrap()).collect()
}

/// Reads through both indexes of `table` (handles taken by name): each
/// is on the table, with the columns, uniqueness and kind it had (`cat`
/// is the non-unique index's column's name now), and finds what the rows
/// hold; the unique one still refuses a duplicate, and new rows go into
/// both.
fn check_indexes(db: &Database, table: &str, cat: &str, kind: IndexKind, what: &str) {
    let (sku, by_cat) = (db.index("by_sku").unwrap(), db.index("by_cat").unwrap());
    assert_eq!(db.index_names(), ["by_cat", "by_sku"], "{what}");
    for (idx, col, unique) in [(&sku, "sku", true), (&by_cat, cat, false)] {
        assert_eq!(idx.table().name(), table, "{what}");
        assert_eq!(idx.columns(), [col], "{what}");
        assert_eq!(idx.is_unique(), unique, "{what}");
        assert_eq!(idx.kind(), kind, "{what}");
    }
    let t = db.table(table).unwrap();
    let mut tx = db.begin().unwrap();
    assert_eq!(
        ids(&tx.index_get(&sku, &key!["s42"]).unwrap()),
        [42],
        "{what}"
    );
    let threes = ids(&tx.index_get(&by_cat, &key![3]).unwrap());
    let want: Vec<i64> = (0..300).filter(|k| k % 7 == 3).collect();
    assert_eq!(threes, want, "{what}");
    assert_eq!(
        tx.index_scan(&by_cat, key![0]..key![7]).unwrap().len(),
        300,
        "{what}"
    );
    // Row 1,000 in sku `sku`, category 3, whatever the columns are now.
    let new_row = |sku: &str| -> Row {
        (t.schema().columns.iter())
            .map(|c| match c.name.as_str() {
                "id" => Value::Int(1_000),
                "sku" => Value::from(sku),
                "price" => Value::Int(0),
                "note" => Value::Null,
                _ => Value::Int(3),
            })
            .collect()
    };
    assert!(
        matches!(
            tx.insert(&t, new_row("s42")),
            Err(Error::DuplicateKey { .. })
        ),
        "{what}: the unique index refuses a taken sku"
    );
    tx.insert(&t, new_row("fresh")).unwrap();
    assert_eq!(
        ids(&tx.index_get(&sku, &key!["fresh"]).unwrap()),
        [1_000],
        "{what}"
    );
    assert_eq!(
        tx.index_get(&by_cat, &key![3]).unwrap().len(),
        want.len() + 1,
        "{what}"
    );
    drop(tx); // (rolled back: the next check finds the same rows)
}

/// Every change but an indexed column's drop, on a table with a unique
/// and a non-unique index, of either kind: the indexes are rebuilt on the
/// altered table under their names (a renamed column's follows it) and
/// answer as before; the old handles fail; all of it again after a
/// restart (replaying the log, or from a checkpoint taken after).
#[test]
fn alter_keeps_the_indexes() {
    for kind in IndexKind::ALL {
        for checkpoint in [false, true] {
            let dir = TestDir::new("alter-indexes");
            let opts = || {
                Options::default()
                    .mvpbt_partition_records(64)
                    .durability(Durability::Wal {
                        dir: dir.to_path_buf(),
                        sync: SyncPolicy::GroupCommit,
                    })
            };
            let what = |step: &str| format!("{kind:?}, checkpoint {checkpoint}: {step}");
            {
                let db = Database::open(opts()).unwrap();
                shop(&db, kind);
                let old_idx = db.index("by_cat").unwrap();
                add_text(&db, "shop", "note");
                check_indexes(&db, "shop", "cat", kind, &what("add"));
                assert!(
                    db.begin().unwrap().index_get(&old_idx, &key![3]).is_err(),
                    "{}",
                    what("an old index handle")
                );
                db.alter_table("shop", Alter::DropColumn("price".into()))
                    .unwrap();
                check_indexes(&db, "shop", "cat", kind, &what("drop"));
                let rename = Alter::RenameColumn {
                    from: "cat".into(),
                    to: "category".into(),
                };
                db.alter_table("shop", rename).unwrap();
                check_indexes(&db, "shop", "category", kind, &what("rename column"));
                db.alter_table("shop", Alter::Rename("store".into()))
                    .unwrap();
                check_indexes(&db, "store", "category", kind, &what("rename"));
                if checkpoint {
                    db.checkpoint().unwrap();
                }
            }
            let db = Database::open(opts()).unwrap();
            assert_eq!(db.table_names(), ["store"]);
            check_indexes(&db, "store", "category", kind, &what("reopened"));
            let t = db.table("store").unwrap();
            assert_eq!(
                t.schema()
                    .columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
                ["id", "sku", "category", "note"]
            );
            // An index dropped after the alter stays dropped.
            db.drop_index("by_sku").unwrap();
            drop(db);
            let db = Database::open(opts()).unwrap();
            assert_eq!(db.index_names(), ["by_cat"], "{}", what("drop after"));
        }
    }
}

/// An alter whose copy fails part way (here it finds no transaction slot:
/// the test holds the last but one, the alter's snapshot takes the last)
/// leaves the table, its rows, its indexes and its handles as they were,
/// in memory; the same alter goes through once a slot is free.
#[test]
fn a_copy_that_fails_leaves_the_table_and_its_indexes() {
    let db = Database::open(Options::default().max_open_transactions(2)).unwrap();
    let t = shop(&db, IndexKind::Standard);
    let by_cat = db.index("by_cat").unwrap();
    let holder = db.begin_read_only().unwrap();
    let e = db
        .alter_table("shop", Alter::Rename("store".into()))
        .unwrap_err();
    assert!(matches!(e, Error::TooManyTransactions(2)), "{e}");
    drop(holder);
    assert_eq!(db.table_names(), ["shop"]);
    let mut tx = db.begin().unwrap();
    assert_eq!(tx.index_get(&by_cat, &key![3]).unwrap().len(), 43);
    tx.update(&t, &key![1], &[("price", Value::Int(7))])
        .unwrap();
    tx.commit().unwrap();
    check_indexes(
        &db,
        "shop",
        "cat",
        IndexKind::Standard,
        "after the failed alter",
    );
    db.alter_table("shop", Alter::Rename("store".into()))
        .unwrap();
    check_indexes(
        &db,
        "store",
        "cat",
        IndexKind::Standard,
        "after the retried alter",
    );
}

/// The copy runs outside the catalog lock. An alter held inside its copy
/// (the lab's pause hook) does not keep other tables from being looked
/// up, created, altered or dropped; a lookup of the altered table by
/// either name, a drop of one of its indexes and a checkpoint wait for
/// it, and then find the altered table (and the log replays to it). A
/// lookup that waited for the alter is a failure here, found by the hang
/// guard rather than a hang.
#[test]
fn other_tables_do_not_wait_for_an_alter() {
    use std::sync::{mpsc, Mutex};
    let dir = TestDir::new("alter-outside-the-lock");
    let opts = || {
        Options::default().durability(Durability::Wal {
            dir: dir.to_path_buf(),
            sync: SyncPolicy::GroupCommit,
        })
    };
    {
        let db = Database::open(opts()).unwrap();
        people(&db);
        db.create_index("by_age", &db.table("people").unwrap(), &["age"], Unique::No)
            .unwrap();
        let other = db
            .create_table(
                Schema::new("other")
                    .column("k", Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.run(|tx| tx.insert(&other, row![1])).unwrap();
        let (inside, entered) = mpsc::channel();
        let (go, release) = mpsc::channel::<()>();
        let (inside, release) = (Mutex::new(inside), Mutex::new(release));
        let first = std::sync::atomic::AtomicBool::new(true);
        db.pause_alters_for_testing(move || {
            // Only the first alter waits (the test alters another table
            // meanwhile).
            if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                inside.lock().unwrap().send(()).unwrap();
                // Released by the test (or the test gone: go on).
                let _ = release.lock().unwrap().recv();
            }
        });
        std::thread::scope(|s| {
            let alter = s.spawn(|| db.alter_table("people", Alter::Rename("persons".into())));
            entered.recv().unwrap();
            // The alter is inside its copy: the other table's lookup, DDL
            // on other tables, on a thread of their own so that a wait is
            // a failure, not a hang.
            let (done, others) = mpsc::channel();
            let db2 = &db;
            s.spawn(move || {
                let r = (|| -> strata::Result<i64> {
                    let other = db2.table("other")?;
                    let n = db2.begin_read_only()?.count(&other, ..)? as i64;
                    db2.create_table(
                        Schema::new("third")
                            .column("k", Type::Int)
                            .primary_key(&["k"]),
                    )?;
                    db2.alter_table("third", Alter::Rename("fourth".into()))?;
                    db2.drop_table("fourth")?;
                    Ok(n)
                })();
                let _ = done.send(r);
            });
            let got = others.recv_timeout(common::HANG_GUARD);
            // What must wait: started now, done after the release.
            let by_old = s.spawn(|| db.table("people"));
            let by_new = s.spawn(|| db.table("persons"));
            let index_drop = s.spawn(|| db.drop_index("by_age"));
            let checkpoint = s.spawn(|| db.checkpoint());
            go.send(()).unwrap();
            assert!(
                matches!(got, Ok(Ok(1))),
                "other tables' lookups and DDL while an alter copies: {got:?}"
            );
            let altered = alter.join().unwrap().unwrap();
            for t in [by_old.join().unwrap(), by_new.join().unwrap()] {
                // The old name is gone (the alter renamed it) or the
                // lookup found the altered table: never the frozen one.
                match t {
                    Ok(t) => assert_eq!(t.name(), altered.name()),
                    Err(e) => assert!(matches!(e, Error::NoSuchTable { .. }), "{e}"),
                }
            }
            index_drop.join().unwrap().unwrap();
            checkpoint.join().unwrap().unwrap();
            assert_eq!(db.table("persons").unwrap().name(), "persons");
            assert_eq!(db.table_names(), ["other", "persons"]);
            assert!(db.index_names().is_empty());
            assert_eq!(rows(&db, &altered).len(), 5000);
        });
    }
    // The checkpoint came after the alter, and the index drop after it in
    // the log: a restart finds the renamed table whole, without the index.
    let db = Database::open(opts()).unwrap();
    assert_eq!(db.table_names(), ["other", "persons"]);
    assert!(db.index_names().is_empty());
    let t = db.table("persons").unwrap();
    let all = rows(&db, &t);
    assert_eq!(all.len(), 5000);
    assert_eq!(all[4], row![4, "p4", 4]);
}
