//! Online backup (`Database::backup`, issue 43 item 7): a backup taken
//! while writers run opens as a database holding a consistent state (the
//! bank's total is whole), from a durable database and from an in-memory
//! one; a directory that is not empty is refused and left as it was; a
//! damaged backup fails to open with a typed error.

use crate::common::TestDir;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use strata::{
    key, row, Database, Durability, Error, LogGranularity, Options, Schema, SyncPolicy, Table,
    Type, Value,
};

const ACCOUNTS: i64 = 50;
const BALANCE: i64 = 100;

fn wal(dir: &std::path::Path) -> Options {
    Options::default().durability(Durability::Wal {
        dir: dir.to_path_buf(),
        sync: SyncPolicy::GroupCommit,
    })
}

fn accounts(db: &Database) -> Table {
    let t = db
        .open_table(
            Schema::new("accounts")
                .column("id", Type::Int)
                .column("balance", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    for id in 0..ACCOUNTS {
        db.run(|x| x.insert(&t, row![id, BALANCE])).unwrap();
    }
    t
}

/// (rows, total balance) the database holds.
fn books(db: &Database) -> (usize, i64) {
    let t = db.table("accounts").unwrap();
    let rows = db.begin_read_only().unwrap().scan(&t, ..).unwrap();
    let total = rows.iter().map(|r| r[1].as_int().unwrap()).sum();
    (rows.len(), total)
}

/// Backs `db` up into `to` while two threads move money between accounts
/// (and the backup is taken at least once with transfers committed on
/// both sides of it), then opens the backup.
fn backup_under_transfers(db: &Database, t: &Table, to: &std::path::Path) -> Database {
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = (0..2)
        .map(|i| {
            let (db, t, stop) = (db.clone(), t.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0i64;
                while !stop.load(SeqCst) || n < 200 {
                    let (a, b) = ((n * 7 + i) % ACCOUNTS, (n * 13 + 3 + i) % ACCOUNTS);
                    n += 1;
                    if a == b {
                        continue;
                    }
                    db.run(|x| {
                        let va = x.get(&t, &key![a])?.unwrap()[1].as_int().unwrap();
                        let vb = x.get(&t, &key![b])?.unwrap()[1].as_int().unwrap();
                        x.update(&t, &key![a], &[("balance", Value::Int(va - 1))])?;
                        x.update(&t, &key![b], &[("balance", Value::Int(vb + 1))])
                    })
                    .unwrap();
                }
                n
            })
        })
        .collect();
    // Some transfers before the backup, the rest during and after it.
    while db.counters().commits < ACCOUNTS as u64 + 100 {
        std::thread::yield_now();
    }
    let report = db.backup(to).unwrap();
    assert_eq!(report.rows, ACCOUNTS as u64, "{report:?}");
    stop.store(true, SeqCst);
    let moved: i64 = movers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(moved >= 400);
    assert_eq!(books(db), (ACCOUNTS as usize, ACCOUNTS * BALANCE));
    Database::open(wal(to)).expect("the backup opens")
}

#[test]
fn a_backup_of_a_durable_database_under_writers_opens_consistent() {
    for granularity in [LogGranularity::PerTransaction, LogGranularity::PerOperation] {
        let d = TestDir::new(&format!("strata-backup-src-{}", granularity.name()));
        let to = TestDir::new(&format!("strata-backup-dst-{}", granularity.name()));
        let db = Database::open(wal(&d).log_granularity(granularity)).unwrap();
        let t = accounts(&db);
        let copy = backup_under_transfers(&db, &t, &to);
        assert_eq!(books(&copy), (ACCOUNTS as usize, ACCOUNTS * BALANCE));
        // It is a database of its own: it takes writes and recovers them.
        let ct = copy.table("accounts").unwrap();
        copy.run(|x| x.insert(&ct, row![ACCOUNTS, 7])).unwrap();
        drop(copy);
        let again = Database::open(wal(&to)).unwrap();
        assert_eq!(books(&again).0, ACCOUNTS as usize + 1);
        // The source goes on, untouched by the backup.
        db.run(|x| x.insert(&t, row![ACCOUNTS, 1])).unwrap();
    }
}

#[test]
fn a_backup_of_an_in_memory_database_opens_as_a_durable_one() {
    let to = TestDir::new("strata-backup-mem");
    let db = Database::open(Options::default()).unwrap();
    let t = accounts(&db);
    let idx = db
        .create_index("by_balance", &t, &["balance"], strata::Unique::No)
        .unwrap();
    let copy = backup_under_transfers(&db, &t, &to);
    assert_eq!(books(&copy), (ACCOUNTS as usize, ACCOUNTS * BALANCE));
    // The index definition came along, rebuilt over the backup's rows.
    let ci = copy.index(idx.name()).unwrap();
    let via_index: usize = copy
        .begin_read_only()
        .unwrap()
        .index_scan(&ci, ..)
        .unwrap()
        .len();
    assert_eq!(via_index, ACCOUNTS as usize);
}

#[test]
fn a_backup_into_a_directory_that_is_not_empty_is_refused_and_changes_nothing() {
    let to = TestDir::new("strata-backup-busy");
    std::fs::create_dir_all(&*to).unwrap();
    std::fs::write(to.join("keep.txt"), b"mine").unwrap();
    let db = Database::open(Options::default()).unwrap();
    accounts(&db);
    let e = db.backup(&*to).unwrap_err();
    assert_eq!(
        e.io_kind(),
        Some(std::io::ErrorKind::AlreadyExists),
        "{e:?}"
    );
    let names: Vec<_> = std::fs::read_dir(&*to)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["keep.txt"]);
    assert_eq!(std::fs::read(to.join("keep.txt")).unwrap(), b"mine");
}

#[test]
fn a_damaged_backup_is_a_typed_error() {
    let to = TestDir::new("strata-backup-damaged");
    let db = Database::open(Options::default()).unwrap();
    accounts(&db);
    db.backup(&*to).unwrap();
    let ckpt = std::fs::read_dir(&*to)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "dat"))
        .expect("a checkpoint file");
    let len = std::fs::metadata(&ckpt).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&ckpt)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    match Database::open(wal(&to)) {
        Err(Error::Corrupt(m)) => assert!(m.contains("ckpt-"), "{m}"),
        other => panic!("a truncated checkpoint opened: {:?}", other.map(|_| ())),
    }
}
