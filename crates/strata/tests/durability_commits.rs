//! Durability of commits as they are acknowledged: the Async loss bound,
//! pipelined commits and their tickets, group-commit readers that wait
//! only for what they read, and a commit that asks for its own fsync.

use crate::common;
use crate::durability::*;
use common::{eventually, protocols};
use std::path::Path;
use strata::{key, row, Database, Error, LogTuning, Options, Protocol, SyncPolicy, Table, Value};

#[test]
fn async_commits_are_durable_after_sync_log_and_within_the_interval() {
    let d = dir("async");
    let o = opts(&d, SyncPolicy::Async, tuning());
    let copy = {
        let db = Database::open(o).unwrap();
        let kv = kv(&db);
        for k in 0..100 {
            put(&db, &kv, k, k);
        }
        db.sync_log().unwrap();
        for k in 100..110 {
            put(&db, &kv, k, k);
        }
        // The flusher writes them by itself (within its interval; waited
        // for by the durable end it reports, not by time: the bound only
        // turns a flusher that never comes into a failure).
        let flushed = eventually(|| {
            let s = db.log_stats().unwrap();
            s.durable_bytes == s.bytes
        });
        let s = db.log_stats().unwrap();
        assert!(flushed, "the flusher never wrote the last commits: {s:?}");
        assert!(s.flushes >= 1 && s.records == 111, "{s:?}");
        crash_copy(db, &d, "async-copy")
    };
    let db = Database::open(opts(&copy, SyncPolicy::Async, tuning())).unwrap();
    assert_eq!(all(&db, &db.table("kv").unwrap()).len(), 110);
}

/// Issue 12 item 4: under Async the flusher may not get a core for a long
/// time (here its timer never fires: a one-hour interval), yet a crash
/// loses at most `async_max_unflushed_bytes` of acknowledged records:
/// commits wait rather than exceed it. Counted in bytes, not timed.
#[test]
fn async_loss_is_bounded_in_bytes_when_the_flusher_does_not_run() {
    let d = dir("async-bound");
    let bound = 8u64 << 10;
    let t = LogTuning {
        async_flush_interval: std::time::Duration::from_secs(3600),
        async_max_unflushed_bytes: bound,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(&d, SyncPolicy::Async, t.clone())).unwrap();
    let kv = kv(&db);
    put_from_threads(&db, &kv, 4, 100);
    // Every commit is acknowledged; the log ends at `acked`.
    let s = db.log_stats().unwrap();
    let acked = s.bytes;
    assert!(s.async_waits > 0, "{s:?}");
    let copy = crash_copy(db, &d, "async-bound-copy");
    let db = Database::open(opts(&copy, SyncPolicy::Async, t)).unwrap();
    let r = db.recovery_report().unwrap();
    assert!(
        r.log_end_lsn + bound >= acked,
        "lost {} bytes of acknowledged commits, bound {bound}: {r:?}",
        acked - r.log_end_lsn
    );
    // A commit record here is well over 48 bytes.
    let rows = all(&db, &db.table("kv").unwrap()).len() as u64;
    assert!(rows + bound / 48 >= 400, "{rows} of 400 rows recovered");
}

/// Async with a flusher that never flushes on its own (a one-hour timer and
/// a byte bound no test reaches): nothing is durable until a ticket's wait
/// (or a catalog change) asks for a flush. With the `kv` table, settled.
fn held_flusher(d: &Path, p: Protocol) -> (Database, Table) {
    let t = LogTuning {
        async_flush_interval: std::time::Duration::from_secs(3600),
        async_max_unflushed_bytes: 1 << 30,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(d, SyncPolicy::Async, t).protocol(p)).unwrap();
    let kv = kv(&db);
    settle(&db);
    (db, kv)
}

/// A wait (a catalog change's, a ticket's) rings the flusher's bell; a
/// ring left over from it gives one more flush pass soon after, which
/// would flush a commit a test needs in flight. Waits until that pass has
/// gone by: the flusher asleep with nothing rung (`LogStats::flusher_quiet`).
fn settle(db: &Database) {
    assert!(
        eventually(|| db.log_stats().unwrap().flusher_quiet),
        "the flusher never went quiet"
    );
}

/// A pipelined commit is visible at once and durable only after its
/// ticket's wait: a crash before loses it, a crash after keeps it. A reader
/// of a not yet durable commit gets a ticket that covers it (read-only and
/// read-write readers alike), and a later ticket covers earlier commits.
#[test]
fn pipelined_commits_are_durable_once_their_ticket_waits() {
    for p in protocols() {
        let d = dir(&format!("pipelined-{p}"));
        let (db, kv) = held_flusher(&d, p);
        let ((), t1) = db
            .run_pipelined(|x| x.insert(&kv, row![1, 10, "one"]))
            .unwrap();
        assert!(!t1.is_durable(), "{p}: nothing flushed it yet: {t1:?}");
        // Visible before it is durable.
        assert_eq!(get(&db, &kv, 1), Some(10), "{p}");
        let mut ro = db.begin_read_only().unwrap();
        assert!(ro.get(&kv, &key![1]).unwrap().is_some());
        let reader = ro.commit_pipelined().unwrap();
        let mut rw = db.begin().unwrap();
        assert!(rw.get(&kv, &key![1]).unwrap().is_some());
        let rw_reader = rw.commit_pipelined().unwrap();
        assert!(
            !t1.is_durable() && !reader.is_durable() && !rw_reader.is_durable(),
            "{p}"
        );
        let crashed = copy_dir(&d, &format!("pipelined-{p}-before"));
        {
            let c = Database::open(opts(&crashed, SyncPolicy::GroupCommit, tuning())).unwrap();
            assert_eq!(
                get(&c, &c.table("kv").unwrap(), 1),
                None,
                "{p}: not durable yet"
            );
        }
        // A reader's wait makes what it read durable.
        reader.wait().unwrap();
        assert!(t1.is_durable() && rw_reader.is_durable(), "{p}");
        let ((), t2) = db
            .run_pipelined(|x| x.update(&kv, &key![1], &[("v", Value::Int(11))]))
            .unwrap();
        let ((), t3) = db
            .run_pipelined(|x| x.insert(&kv, row![2, 20, "two"]))
            .unwrap();
        assert!(!t2.is_durable(), "{p}");
        t3.wait().unwrap();
        assert!(t2.is_durable() && t3.is_durable(), "{p}: log order");
        t3.wait().unwrap();
        let crashed = crash_copy(db, &d, &format!("pipelined-{p}-after"));
        let c = Database::open(opts(&crashed, SyncPolicy::GroupCommit, tuning())).unwrap();
        assert_eq!(
            all(&c, &c.table("kv").unwrap()),
            vec![(1, 11), (2, 20)],
            "{p}"
        );
    }
}

/// Under group commit a transaction that wrote nothing returns from
/// `commit` only once the commits it read are durable: a value it read
/// from a commit still waiting for its fsync is not acknowledged before
/// that fsync (a crash could otherwise lose a value a client was shown).
/// Point reads by read-only and read-write transactions, and scans; the
/// writer is a pipelined commit, so nothing else waits for its fsync.
#[test]
fn a_group_commit_reader_returns_once_what_it_read_is_durable() {
    let d = dir("reader-waits");
    let db = open(&d);
    let kv = kv(&db);
    for k in 0..30 {
        let ((), w) = db
            .run_pipelined(|x| x.insert(&kv, row![k, k, "x"]))
            .unwrap();
        match k % 3 {
            0 => {
                let mut r = db.begin_read_only().unwrap();
                assert!(r.get(&kv, &key![k]).unwrap().is_some());
                r.commit().unwrap();
            }
            1 => db
                .run(|x| x.get(&kv, &key![k]).map(|r| assert!(r.is_some())))
                .unwrap(),
            _ => {
                let mut r = db.begin_read_only().unwrap();
                assert_eq!(r.scan(&kv, key![k]..=key![k]).unwrap().len(), 1);
                r.commit().unwrap();
            }
        }
        assert!(
            w.is_durable(),
            "commit {k} was read and acknowledged before it was durable"
        );
    }
}

/// A reader waits only for the commits it read: a point read of a durable
/// row needs nothing more while another commit is still in flight; a read
/// of the commit in flight, of a row it deleted, of an absent key, a scan,
/// or a refused write (the key's absence was read) wait for the log.
/// Tickets of pipelined readers, under a flusher that flushes only when
/// asked, so "durable" cannot happen by chance. (MVTO's clock is not the
/// log's, so its readers always wait for everything reserved.)
#[test]
fn readers_wait_only_for_the_commits_they_read() {
    for p in protocols() {
        let d = dir(&format!("reader-precise-{p}"));
        let (db, kv) = held_flusher(&d, p);
        let ((), old) = db
            .run_pipelined(|x| x.insert(&kv, row![1, 1, "old"]))
            .unwrap();
        old.wait().unwrap();
        settle(&db);
        let ((), _new) = db
            .run_pipelined(|x| x.insert(&kv, row![2, 2, "new"]))
            .unwrap();
        let reader = |f: &dyn Fn(&mut strata::Transaction)| {
            let mut r = db.begin_read_only().unwrap();
            f(&mut r);
            r.commit_pipelined().unwrap()
        };
        let of_old = reader(&|r| assert!(r.get(&kv, &key![1]).unwrap().is_some()));
        assert_eq!(of_old.is_durable(), p != Protocol::Mvto, "{p}: {of_old:?}");
        assert!(reader(&|_| {}).is_durable(), "{p}: read nothing");
        for (what, t) in [
            (
                "the commit in flight",
                reader(&|r| assert!(r.get(&kv, &key![2]).unwrap().is_some())),
            ),
            (
                "an absent key",
                reader(&|r| assert!(r.get(&kv, &key![3]).unwrap().is_none())),
            ),
            (
                "a scan",
                reader(&|r| assert_eq!(r.scan(&kv, key![1]..=key![1]).unwrap().len(), 1)),
            ),
        ] {
            assert!(!t.is_durable(), "{p}: a reader of {what}: {t:?}");
        }
        let mut x = db.begin().unwrap();
        assert!(x.update(&kv, &key![3], &[("v", Value::Int(0))]).is_err());
        let refused = x.commit_pipelined().unwrap();
        assert!(!refused.is_durable(), "{p}: a refused update: {refused:?}");
        // A delete in flight: the row reads as absent through its tombstone.
        let ((), _del) = db.run_pipelined(|x| x.delete(&kv, &key![1])).unwrap();
        let of_delete = reader(&|r| assert!(r.get(&kv, &key![1]).unwrap().is_none()));
        assert!(
            !of_delete.is_durable(),
            "{p}: a reader of a delete in flight"
        );
        of_delete.wait().unwrap();
        assert!(refused.is_durable(), "{p}");
    }
}

/// Under group commit a thread can keep many commits in flight: one fsync
/// covers them all, and every ticket waited on survives a crash.
#[test]
fn pipelined_group_commits_share_fsyncs_and_survive_a_crash() {
    let d = dir("pipelined-group");
    let db = open(&d);
    let kv = kv(&db);
    let before = db.log_stats().unwrap();
    let tickets: Vec<_> = (0..200)
        .map(|k| {
            db.run_pipelined(|x| x.insert(&kv, row![k, k, "x"]))
                .unwrap()
                .1
        })
        .collect();
    for t in &tickets {
        t.wait().unwrap();
    }
    let s = db.log_stats().unwrap();
    assert!(
        s.flushes - before.flushes < 200,
        "200 pipelined commits took {} fsyncs",
        s.flushes - before.flushes
    );
    let crashed = crash_copy(db, &d, "pipelined-group-copy");
    let c = open(&crashed);
    assert_eq!(all(&c, &c.table("kv").unwrap()).len(), 200);
}

/// In memory there is nothing to wait for; a log that failed fails the
/// tickets of the commits it did not make durable, and refuses new ones.
#[test]
fn pipelined_tickets_in_memory_and_after_a_log_failure() {
    let db = Database::open(Options::default()).unwrap();
    let table = kv(&db);
    let ((), t) = db
        .run_pipelined(|x| x.insert(&table, row![1, 1, "x"]))
        .unwrap();
    assert!(t.is_durable());
    t.wait().unwrap();

    let d = dir("pipelined-full");
    let t = LogTuning {
        max_log_bytes: Some(8 << 10),
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
    let kv = kv(&db);
    let mut tickets = Vec::new();
    let insert =
        |k: i64| db.run_pipelined(|x| x.insert(&kv, row![k, k, "some text to fill the log"]));
    // 1,000 commits hold about eight times the budget, but all of them fit
    // in the 16 MiB ring: whether the flusher wrote (and failed) before the
    // last one is up to the scheduler (it had not, once, in CI). Waiting
    // for the last ticket makes it write, so the next commit meets the
    // failed log whichever way the run went.
    let mut refused = (0..1_000).find_map(|k| match insert(k) {
        Ok(((), t)) => {
            tickets.push((k, t));
            None
        }
        Err(e) => Some(e),
    });
    if refused.is_none() {
        let (_, last) = tickets.last().unwrap();
        assert!(
            matches!(last.wait(), Err(Error::ReadOnly { .. })),
            "1,000 commits fit in an 8 KiB log"
        );
        refused = insert(1_000).err();
    }
    assert!(
        matches!(&refused, Some(Error::ReadOnly { .. })),
        "{refused:?}"
    );
    let (durable, failed): (Vec<_>, Vec<_>) = tickets.iter().partition(|(_, t)| t.wait().is_ok());
    assert!(
        !failed.is_empty(),
        "the commits past the full disk fail their tickets"
    );
    assert!(failed.iter().all(|(_, t)| !t.is_durable()));
    assert!(matches!(failed[0].1.wait(), Err(Error::ReadOnly { .. })));
    drop(db);
    let db = open(&d);
    let kv = db.table("kv").unwrap();
    for (k, _) in durable {
        assert_eq!(get(&db, &kv, *k), Some(*k), "commit {k} was durable");
    }
}

/// `commit_with(GroupCommit)` in an Async database returns only once its
/// record is on disk, though the flusher would not have run for an hour;
/// a plain commit there returns before.
#[test]
fn a_commit_can_ask_for_its_fsync_in_an_async_database() {
    let d = dir("commit-with-sync");
    let t = LogTuning {
        async_flush_interval: std::time::Duration::from_secs(3600),
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(&d, SyncPolicy::Async, t)).unwrap();
    let kv = kv(&db);
    let mut txn = db.begin().unwrap();
    txn.insert(&kv, row![1, 1, "async"]).unwrap();
    txn.commit().unwrap();
    let s = db.log_stats().unwrap();
    assert!(s.durable_bytes < s.bytes, "an Async commit waited: {s:?}");
    let mut txn = db.begin().unwrap();
    txn.insert(&kv, row![2, 2, "sync"]).unwrap();
    txn.commit_with(SyncPolicy::GroupCommit).unwrap();
    let s = db.log_stats().unwrap();
    assert_eq!(s.durable_bytes, s.bytes, "{s:?}");
}

/// `commit_with(Async)` in a GroupCommit database acknowledges before the
/// fsync: when the log fails (a full disk), commits it acknowledged are
/// lost, as an Async database's may be (within the loss bound), where a
/// plain commit there is never acknowledged unless durable
/// (`full_disk_fails_commits_...`).
#[test]
fn an_async_commit_in_a_group_commit_database_does_not_wait_for_its_fsync() {
    let d = dir("commit-with-async");
    let t = LogTuning {
        max_log_bytes: Some(8 << 10),
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let mut acked = Vec::new();
    {
        let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap();
        let kv = kv(&db);
        for k in 0..1000 {
            let mut txn = db.begin().unwrap();
            txn.insert(&kv, row![k, k, "some text to fill the log"])
                .unwrap();
            match txn.commit_with(SyncPolicy::Async) {
                Ok(()) => acked.push(k),
                Err(Error::ReadOnly { .. }) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
        // The flusher meets the full disk after some of those returned.
        assert!(
            matches!(db.sync_log(), Err(Error::ReadOnly { .. })),
            "the log filled"
        );
    }
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
    let recovered = all(&db, &db.table("kv").unwrap()).len();
    assert!(
        recovered < acked.len(),
        "every acknowledged commit was durable: {recovered} of {}",
        acked.len()
    );
}
