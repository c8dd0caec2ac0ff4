//! The read-only open (`Database::open_read_only`, issue 43 item 7): it
//! sees every committed row (checkpoint and log, every value type,
//! secondary indexes), refuses every write with `Error::ReadOnly`, gives
//! a damaged directory the typed error a writable open gives, and changes
//! nothing in the directory, open or refused: every entry's name, size,
//! mtime and bytes, and the directory's own mtime, are compared around
//! each open. A backup taken while writers run reads back whole.

use crate::common::{segments, TestDir};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use strata::{
    key, row, Database, Durability, Error, LogTuning, Options, Row, Schema, SyncPolicy, Table,
    Type, Unique, Value,
};

fn dir(name: &str) -> TestDir {
    TestDir::new(&format!("strata-ro-{name}"))
}

/// Durable options on `d`, without background checkpoints (a test takes
/// its own).
fn wal(d: &Path) -> Options {
    Options::default()
        .durability(Durability::Wal {
            dir: d.to_path_buf(),
            sync: SyncPolicy::GroupCommit,
        })
        .log_tuning(LogTuning {
            checkpoint_every_bytes: None,
            ..LogTuning::default()
        })
}

/// What a write to a directory would change: every entry's size, mtime
/// and bytes, and the directory's own mtime (which creating, renaming or
/// removing an entry moves), under "." .
type DirState = BTreeMap<String, (u64, SystemTime, Vec<u8>)>;

fn state(d: &Path) -> DirState {
    let mut out = DirState::new();
    let Ok(meta) = fs::metadata(d) else {
        return out; // absent: the empty state (and it must stay absent)
    };
    out.insert(".".into(), (0, meta.modified().unwrap(), Vec::new()));
    for e in fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        let m = fs::metadata(&p).unwrap();
        out.insert(
            p.file_name().unwrap().to_string_lossy().into_owned(),
            (m.len(), m.modified().unwrap(), fs::read(&p).unwrap()),
        );
    }
    out
}

/// `state(d)` after a pause longer than the file system's timestamp
/// granularity, so that a write during what follows moves an mtime.
fn settled_state(d: &Path) -> DirState {
    std::thread::sleep(Duration::from_millis(30));
    state(d)
}

fn assert_unchanged(d: &Path, before: &DirState, what: &str) {
    let after = state(d);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "{what}: the directory's entries changed"
    );
    for (name, b) in before {
        let a = &after[name];
        assert!(
            a == b,
            "{what}: {name} changed (size {} -> {}, mtime {:?} -> {:?})",
            b.0,
            a.0,
            b.1,
            a.1
        );
    }
}

/// A table of every value type, nullable columns among them.
fn items(db: &Database) -> Table {
    db.open_table(
        Schema::new("items")
            .column("id", Type::Int)
            .column("name", Type::Text)
            .nullable_column("data", Type::Bytes)
            .column("price", Type::Float)
            .column("ok", Type::Bool)
            .nullable_column("note", Type::Text)
            .primary_key(&["id"]),
    )
    .unwrap()
}

fn item(i: i64) -> Row {
    let data = (i % 3 != 0).then(|| vec![i as u8, 0, 255]);
    let note = (i % 4 != 0).then(|| format!("note, \"{i}\"\nline two"));
    row![
        i,
        format!("item {}", i % 17),
        data,
        i as f64 * -0.5,
        i % 2 == 0,
        note
    ]
}

fn rows(db: &Database, t: &Table) -> Vec<Row> {
    let mut ro = db.begin_read_only().unwrap();
    let v = ro.range(t, ..).unwrap().collect::<strata::Result<Vec<_>>>();
    v.unwrap()
}

/// A database with a checkpoint and log after it (inserts, updates,
/// deletes, a second table created after the checkpoint), an index, and
/// the leftovers a writable open removes: a stale checkpoint and a
/// partial segment. Returns the rows of `items` it holds, and the index's
/// answer for one key.
fn populated(d: &Path) -> (Vec<Row>, Vec<Row>) {
    let db = Database::open(wal(d)).unwrap();
    let t = items(&db);
    let by_name = db
        .create_index("items_by_name", &t, &["name"], Unique::No)
        .unwrap();
    db.run(|x| (0..150).try_for_each(|i| x.insert(&t, item(i))))
        .unwrap();
    db.checkpoint().unwrap();
    db.run(|x| (150..200).try_for_each(|i| x.insert(&t, item(i))))
        .unwrap();
    db.run(|x| {
        x.update(&t, &key![3], &[("price", Value::Float(f64::NAN))])?;
        x.update(&t, &key![5], &[("note", Value::Null)])?;
        x.delete(&t, &key![7])
    })
    .unwrap();
    let other = db
        .create_table(
            Schema::new("later")
                .column("k", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    db.run(|x| x.insert(&other, row![1])).unwrap();
    let expected = rows(&db, &t);
    let via_index = db
        .begin_read_only()
        .unwrap()
        .index_get(&by_name, &key!["item 4"])
        .unwrap();
    drop(db);
    fs::write(d.join("ckpt-00000000000000000001.dat"), b"stale").unwrap();
    fs::write(d.join("log-00000000099999999999.seg.tmp"), b"partial").unwrap();
    (expected, via_index)
}

#[test]
fn a_read_only_open_reads_every_committed_row_and_changes_no_file() {
    let d = dir("rows");
    let (expected, via_index) = populated(&d);
    assert_eq!(expected.len(), 199);
    let before = settled_state(&d);
    let ro = Database::open_read_only(wal(&d)).unwrap();
    let t = ro.table("items").unwrap();
    assert_eq!(rows(&ro, &t), expected);
    let idx = ro.index("items_by_name").unwrap();
    assert_eq!(
        ro.begin()
            .unwrap()
            .index_get(&idx, &key!["item 4"])
            .unwrap(),
        via_index
    );
    assert_eq!(
        ro.begin_read_only()
            .unwrap()
            .count(&ro.table("later").unwrap(), ..)
            .unwrap(),
        1
    );
    let r = ro.recovery_report().expect("a report");
    assert!(r.checkpoint.is_some() && r.checkpoint_rows == 150, "{r:?}");
    assert!(r.checkpoint_lsn > 0 && r.checkpoint_bytes > 0, "{r:?}");
    assert!(r.transactions_replayed >= 3 && r.catalog_records_replayed >= 1);
    assert!(!r.log_segments.is_empty(), "{r:?}");
    assert_eq!(
        r.log_segments.iter().map(|s| s.bytes).sum::<u64>(),
        r.log_bytes_read
    );
    assert!(r.torn_tail.is_none());
    assert_unchanged(&d, &before, "while open read-only");
    ro.collect_garbage();
    drop(ro);
    assert_unchanged(&d, &before, "after the read-only database closed");
    // A writable open does what the read-only one left out: it removes the
    // stale checkpoint and the partial segment.
    let db = Database::open(wal(&d)).unwrap();
    assert_eq!(rows(&db, &db.table("items").unwrap()), expected);
    assert!(!d.join("ckpt-00000000000000000001.dat").exists());
    assert!(!d.join("log-00000000099999999999.seg.tmp").exists());
}

/// Ten single-row commits, then the files copied while the database is
/// still open (a crash: the last flush is not covered by a durable-end
/// mark). The live directory is returned too, to outlive the test: the
/// leaked database's flusher may still write there.
fn crashed(name: &str) -> (TestDir, TestDir) {
    let live = dir(&format!("{name}-live"));
    let db = Database::open(wal(&live)).unwrap();
    let t = db
        .create_table(Schema::new("kv").column("k", Type::Int).primary_key(&["k"]))
        .unwrap();
    for k in 0..10 {
        db.run(|x| x.insert(&t, row![k])).unwrap();
    }
    std::mem::forget(db);
    let d = dir(name);
    fs::create_dir_all(&d).unwrap();
    for e in fs::read_dir(&live).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
    }
    (d, live)
}

#[test]
fn a_torn_tail_is_reported_and_left_in_the_file() {
    let (d, _live) = crashed("torn");
    let seg = segments(&d).pop().unwrap();
    let len = fs::metadata(&seg).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let before = settled_state(&d);
    let ro = Database::open_read_only(wal(&d)).unwrap();
    let torn = ro.recovery_report().unwrap().torn_tail.expect("reported");
    assert_eq!(torn.segment, seg);
    assert_eq!(rows(&ro, &ro.table("kv").unwrap()).len(), 9);
    drop(ro);
    assert_unchanged(&d, &before, "a torn tail");
    // A writable open cuts it.
    let db = Database::open(wal(&d)).unwrap();
    assert!(db.recovery_report().unwrap().torn_tail.is_some());
    drop(db);
    assert!(fs::metadata(&seg).unwrap().len() < len - 5);
}

/// `Err(Error::ReadOnly)`, whatever the operation returns otherwise.
fn refused<T>(what: &str, r: strata::Result<T>) {
    match r {
        Err(Error::ReadOnly { reason }) => {
            assert!(reason.contains("opened read-only"), "{what}: {reason}")
        }
        Err(e) => panic!("{what}: expected Error::ReadOnly, got {e:?}"),
        Ok(_) => panic!("{what}: a read-only database took a write"),
    }
}

#[test]
fn every_write_and_ddl_is_refused_with_read_only() {
    let d = dir("refuse");
    let (expected, _) = populated(&d);
    let before = settled_state(&d);
    let ro = Database::open_read_only(wal(&d)).unwrap();
    let t = ro.table("items").unwrap();
    assert!(ro.read_only_reason().unwrap().contains("open_read_only"));
    // begin() gives a snapshot whose writes are refused; reads work.
    let mut x = ro.begin().unwrap();
    assert!(x.is_read_only());
    assert!(x.get(&t, &key![1]).unwrap().is_some());
    refused("insert", x.insert(&t, item(1000)));
    refused("put", x.put(&t, item(1)));
    refused(
        "update",
        x.update(&t, &key![1], &[("ok", Value::Bool(true))]),
    );
    refused("delete", x.delete(&t, &key![1]));
    x.commit().unwrap();
    refused("run", ro.run(|x| x.insert(&t, item(1001))));
    refused(
        "a read-only transaction's write",
        ro.begin_read_only().unwrap().insert(&t, item(1002)),
    );
    refused(
        "create_table",
        ro.create_table(
            Schema::new("new")
                .column("k", Type::Int)
                .primary_key(&["k"]),
        ),
    );
    refused(
        "open_table of a new table",
        ro.open_table(
            Schema::new("new")
                .column("k", Type::Int)
                .primary_key(&["k"]),
        ),
    );
    refused("drop_table", ro.drop_table("later"));
    refused(
        "create_index",
        ro.create_index("by_ok", &t, &["ok"], Unique::No),
    );
    refused("drop_index", ro.drop_index("items_by_name"));
    refused("checkpoint", ro.checkpoint());
    // What is there opens as it is.
    assert_eq!(items(&ro).name(), "items");
    assert!(ro.index("items_by_name").is_ok());
    assert_eq!(rows(&ro, &t), expected);
    ro.sync_log().unwrap();
    // A backup goes to another directory, and opens.
    let to = dir("refuse-backup");
    ro.backup(&*to).unwrap();
    drop(ro);
    assert_unchanged(&d, &before, "refused writes");
    let copy = Database::open_read_only(wal(&to)).unwrap();
    assert_eq!(rows(&copy, &copy.table("items").unwrap()), expected);
}

#[test]
fn a_database_open_for_writing_is_locked_and_a_reader_does_not_keep_writers_out() {
    let d = dir("lock");
    let db = Database::open(wal(&d)).unwrap();
    let t = db
        .create_table(Schema::new("kv").column("k", Type::Int).primary_key(&["k"]))
        .unwrap();
    db.run(|x| x.insert(&t, row![1])).unwrap();
    match Database::open_read_only(wal(&d)) {
        Err(Error::Locked { path }) => assert_eq!(path, *d),
        other => panic!("read while open for writing: {:?}", other.map(|_| ())),
    }
    drop(db);
    let first = Database::open_read_only(wal(&d)).unwrap();
    let second = Database::open_read_only(wal(&d)).unwrap();
    // The files were read at open: a writer may open the directory now,
    // and what the readers show stays what they read.
    let db = Database::open(wal(&d)).unwrap();
    let t = db.table("kv").unwrap();
    db.run(|x| x.insert(&t, row![2])).unwrap();
    for ro in [&first, &second] {
        assert_eq!(rows(ro, &ro.table("kv").unwrap()), vec![row![1]]);
    }
}

/// `Database::open_read_only(d)`'s error, which must equal a writable
/// open's (tried after it: a refused open changes nothing either), with
/// the directory unchanged by both.
fn refused_like_a_writable_open(d: &Path) -> Error {
    let before = settled_state(d);
    let e = Database::open_read_only(wal(d)).expect_err("must refuse");
    assert_unchanged(d, &before, &format!("refused read-only ({e})"));
    let writable = Database::open(wal(d)).expect_err("a writable open refuses it too");
    assert_eq!(e, writable);
    e
}

fn corrupt(e: Error) -> String {
    match e {
        Error::Corrupt(m) => m,
        e => panic!("expected Error::Corrupt, got {e:?}"),
    }
}

#[test]
fn damaged_files_are_the_typed_errors_of_a_writable_open_and_change_nothing() {
    // A truncated checkpoint.
    let d = dir("ckpt-cut");
    populated(&d);
    let ckpt = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "dat"))
        .max()
        .unwrap();
    let len = fs::metadata(&ckpt).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&ckpt)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let m = corrupt(refused_like_a_writable_open(&d));
    assert!(m.contains("MANIFEST says"), "{m}");
    // A damaged record with valid log after it.
    let (d, _live) = crashed("log-flip");
    let seg = segments(&d).pop().unwrap();
    let mut data = fs::read(&seg).unwrap();
    data[4096 + 40] ^= 0x01;
    fs::write(&seg, data).unwrap();
    let m = corrupt(refused_like_a_writable_open(&d));
    assert!(m.contains("valid log follows"), "{m}");
    // A damaged MANIFEST.
    let d = dir("manifest");
    populated(&d);
    let mut data = fs::read(d.join("MANIFEST")).unwrap();
    data[10] ^= 0x01;
    fs::write(d.join("MANIFEST"), data).unwrap();
    let m = corrupt(refused_like_a_writable_open(&d));
    assert!(m.contains("MANIFEST"), "{m}");
}

#[test]
fn a_directory_without_a_database_is_not_found_and_stays_as_it_was() {
    let missing = dir("missing");
    match Database::open_read_only(wal(&missing)) {
        Err(e) => assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}"),
        Ok(_) => panic!("opened a directory that does not exist"),
    }
    assert!(!missing.exists(), "created the directory");
    // Empty, or other files: a writable open would make it a database.
    let other = dir("other");
    fs::create_dir_all(&other).unwrap();
    for files in [&[][..], &["notes.txt"][..]] {
        for f in files {
            fs::write(other.join(f), b"not a database").unwrap();
        }
        let before = settled_state(&other);
        let e = Database::open_read_only(wal(&other)).expect_err("not a database");
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::NotFound), "{e}");
        assert!(e.to_string().contains("no Strata database"), "{e}");
        assert_unchanged(&other, &before, "not a database");
    }
    assert!(matches!(
        Database::open_read_only(Options::default()),
        Err(Error::InvalidConfig(_))
    ));
}

/// Two threads move money between accounts of a durable database while it
/// is backed up; the backup opens read-only, and its rows, read in key
/// order through the lazy iterator as `strata export` reads them, hold
/// the whole total.
#[test]
fn a_backup_taken_under_writers_reads_whole_read_only() {
    const ACCOUNTS: i64 = 40;
    let d = dir("bank");
    let to = dir("bank-backup");
    let db = Database::open(wal(&d)).unwrap();
    let t = db
        .create_table(
            Schema::new("accounts")
                .column("id", Type::Int)
                .column("balance", Type::Int)
                .primary_key(&["id"]),
        )
        .unwrap();
    db.run(|x| (0..ACCOUNTS).try_for_each(|i| x.insert(&t, row![i, 100])))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = (0..2i64)
        .map(|i| {
            let (db, t, stop) = (db.clone(), t.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = 0i64;
                while !stop.load(SeqCst) || n < 100 {
                    let (a, b) = ((n * 7 + i) % ACCOUNTS, (n * 11 + 5 + i) % ACCOUNTS);
                    n += 1;
                    if a != b {
                        db.run(|x| {
                            let va = x.get(&t, &key![a])?.unwrap()[1].as_int().unwrap();
                            let vb = x.get(&t, &key![b])?.unwrap()[1].as_int().unwrap();
                            x.update(&t, &key![a], &[("balance", Value::Int(va - 3))])?;
                            x.update(&t, &key![b], &[("balance", Value::Int(vb + 3))])
                        })
                        .unwrap();
                    }
                }
            })
        })
        .collect();
    while db.counters().commits < 50 {
        std::thread::yield_now();
    }
    db.backup(&*to).unwrap();
    stop.store(true, SeqCst);
    movers.into_iter().for_each(|h| h.join().unwrap());
    let before = settled_state(&to);
    let ro = Database::open_read_only(wal(&to)).unwrap();
    let bt = ro.table("accounts").unwrap();
    let mut x = ro.begin_read_only().unwrap();
    let (mut n, mut total, mut last) = (0, 0, -1);
    for r in x.range(&bt, ..).unwrap() {
        let r = r.unwrap();
        let id = r[0].as_int().unwrap();
        assert!(id > last, "in key order");
        last = id;
        n += 1;
        total += r[1].as_int().unwrap();
    }
    assert_eq!((n, total), (ACCOUNTS, ACCOUNTS * 100));
    drop((x, ro));
    assert_unchanged(&to, &before, "the backup, read");
}
