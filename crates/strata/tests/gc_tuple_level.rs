//! Tuple-level garbage collection: background vacuuming (VAC) with a
//! dirty-block bitmap and GC threads, and cooperative cleaning (COOP) on
//! O2N chains. Figures come from `Database::stats()`, never from time.

use crate::common;
use common::*;
use std::time::Duration;
use strata::{key, row, Database, Error, GcPolicy, Options, Unique, Value, VersionStorage};

/// `STRATA_SOAK` (see `common::soak`).
fn soak() -> u64 {
    crate::common::soak().into()
}

/// Every (storage, tuple-level GC) pair that validate() accepts.
fn combos() -> Vec<(VersionStorage, GcPolicy)> {
    configs()
        .storages()
        .gc_where(is_tuple_level)
        .into_iter()
        .map(|c| (c.storage, c.gc))
        .collect()
}

#[test]
fn endless_updates_leave_memory_bounded_under_vac_and_coop() {
    for (s, gc) in combos() {
        for p in protocols_where(stresses_gc) {
            let db = Database::open(
                Options::default()
                    .protocol(p)
                    .version_storage(s)
                    .gc(gc)
                    .gc_threads(2)
                    .gc_interval(Some(Duration::from_millis(5))),
            )
            .unwrap();
            let t = kv_table(&db);
            let rows: Vec<(i64, i64)> = (0..500).map(|k| (k, 0)).collect();
            load(&db, &t, &rows);
            let updates = 40_000 * soak();
            for i in 0..updates {
                let k = (i % 500) as i64;
                let mut txn = db.begin().unwrap();
                // A read first: COOP's workers clean what they walk.
                txn.get(&t, &key![k]).unwrap();
                txn.update(&t, &key![k], &[("v", Value::Int(i as i64))])
                    .unwrap();
                txn.commit().unwrap();
                if i % 10_000 == 9_999 {
                    // Bounded at every point a pass has run (without one
                    // there would be i extra versions).
                    db.collect_garbage();
                    let st = db.stats();
                    assert!(st.live_versions <= 500 + 16, "{s}/{gc}/{p}: {st:?}");
                    // What the GC threads cut meanwhile is counted too
                    // (below).
                    if gc == GcPolicy::Vacuum {
                        assert!(
                            st.versions_reclaimed + st.live_versions > 500 + i,
                            "{s}/{gc}/{p}: cut but not counted: {st:?}"
                        );
                    }
                }
            }
            // The background threads alone (no explicit pass) get there
            // too: poll the stats (how soon depends on the scheduler, so
            // this only waits, with a bound that turns a hang into a
            // failure, and asserts no timing).
            let reclaimed = db.stats().versions_reclaimed;
            for i in 0..2_000i64 {
                db.run(|x| x.update(&t, &key![i % 500], &[("v", Value::Int(-i))]))
                    .unwrap();
            }
            let by_themselves = eventually(|| db.stats().versions_reclaimed >= reclaimed + 1_500);
            assert!(
                by_themselves,
                "{s}/{gc}/{p}: the GC threads reclaimed nothing by themselves: {:?}",
                db.stats()
            );
            let updates = updates + 2_000;
            db.collect_garbage();
            db.collect_garbage();
            let st = db.stats();
            assert_eq!(st.rows, 500, "{s}/{gc}/{p}");
            assert!(st.live_versions <= 500 + 16, "{s}/{gc}/{p}: {st:?}");
            assert!(st.longest_chain <= 3, "{s}/{gc}/{p}: {st:?}");
            // Every version no longer linked is counted. VAC's passes count
            // under the partition lock they cut under, so once the
            // explicit passes above (which wait for each partition) have
            // returned, a GC thread's pass that cut rows before them has
            // counted them too: no wait. (It counted after its lock once:
            // the passes above found its rows cut and returned before it
            // counted, seen as 40,295 of at least 41,484 under load.)
            // COOP's workers count each cut just after it: waited for.
            let created = 500 + updates;
            let all_counted = || {
                let st = db.stats();
                st.versions_reclaimed + st.live_versions >= created
            };
            let counted = if gc == GcPolicy::Vacuum {
                all_counted()
            } else {
                eventually(all_counted)
            };
            let st = db.stats();
            assert!(
                counted,
                "{s}/{gc}/{p}: unlinked versions never counted: {st:?}"
            );
            assert!(
                st.versions_reclaimed >= updates - 516,
                "{s}/{gc}/{p}: {st:?}"
            );
            assert_eq!(value(&db, &t, 499), Some(-1_999));
        }
    }
}

#[test]
fn vacuum_skips_blocks_nobody_wrote() {
    for c in configs()
        .storages()
        .gc(GcPolicy::Vacuum)
        .with(|o| o.gc_interval(None).gc_every_commits(u32::MAX))
    {
        let (s, db) = (c.storage, c.open());
        let t = kv_table(&db);
        // Four blocks of 4096 tuples (the last one partly filled).
        let rows: Vec<(i64, i64)> = (0..3 * 4096 + 10).map(|k| (k, 0)).collect();
        load(&db, &t, &rows);
        db.collect_garbage();
        let before = db.stats();
        // Two updates of one row in the third block.
        for i in 1..=2 {
            let mut txn = db.begin().unwrap();
            txn.update(&t, &key![2 * 4096 + 7], &[("v", Value::Int(i))])
                .unwrap();
            txn.commit().unwrap();
        }
        assert_eq!(db.stats().live_versions, before.live_versions + 2, "{s}");
        db.collect_garbage();
        let after = db.stats();
        assert_eq!(
            after.gc_blocks_scanned - before.gc_blocks_scanned,
            1,
            "{s}: {after:?}"
        );
        assert_eq!(
            after.gc_blocks_skipped - before.gc_blocks_skipped,
            3,
            "{s}: {after:?}"
        );
        assert_eq!(after.live_versions, before.live_versions, "{s}");
        assert_eq!(after.versions_reclaimed - before.versions_reclaimed, 2);
        // Nothing written since: every block is skipped.
        db.collect_garbage();
        let idle = db.stats();
        assert_eq!(idle.gc_blocks_scanned, after.gc_blocks_scanned, "{s}");
        assert_eq!(value(&db, &t, 2 * 4096 + 7), Some(2));
    }
}

#[test]
fn a_block_with_garbage_above_the_horizon_stays_dirty() {
    for (s, gc) in combos() {
        let db = Database::open(
            Options::default()
                .version_storage(s)
                .gc(gc)
                .gc_interval(None)
                .gc_every_commits(u32::MAX),
        )
        .unwrap();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0), (2, 0)]);
        let mut old = db.begin_read_only().unwrap();
        assert_eq!(
            old.get(&t, &key![1]).unwrap().unwrap()[1],
            Value::Int(0),
            "{s}/{gc}"
        );
        for i in 1..=5 {
            let mut txn = db.begin().unwrap();
            txn.update(&t, &key![1], &[("v", Value::Int(i))]).unwrap();
            txn.commit().unwrap();
        }
        // The old snapshot pins version 0: the pass frees only what is
        // between, and must come back to the block later.
        db.collect_garbage();
        assert_eq!(
            old.get(&t, &key![1]).unwrap().unwrap()[1],
            Value::Int(0),
            "{s}/{gc}"
        );
        assert!(db.stats().live_versions >= 3, "{s}/{gc}");
        old.commit().unwrap();
        db.collect_garbage();
        let st = db.stats();
        assert_eq!(st.live_versions, 2, "{s}/{gc}: {st:?}");
        assert_eq!(value(&db, &t, 1), Some(5));
    }
}

#[test]
fn cooperating_workers_reclaim_without_any_gc_pass() {
    // Every protocol on every storage COOP runs on.
    for c in configs()
        .protocols()
        .storages()
        .gc(GcPolicy::Cooperative)
        .with(|o| o.gc_interval(None).gc_every_commits(1))
    {
        let (p, db) = (&c, c.open());
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0), (2, 0)]);
        for i in 1..=300 {
            let mut txn = db.begin().unwrap();
            txn.update(&t, &key![1], &[("v", Value::Int(i))]).unwrap();
            txn.commit().unwrap();
        }
        let st = db.stats();
        assert_eq!(st.gc_passes, 0, "{p}: {st:?}");
        assert!(st.versions_reclaimed >= 290, "{p}: {st:?}");
        assert!(st.longest_chain <= 4, "{p}: {st:?}");
        assert_eq!(value(&db, &t, 1), Some(300));
        // Row 2, a dusty corner, was never touched: only a pass visits it.
        let mut txn = db.begin().unwrap();
        txn.delete(&t, &key![2]).unwrap();
        txn.commit().unwrap();
        db.collect_garbage();
        db.collect_garbage();
        assert_eq!(db.stats().rows, 1, "{p}");
        assert_eq!(value(&db, &t, 2), None);
    }
}

/// COOP's workers cut a chain with one CAS and no index work, so they
/// leave the chains of a table with a secondary index to the full pass,
/// which removes the entries of what it prunes first (storage's
/// `Store::indexed`, kept by the index DDL). Were they to cut those chains
/// too, the entries of the versions they retired would stay behind
/// (pointing at freed versions, with physical pointers). Once the last
/// index is dropped they cooperate again.
#[test]
fn cooperating_workers_leave_indexed_tables_to_the_full_pass() {
    for c in configs()
        .storages()
        .gc(GcPolicy::Cooperative)
        .pointers()
        .with(|o| o.gc_interval(None).gc_every_commits(1))
    {
        let db = c.open();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0), (2, 0)]);
        let idx = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
        let update = |i: i64| {
            db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
                .unwrap();
            // A reader walks the chain from its oldest end.
            assert_eq!(value(&db, &t, 1), Some(i));
        };
        for i in 1..=100 {
            update(i);
        }
        let st = db.stats();
        assert_eq!(st.gc_passes, 0, "{c}: {st:?}");
        assert_eq!(
            st.versions_reclaimed, 0,
            "{c}: workers cut an indexed chain"
        );
        db.collect_garbage();
        db.collect_garbage();
        let st = db.stats();
        assert!(st.versions_reclaimed >= 99, "{c}: {st:?}");
        assert_eq!(st.secondary_index_entries, 2, "{c}: {st:?}");
        let mut ro = db.begin_read_only().unwrap();
        let mut got = ro.index_scan(&idx, ..).unwrap();
        got.sort_by_key(|r| r[0].as_int().unwrap());
        assert_eq!(got, ro.scan(&t, ..).unwrap(), "{c}");
        drop(ro);
        db.drop_index("by_v").unwrap();
        let before = db.stats().versions_reclaimed;
        for i in 101..=150 {
            update(i);
        }
        let st = db.stats();
        assert_eq!(st.gc_passes, 2, "{c}: {st:?}");
        assert!(st.versions_reclaimed >= before + 45, "{c}: {st:?}");
    }
}

#[test]
fn deleted_rows_are_unlinked_and_their_keys_reusable() {
    for (s, gc) in combos() {
        // The protocols that run with this collector (OCC refuses dead zones).
        let valid = configs().storage(s).gc(gc).protocols();
        for p in valid.into_iter().map(|c| c.protocol) {
            let db = Database::open(
                Options::default()
                    .protocol(p)
                    .version_storage(s)
                    .gc(gc)
                    .gc_interval(None),
            )
            .unwrap();
            let t = kv_table(&db);
            let rows: Vec<(i64, i64)> = (0..200).map(|k| (k, k)).collect();
            load(&db, &t, &rows);
            let mut txn = db.begin().unwrap();
            for k in 0..200 {
                txn.delete(&t, &key![k]).unwrap();
            }
            txn.commit().unwrap();
            db.collect_garbage();
            db.collect_garbage();
            let st = db.stats();
            assert_eq!(st.rows, 0, "{s}/{gc}/{p}: {st:?}");
            assert_eq!(st.live_versions, 0, "{s}/{gc}/{p}");
            let mut txn = db.begin().unwrap();
            txn.insert(&t, row![7, 70, "x"]).unwrap();
            txn.commit().unwrap();
            assert_eq!(value(&db, &t, 7), Some(70), "{s}/{gc}/{p}");
            assert_eq!(value(&db, &t, 8), None);
        }
    }
}

#[test]
fn gc_threads_are_validated() {
    for n in [0, 65] {
        assert!(matches!(
            Database::open(Options::default().gc(GcPolicy::Vacuum).gc_threads(n)),
            Err(Error::InvalidConfig(m)) if m.contains("gc_threads")
        ));
    }
    assert!(matches!(
        Database::open(Options::default().gc(GcPolicy::Cooperative)),
        Err(Error::InvalidConfig(m)) if m.contains("Cooperative") && m.contains("AppendOldToNew")
    ));
}

#[test]
fn concurrent_writers_and_several_vacuum_threads() {
    for (s, gc) in combos() {
        let db = Database::open(
            Options::default()
                .version_storage(s)
                .gc(gc)
                .gc_threads(3)
                .gc_interval(Some(Duration::from_millis(2))),
        )
        .unwrap();
        let t = kv_table(&db);
        let rows: Vec<(i64, i64)> = (0..10_000).map(|k| (k, 0)).collect();
        load(&db, &t, &rows);
        std::thread::scope(|sc| {
            for th in 0..3i64 {
                let (db, t) = (db.clone(), t.clone());
                sc.spawn(move || {
                    for i in 0..4000i64 {
                        let k = (i * 7919 + th * 13) % 10_000;
                        let r = db.run(|txn| {
                            let v = txn.get(&t, &key![k])?.map_or(0, |r| r[1].as_int().unwrap());
                            if i % 50 == 0 {
                                txn.delete(&t, &key![k])?;
                                txn.insert(&t, row![k, v + 1, "x"])?;
                            } else {
                                txn.update(&t, &key![k], &[("v", Value::Int(v + 1))])?;
                            }
                            Ok(())
                        });
                        r.unwrap();
                    }
                });
            }
        });
        db.collect_garbage();
        db.collect_garbage();
        let st = db.stats();
        assert_eq!(st.rows, 10_000, "{s}/{gc}: {st:?}");
        assert!(st.live_versions <= 10_000 + 16, "{s}/{gc}: {st:?}");
        let mut sum = 0;
        let ro = &mut db.begin_read_only().unwrap();
        for r in ro.scan(&t, ..).unwrap() {
            sum += r[1].as_int().unwrap();
        }
        assert_eq!(sum, 3 * 4000, "{s}/{gc}: every increment survives");
    }
}
