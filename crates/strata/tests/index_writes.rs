//! Index writes per update (Wu et al. §6 and Fig. 22; MV-PBT §3.5): with
//! physical pointers every new version of an N2O chain is written into
//! every index of its table, the primary one included (its entry point
//! moved); with logical pointers an update writes only the indexes whose
//! key it changed. Counted by `Stats::index_entry_writes`.

use crate::common;
use strata::{
    key, row, Database, IndexKind, IndexPointers, Options, Schema, Table, Type, Unique, Value,
    VersionStorage,
};

const ROWS: i64 = 20;

/// t(k, v, a0, a1, a2) with `n` indexes of `kind`, on a0.. a{n-1}.
fn table(p: IndexPointers, s: VersionStorage, kind: IndexKind, n: usize) -> (Database, Table) {
    let db = Database::open(
        Options::default()
            .index_pointers(p)
            .version_storage(s)
            .gc_interval(None),
    )
    .unwrap();
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .column("a0", Type::Int)
                .column("a1", Type::Int)
                .column("a2", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    for i in 0..n {
        let c = format!("a{i}");
        db.create_index_as(&format!("by_{c}"), &t, &[c.as_str()], Unique::No, kind)
            .unwrap();
    }
    db.run(|x| {
        for k in 0..ROWS {
            x.insert(&t, row![k, 0, k, k, k])?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

/// Index entries written per update of column `col` over every row.
fn per_update(db: &Database, t: &Table, col: &str, round: i64) -> u64 {
    let before = db.stats().index_entry_writes;
    for k in 0..ROWS {
        db.run(|x| x.update(t, &key![k], &[(col, Value::Int(100 * round + k))]))
            .unwrap();
    }
    let n = db.stats().index_entry_writes - before;
    assert_eq!(n % ROWS as u64, 0, "{col}: {n} writes for {ROWS} updates");
    n / ROWS as u64
}

#[test]
fn a_physical_n2o_update_writes_every_index_a_logical_one_only_those_it_changes() {
    for kind in IndexKind::ALL {
        for p in IndexPointers::ALL {
            for n in [0usize, 1, 3] {
                let tag = format!("{kind} {p:?}, {n} secondary indexes");
                let (db, t) = table(p, VersionStorage::AppendNewToOld, kind, n);
                let physical = p == IndexPointers::Physical;
                // An update of a column no index holds.
                let want = if physical { 1 + n as u64 } else { 0 };
                assert_eq!(per_update(&db, &t, "v", 1), want, "{tag}: non-key update");
                if n == 0 {
                    continue;
                }
                // An update of a0's key: its index gets the new key (MV-PBT:
                // an anti-record for the old key and a replacement).
                let changed = if kind == IndexKind::MvPbt { 2 } else { 1 };
                let want = if physical {
                    1 + (n as u64 - 1) + changed
                } else {
                    changed
                };
                assert_eq!(per_update(&db, &t, "a0", 2), want, "{tag}: key update");
            }
        }
    }
}

/// MV-PBT with physical pointers (the papers' PostgreSQL setting, §3.5,
/// MV-PBT Figs. 3 and 12b): each update adds a replacement record naming
/// the new version, so the records grow with the versions; under logical
/// pointers (a record names the row) a non-key update adds none.
#[test]
fn mvpbt_with_physical_pointers_adds_a_record_per_version() {
    for p in IndexPointers::ALL {
        let (db, t) = table(p, VersionStorage::AppendNewToOld, IndexKind::MvPbt, 1);
        let before = db.stats().mvpbt.active_records;
        let mut reader = db.begin_read_only().unwrap();
        for round in 1..=3 {
            per_update(&db, &t, "v", round);
        }
        let added = db.stats().mvpbt.active_records - before;
        let want = if p == IndexPointers::Physical {
            3 * ROWS as u64
        } else {
            0
        };
        assert_eq!(added, want, "{p:?}");
        // The reader's snapshot still decides from the records alone.
        let idx = db.index("by_a0").unwrap();
        let rows = reader.index_scan(&idx, ..).unwrap();
        assert_eq!(rows.len(), ROWS as usize);
        assert!(rows.iter().all(|r| r[1] == Value::Int(0)), "{p:?}");
    }
}

/// O2N's entry point is the oldest version: an update moves no primary
/// entry, and writes the secondary indexes only (every one, physically).
#[test]
fn a_physical_o2n_update_writes_the_secondary_indexes_only() {
    let o2n = common::configs().storage(VersionStorage::AppendOldToNew);
    for p in o2n.pointers().into_iter().map(|c| c.pointers) {
        let (db, t) = table(p, VersionStorage::AppendOldToNew, IndexKind::Standard, 3);
        let want = if p == IndexPointers::Physical { 3 } else { 0 };
        assert_eq!(per_update(&db, &t, "v", 1), want, "{p:?}");
    }
}

/// Every shape of primary key pays the N2O index write under physical
/// pointers: an integer key's hash entry, a text key's byte map entry, and
/// the leaf entry of a table with no hash side (`PointLookups::Tree`, as
/// TPC-C's order and order-line tables are).
#[test]
fn a_physical_n2o_update_writes_the_primary_entry_of_every_key_shape() {
    use strata::PointLookups;
    for p in IndexPointers::ALL {
        for (text, point) in [
            (false, PointLookups::Hash),
            (true, PointLookups::Hash),
            (false, PointLookups::Tree),
            (true, PointLookups::Tree),
        ] {
            let db =
                Database::open(Options::default().index_pointers(p).gc_interval(None)).unwrap();
            let k = if text { Type::Text } else { Type::Int };
            let t = db
                .create_table(
                    Schema::new("t")
                        .column("k", k)
                        .column("v", Type::Int)
                        .primary_key(&["k"])
                        .point_lookups(point),
                )
                .unwrap();
            let key_of = |i: i64| -> Value {
                if text {
                    Value::from(format!("key {i}"))
                } else {
                    Value::Int(i)
                }
            };
            db.run(|x| {
                for i in 0..ROWS {
                    x.insert(&t, vec![key_of(i), Value::Int(0)])?;
                }
                Ok(())
            })
            .unwrap();
            let before = db.stats().index_entry_writes;
            for i in 0..ROWS {
                db.run(|x| x.update(&t, &strata::Key(vec![key_of(i)]), &[("v", Value::Int(1))]))
                    .unwrap();
            }
            let per = (db.stats().index_entry_writes - before) / ROWS as u64;
            let want = u64::from(p == IndexPointers::Physical);
            assert_eq!(per, want, "{p:?}, text key {text}, {point:?}");
        }
    }
}
