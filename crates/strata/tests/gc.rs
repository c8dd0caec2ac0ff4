//! Garbage collection keeps memory bounded under endless updates, and never
//! frees what an open snapshot can still read.

use crate::common;
use common::*;
use strata::{key, Database, GcPolicy, Options, Protocol, Value};

/// `STRATA_SOAK` (see `common::soak`).
fn soak() -> u64 {
    crate::common::soak().into()
}

#[test]
fn a_million_updates_on_1000_rows_leave_memory_bounded() {
    for p in protocols_where(stresses_gc) {
        let db = Database::open(Options::default().protocol(p)).unwrap();
        let t = kv_table(&db);
        let rows: Vec<(i64, i64)> = (0..1000).map(|k| (k, 0)).collect();
        load(&db, &t, &rows);
        let base = db.stats();
        let updates = if p == default_protocol() {
            1_000_000
        } else {
            200_000
        } * soak();
        let mut peak_versions = 0;
        for i in 0..updates {
            let k = (i % 1000) as i64;
            let mut txn = db.begin().unwrap();
            txn.update(&t, &key![k], &[("v", Value::Int(i as i64))])
                .unwrap();
            txn.commit().unwrap();
            if i % 100_000 == 99_999 {
                peak_versions = peak_versions.max(db.stats().live_versions);
            }
        }
        db.collect_garbage();
        let st = db.stats();
        // Without GC there would be `updates` extra versions. Mid-run the
        // garbage is bounded by the GC lag: small, unless the thread holding
        // the GC pass is descheduled (a loaded CI machine), so allow 5%.
        assert!(
            peak_versions < 1000 + 50_000,
            "{p}: {peak_versions} live versions mid-run"
        );
        assert!(
            st.live_versions <= 1000 + 256,
            "{p}: {} live versions",
            st.live_versions
        );
        assert!(
            st.version_bytes < base.version_bytes * 2,
            "{p}: {} vs {}",
            st.version_bytes,
            base.version_bytes
        );
        assert!(
            st.versions_reclaimed >= updates - 1000 - 256,
            "{p}: reclaimed {}",
            st.versions_reclaimed
        );
        assert_eq!(value(&db, &t, 999), Some((updates - 1) as i64));
    }
}

#[test]
fn no_gc_keeps_every_version() {
    let db = Database::open(Options::default().gc(GcPolicy::None)).unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    for i in 0..1000 {
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
            .unwrap();
    }
    db.collect_garbage();
    let st = db.stats();
    assert_eq!(st.live_versions, 1001);
    assert_eq!(st.longest_chain, 1001);
    assert_eq!(st.versions_reclaimed, 0);
    // The counters alone (what a run samples every second) agree with the
    // full stats and walk nothing: no rows, no chains.
    let c = db.counters();
    assert_eq!(c.commits, st.commits);
    assert!(c.commits >= 1001, "{} commits", c.commits);
    assert_eq!(c.storage_allocations, st.storage_allocations);
    assert_eq!(c.storage_bytes_allocated, st.storage_bytes_allocated);
    assert!(c.storage_bytes_allocated > 0);
    assert_eq!(c.gc_bytes_freed, st.gc_bytes_freed);
    assert_eq!((c.rows, c.live_versions, c.longest_chain), (0, 0, 0));
}

#[test]
fn gc_never_frees_what_an_open_snapshot_reads() {
    for p in protocols() {
        let db = Database::open(Options::default().protocol(p).gc_every_commits(1)).unwrap();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0), (2, 0)]);
        let mut old_ro = db.begin_read_only().unwrap();
        let mut old_rw = db.begin().unwrap();
        for i in 1..=500 {
            db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
                .unwrap();
        }
        db.collect_garbage();
        assert_eq!(
            old_ro.get(&t, &key![1]).unwrap().unwrap()[1],
            Value::Int(0),
            "{p}"
        );
        // (MV2PL and OCC read-write transactions read the newest data.)
        if !reads_newest_data(p) {
            assert_eq!(
                old_rw.get(&t, &key![1]).unwrap().unwrap()[1],
                Value::Int(0),
                "{p}"
            );
        }
        // Once the old snapshots end, the chain collapses.
        drop(old_ro);
        drop(old_rw);
        db.run(|x| x.update(&t, &key![2], &[("v", Value::Int(1))]))
            .unwrap();
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(501))]))
            .unwrap();
        db.collect_garbage();
        assert!(
            db.stats().longest_chain <= 3,
            "{p}: chain {}",
            db.stats().longest_chain
        );
        assert_eq!(value(&db, &t, 1), Some(501));
    }
}

#[test]
fn deleted_rows_and_their_index_entries_are_reclaimed() {
    for p in protocols() {
        let db = Database::open(Options::default().protocol(p).gc_every_commits(64)).unwrap();
        let t = kv_table(&db);
        load(&db, &t, &[(-1, 7)]);
        // A snapshot taken before the churn still reads the deleted rows.
        let rounds = 20_000 * soak() as i64;
        for k in 0..rounds {
            let mut x = db.begin().unwrap();
            x.insert(&t, strata::row![k, k, "n"]).unwrap();
            x.commit().unwrap();
            let mut x = db.begin().unwrap();
            x.delete(&t, &key![k]).unwrap();
            x.commit().unwrap();
            // Reads of absent keys (MVTO makes ghost rows for them).
            let mut x = db.begin().unwrap();
            assert_eq!(x.get(&t, &key![rounds + k]).unwrap(), None);
            x.commit().unwrap();
        }
        db.collect_garbage();
        db.collect_garbage();
        let st = db.stats();
        assert!(
            st.rows < 300,
            "{p}: {} rows left after deleting them all",
            st.rows
        );
        assert!(
            st.index_bytes < 300 * 48,
            "{p}: index keeps {} bytes",
            st.index_bytes
        );
        // Deleted keys can be inserted again and are visible.
        load(&db, &t, &[(5, 55)]);
        assert_eq!(value(&db, &t, 5), Some(55), "{p}");
        assert_eq!(value(&db, &t, 6), None, "{p}");
        assert_eq!(value(&db, &t, -1), Some(7), "{p}");
    }
}

#[test]
fn a_deleted_row_stays_readable_for_an_older_snapshot() {
    for p in protocols() {
        let db = Database::open(Options::default().protocol(p).gc_every_commits(1)).unwrap();
        let t = kv_table(&db);
        load(&db, &t, &[(1, 10), (2, 20)]);
        let mut old = db.begin_read_only().unwrap();
        db.run(|x| x.delete(&t, &key![1])).unwrap();
        for i in 0..100 {
            db.run(|x| x.update(&t, &key![2], &[("v", Value::Int(i))]))
                .unwrap();
        }
        db.collect_garbage();
        assert_eq!(
            old.get(&t, &key![1]).unwrap().unwrap()[1],
            Value::Int(10),
            "{p}"
        );
        assert_eq!(old.scan(&t, ..).unwrap().len(), 2, "{p}");
        drop(old);
        db.run(|x| x.update(&t, &key![2], &[("v", Value::Int(1))]))
            .unwrap();
        db.collect_garbage();
        db.collect_garbage();
        assert_eq!(db.stats().rows, 1, "{p}: the deleted row was not unlinked");
    }
}

#[test]
fn the_gc_thread_reclaims_garbage_of_an_idle_database() {
    use std::time::Duration;
    // Inline GC effectively off, so only the background thread can collect.
    let db = Database::open(
        Options::default()
            .gc_every_commits(u32::MAX)
            .gc_interval(Some(Duration::from_millis(5))),
    )
    .unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    for i in 0..500 {
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
            .unwrap();
    }
    // Waits on the observed state; only a hang (the thread never running)
    // fails it, not a slow, loaded machine.
    assert!(
        common::eventually(|| {
            std::thread::sleep(Duration::from_millis(5));
            db.stats().live_versions <= 2
        }),
        "the GC thread did not run: {:?}",
        db.stats()
    );
    assert!(db.stats().versions_reclaimed >= 499);
    assert!(db.stats().gc_passes > 0);
    // Without the thread the garbage stays.
    let idle = Database::open(
        Options::default()
            .gc_every_commits(u32::MAX)
            .gc_interval(None),
    )
    .unwrap();
    let t = kv_table(&idle);
    load(&idle, &t, &[(1, 0)]);
    for i in 0..50 {
        idle.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(idle.stats().live_versions, 51);
    assert!(matches!(
        Database::open(Options::default().gc_interval(Some(Duration::ZERO))),
        Err(strata::Error::InvalidConfig(_))
    ));
}

/// Transaction-level collection: the GC thread skips its wake-ups while
/// committers' passes keep pace (it writes none of the passes' lines), and
/// runs passes again once they stop, so the garbage their last commits
/// left is collected without them. Both halves wait on observed counts:
/// only a hang fails them.
#[test]
fn the_gc_thread_skips_while_committers_pass_and_collects_when_they_stop() {
    use std::time::Duration;
    let db = Database::open(
        Options::default()
            .gc(GcPolicy::TransactionLevel)
            .gc_every_commits(16)
            .gc_interval(Some(Duration::from_millis(1))),
    )
    .unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    let update = |i: i64| {
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
            .unwrap()
    };
    let mut i = 0;
    assert!(
        common::eventually(|| {
            for _ in 0..1000 {
                update(i);
                i += 1;
            }
            db.stats().gc_background_skips >= 3
        }),
        "the GC thread never skipped: {:?}",
        db.stats()
    );
    // The last updates, under a reader that keeps every version, so that
    // no committer's pass can free them; then nobody commits.
    let reader = db.begin_read_only().unwrap();
    for _ in 0..100 {
        update(i);
        i += 1;
    }
    drop(reader);
    assert!(db.stats().live_versions > 100, "{:?}", db.stats());
    assert!(
        common::eventually(|| db.stats().live_versions <= 2),
        "the GC thread kept skipping after the commits stopped: {:?}",
        db.stats()
    );
}

#[test]
fn stats_can_run_while_rows_are_being_inserted() {
    let db = Database::open(Options::default()).unwrap();
    let t = kv_table(&db);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Crosses several indirection segments (65,536 rows each).
            for chunk in 0..20i64 {
                let mut x = db.begin().unwrap();
                for k in chunk * 10_000..(chunk + 1) * 10_000 {
                    x.insert(&t, strata::row![k, k, "n"]).unwrap();
                }
                x.commit().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        s.spawn(|| {
            let mut last = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let rows = db.stats().rows;
                assert!(rows >= last, "rows went backwards");
                last = rows;
            }
        });
    });
    assert_eq!(db.stats().rows, 200_000);
}

/// A deleted row that GC could not unlink yet (an MVTO reader's timestamp
/// on its tombstone, an MV2PL read lock) is retried until it can be; and a
/// later write of the row supersedes the retried entry. Every storage.
#[test]
fn deferred_tombstones_are_retried_or_superseded() {
    for c in configs().storages().protocols_where(readers_hold_back_gc) {
        let (s, p) = (c.storage, c.protocol);
        let db = Database::open(
            Options::default()
                .protocol(p)
                .version_storage(s)
                .gc_interval(None)
                .gc_every_commits(1_000_000),
        )
        .unwrap();
        let t = common::kv_table(&db);
        common::load(&db, &t, &[(1, 10), (2, 20)]);
        let mut x = db.begin().unwrap();
        x.delete(&t, &key![1]).unwrap();
        x.delete(&t, &key![2]).unwrap();
        x.commit().unwrap();
        // A reader leaves its mark on both tombstones and stays open.
        let mut r = db.begin().unwrap();
        assert_eq!(r.get(&t, &key![1]).unwrap(), None);
        assert_eq!(r.get(&t, &key![2]).unwrap(), None);
        db.collect_garbage();
        assert_eq!(db.stats().rows, 2, "{s} {p}: unlinked under a reader");
        drop(r);
        // Key 2 is written again (superseding its deferred entry).
        let mut w = db.begin().unwrap();
        w.insert(&t, strata::row![2, 22, "again"]).unwrap();
        w.commit().unwrap();
        for _ in 0..3 {
            db.collect_garbage();
        }
        let st = db.stats();
        assert_eq!(st.rows, 1, "{s} {p}: {st:?}");
        assert_eq!(common::value(&db, &t, 2), Some(22), "{s} {p}");
        assert_eq!(common::value(&db, &t, 1), None, "{s} {p}");
    }
}

/// Two threads take turns updating one row, each keeping its own TID slot,
/// so the row's queue entries alternate between two shards of the
/// transaction-level queue. One pass must process them in commit order: a
/// later entry cut first retires the versions an earlier entry still
/// points at, and the earlier entry then cuts (and retires) them a second
/// time. Exactly the four overwritten versions are reclaimed, once each.
#[test]
fn entries_of_one_row_in_two_shards_are_cut_in_commit_order() {
    use std::sync::{Arc, Barrier};
    for p in Protocol::ALL {
        let db = passes_on_demand(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0)]);
        let base = db.stats().versions_reclaimed;
        let turn = Arc::new(Barrier::new(2));
        let threads: Vec<_> = (0..2)
            .map(|me| {
                let (db, t, turn) = (db.clone(), t.clone(), Arc::clone(&turn));
                std::thread::spawn(move || {
                    // Both open a transaction at once: different slots,
                    // which each thread then keeps (its slot hint).
                    let x = db.begin().unwrap();
                    turn.wait();
                    x.abort();
                    for round in 0..4 {
                        turn.wait();
                        if round % 2 == me {
                            let mut x = db.begin().unwrap();
                            x.update(&t, &key![1], &[("v", Value::Int(round as i64 + 1))])
                                .unwrap();
                            x.commit().unwrap();
                        }
                    }
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        db.collect_garbage();
        let st = db.stats();
        assert_eq!(st.versions_reclaimed - base, 4, "{p}: {st:?}");
        assert_eq!(value(&db, &t, 1), Some(4), "{p}");
        assert_eq!(st.live_versions, 1, "{p}: {st:?}");
    }
}

/// `Stats` (from `stats()` and from `counters()`) serialises, with aborts
/// keyed by each conflict kind's name (the CLI's `--json` names them so).
#[test]
fn stats_serialise_with_conflict_kinds_by_name() {
    let db = common::db(strata::Protocol::Si);
    let t = common::kv_table(&db);
    common::load(&db, &t, &[(1, 1)]);
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    a.update(&t, &key![1], &[("v", Value::Int(2))]).unwrap();
    assert!(b.update(&t, &key![1], &[("v", Value::Int(3))]).is_err());
    a.commit().unwrap();
    for st in [db.stats(), db.counters()] {
        let v = serde_json::to_value(&st).unwrap();
        assert_eq!(v["commits"], st.commits);
        let kinds: Vec<&str> = v["aborts_by_reason"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_str().unwrap())
            .collect();
        let names: Vec<&str> = strata::ConflictKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(kinds, names);
        let ww = &v["aborts_by_reason"][0];
        assert_eq!(
            (ww[0].as_str(), ww[1].as_u64()),
            (Some("write-write"), Some(1))
        );
    }
}

/// SI+SSI with GC passes only when a test asks.
fn ssi_with_passes_on_demand() -> Database {
    passes_on_demand(Protocol::SiSsi)
}

/// A database of `p` whose GC passes run only when a test asks.
fn passes_on_demand(p: Protocol) -> Database {
    Database::open(
        Options::default()
            .protocol(p)
            .gc_interval(None)
            .gc_every_commits(u32::MAX),
    )
    .unwrap()
}

/// SSI: a transaction that wrote nothing stamps the clock plus one without
/// moving it, so while nothing writes the horizon never passes its stamp.
/// Its SIREAD marks must still go once every transaction that could be
/// concurrent with it has ended (the registry's quiescence epochs), or
/// undeclared read-only work piles up a mark per read.
#[test]
fn siread_marks_of_commits_that_wrote_nothing_are_pruned_while_nothing_writes() {
    let db = ssi_with_passes_on_demand();
    let t = kv_table(&db);
    let rows: Vec<(i64, i64)> = (0..100).map(|k| (k, 0)).collect();
    load(&db, &t, &rows);
    for i in 0..200i64 {
        let mut r = db.begin().unwrap();
        for k in 0..10 {
            r.get(&t, &key![(i + k) % 100]).unwrap();
        }
        r.commit().unwrap();
    }
    assert_eq!(db.stats().siread_marks, 2_000);
    // A pass closes an epoch, the next finds its transactions gone; each
    // visits an eighth of the marks' shards.
    for _ in 0..16 {
        db.collect_garbage();
    }
    assert_eq!(db.stats().siread_marks, 0);
}

/// SSN and SSI: the scan records of range scans by transactions that
/// wrote nothing go by the same quiescence rule, through the primary key
/// and a secondary index (before, they stayed until something wrote: one
/// record per scan of an undeclared read-only workload).
#[test]
fn scan_records_of_commits_that_wrote_nothing_are_pruned_while_nothing_writes() {
    for p in crate::common::protocols_where(crate::common::publishes_scan_records) {
        let db = passes_on_demand(p);
        let t = kv_table(&db);
        let by_v = db
            .create_index("by_v", &t, &["v"], strata::Unique::No)
            .unwrap();
        let rows: Vec<(i64, i64)> = (0..100).map(|k| (k, k)).collect();
        load(&db, &t, &rows);
        for i in 0..100i64 {
            let mut r = db.begin().unwrap();
            r.scan(&t, key![i]..key![i + 5]).unwrap();
            r.index_scan(&by_v, key![i]..key![i + 5]).unwrap();
            r.commit().unwrap();
        }
        assert_eq!(db.stats().scan_records, 200, "{p}");
        // A pass closes an epoch, the next finds its transactions gone.
        db.collect_garbage();
        db.collect_garbage();
        assert_eq!(db.stats().scan_records, 0, "{p}");
    }
}

/// ... and stay while a transaction that was open when the scanner
/// committed runs: it may still close a cycle through the scanner.
#[test]
fn scan_records_stay_while_a_transaction_open_at_their_commit_runs() {
    for p in crate::common::protocols_where(crate::common::publishes_scan_records) {
        let db = passes_on_demand(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0), (2, 0)]);
        let mut open = db.begin().unwrap();
        open.get(&t, &key![1]).unwrap();
        let mut s = db.begin().unwrap();
        s.scan(&t, ..).unwrap();
        s.commit().unwrap();
        for _ in 0..8 {
            db.collect_garbage();
        }
        assert_eq!(db.stats().scan_records, 1, "{p}");
        open.commit().unwrap();
        db.collect_garbage();
        db.collect_garbage();
        assert_eq!(db.stats().scan_records, 0, "{p}");
    }
}

/// The other side of the quiescence rule: while a transaction that began
/// before a reader committed stays open, the reader's marks stay, however
/// many passes run, so the read-only anomaly (Fekete et al.) is still
/// refused. T2 reads x and y; T1 writes y and commits; T3 (not declared
/// READ ONLY) reads x and y and commits; T2 then writes x: T3 -rw-> T2
/// -rw-> T1 makes T2 a pivot, found only through T3's mark on x.
#[test]
fn siread_marks_stay_while_a_transaction_concurrent_with_their_reader_runs() {
    let db = ssi_with_passes_on_demand();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0), (2, 0)]);
    let mut t2 = db.begin().unwrap();
    t2.get(&t, &key![1]).unwrap();
    t2.get(&t, &key![2]).unwrap();
    let mut t1 = db.begin().unwrap();
    t1.update(&t, &key![2], &[("v", Value::Int(20))]).unwrap();
    t1.commit().unwrap();
    let mut t3 = db.begin().unwrap();
    t3.get(&t, &key![1]).unwrap();
    t3.get(&t, &key![2]).unwrap();
    t3.commit().unwrap();
    for _ in 0..32 {
        db.collect_garbage();
    }
    assert!(db.stats().siread_marks >= 2, "T3's marks were pruned");
    let r = t2
        .update(&t, &key![1], &[("v", Value::Int(-11))])
        .and_then(|_| t2.commit());
    assert!(
        matches!(
            r,
            Err(strata::Error::Conflict(
                strata::ConflictKind::DangerousStructure
            ))
        ),
        "{r:?}"
    );
}

/// One committer leads the passes (issue 42's shared writes: a pass
/// writes about threads + 5 lines of its own, which would move between
/// cores if every committer's turn ran it, `gc::transaction_level`). The
/// leader passes at each of its turns, every `gc_every_commits` of its
/// commits; another thread's turn passes only once the clock has moved 4
/// (`TAKEOVER`) times `gc_every_commits` commits per queue that had
/// entries since the last pass, and then takes the lead. The threads run
/// one after the other here, so the counts are exact.
#[test]
fn one_committer_leads_the_passes_until_it_falls_behind() {
    let db = Database::open(
        Options::default()
            .gc(GcPolicy::TransactionLevel)
            .gc_every_commits(16)
            .gc_interval(None),
    )
    .unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    let passes = || db.stats().gc_passes;
    let takeovers = || db.stats().gc_pass_takeovers;
    let update = |i: i64| {
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(i))]))
            .unwrap()
    };
    let (p0, t0) = (passes(), takeovers());
    // A (a thread of its own, so its turns count from its first commit)
    // leads from its first turn: no leader yet.
    std::thread::scope(|s| {
        s.spawn(|| (0..160).for_each(update));
    });
    assert_eq!((passes() - p0, takeovers() - t0), (10, 0), "A's 10 turns");
    // B's turns skip until the clock is 4 × 16 × 1 queue past A's last
    // pass: its fourth turn, at its 64th commit.
    std::thread::scope(|s| {
        s.spawn(|| {
            (0..63).for_each(update);
            assert_eq!((passes() - p0, takeovers() - t0), (10, 0), "B's 3 turns");
            update(63);
            assert_eq!((passes() - p0, takeovers() - t0), (11, 1), "B took over");
            (64..128).for_each(update);
            assert_eq!((passes() - p0, takeovers() - t0), (15, 1), "B leads");
        });
    });
    db.collect_garbage();
    assert!(db.stats().live_versions <= 2, "{:?}", db.stats());
}
