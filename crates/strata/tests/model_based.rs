//! Model-based test: random single-threaded operations, mirrored against a
//! `BTreeMap` reference, compared after every operation, commit and abort,
//! for every protocol, with GC after every commit (so row unlinking and
//! tuple-id reuse are exercised too; with and without the primary index's
//! hash side), and again for every version storage scheme with
//! transaction-level GC and with no GC.

use crate::common;
use common::{configs, is_tuple_level, protocols, storages};
use proptest::prelude::*;
use std::collections::BTreeMap;
use strata::{
    key, row, Database, Error, GcPolicy, MemorySpaces, NonInline, Options, PointLookups, Protocol,
    Schema, Type, Value,
};

#[derive(Debug, Clone)]
enum Op {
    Insert(i64, i64),
    Update(i64, i64),
    Delete(i64),
    Get(i64),
    Scan(i64, i64),
    Commit,
    Abort,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0i64..12;
    prop_oneof![
        3 => (k.clone(), any::<i64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (k.clone(), any::<i64>()).prop_map(|(k, v)| Op::Update(k, v)),
        2 => k.clone().prop_map(Op::Delete),
        2 => k.clone().prop_map(Op::Get),
        1 => (k.clone(), k).prop_map(|(a, b)| Op::Scan(a.min(b), a.max(b))),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
    ]
}

fn text(v: i64) -> String {
    format!("t{v}")
}

fn run(p: Protocol, point: PointLookups, ops: &[Op]) -> Result<(), TestCaseError> {
    run_table(
        Options::default().protocol(p).gc_every_commits(1),
        point,
        ops,
    )
}

fn run_with(opts: Options, ops: &[Op]) -> Result<(), TestCaseError> {
    run_table(opts, PointLookups::Hash, ops)
}

fn run_table(opts: Options, point: PointLookups, ops: &[Op]) -> Result<(), TestCaseError> {
    let gc = opts.gc != GcPolicy::None;
    let p = format!(
        "{}/{}/{:?}/{point:?}",
        opts.protocol, opts.version_storage, opts.gc
    );
    let db = Database::open(opts).unwrap();
    let t = db
        .create_table(
            Schema::new("m")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .column("s", Type::Text)
                .primary_key(&["k"])
                .point_lookups(point),
        )
        .unwrap();
    let mut committed: BTreeMap<i64, i64> = BTreeMap::new();
    let mut pending = committed.clone();
    let mut open = Some(db.begin().unwrap());
    for op in ops {
        let txn = open.as_mut().expect("a transaction is open");
        match *op {
            Op::Insert(k, v) => {
                let r = txn.insert(&t, row![k, v, text(v)]);
                match pending.entry(k) {
                    std::collections::btree_map::Entry::Occupied(_) => prop_assert!(
                        matches!(r, Err(Error::DuplicateKey { .. })),
                        "{p} {op:?}: {r:?}"
                    ),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        prop_assert!(r.is_ok(), "{p} {op:?}: {r:?}");
                        e.insert(v);
                    }
                }
            }
            Op::Update(k, v) => {
                let r = txn.update(
                    &t,
                    &key![k],
                    &[("v", Value::Int(v)), ("s", Value::from(text(v)))],
                );
                if let std::collections::btree_map::Entry::Occupied(mut e) = pending.entry(k) {
                    prop_assert!(r.is_ok(), "{p} {op:?}: {r:?}");
                    e.insert(v);
                } else {
                    prop_assert!(
                        matches!(r, Err(Error::NotFound { .. })),
                        "{p} {op:?}: {r:?}"
                    );
                }
            }
            Op::Delete(k) => {
                let r = txn.delete(&t, &key![k]);
                if pending.remove(&k).is_some() {
                    prop_assert!(r.is_ok(), "{p} {op:?}: {r:?}");
                } else {
                    prop_assert!(
                        matches!(r, Err(Error::NotFound { .. })),
                        "{p} {op:?}: {r:?}"
                    );
                }
            }
            Op::Get(k) => {
                let got = txn.get(&t, &key![k]).unwrap();
                let want = pending.get(&k).map(|&v| row![k, v, text(v)]);
                prop_assert_eq!(got, want, "{} {:?}", p, op);
            }
            Op::Scan(lo, hi) => {
                let got: Vec<i64> = txn
                    .scan(&t, key![lo]..=key![hi])
                    .unwrap()
                    .iter()
                    .map(|r| r[0].as_int().unwrap())
                    .collect();
                let want: Vec<i64> = pending.range(lo..=hi).map(|(k, _)| *k).collect();
                prop_assert_eq!(got, want, "{} {:?}", p, op);
            }
            Op::Commit | Op::Abort => {
                // The next transaction begins after this one ends, so it
                // sees what was committed.
                let old = open.take().expect("a transaction is open");
                if matches!(op, Op::Commit) {
                    // Alone on the database, nothing can conflict.
                    prop_assert!(old.commit().is_ok(), "{p}: commit failed");
                    committed = pending.clone();
                } else {
                    old.abort();
                    pending = committed.clone();
                }
                let mut ro = db.begin_read_only().unwrap();
                let all: BTreeMap<i64, i64> = ro
                    .scan(&t, ..)
                    .unwrap()
                    .iter()
                    .map(|r| (r[0].as_int().unwrap(), r[1].as_int().unwrap()))
                    .collect();
                prop_assert_eq!(&all, &committed, "{} after {:?}", p, op);
                open = Some(db.begin().unwrap());
            }
        }
    }
    // Every version but the newest of each row is collectable now.
    drop(open);
    db.collect_garbage();
    db.collect_garbage();
    let st = db.stats();
    if gc {
        prop_assert!(st.live_versions <= st.rows + 12, "{p}: {st:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn every_protocol_matches_a_btreemap(ops in proptest::collection::vec(op(), 1..80)) {
        for p in protocols() {
            // With a hash side and with the tree alone.
            for point in [PointLookups::Hash, PointLookups::Tree] {
                run(p, point, &ops)?;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_storage_and_protocol_matches_a_btreemap(
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        for s in storages() {
            // Transaction-level GC and none (tuple-level GC has its own,
            // shorter test below).
            for c in configs()
                .protocols()
                .storage(s)
                .gc_where(|g| !is_tuple_level(g))
                .with(|o| o.gc_every_commits(1))
            {
                run_with(c.opts, &ops)?;
            }
            // Copying text in full must not change any answer.
            run_with(
                Options::default()
                    .version_storage(s)
                    .non_inline(NonInline::Copy)
                    .gc_every_commits(1),
                &ops,
            )?;
            // Nor allocating versions from memory spaces.
            run_with(
                Options::default()
                    .version_storage(s)
                    .memory_spaces(MemorySpaces::Spaces { count: 2, increment: 4096 })
                    .gc_every_commits(1),
                &ops,
            )?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    /// Tuple-level GC (VAC everywhere, COOP on O2N) under every protocol.
    #[test]
    fn tuple_level_gc_matches_a_btreemap(
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        for c in configs()
            .storages()
            .protocols()
            .gc_where(is_tuple_level)
            .with(|o| o.gc_every_commits(1))
        {
            run_with(c.opts, &ops)?;
        }
    }
}
