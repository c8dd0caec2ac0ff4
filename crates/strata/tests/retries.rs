//! The embedder's transaction helpers: `Database::try_run` with the
//! application's own error type (retrying only Strata's conflicts, however
//! the closure wrapped them), `Database::run_read_only`, and
//! `Transaction::put` (insert or replace).

use crate::common::*;
use strata::{key, row, ConflictKind, Error, Protocol, Value};

/// An application's error: its own failures beside Strata's.
#[derive(Debug)]
enum AppError {
    Db(Error),
    Refused(&'static str),
}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        AppError::Db(e)
    }
}

/// The application's own error ends the run at once: one call, the
/// transaction rolled back (its write is not there), the error returned
/// as it was made.
#[test]
fn try_run_returns_the_applications_error_without_retrying() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 5)]);
        let mut calls = 0;
        let r: Result<(), AppError> = db.try_run(|x| {
            calls += 1;
            x.update(&t, &key![1], &[("v", Value::Int(-5))])?;
            Err(AppError::Refused("overdrawn"))
        });
        assert!(
            matches!(r, Err(AppError::Refused("overdrawn"))),
            "{p}: {r:?}"
        );
        assert_eq!(calls, 1, "{p}");
        assert_eq!(value(&db, &t, 1), Some(5), "{p}: rolled back");
        // Strata's other errors are not retried either.
        let mut calls = 0;
        let r: Result<(), AppError> = db.try_run(|x| {
            calls += 1;
            Ok(x.delete(&t, &key![77])?)
        });
        assert!(
            matches!(r, Err(AppError::Db(Error::NotFound { .. }))),
            "{p}: {r:?}"
        );
        assert_eq!(calls, 1, "{p}");
    }
}

/// A conflict one of the closure's operations meets is retried, even
/// when the closure turned it into its own error (here: through `?`).
/// A blocker holds the row and commits once the first attempt met it, so
/// the second attempt (a new transaction, begun after) goes through.
#[test]
fn try_run_retries_a_conflict_the_closure_wrapped() {
    // Every protocol meets a held row with a conflict at once (a no-wait
    // writer, or MVTO's and MV2PL's reader of a locked row).
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        load(&db, &t, &[(1, 0)]);
        let mut blocker = Some(db.begin().unwrap());
        let b = blocker.as_mut().unwrap();
        b.update(&t, &key![1], &[("v", Value::Int(100))]).unwrap();
        let mut attempts = 0;
        let mut wrapped = 0;
        let r: Result<i64, AppError> = db.try_run(|x| {
            attempts += 1;
            // The read (MV2PL's read lock) or the write meets the blocker.
            let step = |x: &mut strata::Transaction| -> Result<i64, Error> {
                let v = x.get(&t, &key![1])?.unwrap()[1].as_int().unwrap();
                x.update(&t, &key![1], &[("v", Value::Int(v + 1))])?;
                Ok(v + 1)
            };
            match step(x) {
                Err(e @ Error::Conflict(_)) => {
                    assert!(x.is_conflicted(), "{p}");
                    wrapped += 1;
                    blocker.take().unwrap().commit().unwrap();
                    Err(AppError::Db(e))
                }
                r => Ok(r?),
            }
        });
        assert_eq!(r.unwrap(), 101, "{p}");
        assert_eq!((attempts, wrapped), (2, 1), "{p}");
        assert_eq!(value(&db, &t, 1), Some(101), "{p}");
    }
}

/// When every attempt conflicts, the last attempt's error comes back
/// after `Options::max_retries` retries.
#[test]
fn try_run_gives_up_after_max_retries() {
    let db = strata::Database::open(strata::Options::default().max_retries(3)).unwrap();
    let t = kv_table(&db);
    load(&db, &t, &[(1, 0)]);
    let mut blocker = db.begin().unwrap();
    blocker
        .update(&t, &key![1], &[("v", Value::Int(9))])
        .unwrap();
    let mut attempts = 0;
    let r: Result<(), AppError> = db.try_run(|x| {
        attempts += 1;
        Ok(x.update(&t, &key![1], &[("v", Value::Int(1))])?)
    });
    assert!(
        matches!(
            r,
            Err(AppError::Db(Error::Conflict(ConflictKind::WriteWrite)))
        ),
        "{r:?}"
    );
    assert_eq!(attempts, 4);
    blocker.commit().unwrap();
}

/// `run_read_only` reads a snapshot, returns the closure's value or its
/// error, and refuses writes like any read-only transaction.
#[test]
fn run_read_only_reads_and_refuses_writes() {
    let db = db(Protocol::SiSsn);
    let t = kv_table(&db);
    load(&db, &t, &[(1, 10), (2, 20)]);
    let sum: Result<i64, Error> =
        db.run_read_only(|x| Ok(x.scan(&t, ..)?.iter().map(|r| r[1].as_int().unwrap()).sum()));
    assert_eq!(sum.unwrap(), 30);
    let r: Result<(), AppError> = db.run_read_only(|x| Ok(x.delete(&t, &key![1])?));
    assert!(
        matches!(r, Err(AppError::Db(Error::WriteInReadOnlyTransaction))),
        "{r:?}"
    );
    assert_eq!(value(&db, &t, 1), Some(10));
}

/// `put` inserts a new key, replaces every attribute of an existing row,
/// checks its row as an insert does, and counts as a write the protocol
/// sees (a second writer of the row conflicts).
#[test]
fn put_inserts_or_replaces_the_row() {
    for p in protocols() {
        let db = db(p);
        let t = kv_table(&db);
        db.run(|x| x.put(&t, row![1, 10, "a"])).unwrap();
        db.run(|x| x.put(&t, row![1, 11, "b"])).unwrap();
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.get(&t, &key![1]).unwrap(), Some(row![1, 11, "b"]), "{p}");
        drop(ro);
        let mut x = db.begin().unwrap();
        assert!(
            matches!(
                x.put(&t, row![1, "not an int", "c"]),
                Err(Error::TypeMismatch { .. })
            ),
            "{p}"
        );
        assert!(matches!(x.put(&t, row![2]), Err(Error::Schema(_))), "{p}");
        x.commit().unwrap();
        // Deleted, then put again: an insert.
        db.run(|x| x.delete(&t, &key![1])).unwrap();
        db.run(|x| x.put(&t, row![1, 12, "c"])).unwrap();
        assert_eq!(value(&db, &t, 1), Some(12), "{p}");
    }
}

/// A put of a key that a transaction committed after our snapshot began
/// (invisible to us, there in the index) is a retryable conflict under the
/// protocols that read a snapshot, not a `NotFound`.
#[test]
fn put_of_a_key_inserted_after_the_snapshot_conflicts() {
    for p in protocols_where(|p| !reads_newest_data(p)) {
        let db = db(p);
        let t = kv_table(&db);
        let mut x = db.begin().unwrap();
        // Our snapshot is taken by the first read.
        assert_eq!(x.get(&t, &key![9]).unwrap(), None);
        db.run(|y| y.insert(&t, row![5, 50, "other"])).unwrap();
        let r = x.put(&t, row![5, 51, "ours"]);
        assert!(matches!(r, Err(Error::Conflict(_))), "{p}: {r:?}");
        assert!(x.is_conflicted(), "{p}");
        assert_eq!(value(&db, &t, 5), Some(50), "{p}");
    }
}
