//! Reads of chosen columns (`Transaction::get_columns`, `scan_columns_with`,
//! `read_columns_with`; issue 41, item 2): under every storage scheme a
//! read of 1 of 100 attributes decodes 1 cell, where a whole-row read of an
//! in-place version decodes all of them (Wu et al. §7.3, Fig. 15a), for
//! the newest version and for older ones reached through records; the
//! values are the ones a whole-row read has in those positions; a bad
//! column is a typed error that leaves the transaction open.

use crate::common::*;
use strata::{key, Database, Error, GcPolicy, Schema, Table, Type, Value, VersionStorage};

const COLS: usize = 100;

/// Every storage scheme, each with a collector it runs with (SIRO needs
/// its own).
fn every_scheme() -> Vec<Config> {
    let mut all: Vec<Config> = configs().storages().into_iter().collect();
    all.extend(
        configs()
            .storage(VersionStorage::Siro)
            .gc(GcPolicy::DeadZone),
    );
    let mut seen: Vec<VersionStorage> = all.iter().map(|c| c.storage).collect();
    seen.sort_by_key(|s| s.to_string());
    seen.dedup();
    assert_eq!(
        seen.len(),
        VersionStorage::ALL.len(),
        "every scheme is tried"
    );
    all
}

fn table(db: &Database) -> Table {
    let mut s = Schema::new("wide").column("k", Type::Int);
    for c in 0..COLS {
        s = s.column(format!("c{c}"), Type::Int);
    }
    db.create_table(s.primary_key(&["k"])).unwrap()
}

/// Row 1 with `c<i> = i`, then `c5` and `c50` updated (three versions; an
/// in-place scheme's older ones have records). Returns a snapshot taken
/// before the updates.
fn three_versions(db: &Database, t: &Table) -> strata::Transaction {
    let mut txn = db.begin().unwrap();
    let mut row = vec![Value::Int(1)];
    row.extend((0..COLS as i64).map(Value::Int));
    txn.insert(t, row).unwrap();
    txn.commit().unwrap();
    let old = db.begin_read_only().unwrap();
    for (c, v) in [("c5", 1005), ("c50", 5050)] {
        let mut txn = db.begin().unwrap();
        txn.update(t, &key![1], &[(c, Value::Int(v))]).unwrap();
        txn.commit().unwrap();
    }
    old
}

/// Cells this thread's reads decoded while `f` ran, and its result.
fn decoding<R>(f: impl FnOnce() -> R) -> (u64, R) {
    let before = strata::storage_meter();
    let r = f();
    (strata::storage_meter().since(&before).cells_decoded, r)
}

#[test]
fn a_one_column_read_decodes_one_cell_under_every_scheme() {
    for c in every_scheme() {
        let db = c.open();
        let t = table(&db);
        let mut old = three_versions(&db, &t);
        let mut now = db.begin_read_only().unwrap();
        let (n, got) = decoding(|| now.get_columns(&t, &key![1], &["c50"]).unwrap());
        assert_eq!(got, Some(vec![Value::Int(5050)]), "{c}");
        assert_eq!(n, 1, "{c}: the newest version, one column");
        // An older version: through the records between it and the master
        // (in place), only that attribute of each.
        let (n, got) = decoding(|| old.get_columns(&t, &key![1], &["c50"]).unwrap());
        assert_eq!(got, Some(vec![Value::Int(50)]), "{c}");
        assert_eq!(n, 1, "{c}: an older version, one column");
        // What the projection saves: a whole-row read of an in-place
        // version decodes every cell (append-only reads in place).
        let (n, _) = decoding(|| now.get(&t, &key![1]).unwrap());
        let in_place = !c.storage.is_append_only();
        assert_eq!(n, if in_place { 1 + COLS as u64 } else { 0 }, "{c}");
    }
}

#[test]
fn a_projection_reads_what_the_whole_row_holds_in_those_positions() {
    let cols = [3usize, 0, 100, 6, 3, 51];
    for c in every_scheme() {
        let db = c.open();
        let t = table(&db);
        let mut old = three_versions(&db, &t);
        let mut now = db.begin().unwrap();
        for txn in [&mut old, &mut now] {
            let row = txn.get(&t, &key![1]).unwrap().unwrap();
            let want: Vec<Value> = cols.iter().map(|&i| row[i].clone()).collect();
            let (n, got) = decoding(|| txn.get_columns(&t, &key![1], &cols).unwrap());
            assert_eq!(got, Some(want), "{c}");
            assert_eq!(n, cols.len() as u64, "{c}");
            // By name, the same; and the callback form sees them in order.
            let sum = txn
                .read_columns_with(&t, &key![1], &["c2", "c50"], |v| {
                    v.iter().map(|x| x.as_int().unwrap()).sum::<i64>()
                })
                .unwrap();
            assert_eq!(
                sum,
                Some(row[3].as_int().unwrap() + row[51].as_int().unwrap())
            );
        }
        // An absent key reads as absent.
        assert_eq!(now.get_columns(&t, &key![2], &["c1"]).unwrap(), None);
        // Our own write, read back through the projection.
        now.update(&t, &key![1], &[("c7", Value::Int(-7))]).unwrap();
        let got = now.get_columns(&t, &key![1], &["c7", "c5"]).unwrap();
        assert_eq!(got, Some(vec![Value::Int(-7), Value::Int(1005)]), "{c}");
        now.commit().unwrap();
    }
}

#[test]
fn a_bad_column_is_a_typed_error_and_leaves_the_transaction_open() {
    for c in every_scheme() {
        let db = c.open();
        let t = table(&db);
        drop(three_versions(&db, &t));
        let mut txn = db.begin().unwrap();
        let e = txn.get_columns(&t, &key![1], &["c1", "nope"]).unwrap_err();
        assert!(
            matches!(&e, Error::NoSuchColumn { column, .. } if column == "nope"),
            "{c}: {e:?}"
        );
        let e = txn.get_columns(&t, &key![1], &[COLS + 1]).unwrap_err();
        assert!(
            matches!(&e, Error::Schema(m) if m.contains(&format!("#{}", COLS + 1))),
            "{c}: {e:?}"
        );
        let e = txn
            .read_columns_with(&t, &key![1], &[usize::MAX], |v| v.len())
            .unwrap_err();
        assert!(matches!(e, Error::Schema(_)), "{c}: {e:?}");
        // Still open: it reads and writes, and commits.
        let got = txn.get_columns(&t, &key![1], &[1usize]).unwrap();
        assert_eq!(got, Some(vec![Value::Int(0)]), "{c}");
        txn.update(&t, &key![1], &[("c1", Value::Int(11))]).unwrap();
        txn.commit().unwrap();
        let mut r = db.begin_read_only().unwrap();
        let got = r.get_columns(&t, &key![1], &["c1"]).unwrap();
        assert_eq!(got, Some(vec![Value::Int(11)]), "{c}");
    }
}

/// `scan_columns_with`: a scan of one attribute decodes one cell per row
/// under every scheme (TPC-C's StockScan reads `s_quantity` of each stock
/// row this way), old and new versions alike, and sees what a whole-row
/// scan sees in that position; a bad column reads nothing.
#[test]
fn a_one_column_scan_decodes_one_cell_a_row_under_every_scheme() {
    for c in every_scheme() {
        let db = c.open();
        let t = table(&db);
        let mut old = three_versions(&db, &t);
        db.run(|x| {
            for k in 2..=10 {
                let mut row = vec![Value::Int(k)];
                row.extend((0..COLS as i64).map(|v| Value::Int(v * k)));
                x.insert(&t, row)?;
            }
            Ok(())
        })
        .unwrap();
        let mut now = db.begin_read_only().unwrap();
        for (txn, rows) in [(&mut old, 1u64), (&mut now, 10)] {
            let want: Vec<Value> = txn
                .scan(&t, ..)
                .unwrap()
                .iter()
                .map(|r| r[51].clone())
                .collect();
            let mut got = Vec::new();
            let (n, seen) = decoding(|| {
                txn.scan_columns_with(&t, .., &["c50"], |v| got.push(v.to_vec()))
                    .unwrap()
            });
            assert_eq!(seen as u64, rows, "{c}");
            assert_eq!(n, rows, "{c}: one cell a row");
            assert_eq!(got.concat(), want, "{c}");
        }
        let e = now
            .scan_columns_with(&t, .., &["nope"], |_| panic!("read a row"))
            .unwrap_err();
        assert!(matches!(e, Error::NoSuchColumn { .. }), "{c}: {e:?}");
    }
}
