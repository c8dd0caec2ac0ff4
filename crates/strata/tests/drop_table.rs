//! Dropping a table under transactions that write to it (issue 12, item 6):
//! a write after the drop fails at the call, a commit of writes made before
//! the drop fails and rolls back everything, in memory and with the log, and
//! a commit racing with the drop is either ordered before it (visible when
//! the drop returns, durable) or refused.

use crate::common;
use common::{protocols, protocols_where, read_only_sees_every_returned_commit};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use strata::{
    key, row, Database, Durability, Error, Options, Protocol, Schema, SyncPolicy, Table, Type,
    Value,
};

/// `STRATA_SOAK` (see `common::soak`).
fn soak() -> u64 {
    crate::common::soak().into()
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strata-drop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn wal(p: Protocol, d: &Path) -> Options {
    Options::default().protocol(p).durability(Durability::Wal {
        dir: d.to_path_buf(),
        sync: SyncPolicy::GroupCommit,
    })
}

fn table(db: &Database, name: &str) -> Table {
    db.create_table(
        Schema::new(name)
            .column("k", Type::Int)
            .column("v", Type::Int)
            .primary_key(&["k"]),
    )
    .unwrap()
}

/// (k, v) of every row of `t` in a fresh snapshot.
fn rows(db: &Database, t: &Table) -> Vec<(i64, i64)> {
    let mut ro = db.begin_read_only().unwrap();
    ro.scan(t, ..)
        .unwrap()
        .iter()
        .map(|r| (r[0].as_int().unwrap(), r[1].as_int().unwrap()))
        .collect()
}

fn dropped(r: strata::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::TableDropped { table }) => table,
        other => panic!("expected TableDropped, got {other:?}"),
    }
}

/// "kept" with rows 1 and 2, and "gone" with row 1.
fn setup(db: &Database) -> (Table, Table) {
    let kept = table(db, "kept");
    let gone = table(db, "gone");
    db.run(|x| {
        x.insert(&kept, row![1, 10])?;
        x.insert(&kept, row![2, 20])?;
        x.insert(&gone, row![1, 10])
    })
    .unwrap();
    (kept, gone)
}

/// The transaction: a write to "kept", writes to "gone", another to "kept".
fn write_both(x: &mut strata::Transaction, kept: &Table, gone: &Table) -> strata::Result<()> {
    x.insert(kept, row![3, 30])?;
    x.update(gone, &key![1], &[("v", Value::Int(11))])?;
    x.insert(gone, row![2, 20])?;
    x.update(kept, &key![2], &[("v", Value::Int(21))])
}

#[test]
fn a_write_after_the_drop_fails_at_the_call_and_the_transaction_goes_on() {
    for p in protocols() {
        let db = Database::open(Options::default().protocol(p)).unwrap();
        let (kept, gone) = setup(&db);
        let mut x = db.begin().unwrap();
        db.drop_table("gone").unwrap();
        assert_eq!(dropped(x.insert(&gone, row![5, 5])), "gone", "{p}");
        assert_eq!(
            dropped(x.update(&gone, &key![1], &[("v", Value::Int(0))])),
            "gone"
        );
        assert_eq!(dropped(x.delete(&gone, &key![1])), "gone");
        assert_eq!(dropped(x.get(&gone, &key![1])), "gone");
        assert_eq!(dropped(x.scan(&gone, ..)), "gone");
        // Refused calls change nothing: the transaction is still usable.
        x.insert(&kept, row![3, 30]).unwrap();
        x.commit().unwrap();
        assert_eq!(rows(&db, &kept), [(1, 10), (2, 20), (3, 30)], "{p}");
    }
}

/// Writes made before the drop, commit after it: refused, and nothing of
/// the transaction stays (its write to the table that still exists either).
/// Before the fix the commit returned Ok, its rows of "kept" were there and
/// those of "gone" silently lost.
#[test]
fn a_commit_after_the_drop_of_a_table_it_wrote_fails_and_rolls_back() {
    for p in protocols() {
        let db = Database::open(Options::default().protocol(p)).unwrap();
        let (kept, gone) = setup(&db);
        let mut x = db.begin().unwrap();
        write_both(&mut x, &kept, &gone).unwrap();
        db.drop_table("gone").unwrap();
        assert_eq!(dropped(x.commit()), "gone", "{p}");
        assert_eq!(rows(&db, &kept), [(1, 10), (2, 20)], "{p}");
        assert_eq!(db.stats().open_transactions, 0, "{p}");
        // No lock or version of it is left behind.
        db.run(|x| {
            x.insert(&kept, row![3, 33])?;
            x.update(&kept, &key![2], &[("v", Value::Int(22))])
        })
        .unwrap();
        assert_eq!(rows(&db, &kept), [(1, 10), (2, 22), (3, 33)], "{p}");
    }
}

/// The same with the log: the refused commit wrote no record, so reopening
/// shows nothing of it, and the drop itself is durable.
#[test]
fn a_commit_after_the_drop_is_refused_with_the_log_and_reopen_shows_nothing_of_it() {
    for p in protocols() {
        let d = dir(&format!("commit-{p}"));
        {
            let db = Database::open(wal(p, &d)).unwrap();
            let (kept, gone) = setup(&db);
            let mut x = db.begin().unwrap();
            write_both(&mut x, &kept, &gone).unwrap();
            db.drop_table("gone").unwrap();
            assert_eq!(dropped(x.commit()), "gone", "{p}");
            // A later commit goes to the log after the drop.
            db.run(|x| x.insert(&kept, row![4, 40])).unwrap();
        }
        let db = Database::open(wal(p, &d)).unwrap();
        assert!(db.table("gone").is_err(), "{p}: the drop was lost");
        let kept = db.table("kept").unwrap();
        assert_eq!(rows(&db, &kept), [(1, 10), (2, 20), (4, 40)], "{p}");
        drop(db);
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// Writers commit to both tables while another thread drops one. Every
/// commit that returned Ok must be ordered before the drop: its row in
/// "kept" is visible to a snapshot taken as soon as `drop_table` returns,
/// and (with the log) survives a reopen; every refused one left nothing.
#[test]
fn commits_racing_with_a_drop_are_ordered_before_it_or_refused() {
    // Each round one protocol whose read-only snapshot taken as the drop
    // returns sees every commit that returned (not MVTO's, see the
    // predicate).
    let ps: Vec<Protocol> = protocols_where(read_only_sees_every_returned_commit).collect();
    for round in 0..ps.len() as u64 * soak() {
        for logged in [false, true] {
            let p = ps[round as usize % ps.len()];
            let d = dir(&format!("race-{round}-{logged}"));
            let opts = if logged {
                wal(p, &d)
            } else {
                Options::default().protocol(p)
            };
            let (ok, refused) = {
                let db = Database::open(opts.clone()).unwrap();
                let kept = table(&db, "kept");
                let gone = table(&db, "gone");
                let commits = AtomicU64::new(0);
                let (ok, refused, at_drop) = std::thread::scope(|sc| {
                    let workers: Vec<_> = (0..2i64)
                        .map(|w| {
                            let (db, kept, gone) = (&db, &kept, &gone);
                            let commits = &commits;
                            sc.spawn(move || {
                                let (mut ok, mut refused) = (Vec::new(), Vec::new());
                                for i in 0.. {
                                    let k = w * 1_000_000 + i;
                                    let mut x = db.begin().unwrap();
                                    let r = x
                                        .insert(kept, row![k, k])
                                        .and_then(|_| x.insert(gone, row![k, k]))
                                        .and_then(|_| x.commit());
                                    match r {
                                        Ok(()) => {
                                            ok.push(k);
                                            commits.fetch_add(1, SeqCst);
                                        }
                                        // At the write or at the commit; all
                                        // later ones fail too.
                                        Err(Error::TableDropped { .. }) => {
                                            refused.push(k);
                                            break;
                                        }
                                        Err(e) => panic!("{p}: {e:?}"),
                                    }
                                }
                                (ok, refused)
                            })
                        })
                        .collect();
                    while commits.load(SeqCst) < 20 {
                        std::thread::yield_now();
                    }
                    db.drop_table("gone").unwrap();
                    let at_drop = rows(&db, &kept);
                    let (mut ok, mut refused) = (Vec::new(), Vec::new());
                    for w in workers {
                        let (o, r) = w.join().unwrap();
                        ok.extend(o);
                        refused.extend(r);
                    }
                    (ok, refused, at_drop)
                });
                // Committed before the drop returned, or not at all.
                let at_drop: Vec<i64> = at_drop.iter().map(|r| r.0).collect();
                for k in &ok {
                    assert!(at_drop.contains(k), "{p}: {k} committed after the drop");
                }
                let now: Vec<i64> = rows(&db, &kept).iter().map(|r| r.0).collect();
                let mut want = ok.clone();
                want.sort_unstable();
                assert_eq!(now, want, "{p}: refused commits left rows");
                (want, refused)
            };
            if logged {
                let db = Database::open(opts).unwrap();
                let kept = db.table("kept").unwrap();
                let now: Vec<i64> = rows(&db, &kept).iter().map(|r| r.0).collect();
                assert_eq!(now, ok, "{p}: after reopen");
                assert!(refused.iter().all(|k| !now.contains(k)));
                assert!(db.table("gone").is_err());
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}
