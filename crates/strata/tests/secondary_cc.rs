//! Secondary indexes under concurrency: phantom anomalies on index ranges
//! for every protocol and pointer scheme, and concurrent writers of
//! indexed columns against readers that compare index scans with
//! primary-key reads of the same snapshot. Every scenario runs on both
//! index kinds: today's (`IndexKind::Standard`) and MV-PBT, whose small
//! writable partition freezes often (`PARTITION`).

use crate::common;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use strata::{
    key, row, Database, Error, Index, IndexKind, IndexPointers, Options, Protocol, Schema, Table,
    Transaction, Type, Unique, Value, VersionStorage,
};

/// Every valid (version storage, pointer scheme) pair (physical pointers
/// need append-only storage: N2O, O2N), with each index kind.
type Cfg = (VersionStorage, IndexPointers, IndexKind);

/// MV-PBT partition size here: small, so scans cross frozen partitions.
const PARTITION: usize = 16;

fn schemes() -> Vec<Cfg> {
    let mut out = Vec::new();
    for (s, p) in common::storage_pointer_schemes() {
        for k in IndexKind::ALL {
            out.push((s, p, k));
        }
    }
    out
}

/// `STRATA_SOAK` (see `common::soak`).
fn soak() -> u64 {
    crate::common::soak().into()
}

/// item(id, cat, note) with a non-unique index on cat.
fn setup(p: Protocol, s: Cfg) -> (Database, Table, Index) {
    let (db, t) = open(p, s);
    let mut txn = db.begin().unwrap();
    // Two rows outside both ranges used below ([0, 10) and [10, 20)).
    txn.insert(&t, row![1, 100, "x"]).unwrap();
    txn.insert(&t, row![2, 200, "y"]).unwrap();
    txn.insert(&t, row![3, 5, "in A"]).unwrap();
    txn.commit().unwrap();
    let idx = db
        .create_index_as("by_cat", &t, &["cat"], Unique::No, s.2)
        .unwrap();
    (db, t, idx)
}

/// The database and its empty table `item`.
fn open(p: Protocol, s: Cfg) -> (Database, Table) {
    let db = Database::open(
        Options::default()
            .protocol(p)
            .version_storage(s.0)
            .index_pointers(s.1)
            .mvpbt_partition_records(PARTITION),
    )
    .unwrap();
    let t = db
        .create_table(
            Schema::new("item")
                .column("id", Type::Int)
                .column("cat", Type::Int)
                .column("note", Type::Text)
                .primary_key(&["id"]),
        )
        .unwrap();
    (db, t)
}

fn count(txn: &mut Transaction, idx: &Index, lo: i64, hi: i64) -> Result<i64, Error> {
    txn.index_scan(idx, key![lo]..key![hi])
        .map(|r| r.len() as i64)
}

/// G2 on index predicates: T1 reads cat in [0, 10) and inserts a row with
/// cat 15; T2 reads cat in [10, 20) and inserts a row with cat 5. No serial
/// order explains both reads, so serializable protocols commit one.
#[test]
fn index_range_phantom_by_insert() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut t1 = db.begin().unwrap();
            let mut t2 = db.begin().unwrap();
            let r1 = count(&mut t1, &idx, 0, 10)
                .and_then(|n| t1.insert(&t, row![10, 15, n.to_string()]));
            let r2 = count(&mut t2, &idx, 10, 20)
                .and_then(|n| t2.insert(&t, row![11, 5, n.to_string()]));
            assert_phantom_outcome(
                p,
                s,
                r1.and_then(|_| t1.commit()),
                r2.and_then(|_| t2.commit()),
            );
        }
    }
}

/// The same with updates that move existing rows into the other range (the
/// index entry appears without any insert into the table).
#[test]
fn index_range_phantom_by_update_of_the_indexed_column() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut t1 = db.begin().unwrap();
            let mut t2 = db.begin().unwrap();
            let r1 = count(&mut t1, &idx, 10, 20)
                .and_then(|_| t1.update(&t, &key![1], &[("cat", Value::Int(5))]));
            let r2 = count(&mut t2, &idx, 0, 10)
                .and_then(|_| t2.update(&t, &key![2], &[("cat", Value::Int(15))]));
            assert_phantom_outcome(
                p,
                s,
                r1.and_then(|_| t1.commit()),
                r2.and_then(|_| t2.commit()),
            );
        }
    }
}

/// A row moving *out* of a scanned range is a change to a row the scanner
/// read: T1 counts [0, 10) (row 3) and writes row 1; T2 moves row 3 out of
/// the range and reads row 1. Write skew through an index predicate.
#[test]
fn index_range_write_skew_by_moving_a_row_out() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut t1 = db.begin().unwrap();
            let mut t2 = db.begin().unwrap();
            let r1 = count(&mut t1, &idx, 0, 10)
                .and_then(|n| t1.update(&t, &key![1], &[("note", Value::from(n.to_string()))]));
            let r2 = t2
                .get(&t, &key![1])
                .and_then(|_| t2.update(&t, &key![3], &[("cat", Value::Int(50))]));
            let r1 = r1.and_then(|_| t1.commit());
            let r2 = r2.and_then(|_| t2.commit());
            let committed = r1.is_ok() as u32 + r2.is_ok() as u32;
            if p.is_serializable() {
                // (SSI refused both while it counted edges to an aborted
                // transaction: each is a pivot here.)
                assert_eq!(committed, 1, "{p} {s:?}: {r1:?} {r2:?}");
            } else {
                assert_eq!(committed, 2, "{p} {s:?}");
            }
        }
    }
}

/// An insert that commits after a serializable index scanner committed,
/// into the scanned range, closes a cycle through a third transaction
/// unless the scanner is accounted for (scan records on the index).
/// U reads x; X overwrites x; R reads x and index-scans cat [100, 200)... (see
/// anomalies.rs `late_insert_into_committed_scan_range_is_refused`).
#[test]
fn late_insert_into_committed_index_range_is_refused() {
    for p in common::protocols() {
        if !p.is_serializable() {
            continue;
        }
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut u = db.begin().unwrap();
            let ux = u.get(&t, &key![1]);
            let mut x = db.begin().unwrap();
            let rx = x
                .update(&t, &key![1], &[("note", Value::from("x2"))])
                .and_then(|_| x.commit());
            let mut r = db.begin().unwrap();
            let rr = r
                .get(&t, &key![1])
                .and_then(|_| count(&mut r, &idx, 1000, 2000))
                .and_then(|_| r.update(&t, &key![2], &[("note", Value::from("r"))]))
                .and_then(|_| r.commit());
            let ru = ux
                .and_then(|_| u.insert(&t, row![9, 1500, "u"]))
                .and_then(|_| u.commit());
            let all = rx.is_ok() && rr.is_ok() && ru.is_ok();
            assert!(!all, "{p} {s:?}: the cycle U -> X -> R -> U committed");
        }
    }
}

/// T2 reads row 1, inserts a row into cat [0, 10) and commits after T1
/// began; T1 then scans [0, 10) (without T2's row: snapshot) and overwrites
/// row 1. T1 -rw-> T2 (the predicate) and T2 -rw-> T1 (row 1): a cycle
/// unless the entry of a row invisible to the scanner counts as a phantom.
#[test]
fn index_entry_of_an_insert_after_the_snapshot_is_a_phantom() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut t1 = db.begin().unwrap();
            let mut t2 = db.begin().unwrap();
            let r2 = t2
                .get(&t, &key![1])
                .and_then(|_| t2.insert(&t, row![10, 5, "t2"]))
                .and_then(|_| t2.commit());
            let seen = count(&mut t1, &idx, 0, 10);
            let r1 = seen
                .clone()
                .and_then(|n| t1.update(&t, &key![1], &[("note", Value::from(n.to_string()))]))
                .and_then(|_| t1.commit());
            let committed = r1.is_ok() as u32 + r2.is_ok() as u32;
            if common::reads_newest_data(p) {
                // MV2PL and OCC read the newest data: T1 sees T2's row (T2,
                // T1 is the serial order) and both may commit.
                assert_eq!(seen, Ok(2), "{p} {s:?}");
                assert_eq!(committed, 2, "{p} {s:?}: {r1:?} {r2:?}");
            } else if p.is_serializable() {
                assert_eq!(committed, 1, "{p} {s:?}: {r1:?} {r2:?}");
            } else {
                assert_eq!(committed, 2, "{p} {s:?}");
            }
        }
    }
}

/// Read skew with a predicate, through a secondary index: T1 reads rows 1
/// and 2 and scans the index on `cat` over a range holding them; T2 then
/// updates both rows' `cat` (within the range) and commits; T1 commits.
/// T1 read everything before T2 (serial order T1, T2), so it commits under
/// every protocol (MV2PL: T1's read locks refuse T2 instead) but MVOCC,
/// whose validation of T1's reads refuses it (the study's MVOCC validates
/// every committer not begun READ ONLY, Wu et al. §3.2). The new
/// entries belong to rows T1 read: changes its read tracking catches, not
/// phantoms. SSN and SSI refused T1 at validation (the same scenario
/// through the primary key committed).
///
/// Second part: the rows move *into* the scanned range from outside it,
/// after T1 read them by key. Under the snapshot protocols those reads
/// track the rows, so that is no phantom either.
#[test]
fn index_scan_of_rows_read_before_an_update_of_their_key_is_no_phantom() {
    for p in common::protocols() {
        for s in schemes() {
            for (lo, hi, new_cat) in [(0, 1000, [150, 160]), (0, 50, [20, 30])] {
                let (db, t, idx) = setup(p, s);
                let mut t1 = db.begin().unwrap();
                let x = t1.get(&t, &key![1]).unwrap().unwrap();
                let y = t1.get(&t, &key![2]).unwrap().unwrap();
                assert_eq!((&x[1], &y[1]), (&Value::Int(100), &Value::Int(200)));
                let before = count(&mut t1, &idx, lo, hi).unwrap();
                let mut t2 = db.begin().unwrap();
                let r2 = t2
                    .update(&t, &key![1], &[("cat", Value::Int(new_cat[0]))])
                    .and_then(|_| t2.update(&t, &key![2], &[("cat", Value::Int(new_cat[1]))]))
                    .and_then(|_| t2.commit());
                if !common::reads_are_consistent_while_open(p) {
                    // OCC: no snapshot to serialize T1 before T2. T2
                    // overwrote rows T1 read before T1 validated: T1 is
                    // refused, whatever its second scan saw (ERMIA §1).
                    let _ = count(&mut t1, &idx, lo, hi);
                    let r1 = t1.commit();
                    let what = format!("{p} {s:?} [{lo}, {hi}): T1 {r1:?} T2 {r2:?}");
                    assert!(
                        matches!(r1, Err(Error::Conflict(strata::ConflictKind::Validation))),
                        "{what}"
                    );
                    assert_eq!(r2, Ok(()), "{what}");
                    continue;
                }
                // The scan is repeatable within T1.
                assert_eq!(count(&mut t1, &idx, lo, hi), Ok(before), "{p} {s:?}");
                let r1 = t1.commit();
                let what = format!("{p} {s:?} [{lo}, {hi}): T1 {r1:?} T2 {r2:?}");
                if common::validates_read_sets_of_readers(p) {
                    // MVOCC validates T1's reads although it wrote nothing
                    // (Wu et al. §3.2): T2 overwrote rows 1 and 2.
                    assert!(
                        matches!(r1, Err(Error::Conflict(strata::ConflictKind::Validation))),
                        "{what}"
                    );
                } else {
                    assert_eq!(r1, Ok(()), "{what}");
                }
                match p {
                    Protocol::Mv2pl => assert!(
                        matches!(r2, Err(Error::Conflict(strata::ConflictKind::ReadLock))),
                        "{what}"
                    ),
                    _ => assert_eq!(r2, Ok(()), "{what}"),
                }
            }
        }
    }
}

/// A table `m(k, u)` with a unique index on `u` (MV-PBT partitions of 3
/// records, as in `tests/model_secondary.rs`) and GC after every commit.
fn unique_u_collected_at_once(p: Protocol, s: Cfg) -> (Database, Table, Index) {
    let db = Database::open(
        Options::default()
            .protocol(p)
            .version_storage(s.0)
            .index_pointers(s.1)
            .mvpbt_partition_records(3)
            .gc_every_commits(1)
            .gc_interval(None),
    )
    .unwrap();
    let t = db
        .create_table(
            Schema::new("m")
                .column("k", Type::Int)
                .column("u", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    let by_u = db
        .create_index_as("by_u", &t, &["u"], Unique::Yes, s.2)
        .unwrap();
    (db, t, by_u)
}

/// A key inserted and deleted by one transaction (GC unlinks the row at
/// once), then read as absent through a unique index and inserted again by
/// a transaction running alone: it commits. (MV-PBT's commit check took the
/// identity's newest record, our own insert's, for the row to check: our
/// new row, which the lookup had not read, so a phantom. A partition of 3
/// records, as in `tests/model_secondary.rs`, which found it.)
#[test]
fn a_key_deleted_then_inserted_again_alone_is_no_phantom() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, by_u) = unique_u_collected_at_once(p, s);
            let mut t1 = db.begin().unwrap();
            t1.insert(&t, row![1, 3]).unwrap();
            t1.insert(&t, row![2, 0]).unwrap();
            t1.delete(&t, &key![1]).unwrap();
            t1.commit().unwrap();
            let mut t2 = db.begin().unwrap();
            assert_eq!(t2.index_get(&by_u, &key![3]), Ok(vec![]), "{p} {s:?}");
            t2.insert(&t, row![1, 3]).unwrap();
            assert_eq!(t2.commit(), Ok(()), "{p} {s:?}");
            let mut r = db.begin().unwrap();
            assert_eq!(
                r.index_get(&by_u, &key![3]),
                Ok(vec![row![1, 3]]),
                "{p} {s:?}"
            );
        }
    }
}

/// A row once in the scanned range is deleted and unlinked; a lookup finds
/// nothing there and the same transaction inserts a new row elsewhere,
/// which may get the unlinked row's tuple id. The old row's index record
/// names that id, but it is of a row gone before the snapshot: no phantom,
/// the transaction running alone commits. (`tests/model_secondary.rs`
/// found it once the collector's frees ran sooner: the commit check took
/// the record for a phantom of the new row.)
#[test]
fn a_reused_tuple_id_is_no_phantom_of_its_old_rows_records() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, by_u) = unique_u_collected_at_once(p, s);
            let mut t1 = db.begin().unwrap();
            t1.insert(&t, row![1, 3]).unwrap();
            t1.insert(&t, row![4, 0]).unwrap();
            t1.delete(&t, &key![1]).unwrap();
            t1.commit().unwrap();
            let mut t2 = db.begin().unwrap();
            t2.delete(&t, &key![4]).unwrap();
            t2.commit().unwrap();
            // Unlink the deleted rows and free their tuple ids.
            for _ in 0..4 {
                db.collect_garbage();
            }
            let mut t3 = db.begin().unwrap();
            assert_eq!(t3.index_get(&by_u, &key![3]), Ok(vec![]), "{p} {s:?}");
            t3.insert(&t, row![0, 0]).unwrap();
            assert_eq!(t3.commit(), Ok(()), "{p} {s:?}");
            let mut r = db.begin().unwrap();
            assert_eq!(r.index_get(&by_u, &key![0]), Ok(vec![row![0, 0]]));
            assert_eq!(r.index_get(&by_u, &key![3]), Ok(vec![]));
        }
    }
}

/// The order reversed: T1 scans cat [0, 50), T2 moves row 1 into it and
/// commits, then T1 reads row 1. Snapshot protocols read the old row 1
/// (T1 before T2) and commit (MVOCC: is then refused by the validation of
/// its reads, which the study's MVOCC runs for every committer not begun
/// READ ONLY). MV2PL and OCC read the newest row 1, in the
/// range their scan did not show: T1 must not commit. (A read *after* the
/// change is why their other reads do not excuse a new entry, unlike the
/// snapshot protocols' in the test above.)
#[test]
fn row_moved_into_a_scanned_range_then_read_is_a_phantom_where_reads_are_newest() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut t1 = db.begin().unwrap();
            assert_eq!(count(&mut t1, &idx, 0, 50), Ok(1));
            db.run(|x| x.update(&t, &key![1], &[("cat", Value::Int(20))]))
                .unwrap();
            let cat = t1.get(&t, &key![1]).unwrap().unwrap()[1].clone();
            let r1 = t1.commit();
            if common::reads_newest_data(p) {
                assert_eq!(cat, Value::Int(20), "{p} {s:?}");
                assert!(
                    matches!(r1, Err(Error::Conflict(strata::ConflictKind::Validation))),
                    "{p} {s:?}: {r1:?}"
                );
            } else if common::validates_read_sets_of_readers(p) {
                // MVOCC: the old row 1 from its snapshot, but a committer
                // that wrote nothing is validated too (Wu et al. §3.2).
                assert_eq!(cat, Value::Int(100), "{p} {s:?}");
                assert!(
                    matches!(r1, Err(Error::Conflict(strata::ConflictKind::Validation))),
                    "{p} {s:?}: {r1:?}"
                );
            } else {
                assert_eq!(cat, Value::Int(100), "{p} {s:?}");
                assert_eq!(r1, Ok(()), "{p} {s:?}");
            }
        }
    }
}

/// The true phantom next to it: T1 scans the index range and writes row 3
/// (a row it scanned); T2 reads row 3 and moves row 4, which T1 never read,
/// into the range, and commits first. T1 -rw-> T2 (the predicate) and
/// T2 -rw-> T1 (row 3): serializable protocols commit exactly one.
#[test]
fn index_scan_refuses_a_row_it_did_not_read_moving_into_the_range() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            db.run(|x| x.insert(&t, row![4, 5000, "out"])).unwrap();
            let mut t1 = db.begin().unwrap();
            t1.get(&t, &key![1]).unwrap();
            t1.get(&t, &key![2]).unwrap();
            let seen = count(&mut t1, &idx, 0, 1000);
            let mut t2 = db.begin().unwrap();
            let r2 = t2
                .get(&t, &key![3])
                .and_then(|_| t2.update(&t, &key![4], &[("cat", Value::Int(500))]))
                .and_then(|_| t2.commit());
            let r1 = seen
                .and_then(|n| t1.update(&t, &key![3], &[("note", Value::from(n.to_string()))]))
                .and_then(|_| t1.commit());
            assert_phantom_outcome(p, s, r1, r2);
        }
    }
}

/// Within one snapshot a repeated index scan returns the same rows.
#[test]
fn repeated_index_scan_sees_no_phantom_rows() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut ro = db.begin_read_only().unwrap();
            assert_eq!(count(&mut ro, &idx, 0, 10).unwrap(), 1);
            db.run(|x| x.insert(&t, row![20, 6, "new"])).unwrap();
            db.run(|x| x.update(&t, &key![1], &[("cat", Value::Int(7))]))
                .unwrap();
            assert_eq!(count(&mut ro, &idx, 0, 10).unwrap(), 1, "{p} {s:?}");
            let mut fresh = db.begin_read_only().unwrap();
            assert_eq!(count(&mut fresh, &idx, 0, 10).unwrap(), 3, "{p} {s:?}");
        }
    }
}

/// A scan's own rows are no phantoms of it when the commit re-scans its
/// range (another transaction's entry elsewhere in the index moved the
/// index's count of additions, so SSN and SSI re-scan too; MVOCC and
/// MV2PL always do): the scanner, which read three rows of [0, 10) and
/// writes a row outside it, commits on every protocol and scheme (the
/// phantoms themselves: `index_range_phantom_by_insert` and the tests
/// after it). (A standard index that never held a stale
/// entry keeps no identities of its rows: re-validation excuses their
/// entries by the rows read, `cc::predicate::accounted_rows`.)
#[test]
fn a_scans_own_rows_are_no_phantoms_when_its_range_is_re_scanned() {
    for p in common::protocols() {
        for s in schemes() {
            // The index first, then the rows: no back-fill, so the index
            // never holds a stale entry (`SecondaryIndex::may_be_stale`).
            let (db, t) = open(p, s);
            let idx = db
                .create_index_as("by_cat", &t, &["cat"], Unique::No, s.2)
                .unwrap();
            db.run(|x| {
                x.insert(&t, row![1, 100, "x"])?;
                x.insert(&t, row![3, 5, "in A"])?;
                x.insert(&t, row![4, 6, "in A"])?;
                x.insert(&t, row![5, 7, "in A"])
            })
            .unwrap();
            let mut scanner = db.begin().unwrap();
            assert_eq!(count(&mut scanner, &idx, 0, 10).unwrap(), 3, "{p} {s:?}");
            let mut other = db.begin().unwrap();
            let elsewhere = other
                .insert(&t, row![30, 15, "elsewhere"])
                .and_then(|_| other.commit());
            assert!(elsewhere.is_ok(), "{p} {s:?}: {elsewhere:?}");
            scanner.insert(&t, row![31, 16, "mine"]).unwrap();
            let r = scanner.commit();
            assert!(r.is_ok(), "{p} {s:?}: its own rows refused it: {r:?}");
        }
    }
}

/// `index_scan_limit` / `index_scan_while`: the first rows in index order,
/// read-write (through the protocol) and read-only (MV-PBT: from its
/// records), on every scheme.
#[test]
fn limited_index_scans_return_the_first_rows_in_index_order() {
    let ids =
        |rows: &[Vec<Value>]| -> Vec<i64> { rows.iter().map(|r| r[0].as_int().unwrap()).collect() };
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            db.run(|x| {
                for (id, cat) in [(4, 30), (5, 10), (6, 20), (7, 10)] {
                    x.insert(&t, row![id, cat, "z"])?;
                }
                Ok(())
            })
            .unwrap();
            let case = format!("{p} {s:?}");
            let mut rw = db.begin().unwrap();
            rw.insert(&t, row![8, 15, "own"]).unwrap();
            // cat 10 (ids 5, 7), 15 (own 8), 20, 30; 5 is below the range.
            let got = rw.index_scan_limit(&idx, key![6]..key![100], 3).unwrap();
            assert_eq!(ids(&got), vec![5, 7, 8], "{case}");
            assert_eq!(
                rw.index_scan_limit(&idx, key![6]..key![100], 50).unwrap(),
                rw.index_scan(&idx, key![6]..key![100]).unwrap(),
                "{case}"
            );
            assert!(
                rw.index_scan_limit(&idx, .., 0).unwrap().is_empty(),
                "{case}"
            );
            let mut seen = Vec::new();
            let n = rw
                .index_scan_while(&idx, key![11].., |r| {
                    seen.push(r[0].as_int().unwrap());
                    if r[1] == Value::Int(20) {
                        std::ops::ControlFlow::Break(())
                    } else {
                        std::ops::ControlFlow::Continue(())
                    }
                })
                .unwrap();
            assert_eq!((n, seen), (2, vec![8, 6]), "{case}");
            rw.commit().unwrap();
            let mut ro = db.begin_read_only().unwrap();
            let got = ro.index_scan_limit(&idx, key![11]..key![100], 2).unwrap();
            assert_eq!(ids(&got), vec![8, 6], "{case}");
            ro.commit().unwrap();
        }
    }
}

/// A limited index scan protects the index keys it read and no more (the
/// index form of `anomalies.rs`'s `limited_scan_protects_only_the_keys_it_read`):
/// T1 reads the first row with cat in [6, 100) (cat 10) and inserts
/// elsewhere; T2 inserts a row with cat 50 (past T1's stop: both commit) or
/// cat 8 (before it: a protocol that validates scans refuses T1); read to
/// the end, cat 50 is a phantom too.
#[test]
fn limited_index_scan_protects_only_the_keys_it_read() {
    for p in common::protocols() {
        for s in schemes() {
            for (limit, cat, refused) in [(1, 50, false), (1, 8, true), (10, 50, true)] {
                let (db, t, idx) = setup(p, s);
                db.run(|x| {
                    x.insert(&t, row![4, 10, "z"])
                        .and_then(|_| x.insert(&t, row![5, 20, "z"]))
                })
                .unwrap();
                let mut t1 = db.begin().unwrap();
                let seen = t1
                    .index_scan_limit(&idx, key![6]..key![100], limit)
                    .unwrap();
                assert_eq!(seen.len(), limit.min(2), "{p} {s:?}");
                let mut t2 = db.begin().unwrap();
                let r2 = t2.insert(&t, row![50, cat, "t2"]).and_then(|_| t2.commit());
                let r1 = t1
                    .insert(&t, row![60, 1000, "t1"])
                    .and_then(|_| t1.commit());
                let both = r1.is_ok() && r2.is_ok();
                let validates = p.is_serializable() && p != Protocol::Mvto;
                let case = format!("{p} {s:?}: limit {limit}, cat {cat}: {r1:?} {r2:?}");
                assert_eq!(!both, refused && validates, "{case}");
            }
        }
    }
}

/// Write skew over two index keys read as absent, one of them through an
/// index entry whose row has no visible version: the entry of an insert
/// that then aborts, or of a row deleted (and, with GC after every commit,
/// unlinked) before the snapshot. The secondary-index form of
/// `anomalies.rs::write_skew_through_an_aborted_insert_is_prevented`: the
/// reader finds the entry, no row behind it, and reads the key as absent;
/// another transaction then inserts a row with that key (another tuple,
/// so no write of the entry's row is ever seen) after reading as absent
/// the key the reader goes on to insert. Serializable protocols commit at
/// most one, for every pointer scheme and index kind, unique or not.
#[test]
fn write_skew_through_an_index_entry_without_a_visible_row_is_prevented() {
    let mut checked = BTreeMap::new();
    for p in common::protocols() {
        for s in schemes() {
            for unique in [Unique::No, Unique::Yes] {
                for deleted in [false, true] {
                    let c = format!("{p} {s:?} {unique:?} deleted={deleted}");
                    let (db, t, idx) = unique_u_collected_at_once(p, s);
                    let idx = if unique == Unique::Yes {
                        idx
                    } else {
                        db.create_index_as("by_u_dup", &t, &["u"], Unique::No, s.2)
                            .unwrap()
                    };
                    // The entry for u = 15 whose row no snapshot below sees.
                    let mut ghost = db.begin().unwrap();
                    ghost.insert(&t, row![50, 15]).unwrap();
                    let ghost = if deleted {
                        ghost.commit().unwrap();
                        db.run(|x| x.delete(&t, &key![50])).unwrap();
                        None
                    } else {
                        Some(ghost)
                    };
                    let mut reader = db.begin().unwrap();
                    let read = reader.index_get(&idx, &key![15]);
                    // Pinned until the end, so that the ghost's tuple id is
                    // not handed to the inserts below (a reuse would fail
                    // validation by chance, not by design).
                    let pin = crossbeam_epoch::pin();
                    if let Some(ghost) = ghost {
                        ghost.abort();
                    }
                    match read {
                        Ok(rows) if rows.is_empty() => {}
                        // An insert's lock (MV2PL) or an older writer's
                        // pending version (MVTO) refuses the read: nothing
                        // to skew.
                        Err(Error::Conflict(_)) => continue,
                        other => panic!("{c}: {other:?}"),
                    }
                    let mut writer = db.begin().unwrap();
                    let writer_done = writer.index_get(&idx, &key![16]).and_then(|seen| {
                        assert!(seen.is_empty(), "{c}");
                        writer.insert(&t, row![51, 15])?;
                        writer.commit()
                    });
                    let reader_done = reader
                        .insert(&t, row![52, 16])
                        .and_then(|_| reader.commit());
                    drop(pin);
                    *checked.entry(p.to_string()).or_insert(0) += 1;
                    if p.is_serializable() {
                        assert!(
                            writer_done.is_err() || reader_done.is_err(),
                            "{c}: write skew: each read as absent the index key the other inserted"
                        );
                    } else {
                        assert_eq!((writer_done, reader_done), (Ok(()), Ok(())), "{c}");
                    }
                }
            }
        }
        // Refused reads end a case early; the deleted row's entry reaches
        // the skew under every protocol.
        assert!(
            checked.get(&p.to_string()).is_some_and(|&n| n >= 2),
            "{p}: {checked:?}"
        );
    }
}

/// Read-write index scans while a writer updates a column the index does
/// not hold: every row stays in the range, so each scan must return every
/// row of it, once. Under physical pointers each update adds an entry for
/// its version, and where a read-write read sees the newest committed
/// version (MV2PL, OCC) that version can change during the scan: a scan
/// that decided entry by entry could pass the place where a writer's entry
/// for its new version then went in (entries sort by version address),
/// reach the old version's entry after the writer committed, read the new
/// version there, and lose the row.
/// The history checker found it (a G-single in
/// `verify::predicate_through_secondary_indexes_with_physical_pointers`,
/// about 3 runs in 4 at `STRATA_SOAK=3`); the other tests' read-write scans
/// skip the protocols that read the newest data.
#[test]
fn index_scans_return_every_row_while_its_other_columns_change() {
    const ROWS: std::ops::Range<i64> = 10..42;
    let scans = 120 * soak();
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            db.run(|x| ROWS.clone().try_for_each(|k| x.insert(&t, row![k, 7, "a"])))
                .unwrap();
            let updates = std::sync::atomic::AtomicU64::new(0);
            let done = AtomicBool::new(false);
            let mut wrong = None;
            std::thread::scope(|sc| {
                let (db, t, updates, done) = (&db, &t, &updates, &done);
                sc.spawn(move || {
                    let mut i = 0i64;
                    while !done.load(Ordering::SeqCst) {
                        let k = ROWS.start + i % (ROWS.end - ROWS.start);
                        let note = Value::from(i.to_string());
                        if db
                            .run(|x| x.update(t, &key![k], &[("note", note.clone())]))
                            .is_ok()
                        {
                            updates.fetch_add(1, Ordering::SeqCst);
                        }
                        i += 1;
                    }
                });
                let mut done_scans = 0;
                // Both sides run a while: scans, and updates between them.
                while done_scans < scans || updates.load(Ordering::SeqCst) < scans {
                    let mut x = db.begin().unwrap();
                    let Ok(rows) = x.index_scan(&idx, key![7]..key![8]) else {
                        continue;
                    };
                    let ids: Vec<i64> = rows.iter().map(|r| r[0].as_int().unwrap()).collect();
                    if x.commit().is_ok() {
                        if ids != ROWS.collect::<Vec<_>>() {
                            wrong.get_or_insert(ids);
                            break;
                        }
                        done_scans += 1;
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
            assert_eq!(
                wrong, None,
                "{p} {s:?}: a committed scan returned these rows"
            );
        }
    }
}

/// A row that moves behind a running index scan, to a key the scan has
/// passed (or, MV-PBT, did not list: its read-write scan lists the range's
/// identities before it reads a row), is still in the range: a scan that
/// commits must return it, under its old key or its new one. T1 scans cat
/// in [0, 1000); while it hands over row 3 (cat 5, the first), T2 moves
/// row 2 from cat 200 to cat 1 and commits. Then T1 reaches row 2's old
/// entry (or record): where a read sees the newest committed data (MV2PL,
/// OCC) it reads cat 1 there, not this entry's key, and skips the row; the
/// scan returns rows 3 and 1. Its commit re-validation used to excuse the
/// row's new entry as "a change to a row we read", though the change came
/// before the read, and T1 committed having lost row 2. The history
/// checker found the MV-PBT form (a G-single and an internal read in
/// `verify::predicate_through_secondary_indexes_with_physical_pointers`,
/// about one run in 20 at `STRATA_SOAK=3`): the scan read a tuple id named
/// by an old record of a deleted row, since given to a row inserted
/// after the scan listed the range.
#[test]
fn a_row_moved_behind_a_running_index_scan_is_not_lost() {
    for p in common::protocols() {
        for s in schemes() {
            let (db, t, idx) = setup(p, s);
            let mut t1 = db.begin().unwrap();
            let mut ids = Vec::new();
            let mut moved = None;
            let scanned = t1.index_scan_while(&idx, key![0]..key![1000], |r| {
                ids.push(r[0].as_int().unwrap());
                if moved.is_none() {
                    moved = Some(db.run(|x| x.update(&t, &key![2], &[("cat", Value::Int(1))])));
                }
                std::ops::ControlFlow::Continue(())
            });
            assert_eq!(
                moved,
                Some(Ok(())),
                "{p} {s:?}: row 2 moves during the scan"
            );
            let r1 = scanned.and_then(|_| t1.commit());
            if r1.is_ok() {
                ids.sort_unstable();
                assert_eq!(ids, [1, 2, 3], "{p} {s:?}: a committed scan lost a row");
            } else {
                assert!(
                    matches!(r1, Err(Error::Conflict(_))),
                    "{p} {s:?}: refused by a conflict: {r1:?}"
                );
            }
        }
    }
}

/// MVTO's phantom protection for index ranges: a scan raises the index's
/// predicate timestamp, and a writer that adds an entry then checks it, so
/// a younger scan either meets the entry (and refuses to read past an
/// older running writer) or the older writer is refused. W inserts a row
/// with a new key, then keeps updating it (its own uncommitted version)
/// while younger transactions scan that key. Under physical pointers each
/// update re-keys the row's entry to the new version: the old entry went
/// before the new one was in, and the new one was never checked. A scan in
/// between found no entry, saw nothing and committed; W, older, then
/// committed the row the scan should have seen. The history checker found
/// it (a G2-predicate in
/// `verify::predicate_through_secondary_indexes_with_physical_pointers`,
/// Standard index, MVTO: a list inserted and appended to again in one
/// transaction). W's other rows (`FILLER`, outside the range) make each
/// re-key walk a long list of entries between the removal and the insert,
/// so scans land there often. Each round ends at the first scan that
/// commits without the row, once W is refused, or after `UPDATES` of W's.
/// (Only physical pointers re-key entries; MV-PBT changes its records in
/// place.)
#[test]
fn a_younger_index_scan_never_misses_an_older_writers_row_it_keeps_updating() {
    const ROUNDS: i64 = 10;
    const UPDATES: u64 = 5_000;
    const FILLER: i64 = 4_000;
    let physical = schemes()
        .into_iter()
        .filter(|s| s.1 == IndexPointers::Physical && s.2 == IndexKind::Standard);
    for s in physical {
        let (db, t, idx) = setup(Protocol::Mvto, s);
        for round in 0..ROUNDS {
            let (id, cat) = (10_000 * (round + 1), 1000 + round);
            let mut w = db.begin().unwrap();
            w.insert(&t, row![id, cat, "w"]).unwrap();
            for i in 1..=FILLER {
                w.insert(&t, row![id + i, -1, "filler"]).unwrap();
            }
            let updates = std::sync::atomic::AtomicU64::new(0);
            let stop = AtomicBool::new(false);
            let (missed, wrote) = std::thread::scope(|sc| {
                let (t, updates, stop) = (&t, &updates, &stop);
                let writer = sc.spawn(move || {
                    while !stop.load(Ordering::SeqCst) && updates.load(Ordering::SeqCst) < UPDATES {
                        let note = Value::from(updates.load(Ordering::SeqCst).to_string());
                        w.update(t, &key![id], &[("note", note)])?;
                        updates.fetch_add(1, Ordering::SeqCst);
                    }
                    w.commit()
                });
                let mut missed = false;
                while !writer.is_finished() {
                    let mut x = db.begin().unwrap();
                    // An error: the scan met the running writer's row.
                    let Ok(rows) = x.index_scan(&idx, key![cat]..key![cat + 1]) else {
                        continue;
                    };
                    if rows.is_empty() && x.commit().is_ok() {
                        missed = true;
                        break;
                    }
                }
                stop.store(true, Ordering::SeqCst);
                (missed, writer.join().unwrap())
            });
            assert!(
                !(missed && wrote.is_ok()),
                "{s:?}, round {round}: a younger scan saw no row at cat {cat} (after {} of the \
                 writer's updates), and the older writer that inserted it committed",
                updates.load(Ordering::SeqCst)
            );
        }
    }
}

/// Two transactions that each read the range the other writes into:
/// serializable protocols commit exactly one, SI commits both. The one
/// refused is refused by a conflict (any reason): another error (a schema
/// error, a missing row) would be a defect that only looks like a refusal.
fn assert_phantom_outcome(p: Protocol, s: Cfg, r1: Result<(), Error>, r2: Result<(), Error>) {
    let committed = r1.is_ok() as u32 + r2.is_ok() as u32;
    if p.is_serializable() {
        assert_eq!(committed, 1, "{p} {s:?}: {r1:?} {r2:?}");
        let lost = if r1.is_err() { &r1 } else { &r2 };
        assert!(
            matches!(lost, Err(Error::Conflict(_))),
            "{p} {s:?}: the refused side must fail by a conflict: {r1:?} {r2:?}"
        );
    } else {
        assert_eq!(committed, 2, "{p} {s:?}: SI allows the phantom");
    }
}

/// Writers move rows between index keys (and insert and delete) while
/// readers check, in one snapshot, that the index and the primary key agree.
#[test]
fn concurrent_index_scans_agree_with_primary_reads() {
    concurrent_agreement(
        schemes()
            .into_iter()
            .filter(|s| s.1 != IndexPointers::Physical)
            .collect(),
    );
}

/// The same with physical pointers. This failed about one run in four
/// (issue 4): an index scan returned a row twice, once from an orphan
/// second row with the same primary key that a lost race in the primary
/// index's insert had let commit (see
/// `racing_inserts_of_one_new_key_make_one_row`). Kept as its own test so
/// a regression names the scheme.
#[test]
fn concurrent_index_scans_agree_with_primary_reads_physical() {
    concurrent_agreement(
        schemes()
            .into_iter()
            .filter(|s| s.1 == IndexPointers::Physical)
            .collect(),
    );
}

/// Some writers update a row twice in one transaction (the second write
/// replaces their own version). On time-travel and delta that once made
/// GC spin for good: its stale-entry pre-filter read an uncommitted head
/// through the master while its writer replaced it (`index/pointers.rs`,
/// `surviving_keys`).
fn concurrent_agreement(schemes: Vec<Cfg>) {
    for s in schemes {
        // The default storage gets the long run; the others a shorter one
        // (STRATA_SOAK scales both).
        let rounds = if s.0 == VersionStorage::AppendNewToOld {
            20_000
        } else {
            5_000
        } * soak();
        // A read-write transaction's two scans must agree before it
        // commits: not so where readers lock the newest data instead of
        // reading a snapshot (MV2PL: a row inserted between the two scans
        // is a phantom that only its commit-time validation refuses).
        for p in common::protocols_where(|p| !common::readers_lock(p)) {
            // The default protocol gets the long run, the others a quarter.
            let rounds = if p == common::default_protocol() {
                rounds
            } else {
                rounds / 4
            };
            let db = Database::open(
                Options::default()
                    .protocol(p)
                    .version_storage(s.0)
                    .index_pointers(s.1)
                    .mvpbt_partition_records(PARTITION),
            )
            .unwrap();
            let t = common::kvn_table(&db);
            let mut txn = db.begin().unwrap();
            for k in 0..32 {
                txn.insert(&t, row![k, k % 8, 0]).unwrap();
            }
            txn.commit().unwrap();
            let idx = db
                .create_index_as("by_v", &t, &["v"], Unique::No, s.2)
                .unwrap();
            let done = AtomicBool::new(false);
            std::thread::scope(|sc| {
                for w in 0..2i64 {
                    let (db, t, done) = (&db, &t, &done);
                    sc.spawn(move || {
                        let mut x = 12345u64 + w as u64;
                        for i in 0..rounds as i64 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let k = (x % 40) as i64;
                            let v = ((x >> 8) % 8) as i64;
                            let r = db.run(|txn| match (x >> 16) % 8 {
                                0 => match txn.insert(t, row![k, v, i]) {
                                    Err(Error::DuplicateKey { .. }) => txn.delete(t, &key![k]),
                                    r => r,
                                },
                                1 => txn.update(t, &key![k], &[("n", Value::Int(i))]),
                                // Two writes of one row: the second replaces
                                // our own version (physical entries re-keyed).
                                2 => txn
                                    .update(t, &key![k], &[("v", Value::Int((v + 3) % 8))])
                                    .and_then(|()| {
                                        txn.update(t, &key![k], &[("v", Value::Int(v))])
                                    }),
                                _ => txn.update(t, &key![k], &[("v", Value::Int(v))]),
                            });
                            assert!(matches!(r, Ok(()) | Err(Error::NotFound { .. })), "{r:?}");
                        }
                        done.store(true, Ordering::SeqCst);
                    });
                }
                let (db, t, idx, done) = (&db, &t, &idx, &done);
                sc.spawn(move || {
                    let mut checks = 0;
                    while !done.load(Ordering::SeqCst) || checks < 20 {
                        let mut ro = db.begin_read_only().unwrap();
                        agree(&mut ro, t, idx, p, s);
                        drop(ro);
                        // A read-write snapshot too (its own reads are
                        // tracked). Not where reads see the newest data
                        // (OCC): its two scans are two moments, and only
                        // its commit-time validation refuses a difference.
                        if !common::reads_newest_data(p) {
                            let mut rw = db.begin().unwrap();
                            agree(&mut rw, t, idx, p, s);
                            let _ = rw.commit();
                        }
                        checks += 1;
                    }
                });
            });
            db.collect_garbage();
            db.collect_garbage();
            let mut ro = db.begin_read_only().unwrap();
            agree(&mut ro, &t, &idx, p, s);
            let rows = ro.scan(&t, ..).unwrap().len() as u64;
            drop(ro);
            db.collect_garbage();
            if s.2 == IndexKind::MvPbt {
                // Records go at a freeze (and merge), not at a GC pass.
                db.freeze_index(&idx).unwrap();
            }
            let st = db.stats();
            // After GC only the current key of each row remains.
            assert_eq!(st.secondary_index_entries, rows, "{p} {s:?}: {st:?}");
            // GC's index cleanup visits each version a bounded number of
            // times. It once walked every newer version of a row for each
            // queued write of it: hundreds of steps per version reclaimed at
            // STRATA_SOAK=1 and more the longer the run (issue 12: the soak
            // run never finished).
            assert!(
                st.gc_index_steps <= 8 * st.versions_reclaimed + 1_000,
                "{p} {s:?}: {st:?}"
            );
        }
    }
}

/// Index scan == primary scan filtered, in index order, in one snapshot.
fn agree(txn: &mut Transaction, t: &Table, idx: &Index, p: Protocol, s: Cfg) {
    let Ok(all) = txn.scan(t, ..) else { return };
    let mut by_v: BTreeMap<(i64, i64), Vec<Value>> = BTreeMap::new();
    for r in all {
        by_v.insert((r[1].as_int().unwrap(), r[0].as_int().unwrap()), r);
    }
    let want: Vec<Vec<Value>> = by_v.values().cloned().collect();
    let Ok(got) = txn.index_scan(idx, ..) else {
        return;
    };
    assert_eq!(got, want, "{p} {s:?}: full index scan");
    let Ok(got) = txn.index_scan(idx, key![2]..=key![4]) else {
        return;
    };
    let want: Vec<Vec<Value>> = by_v
        .range((2, i64::MIN)..=(4, i64::MAX))
        .map(|(_, r)| r.clone())
        .collect();
    assert_eq!(got, want, "{p} {s:?}: index range");
}

/// Issue 4's root cause, end to end: threads insert the same new keys at
/// the same moment. One insert per key may win; before the fix a loser of
/// the primary index's insert race could believe it had won, and its row
/// (a second row with that key, unreachable by key) showed up in index
/// scans next to the real one.
#[test]
fn racing_inserts_of_one_new_key_make_one_row() {
    const KEYS: i64 = 3_000;
    for s in schemes() {
        let db = Database::open(
            Options::default()
                .version_storage(s.0)
                .index_pointers(s.1)
                .mvpbt_partition_records(PARTITION),
        )
        .unwrap();
        let t = common::kvn_table(&db);
        let idx = db
            .create_index_as("by_v", &t, &["v"], Unique::No, s.2)
            .unwrap();
        let barrier = std::sync::Barrier::new(3);
        std::thread::scope(|sc| {
            for w in 0..3i64 {
                let (db, t, barrier) = (&db, &t, &barrier);
                sc.spawn(move || {
                    barrier.wait();
                    // No retries: threads stay in step, racing for each key.
                    for k in 0..KEYS {
                        let mut txn = db.begin().unwrap();
                        let r = txn.insert(t, row![k, (k + w) % 8, w]);
                        match r {
                            Ok(()) => {
                                let _ = txn.commit();
                            }
                            Err(Error::DuplicateKey { .. } | Error::Conflict(_)) => {}
                            Err(e) => panic!("{s:?}: {e:?}"),
                        }
                    }
                });
            }
        });
        let mut ro = db.begin_read_only().unwrap();
        let rows = ro.scan(&t, ..).unwrap();
        let mut via_index = ro.index_scan(&idx, ..).unwrap();
        via_index.sort_by_key(|r| r[0].as_int().unwrap());
        assert_eq!(via_index, rows, "{s:?}: one row per key, index == table");
        drop(ro);
        db.collect_garbage();
        if s.2 == IndexKind::MvPbt {
            db.freeze_index(&idx).unwrap();
        }
        assert_eq!(
            db.stats().secondary_index_entries,
            rows.len() as u64,
            "{s:?}: one entry per row"
        );
    }
}

/// Creating an index while writers run: afterwards the index agrees with
/// the table in every snapshot.
#[test]
fn index_created_under_concurrent_writers_is_complete() {
    for s in schemes() {
        let db = Database::open(
            Options::default()
                .version_storage(s.0)
                .index_pointers(s.1)
                .mvpbt_partition_records(PARTITION),
        )
        .unwrap();
        let t = common::kvn_table(&db);
        let mut txn = db.begin().unwrap();
        for k in 0..2000 {
            txn.insert(&t, row![k, k % 50, 0]).unwrap();
        }
        txn.commit().unwrap();
        let done = AtomicBool::new(false);
        let idx = std::thread::scope(|sc| {
            let (db2, t2, done2) = (&db, &t, &done);
            sc.spawn(move || {
                let mut i = 0i64;
                while !done2.load(Ordering::SeqCst) {
                    let k = (i * 7919) % 2100;
                    let _ =
                        db2.run(
                            |x| match x.update(t2, &key![k], &[("v", Value::Int(i % 50))]) {
                                Err(Error::NotFound { .. }) => x.insert(t2, row![k, i % 50, i]),
                                r => r,
                            },
                        );
                    i += 1;
                }
            });
            let idx = db
                .create_index_as("by_v", &t, &["v"], Unique::No, s.2)
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            done.store(true, Ordering::SeqCst);
            idx
        });
        let mut ro = db.begin_read_only().unwrap();
        agree(&mut ro, &t, &idx, Protocol::SiSsn, s);
        assert!(ro.index_scan(&idx, ..).unwrap().len() >= 2000);
    }
}
