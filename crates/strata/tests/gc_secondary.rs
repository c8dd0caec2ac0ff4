//! Tuple-level GC (VAC, COOP) keeps secondary indexes right: entries of
//! versions it cuts go (bounded entries under endless updates of an indexed
//! column), scans agree with the primary key, and an index built while
//! cooperating workers clean stays complete. Under every GC policy, the
//! index cleanup costs a bounded number of steps per version reclaimed.

use crate::common;
use common::*;
use std::time::Duration;
use strata::{key, row, Database, GcPolicy, IndexPointers, Options, Unique, Value, VersionStorage};

/// Every storage x pointer scheme under every tuple-level policy.
fn combos() -> Vec<(VersionStorage, GcPolicy, IndexPointers)> {
    configs()
        .storages()
        .pointers()
        .gc_where(is_tuple_level)
        .into_iter()
        .map(|c| (c.storage, c.gc, c.pointers))
        .collect()
}

#[test]
fn endless_updates_of_an_indexed_column_leave_entries_bounded() {
    for (s, gc, p) in combos() {
        for proto in protocols_where(stresses_gc) {
            let db = Database::open(
                Options::default()
                    .protocol(proto)
                    .version_storage(s)
                    .gc(gc)
                    .index_pointers(p)
                    .gc_interval(Some(Duration::from_millis(5))),
            )
            .unwrap();
            let t = kv_table(&db);
            let rows: Vec<(i64, i64)> = (0..100).map(|k| (k, 0)).collect();
            load(&db, &t, &rows);
            let idx = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
            for i in 0..5_000i64 {
                let k = i % 100;
                db.run(|x| {
                    x.get(&t, &key![k])?;
                    x.update(&t, &key![k], &[("v", Value::Int(i))])
                })
                .unwrap();
            }
            db.collect_garbage();
            db.collect_garbage();
            let st = db.stats();
            let tag = format!("{s}/{gc}/{p:?}/{proto}");
            assert!(st.live_versions <= 100 + 8, "{tag}: {st:?}");
            assert!(st.secondary_index_entries <= 100 + 8, "{tag}: {st:?}");
            let mut ro = db.begin_read_only().unwrap();
            let rows = ro.index_scan(&idx, ..).unwrap();
            assert_eq!(rows.len(), 100, "{tag}");
            for r in rows {
                let k = r[0].as_int().unwrap();
                assert_eq!(r[1].as_int().unwrap(), 4_900 + k, "{tag}");
                assert_eq!(
                    ro.index_get(&idx, &key![4_900 + k]).unwrap().len(),
                    1,
                    "{tag}"
                );
            }
        }
    }
}

struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn an_index_built_while_workers_clean_is_complete() {
    for (s, gc, p) in combos() {
        let db = Database::open(
            Options::default()
                .version_storage(s)
                .gc(gc)
                .index_pointers(p)
                .gc_interval(Some(Duration::from_millis(1))),
        )
        .unwrap();
        let t = kv_table(&db);
        let rows: Vec<(i64, i64)> = (0..2_000).map(|k| (k, k)).collect();
        load(&db, &t, &rows);
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|sc| {
            // Stops the writer however this closure ends: a failed
            // assertion or unwrap below must fail the test, not leave the
            // scope waiting for the writer forever.
            let _stop = StopOnDrop(&stop);
            let (db2, t2, stop) = (db.clone(), t.clone(), &stop);
            sc.spawn(move || {
                let mut i = 0i64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let k = (i * 7) % 2_000;
                    // Same value again: the row churns versions, its key stays.
                    db2.run(|x| {
                        let v = x.get(&t2, &key![k])?.unwrap()[1].clone();
                        x.update(&t2, &key![k], &[("v", v)])
                    })
                    .unwrap();
                    let mut ro = db2.begin_read_only().unwrap();
                    ro.get(&t2, &key![(k + 1) % 2_000]).unwrap();
                    i += 1;
                }
            });
            std::thread::sleep(Duration::from_millis(20));
            let idx = db.create_index("by_v", &t, &["v"], Unique::Yes).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut ro = db.begin_read_only().unwrap();
            assert_eq!(
                ro.index_scan(&idx, ..).unwrap().len(),
                2_000,
                "{s}/{gc}/{p:?}"
            );
        });
        db.collect_garbage();
        db.collect_garbage();
        let st = db.stats();
        assert!(
            st.secondary_index_entries <= 2_000 + 8,
            "{s}/{gc}/{p:?}: {st:?}"
        );
    }
}

/// Issue 12, item 8: a reader holds the horizon back while a few rows are
/// written a thousand times each (the indexed column cycling, some deletes
/// and re-inserts), with a GC pass after every commit; then the reader ends
/// and the backlog is reclaimed. GC's index cleanup must visit each version
/// a bounded number of times (`Stats::gc_index_steps`). It used to process
/// the queued entries of a row one by one, each walking every newer version
/// of the row: about N^2/2 steps for N writes (the README's soak run of
/// `secondary_cc` never finished).
#[test]
fn reclaiming_a_backlog_walks_each_version_a_bounded_number_of_times() {
    const ROWS: i64 = 4;
    const WRITES: i64 = 1_000;
    // Every policy that reclaims, on every storage x pointer scheme.
    for c in configs()
        .storages()
        .pointers()
        .gc_where(reclaims)
        .with(|o| o.gc_every_commits(1))
    {
        let tag = c.to_string();
        let db = c.open();
        let t = kv_table(&db);
        let rows: Vec<(i64, i64)> = (0..ROWS).map(|k| (k, 0)).collect();
        load(&db, &t, &rows);
        let idx = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
        let before = db.stats();
        let reader = db.begin_read_only().unwrap();
        for i in 1..=WRITES * ROWS {
            let k = i % ROWS;
            if i % 97 == 0 {
                db.run(|x| x.delete(&t, &key![k])).unwrap();
                db.run(|x| x.insert(&t, row![k, i, "again"])).unwrap();
            } else {
                db.run(|x| x.update(&t, &key![k], &[("v", Value::Int(i))]))
                    .unwrap();
            }
        }
        drop(reader);
        db.collect_garbage();
        db.collect_garbage();
        let st = db.stats();
        let reclaimed = st.versions_reclaimed - before.versions_reclaimed;
        let steps = st.gc_index_steps - before.gc_index_steps;
        assert!(reclaimed >= (WRITES * ROWS) as u64, "{tag}: {st:?}");
        // One step per retired version, plus a few per row and pass. Dead
        // zones prune while the reader is open, one dead version per pass
        // from a chain of at most (snapshots + 2) versions, each prune
        // walking it a few times: a bound per version all the same,
        // whatever WRITES is (the old quadratic walk took ~WRITES/2 each).
        // SIRO's first prune (at relocation, under the writer's lock)
        // runs the index work of the version it drops there: a walk to it,
        // one to find its key among the kept versions (the writer's new
        // version on the chain too), the deferred removal's at the pass's
        // end: about one walk more per version.
        let per_version = match (c.gc, c.storage) {
            (GcPolicy::DeadZone, VersionStorage::Siro) => 4 * (1 + 2) + 4,
            (GcPolicy::DeadZone, _) => 4 * (1 + 2),
            _ => 2,
        };
        assert!(
            steps <= per_version * reclaimed + 16 * ROWS as u64,
            "{tag}: {steps} steps for {reclaimed} versions reclaimed"
        );
        assert_eq!(st.live_versions, ROWS as u64, "{tag}: {st:?}");
        assert_eq!(st.secondary_index_entries, ROWS as u64, "{tag}: {st:?}");
        let mut ro = db.begin_read_only().unwrap();
        let mut got = ro.index_scan(&idx, ..).unwrap();
        got.sort_by_key(|r| r[0].as_int().unwrap());
        assert_eq!(got, ro.scan(&t, ..).unwrap(), "{tag}");
    }
}

/// Updates that leave a row's indexed column alone: GC compares each
/// retired version's index key with the survivor's (a copy of the
/// survivor's indexed columns, taken as the walk passes it) and, finding
/// them equal, has nothing to remove and walks the row no further. One
/// walk per prune: the survivor and the version cut below it. Without the
/// survivor's columns (the copy left empty) every prune also searched the
/// kept versions for the key: about a step more per version.
#[test]
fn an_unindexed_update_is_pruned_in_one_walk() {
    const ROWS: i64 = 8;
    const WRITES: i64 = 400;
    let db = Database::open(Options::default().gc_every_commits(1)).unwrap();
    let t = kv_table(&db);
    let rows: Vec<(i64, i64)> = (0..ROWS).map(|k| (k, k)).collect();
    load(&db, &t, &rows);
    db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
    db.collect_garbage();
    let before = db.stats();
    for i in 0..WRITES * ROWS {
        db.run(|x| {
            x.update(
                &t,
                &key![i % ROWS],
                &[("note", Value::from(format!("n{i}")))],
            )
        })
        .unwrap();
    }
    db.collect_garbage();
    let st = db.stats();
    let reclaimed = st.versions_reclaimed - before.versions_reclaimed;
    let steps = st.gc_index_steps - before.gc_index_steps;
    assert!(reclaimed >= ((WRITES - 1) * ROWS) as u64, "{st:?}");
    assert!(
        steps <= 2 * reclaimed + 4 * ROWS as u64,
        "{steps} steps for {reclaimed} versions reclaimed"
    );
    assert_eq!(st.secondary_index_entries, ROWS as u64, "{st:?}");
}
