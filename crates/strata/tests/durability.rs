//! Durability: reopen after a clean close, checkpoints, a full disk, the
//! directory lock, every value type through the log and a checkpoint, and
//! the helpers the other durability files share. Damaged and missing
//! files (and that a refused open changes none of them) are in
//! `durability_damage.rs`; the Async loss bound, pipelined and group
//! commits in `durability_commits.rs`; crash tests (SIGKILL) in
//! `crash.rs`.

use crate::common;
use common::{
    configs, eventually, protocols, reclaims, segments, storage_pointer_schemes, TestDir,
};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use strata::{
    key, row, Database, Durability, Error, LogTuning, Options, PointLookups, Schema, SyncPolicy,
    Table, Type, Unique, Value,
};

pub(crate) fn dir(name: &str) -> TestDir {
    TestDir::new(&format!("strata-dur-{name}"))
}

pub(crate) fn tuning() -> LogTuning {
    LogTuning {
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    }
}

pub(crate) fn opts(d: &Path, sync: SyncPolicy, t: LogTuning) -> Options {
    Options::default()
        .durability(Durability::Wal {
            dir: d.to_path_buf(),
            sync,
        })
        .log_tuning(t)
}

pub(crate) fn open(d: &Path) -> Database {
    Database::open(opts(d, SyncPolicy::GroupCommit, tuning())).expect("open")
}

/// The message of an `Error::Corrupt` (any other outcome fails the test).
pub(crate) fn corrupt(e: Error) -> String {
    match e {
        Error::Corrupt(m) => m,
        e => panic!("expected Error::Corrupt, got {e:?}"),
    }
}

pub(crate) fn open_err(d: &Path) -> Error {
    Database::open(opts(d, SyncPolicy::GroupCommit, tuning())).expect_err("must refuse")
}

pub(crate) fn kv(db: &Database) -> Table {
    db.create_table(
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .column("note", Type::Text)
            .primary_key(&["k"]),
    )
    .unwrap()
}

pub(crate) fn put(db: &Database, t: &Table, k: i64, v: i64) {
    db.run(|txn| {
        if txn.get(t, &key![k])?.is_some() {
            txn.update(t, &key![k], &[("v", Value::Int(v))])
        } else {
            txn.insert(t, row![k, v, format!("note {k}")])
        }
    })
    .unwrap();
}

/// `threads` threads, thread `i` putting keys `i * 1000 + k` -> `k` for
/// `k` below `each`; returns once all are done.
pub(crate) fn put_from_threads(db: &Database, t: &Table, threads: i64, each: i64) {
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let (db, t) = (db.clone(), t.clone());
            std::thread::spawn(move || {
                for k in 0..each {
                    put(&db, &t, i * 1000 + k, k);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

pub(crate) fn get(db: &Database, t: &Table, k: i64) -> Option<i64> {
    let mut ro = db.begin_read_only().unwrap();
    ro.get(t, &key![k]).unwrap().map(|r| r[1].as_int().unwrap())
}

pub(crate) fn all(db: &Database, t: &Table) -> Vec<(i64, i64)> {
    let mut ro = db.begin_read_only().unwrap();
    ro.scan(t, ..)
        .unwrap()
        .into_iter()
        .map(|r| (r[0].as_int().unwrap(), r[1].as_int().unwrap()))
        .collect()
}

/// Bytes before the first record of a log segment (header and the two
/// durable-end marks; `log/segment.rs`).
pub(crate) const SEG_HEADER: u64 = 4096;

pub(crate) fn set_len(p: &Path, len: u64) {
    fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Every file of `d` with its bytes.
pub(crate) fn snapshot(d: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect()
}

pub(crate) fn copy_dir(from: &Path, name: &str) -> TestDir {
    let to = dir(name);
    fs::create_dir_all(&to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    to
}

/// What a crash leaves: the files as they are while `db` is open (no clean
/// close), copied to a fresh directory. `db` is leaked, so nothing runs at
/// drop (and its directory stays locked by this process). Its flusher may
/// still write to `d`, so the caller keeps `d`'s guard to the end of the
/// test.
pub(crate) fn crash_copy(db: Database, d: &Path, name: &str) -> TestDir {
    std::mem::forget(db);
    copy_dir(d, name)
}

/// The newest checkpoint file (the one MANIFEST names).
pub(crate) fn checkpoint_file(d: &Path) -> PathBuf {
    fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .max()
        .unwrap()
}

/// Ten commits of one row each into a fresh database, then a crash (the
/// last commit's flush is not yet covered by a durable-end mark, so damage
/// to it is a torn tail); returns the crashed directory, and the live one
/// for the caller to hold to the end of the test (see `crash_copy`).
pub(crate) fn ten_commits(name: &str) -> (TestDir, TestDir) {
    let d = dir(&format!("{name}-live"));
    let db = open(&d);
    let t = kv(&db);
    for k in 0..10 {
        put(&db, &t, k, k * 10);
    }
    (crash_copy(db, &d, name), d)
}

#[test]
fn reopen_recovers_rows_updates_deletes_and_the_catalog() {
    for p in protocols() {
        let d = dir(&format!("reopen-{p}"));
        let o = opts(&d, SyncPolicy::GroupCommit, tuning()).protocol(p);
        {
            let db = Database::open(o.clone()).unwrap();
            let t = kv(&db);
            let gone = db
                .create_table(
                    Schema::new("gone")
                        .column("a", Type::Int)
                        .primary_key(&["a"]),
                )
                .unwrap();
            db.run(|x| x.insert(&gone, row![1])).unwrap();
            for k in 0..50 {
                put(&db, &t, k, k);
            }
            for k in 0..10 {
                put(&db, &t, k, 1000 + k);
            }
            db.run(|x| x.delete(&t, &key![20])).unwrap();
            // Insert and delete in one transaction, and an aborted one.
            db.run(|x| {
                x.insert(&t, row![99, 1, "x"])?;
                x.delete(&t, &key![99])
            })
            .unwrap();
            let mut a = db.begin().unwrap();
            a.insert(&t, row![77, 1, "aborted"]).unwrap();
            a.abort();
            db.drop_table("gone").unwrap();
            db.create_table(
                Schema::new("gone")
                    .column("b", Type::Text)
                    .primary_key(&["b"]),
            )
            .unwrap();
        }
        let db = Database::open(o).unwrap();
        let r = db.recovery_report().unwrap();
        assert!(r.torn_tail.is_none(), "{p}: {r:?}");
        assert!(r.transactions_replayed >= 60, "{p}: {r:?}");
        assert_eq!(r.catalog_records_replayed, 4, "{p}");
        let t = db.table("kv").unwrap();
        let rows = all(&db, &t);
        assert_eq!(rows.len(), 49, "{p}");
        assert_eq!(get(&db, &t, 3), Some(1003));
        assert_eq!(get(&db, &t, 30), Some(30));
        assert_eq!(get(&db, &t, 20), None);
        assert_eq!(get(&db, &t, 99), None);
        assert_eq!(get(&db, &t, 77), None);
        assert_eq!(db.table("gone").unwrap().schema().columns[0].name, "b");
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.get(&t, &key![5]).unwrap().unwrap()[2],
            Value::from("note 5")
        );
        // The clock continues above everything recovered.
        assert!(ro.snapshot_ts() > r.max_commit_ts, "{p}: {r:?}");
        drop(ro);
        // And new commits after recovery are durable too.
        put(&db, &t, 500, 5);
        drop(db);
        let db = Database::open(opts(&d, SyncPolicy::GroupCommit, tuning()).protocol(p)).unwrap();
        assert_eq!(get(&db, &db.table("kv").unwrap(), 500), Some(5));
    }
}

/// The redo record of an in-place scheme is read from the master and the
/// overwritten version's record, and a checkpoint of an O2N table walks from
/// the oldest version: both must log and recover the newest values.
#[test]
fn every_version_storage_logs_checkpoints_and_recovers() {
    // Every storage under every policy that reclaims (GC moves what the
    // checkpoint walks).
    for c in configs().storages().gc_where(reclaims) {
        let (s, gc) = (c.storage, c.gc);
        let d = dir(&format!("storage-{s:?}-{gc:?}"));
        let o = opts(&d, SyncPolicy::GroupCommit, tuning())
            .version_storage(s)
            .gc(gc);
        let expect: Vec<(i64, i64)> = (0..40)
            .filter(|k| k % 7 != 3)
            .map(|k| (k, k * 3 + 2))
            .collect();
        {
            let db = Database::open(o.clone()).unwrap();
            let t = kv(&db);
            for k in 0..40 {
                put(&db, &t, k, k);
            }
            // Half the updates before the checkpoint, half after it.
            for k in 0..20 {
                put(&db, &t, k, k * 3 + 2);
            }
            db.collect_garbage();
            db.checkpoint().unwrap();
            for k in 20..40 {
                put(&db, &t, k, k * 3 + 2);
            }
            for k in (0..40).filter(|k| k % 7 == 3) {
                db.run(|x| x.delete(&t, &key![k])).unwrap();
            }
            db.run(|x| x.update(&t, &key![5], &[("note", Value::from("changed"))]))
                .unwrap();
            assert_eq!(all(&db, &t), expect, "{s:?} before reopen");
        }
        let db = Database::open(o).unwrap();
        let t = db.table("kv").unwrap();
        assert_eq!(all(&db, &t), expect, "{s:?} after reopen");
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(
            ro.get(&t, &key![5]).unwrap().unwrap()[2],
            Value::from("changed"),
            "{s:?}"
        );
        assert_eq!(
            ro.get(&t, &key![6]).unwrap().unwrap()[2],
            Value::from("note 6"),
            "{s:?}"
        );
    }
}

/// Index definitions are durable: created before a checkpoint (carried by
/// it), after it (in the log), dropped after it; a reopened database has
/// exactly the live indexes, their scans agree with the primary key, a
/// unique one still refuses duplicates, and a checkpoint taken after the
/// reopen carries the recovered definitions on.
#[test]
fn reopen_keeps_secondary_indexes_and_index_scans_agree() {
    for (s, p) in storage_pointer_schemes() {
        let d = dir(&format!("sec-{s:?}-{p:?}"));
        let o = opts(&d, SyncPolicy::GroupCommit, tuning())
            .version_storage(s)
            .index_pointers(p);
        {
            let db = Database::open(o.clone()).unwrap();
            let t = kv(&db);
            for k in 0..30 {
                put(&db, &t, k, k % 5);
            }
            db.create_index("by_v", &t, &["v"], Unique::No).unwrap();
            db.create_index("by_note", &t, &["note"], Unique::Yes)
                .unwrap();
            db.create_index("gone", &t, &["v", "note"], Unique::No)
                .unwrap();
            db.checkpoint().unwrap();
            db.create_index("by_vk", &t, &["v", "k"], Unique::Yes)
                .unwrap();
            db.drop_index("gone").unwrap();
            for k in 0..10 {
                put(&db, &t, k, 100 + k);
            }
            db.run(|x| x.delete(&t, &key![29])).unwrap();
        }
        for round in 0..2 {
            let db = Database::open(o.clone()).unwrap();
            let what = format!("{s:?} {p:?} reopen {round}");
            assert_eq!(db.index_names(), vec!["by_note", "by_v", "by_vk"], "{what}");
            let t = db.table("kv").unwrap();
            let rows = all(&db, &t);
            assert_eq!(rows.len(), 29, "{what}");
            let mut by_v: Vec<(i64, i64)> = rows.iter().map(|&(k, v)| (v, k)).collect();
            by_v.sort();
            let mut ro = db.begin_read_only().unwrap();
            for name in ["by_v", "by_vk"] {
                let got: Vec<(i64, i64)> = ro
                    .index_scan(&db.index(name).unwrap(), ..)
                    .unwrap()
                    .iter()
                    .map(|r| (r[1].as_int().unwrap(), r[0].as_int().unwrap()))
                    .collect();
                assert_eq!(got, by_v, "{what} {name}");
            }
            let hit = ro
                .index_get(&db.index("by_v").unwrap(), &key![103])
                .unwrap();
            assert_eq!(hit, vec![row![3, 103, "note 3"]], "{what}");
            let notes = ro.index_scan(&db.index("by_note").unwrap(), ..).unwrap();
            assert_eq!(notes.len(), 29, "{what}");
            drop(ro);
            let r = db.run(|x| x.insert(&t, row![500, 1, "note 7"]));
            assert!(
                matches!(r, Err(Error::DuplicateKey { .. })),
                "{what}: {r:?}"
            );
            // The recovered definitions go into the next checkpoint.
            db.checkpoint().unwrap();
        }
    }
}

/// A table without a hash side comes back as one, from the log and from a
/// checkpoint, and answers point reads and scans from its tree.
#[test]
fn a_tree_only_table_keeps_its_kind_across_reopens() {
    let d = dir("tree-only");
    let o = || opts(&d, SyncPolicy::GroupCommit, tuning());
    let tree_kv = |db: &Database| {
        db.create_table(
            Schema::new("log")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .column("note", Type::Text)
                .primary_key(&["k"])
                .point_lookups(PointLookups::Tree),
        )
        .unwrap()
    };
    {
        let db = Database::open(o()).unwrap();
        let t = tree_kv(&db);
        for k in 0..30 {
            put(&db, &t, k, k);
        }
    }
    for round in 0..2 {
        let db = Database::open(o()).unwrap();
        let t = db.table("log").unwrap();
        assert_eq!(
            t.schema().point_lookups,
            PointLookups::Tree,
            "round {round}"
        );
        assert_eq!(get(&db, &t, 7), Some(7));
        assert_eq!(all(&db, &t).len(), 30);
        put(&db, &t, 7, -7);
        assert_eq!(get(&db, &t, 7), Some(-7));
        put(&db, &t, 7, 7);
        // The second open reads it back from the checkpoint.
        db.checkpoint().unwrap();
    }
}

#[test]
fn checkpoint_then_log_recovers_and_removes_covered_segments() {
    let d = dir("ckpt");
    let t = LogTuning {
        segment_bytes: 4096,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    {
        let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap();
        let kv = kv(&db);
        for k in 0..200 {
            put(&db, &kv, k, k);
        }
        let before = segments(&d).len();
        assert!(before > 3, "small segments rotate: {before}");
        assert_eq!(db.checkpoint().unwrap(), 200);
        assert!(segments(&d).len() < before, "covered segments removed");
        for k in 0..50 {
            put(&db, &kv, k, -k);
        }
        db.run(|x| x.delete(&kv, &key![199])).unwrap();
    }
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
    let r = db.recovery_report().unwrap();
    assert_eq!(r.checkpoint_rows, 200, "{r:?}");
    assert!(r.checkpoint.is_some());
    assert_eq!(
        r.transactions_replayed, 51,
        "only the log after the checkpoint: {r:?}"
    );
    let kv = db.table("kv").unwrap();
    let rows = all(&db, &kv);
    assert_eq!(rows.len(), 199);
    assert_eq!(get(&db, &kv, 7), Some(-7));
    assert_eq!(get(&db, &kv, 150), Some(150));
}

#[test]
fn background_checkpoints_run_while_transactions_commit() {
    let d = dir("bg-ckpt");
    let t = LogTuning {
        segment_bytes: 8192,
        checkpoint_every_bytes: Some(16 << 10),
        ..LogTuning::default()
    };
    {
        let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap();
        let kv = kv(&db);
        put_from_threads(&db, &kv, 2, 300);
        // The checkpointer runs by itself past `checkpoint_every_bytes`;
        // waited for by its count (the bound only turns one that never
        // comes into a failure).
        eventually(|| db.log_stats().unwrap().checkpoints > 0);
        assert!(db.log_stats().unwrap().checkpoints > 0);
    }
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
    assert!(db.recovery_report().unwrap().checkpoint.is_some());
    assert_eq!(all(&db, &db.table("kv").unwrap()).len(), 600);
}

#[test]
fn second_open_of_a_locked_directory_is_refused() {
    let d = dir("lock");
    let db = open(&d);
    let before = snapshot(&d);
    match open_err(&d) {
        Error::Locked { path } => assert_eq!(path, *d),
        e => panic!("{e:?}"),
    }
    assert_eq!(snapshot(&d), before, "a refused open changes nothing");
    drop(db);
    let _again = open(&d);
}

/// A directory the system refuses is `Error::Io` carrying the system's own
/// error: its kind to branch on, and as the error's source.
#[test]
fn an_io_failure_keeps_the_systems_error() {
    let d = dir("io-kind");
    fs::create_dir_all(&*d).unwrap();
    let file = d.join("a-file");
    fs::write(&file, b"not a directory").unwrap();
    let e = open_err(&file.join("db"));
    assert!(
        matches!(&e, Error::Io { context, .. } if context.contains("a-file")),
        "{e:?}"
    );
    assert_eq!(
        e.io_kind(),
        Some(std::io::ErrorKind::NotADirectory),
        "{e:?}"
    );
    let source = std::error::Error::source(&e).expect("the system's error is the source");
    assert_eq!(
        source.downcast_ref::<strata::IoError>().map(|s| s.kind()),
        Some(std::io::ErrorKind::NotADirectory)
    );
}

/// Issue 12 item 5: the lock is on the directory itself, so deleting a file
/// (the `LOCK` file earlier versions locked) cannot let a second open in.
#[test]
fn deleting_the_lock_file_does_not_unlock_the_directory() {
    let d = dir("lock-deleted");
    let db = open(&d);
    let _ = fs::remove_file(d.join("LOCK"));
    match open_err(&d) {
        Error::Locked { path } => assert_eq!(path, *d),
        e => panic!("a second open got in after LOCK was deleted: {e:?}"),
    }
    assert!(!d.join("LOCK").exists(), "opening creates no lock file");
    drop(db);
    let _again = open(&d);
}

#[test]
fn full_disk_fails_commits_with_io_and_turns_read_only_keeping_acknowledged_data() {
    let d = dir("full");
    let t = LogTuning {
        max_log_bytes: Some(8 << 10),
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let mut acked = Vec::new();
    {
        let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t.clone())).unwrap();
        let kv = kv(&db);
        let mut failed = None;
        for k in 0..1000 {
            let mut txn = db.begin().unwrap();
            txn.insert(&kv, row![k, k, "some text to fill the log"])
                .unwrap();
            match txn.commit() {
                Ok(()) => acked.push(k),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        assert!(matches!(failed, Some(Error::ReadOnly { .. })), "{failed:?}");
        let why = db.read_only_reason().expect("read-only");
        assert!(why.contains("no space left"), "{why}");
        // Later writes are refused, reads still work.
        let mut txn = db.begin().unwrap();
        txn.insert(&kv, row![5000, 1, "x"]).unwrap();
        assert!(
            matches!(txn.commit(), Err(Error::ReadOnly { reason }) if reason.contains("no space left"))
        );
        assert!(matches!(
            db.create_table(Schema::new("x").column("a", Type::Int).primary_key(&["a"])),
            Err(Error::ReadOnly { .. })
        ));
        assert_eq!(get(&db, &kv, acked[0]), Some(acked[0]));
        assert!(acked.len() > 10);
    }
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, tuning())).unwrap();
    let kv = db.table("kv").unwrap();
    for &k in &acked {
        assert_eq!(get(&db, &kv, k), Some(k), "acknowledged commit {k} lost");
    }
    assert!(get(&db, &kv, 5000).is_none());
}

#[test]
fn transaction_larger_than_the_log_buffer_is_refused_before_commit() {
    let d = dir("big");
    let t = LogTuning {
        buffer_bytes: 4096,
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
    let kv = kv(&db);
    let mut txn = db.begin().unwrap();
    for k in 0..200 {
        txn.insert(&kv, row![k, k, "padding padding"]).unwrap();
    }
    assert!(matches!(txn.commit(), Err(Error::Misuse(m)) if m.contains("log buffer")));
    assert!(all(&db, &kv).is_empty(), "rolled back");
    put(&db, &kv, 1, 1);
    assert_eq!(get(&db, &kv, 1), Some(1));
}

#[test]
fn invalid_log_tuning_is_refused() {
    let d = dir("bad-tuning");
    let t = LogTuning {
        buffer_bytes: 5000,
        ..LogTuning::default()
    };
    assert!(matches!(
        Database::open(opts(&d, SyncPolicy::GroupCommit, t)),
        Err(Error::InvalidConfig(_))
    ));
    let t = LogTuning {
        async_max_unflushed_bytes: 0,
        ..LogTuning::default()
    };
    assert!(matches!(
        Database::open(opts(&d, SyncPolicy::Async, t)),
        Err(Error::InvalidConfig(m)) if m.contains("async_max_unflushed_bytes")
    ));
    let mem = Database::open(Options::default()).unwrap();
    assert!(mem.recovery_report().is_none() && mem.log_stats().is_none());
    assert!(matches!(mem.checkpoint(), Err(Error::InvalidConfig(_))));
    mem.sync_log().unwrap();
}

/// Checkpoints taken while transfers commit on other threads (the scan is
/// not a transaction-consistent cut of the log): checkpoint + replay must
/// rebuild exactly the final state, under every protocol.
#[test]
fn checkpoints_during_concurrent_updates_recover_the_exact_final_state() {
    for p in protocols() {
        let d = dir(&format!("ckpt-concurrent-{p}"));
        let t = LogTuning {
            segment_bytes: 8192,
            checkpoint_every_bytes: None,
            ..LogTuning::default()
        };
        let o = opts(&d, SyncPolicy::GroupCommit, t).protocol(p);
        let before = {
            let db = Database::open(o.clone()).unwrap();
            let kv = kv(&db);
            for k in 0..20 {
                put(&db, &kv, k, 100);
            }
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let workers: Vec<_> = (0..2u64)
                .map(|i| {
                    let (db, kv, stop) = (db.clone(), kv.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut x = i + 1;
                        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            let (a, b) = (((x >> 33) % 20) as i64, ((x >> 45) % 20) as i64);
                            if a == b {
                                continue;
                            }
                            db.run(|txn| {
                                let va = txn.get(&kv, &key![a])?.unwrap()[1].as_int().unwrap();
                                let vb = txn.get(&kv, &key![b])?.unwrap()[1].as_int().unwrap();
                                txn.update(&kv, &key![a], &[("v", Value::Int(va - 1))])?;
                                txn.update(&kv, &key![b], &[("v", Value::Int(vb + 1))])
                            })
                            .unwrap();
                        }
                    })
                })
                .collect();
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(20));
                db.checkpoint().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            for w in workers {
                w.join().unwrap();
            }
            all(&db, &kv)
        };
        assert_eq!(before.iter().map(|r| r.1).sum::<i64>(), 2000);
        let db = Database::open(o).unwrap();
        let r = db.recovery_report().unwrap();
        assert!(r.checkpoint.is_some(), "{p}");
        assert_eq!(all(&db, &db.table("kv").unwrap()), before, "{p}: {r:?}");
    }
}

#[test]
fn full_disk_with_concurrent_group_commits_loses_no_acknowledged_commit() {
    let d = dir("full-concurrent");
    let t = LogTuning {
        max_log_bytes: Some(32 << 10),
        checkpoint_every_bytes: None,
        ..LogTuning::default()
    };
    let acked = {
        let db = Database::open(opts(&d, SyncPolicy::GroupCommit, t)).unwrap();
        let kv = kv(&db);
        let workers: Vec<_> = (0..4i64)
            .map(|i| {
                let (db, kv) = (db.clone(), kv.clone());
                std::thread::spawn(move || {
                    let mut acked = Vec::new();
                    for n in 0.. {
                        let k = i * 100_000 + n;
                        match db.run(|txn| txn.insert(&kv, row![k, k, "fill the log"])) {
                            Ok(()) => acked.push(k),
                            Err(Error::ReadOnly { .. }) => return acked,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    acked
                })
            })
            .collect();
        let acked: Vec<i64> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        assert!(db.read_only_reason().is_some());
        acked
    };
    let db = open(&d);
    let kv = db.table("kv").unwrap();
    for k in &acked {
        assert_eq!(get(&db, &kv, *k), Some(*k), "acknowledged {k} lost");
    }
    assert!(!acked.is_empty());
}

/// Updates log only their changed columns; mixed writes to one row in one
/// transaction (delete + re-insert, insert + update, update + delete,
/// update to the same value) replay to the same state.
#[test]
fn mixed_writes_to_one_row_in_one_transaction_replay_to_the_same_state() {
    let d = dir("mixed");
    let before = {
        let db = open(&d);
        let kv = kv(&db);
        for k in 0..6 {
            put(&db, &kv, k, k);
        }
        db.run(|x| {
            x.delete(&kv, &key![0])?;
            x.insert(&kv, row![0, 100, "re-inserted"])?;
            x.insert(&kv, row![10, 1, "new"])?;
            x.update(&kv, &key![10], &[("note", Value::from("updated"))])?;
            x.update(&kv, &key![1], &[("v", Value::Int(11))])?;
            x.delete(&kv, &key![1])?;
            x.update(&kv, &key![2], &[("v", Value::Int(2))])?;
            x.update(&kv, &key![3], &[("note", Value::from("only the note"))])?;
            x.update(&kv, &key![3], &[("v", Value::Int(33))])
        })
        .unwrap();
        let mut ro = db.begin_read_only().unwrap();
        ro.scan(&kv, ..).unwrap()
    };
    let db = open(&d);
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(ro.scan(&db.table("kv").unwrap(), ..).unwrap(), before);
    assert_eq!(before.len(), 6);
}

// ------------------------------------------------------ pipelined commits

// ------------------------------------------------------ value types on disk

/// `typed(k INT, b BYTES, f FLOAT, t BOOL, n FLOAT?, s TEXT?)`, with a
/// secondary index on the nullable float.
pub(crate) fn typed(db: &Database) -> Table {
    let t = db
        .create_table(
            Schema::new("typed")
                .column("k", Type::Int)
                .column("b", Type::Bytes)
                .column("f", Type::Float)
                .column("t", Type::Bool)
                .nullable_column("n", Type::Float)
                .nullable_column("s", Type::Text)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.create_index("typed_n", &t, &["n"], Unique::No).unwrap();
    t
}

/// Row `k` of `typed`; odd rows have nulls. Floats include `-0.0`, infinities
/// and a NaN with a payload, so a bit-exact round trip is visible.
pub(crate) fn typed_row(k: i64) -> Vec<Value> {
    let f = match k % 4 {
        0 => -0.0,
        1 => f64::from_bits(0x7ff8_0000_0000_0042),
        2 => f64::NEG_INFINITY,
        _ => k as f64 / 3.0,
    };
    let odd = k % 2 == 1;
    row![
        k,
        vec![0u8, k as u8, 0, 0xFF],
        f,
        k % 3 == 0,
        (!odd).then_some(10.0 - k as f64),
        (!odd).then(|| format!("s{k}")),
    ]
}

/// Rows with floats as bit patterns, so `-0.0` differs from `0.0` and NaN
/// payloads count.
pub(crate) fn exact(rows: &[Vec<Value>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| match v.as_float() {
                    Some(f) => format!("float {:#x}", f.to_bits()),
                    None => format!("{v:?}"),
                })
                .collect()
        })
        .collect()
}

/// Every value type, nulls included, survives the log, a checkpoint, and
/// a checkpoint taken after recovery; for every version storage (its
/// records and checkpoint walk read the values back), with the secondary
/// index on the nullable column rebuilt in the same order.
#[test]
fn every_value_type_recovers_from_log_and_checkpoint() {
    for c in configs().storages() {
        let s = c.storage;
        let d = dir(&format!("typed-{s:?}"));
        let o = opts(&d, SyncPolicy::GroupCommit, tuning()).version_storage(s);
        let (want, index_order) = {
            let db = Database::open(o.clone()).unwrap();
            let t = typed(&db);
            db.run(|x| (0..12).try_for_each(|k| x.insert(&t, typed_row(k))))
                .unwrap();
            db.checkpoint().unwrap();
            // In the log after the checkpoint: new rows, updates to and from
            // null, a float sign change, a delete.
            db.run(|x| (12..16).try_for_each(|k| x.insert(&t, typed_row(k))))
                .unwrap();
            db.run(|x| {
                x.update(&t, &key![0], &[("n", Value::Null), ("s", Value::Null)])?;
                x.update(&t, &key![1], &[("n", Value::Float(-7.5))])?;
                x.update(
                    &t,
                    &key![2],
                    &[("f", Value::Float(0.0)), ("t", Value::Bool(true))],
                )?;
                x.update(&t, &key![3], &[("b", Value::from(Vec::<u8>::new()))])?;
                x.delete(&t, &key![4])
            })
            .unwrap();
            let mut ro = db.begin_read_only().unwrap();
            let idx = db.index("typed_n").unwrap();
            let order: Vec<Value> = ro
                .index_scan(&idx, ..)
                .unwrap()
                .into_iter()
                .map(|r| r[0].clone())
                .collect();
            (ro.scan(&t, ..).unwrap(), order)
        };
        assert_eq!(want.len(), 15);
        // Nulls first in the index.
        assert!(want.iter().any(|r| r[0] == Value::Int(0) && r[4].is_null()));
        assert_eq!(index_order[0], Value::Int(0), "{s:?}");
        for round in 0..2 {
            let db = Database::open(o.clone()).unwrap();
            let t = db.table("typed").unwrap();
            assert!(t.schema().columns[4].nullable);
            let mut ro = db.begin_read_only().unwrap();
            let got = ro.scan(&t, ..).unwrap();
            assert_eq!(exact(&got), exact(&want), "{s:?} round {round}");
            let idx = db.index("typed_n").unwrap();
            let order: Vec<Value> = ro
                .index_scan(&idx, ..)
                .unwrap()
                .into_iter()
                .map(|r| r[0].clone())
                .collect();
            assert_eq!(order, index_order, "{s:?} round {round}");
            drop(ro);
            // The second round reads a checkpoint written by a recovered
            // database.
            db.checkpoint().unwrap();
        }
    }
}

/// Overwrites the first occurrence of `marker` in one log record of `d` with
/// `with`, then reseals that record (payload and header CRC), so that only
/// the decoder can object.
pub(crate) fn patch_log_record(d: &Path, marker: &[u8], with: impl Fn(&mut [u8], usize)) {
    for seg in segments(d) {
        let mut data = fs::read(&seg).unwrap();
        let Some(at) = data.windows(marker.len()).position(|w| w == marker) else {
            continue;
        };
        let mut pos = SEG_HEADER as usize;
        while pos + 32 <= data.len() {
            let total = u32::from_le_bytes(data[pos + 4..pos + 8].try_into().unwrap()) as usize;
            assert!(total >= 40, "no record holds the marker");
            if at < pos + total {
                with(&mut data, at);
                let crc = crc32c::crc32c(&data[pos + 32..pos + total]);
                data[pos + 24..pos + 28].copy_from_slice(&crc.to_le_bytes());
                let crc = crc32c::crc32c(&data[pos..pos + 28]);
                data[pos + 28..pos + 32].copy_from_slice(&crc.to_le_bytes());
                fs::write(&seg, data).unwrap();
                return;
            }
            pos += total;
        }
    }
    panic!("marker not found in the log");
}

/// A value tag this version does not know (as an older Strata meets the new
/// types, or a newer type meets this one), in a record whose CRCs hold, is
/// `Error::Corrupt` naming the tag, not a panic; so is a bool byte not 0/1.
#[test]
fn unknown_value_tag_in_the_log_is_corrupt() {
    for (name, patch, want) in [
        ("tag", 0x7Eu8, "unknown value tag 126"),
        ("bool", 2u8, "invalid bool byte 2"),
    ] {
        let d = dir(&format!("unknown-{name}"));
        {
            let db = open(&d);
            let t = db
                .create_table(
                    Schema::new("b")
                        .column("k", Type::Int)
                        .column("v", Type::Bytes)
                        .column("t", Type::Bool)
                        .primary_key(&["k"]),
                )
                .unwrap();
            db.run(|x| x.insert(&t, row![1, b"MARKER!!", true]))
                .unwrap();
        }
        // The bytes value is tag, length (4), payload; the bool follows it
        // as tag, byte.
        patch_log_record(&d, b"MARKER!!", |data, at| match name {
            "tag" => data[at - 5] = patch,
            _ => data[at + 9] = patch,
        });
        let before = snapshot(&d);
        let m = corrupt(open_err(&d));
        assert!(m.contains(want), "{m}");
        assert_eq!(snapshot(&d), before);
    }
}

/// The same in a checkpoint: the block and file CRCs (and MANIFEST's copy
/// of the file CRC) are recomputed, and the unknown tag is still refused.
#[test]
fn unknown_value_tag_in_a_checkpoint_is_corrupt() {
    let d = dir("unknown-tag-ckpt");
    {
        let db = open(&d);
        let t = db
            .create_table(
                Schema::new("b")
                    .column("k", Type::Int)
                    .column("v", Type::Bytes)
                    .primary_key(&["k"]),
            )
            .unwrap();
        db.run(|x| x.insert(&t, row![1, b"MARKER!!"])).unwrap();
        db.checkpoint().unwrap();
    }
    let f = checkpoint_file(&d);
    let mut data = fs::read(&f).unwrap();
    let at = data.windows(8).position(|w| w == b"MARKER!!").unwrap();
    data[at - 5] = 0x7E;
    // Blocks are [len u32][crc u32][payload]; reseal the one holding it.
    let mut pos = 0;
    while pos < data.len() {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        if at < pos + 8 + len {
            let crc = crc32c::crc32c(&data[pos + 8..pos + 8 + len]);
            data[pos + 4..pos + 8].copy_from_slice(&crc.to_le_bytes());
            break;
        }
        pos += 8 + len;
    }
    let file_crc = crc32c::crc32c(&data);
    fs::write(&f, &data).unwrap();
    // MANIFEST: magic, begin, end, ts, len (u64 each), then the file CRC;
    // its own CRC is the last 4 bytes.
    let mp = d.join("MANIFEST");
    let mut man = fs::read(&mp).unwrap();
    man[40..44].copy_from_slice(&file_crc.to_le_bytes());
    let n = man.len();
    let crc = crc32c::crc32c(&man[..n - 4]);
    man[n - 4..].copy_from_slice(&crc.to_le_bytes());
    fs::write(&mp, man).unwrap();
    let m = corrupt(open_err(&d));
    assert!(
        m.contains("checkpoint") && m.contains("unknown value tag 126"),
        "{m}"
    );
}

/// `open_table` is what a program calls at every start: it creates the
/// table on a fresh database, finds the recovered one (with its rows) after
/// a reopen, and refuses a changed schema with the difference named,
/// changing nothing (the rows are still there after the refusal).
#[test]
fn open_table_creates_then_finds_the_recovered_table() {
    let d = dir("open-table");
    let schema = || {
        Schema::new("kv")
            .column("k", Type::Int)
            .column("v", Type::Int)
            .nullable_column("note", Type::Text)
            .primary_key(&["k"])
    };
    {
        let db = open(&d);
        let t = db.open_table(schema()).unwrap();
        db.run(|x| x.insert(&t, row![1, 10, "a"])).unwrap();
    }
    let db = open(&d);
    let t = db.open_table(schema()).unwrap();
    assert_eq!(common::value(&db, &t, 1), Some(10));
    let refused = |s: Schema, words: &str| match db.open_table(s) {
        Err(Error::SchemaMismatch { table, difference }) => {
            assert_eq!(table, "kv");
            assert!(difference.contains(words), "{difference}");
        }
        other => panic!("{other:?}"),
    };
    let base = || Schema::new("kv").column("k", Type::Int);
    refused(
        base()
            .column("v", Type::Text)
            .nullable_column("note", Type::Text)
            .primary_key(&["k"]),
        "column 2 is v int in the table, v text in the schema given",
    );
    refused(
        base()
            .column("v", Type::Int)
            .column("note", Type::Text)
            .primary_key(&["k"]),
        "note text (nullable) in the table, note text in the schema given",
    );
    refused(
        base().column("v", Type::Int).primary_key(&["k"]),
        "the table has 3 columns, the schema given 2; the table also has note",
    );
    refused(
        base()
            .column("v", Type::Int)
            .nullable_column("note", Type::Text)
            .column("w", Type::Bool)
            .primary_key(&["k"]),
        "the schema given also has w",
    );
    refused(
        base()
            .column("v", Type::Int)
            .nullable_column("note", Type::Text)
            .primary_key(&["k", "v"]),
        "the primary key is (k) in the table, (k, v) in the schema given",
    );
    assert!(matches!(
        db.open_table(Schema::new("kv").column("k", Type::Int)),
        Err(Error::Schema(_))
    ));
    assert_eq!(common::value(&db, &t, 1), Some(10), "nothing changed");
    assert_eq!(db.table_names(), vec!["kv".to_string()]);
}

/// Threads racing to open the same new table all get it: one creates it,
/// the others find it.
#[test]
fn open_table_races_make_one_table() {
    let db = Database::open(Options::default()).unwrap();
    let schema = || Schema::new("t").column("k", Type::Int).primary_key(&["k"]);
    let tables: Vec<strata::Table> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| db.open_table(schema()).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    db.run(|x| x.insert(&tables[0], row![1])).unwrap();
    for t in &tables {
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.get(t, &key![1]).unwrap(), Some(row![1]));
    }
    assert_eq!(db.table_names(), vec!["t".to_string()]);
}

/// An index recovered from the log is carried by the next checkpoint: a
/// third open, from that checkpoint alone, still has it.
#[test]
fn a_recovered_index_survives_the_next_checkpoint() {
    let d = dir("index-ckpt");
    {
        let db = open(&d);
        let t = kv(&db);
        db.create_index("by_v", &t, &["v"], strata::Unique::No)
            .unwrap();
        db.run(|x| x.insert(&t, row![1, 10, "a"])).unwrap();
    }
    {
        let db = open(&d);
        assert!(db.index("by_v").is_ok());
        db.checkpoint().unwrap();
    }
    let db = open(&d);
    let idx = db.index("by_v").expect("the checkpoint carried the index");
    let rows = db.begin_read_only().unwrap().index_scan(&idx, ..).unwrap();
    assert_eq!(rows.len(), 1);
}
