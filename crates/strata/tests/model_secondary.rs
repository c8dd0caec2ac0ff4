//! Model-based test for secondary indexes: random single-threaded
//! operations on a table with a non-unique and a unique secondary index,
//! mirrored against a `BTreeMap` reference, for every protocol and every
//! index pointer scheme. Index reads are compared after every operation
//! (inside the transaction) and after every commit and abort (a fresh
//! snapshot); GC runs after every commit, so stale-entry removal and row
//! unlinking are exercised too.
//!
//! Each run is repeated with MV-PBT indexes (`IndexKind::MvPbt`) whose
//! writable partition freezes every 3 records, so reads cross many frozen
//! partitions and every freeze drops what no snapshot sees. A read-only
//! snapshot taken at random points (`Snap`) must keep finding the rows of
//! its time under the keys they had then, through both kinds, by full and
//! covering scans.
//!
//! MV-PBT runs a second time with a spill directory
//! (`Options::mvpbt_spill_dir`): frozen partitions' decided records are
//! read from memory-mapped files, the undecided ones from memory, and
//! every answer must be the same.

use crate::common;
use proptest::prelude::*;
use std::collections::BTreeMap;
use strata::{
    key, row, Database, Error, IndexKind, IndexPointers, Options, Protocol, Schema, Transaction,
    Type, Unique, Value, VersionStorage,
};

#[derive(Debug, Clone)]
enum Op {
    Insert(i64, i64, i64),
    SetV(i64, i64),
    SetU(i64, i64),
    SetN(i64, i64),
    Delete(i64),
    GetV(i64),
    ScanV(i64, i64),
    GetU(i64),
    Commit,
    Abort,
    /// Take a read-only snapshot of the committed state, kept until the
    /// next `Snap`.
    Snap,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0i64..10;
    let v = 0i64..5;
    prop_oneof![
        3 => (k.clone(), v.clone(), v.clone()).prop_map(|(k, v, u)| Op::Insert(k, v, u)),
        3 => (k.clone(), v.clone()).prop_map(|(k, v)| Op::SetV(k, v)),
        2 => (k.clone(), v.clone()).prop_map(|(k, u)| Op::SetU(k, u)),
        2 => (k.clone(), v.clone()).prop_map(|(k, n)| Op::SetN(k, n)),
        2 => k.clone().prop_map(Op::Delete),
        2 => v.clone().prop_map(Op::GetV),
        1 => (v.clone(), v.clone()).prop_map(|(a, b)| Op::ScanV(a.min(b), a.max(b))),
        1 => v.prop_map(Op::GetU),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Snap),
    ]
}

/// The reference: key -> (v, u, n).
type Model = BTreeMap<i64, (i64, i64, i64)>;

fn rows_by(model: &Model, col: usize, lo: i64, hi: i64) -> Vec<Vec<Value>> {
    let mut out: Vec<(i64, i64, Vec<Value>)> = model
        .iter()
        .map(|(&k, &(v, u, n))| {
            let c = if col == 1 { v } else { u };
            (c, k, row![k, v, u, format!("n{n}")])
        })
        .filter(|(c, _, _)| (lo..=hi).contains(c))
        .collect();
    out.sort_by_key(|(c, k, _)| (*c, *k));
    out.into_iter().map(|(_, _, r)| r).collect()
}

/// Every valid (version storage, pointer scheme) pair: physical pointers
/// need append-only storage (N2O, O2N).
type Cfg = (VersionStorage, IndexPointers);

/// Where the spilling runs put their files: each database makes a
/// directory of its own in it and removes it when it is dropped; those a
/// process left behind (an index freed only at a later epoch that never
/// came) go when a later run opens a database here.
fn spill_root() -> std::path::PathBuf {
    std::env::temp_dir().join("strata-model-secondary-spill")
}

fn run(p: Protocol, s: Cfg, kind: IndexKind, spill: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let db = Database::open(
        Options::default()
            .protocol(p)
            .version_storage(s.0)
            .index_pointers(s.1)
            .gc_every_commits(1)
            .gc_interval(None)
            .mvpbt_partition_records(3)
            .mvpbt_spill_dir(spill.then(spill_root)),
    )
    .unwrap();
    let t = db
        .create_table(
            Schema::new("m")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .column("u", Type::Int)
                .column("n", Type::Text)
                .primary_key(&["k"]),
        )
        .unwrap();
    let by_v = db
        .create_index_as("by_v", &t, &["v"], Unique::No, kind)
        .unwrap();
    let by_u = db
        .create_index_as("by_u", &t, &["u"], Unique::Yes, kind)
        .unwrap();
    let s = (s.0, s.1, kind);
    let check = |txn: &mut Transaction, m: &Model, what: &str| -> Result<(), TestCaseError> {
        // Covering: (index column, primary key) per row, in index order.
        let keys = |col: usize| -> Vec<Vec<Value>> {
            rows_by(m, col, 0, 9)
                .into_iter()
                .map(|r| vec![r[col].clone(), r[0].clone()])
                .collect()
        };
        prop_assert_eq!(
            txn.index_scan_keys(&by_v, ..).unwrap(),
            keys(1),
            "{} {:?} by_v keys {}",
            p,
            s,
            what
        );
        prop_assert_eq!(
            txn.index_scan_keys(&by_u, key![0]..=key![2]).unwrap(),
            keys(2)
                .into_iter()
                .filter(|r| r[0].as_int().unwrap() <= 2)
                .collect::<Vec<_>>(),
            "{} {:?} by_u keys {}",
            p,
            s,
            what
        );
        prop_assert_eq!(
            txn.index_scan(&by_v, ..).unwrap(),
            rows_by(m, 1, 0, 9),
            "{} {:?} by_v {}",
            p,
            s,
            what
        );
        prop_assert_eq!(
            txn.index_scan(&by_u, ..).unwrap(),
            rows_by(m, 2, 0, 9),
            "{} {:?} by_u {}",
            p,
            s,
            what
        );
        Ok(())
    };
    let mut committed = Model::new();
    let mut pending = committed.clone();
    let mut open = Some(db.begin().unwrap());
    let mut snap: Option<(Transaction, Model)> = None;
    for op in ops {
        let txn = open.as_mut().expect("a transaction is open");
        let u_taken =
            |m: &Model, k: i64, u: i64| m.iter().any(|(&k2, &(_, u2, _))| k2 != k && u2 == u);
        match *op {
            Op::Insert(k, v, u) => {
                let r = txn.insert(&t, row![k, v, u, format!("n{v}")]);
                if pending.contains_key(&k) || u_taken(&pending, k, u) {
                    prop_assert!(
                        matches!(r, Err(Error::DuplicateKey { .. })),
                        "{} {:?} {:?}: {:?}",
                        p,
                        s,
                        op,
                        r
                    );
                } else {
                    prop_assert!(r.is_ok(), "{} {:?} {:?}: {:?}", p, s, op, r);
                    pending.insert(k, (v, u, v));
                }
            }
            Op::SetV(k, x) | Op::SetU(k, x) | Op::SetN(k, x) => {
                let (col, val) = match op {
                    Op::SetV(..) => ("v", Value::Int(x)),
                    Op::SetU(..) => ("u", Value::Int(x)),
                    _ => ("n", Value::from(format!("n{x}"))),
                };
                let r = txn.update(&t, &key![k], &[(col, val)]);
                match pending.get(&k).copied() {
                    None => prop_assert!(
                        matches!(r, Err(Error::NotFound { .. })),
                        "{} {:?} {:?}: {:?}",
                        p,
                        s,
                        op,
                        r
                    ),
                    Some(_) if col == "u" && u_taken(&pending, k, x) => {
                        prop_assert!(
                            matches!(r, Err(Error::DuplicateKey { .. })),
                            "{} {:?} {:?}: {:?}",
                            p,
                            s,
                            op,
                            r
                        )
                    }
                    Some((v, u, n)) => {
                        prop_assert!(r.is_ok(), "{} {:?} {:?}: {:?}", p, s, op, r);
                        let new = match col {
                            "v" => (x, u, n),
                            "u" => (v, x, n),
                            _ => (v, u, x),
                        };
                        pending.insert(k, new);
                    }
                }
            }
            Op::Delete(k) => {
                let r = txn.delete(&t, &key![k]);
                if pending.remove(&k).is_some() {
                    prop_assert!(r.is_ok(), "{} {:?} {:?}: {:?}", p, s, op, r);
                } else {
                    prop_assert!(
                        matches!(r, Err(Error::NotFound { .. })),
                        "{} {:?} {:?}: {:?}",
                        p,
                        s,
                        op,
                        r
                    );
                }
            }
            Op::GetV(v) => {
                prop_assert_eq!(
                    txn.index_get(&by_v, &key![v]).unwrap(),
                    rows_by(&pending, 1, v, v),
                    "{} {:?} {:?}",
                    p,
                    s,
                    op
                );
            }
            Op::ScanV(lo, hi) => {
                prop_assert_eq!(
                    txn.index_scan(&by_v, key![lo]..=key![hi]).unwrap(),
                    rows_by(&pending, 1, lo, hi),
                    "{} {:?} {:?}",
                    p,
                    s,
                    op
                );
            }
            Op::GetU(u) => {
                prop_assert_eq!(
                    txn.index_get(&by_u, &key![u]).unwrap(),
                    rows_by(&pending, 2, u, u),
                    "{} {:?} {:?}",
                    p,
                    s,
                    op
                );
            }
            Op::Commit | Op::Abort => {
                let old = open.take().expect("a transaction is open");
                if matches!(op, Op::Commit) {
                    let r = old.commit();
                    prop_assert!(r.is_ok(), "{} {:?}: commit failed: {:?}", p, s, r);
                    committed = pending.clone();
                } else {
                    old.abort();
                    pending = committed.clone();
                }
                let mut ro = db.begin_read_only().unwrap();
                check(&mut ro, &committed, &format!("after {op:?}"))?;
                drop(ro);
                if let Some((old, m)) = snap.as_mut() {
                    check(old, m, &format!("old snapshot, after {op:?}"))?;
                }
                open = Some(db.begin().unwrap());
            }
            Op::Snap => {
                snap = Some((db.begin_read_only().unwrap(), committed.clone()));
            }
        }
    }
    let mut txn = open.take().expect("open");
    check(&mut txn, &pending, "at the end")?;
    drop(txn);
    if let Some((mut old, m)) = snap.take() {
        for idx in [&by_v, &by_u] {
            if kind == IndexKind::MvPbt {
                db.freeze_index(idx).unwrap();
            }
        }
        check(&mut old, &m, "old snapshot, at the end")?;
    }
    db.collect_garbage();
    db.collect_garbage();
    if kind == IndexKind::MvPbt {
        // No snapshot is left: a full freeze (merging every partition)
        // keeps one record per row and index, and every read still
        // answers.
        for idx in [&by_v, &by_u] {
            db.freeze_index(idx).unwrap();
        }
        let mut ro = db.begin_read_only().unwrap();
        check(&mut ro, &committed, "after the last freeze")?;
        let st = db.stats().mvpbt;
        prop_assert_eq!(
            (st.spill_failures, st.spill_corrupt_rebuilt),
            (0, 0),
            "{:?}",
            st
        );
        if spill && st.frozen_records > 0 {
            // Every record is decided now: all of them are in a file.
            prop_assert_eq!(st.spilled_records, st.frozen_records, "{:?}", st);
        }
        prop_assert_eq!(
            st.frozen_records + st.active_records,
            2 * committed.len() as u64,
            "{} {:?}: one record per row and index: {:?}",
            p,
            s,
            st
        );
        return Ok(());
    }
    // Every stale entry is gone: one entry per row and index.
    let st = db.stats();
    prop_assert_eq!(
        st.secondary_index_entries,
        2 * committed.len() as u64,
        "{} {:?}: {:?}",
        p,
        s,
        st
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn secondary_indexes_match_a_btreemap(ops in proptest::collection::vec(op(), 1..60)) {
        for p in common::protocols() {
            for s in common::storage_pointer_schemes() {
                for kind in IndexKind::ALL {
                    run(p, s, kind, false, &ops)?;
                    if kind == IndexKind::MvPbt {
                        run(p, s, kind, true, &ops)?;
                    }
                }
            }
        }
    }
}
