//! Hermitage-style anomaly scenarios: deterministic interleavings of two
//! transactions on one thread, for every protocol, with the outcome each
//! protocol must give. "Prevented" means the anomalous outcome is impossible:
//! either the reader sees a consistent state, or one transaction is refused
//! with the named conflict.
//!
//! Every scenario runs under every version storage scheme too: the outcome
//! must not depend on where versions live. And under both write installs
//! (`WriteInstall`): at commit, a write is refused at its commit where
//! eagerly it is refused at the write, and the anomaly stays prevented.

use crate::common;
use common::*;
use strata::{
    key, row, ConflictKind, Database, Error, Options, Protocol, Result, Table, Transaction, Value,
    VersionStorage, WriteInstall,
};

thread_local! {
    static STORAGE: std::cell::Cell<VersionStorage> =
        const { std::cell::Cell::new(VersionStorage::AppendNewToOld) };
    static INSTALL: std::cell::Cell<WriteInstall> =
        const { std::cell::Cell::new(WriteInstall::Eager) };
}

/// Every protocol under every storage scheme and both write installs;
/// `db` below opens the scheme and install of the current configuration
/// (the name is printed, so a failure names it).
fn every_config() -> impl Iterator<Item = Protocol> {
    common::configs()
        .storages()
        .protocols()
        .installs()
        .into_iter()
        .map(|c| {
            STORAGE.with(|cell| cell.set(c.storage));
            INSTALL.with(|cell| cell.set(c.install));
            eprintln!("-- {c}");
            c.protocol
        })
}

/// Whether the current configuration installs writes at commit: a second
/// writer of a row is then refused at its commit, not at its write.
fn at_commit() -> bool {
    INSTALL.with(|c| c.get()) == WriteInstall::AtCommit
}

/// Shadows `common::db`: the storage scheme of the current configuration.
fn db(p: Protocol) -> Database {
    Database::open(
        Options::default()
            .protocol(p)
            .version_storage(STORAGE.with(|c| c.get()))
            .write_install(INSTALL.with(|c| c.get())),
    )
    .expect("valid options")
}

fn get(t: &mut Transaction, tab: &Table, k: i64) -> Result<Option<i64>> {
    Ok(t.get(tab, &key![k])?.map(|r| r[1].as_int().unwrap()))
}

fn set(t: &mut Transaction, tab: &Table, k: i64, v: i64) -> Result<()> {
    t.update(tab, &key![k], &[("v", Value::Int(v))])
}

fn conflict<T: std::fmt::Debug>(r: Result<T>) -> ConflictKind {
    match r {
        Err(Error::Conflict(k)) => k,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn setup(p: Protocol) -> (Database, Table) {
    let db = db(p);
    let t = kv_table(&db);
    load(&db, &t, &[(1, 10), (2, 20)]);
    (db, t)
}

/// G0: two uncommitted writes to one row. The second writer is refused at
/// once under every protocol (no-wait write locks). Installed at commit,
/// no row ever holds two writers' uncommitted versions: the second write
/// is taken, and its commit either wins the row after the first (12) or
/// is refused (11), whole either way.
#[test]
fn dirty_write_g0_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        set(&mut t1, &t, 1, 11).unwrap();
        if at_commit() {
            set(&mut t2, &t, 1, 12).unwrap();
            t1.commit().unwrap();
            let want = match t2.commit() {
                Ok(()) => 12,
                Err(Error::Conflict(_)) => 11,
                Err(e) => panic!("{p}: {e}"),
            };
            assert_eq!(value(&db, &t, 1), Some(want), "{p}");
            continue;
        }
        assert_eq!(
            conflict(set(&mut t2, &t, 1, 12)),
            ConflictKind::WriteWrite,
            "{p}"
        );
        t1.commit().unwrap();
        assert_eq!(value(&db, &t, 1), Some(11), "{p}");
    }
}

/// G1a: reading a write that is later rolled back.
#[test]
fn dirty_read_g1a_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        set(&mut t1, &t, 1, 11).unwrap();
        match p {
            // The row is write-locked: no-wait refuses the read lock.
            Protocol::Mv2pl => assert_eq!(conflict(get(&mut t2, &t, 1)), ConflictKind::ReadLock),
            // An older writer's pending version would have to be read
            // (installed at commit, there is none yet).
            Protocol::Mvto if !at_commit() => {
                assert_eq!(conflict(get(&mut t2, &t, 1)), ConflictKind::TimestampOrder)
            }
            _ => assert_eq!(get(&mut t2, &t, 1).unwrap(), Some(10), "{p}"),
        }
        t1.abort();
        assert_eq!(value(&db, &t, 1), Some(10), "{p}");
    }
}

/// G1b: reading an intermediate value of another transaction.
#[test]
fn intermediate_read_g1b_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        set(&mut t1, &t, 1, 11).unwrap();
        let mut t2 = db.begin_read_only().unwrap();
        // Read-only snapshots never see uncommitted data, under any protocol.
        assert_eq!(get(&mut t2, &t, 1).unwrap(), Some(10), "{p}");
        set(&mut t1, &t, 1, 12).unwrap();
        t1.commit().unwrap();
        assert_eq!(get(&mut t2, &t, 1).unwrap(), Some(10), "{p}");
        assert_eq!(value(&db, &t, 1), Some(12), "{p}");
    }
}

/// P4 lost update: both read x, both write x+1. At most one may commit.
#[test]
fn lost_update_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        let a = get(&mut t1, &t, 1).unwrap().unwrap();
        let b = get(&mut t2, &t, 1).unwrap().unwrap();
        let r1 = set(&mut t1, &t, 1, a + 1).and_then(|_| t1.commit());
        let r2 = set(&mut t2, &t, 1, b + 1).and_then(|_| t2.commit());
        let (kind, winner) = match (r1, r2) {
            (Ok(()), Err(Error::Conflict(k))) => (k, 1),
            (Err(Error::Conflict(k)), Ok(())) => (k, 2),
            other => panic!("{p}: lost update not prevented: {other:?}"),
        };
        let expected = match p {
            Protocol::Mv2pl => (ConflictKind::ReadLock, 2),
            Protocol::Mvto => (ConflictKind::TimestampOrder, 2),
            Protocol::Mvocc | Protocol::Occ => (ConflictKind::Validation, 1),
            _ => (ConflictKind::WriteWrite, 1),
        };
        assert_eq!((kind, winner), expected, "{p}");
        assert_eq!(value(&db, &t, 1), Some(11), "{p}");
    }
}

/// Lost update through `update_with`, whose read and write are one call:
/// both add 1 to x before either commits, so one commits (x = 11). Then
/// T1 reads x, T2 adds 1 and commits (x = 12), T1 adds 1 with
/// `update_with`: T1 commits only if it added to T2's value (x = 13), else
/// it is refused and x stays 12.
#[test]
fn lost_update_through_update_with_is_prevented() {
    let add = |t: &mut Transaction, tab: &Table| {
        t.update_with(tab, &key![1], |r| {
            ([("v", Value::Int(r[1].as_int().unwrap() + 1))], ())
        })
    };
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        let r1 = add(&mut t1, &t);
        let r2 = add(&mut t2, &t);
        let r1 = r1.and_then(|_| t1.commit());
        let r2 = r2.and_then(|_| t2.commit());
        let committed = [&r1, &r2].iter().filter(|r| r.is_ok()).count();
        assert_eq!(committed, 1, "{p}: {r1:?} {r2:?}");
        for r in [r1, r2].into_iter().filter(|r| r.is_err()) {
            conflict(r);
        }
        assert_eq!(value(&db, &t, 1), Some(11), "{p}");

        let mut t1 = db.begin().unwrap();
        let r1 = get(&mut t1, &t, 1);
        let mut t2 = db.begin().unwrap();
        match add(&mut t2, &t).and_then(|_| t2.commit()) {
            // MV2PL: T1's read lock holds x; T2 is refused, T1 goes on.
            Err(Error::Conflict(ConflictKind::ReadLock)) if p == Protocol::Mv2pl => {
                add(&mut t1, &t).and_then(|_| t1.commit()).unwrap();
                assert_eq!(value(&db, &t, 1), Some(12), "{p}");
                continue;
            }
            r => r.unwrap(),
        }
        match r1.and_then(|_| add(&mut t1, &t)).and_then(|_| t1.commit()) {
            Ok(()) => assert_eq!(value(&db, &t, 1), Some(13), "{p}: T1 lost T2's update"),
            r => {
                conflict(r);
                assert_eq!(value(&db, &t, 1), Some(12), "{p}");
            }
        }
    }
}

/// G-single read skew: T1 reads x, T2 moves 5 from x to y and commits, T1
/// reads y. T1 must see x + y = 30, or (OCC, whose reads are not one state
/// while open) see the skew and be refused at commit.
#[test]
fn read_skew_g_single_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let x = get(&mut t1, &t, 1).unwrap().unwrap();
        let mut t2 = db.begin().unwrap();
        let r2 = set(&mut t2, &t, 1, 5)
            .and_then(|_| set(&mut t2, &t, 2, 25))
            .and_then(|_| t2.commit());
        if p == Protocol::Mv2pl {
            assert_eq!(conflict(r2), ConflictKind::ReadLock, "{p}");
        } else {
            r2.unwrap();
        }
        let y = get(&mut t1, &t, 2).unwrap().unwrap();
        if !reads_are_consistent_while_open(p) {
            assert_eq!(x + y, 35, "{p}: the newest y, the old x");
            assert_eq!(conflict(t1.commit()), ConflictKind::Validation, "{p}");
            continue;
        }
        assert_eq!(x + y, 30, "{p}");
        if validates_read_sets_of_readers(p) {
            // A consistent snapshot, but MVOCC validates every committer's
            // reads (Wu et al. §3.2): x was overwritten, T1 is refused.
            assert_eq!(conflict(t1.commit()), ConflictKind::Validation, "{p}");
            continue;
        }
        t1.commit().unwrap();
    }
}

/// G2-item write skew: both read x and y, each writes one of them. Allowed
/// under SI only; serializable protocols refuse at least one.
#[test]
fn write_skew_g2_item_allowed_only_under_si() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        let s1 = get(&mut t1, &t, 1).unwrap().unwrap() + get(&mut t1, &t, 2).unwrap().unwrap();
        let s2 = get(&mut t2, &t, 1).unwrap().unwrap() + get(&mut t2, &t, 2).unwrap().unwrap();
        let r1 = set(&mut t1, &t, 1, 10 - s1).and_then(|_| t1.commit());
        let r2 = set(&mut t2, &t, 2, 20 - s2).and_then(|_| t2.commit());
        let committed = r1.is_ok() as u32 + r2.is_ok() as u32;
        if p == Protocol::Si {
            assert_eq!(committed, 2, "SI allows write skew");
            continue;
        }
        assert!(committed <= 1, "{p}: write skew committed");
        let kinds: Vec<ConflictKind> = [r1, r2]
            .into_iter()
            .filter(|r| r.is_err())
            .map(conflict::<()>)
            .collect();
        let expected = match p {
            Protocol::Mv2pl => ConflictKind::ReadLock,
            Protocol::Mvto => ConflictKind::TimestampOrder,
            Protocol::Mvocc | Protocol::Occ => ConflictKind::Validation,
            Protocol::SiSsn => ConflictKind::SsnExclusion,
            Protocol::SiSsi => ConflictKind::DangerousStructure,
            Protocol::Si => unreachable!(),
        };
        assert_eq!(kinds[0], expected, "{p}");
    }
}

/// Write skew with both writes made before either commit: each reads x and
/// y, T1 writes x, T2 writes y, then T1 and T2 commit. One refusal breaks
/// the cycle, so the other must commit ("one commits"). SSI once refused
/// both: T1 is a pivot (T2 -rw-> T1 -rw-> T2) and is refused; T2 then kept
/// its in and out flags although both edges led to T1, which had aborted.
#[test]
fn write_skew_with_both_writes_before_commit_one_commits() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        let reads = |t1: &mut Transaction, t2: &mut Transaction| -> Result<()> {
            for tx in [t1, t2] {
                get(tx, &t, 1)?;
                get(tx, &t, 2)?;
            }
            Ok(())
        };
        reads(&mut t1, &mut t2).unwrap();
        let w1 = set(&mut t1, &t, 1, 0);
        let w2 = set(&mut t2, &t, 2, 0);
        let r1 = w1.and_then(|_| t1.commit());
        let r2 = w2.and_then(|_| t2.commit());
        let committed = r1.is_ok() as u32 + r2.is_ok() as u32;
        if p == Protocol::Si {
            assert_eq!(committed, 2, "SI allows write skew");
            continue;
        }
        assert_eq!(committed, 1, "{p}: one commits: {r1:?} {r2:?}");
        let (refused, winner) = match (r1, r2) {
            (Err(e), Ok(())) => (e, 2),
            (Ok(()), Err(e)) => (e, 1),
            _ => unreachable!(),
        };
        let expected = match p {
            // T2's read lock on x refuses T1's write; T2 then commits.
            Protocol::Mv2pl => (ConflictKind::ReadLock, 2),
            // T2 (younger) read x: T1 may not write it.
            Protocol::Mvto => (ConflictKind::TimestampOrder, 2),
            // T2's pending write sits on the y T1 read: T1's read set is
            // not current at its commit. Installed at commit, T2's write
            // is not on y yet: T1 commits, and T2 finds x overwritten.
            Protocol::Mvocc | Protocol::Occ if at_commit() => (ConflictKind::Validation, 1),
            Protocol::Mvocc | Protocol::Occ => (ConflictKind::Validation, 2),
            // T1, the first to commit, is the pivot. Installed at commit,
            // T2's write of y appears only at T2's commit: T2 is the pivot.
            Protocol::SiSsi if at_commit() => (ConflictKind::DangerousStructure, 1),
            Protocol::SiSsi => (ConflictKind::DangerousStructure, 2),
            Protocol::SiSsn => (ConflictKind::SsnExclusion, 1),
            Protocol::Si => unreachable!(),
        };
        assert_eq!((conflict::<()>(Err(refused)), winner), expected, "{p}");
        let (x, y) = (value(&db, &t, 1).unwrap(), value(&db, &t, 2).unwrap());
        assert_eq!((x == 0) as u32 + (y == 0) as u32, 1, "{p}: x {x} y {y}");
    }
}

/// G2 predicate (phantom): T1 checks that range A is empty and inserts into
/// B; T2 checks B is empty and inserts into A. Serializable protocols refuse
/// one; SI lets both commit.
#[test]
fn phantom_g2_predicate_allowed_only_under_si() {
    for p in every_config() {
        let db = db(p);
        let t = kv_table(&db);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        let r1 = t1.scan(&t, key![0]..key![10]).map(|r| r.len());
        let r1 = r1.and_then(|n| t1.insert(&t, row![15, n as i64, "t1"]));
        let r2 = t2.scan(&t, key![10]..key![20]).map(|r| r.len());
        let r2 = r2.and_then(|n| t2.insert(&t, row![5, n as i64, "t2"]));
        let r1 = r1.and_then(|_| t1.commit());
        let r2 = r2.and_then(|_| t2.commit());
        let committed = r1.is_ok() as u32 + r2.is_ok() as u32;
        if p == Protocol::Si {
            assert_eq!(committed, 2, "SI allows the phantom");
        } else {
            assert_eq!(committed, 1, "{p}: r1 {r1:?} r2 {r2:?}");
        }
    }
}

/// A scan that stops early protects the keys it read and no more. T1 takes
/// the first row of [0, 100) (10 of 10, 20, 30) and inserts 200; T2 inserts
/// a key into [0, 100) and commits first. An insert past T1's stop (50) is
/// no phantom: both commit under every protocol. One before it (5) is: a
/// serializable protocol that validates scans refuses T1 (MVTO orders T1
/// before T2 by timestamp and needs no refusal; SI allows it). The same
/// scan read to the end (limit 10) makes 50 a phantom too, so the first
/// case's commits come from the narrower predicate, not from a protocol
/// that checks nothing.
#[test]
fn limited_scan_protects_only_the_keys_it_read() {
    for p in every_config() {
        for (limit, phantom, refused) in [(1, 50, false), (1, 5, true), (10, 50, true)] {
            let db = db(p);
            let t = kv_table(&db);
            load(&db, &t, &[(10, 1), (20, 2), (30, 3)]);
            let mut t1 = db.begin().unwrap();
            let seen = t1.scan_limit(&t, key![0]..key![100], limit).unwrap();
            assert_eq!(seen.len(), limit.min(3), "{p}");
            let mut t2 = db.begin().unwrap();
            let r2 = t2
                .insert(&t, row![phantom, 0, "t2"])
                .and_then(|_| t2.commit());
            let r1 = t1.insert(&t, row![200, 0, "t1"]).and_then(|_| t1.commit());
            let both = r1.is_ok() && r2.is_ok();
            let validates = p.is_serializable() && p != Protocol::Mvto;
            let case = format!("{p}: limit {limit}, insert {phantom}: {r1:?} {r2:?}");
            assert_eq!(!both, refused && validates, "{case}");
        }
    }
}

/// A phantom inside one transaction: a second scan of a range returns the
/// same rows even though another transaction inserted into it and committed.
#[test]
fn repeated_scan_sees_no_phantom_rows() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin_read_only().unwrap();
        assert_eq!(t1.scan(&t, key![0]..key![10]).unwrap().len(), 2);
        load(&db, &t, &[(3, 30)]);
        assert_eq!(t1.scan(&t, key![0]..key![10]).unwrap().len(), 2, "{p}");
    }
}

/// An insert that commits after a serializable scanner committed, into the
/// scanned range, closes a cycle through a third transaction unless the
/// scanner is accounted for (SSN/SSI scan records).
///
/// U reads x; X overwrites x and commits; R reads x (X's value) and scans
/// [100, 200) (empty) and commits; U inserts 150 and commits. Edges:
/// U -rw-> X -wr-> R -rw(predicate)-> U: a cycle, so U must not commit.
#[test]
fn late_insert_into_committed_scan_range_is_refused() {
    for p in every_config() {
        if !p.is_serializable() {
            continue;
        }
        let (db, t) = setup(p);
        let mut u = db.begin().unwrap();
        let ux = get(&mut u, &t, 1);
        let mut x = db.begin().unwrap();
        let rx = set(&mut x, &t, 1, 99).and_then(|_| x.commit());
        let mut r = db.begin().unwrap();
        let rr = get(&mut r, &t, 1)
            .and_then(|_| r.scan(&t, key![100]..key![200]))
            .and_then(|_| set(&mut r, &t, 2, 0))
            .and_then(|_| r.commit());
        let ru = ux
            .and_then(|_| u.insert(&t, row![150, 1, "u"]))
            .and_then(|_| u.commit());
        let all = rx.is_ok() && rr.is_ok() && ru.is_ok();
        assert!(!all, "{p}: the cycle U -> X -> R -> U committed");
    }
}

/// G1c circular information flow: T1 writes x, T2 writes y, then each reads
/// what the other wrote. Neither may see the other's uncommitted write, so
/// no cycle of wr edges can form.
#[test]
fn circular_information_flow_g1c_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        set(&mut t1, &t, 1, 11).unwrap();
        set(&mut t2, &t, 2, 22).unwrap();
        let r1 = get(&mut t1, &t, 2);
        let r2 = get(&mut t2, &t, 1);
        for (r, old) in [(&r1, 20), (&r2, 10)] {
            match r {
                Ok(v) => assert_eq!(*v, Some(old), "{p}: read an uncommitted write"),
                Err(Error::Conflict(_)) => {}
                Err(e) => panic!("{p}: {e}"),
            }
        }
        let c1 = r1.is_ok() && t1.commit().is_ok();
        let c2 = r2.is_ok() && t2.commit().is_ok();
        if p.is_serializable() {
            // Both read the other's old value: T1 -rw-> T2 -rw-> T1.
            assert!(!(c1 && c2), "{p}: both committed");
        }
    }
}

/// Observed transaction vanishes (OTV): once a reader has seen one write of
/// T1, it must see all of T1's writes, even if a later T3 overwrites them.
#[test]
fn observed_transaction_vanishes_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        set(&mut t1, &t, 1, 11).unwrap();
        set(&mut t1, &t, 2, 21).unwrap();
        let mut t2 = db.begin().unwrap();
        // (At commit, T2's write waits for a commit it never makes.)
        let w2 = set(&mut t2, &t, 1, 12);
        assert_eq!(w2.is_ok(), at_commit(), "{p}: {w2:?}");
        t1.commit().unwrap();
        let mut reader = db.begin().unwrap();
        assert_eq!(get(&mut reader, &t, 1).unwrap(), Some(11), "{p}");
        let mut t3 = db.begin().unwrap();
        let r3 = set(&mut t3, &t, 1, 12)
            .and_then(|_| set(&mut t3, &t, 2, 22))
            .and_then(|_| t3.commit());
        if p == Protocol::Mv2pl {
            // The reader's read lock on x refuses T3.
            assert_eq!(conflict(r3), ConflictKind::ReadLock);
        } else {
            r3.unwrap();
        }
        let y = get(&mut reader, &t, 2).unwrap();
        if !reads_are_consistent_while_open(p) {
            // T3's y, T1's x: the reader must not commit what it saw.
            assert_eq!(y, Some(22), "{p}");
            assert_eq!(conflict(reader.commit()), ConflictKind::Validation);
            continue;
        }
        assert_eq!(y, Some(21), "{p}: T1's write to y vanished");
        if validates_read_sets_of_readers(p) {
            // MVOCC: T3 overwrote what the reader read, which validation
            // refuses even for a reader (Wu et al. §3.2).
            assert_eq!(conflict(reader.commit()), ConflictKind::Validation);
            continue;
        }
        reader.commit().unwrap();
    }
}

/// Predicate-many-preceders (PMP): a predicate read repeated in one
/// transaction must not see a row another transaction inserted meanwhile;
/// where the protocol reads the newest data (MV2PL, OCC), the transaction
/// must then fail to commit.
#[test]
fn predicate_many_preceders_is_prevented() {
    for p in every_config() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let first = t1.scan(&t, key![0]..key![10]).unwrap().len();
        let mut t2 = db.begin().unwrap();
        t2.insert(&t, row![3, 30, "t2"]).unwrap();
        t2.commit().unwrap();
        match t1.scan(&t, key![0]..key![10]) {
            Ok(rows) if rows.len() == first => {
                // Stable predicate read. If we now write, serializable
                // protocols must still order us before T2 or refuse.
                set(&mut t1, &t, 1, first as i64).unwrap();
                let r = t1.commit();
                if p.is_serializable() && p != Protocol::Mvto {
                    assert!(
                        r.is_err(),
                        "{p}: committed a write based on a stale predicate read"
                    );
                } else {
                    r.unwrap();
                }
            }
            Ok(rows) => {
                assert!(
                    reads_newest_data(p),
                    "{p}: predicate read changed within a transaction"
                );
                assert_eq!(rows.len(), first + 1);
                assert_eq!(conflict(t1.commit()), ConflictKind::Validation);
            }
            Err(Error::Conflict(_)) => {}
            Err(e) => panic!("{p}: {e}"),
        }
    }
}

/// Found by `strata check --protocol mvto --workload predicate --seed 4`:
/// an older transaction inserts a key into a range a younger one scanned
/// empty, after an even older transaction's read of the absent key gave it a
/// row (an MVTO ghost) whose read timestamp does not stop the insert. The
/// younger scanner must not see the insert in a second scan and commit.
#[test]
fn insert_into_a_scanned_range_through_a_ghost_is_refused() {
    for p in every_config() {
        let db = db(p);
        let t = kv_table(&db);
        let mut reader = db.begin().unwrap();
        let mut older = db.begin().unwrap();
        let mut younger = db.begin().unwrap();
        assert_eq!(younger.scan(&t, key![0]..key![10]).unwrap().len(), 0);
        assert_eq!(get(&mut reader, &t, 4).unwrap(), None);
        reader.commit().unwrap();
        let inserted = older
            .insert(&t, row![4, 8, "older"])
            .and_then(|_| older.commit());
        if p == Protocol::Mvto {
            assert_eq!(conflict(inserted), ConflictKind::TimestampOrder);
        } else {
            inserted.unwrap();
        }
        match younger.scan(&t, key![0]..key![10]) {
            Ok(rows) if rows.is_empty() => {
                // A snapshot (or MVTO's timestamp) keeps the range stable.
                // SSN, SSI and MVOCC re-validate the scan of a transaction
                // that wrote nothing too, and conservatively refuse a range
                // that gained a row since.
                let r = younger.commit();
                if checks_commits_that_wrote_nothing(p) {
                    assert_eq!(conflict(r), ConflictKind::Validation, "{p}")
                } else {
                    r.unwrap()
                }
            }
            Ok(rows) => {
                // MV2PL and OCC read the newest data: the phantom shows,
                // and the transaction must not commit after seeing both.
                assert!(reads_newest_data(p), "{p}: phantom in a repeated scan");
                assert_eq!(rows.len(), 1);
                assert_eq!(conflict(younger.commit()), ConflictKind::Validation);
            }
            Err(e) => panic!("{p}: {e}"),
        }
    }
}

/// Write skew over two absent keys, one of them read through the index
/// entry of an insert that then aborts. The reader finds the entry but no
/// visible version; once the insert is undone the tuple belongs to no key,
/// and a re-insert of the key by another transaction makes another tuple.
/// The same holds when GC unlinks a deleted row between a reader's index
/// lookup and its slot read. MVOCC recorded only the (empty) read of the
/// old tuple, which still validated, so both transactions committed (found
/// by `strata check --protocol mvocc --workload predicate`, about one run
/// in a hundred with deletes; MV2PL, which reads an empty slot as absent
/// without recording anything, more rarely). The key read as absent is a
/// predicate read and is re-validated like one.
#[test]
fn write_skew_through_an_aborted_insert_is_prevented() {
    for p in every_config() {
        let db = db(p);
        let t = kv_table(&db);
        let mut aborting = db.begin().unwrap();
        aborting.insert(&t, row![1, 0, "aborted"]).unwrap();
        let mut reader = db.begin().unwrap();
        let read = get(&mut reader, &t, 1);
        // Pinned until the end: the aborted insert's tuple id is released
        // through the epoch, so it cannot be handed to the re-insert below
        // (which would make the stale read fail validation by chance).
        let pin = crossbeam_epoch::pin();
        aborting.abort();
        match read {
            Ok(None) => {}
            // MV2PL (the insert's lock) and MVTO (an older writer's
            // pending version) refuse the read: nothing to skew.
            Err(Error::Conflict(_)) => continue,
            other => panic!("{p}: {other:?}"),
        }
        let mut writer = db.begin().unwrap();
        let writer_done = get(&mut writer, &t, 5).and_then(|seen| {
            assert_eq!(seen, None);
            writer.insert(&t, row![1, 1, "writer"])?;
            writer.commit()
        });
        let reader_done = reader
            .insert(&t, row![5, 1, "reader"])
            .and_then(|_| reader.commit());
        drop(pin);
        if p.is_serializable() {
            assert!(
                writer_done.is_err() || reader_done.is_err(),
                "{p}: write skew: each read as absent the key the other inserted"
            );
        }
    }
}

// ------------------------------------------------------------------- OCC
//
// Golden scenarios for Silo-style OCC (`cc::occ`; ERMIA §1, Figure 1):
// no begin snapshot, and read validation for every committer, readers
// too, which is what starves read-mostly transactions.

/// Every storage scheme under OCC (the name is printed, as above).
fn occ_configs() -> impl Iterator<Item = Protocol> {
    every_config().filter(|&p| p == Protocol::Occ)
}

/// A reader sees a row committed after it began: reads take the newest
/// committed version, not a begin snapshot.
#[test]
fn occ_reader_sees_a_commit_made_after_it_began() {
    let mut ran = 0;
    for p in occ_configs() {
        let (db, t) = setup(p);
        let mut reader = db.begin().unwrap();
        let mut writer = db.begin().unwrap();
        set(&mut writer, &t, 1, 11).unwrap();
        // Uncommitted: still the old value.
        assert_eq!(get(&mut reader, &t, 1).unwrap(), Some(10), "{p}");
        writer.commit().unwrap();
        // A snapshot protocol would still answer 10 here.
        assert_eq!(get(&mut reader, &t, 2).unwrap(), Some(20), "{p}");
        let mut late = db.begin().unwrap();
        let mut w2 = db.begin().unwrap();
        set(&mut w2, &t, 2, 21).unwrap();
        w2.commit().unwrap();
        assert_eq!(get(&mut late, &t, 2).unwrap(), Some(21), "{p}");
        late.commit().unwrap();
        ran += 1;
    }
    assert!(ran > 0);
}

/// ERMIA's starvation (§1, Figure 2): a transaction that only reads is
/// validated like any committer, so an overwrite of a row it read, committed
/// before it commits, aborts it. A `begin_read_only` snapshot (Silo's
/// read-only snapshots, which ERMIA enabled for Silo) is not validated and
/// commits.
#[test]
fn occ_reader_whose_read_row_is_overwritten_aborts() {
    let mut ran = 0;
    for p in occ_configs() {
        let (db, t) = setup(p);
        let mut reader = db.begin().unwrap();
        let mut snapshot = db.begin_read_only().unwrap();
        assert_eq!(get(&mut reader, &t, 1).unwrap(), Some(10), "{p}");
        assert_eq!(get(&mut reader, &t, 2).unwrap(), Some(20), "{p}");
        assert_eq!(get(&mut snapshot, &t, 1).unwrap(), Some(10), "{p}");
        let mut writer = db.begin().unwrap();
        set(&mut writer, &t, 2, 21).unwrap();
        writer.commit().unwrap();
        assert_eq!(conflict(reader.commit()), ConflictKind::Validation, "{p}");
        assert_eq!(get(&mut snapshot, &t, 2).unwrap(), Some(20), "{p}");
        snapshot.commit().unwrap();
        // A reader whose row is only write-locked (not yet committed) at its
        // commit is refused too: the lock is a write in progress. (A write
        // buffered for commit holds nothing yet: the reader commits first.)
        let mut reader = db.begin().unwrap();
        get(&mut reader, &t, 1).unwrap();
        let mut writer = db.begin().unwrap();
        set(&mut writer, &t, 1, 12).unwrap();
        if at_commit() {
            reader.commit().unwrap();
        } else {
            assert_eq!(conflict(reader.commit()), ConflictKind::Validation, "{p}");
        }
        writer.commit().unwrap();
        ran += 1;
    }
    assert!(ran > 0);
}

/// Write skew (G2-item) under OCC: both read x and y, each writes one; the
/// second to commit finds a row it read overwritten and is refused.
#[test]
fn occ_prevents_write_skew() {
    let mut ran = 0;
    for p in occ_configs() {
        let (db, t) = setup(p);
        let mut t1 = db.begin().unwrap();
        let mut t2 = db.begin().unwrap();
        for tx in [&mut t1, &mut t2] {
            assert_eq!(get(tx, &t, 1).unwrap(), Some(10));
            assert_eq!(get(tx, &t, 2).unwrap(), Some(20));
        }
        set(&mut t1, &t, 1, 0).unwrap();
        t1.commit().unwrap();
        set(&mut t2, &t, 2, 0).unwrap();
        assert_eq!(conflict(t2.commit()), ConflictKind::Validation, "{p}");
        assert_eq!((value(&db, &t, 1), value(&db, &t, 2)), (Some(0), Some(20)));
        ran += 1;
    }
    assert!(ran > 0);
}

// ----------------------------------------------------------------- MVOCC
//
// The study's MVOCC (Wu et al. §3.2) validates the read set of every
// committer; only a transaction begun with the READ ONLY hint skips it
// (Fig. 9). A long query that is not declared read-only is therefore
// refused whenever a row it read was overwritten before it commits: the
// starvation of Fig. 8 (§6.2).

/// Every storage scheme under MVOCC (the name is printed, as above).
fn mvocc_configs() -> impl Iterator<Item = Protocol> {
    every_config().filter(|&p| p == Protocol::Mvocc)
}

/// A transaction that only reads, begun without the hint, whose read
/// row a committed writer overwrote, fails validation; the same reads
/// begun READ ONLY commit. A reader whose rows nobody overwrote commits.
#[test]
fn mvocc_undeclared_reader_whose_read_row_is_overwritten_aborts() {
    let mut ran = 0;
    for p in mvocc_configs() {
        let (db, t) = setup(p);
        let mut reader = db.begin().unwrap();
        let mut hinted = db.begin_read_only().unwrap();
        for tx in [&mut reader, &mut hinted] {
            assert_eq!(get(tx, &t, 1).unwrap(), Some(10), "{p}");
        }
        db.run(|w| set(w, &t, 1, 11)).unwrap();
        for tx in [&mut reader, &mut hinted] {
            // Snapshot reads: still the state at begin.
            assert_eq!(get(tx, &t, 2).unwrap(), Some(20), "{p}");
            assert_eq!(get(tx, &t, 1).unwrap(), Some(10), "{p}");
        }
        let before = db.stats();
        assert_eq!(conflict(reader.commit()), ConflictKind::Validation, "{p}");
        hinted.commit().unwrap();
        let after = db.stats();
        let validation = |s: &strata::Stats| {
            s.aborts_by_reason
                .iter()
                .find(|(k, _)| *k == ConflictKind::Validation)
                .map(|(_, n)| *n)
                .unwrap()
        };
        assert_eq!(validation(&after), validation(&before) + 1, "{p}");
        assert_eq!(after.read_only_commits, before.read_only_commits + 1);

        // Nothing it read was overwritten (a write elsewhere): it commits.
        let mut reader = db.begin().unwrap();
        assert_eq!(get(&mut reader, &t, 2).unwrap(), Some(20), "{p}");
        db.run(|w| set(w, &t, 1, 12)).unwrap();
        reader.commit().unwrap();

        // An overwrite still in progress (the row write-locked) at the
        // reader's commit refuses it too (one buffered for commit is not
        // in progress yet: the reader commits first).
        let mut reader = db.begin().unwrap();
        get(&mut reader, &t, 2).unwrap();
        let mut writer = db.begin().unwrap();
        set(&mut writer, &t, 2, 21).unwrap();
        if at_commit() {
            reader.commit().unwrap();
        } else {
            assert_eq!(conflict(reader.commit()), ConflictKind::Validation, "{p}");
        }
        writer.commit().unwrap();
        ran += 1;
    }
    assert!(ran > 0);
}

// ------------------------------------------------------------------ MVTO
//
// The study's MVTO (Wu et al. §3.1) aborts a transaction that reads a
// version whose write lock another transaction holds, whatever the
// holder's timestamp (`MvtoLockedRead::Abort`, the default). Strata's
// narrower rule (`MvtoLockedRead::AbortIfOlderHolder`) aborts only for an
// older holder, whose pending version may be the one to read.

/// Every storage scheme under MVTO (the name is printed, as above).
fn mvto_configs() -> impl Iterator<Item = Protocol> {
    every_config().filter(|&p| p == Protocol::Mvto)
}

/// `db` with MVTO's locked-read rule `rule`.
fn mvto_db(rule: strata::MvtoLockedRead) -> (Database, Table) {
    let db = Database::open(
        Options::default()
            .protocol(Protocol::Mvto)
            .version_storage(STORAGE.with(|c| c.get()))
            .mvto_locked_read(rule),
    )
    .expect("valid options");
    let t = kv_table(&db);
    load(&db, &t, &[(1, 10), (2, 20)]);
    (db, t)
}

/// An older reader meets the row write-locked by a younger writer: the
/// study's rule aborts the reader; the narrower rule lets it read the
/// locked (committed) version, and both commit. A READ ONLY transaction
/// reads its snapshot under either rule, and a held lock of an older
/// writer aborts the reader under both.
#[test]
fn mvto_reader_of_a_write_locked_version_aborts() {
    use strata::MvtoLockedRead::{Abort, AbortIfOlderHolder};
    assert_eq!(Options::default().mvto_locked_read, Abort);
    let mut ran = 0;
    for p in mvto_configs() {
        for rule in [Abort, AbortIfOlderHolder] {
            let (db, t) = mvto_db(rule);
            let mut reader = db.begin().unwrap();
            let mut writer = db.begin().unwrap();
            assert!(reader.snapshot_ts() < writer.snapshot_ts());
            set(&mut writer, &t, 1, 11).unwrap();
            let mut hinted = db.begin_read_only().unwrap();
            assert_eq!(get(&mut hinted, &t, 1).unwrap(), Some(10), "{p} {rule}");
            match rule {
                Abort => {
                    let r = get(&mut reader, &t, 1);
                    assert_eq!(conflict(r), ConflictKind::TimestampOrder, "{p}");
                }
                AbortIfOlderHolder => {
                    assert_eq!(get(&mut reader, &t, 1).unwrap(), Some(10), "{p}");
                    reader.commit().unwrap();
                }
            }
            writer.commit().unwrap();
            hinted.commit().unwrap();
            assert_eq!(value(&db, &t, 1), Some(11), "{p} {rule}");

            // Once the writer has committed, its lock is no longer held:
            // a reader younger than it reads its version.
            let mut after = db.begin().unwrap();
            assert_eq!(get(&mut after, &t, 1).unwrap(), Some(11), "{p} {rule}");
            after.commit().unwrap();

            // An older holder: the reader would have to see its version.
            let mut writer = db.begin().unwrap();
            let mut reader = db.begin().unwrap();
            set(&mut writer, &t, 2, 21).unwrap();
            let r = get(&mut reader, &t, 2);
            assert_eq!(conflict(r), ConflictKind::TimestampOrder, "{p} {rule}");
            writer.commit().unwrap();
        }
        ran += 1;
    }
    assert!(ran > 0);
}
