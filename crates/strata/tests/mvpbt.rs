//! MV-PBT indexes (`IndexKind::MvPbt`) over every configuration the
//! validity matrix accepts (protocol x storage x GC x pointers), next to a
//! standard index on the same table: old snapshots keep finding rows under
//! the keys they had, freezes (every 4 records) and their GC keep every
//! answer, unique indexes refuse duplicates from their records alone, and
//! the partition filters report their size and false-positive rate.

use crate::common;
use strata::{key, row, Error, IndexKind, Unique, Value};

#[test]
fn mvpbt_indexes_answer_like_standard_ones_in_every_valid_configuration() {
    let all = common::configs()
        .protocols()
        .storages()
        .gc_policies()
        .pointers()
        .with(|o| {
            o.mvpbt_partition_records(4)
                .gc_every_commits(1)
                .gc_interval(None)
        });
    let mut n = 0;
    for c in all {
        n += 1;
        let db = c.open();
        let t = db
            .create_table(
                strata::Schema::new("t")
                    .column("k", strata::Type::Int)
                    .column("v", strata::Type::Int)
                    .column("w", strata::Type::Text)
                    .column("u", strata::Type::Int)
                    .primary_key(&["k"]),
            )
            .unwrap();
        // Some rows before the indexes exist (back-filled), some after.
        db.run(|x| {
            for k in 0..6 {
                x.insert(&t, row![k, k % 3, format!("w{}", k % 2), k])?;
            }
            Ok(())
        })
        .unwrap();
        let vw = db
            .create_index_as("vw", &t, &["v", "w"], Unique::No, IndexKind::MvPbt)
            .unwrap();
        let u = db
            .create_index_as("u", &t, &["u"], Unique::Yes, IndexKind::MvPbt)
            .unwrap();
        let std_v = db.create_index("v", &t, &["v"], Unique::No).unwrap();
        db.run(|x| {
            for k in 6..12 {
                x.insert(&t, row![k, k % 3, format!("w{}", k % 2), k])?;
            }
            Ok(())
        })
        .unwrap();
        let mut old = db.begin_read_only().unwrap();
        let old_v1 = old.index_scan(&std_v, key![1]..=key![1]).unwrap();
        // Move every even row to v = 7, touch the others' w only, delete
        // row 3 and re-insert it elsewhere.
        for k in 0..12 {
            db.run(|x| {
                if k % 2 == 0 {
                    x.update(&t, &key![k], &[("v", Value::Int(7))])
                } else {
                    x.update(&t, &key![k], &[("u", Value::Int(100 + k))])
                }
            })
            .unwrap_or_else(|e| panic!("{c}: {e}"));
        }
        db.run(|x| x.delete(&t, &key![3])).unwrap();
        db.run(|x| x.insert(&t, row![3, 9, "w9", 3])).unwrap();
        // Unique, decided from the records: row 3 took u = 3 back.
        let dup = db.run(|x| x.insert(&t, row![50, 0, "w", 3]));
        assert!(
            matches!(dup, Err(Error::DuplicateKey { .. })),
            "{c}: {dup:?}"
        );
        db.collect_garbage();

        let mut now = db.begin_read_only().unwrap();
        for v in [0, 1, 2, 7, 9] {
            let via_std = now.index_scan(&std_v, key![v]..=key![v]).unwrap();
            let mut via_mvpbt = now.index_scan(&vw, key![v]..=key![v]).unwrap();
            via_mvpbt.sort_by_key(|r| r[0].as_int());
            assert_eq!(via_mvpbt, via_std, "{c}: v = {v}");
            // A point lookup (both columns), through the filters.
            for w in ["w0", "w1", "w9"] {
                let got = now.index_get(&vw, &key![v, w]).unwrap();
                let want: Vec<_> = via_std
                    .iter()
                    .filter(|r| r[2] == Value::from(w))
                    .cloned()
                    .collect();
                assert_eq!(got, want, "{c}: ({v}, {w})");
            }
        }
        // The old snapshot: rows under their old keys, old versions.
        let mut got = old.index_scan(&vw, key![1]..=key![1]).unwrap();
        got.sort_by_key(|r| r[0].as_int());
        assert_eq!(got, old_v1, "{c}: the old snapshot");
        assert_eq!(
            old.index_scan_keys(&u, key![3]..=key![3]).unwrap(),
            vec![row![3, 3]],
            "{c}"
        );
        assert_eq!(
            now.index_scan_keys(&u, key![100]..).unwrap(),
            [1i64, 5, 7, 9, 11]
                .iter()
                .map(|&k| row![100 + k, k])
                .collect::<Vec<_>>(),
            "{c}"
        );
        drop(old);
        drop(now);
        // With no snapshot left, a full freeze keeps one record per row.
        db.freeze_index(&vw).unwrap();
        db.freeze_index(&u).unwrap();
        let st = db.stats();
        assert_eq!(st.mvpbt.indexes, 2, "{c}");
        assert_eq!(
            st.mvpbt.frozen_records + st.mvpbt.active_records,
            2 * 12,
            "{c}: {:?}",
            st.mvpbt
        );
        assert!(st.mvpbt.bloom_bytes > 0 && st.mvpbt.prefix_bloom_bytes > 0);
        assert!(st.mvpbt.filter_probes > 0, "{c}: {:?}", st.mvpbt);
        assert!(st.mvpbt.false_positive_rate() <= 1.0);
        assert!(
            db.freeze_index(&std_v).is_err(),
            "a standard index has no partitions"
        );
    }
    assert!(n > 20, "the matrix has many valid configurations, ran {n}");
}

/// The filters skip partitions a point lookup's key is not in, and the
/// measured false-positive rate stays near the filters' 1 % target.
#[test]
fn bloom_filters_skip_partitions_and_report_their_false_positive_rate() {
    let db = strata::Database::open(
        strata::Options::default()
            .mvpbt_partition_records(64)
            .gc_interval(None),
    )
    .unwrap();
    let t = common::kvn_table(&db);
    let idx = db
        .create_index_as("by_v", &t, &["v"], Unique::No, IndexKind::MvPbt)
        .unwrap();
    for k in 0..2048 {
        db.run(|x| x.insert(&t, row![k, k, 0])).unwrap();
    }
    let mut ro = db.begin_read_only().unwrap();
    for v in 0..4096 {
        let rows = ro.index_get(&idx, &key![v]).unwrap();
        assert_eq!(rows.len(), usize::from(v < 2048), "v = {v}");
    }
    let st = db.stats().mvpbt;
    assert!(st.frozen_partitions >= 1, "{st:?}");
    assert!(st.filter_skips > 0, "{st:?}");
    let rate = st.false_positive_rate();
    assert!(rate < 0.05, "measured false-positive rate {rate}: {st:?}");
}

/// The kind is durable: recovery (log replay, then a checkpoint) rebuilds
/// an MV-PBT index as MV-PBT, its records from the recovered rows.
#[test]
fn the_index_kind_survives_recovery() {
    let d = std::env::temp_dir().join(format!("strata-mvpbt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let opts = || {
        strata::Options::default().durability(strata::Durability::Wal {
            dir: d.clone(),
            sync: strata::SyncPolicy::GroupCommit,
        })
    };
    {
        let db = strata::Database::open(opts()).unwrap();
        let t = common::kvn_table(&db);
        db.create_index_as("by_v", &t, &["v"], Unique::Yes, IndexKind::MvPbt)
            .unwrap();
        db.create_index("by_n", &t, &["n"], Unique::No).unwrap();
        db.run(|x| {
            x.insert(&t, row![1, 10, 0])?;
            x.insert(&t, row![2, 20, 0])
        })
        .unwrap();
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(30))]))
            .unwrap();
    }
    for round in 0..2 {
        let db = strata::Database::open(opts()).unwrap();
        let v = db.index("by_v").unwrap();
        assert_eq!(v.kind(), IndexKind::MvPbt, "round {round}");
        assert_eq!(db.index("by_n").unwrap().kind(), IndexKind::Standard);
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.index_scan_keys(&v, ..).unwrap(),
            vec![row![20, 2], row![30, 1]]
        );
        let t = db.table("kv").unwrap();
        let dup = db.run(|x| x.insert(&t, row![3, 30, 0]));
        assert!(matches!(dup, Err(Error::DuplicateKey { .. })), "{dup:?}");
        if round == 0 {
            db.checkpoint().unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Spill files under concurrency (`Options::mvpbt_spill_dir`): two writers
/// update indexed and other columns while freezes spill and merges replace
/// files (their records decided or still in memory beside the files); a
/// reader's index scans always agree with its primary-key scan of the
/// same snapshot, and at the end every record is in a file.
#[test]
fn spilled_partitions_agree_with_primary_reads_under_concurrent_writers() {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    let root = std::env::temp_dir().join(format!("strata-tests-mvpbt-{}", std::process::id()));
    let db = strata::Database::open(
        strata::Options::default()
            .mvpbt_partition_records(8)
            .mvpbt_spill_dir(Some(root.clone())),
    )
    .unwrap();
    let t = common::kvn_table(&db);
    db.run(|x| {
        for k in 0..32 {
            x.insert(&t, row![k, k % 8, 0])?;
        }
        Ok(())
    })
    .unwrap();
    let idx = db
        .create_index_as("by_v", &t, &["v"], Unique::No, IndexKind::MvPbt)
        .unwrap();
    let agree = |txn: &mut strata::Transaction| {
        let mut by_v: BTreeMap<(i64, i64), Vec<Value>> = BTreeMap::new();
        for r in txn.scan(&t, ..).unwrap() {
            by_v.insert((r[1].as_int().unwrap(), r[0].as_int().unwrap()), r);
        }
        let want: Vec<Vec<Value>> = by_v.values().cloned().collect();
        assert_eq!(txn.index_scan(&idx, ..).unwrap(), want);
        let want: Vec<Vec<Value>> = by_v
            .range((2, i64::MIN)..=(4, i64::MAX))
            .map(|(_, r)| r.clone())
            .collect();
        assert_eq!(txn.index_scan(&idx, key![2]..=key![4]).unwrap(), want);
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        for w in 0..2u64 {
            let (db, t, done) = (&db, &t, &done);
            sc.spawn(move || {
                let mut x = 777 + w;
                for i in 0..4_000i64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (k, v) = ((x % 40) as i64, ((x >> 8) % 8) as i64);
                    let r = db.run(|txn| match (x >> 16) % 6 {
                        0 => match txn.insert(t, row![k, v, i]) {
                            Err(Error::DuplicateKey { .. }) => txn.delete(t, &key![k]),
                            r => r,
                        },
                        1 => txn.update(t, &key![k], &[("n", Value::Int(i))]),
                        _ => txn.update(t, &key![k], &[("v", Value::Int(v))]),
                    });
                    assert!(matches!(r, Ok(()) | Err(Error::NotFound { .. })), "{r:?}");
                }
                done.store(true, Ordering::SeqCst);
            });
        }
        let (db, idx, done, agree) = (&db, &idx, &done, &agree);
        sc.spawn(move || {
            let mut n = 0;
            while !done.load(Ordering::SeqCst) || n < 20 {
                let mut ro = db.begin_read_only().unwrap();
                agree(&mut ro);
                drop(ro);
                if n % 16 == 0 {
                    db.freeze_index(idx).unwrap(); // a merge too
                }
                n += 1;
            }
        });
    });
    db.collect_garbage();
    db.freeze_index(&idx).unwrap();
    let mut ro = db.begin_read_only().unwrap();
    agree(&mut ro);
    let st = db.stats().mvpbt;
    assert!(st.spilled_partitions > 0, "{st:?}");
    assert_eq!(st.spilled_records, st.frozen_records, "all decided: {st:?}");
    assert_eq!((st.spill_failures, st.spill_corrupt_rebuilt), (0, 0));
    drop((ro, idx, t, db));
    std::fs::remove_dir_all(&root).unwrap();
}
