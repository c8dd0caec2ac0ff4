//! SI+SSN's early exclusion check (ERMIA §3.3, `Options::ssn_early_exclusion`):
//! a transaction whose exclusion window is already empty stops at the read
//! or overwrite that emptied it, with `ssn-early-exclusion`; without the
//! check the same transaction runs on and fails its commit test. Either way
//! the outcome (abort) and the database state are the same.

use strata::{key, row, ConflictKind, Database, Error, Options, Schema, Table, Type, Value};

fn setup(early: bool) -> (Database, Table) {
    let db = Database::open(Options::default().ssn_early_exclusion(early)).unwrap();
    let t = db
        .create_table(
            Schema::new("t")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.run(|x| {
        for k in 1..=3 {
            x.insert(&t, row![k, 0])?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

fn set(db: &Database, t: &Table, k: i64, v: i64) {
    db.run(|x| x.update(t, &key![k], &[("v", Value::Int(v))]))
        .unwrap();
}

/// T1's snapshot predates T2's overwrite of x (so T2 is T1's rw-successor,
/// pi(T1) <= c2), and T3 read y and committed after T2 (so overwriting y
/// makes T3 a predecessor, eta(T1) >= c3 > c2): the window is empty the
/// moment T1 overwrites y.
#[test]
fn an_overwrite_that_empties_the_window_aborts_at_once() {
    for early in [true, false] {
        let (db, t) = setup(early);
        let mut t1 = db.begin().unwrap();
        // T2: overwrites x after T1's snapshot and commits.
        set(&db, &t, 1, 10);
        // T1 reads the old x: its overwriter has committed.
        let x = t1.get(&t, &key![1]).unwrap().unwrap();
        assert_eq!(x[1], Value::Int(0), "T1 reads its snapshot");
        // T3: reads y, writes z, commits after T2.
        db.run(|x| {
            x.get(&t, &key![2])?;
            x.update(&t, &key![3], &[("v", Value::Int(30))])
        })
        .unwrap();
        let w = t1.update(&t, &key![2], &[("v", Value::Int(20))]);
        if early {
            match w {
                Err(Error::Conflict(ConflictKind::SsnEarlyExclusion)) => {}
                other => panic!("early: expected ssn-early-exclusion, got {other:?}"),
            }
            // The transaction is over: nothing it wrote is visible.
            drop(t1);
        } else {
            w.unwrap();
            match t1.commit() {
                Err(Error::Conflict(ConflictKind::SsnExclusion)) => {}
                other => panic!("at commit: expected ssn-exclusion, got {other:?}"),
            }
        }
        let mut r = db.begin_read_only().unwrap();
        let y = r.get(&t, &key![2]).unwrap().unwrap();
        assert_eq!(
            y[1],
            Value::Int(0),
            "early {early}: T1's write of y is gone"
        );
        let st = db.stats();
        let kind = if early {
            ConflictKind::SsnEarlyExclusion
        } else {
            ConflictKind::SsnExclusion
        };
        assert_eq!(st.aborts_of(kind), 1, "early {early}: {st:?}");
    }
}

/// A read of a version whose overwriter committed with a small pi, after an
/// overwrite that already made a late committer a predecessor, empties the
/// window too: the read itself stops the transaction.
#[test]
fn a_read_that_empties_the_window_aborts_at_once() {
    let (db, t) = setup(true);
    let mut t1 = db.begin().unwrap();
    // T2 overwrites x after T1's snapshot.
    set(&db, &t, 1, 10);
    // T3 reads y and commits after T2; T1 then overwrites y (eta >= c3).
    db.run(|x| {
        x.get(&t, &key![2])?;
        x.update(&t, &key![3], &[("v", Value::Int(30))])
    })
    .unwrap();
    t1.update(&t, &key![2], &[("v", Value::Int(20))]).unwrap();
    // Reading the old x brings pi(T1) down to c2 < c3.
    match t1.get(&t, &key![1]) {
        Err(Error::Conflict(ConflictKind::SsnEarlyExclusion)) => {}
        other => panic!("expected ssn-early-exclusion, got {other:?}"),
    }
    drop(t1);
    // The abort rolled T1 back: its write of y is gone, and y can be
    // written again at once.
    let mut r = db.begin_read_only().unwrap();
    assert_eq!(r.get(&t, &key![2]).unwrap().unwrap()[1], Value::Int(0));
    set(&db, &t, 2, 5);
}

/// Without an empty window nothing changes: T1 reads an overwritten x and
/// overwrites a row nobody read since; it commits.
#[test]
fn a_nonempty_window_commits() {
    let (db, t) = setup(true);
    let mut t1 = db.begin().unwrap();
    set(&db, &t, 1, 10);
    let x = t1.get(&t, &key![1]).unwrap().unwrap();
    assert_eq!(x[1], Value::Int(0), "T1 reads its snapshot's x");
    t1.update(&t, &key![2], &[("v", Value::Int(20))]).unwrap();
    let before = db.stats();
    t1.commit().unwrap();
    let st = db.stats();
    // T1's commit is counted as a read-write commit, and neither exclusion
    // check (early or at commit) refused anything in this test.
    assert_eq!(st.commits, before.commits + 1, "{st:?}");
    assert_eq!(st.aborts_of(ConflictKind::SsnEarlyExclusion), 0, "{st:?}");
    assert_eq!(st.aborts_of(ConflictKind::SsnExclusion), 0, "{st:?}");
    assert_eq!(st.aborts(), 0, "{st:?}");
    // T1's write is what a later snapshot reads, next to T2's x.
    let mut r = db.begin_read_only().unwrap();
    assert_eq!(r.get(&t, &key![2]).unwrap().unwrap()[1], Value::Int(20));
    assert_eq!(r.get(&t, &key![1]).unwrap().unwrap()[1], Value::Int(10));
}
