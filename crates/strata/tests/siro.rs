//! SIRO version storage (`storage::siro`, vDriver §3.2-§3.5): a long
//! reader's version goes off-row into the LLT cluster, versions dead when
//! they leave the row are never copied, whole dead segments are cut (by
//! cut-and-fix), an abort toggles back to the in-row copy, the in-row /
//! off-row split is reported; and writers, readers and the collector (its
//! cutter racing writers for the same chains, Fig. 9) read exactly what
//! their snapshots must see. The cut-and-fix state transitions one by one
//! are `gc::siro`'s unit tests.

use crate::common;

use common::{counters_table, set_v};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use strata::{key, Database, GcPolicy, Options, SiroTuning, Value, VersionStorage};

/// Passes only when a test asks (the background thread's interval is
/// longer than any test), zones republished by committers every 4 commits.
fn opts() -> Options {
    Options::default()
        .version_storage(VersionStorage::Siro)
        .gc(GcPolicy::DeadZone)
        .gc_interval(Some(std::time::Duration::from_secs(3600)))
        .gc_every_commits(4)
        .siro(SiroTuning {
            segment_bytes: 1024,
            hot_commits: 50,
            llt_commits: 5,
        })
}

fn sum(a: [u64; 3]) -> u64 {
    a.iter().sum()
}

const HOT: usize = 0;
const LLT: usize = 2;
/// `SiroStats::relocated_for`'s order.
const KEPT_BY_OLDEST: usize = 0;
const KEPT_BY_YOUNGER: usize = 1;

/// A version a younger snapshot still reads, when it leaves the row, is
/// counted as kept by that snapshot, not by the oldest (vDriver Fig. 15:
/// which snapshots make the first prune miss).
#[test]
fn relocations_name_the_snapshot_that_kept_each_version() {
    let db = Database::open(opts()).unwrap();
    let t = counters_table(&db, 1);
    let mut old = db.begin_read_only().unwrap();
    assert!(old.get(&t, &key![0]).unwrap().is_some());
    for v in 1..=10 {
        set_v(&db, &t, 0, v);
    }
    let mut young = db.begin_read_only().unwrap();
    assert!(young.get(&t, &key![0]).unwrap().is_some());
    db.collect_garbage();
    for v in 11..=40 {
        set_v(&db, &t, 0, v);
        if v % 5 == 0 {
            db.collect_garbage();
        }
    }
    let s = db.stats().siro;
    assert!(s.relocated_for[KEPT_BY_YOUNGER] >= 1, "{s:?}");
    assert_eq!(sum(s.relocated_for), sum(s.relocated), "{s:?}");
    old.commit().unwrap();
    young.commit().unwrap();
}

/// The LLT scenario on SIRO, pass by pass: the reader's version is
/// relocated into the LLT cluster; versions the last pass's zones already
/// call dead are never copied off-row; the HOT segments filled meanwhile
/// lie in the LLT's dead zone and are cut whole; the chain ends at two
/// versions and the reader still reads its value.
#[test]
fn an_llt_keeps_one_off_row_version_and_the_rest_is_pruned_three_ways() {
    let db = Database::open(opts()).unwrap();
    let t = counters_table(&db, 2);
    let mut llt = db.begin_read_only().unwrap();
    // Age the reader past δ_LLT (5 commits), and publish zones that list it.
    for v in 1..=10 {
        set_v(&db, &t, 0, v);
    }
    db.collect_garbage();
    for v in 1..=400 {
        set_v(&db, &t, 1, v);
        if v % 10 == 0 {
            // A pass: cuts the HOT segments inside the LLT's dead zone.
            // Between passes committers republish the zones, so versions
            // that died since are dropped when they leave the row.
            db.collect_garbage();
        }
    }
    let st = db.stats();
    let s = &st.siro;
    // Row 0's first version left the row before any zones were published
    // (not known as an LLT's: HOT); row 1's went to the LLT cluster.
    assert_eq!(s.relocated[LLT], 1, "the reader's version of row 1: {s:?}");
    // What kept each copied version: the reader's (the oldest snapshot),
    // and for the rest the zones' floor (one thread: no younger snapshot).
    assert!(s.relocated_for[KEPT_BY_OLDEST] >= 1, "{s:?}");
    assert_eq!(s.relocated_for[KEPT_BY_YOUNGER], 0, "{s:?}");
    assert_eq!(sum(s.relocated_for), sum(s.relocated), "{s:?}");
    assert!(sum(s.pruned_at_relocation) >= 30, "first prune: {s:?}");
    assert!(s.relocated[HOT] > 100, "{s:?}");
    assert!(sum(s.segment_pruned) > 0, "segment pruning: {s:?}");
    assert!(s.segments_dropped > 0, "{s:?}");
    // The reader's version plus the newest: two versions a row.
    db.collect_garbage();
    let st = db.stats();
    assert_eq!(st.longest_chain, 2, "{:?}", st.siro);
    assert!(st.version_store_bytes > 0, "the LLT's versions are off-row");
    assert_eq!(llt.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(0));
    assert_eq!(llt.get(&t, &key![0]).unwrap().unwrap()[1], Value::Int(0));
    llt.commit().unwrap();
    db.collect_garbage();
    let st = db.stats();
    assert_eq!(st.longest_chain, 1);
    assert_eq!(st.version_store_bytes, 0, "nothing off-row is left");
    let mut now = db.begin_read_only().unwrap();
    assert_eq!(now.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(400));
}

/// In-row holds the current and the previous version; only older ones
/// count as off-row bytes.
#[test]
fn the_previous_version_stays_in_row() {
    let db = Database::open(opts()).unwrap();
    let t = counters_table(&db, 1);
    let base = db.stats();
    let _hold = db.begin_read_only().unwrap();
    set_v(&db, &t, 0, 1);
    let one = db.stats();
    assert_eq!(one.version_store_bytes, 0, "v^(r,1) is in-row");
    assert!(one.main_table_bytes > base.main_table_bytes);
    set_v(&db, &t, 0, 2);
    let two = db.stats();
    assert!(two.version_store_bytes > 0, "v^(r,2) went off-row");
    assert_eq!(sum(two.siro.relocated), 1);
}

/// An abort leaves the row in its previous state: the in-row copy is the
/// current version again (the toggle) and a later write relocates as usual.
#[test]
fn an_abort_leaves_the_row_as_it_was() {
    let db = Database::open(opts()).unwrap();
    let t = counters_table(&db, 1);
    let mut old = db.begin_read_only().unwrap();
    set_v(&db, &t, 0, 1);
    let mut x = db.begin().unwrap();
    x.update(&t, &key![0], &[("v", Value::Int(-1))]).unwrap();
    x.abort();
    set_v(&db, &t, 0, 2);
    set_v(&db, &t, 0, 3);
    let mut now = db.begin_read_only().unwrap();
    assert_eq!(old.get(&t, &key![0]).unwrap().unwrap()[1], Value::Int(0));
    assert_eq!(now.get(&t, &key![0]).unwrap().unwrap()[1], Value::Int(3));
}

/// vDriver §3.5: an abort toggles. The aborted write's previous version
/// becomes current again with the image it already has (its in-row copy),
/// nothing copied back; a later write derives from that image; aborted
/// deletes, repeated aborts and a transaction writing the row twice
/// (then aborting, or committing) all leave exactly the committed values.
#[test]
fn an_abort_toggles_back_to_the_in_row_copy() {
    let db = Database::open(opts()).unwrap();
    let t = counters_table(&db, 1);
    let int = |x: &mut strata::Transaction| match x.get(&t, &key![0]).unwrap() {
        Some(r) => r[1].clone(),
        None => Value::from("deleted"),
    };
    let mut old = db.begin_read_only().unwrap();
    set_v(&db, &t, 0, 1);
    let toggled = || db.stats().siro.aborts_toggled;
    let mut x = db.begin().unwrap();
    x.update(&t, &key![0], &[("v", Value::Int(-1))]).unwrap();
    x.abort();
    assert_eq!(toggled(), 1);
    let mut now = db.begin_read_only().unwrap();
    assert_eq!(int(&mut now), Value::Int(1));
    now.commit().unwrap();
    // An increment over the toggled version reads and derives from its copy.
    db.run(|x| {
        let Value::Int(v) = x.get(&t, &key![0])?.unwrap()[1] else {
            panic!("v is an INT column");
        };
        x.update(&t, &key![0], &[("v", Value::Int(v + 10))])
    })
    .unwrap();
    // A delete aborted, twice an update aborted, a double update aborted.
    let mut x = db.begin().unwrap();
    x.delete(&t, &key![0]).unwrap();
    x.abort();
    for v in [-2, -3] {
        let mut x = db.begin().unwrap();
        x.update(&t, &key![0], &[("v", Value::Int(v))]).unwrap();
        x.abort();
    }
    let mut x = db.begin().unwrap();
    x.update(&t, &key![0], &[("v", Value::Int(-4))]).unwrap();
    x.update(&t, &key![0], &[("v", Value::Int(-5))]).unwrap();
    assert_eq!(int(&mut x), Value::Int(-5), "its own write");
    x.abort();
    assert_eq!(toggled(), 5);
    let mut now = db.begin_read_only().unwrap();
    assert_eq!(int(&mut now), Value::Int(11));
    // Written twice and committed, over the toggled version.
    let mut x = db.begin().unwrap();
    x.update(&t, &key![0], &[("v", Value::Int(20))]).unwrap();
    x.update(&t, &key![0], &[("v", Value::Int(21))]).unwrap();
    x.commit().unwrap();
    set_v(&db, &t, 0, 22);
    let mut last = db.begin_read_only().unwrap();
    assert_eq!(int(&mut last), Value::Int(22));
    assert_eq!(int(&mut now), Value::Int(11));
    assert_eq!(int(&mut old), Value::Int(0));
    // And the versions are pruned as usual once nobody reads them.
    for x in [old, now, last] {
        x.commit().unwrap();
    }
    db.collect_garbage();
    assert_eq!(db.stats().longest_chain, 1);
    let mut end = db.begin_read_only().unwrap();
    assert_eq!(int(&mut end), Value::Int(22));
}

/// After a toggled abort the master's cells hold the aborted image: a
/// write that changes one attribute takes the others from the current
/// version's in-row copy, never from those stale cells.
#[test]
fn a_write_after_a_toggled_abort_keeps_the_committed_attributes() {
    let db = Database::open(opts()).unwrap();
    let t = common::kv_table(&db);
    db.run(|x| x.insert(&t, strata::row![0, 0, "committed"]))
        .unwrap();
    set_v(&db, &t, 0, 1);
    let mut x = db.begin().unwrap();
    let aborted = [("v", Value::Int(-1)), ("note", Value::from("aborted"))];
    x.update(&t, &key![0], &aborted).unwrap();
    x.abort();
    assert_eq!(db.stats().siro.aborts_toggled, 1);
    set_v(&db, &t, 0, 2);
    let mut now = db.begin_read_only().unwrap();
    let r = now.get(&t, &key![0]).unwrap().unwrap();
    assert_eq!(r[1..], [Value::Int(2), Value::from("committed")]);
}

/// Writers, the collector (background passes every millisecond: segment
/// cuts, row cleaning, zones republished) and readers that hold snapshots
/// race on a few rows: every read returns exactly the value the reader's
/// snapshot saw first, and all three pruning paths ran.
#[test]
fn readers_writers_and_the_cleaner_race_on_the_same_chains() {
    let rounds = i64::from(common::soak()) * 1500;
    let db = Database::open(
        opts()
            .gc_interval(Some(std::time::Duration::from_millis(1)))
            .gc_every_commits(2),
    )
    .unwrap();
    let t = counters_table(&db, 3);
    let stop = AtomicBool::new(false);
    let started = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            while !started.load(SeqCst) {
                std::thread::yield_now();
            }
            for v in 1..=rounds {
                set_v(&db, &t, v % 3, v);
                if v % 50 == 0 {
                    db.collect_garbage();
                }
            }
            stop.store(true, SeqCst);
        });
        let reader = s.spawn(|| {
            let mut checked = 0u64;
            while !stop.load(SeqCst) {
                let mut x = db.begin_read_only().unwrap();
                let first: Vec<Value> = (0..3)
                    .map(|k| x.get(&t, &key![k]).unwrap().unwrap()[1].clone())
                    .collect();
                started.store(true, SeqCst);
                for _ in 0..50 {
                    for k in 0..3 {
                        let r = x.get(&t, &key![k]).unwrap().unwrap();
                        assert_eq!(r[1], first[k as usize], "row {k}");
                        checked += 1;
                    }
                    std::thread::yield_now();
                }
                x.commit().unwrap();
            }
            checked
        });
        writer.join().unwrap();
        assert!(reader.join().unwrap() > 0);
    });
    db.collect_garbage();
    let st = db.stats();
    let s = &st.siro;
    assert!(sum(s.relocated) > 0, "{s:?}");
    assert!(sum(s.pruned_at_relocation) > 0, "{s:?}");
    assert!(sum(s.segment_pruned) + sum(s.cleaned) > 0, "{s:?}");
    assert_eq!(st.longest_chain, 1, "{s:?}");
    let mut now = db.begin_read_only().unwrap();
    let last: i64 = (0..3)
        .map(|k| match now.get(&t, &key![k]).unwrap().unwrap()[1] {
            Value::Int(v) => v,
            _ => unreachable!(),
        })
        .max()
        .unwrap();
    assert_eq!(last, rounds);
}

/// A secondary index created while versions pruned at relocation are
/// still linked (no image: the collector has not unlinked them yet) is
/// back-filled without reading them, and finds the current values.
#[test]
fn an_index_created_over_pruned_versions_skips_them() {
    let db = Database::open(opts()).unwrap();
    let t = counters_table(&db, 2);
    let _llt = db.begin_read_only().unwrap();
    for v in 1..=40 {
        set_v(&db, &t, 1, v);
    }
    let st = db.stats();
    assert!(sum(st.siro.pruned_at_relocation) > 0, "{:?}", st.siro);
    assert!(st.longest_chain > 3, "pruned versions still linked");
    let idx = db
        .create_index("by_v", &t, &["v"], strata::Unique::No)
        .unwrap();
    let mut x = db.begin_read_only().unwrap();
    let hits = x.index_get(&idx, &key![40]).unwrap();
    assert_eq!(hits.len(), 1);
    x.commit().unwrap();
    // The collector then unlinks them, its index step walking past them.
    db.collect_garbage();
    assert_eq!(db.stats().longest_chain, 2);
    let mut x = db.begin_read_only().unwrap();
    assert_eq!(x.index_get(&idx, &key![40]).unwrap().len(), 1);
    assert_eq!(x.index_get(&idx, &key![39]).unwrap().len(), 0);
}

/// vDriver §3.4 under load: two writers increment the same rows (their
/// relocations race the cutter's cuts on the same chains, Fig. 9), a
/// cleaner thread runs explicit passes on top of the background ones,
/// and readers hold snapshots across many passes, one of them long
/// enough to be an LLT. Every read is checked against what its snapshot
/// must see: the same value every time, never less than an older
/// snapshot saw, and the final value counts every committed increment.
/// The cut-and-fix states and both sides of the race are reported.
#[test]
fn the_cutter_races_writers_on_the_same_chains_under_long_snapshots() {
    let soak = u64::from(common::soak());
    let per_writer = 1500 * soak;
    // Versions of both lifetimes (HOT and COLD) and the LLT's: a pass's
    // dead segments are then often not consecutive in one cluster (Cut-II).
    let db = Database::open(
        opts()
            .gc_interval(Some(std::time::Duration::from_millis(1)))
            .gc_every_commits(3)
            .siro(SiroTuning {
                segment_bytes: 1024,
                hot_commits: 6,
                llt_commits: 30,
            }),
    )
    .unwrap();
    let t = counters_table(&db, 3);
    let stop = AtomicBool::new(false);
    let int = |v: &Value| {
        let Value::Int(i) = v else {
            panic!("v is an INT column");
        };
        *i
    };
    let committed = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    for i in 0..per_writer {
                        // Rows 0 and 1 are hot; row 2, written every 16th
                        // time, leaves COLD versions.
                        let k = if i % 16 == 15 { 2 } else { (i % 2) as i64 };
                        // Every fifth increment is first written and
                        // aborted: the abort toggles, racing the cutter.
                        if i % 5 == 4 {
                            let mut x = db.begin().unwrap();
                            if x.update(&t, &key![k], &[("v", Value::Int(-1))]).is_ok() {
                                x.abort();
                            }
                        }
                        db.run(|x| {
                            let v = int(&x.get(&t, &key![k])?.expect("row")[1]);
                            x.update(&t, &key![k], &[("v", Value::Int(v + 1))])
                        })
                        .unwrap();
                        committed.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        s.spawn(|| {
            while !stop.load(SeqCst) {
                db.collect_garbage();
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let readers: Vec<_> = (0..2u64)
            .map(|r| {
                let (db, t, stop, committed) = (&db, &t, &stop, &committed);
                s.spawn(move || {
                    let mut last = [0i64; 3];
                    let mut checked = 0u64;
                    let mut round = 0u64;
                    while !stop.load(SeqCst) || round == 0 {
                        let mut x = db.begin_read_only().unwrap();
                        let first: Vec<i64> = (0..3)
                            .map(|k| int(&x.get(t, &key![k]).unwrap().unwrap()[1]))
                            .collect();
                        for k in 0..3 {
                            assert!(first[k] >= last[k], "row {k} went back");
                            last[k] = first[k];
                        }
                        // Reader 0 holds every fourth snapshot over 200
                        // commits (an LLT: wide dead zones open and close
                        // around it), the others over a few.
                        let hold = if r == 0 && round.is_multiple_of(4) {
                            200
                        } else {
                            8
                        };
                        let until = committed.load(SeqCst) + hold;
                        let deadline =
                            std::time::Instant::now() + std::time::Duration::from_millis(500);
                        loop {
                            for (k, want) in first.iter().enumerate() {
                                let v = int(&x.get(t, &key![k as i64]).unwrap().unwrap()[1]);
                                assert_eq!(v, *want, "reader {r}, row {k}");
                                checked += 1;
                            }
                            std::thread::yield_now();
                            if committed.load(SeqCst) >= until
                                || std::time::Instant::now() >= deadline
                                || stop.load(SeqCst)
                            {
                                break;
                            }
                        }
                        x.commit().unwrap();
                        round += 1;
                    }
                    checked
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, SeqCst);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    });
    db.collect_garbage();
    let st = db.stats();
    let s = &st.siro;
    eprintln!("{s:?}");
    assert!(s.cut_i + s.cut_ii > 0, "no segment was cut: {s:?}");
    assert!(
        s.holes_opened + s.fixups > 0,
        "no cut reached a chain: {s:?}"
    );
    assert!(s.aborts_toggled > 0, "{s:?}");
    assert_eq!(
        s.one_hole_chains, 0,
        "the last pass filled every hole: {s:?}"
    );
    assert_eq!(st.longest_chain, 1, "{s:?}");
    let mut now = db.begin_read_only().unwrap();
    let total: i64 = (0..3)
        .map(|k| int(&now.get(&t, &key![k]).unwrap().unwrap()[1]))
        .sum();
    assert_eq!(total as u64, committed.load(SeqCst));
    assert_eq!(total as u64, 2 * per_writer);
}

/// The index schemes a SIRO table can have: the pointer schemes SIRO
/// accepts (logical ones only: an in-place master has no per-version
/// address) with each index kind.
fn siro_indexes() -> Vec<(strata::IndexPointers, strata::IndexKind)> {
    let pointers = common::configs()
        .storage(VersionStorage::Siro)
        .gc(GcPolicy::DeadZone)
        .pointers()
        .into_iter()
        .map(|c| c.pointers);
    pointers
        .flat_map(|p| strata::IndexKind::ALL.map(|k| (p, k)))
        .collect()
}

/// vDriver's pruning on a table with a secondary index (on the column the
/// updates change, so every version has a key of its own): versions dead
/// when they leave the row are never copied and dead segments are cut, as
/// without an index; reads through the index at an LLT's snapshot and at
/// a new one find exactly their rows; and no entry outlives the versions
/// that held its key (an entry names the row, so none can lead to a
/// pruned version; the entries only a dropped version needed go before
/// its image does).
#[test]
fn an_indexed_table_is_pruned_at_relocation_and_by_segment() {
    for (p, kind) in siro_indexes() {
        let tag = format!("{p:?} {kind}");
        let db = Database::open(opts().index_pointers(p)).unwrap();
        let t = counters_table(&db, 2);
        let idx = db
            .create_index_as("by_v", &t, &["v"], strata::Unique::No, kind)
            .unwrap();
        let mut llt = db.begin_read_only().unwrap();
        for v in 1..=10 {
            set_v(&db, &t, 0, v);
        }
        db.collect_garbage();
        for v in 1..=400 {
            set_v(&db, &t, 1, v);
            if v % 10 == 0 {
                db.collect_garbage();
            }
        }
        let st = db.stats();
        let s = &st.siro;
        assert!(
            sum(s.pruned_at_relocation) >= 30,
            "{tag}: first prune: {s:?}"
        );
        assert!(sum(s.segment_pruned) > 0, "{tag}: segment pruning: {s:?}");
        db.collect_garbage();
        assert_eq!(db.stats().longest_chain, 2, "{tag}");
        let keys = |x: &mut strata::Transaction, v: i64| -> Vec<i64> {
            let rows = x.index_get(&idx, &key![v]).unwrap();
            rows.iter().map(|r| r[0].as_int().unwrap()).collect()
        };
        assert_eq!(keys(&mut llt, 0), vec![0, 1], "{tag}: the LLT's rows");
        for v in [1, 10, 200, 399, 400] {
            assert_eq!(keys(&mut llt, v), Vec::<i64>::new(), "{tag}: v = {v}");
        }
        assert_eq!(llt.index_scan(&idx, ..).unwrap().len(), 2, "{tag}");
        let mut now = db.begin_read_only().unwrap();
        assert_eq!(keys(&mut now, 0), Vec::<i64>::new(), "{tag}");
        assert_eq!(keys(&mut now, 10), vec![0], "{tag}");
        assert_eq!(keys(&mut now, 400), vec![1], "{tag}");
        for v in [1, 200, 399] {
            assert_eq!(keys(&mut now, v), Vec::<i64>::new(), "{tag}: v = {v}");
        }
        if kind == strata::IndexKind::Standard {
            // Row 1's key in the LLT's version and in the newest, row 0's
            // two: nothing of the 399 keys in between is left.
            let e = db.stats().secondary_index_entries;
            assert_eq!(e, 4, "{tag}: entries of dropped versions are gone");
        }
        llt.commit().unwrap();
        now.commit().unwrap();
        db.collect_garbage();
        let st = db.stats();
        assert_eq!(st.longest_chain, 1, "{tag}");
        if kind == strata::IndexKind::Standard {
            assert_eq!(st.secondary_index_entries, 2, "{tag}");
        }
        let mut end = db.begin_read_only().unwrap();
        assert_eq!(end.index_scan(&idx, ..).unwrap().len(), 2, "{tag}");
        assert_eq!(keys(&mut end, 400), vec![1], "{tag}");
    }
}

/// The same under concurrency: a writer moves rows between keys while the
/// collector prunes (background passes every millisecond, segment cuts
/// racing the writer's relocations) and readers hold snapshots: a reader
/// finds each row, through the index, under the key its snapshot saw
/// first, every time.
#[test]
fn index_reads_stay_exact_while_an_indexed_table_is_pruned() {
    let rounds = i64::from(common::soak()) * 800;
    for (p, kind) in siro_indexes() {
        let db = Database::open(
            opts()
                .index_pointers(p)
                .gc_interval(Some(std::time::Duration::from_millis(1)))
                .gc_every_commits(2),
        )
        .unwrap();
        let t = counters_table(&db, 3);
        let idx = db
            .create_index_as("by_v", &t, &["v"], strata::Unique::No, kind)
            .unwrap();
        let stop = AtomicBool::new(false);
        let started = AtomicBool::new(false);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut checked = 0u64;
                while !stop.load(SeqCst) {
                    let mut x = db.begin_read_only().unwrap();
                    let first: Vec<i64> = (0..3)
                        .map(|k| x.get(&t, &key![k]).unwrap().unwrap()[1].as_int().unwrap())
                        .collect();
                    started.store(true, SeqCst);
                    for _ in 0..20 {
                        for (k, v) in first.iter().enumerate() {
                            let rows = x.index_get(&idx, &key![*v]).unwrap();
                            assert!(
                                rows.iter().any(|r| r[0] == Value::Int(k as i64)),
                                "{p:?} {kind}: row {k} under {v}: {rows:?}"
                            );
                            checked += 1;
                        }
                        std::thread::yield_now();
                    }
                    x.commit().unwrap();
                }
                checked
            });
            while !started.load(SeqCst) {
                std::thread::yield_now();
            }
            for v in 1..=rounds {
                set_v(&db, &t, v % 3, v);
            }
            stop.store(true, SeqCst);
            assert!(reader.join().unwrap() > 0);
        });
        db.collect_garbage();
        let st = db.stats();
        let s = &st.siro;
        assert!(sum(s.pruned_at_relocation) > 0, "{p:?} {kind}: {s:?}");
        assert_eq!(st.longest_chain, 1, "{p:?} {kind}: {s:?}");
        if kind == strata::IndexKind::Standard {
            assert_eq!(st.secondary_index_entries, 3, "{p:?} {kind}");
        }
    }
}
