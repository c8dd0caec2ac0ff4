//! MV-PBT's unit tests (`index::mvpbt::tests`, split from `mvpbt.rs`,
//! which they made too long to read as one file). The file lives outside
//! `index/` (`#[path]` in `index/mvpbt.rs`): its tests reach into
//! `crate::cc` and `crate::txn`, which engine code under `index/` must not.

use super::partitions::tests::ident;
use super::record::Rec;
use super::*;
use crate::index::secondary::Unique;
use crate::index::SecWrites;
use crate::tid::snapshots::Snapshots;
use crate::txn::index_ops::Through;
use crate::{key, row, Database, Options, Schema, Type};
use std::sync::atomic::AtomicU64;

fn kv_db(o: Options) -> (Database, crate::Table, crate::Index) {
    let db = Database::open(o.gc_interval(None)).unwrap();
    let t = db
        .create_table(
            Schema::new("kv")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .column("n", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    let idx = db
        .create_index_as("by_v", &t, &["v"], Unique::No, IndexKind::MvPbt)
        .unwrap();
    (db, t, idx)
}

/// The newest record of the index, by partition key.
fn all_records(idx: &crate::Index) -> Vec<Arc<Record>> {
    let p = parts(&idx.inner);
    let mut out = Vec::new();
    p.for_each(
        &p.view(),
        &Bound::Unbounded,
        &Bound::Unbounded,
        &Probe::None,
        |_, r| match r {
            Rec::Mem(r) => out.push(Arc::clone(r)),
            Rec::File(_) => panic!("no spill directory"),
        },
    );
    out
}

/// A record carries its writer's tid until the commit stamps it with
/// the commit timestamp (also in a partition frozen meanwhile); an
/// abort flags its records and takes them out of P_N.
#[test]
fn stamps_switch_from_tid_to_cts_at_commit_and_vanish_on_abort() {
    let (db, t, idx) = kv_db(Options::default());
    let mut w = db.begin().unwrap();
    w.insert(&t, row![1, 10, 0]).unwrap();
    let tid = w.tid;
    let recs = all_records(&idx);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].stamp(), TID_MARK | tid);
    // Frozen while undecided: kept, and still stamped at commit.
    db.freeze_index(&idx).unwrap();
    assert_eq!(parts(&idx.inner).stats().frozen_records, 1);
    w.commit().unwrap();
    let s = recs[0].stamp();
    assert_eq!(s & TID_MARK, 0);
    assert!(s > 0 && s <= db.inner.clock.load(SeqCst));

    let mut w = db.begin().unwrap();
    w.update(&t, &key![1], &[("v", Value::Int(20))]).unwrap();
    w.delete(&t, &key![1]).unwrap();
    w.insert(&t, row![2, 10, 0]).unwrap();
    // anti-record + replacement, tombstone, regular
    assert_eq!(parts(&idx.inner).stats().active_records, 4);
    let mine: Vec<Arc<Record>> = all_records(&idx)
        .into_iter()
        .filter(|r| r.stamp() == TID_MARK | w.tid)
        .collect();
    assert_eq!(mine.len(), 4);
    w.abort();
    assert!(mine.iter().all(|r| r.aborted()));
    assert_eq!(parts(&idx.inner).stats().active_records, 0);
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(ro.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 0]]);
}

/// §5.6 phase 2: a writer drops its row's older records from P_N once
/// a newer committed one is at or below the published horizon; an open
/// snapshot holds the horizon back, so what it reads stays.
#[test]
fn updates_purge_older_records_of_their_row_from_p_n() {
    // Physical pointers: each non-key update adds a replacement.
    let (db, t, idx) = kv_db(Options::default().index_pointers(IndexPointers::Physical));
    db.run(|x| x.insert(&t, row![1, 10, 0])).unwrap();
    let mut old = db.begin_read_only().unwrap();
    for n in 1..=5 {
        db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(n))]))
            .unwrap();
        db.collect_garbage(); // publishes the horizon
    }
    let st = parts(&idx.inner).stats();
    assert_eq!(st.records_purged_from_p_n, 0, "the snapshot needs them");
    assert_eq!(st.active_records, 6);
    assert_eq!(old.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 0]]);
    drop(old);
    for n in 6..=10 {
        db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(n))]))
            .unwrap();
        db.collect_garbage();
    }
    let st = parts(&idx.inner).stats();
    assert!(st.active_records <= 3, "{st:?}");
    assert_eq!(st.active_records + st.records_purged_from_p_n, 11);
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(ro.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 10]]);
}

/// Under logical pointers a record names the row, not a version: a
/// non-key update adds no record (physical pointers add a replacement
/// each), a key update adds an anti-record and a replacement, and
/// snapshots of every age still get their rows under their keys.
#[test]
fn only_physical_pointers_add_a_record_per_non_key_update() {
    for ptr in IndexPointers::ALL {
        let (db, t, idx) = kv_db(Options::default().index_pointers(ptr));
        db.run(|x| x.insert(&t, row![1, 10, 0])).unwrap();
        let mut first = db.begin_read_only().unwrap();
        for n in 1..=3 {
            db.run(|x| x.update(&t, &key![1], &[("n", Value::Int(n))]))
                .unwrap();
        }
        let mut mid = db.begin_read_only().unwrap();
        let per_version = (ptr == IndexPointers::Physical) as usize;
        assert_eq!(all_records(&idx).len(), 1 + 3 * per_version, "{ptr:?}");
        db.run(|x| x.update(&t, &key![1], &[("v", Value::Int(20))]))
            .unwrap();
        let recs = all_records(&idx);
        assert_eq!(recs.len(), 3 + 3 * per_version, "{ptr:?}");
        let types: Vec<RecordType> = recs.iter().map(|r| r.ty).collect();
        assert!(types.contains(&RecordType::AntiRecord), "{types:?}");
        let mut now = db.begin_read_only().unwrap();
        let at = |tx: &mut crate::Transaction, v: i64| tx.index_get(&idx, &key![v]).unwrap();
        assert_eq!(at(&mut first, 10), vec![row![1, 10, 0]], "{ptr:?}");
        assert_eq!(at(&mut first, 20), Vec::<crate::Row>::new());
        assert_eq!(at(&mut mid, 10), vec![row![1, 10, 3]], "{ptr:?}");
        assert_eq!(at(&mut now, 10), Vec::<crate::Row>::new());
        assert_eq!(at(&mut now, 20), vec![row![1, 20, 3]], "{ptr:?}");
        db.freeze_index(&idx).unwrap();
        assert_eq!(at(&mut first, 10), vec![row![1, 10, 0]], "{ptr:?}");
        assert_eq!(at(&mut mid, 10), vec![row![1, 10, 3]], "{ptr:?}");
        assert_eq!(at(&mut now, 20), vec![row![1, 20, 3]], "{ptr:?}");
    }
}

/// An [`IndexTxn`] that counts the rows read (`panic_on_read`: and
/// refuses to read any).
struct Counting<'a, P> {
    inner: Through<'a, P>,
    reads: usize,
    panic_on_read: bool,
}

impl<P: crate::cc::Cc> IndexTxn for Counting<'_, P> {
    const NEWER_THAN_SNAPSHOT: Option<ConflictKind> = None;
    fn tid(&self) -> u64 {
        self.inner.tid()
    }
    fn snapshot_ts(&self) -> u64 {
        self.inner.snapshot_ts()
    }
    fn tids(&self) -> &TidTable {
        self.inner.tids()
    }
    fn is_own(&self, v: *mut Version) -> bool {
        self.inner.is_own(v)
    }
    fn sec_writes(&mut self) -> &mut SecWrites {
        self.inner.sec_writes()
    }
    fn read_row(&mut self, t: &TableInner, tuple: u64) -> Result<*mut Version> {
        assert!(!self.panic_on_read, "an index-only scan read a row");
        self.reads += 1;
        self.inner.read_row(t, tuple)
    }
    fn check_insert(&self, ts: &AtomicU64) -> Result<(), ConflictKind> {
        self.inner.check_insert(ts)
    }
    fn snapshots(&self) -> Snapshots {
        self.inner.snapshots()
    }
    fn horizon(&self) -> u64 {
        self.inner.horizon()
    }
}

/// The index-only counters (MV-PBT Fig. 12a's "records visited per
/// row"): under physical pointers every non-key update adds a record,
/// which a read-only scan steps over; under logical ones it adds none.
#[test]
fn index_only_scans_count_the_records_they_visit_per_row() {
    for (ptr, per_row) in [
        (IndexPointers::Physical, 5),
        (IndexPointers::LogicalTupleId, 1),
    ] {
        // One partition (P_N) holds every record: no freeze.
        let (db, t, idx) = kv_db(Options::default().index_pointers(ptr));
        for k in 0..10 {
            db.run(|x| x.insert(&t, row![k, 1, 0])).unwrap();
        }
        // Holds the horizon: no record is purged from P_N meanwhile.
        let pin = db.begin_read_only().unwrap();
        for round in 1..=4 {
            for k in 0..10 {
                db.run(|x| x.update(&t, &key![k], &[("n", Value::Int(round))]))
                    .unwrap();
            }
        }
        let before = db.stats().mvpbt;
        let mut ro = db.begin_read_only().unwrap();
        assert_eq!(ro.index_scan(&idx, ..).unwrap().len(), 10);
        let st = db.stats().mvpbt;
        assert_eq!(st.index_only_rows - before.index_only_rows, 10, "{ptr:?}");
        assert_eq!(
            st.index_only_records_visited - before.index_only_records_visited,
            10 * per_row,
            "{ptr:?}: {st:?}"
        );
        drop(pin);
    }
}

/// §5.4: a read-only scan decides visibility from the records alone
/// and reads one row per visible record, however long the rows'
/// chains; a covering scan reads none; physical pointers read the
/// named version without the chain. Old snapshots get the rows of
/// their time under the keys of their time.
#[test]
fn index_only_scans_read_one_row_per_visible_record_or_none() {
    for ptr in IndexPointers::ALL {
        let (db, t, idx) = kv_db(
            Options::default()
                .index_pointers(ptr)
                .mvpbt_partition_records(5),
        );
        for k in 0..20 {
            db.run(|x| x.insert(&t, row![k, k % 4, 0])).unwrap();
        }
        let old = db.begin_read_only().unwrap();
        // Long chains: every row updated 5 times, half of them moving
        // to another key each time.
        for round in 1..=5 {
            for k in 0..20 {
                let v = if k % 2 == 0 { (k + round) % 4 } else { k % 4 };
                db.run(|x| {
                    x.update(
                        &t,
                        &key![k],
                        &[("v", Value::Int(v)), ("n", Value::Int(round))],
                    )
                })
                .unwrap();
            }
        }
        let ro = db.begin_read_only().unwrap();
        for (mut txn, round) in [(old, 0i64), (ro, 5)] {
            let expected = |vv: i64| -> Vec<i64> {
                (0..20)
                    .filter(|&k| {
                        let v = if k % 2 == 0 && round > 0 {
                            (k + round) % 4
                        } else {
                            k % 4
                        };
                        v == vv
                    })
                    .collect()
            };
            let ti = &idx.table.inner;
            let si = &idx.inner;
            let lo = Bound::Included(EncodedKey::Bytes(ident(1, 0)[..9].into()));
            let hi = Bound::Excluded(EncodedKey::Bytes(
                prefix_end(&ident(1, 0)[..9]).unwrap().into(),
            ));
            let mode = ScanMode::new(false, false);
            let _pin = epoch::pin();
            let mut rows = Vec::new();
            let mut cx = Counting::<crate::cc::ssn::SiSsn> {
                inner: Through::new(&mut txn),
                reads: 0,
                panic_on_read: ptr == IndexPointers::Physical,
            };
            let n = MvPbt::scan(&mut cx, ti, si, &lo, &hi, mode, |r| {
                assert_eq!(r[2], Value::Int(round), "{ptr:?}: the snapshot's version");
                rows.push(r[0].as_int().unwrap());
                ControlFlow::Continue(())
            })
            .unwrap()
            .rows;
            assert_eq!(rows, expected(1), "{ptr:?} round {round}");
            let want_reads = if ptr == IndexPointers::Physical { 0 } else { n };
            assert_eq!(cx.reads, want_reads, "{ptr:?}: one read per visible record");
            let mut cx = Counting::<crate::cc::ssn::SiSsn> {
                inner: Through::new(&mut txn),
                reads: 0,
                panic_on_read: true,
            };
            let mut keys = Vec::new();
            MvPbt::scan_keys(&mut cx, si, &lo, &hi, mode, |k| keys.push(k.to_vec()));
            assert_eq!(keys.len(), n, "{ptr:?}");
        }
        let st = db.stats().mvpbt;
        assert!(st.freezes > 0 && st.frozen_partitions > 0, "{st:?}");
    }
}

/// A fresh spill directory for one test (a database makes its own
/// subdirectory in it and removes that when it closes).
fn spill_root(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("strata-mvpbt-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// The database's spill files mapped now (they are unlinked once
/// mapped, so they are counted in the process's maps, not the
/// directory).
fn spill_files(db: &Database) -> usize {
    let dir = db.inner.mvpbt_spill.as_ref().expect("a spill dir").path();
    crate::index::mvpbt_spill::mapped_files(dir)
}

/// Spilled, the records a freeze finds decided go to the file; those
/// of a still-running writer stay in memory (they are stamped at its
/// commit, flagged at its abort) and go to the file at the next merge
/// once decided. Every reader gets the answers of the in-memory index
/// throughout; a merge's old files go, and the database's directory
/// goes with it.
#[test]
fn undecided_records_stay_in_memory_until_a_merge_finds_them_decided() {
    let root = spill_root("overlay");
    // Physical pointers: the non-key update below adds a replacement.
    let (db, t, idx) = kv_db(
        Options::default()
            .index_pointers(IndexPointers::Physical)
            .mvpbt_spill_dir(Some(root.clone())),
    );
    db.run(|x| x.insert(&t, row![1, 10, 0])).unwrap();
    let mut w = db.begin().unwrap();
    w.insert(&t, row![2, 10, 0]).unwrap();
    w.update(&t, &key![1], &[("n", Value::Int(1))]).unwrap();
    db.freeze_index(&idx).unwrap();
    let st = db.stats().mvpbt;
    assert_eq!(
        (st.spilled_partitions, st.spilled_records, st.frozen_records),
        (1, 1, 3),
        "{st:?}"
    );
    assert!(st.spilled_bytes > 0);
    assert_eq!(spill_files(&db), 1);
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(ro.index_scan(&idx, ..).unwrap(), vec![row![1, 10, 0]]);
    assert_eq!(
        w.index_scan(&idx, ..).unwrap(),
        vec![row![1, 10, 1], row![2, 10, 0]]
    );
    // The commit stamps the records in memory (a file is never
    // written again).
    w.commit().unwrap();
    drop(ro);
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(
        ro.index_scan(&idx, ..).unwrap(),
        vec![row![1, 10, 1], row![2, 10, 0]]
    );
    drop(ro);
    db.collect_garbage();
    db.freeze_index(&idx).unwrap();
    let st = db.stats().mvpbt;
    assert_eq!(
        (st.spilled_partitions, st.spilled_records, st.frozen_records),
        (1, 2, 2),
        "all decided now, one record per row: {st:?}"
    );
    assert_eq!(spill_files(&db), 1, "the merged partition's file went");
    // An abort flags its records in memory; the next merge drops them.
    let mut w = db.begin().unwrap();
    w.update(&t, &key![2], &[("v", Value::Int(20))]).unwrap();
    db.freeze_index(&idx).unwrap();
    let st = db.stats().mvpbt;
    assert_eq!((st.spilled_records, st.frozen_records), (2, 4), "{st:?}");
    assert_eq!(
        w.index_scan(&idx, ..).unwrap(),
        vec![row![1, 10, 1], row![2, 20, 0]]
    );
    w.abort();
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(
        ro.index_scan(&idx, ..).unwrap(),
        vec![row![1, 10, 1], row![2, 10, 0]]
    );
    assert_eq!(
        ro.index_get(&idx, &key![20]).unwrap(),
        Vec::<Vec<Value>>::new()
    );
    drop(ro);
    db.freeze_index(&idx).unwrap();
    let st = db.stats().mvpbt;
    assert_eq!((st.spilled_records, st.frozen_records), (2, 2), "{st:?}");
    assert_eq!((st.spill_failures, st.spill_corrupt_rebuilt), (0, 0));
    let inst = db.inner.mvpbt_spill.as_ref().unwrap().path().to_path_buf();
    assert!(inst.exists());
    drop((t, idx));
    drop(db);
    // (Index lists are freed through the epoch: wait for the files to
    // go, however long other tests hold the epoch back.)
    crate::test_util::eventually(|| {
        epoch::pin().flush();
        !inst.exists()
    });
    assert!(!inst.exists(), "the database's spill files go with it");
    std::fs::remove_dir_all(&root).unwrap();
}

/// A little random generator (deterministic, so two databases can be
/// given the same operations).
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

type Db3 = (Database, crate::Table, crate::Index);

/// Runs the same random operations (interleaved writers, some left
/// open across freezes, aborts, old snapshots, merges) on each of
/// `dbs`, asserting after each step that every open transaction's
/// scans agree between them. Returns the most records the last
/// database held in memory in frozen partitions alongside spilled ones
/// (undecided at their freeze).
fn same_answers(dbs: &[Db3], seed: u64, steps: usize) -> u64 {
    let mut overlay = 0;
    let mut rng = Rng(seed);
    let mut open: Vec<Vec<crate::Transaction>> = Vec::new();
    let mut snaps: Vec<Vec<crate::Transaction>> = Vec::new();
    let all = |txns: &mut Vec<crate::Transaction>, what: &str| {
        let first = {
            let (_, _, idx) = &dbs[0];
            let r = txns[0].index_scan(idx, ..).map_err(|e| format!("{e:?}"));
            let g = txns[0]
                .index_get(idx, &key![3])
                .map_err(|e| format!("{e:?}"));
            (r, g)
        };
        for (i, (_, _, idx)) in dbs.iter().enumerate().skip(1) {
            let r = txns[i].index_scan(idx, ..).map_err(|e| format!("{e:?}"));
            let g = txns[i]
                .index_get(idx, &key![3])
                .map_err(|e| format!("{e:?}"));
            assert_eq!((r, g), first, "{what}: database {i} answers otherwise");
        }
    };
    for step in 0..steps {
        match rng.next(12) {
            0..=5 => {
                if open.len() < 3 && (open.is_empty() || rng.next(3) == 0) {
                    open.push(dbs.iter().map(|(db, _, _)| db.begin().unwrap()).collect());
                }
                let at = rng.next(open.len() as u64) as usize;
                let (k, v, op) = (rng.next(24) as i64, rng.next(6) as i64, rng.next(4));
                let mut res = Vec::new();
                for (i, (_, t, _)) in dbs.iter().enumerate() {
                    let x = &mut open[at][i];
                    let r = match op {
                        0 => x.insert(t, row![k, v, step as i64]),
                        1 => x.update(t, &key![k], &[("v", Value::Int(v))]),
                        2 => x.update(t, &key![k], &[("n", Value::Int(step as i64))]),
                        _ => x.delete(t, &key![k]),
                    };
                    res.push(format!("{r:?}"));
                }
                assert!(res.iter().all(|r| *r == res[0]), "step {step}: {res:?}");
                if res[0].starts_with("Err(Conflict") {
                    for x in open.remove(at) {
                        x.abort();
                    }
                }
            }
            6 | 7 if !open.is_empty() => {
                let at = rng.next(open.len() as u64) as usize;
                let mut txns = open.remove(at);
                all(&mut txns, "a writer before its end");
                if rng.next(4) == 0 {
                    txns.into_iter().for_each(|x| x.abort());
                } else {
                    let res: Vec<String> = txns
                        .into_iter()
                        .map(|x| format!("{:?}", x.commit()))
                        .collect();
                    assert!(res.iter().all(|r| *r == res[0]), "step {step}: {res:?}");
                }
            }
            8 => {
                if snaps.len() >= 2 {
                    snaps.remove(0);
                }
                snaps.push(
                    dbs.iter()
                        .map(|(db, _, _)| db.begin_read_only().unwrap())
                        .collect(),
                );
            }
            9 => {
                for (db, _, idx) in dbs {
                    db.freeze_index(idx).unwrap();
                }
            }
            _ => {
                for (db, _, _) in dbs {
                    db.collect_garbage();
                }
            }
        }
        for txns in open.iter_mut() {
            all(txns, "an open writer");
        }
        for txns in snaps.iter_mut() {
            all(txns, "an old snapshot");
        }
        let mut now: Vec<_> = dbs
            .iter()
            .map(|(db, _, _)| db.begin_read_only().unwrap())
            .collect();
        all(&mut now, "a new snapshot");
        let in_memory: usize = parts(&dbs[dbs.len() - 1].2.inner)
            .view()
            .frozen
            .iter()
            .filter(|f| f.file.is_some())
            .map(|f| f.records.len())
            .sum();
        overlay = overlay.max(in_memory as u64);
    }
    overlay
}

/// An index with a spill directory and tiny partitions answers exactly
/// as one in memory, for every pointer scheme, with writers left open
/// across freezes and merges (their records stay in memory) and old
/// snapshots (their records stay in the files).
#[test]
fn a_spilled_index_answers_as_an_in_memory_one() {
    let root = spill_root("same");
    for ptr in IndexPointers::ALL {
        for seed in [1u64, 0x9e37_79b9_7f4a_7c15, 42] {
            let o = Options::default()
                .index_pointers(ptr)
                .mvpbt_partition_records(3);
            let dbs = [
                kv_db(o.clone()),
                kv_db(o.mvpbt_spill_dir(Some(root.clone()))),
            ];
            let overlay = same_answers(&dbs, seed, 400);
            assert!(
                overlay > 0,
                "some writer's records were undecided at a freeze"
            );
            let st = dbs[1].0.stats().mvpbt;
            assert!(
                st.spilled_partitions > 0 && st.spilled_records > 0,
                "{st:?}"
            );
            assert_eq!((st.spill_failures, st.spill_corrupt_rebuilt), (0, 0));
            let mem = dbs[0].0.stats().mvpbt;
            assert_eq!(
                (
                    mem.frozen_records,
                    mem.active_records,
                    mem.frozen_partitions
                ),
                (st.frozen_records, st.active_records, st.frozen_partitions),
                "the same records, spilled or not"
            );
            assert_eq!(spill_files(&dbs[1].0) as u64, st.spilled_partitions);
        }
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// A spill file damaged between its write and its map (truncated, a
/// byte flipped, a wrong magic) is a typed error there: the partition
/// stays in memory, it is counted, and every scan answers as before;
/// once files come out whole again, partitions spill again. A spill the
/// OS refuses (the directory gone) keeps the partition in memory too.
#[test]
fn a_damaged_or_refused_spill_keeps_the_partition_in_memory() {
    type Damage = fn(&std::path::Path);
    let truncate: Damage = |p| {
        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len - 5).unwrap();
    };
    let flip: Damage = |p| {
        let mut b = std::fs::read(p).unwrap();
        let at = b.len() - 3;
        b[at] ^= 0x40;
        std::fs::write(p, b).unwrap();
    };
    let magic: Damage = |p| {
        let mut b = std::fs::read(p).unwrap();
        b[0] = b'?';
        std::fs::write(p, b).unwrap();
    };
    let root = spill_root("damage");
    for (name, damage) in [("truncate", truncate), ("flip", flip), ("magic", magic)] {
        let o = Options::default()
            .mvpbt_partition_records(4)
            .mvpbt_spill_dir(Some(root.clone()));
        let (db, t, idx) = kv_db(o);
        let dir = Arc::clone(db.inner.mvpbt_spill.as_ref().unwrap());
        *dir.tamper.lock() = Some(Box::new(damage));
        let mut model: BTreeMap<i64, i64> = BTreeMap::new();
        let check = |model: &BTreeMap<i64, i64>| {
            let mut want: Vec<(i64, i64)> = model.iter().map(|(&k, &v)| (v, k)).collect();
            want.sort();
            let want: Vec<Vec<Value>> = want
                .into_iter()
                .map(|(v, k)| vec![Value::Int(k), Value::Int(v)])
                .collect();
            let mut ro = db.begin_read_only().unwrap();
            let got: Vec<Vec<Value>> = ro
                .index_scan(&idx, ..)
                .unwrap()
                .into_iter()
                .map(|r| r[..2].to_vec())
                .collect();
            assert_eq!(got, want, "{name}");
            for v in 0..5 {
                let n = ro.index_get(&idx, &key![v]).unwrap().len();
                assert_eq!(n, model.values().filter(|&&x| x == v).count(), "{name}");
            }
        };
        let mut rng = Rng(7);
        for round in 0..60 {
            let (k, v) = (rng.next(20) as i64, rng.next(5) as i64);
            db.run(|x| match model.contains_key(&k) {
                true if round % 5 == 0 => x.delete(&t, &key![k]),
                true => x.update(&t, &key![k], &[("v", Value::Int(v))]),
                false => x.insert(&t, row![k, v, round]),
            })
            .unwrap();
            if model.contains_key(&k) && round % 5 == 0 {
                model.remove(&k);
            } else {
                model.insert(k, v);
            }
            check(&model);
        }
        db.freeze_index(&idx).unwrap();
        check(&model);
        let st = db.stats().mvpbt;
        assert!(st.spill_corrupt_rebuilt > 0, "{name}: {st:?}");
        assert_eq!((st.spilled_partitions, st.spill_failures), (0, 0), "{name}");
        assert_eq!(spill_files(&db), 0, "{name}: a damaged file is removed");
        // Whole files again: the next freeze spills.
        *dir.tamper.lock() = None;
        db.freeze_index(&idx).unwrap();
        check(&model);
        let st = db.stats().mvpbt;
        assert_eq!(st.spilled_partitions, 1, "{name}: {st:?}");
        // The OS refuses: the directory is gone.
        std::fs::remove_dir_all(dir.path()).unwrap();
        db.run(|x| x.insert(&t, row![100, 1, 0])).unwrap();
        model.insert(100, 1);
        db.freeze_index(&idx).unwrap();
        check(&model);
        let st = db.stats().mvpbt;
        assert!(st.spill_failures > 0, "{name}: {st:?}");
        assert_eq!(st.spilled_partitions, 0, "{name}: {st:?}");
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// The back-fill's partition (every record committed) spills whole.
#[test]
fn a_backfilled_partition_spills() {
    let root = spill_root("backfill");
    let db = Database::open(
        Options::default()
            .gc_interval(None)
            .mvpbt_spill_dir(Some(root.clone())),
    )
    .unwrap();
    let t = db
        .create_table(
            Schema::new("kv")
                .column("k", Type::Int)
                .column("v", Type::Int)
                .primary_key(&["k"]),
        )
        .unwrap();
    for k in 0..50 {
        db.run(|x| x.insert(&t, row![k, k % 7])).unwrap();
    }
    db.run(|x| x.update(&t, &key![3], &[("v", Value::Int(100))]))
        .unwrap();
    let idx = db
        .create_index_as("by_v", &t, &["v"], Unique::No, IndexKind::MvPbt)
        .unwrap();
    let st = db.stats().mvpbt;
    assert_eq!(
        (st.spilled_partitions, st.frozen_records),
        (1, st.spilled_records)
    );
    assert!(st.spilled_records >= 50, "{st:?}");
    let mut ro = db.begin_read_only().unwrap();
    assert_eq!(ro.index_get(&idx, &key![100]).unwrap(), vec![row![3, 100]]);
    let want: Vec<_> = (0..50).filter(|k| k % 7 == 3 && *k != 3).collect();
    let got: Vec<_> = ro
        .index_get(&idx, &key![3])
        .unwrap()
        .into_iter()
        .map(|r| r[0].as_int().unwrap())
        .collect();
    assert_eq!(got, want);
    drop(ro);
    // A dropped index's files go with its last handle (the table's old
    // index list is freed through the epoch, which other tests' threads
    // may hold back a while).
    assert_eq!(spill_files(&db), 1);
    db.drop_index("by_v").unwrap();
    drop(idx);
    crate::test_util::eventually(|| {
        db.collect_garbage();
        epoch::pin().flush();
        spill_files(&db) == 0
    });
    assert_eq!(spill_files(&db), 0);
    drop((db, t));
    std::fs::remove_dir_all(&root).unwrap();
}

/// `Options::mvpbt_spill_dir`: a file in its place is refused at open
/// with a typed error, a missing directory is created.
#[test]
fn the_spill_dir_option_is_checked_at_open() {
    let root = spill_root("option");
    std::fs::write(&root, b"a file").unwrap();
    let o = Options::default().mvpbt_spill_dir(Some(root.clone()));
    assert!(matches!(o.validate(), Err(Error::InvalidConfig(_))));
    assert!(matches!(Database::open(o), Err(Error::InvalidConfig(_))));
    let o = Options::default().mvpbt_spill_dir(Some(root.join("sub")));
    assert!(matches!(Database::open(o), Err(Error::Io { .. })));
    std::fs::remove_file(&root).unwrap();
    let o = Options::default().mvpbt_spill_dir(Some(root.join("a/b")));
    let db = Database::open(o).unwrap();
    assert!(root.join("a/b").is_dir());
    drop(db);
    std::fs::remove_dir_all(&root).unwrap();
}
