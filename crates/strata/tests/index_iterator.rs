//! The lazy secondary-index range (`Transaction::index_range`,
//! `index_range_keys`, and `Snapshot`'s index reads) over every index
//! design (each pointer scheme's standard index, MV-PBT under a logical
//! and the physical scheme, MV-PBT with spilled partitions): the rows
//! `index_scan` returns, from either end and from both at once; rows read
//! only when reached; phantom protection that covers exactly what the
//! iterator returned; a row that moves behind the walk is not lost; a
//! failed read ends the iteration; a snapshot's index reads by `&` from
//! several threads.

use crate::common;
use proptest::prelude::*;
use std::ops::Bound;
use strata::{
    key, row, Database, Error, Index, IndexKind, IndexPointers, Key, Options, Protocol, Row, Table,
    Unique, Value,
};

/// A secondary index design.
#[derive(Clone, Copy, Debug)]
struct Design {
    kind: IndexKind,
    pointers: IndexPointers,
    /// MV-PBT partitions spilled to files.
    spill: bool,
}

/// Every design the lazy range must walk: each kind decides visibility
/// its own way (logical: the row's visible version; physical: the named
/// version; MV-PBT: its records, in memory or in spill files). The
/// standard kinds first, then MV-PBT under each pointer scheme, then
/// MV-PBT spilled.
fn designs() -> Vec<Design> {
    let mut out: Vec<Design> = IndexPointers::ALL
        .into_iter()
        .map(|pointers| Design {
            kind: IndexKind::Standard,
            pointers,
            spill: false,
        })
        .collect();
    for pointers in IndexPointers::ALL {
        out.push(Design {
            kind: IndexKind::MvPbt,
            pointers,
            spill: false,
        });
    }
    out.push(Design {
        kind: IndexKind::MvPbt,
        pointers: Options::default().index_pointers,
        spill: true,
    });
    out
}

impl Design {
    /// `opts` for this design: its pointer scheme, small MV-PBT partitions
    /// (records spread over P_N and frozen ones), and a spill directory.
    fn options(&self, opts: Options, dir: &common::TestDir) -> Options {
        let o = opts
            .index_pointers(self.pointers)
            .mvpbt_partition_records(16);
        o.mvpbt_spill_dir(self.spill.then(|| dir.to_path_buf()))
    }

    fn open(&self, p: Protocol, dir: &common::TestDir) -> Database {
        Database::open(self.options(Options::default().protocol(p), dir)).unwrap()
    }

    fn index(&self, db: &Database, t: &Table) -> Index {
        db.create_index_as("by_v", t, &["v"], Unique::No, self.kind)
            .unwrap()
    }
}

/// The primary keys of `rows` (column 0).
fn pks(rows: &[Row]) -> Vec<i64> {
    rows.iter().map(|r| r[0].as_int().unwrap()).collect()
}

fn collect<T>(it: impl Iterator<Item = strata::Result<T>>) -> Vec<T> {
    it.collect::<Result<_, _>>().unwrap()
}

/// `kv(k, v, n)` with rows `0..n`, v = (k * 37) % 101 (index keys
/// repeat), then some rows deleted and some moved to another v (stale
/// entries and records for every kind), with old snapshots kept apart.
fn populated(db: &Database, n: i64) -> Table {
    let t = common::kvn_table(db);
    db.run(|tx| {
        for k in 0..n {
            tx.insert(&t, row![k, (k * 37) % 101, k])?;
        }
        Ok(())
    })
    .unwrap();
    t
}

fn churn(db: &Database, t: &Table, n: i64) {
    db.run(|tx| {
        for k in (0..n).filter(|k| k % 7 == 3) {
            tx.delete(t, &key![k])?;
        }
        for k in (0..n).filter(|k| k % 5 == 1 && k % 7 != 3) {
            tx.update(t, &key![k], &[("v", Value::Int((k * 13) % 101))])?;
        }
        for k in (0..n).filter(|k| k % 11 == 2 && k % 7 != 3) {
            tx.update(t, &key![k], &[("n", Value::Int(-k))])?;
        }
        Ok(())
    })
    .unwrap();
}

/// Over every protocol and version storage that the design accepts, with
/// deleted and moved rows: the iterator returns what `index_scan`
/// returns, `.rev()` the same backwards, the key-only form its primary
/// keys, `index_count` its length; a read-only transaction too.
#[test]
fn index_range_returns_the_index_scan_from_either_end() {
    let dir = common::TestDir::new("strata-index-iterator-scan");
    for d in designs() {
        let cfgs = common::configs()
            .with(|o| d.options(o, &dir))
            .protocols()
            .storages()
            .valid();
        for cfg in cfgs {
            let db = cfg.open();
            let t = populated(&db, 300);
            let idx = d.index(&db, &t);
            churn(&db, &t, 300);
            let b = |x: Bound<i64>| x.map(|v| key![v]);
            let bounds = [
                (Bound::Unbounded, Bound::Unbounded),
                (Bound::Included(10), Bound::Excluded(60)),
                (Bound::Excluded(17), Bound::Included(90)),
                (Bound::Included(44), Bound::Included(44)),
                (Bound::Included(200), Bound::Unbounded),
            ];
            for (lo, hi) in bounds {
                let range = (b(lo), b(hi));
                let what = format!("{cfg} {d:?} {lo:?}..{hi:?}");
                for read_only in [false, true] {
                    let mut tx = if read_only {
                        db.begin_read_only().unwrap()
                    } else {
                        db.begin().unwrap()
                    };
                    let want = tx.index_scan(&idx, range.clone()).unwrap();
                    let fwd = collect(tx.index_range(&idx, range.clone()).unwrap());
                    let mut back = collect(tx.index_range(&idx, range.clone()).unwrap().rev());
                    back.reverse();
                    let keys = collect(tx.index_range_keys(&idx, range.clone()).unwrap());
                    let n = tx.index_count(&idx, range.clone()).unwrap();
                    tx.commit().unwrap();
                    assert_eq!(fwd, want, "{what}");
                    assert_eq!(back, want, "{what} backwards");
                    let want_keys: Vec<Key> = pks(&want).into_iter().map(|k| key![k]).collect();
                    assert_eq!(keys, want_keys, "{what} keys");
                    assert_eq!(n, want.len(), "{what} count");
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Step {
    Front,
    Back,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any interleaving of `next` and `next_back` returns every row of the
    /// range once, over every design: the front's in index order, the
    /// back's in reverse, and the front's all before the back's.
    #[test]
    fn both_ends_meet_without_overlap_or_gap(
        design in 0usize..7,
        n in 0i64..300,
        lo in 0i64..101,
        width in 0i64..120,
        deleted in proptest::collection::vec(0i64..300, 0..40),
        steps in proptest::collection::vec(prop_oneof![Just(Step::Front), Just(Step::Back)], 0..400),
    ) {
        let dir = common::TestDir::new("strata-index-iterator-prop");
        let d = designs()[design];
        let db = d.open(Protocol::SiSsn, &dir);
        let t = populated(&db, n);
        let idx = d.index(&db, &t);
        db.run(|tx| {
            for &k in &deleted {
                if k < n {
                    let _ = tx.delete(&t, &key![k]);
                }
            }
            Ok(())
        }).unwrap();
        let mut tx = db.begin().unwrap();
        let want = tx.index_scan(&idx, key![lo]..key![lo + width]).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut it = tx.index_range(&idx, key![lo]..key![lo + width]).unwrap();
        for s in steps.iter().cycle().take(want.len() + 2) {
            let r = match s {
                Step::Front => it.next(),
                Step::Back => it.next_back(),
            };
            let Some(r) = r else { break };
            match s {
                Step::Front => front.push(r.unwrap()),
                Step::Back => back.push(r.unwrap()),
            }
        }
        if front.len() + back.len() == want.len() {
            prop_assert!(it.next().is_none() && it.next_back().is_none());
        }
        drop(it);
        back.reverse();
        front.extend(back);
        if steps.is_empty() {
            prop_assert!(front.is_empty());
        } else {
            prop_assert_eq!(front, want, "{:?}", d);
        }
    }
}

/// `kv` with rows k = 0..=10, v = 10 k.
fn tens(db: &Database) -> Table {
    let t = common::kvn_table(db);
    db.run(|tx| (0..=10).try_for_each(|k| tx.insert(&t, row![k, k * 10, 0])))
        .unwrap();
    t
}

/// Under the protocols that re-validate scans at commit, over every
/// design: a range that stopped after two rows protects the identities
/// (index key, then primary key) up to the second and no further: an
/// insert past it commits beside the scanner, one before it is a phantom.
/// Backwards, the same from the range's end; an iterator that ran dry
/// protects the whole range.
#[test]
fn the_predicate_covers_what_the_iterator_returned() {
    let dir = common::TestDir::new("strata-index-iterator-predicate");
    for p in common::protocols_where(common::phantom_check_is_rescan_only) {
        for d in designs() {
            // (rows taken, from the back, the insert (k, v), a phantom?)
            let cases = [
                (2, false, (1_055, 55), false),
                (2, false, (1_015, 15), true),
                (2, false, (100, 20), false), // v = 20 after the row (20, 2)
                (2, false, (-1, 20), true),   // v = 20 before it
                (2, true, (1_055, 55), false),
                (2, true, (1_095, 95), true),
                (2, true, (-1, 80), false), // v = 80 before the row (80, 8)
                (2, true, (100, 80), true),
                (usize::MAX, true, (1_005, 5), true),
                (usize::MAX, false, (1_095, 95), true),
                (0, false, (1_015, 15), false),
            ];
            for (take, rev, (k, v), phantom) in cases {
                let db = d.open(p, &dir);
                let t = tens(&db);
                let idx = d.index(&db, &t);
                let mut a = db.begin().unwrap();
                let it = a.index_range(&idx, key![1]..key![100]).unwrap();
                let read = if rev {
                    collect(it.rev().take(take))
                } else {
                    collect(it.take(take))
                };
                assert_eq!(read.len(), take.min(9), "{p} {d:?}");
                a.insert(&t, row![1_000, 1_000, 0]).unwrap();
                db.run(|b| b.insert(&t, row![k, v, 0])).unwrap();
                let what = format!("{p} {d:?}: {take} rows (rev {rev}), insert of v {v}");
                match a.commit() {
                    Ok(()) => assert!(!phantom, "{what}: the phantom committed"),
                    Err(Error::Conflict(_)) => {
                        assert!(phantom, "{what}: refused an insert it never read")
                    }
                    Err(e) => panic!("{what}: {e}"),
                }
            }
        }
    }
}

/// A row the walk listed but never returned was not read: a writer may
/// change it, and the scanner still commits (an eager read of the batch
/// would have put it in MVOCC's and OCC's read sets and under MV2PL's read
/// lock).
#[test]
fn rows_past_where_iteration_stopped_are_never_read() {
    let dir = common::TestDir::new("strata-index-iterator-unread");
    for p in common::protocols_where(common::phantom_check_is_rescan_only) {
        for d in designs() {
            for rev in [false, true] {
                let db = d.open(p, &dir);
                let t = tens(&db);
                let idx = d.index(&db, &t);
                let mut a = db.begin().unwrap();
                let it = a.index_range(&idx, ..).unwrap();
                let first = if rev {
                    collect(it.rev().take(2))
                } else {
                    collect(it.take(2))
                };
                let (mine, other) = if rev { (10, 5) } else { (0, 5) };
                assert_eq!(pks(&first)[0], mine, "{p} {d:?}");
                a.update(&t, &key![mine], &[("n", 1.into())]).unwrap();
                db.run(|b| b.update(&t, &key![other], &[("n", 2.into())]))
                    .unwrap_or_else(|e| panic!("{p} {d:?}: the writer of an unread row: {e}"));
                a.commit()
                    .unwrap_or_else(|e| panic!("{p} {d:?} (rev {rev}): the scanner: {e}"));
            }
        }
    }
}

/// Under the protocols that read the newest data (MV2PL, OCC), a row that
/// moves behind the walk while the iterator is between steps (no pin, no
/// lock on a row not reached yet) is met at its old entry under its new
/// key, which the walk passed: it was lost, and the range must not commit
/// as if it had read it. From the front (the row moves below it) and from
/// the back (above it).
#[test]
fn a_row_moved_behind_the_walk_is_not_lost() {
    let dir = common::TestDir::new("strata-index-iterator-lost");
    for p in common::protocols_where(common::reads_newest_data) {
        for d in designs() {
            for rev in [false, true] {
                let db = d.open(p, &dir);
                let t = tens(&db);
                let idx = d.index(&db, &t);
                let mut a = db.begin().unwrap();
                let mut it = a.index_range(&idx, ..).unwrap();
                let mut got = Vec::new();
                let mut step = |it: &mut strata::IndexRange<'_>| {
                    let r = if rev { it.next_back() } else { it.next() };
                    got.push(r.unwrap().unwrap()[0].as_int().unwrap());
                };
                step(&mut it);
                step(&mut it);
                // Row 5 (v 50) moves behind the walk: to v 5 (front) or
                // v 95 (back), and commits.
                let to = if rev { 95 } else { 5 };
                db.run(|b| b.update(&t, &key![5], &[("v", Value::Int(to))]))
                    .unwrap();
                for _ in 0..5 {
                    step(&mut it);
                }
                drop(it);
                assert!(!got.contains(&5), "{p} {d:?}: {got:?}");
                a.update(&t, &key![0], &[("n", 7.into())]).unwrap();
                let r = a.commit();
                assert!(
                    matches!(r, Err(Error::Conflict(_))),
                    "{p} {d:?} (rev {rev}): a range that lost row 5 committed: {r:?}"
                );
            }
        }
    }
}

/// OCC reads the newest data without locks: a row the front returned that
/// then moves ahead of it, into a batch not listed yet, is met again under
/// its new key, and not handed out twice (the commit fails all the same:
/// the read was overwritten).
#[test]
fn a_row_that_moves_ahead_is_returned_once() {
    let dir = common::TestDir::new("strata-index-iterator-once");
    for d in designs() {
        let db = d.open(Protocol::Occ, &dir);
        let t = common::kvn_table(&db);
        db.run(|tx| (0..200).try_for_each(|k| tx.insert(&t, row![k, k, 0])))
            .unwrap();
        let idx = d.index(&db, &t);
        let mut a = db.begin().unwrap();
        let mut it = a.index_range(&idx, ..).unwrap();
        let first = it.next().unwrap().unwrap();
        assert_eq!(first[0], Value::Int(0));
        db.run(|b| b.update(&t, &key![0], &[("v", Value::Int(150))]))
            .unwrap();
        let mut all = vec![first];
        all.extend(collect(it));
        assert_eq!(pks(&all), (0..200).collect::<Vec<_>>(), "{d:?}");
        assert!(a.commit().is_err(), "{d:?}: the read of row 0 was stale");
    }
}

/// An iterator that is forgotten (`mem::forget`) instead of dropped still
/// leaves the predicate of what it returned, from either end.
#[test]
fn a_forgotten_iterator_still_protects_what_it_returned() {
    let dir = common::TestDir::new("strata-index-iterator-forgotten");
    for p in common::protocols_where(common::phantom_check_is_rescan_only) {
        for d in designs() {
            for (rev, insert, phantom) in [
                (false, 15, true),
                (false, 55, false),
                (true, 95, true),
                (true, 55, false),
            ] {
                let db = d.open(p, &dir);
                let t = tens(&db);
                let idx = d.index(&db, &t);
                let mut a = db.begin().unwrap();
                let mut it = a.index_range(&idx, key![1]..key![100]).unwrap();
                for _ in 0..2 {
                    let r = if rev { it.next_back() } else { it.next() };
                    r.unwrap().unwrap();
                }
                std::mem::forget(it);
                a.insert(&t, row![1_000, 1_000, 0]).unwrap();
                db.run(|b| b.insert(&t, row![1_000 + insert, insert, 0]))
                    .unwrap();
                let r = a.commit();
                assert_eq!(
                    matches!(r, Err(Error::Conflict(_))),
                    phantom,
                    "{p} {d:?}, rev {rev}, insert of {insert}: {r:?}"
                );
            }
        }
    }
}

/// A read the protocol refuses ends the iteration with the error, rolls
/// the transaction back, and the iterator returns nothing more.
#[test]
fn a_refused_read_ends_the_iteration() {
    let dir = common::TestDir::new("strata-index-iterator-refused");
    for d in designs() {
        let db = d.open(Protocol::Mv2pl, &dir);
        let t = tens(&db);
        let idx = d.index(&db, &t);
        let mut holder = db.begin().unwrap();
        holder.update(&t, &key![3], &[("n", 9.into())]).unwrap();
        let mut a = db.begin().unwrap();
        let mut it = a.index_range(&idx, ..).unwrap();
        let mut got = Vec::new();
        let err = loop {
            match it.next().expect("the iteration ends with the refusal") {
                Ok(r) => got.push(r[0].as_int().unwrap()),
                Err(e) => break e,
            }
        };
        assert_eq!(got, [0, 1, 2], "{d:?}");
        assert!(matches!(err, Error::Conflict(_)), "{d:?}: {err}");
        assert!(it.next().is_none() && it.next_back().is_none());
        drop(it);
        assert!(matches!(a.commit(), Err(Error::TransactionFinished)));
        holder.commit().unwrap();
    }
}

/// A snapshot's index reads by `&`, from two threads at once while
/// writers move, delete and insert rows: each thread's `index_get`,
/// `index_scan`, `index_count` and `index_range` (both ways) equal what a
/// read-only transaction at the snapshot's moment read, over every design.
#[test]
fn a_snapshots_index_reads_are_shared_by_threads() {
    let dir = common::TestDir::new("strata-index-iterator-snapshot");
    for d in designs() {
        let db = d.open(Protocol::SiSsn, &dir);
        let t = populated(&db, 200);
        let idx = d.index(&db, &t);
        churn(&db, &t, 200);
        let snap = db.snapshot().unwrap();
        let mut ro = snap.reader().unwrap();
        let want_all = ro.index_scan(&idx, ..).unwrap();
        let want_range = ro.index_scan(&idx, key![20]..=key![70]).unwrap();
        let want_44 = ro.index_get(&idx, &key![44]).unwrap();
        ro.commit().unwrap();
        assert!(!want_44.is_empty() && want_range.len() > 50, "{d:?}");
        let writing = std::sync::atomic::AtomicBool::new(true);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    // Read on while the writer runs (and once after).
                    let mut last = false;
                    while !last {
                        last = !writing.load(std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(snap.index_scan(&idx, ..).unwrap(), want_all, "{d:?}");
                        assert_eq!(snap.index_get(&idx, &key![44]).unwrap(), want_44);
                        assert_eq!(
                            snap.index_count(&idx, key![20]..=key![70]).unwrap(),
                            want_range.len()
                        );
                        let fwd = collect(snap.index_range(&idx, key![20]..=key![70]).unwrap());
                        assert_eq!(fwd, want_range, "{d:?}");
                        let mut back =
                            collect(snap.index_range(&idx, key![20]..=key![70]).unwrap().rev());
                        back.reverse();
                        assert_eq!(back, want_range, "{d:?} backwards");
                        let keys = collect(snap.index_range_keys(&idx, ..).unwrap());
                        assert_eq!(keys.len(), want_all.len());
                    }
                });
            }
            s.spawn(|| {
                for round in 0..20i64 {
                    db.run(|tx| {
                        tx.update(&t, &key![round * 7 % 200], &[("v", Value::Int(round))])?;
                        tx.insert(&t, row![1_000 + round, 44, 0])?;
                        let gone = key![round * 11 % 200];
                        if round % 3 == 0 && tx.get(&t, &gone)?.is_some() {
                            tx.delete(&t, &gone)?;
                        }
                        Ok(())
                    })
                    .unwrap();
                    std::thread::yield_now();
                }
                writing.store(false, std::sync::atomic::Ordering::SeqCst);
            });
        });
        assert_eq!(snap.index_scan(&idx, ..).unwrap(), want_all, "{d:?} after");
    }
}

/// A range of an index of another database, or of a dropped index, is a
/// typed error before anything is read, from a snapshot too.
#[test]
fn an_index_range_of_an_index_not_open_here_is_refused() {
    let db = common::db(Protocol::SiSsn);
    let other = common::db(Protocol::SiSsn);
    let t = tens(&db);
    let u = tens(&other);
    let idx = db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
    let theirs = other.create_index("by_v", &u, &["v"], Unique::No).unwrap();
    let mut tx = db.begin().unwrap();
    assert!(matches!(tx.index_range(&theirs, ..), Err(Error::Schema(_))));
    drop(tx);
    let snap = db.snapshot().unwrap();
    assert!(matches!(
        snap.index_range(&theirs, ..),
        Err(Error::Schema(_))
    ));
    assert!(matches!(
        snap.index_scan(&theirs, ..),
        Err(Error::Schema(_))
    ));
    assert_eq!(snap.index_count(&idx, ..).unwrap(), 11);
    drop(snap);
    db.drop_index("by_v").unwrap();
    let mut tx = db.begin().unwrap();
    assert!(matches!(tx.index_range(&idx, ..), Err(Error::Schema(_))));
}

/// An index range pins the epoch inside a step only: ranges forgotten half
/// way (`mem::forget`; from the front, from the back, over a shared
/// snapshot) hold back no reclamation, as `tests/iterator.rs` checks for
/// the primary range: the version they could have read is freed through
/// the epoch once GC unlinks it, which drops its text.
#[test]
fn a_forgotten_index_range_holds_back_no_reclamation() {
    let dir = common::TestDir::new("strata-index-iterator-reclaim");
    for d in [designs()[0], designs()[3]] {
        let db = Database::open(d.options(Options::default().gc_every_commits(1), &dir)).unwrap();
        let t = common::kv_table(&db);
        db.run(|tx| (0..300).try_for_each(|k| tx.insert(&t, row![k, k, "n"])))
            .unwrap();
        let idx = d.index(&db, &t);
        let old = strata::Text::new("held by a version the ranges could read");
        db.run(|tx| tx.update(&t, &key![150], &[("note", Value::Text(old.clone()))]))
            .unwrap();
        let mut tx = db.begin().unwrap();
        let mut it = tx.index_range(&idx, ..).unwrap();
        assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(0));
        std::mem::forget(it);
        let mut back = tx.index_range_keys(&idx, ..).unwrap().rev();
        assert_eq!(back.next().unwrap().unwrap(), key![299]);
        std::mem::forget(back);
        tx.commit().unwrap();
        let snap = db.snapshot().unwrap();
        let mut it = snap.index_range(&idx, key![100]..).unwrap();
        assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(100));
        std::mem::forget(it);
        drop(snap);
        db.run(|tx| tx.update(&t, &key![150], &[("note", Value::from("new"))]))
            .unwrap();
        db.collect_garbage();
        let mut tries = 0;
        while strata::Text::strong_count(&old) > 1 {
            tries += 1;
            assert!(tries <= 20_000, "{d:?}: the old version was never freed");
            crossbeam_epoch::pin().flush();
            db.collect_garbage();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(db.begin().unwrap().index_count(&idx, ..).unwrap(), 300);
    }
}
