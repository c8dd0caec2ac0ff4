#![allow(dead_code)]
//! Helpers shared by the integration tests.

use strata::{
    row, Database, IndexPointers, Options, Protocol, Schema, Table, Type, VersionStorage,
};

pub fn db(p: Protocol) -> Database {
    Database::open(Options::default().protocol(p)).expect("valid options")
}

/// `kv(k INT, v INT, note TEXT)` with primary key k.
pub fn kv_table(db: &Database) -> Table {
    db.create_table(
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .column("note", Type::Text)
            .primary_key(&["k"]),
    )
    .expect("create kv")
}

/// Inserts keys with the given values in one transaction.
/// `kv(k INT, v INT, n INT)` with primary key k (the secondary-index tests
/// index `v`).
pub fn kvn_table(db: &Database) -> Table {
    db.create_table(
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .column("n", Type::Int)
            .primary_key(&["k"]),
    )
    .expect("create kv")
}

pub fn load(db: &Database, t: &Table, rows: &[(i64, i64)]) {
    let mut txn = db.begin().unwrap();
    for &(k, v) in rows {
        txn.insert(t, row![k, v, "n"]).unwrap();
    }
    txn.commit().unwrap();
}

pub fn value(db: &Database, t: &Table, k: i64) -> Option<i64> {
    let mut ro = db.begin_read_only().unwrap();
    ro.get(t, &strata::key![k])
        .unwrap()
        .map(|r| r[1].as_int().unwrap())
}

/// Every version storage x index-pointer pair that `Options::validate`
/// accepts (10 today: physical pointers need append-only storage); the
/// secondary-index tests run on each.
pub fn storage_pointer_schemes() -> Vec<(VersionStorage, IndexPointers)> {
    let pointers = [
        IndexPointers::LogicalTupleId,
        IndexPointers::LogicalPrimaryKey,
        IndexPointers::Physical,
    ];
    let all: Vec<_> = VersionStorage::ALL
        .into_iter()
        .flat_map(|s| pointers.map(move |p| (s, p)))
        .filter(|&(s, p)| {
            Options::default()
                .version_storage(s)
                .index_pointers(p)
                .validate()
                .is_ok()
        })
        .collect();
    assert_eq!(all.len(), 10, "storage x pointer pairs: {all:?}");
    all
}
