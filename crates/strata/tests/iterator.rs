//! The lazy range iterators (`Transaction::range`, `range_keys`, `count`,
//! `index_range`): the rows a scan returns, from either end and from both
//! at once; rows read only when reached; phantom protection that covers
//! exactly what the iterator returned; a failed read ends the iteration.

use crate::common;
use proptest::prelude::*;
use std::ops::Bound;
use strata::{
    key, row, Database, Error, IndexKind, Options, Protocol, Row, Schema, Table, Text, Type, Value,
};

/// `kv` with keys `0, 10, .., 10 (n - 1)` and v = k.
fn tens(db: &Database, n: i64) -> Table {
    let t = common::kv_table(db);
    db.run(|tx| {
        for k in 0..n {
            tx.insert(&t, row![k * 10, k * 10, "n"])?;
        }
        Ok(())
    })
    .unwrap();
    t
}

fn ints(rows: Vec<Row>) -> Vec<i64> {
    rows.iter().map(|r| r[0].as_int().unwrap()).collect()
}

/// The keys `range` returns from the front, and from the back.
fn both_ways(db: &Database, t: &Table, lo: Bound<i64>, hi: Bound<i64>) -> (Vec<i64>, Vec<i64>) {
    let b = |x: Bound<i64>| x.map(|k| key![k]);
    let mut tx = db.begin().unwrap();
    let fwd: Vec<Row> = tx
        .range(t, (b(lo), b(hi)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let back: Vec<Row> = tx
        .range(t, (b(lo), b(hi)))
        .unwrap()
        .rev()
        .collect::<Result<_, _>>()
        .unwrap();
    tx.commit().unwrap();
    (ints(fwd), ints(back))
}

/// Over many leaves, with deleted rows among them, under every protocol
/// and version storage: the iterator returns what `scan` returns, `.rev()`
/// the same backwards, `count` its length.
#[test]
fn range_returns_the_scans_rows_from_either_end() {
    for cfg in common::configs().protocols().storages().valid() {
        let db = cfg.open();
        let t = tens(&db, 300);
        db.run(|tx| {
            for k in (0..300).filter(|k| k % 7 == 3) {
                tx.delete(&t, &key![k * 10])?;
            }
            Ok(())
        })
        .unwrap();
        let bounds = [
            (Bound::Unbounded, Bound::Unbounded),
            (Bound::Included(55), Bound::Excluded(2_000)),
            (Bound::Excluded(100), Bound::Included(2_990)),
            (Bound::Included(1_000), Bound::Included(1_000)),
            (Bound::Included(1_003), Bound::Included(1_007)),
        ];
        for (lo, hi) in bounds {
            let mut tx = db.begin().unwrap();
            let range = (lo.map(|k| key![k]), hi.map(|k| key![k]));
            let want = ints(tx.scan(&t, range.clone()).unwrap());
            let n = tx.count(&t, range).unwrap();
            tx.commit().unwrap();
            let (fwd, mut back) = both_ways(&db, &t, lo, hi);
            back.reverse();
            assert_eq!(fwd, want, "{cfg} {lo:?}..{hi:?}");
            assert_eq!(back, want, "{cfg} {lo:?}..{hi:?} backwards");
            assert_eq!(n, want.len(), "{cfg} count");
        }
    }
}

/// Composite keys (byte keys, some longer than the tree's words): prefix
/// bounds, the key-only form, and a read-only snapshot.
#[test]
fn range_keys_walk_composite_keys_by_prefix() {
    let db = Database::open(Options::default()).unwrap();
    let t = db
        .create_table(
            Schema::new("c")
                .column("a", Type::Int)
                .column("b", Type::Text)
                .column("v", Type::Int)
                .primary_key(&["a", "b"]),
        )
        .unwrap();
    db.run(|tx| {
        for a in 0..20 {
            for b in 0..15 {
                let name = format!("{b:02}{}", "-long".repeat(b % 4));
                tx.insert(&t, row![a, name, a * 100 + b as i64])?;
            }
        }
        Ok(())
    })
    .unwrap();
    let mut ro = db.begin_read_only().unwrap();
    let keys: Vec<_> = ro
        .range_keys(&t, key![7]..=key![8])
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(keys.len(), 30);
    assert_eq!(keys[0], key![7, "00"]);
    assert_eq!(keys[29], key![8, format!("14{}", "-long".repeat(2))]);
    let mut back: Vec<_> = ro
        .range_keys(&t, key![7]..=key![8])
        .unwrap()
        .rev()
        .collect::<Result<_, _>>()
        .unwrap();
    back.reverse();
    assert_eq!(back, keys);
    assert_eq!(ro.count(&t, key![3]..key![5]).unwrap(), 30);
    assert_eq!(ro.count(&t, ..).unwrap(), 300);
}

#[derive(Clone, Debug)]
enum Step {
    Front,
    Back,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any interleaving of `next` and `next_back` returns every row of the
    /// range once: the front's in ascending order, the back's descending,
    /// and the front's all below the back's.
    #[test]
    fn both_ends_meet_without_overlap_or_gap(
        n in 0i64..400,
        lo in 0i64..2_000,
        width in 0i64..4_000,
        deleted in proptest::collection::vec(0i64..400, 0..40),
        steps in proptest::collection::vec(prop_oneof![Just(Step::Front), Just(Step::Back)], 0..500),
    ) {
        let db = Database::open(Options::default()).unwrap();
        let t = tens(&db, n);
        db.run(|tx| {
            for &k in &deleted {
                if k < n {
                    let _ = tx.delete(&t, &key![k * 10]);
                }
            }
            Ok(())
        }).unwrap();
        let mut tx = db.begin().unwrap();
        let want = ints(tx.scan(&t, key![lo]..key![lo + width]).unwrap());
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut it = tx.range(&t, key![lo]..key![lo + width]).unwrap();
        for s in steps.iter().cycle().take(want.len() + 2) {
            let r = match s {
                Step::Front => it.next(),
                Step::Back => it.next_back(),
            };
            let Some(r) = r else { break };
            let k = r.unwrap()[0].as_int().unwrap();
            match s {
                Step::Front => front.push(k),
                Step::Back => back.push(k),
            }
        }
        // Once empty, it stays empty from both ends.
        if front.len() + back.len() == want.len() {
            prop_assert!(it.next().is_none() && it.next_back().is_none());
        }
        drop(it);
        back.reverse();
        front.extend(back);
        if steps.is_empty() {
            prop_assert!(front.is_empty());
        } else {
            prop_assert_eq!(front, want);
        }
    }
}

/// Under the protocols that re-validate scans at commit, a range that
/// stopped after two rows protects the keys up to the second and no
/// further: an insert past it commits beside the scanner, one before it
/// is a phantom. Backwards, the same from the range's end. An iterator
/// that ran dry protects the whole range.
#[test]
fn the_predicate_covers_what_the_iterator_returned() {
    for p in common::protocols_where(common::phantom_check_is_rescan_only) {
        // (how many rows, from which end, the inserted key, a phantom?)
        let cases = [
            (2, false, 55, false),
            (2, false, 15, true),
            (2, true, 55, false),
            (2, true, 95, true),
            (usize::MAX, true, 5, true),
            (usize::MAX, false, 95, true),
            (0, false, 15, false),
        ];
        for (take, rev, insert, phantom) in cases {
            let db = common::db(p);
            let t = tens(&db, 11); // 0, 10, .., 100
            let mut a = db.begin().unwrap();
            let it = a.range(&t, key![1]..key![100]).unwrap();
            let read: Vec<Row> = if rev {
                it.rev().take(take).collect::<Result<_, _>>().unwrap()
            } else {
                it.take(take).collect::<Result<_, _>>().unwrap()
            };
            assert_eq!(read.len(), take.min(9), "{p}");
            a.insert(&t, row![1_000, 0, "a wrote"]).unwrap();
            db.run(|b| b.insert(&t, row![insert, 0, "b"])).unwrap();
            let what = format!("{p}: {take} rows (rev {rev}), insert of {insert}");
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

/// A row the iterator fetched but never returned was not read: a writer
/// may change it, and the scanner still commits (an eager batch read would
/// have put it in MVOCC's and OCC's read sets and under MV2PL's read lock).
#[test]
fn rows_past_where_iteration_stopped_are_never_read() {
    for p in common::protocols_where(common::phantom_check_is_rescan_only) {
        let db = common::db(p);
        let t = tens(&db, 20);
        let mut a = db.begin().unwrap();
        let first: Vec<Row> = a
            .range(&t, ..)
            .unwrap()
            .take(2)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ints(first), [0, 10]);
        a.update(&t, &key![0], &[("v", 1.into())]).unwrap();
        db.run(|b| b.update(&t, &key![50], &[("v", 2.into())]))
            .unwrap_or_else(|e| panic!("{p}: the writer of an unread row: {e}"));
        a.commit()
            .unwrap_or_else(|e| panic!("{p}: the scanner: {e}"));
    }
}

/// A read the protocol refuses ends the iteration with the error, rolls
/// the transaction back, and the iterator returns nothing more.
#[test]
fn a_refused_read_ends_the_iteration() {
    let db = common::db(Protocol::Mv2pl);
    let t = tens(&db, 10);
    let mut holder = db.begin().unwrap();
    holder.update(&t, &key![30], &[("v", 9.into())]).unwrap();
    let mut a = db.begin().unwrap();
    let mut it = a.range(&t, ..).unwrap();
    let mut got = Vec::new();
    let err = loop {
        match it.next().expect("the iteration ends with the refusal") {
            Ok(r) => got.push(r[0].as_int().unwrap()),
            Err(e) => break e,
        }
    };
    assert_eq!(got, [0, 10, 20]);
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert!(it.next().is_none() && it.next_back().is_none());
    drop(it);
    assert!(matches!(a.commit(), Err(Error::TransactionFinished)));
    holder.commit().unwrap();
}

/// A range of a table of another database, or of a dropped table, is a
/// typed error before anything is read.
#[test]
fn a_range_of_a_table_not_open_here_is_refused() {
    let db = common::db(Protocol::SiSsn);
    let other = common::db(Protocol::SiSsn);
    let t = tens(&db, 3);
    let u = tens(&other, 3);
    let mut tx = db.begin().unwrap();
    assert!(matches!(tx.range(&u, ..), Err(Error::Schema(_))));
    assert!(matches!(tx.count(&u, ..), Err(Error::Schema(_))));
    drop(tx);
    db.drop_table("kv").unwrap();
    let mut tx = db.begin().unwrap();
    assert!(matches!(tx.range(&t, ..), Err(Error::TableDropped { .. })));
}

/// A secondary index's range from either end, as `index_scan` returns it.
#[test]
fn index_range_returns_the_index_scan_from_either_end() {
    for kind in IndexKind::ALL {
        let db = Database::open(Options::default().mvpbt_partition_records(16)).unwrap();
        let t = common::kvn_table(&db);
        let idx = db
            .create_index_as("by_v", &t, &["v"], strata::Unique::No, kind)
            .unwrap();
        db.run(|tx| {
            for k in 0..200i64 {
                tx.insert(&t, row![k, (k * 37) % 101, k])?;
            }
            Ok(())
        })
        .unwrap();
        let mut tx = db.begin().unwrap();
        let want = tx.index_scan(&idx, key![10]..key![60]).unwrap();
        let fwd: Vec<Row> = tx
            .index_range(&idx, key![10]..key![60])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut back: Vec<Row> = tx
            .index_range(&idx, key![10]..key![60])
            .unwrap()
            .rev()
            .collect::<Result<_, _>>()
            .unwrap();
        back.reverse();
        assert!(!want.is_empty());
        assert_eq!(fwd, want, "{kind:?}");
        assert_eq!(back, want, "{kind:?} backwards");
        tx.commit().unwrap();
    }
}

/// An iterator that is forgotten (`mem::forget`, safe Rust) instead of
/// dropped still leaves the predicate of what it returned: each end's
/// predicate read is kept current at every step, not recorded on drop.
#[test]
fn a_forgotten_iterator_still_protects_what_it_returned() {
    for p in common::protocols_where(common::phantom_check_is_rescan_only) {
        for (insert, phantom) in [(15, true), (55, false)] {
            let db = common::db(p);
            let t = tens(&db, 11);
            let mut a = db.begin().unwrap();
            let mut it = a.range(&t, key![1]..key![100]).unwrap();
            assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(10));
            assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(20));
            std::mem::forget(it);
            a.insert(&t, row![1_000, 0, "a wrote"]).unwrap();
            db.run(|b| b.insert(&t, row![insert, 0, "b"])).unwrap();
            let r = a.commit();
            assert_eq!(
                matches!(r, Err(Error::Conflict(_))),
                phantom,
                "{p}, insert of {insert}: {r:?}"
            );
        }
    }
}

/// A range pins the epoch inside a step only: ranges forgotten half way
/// (`mem::forget`; from the front, from the back, over a shared snapshot)
/// hold back no reclamation. The version a forgotten range could have
/// read is freed through the epoch once GC unlinks it, which drops its
/// text: the test watches the text's count, a bounded number of times.
/// (With a pin held by the forgotten range the epoch never moves again in
/// the whole process: the count stays, and every other test's deferred
/// frees stop too.)
#[test]
fn a_forgotten_range_holds_back_no_reclamation() {
    let db = Database::open(Options::default().gc_every_commits(1)).unwrap();
    let t = tens(&db, 300);
    let old = Text::new("held by a version the ranges could read");
    db.run(|tx| tx.update(&t, &key![1_500], &[("note", Value::Text(old.clone()))]))
        .unwrap();
    let mut tx = db.begin().unwrap();
    let mut it = tx.range(&t, ..).unwrap();
    assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(0));
    std::mem::forget(it);
    let mut back = tx.range_keys(&t, ..).unwrap().rev();
    assert_eq!(back.next().unwrap().unwrap(), key![2_990]);
    std::mem::forget(back);
    tx.commit().unwrap();
    let snap = db.snapshot().unwrap();
    let mut it = snap.range(&t, key![1_000]..).unwrap();
    assert_eq!(it.next().unwrap().unwrap()[0], Value::Int(1_000));
    std::mem::forget(it);
    drop(snap);
    db.run(|tx| tx.update(&t, &key![1_500], &[("note", Value::from("new"))]))
        .unwrap();
    db.collect_garbage();
    let mut tries = 0;
    while Text::strong_count(&old) > 1 {
        tries += 1;
        assert!(
            tries <= 20_000,
            "the old version was never freed: the epoch stopped"
        );
        crossbeam_epoch::pin().flush();
        db.collect_garbage();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // The forgotten ranges left the transaction and the database usable.
    assert_eq!(db.begin().unwrap().count(&t, ..).unwrap(), 300);
}
