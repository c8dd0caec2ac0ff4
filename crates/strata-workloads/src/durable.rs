//! Durable commits: what sharing an fsync is worth. Single-row insert or
//! update transactions, each acknowledged only once it is on disk, through
//! Strata's write-ahead log with group commit and through peer engines that
//! sync each commit.
//!
//! ```text
//!   thread 1: begin; insert k; commit ──┐        Strata (GroupCommit):
//!   thread 2: begin; update k'; commit ─┼──>  one write + fsync covers every
//!   ...                                 │     commit that reached the log
//!                                       │     buffer meanwhile
//!                                       └──>  redb (Durability::Immediate),
//!                                             RocksDB TransactionDB (WAL,
//!                                             sync = true): one fsync each
//! ```
//!
//! The latency the driver reports is the commit's, as the client sees it:
//! from `begin` to the acknowledgement.
//!
//! With `pipeline` above 1, Strata's clients commit pipelined
//! (`Transaction::commit_pipelined`): each keeps up to that many commits in
//! flight and acknowledges the oldest once its ticket says it is durable,
//! so one fsync covers the commits made meanwhile, not one per client.
//! Latency still runs from `begin` to the acknowledgement. The peers have no
//! such commit and always run one commit at a time.
//!
//! ```text
//!   pipeline 4:  begin;op;commit ─┬─ begin;op;commit ─┬─ ... ─ wait(oldest) ─ ack
//!                tickets in flight: [t1 t2 t3 t4] ─> ack t1, push t5 ...
//! ```
//!
//! Inserts take fresh keys (each thread its own range, above the loaded
//! rows); updates overwrite one of the loaded rows, picked uniformly. A row is a 64-bit key and eight 64-bit
//! integers (64 bytes of payload), as YCSB's rows with `--columns 8`.
//!
//! Every engine works in its own new directory under the one the caller
//! names, removed after the run: a benchmark never writes over a database.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use strata::{
    key, CommitTicket, Database, Durability, Error, Options, Schema, SyncPolicy, Table, Type, Value,
};

use crate::driver::{self, DriverConfig, Observer, Outcome, Report, Worker};
use crate::rng::Rng;
use crate::WorkloadError;

/// The transaction each step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommitOp {
    /// Insert one new row.
    Insert,
    /// Overwrite one loaded row.
    Update,
}

impl CommitOp {
    pub const ALL: [CommitOp; 2] = [CommitOp::Insert, CommitOp::Update];

    pub fn name(self) -> &'static str {
        match self {
            CommitOp::Insert => "insert",
            CommitOp::Update => "update",
        }
    }
}

/// The engines this build can run (`rocksdb` needs the cargo feature).
pub const ENGINES: [&str; 3] = ["strata", "redb", "rocksdb"];

/// What to run (see the module doc).
#[derive(Debug, Clone)]
pub struct DurableConfig {
    pub op: CommitOp,
    /// Rows loaded before the run (the rows updates pick from).
    pub records: u64,
    pub threads: usize,
    pub warmup: Duration,
    pub duration: Duration,
    /// The directory the engines' own directories are made in.
    pub dir: PathBuf,
    pub seed: u64,
    /// Strata's commits in flight per client (1: each commit waits for
    /// its fsync, as the peers'; see the module doc).
    pub pipeline: usize,
}

impl Default for DurableConfig {
    fn default() -> Self {
        DurableConfig {
            op: CommitOp::Update,
            records: 10_000,
            threads: 2,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(5),
            dir: std::env::temp_dir(),
            seed: 1,
            pipeline: 1,
        }
    }
}

impl DurableConfig {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |m: &str| Err(WorkloadError::Config(m.into()));
        if self.threads == 0 {
            return bad("--threads must be at least 1");
        }
        if self.records == 0 {
            return bad("--records must be at least 1 (updates pick a loaded row)");
        }
        if self.duration.is_zero() {
            return bad("--duration must be positive");
        }
        if self.pipeline == 0 {
            return bad("--pipeline must be at least 1 (1: each commit waits for its fsync)");
        }
        if !self.dir.is_dir() {
            return Err(WorkloadError::Config(format!(
                "--dir {}: not an existing directory",
                self.dir.display()
            )));
        }
        Ok(())
    }
}

/// One engine's run.
#[derive(Debug, Clone, Serialize)]
pub struct DurableReport {
    pub engine: &'static str,
    pub op: CommitOp,
    pub threads: usize,
    /// Commits in flight per client (always 1 for the peers).
    pub pipeline: usize,
    pub run: Report,
    /// Strata only: commits per fsync (the group commit's sharing).
    pub txns_per_fsync: Option<f64>,
}

/// How a commit ended: decided and durable (or aborted), or decided and
/// in flight to the disk.
enum Commit {
    Done(Outcome),
    InFlight(CommitTicket),
}

/// An engine that commits single-row transactions durably; with
/// `pipelined`, one that can may return the commit in flight.
trait CommitEngine: Sync {
    fn insert(&self, k: u64, pipelined: bool) -> Result<Commit, WorkloadError>;
    fn update(&self, k: u64, n: i64, pipelined: bool) -> Result<Commit, WorkloadError>;
}

/// Runs `engine` (one of [`ENGINES`]) in a new directory under `cfg.dir`.
pub fn run(
    engine: &str,
    cfg: &DurableConfig,
    observer: &mut dyn Observer,
) -> Result<DurableReport, WorkloadError> {
    cfg.validate()?;
    let dir = EngineDir::new(&cfg.dir, engine)?;
    let mut pipeline = 1;
    let (name, run, txns_per_fsync) = match engine {
        "strata" => {
            let e = StrataDurable::open(&dir.0, cfg.records)?;
            pipeline = cfg.pipeline;
            let before = e.db.log_stats().unwrap_or_default();
            let r = drive(&e, cfg, observer)?;
            // (The load's commits are not the run's.)
            let per_fsync = e.db.log_stats().map(|l| {
                (l.records - before.records) as f64 / (l.flushes - before.flushes).max(1) as f64
            });
            ("strata", r, per_fsync)
        }
        "redb" => redb_run(&dir.0, cfg, observer)?,
        "rocksdb" => rocks_run(&dir.0, cfg, observer)?,
        other => {
            return Err(WorkloadError::Config(format!(
                "unknown engine {other:?} for durable commits; expected {}",
                ENGINES.join(", ")
            )))
        }
    };
    Ok(DurableReport {
        engine: name,
        op: cfg.op,
        threads: cfg.threads,
        pipeline,
        run,
        txns_per_fsync,
    })
}

/// A fresh directory for one engine's files, removed when the run ends.
struct EngineDir(PathBuf);

impl EngineDir {
    fn new(parent: &Path, engine: &str) -> Result<Self, WorkloadError> {
        let base = format!("strata-durable-{engine}-{}", std::process::id());
        for i in 0u32.. {
            let p = parent.join(format!("{base}-{i}"));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(EngineDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(WorkloadError::Config(format!(
                        "cannot make a directory in {}: {e}",
                        parent.display()
                    )))
                }
            }
        }
        unreachable!("some suffix is free")
    }
}

impl Drop for EngineDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Client<'a, E: CommitEngine + ?Sized> {
    engine: &'a E,
    op: CommitOp,
    records: u64,
    /// The next key this thread inserts (its own range).
    next: u64,
    rng: Rng,
    pipeline: usize,
    /// Commits not yet acknowledged, oldest first, with their starts.
    in_flight: VecDeque<(CommitTicket, Instant)>,
}

impl<E: CommitEngine + ?Sized> Worker for Client<'_, E> {
    fn step(&mut self) -> Result<(usize, Outcome), WorkloadError> {
        let started = Instant::now();
        let pipelined = self.pipeline > 1;
        let c = match self.op {
            CommitOp::Insert => {
                self.next += 1;
                self.engine.insert(self.next, pipelined)?
            }
            CommitOp::Update => {
                let k = self.rng.range(0, self.records - 1);
                self.engine
                    .update(k, self.rng.range(0, 1 << 20) as i64, pipelined)?
            }
        };
        let ticket = match c {
            Commit::Done(o) => return Ok((0, o)),
            Commit::InFlight(t) => t,
        };
        self.in_flight.push_back((ticket, started));
        if self.in_flight.len() < self.pipeline {
            return Ok((0, Outcome::Pending));
        }
        let (oldest, began) = self.in_flight.pop_front().expect("the pipeline is full");
        oldest.wait()?;
        Ok((0, Outcome::CommittedSince(began)))
    }
}

fn drive<E: CommitEngine>(
    engine: &E,
    cfg: &DurableConfig,
    observer: &mut dyn Observer,
) -> Result<Report, WorkloadError> {
    let workers = (0..cfg.threads)
        .map(|i| Client {
            engine,
            op: cfg.op,
            records: cfg.records,
            // Far above the loaded rows, 2^40 keys a thread.
            next: (i as u64 + 1) << 40,
            rng: Rng::for_thread(cfg.seed, i),
            pipeline: cfg.pipeline,
            in_flight: VecDeque::new(),
        })
        .collect();
    driver::run(
        &DriverConfig {
            warmup: cfg.warmup,
            duration: cfg.duration,
            series: false,
            huge_pages: Default::default(),
            ab_interval: None,
        },
        &[cfg.op.name()],
        workers,
        observer,
    )
}

/// The payload of row `k`: eight integers.
fn payload(k: u64, n: i64) -> [i64; 8] {
    let mut v = [k as i64; 8];
    v[0] = n;
    v
}

struct StrataDurable {
    db: Database,
    table: Table,
}

impl StrataDurable {
    fn open(dir: &Path, records: u64) -> Result<Self, WorkloadError> {
        let db = Database::open(Options::default().durability(Durability::Wal {
            dir: dir.to_path_buf(),
            sync: SyncPolicy::GroupCommit,
        }))?;
        let mut s = Schema::new("rows").column("k", Type::Int);
        for c in 0..8 {
            s = s.column(format!("c{c}"), Type::Int);
        }
        let table = db.create_table(s.primary_key(&["k"]))?;
        for lo in (0..records).step_by(1_000) {
            db.run(|x| {
                for k in lo..(lo + 1_000).min(records) {
                    x.insert(&table, strata_row(k, 0))?;
                }
                Ok(())
            })?;
        }
        Ok(StrataDurable { db, table })
    }
}

fn strata_row(k: u64, n: i64) -> Vec<Value> {
    std::iter::once(Value::Int(k as i64))
        .chain(payload(k, n).into_iter().map(Value::Int))
        .collect()
}

impl StrataDurable {
    /// Commits `x` after `op`, pipelined or waiting for the log.
    fn commit(
        mut x: strata::Transaction,
        op: impl FnOnce(&mut strata::Transaction) -> strata::Result<()>,
        pipelined: bool,
    ) -> Result<Commit, WorkloadError> {
        let r = op(&mut x).and_then(|()| {
            if pipelined {
                x.commit_pipelined().map(Commit::InFlight)
            } else {
                x.commit().map(|()| Commit::Done(Outcome::Committed))
            }
        });
        match r {
            Ok(c) => Ok(c),
            Err(Error::Conflict(k)) => Ok(Commit::Done(Outcome::Aborted(k.name()))),
            Err(e) => Err(e.into()),
        }
    }
}

impl CommitEngine for StrataDurable {
    fn insert(&self, k: u64, pipelined: bool) -> Result<Commit, WorkloadError> {
        let x = self.db.begin()?;
        Self::commit(x, |x| x.insert(&self.table, strata_row(k, 0)), pipelined)
    }

    fn update(&self, k: u64, n: i64, pipelined: bool) -> Result<Commit, WorkloadError> {
        let x = self.db.begin()?;
        let change = [("c0", Value::Int(n))];
        Self::commit(
            x,
            |x| x.update(&self.table, &key![k as i64], &change),
            pipelined,
        )
    }
}

#[cfg(any(feature = "redb", feature = "rocksdb"))]
fn peer_value(k: u64, n: i64) -> Vec<u8> {
    payload(k, n).iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(feature = "redb")]
fn redb_run(
    dir: &Path,
    cfg: &DurableConfig,
    observer: &mut dyn Observer,
) -> Result<(&'static str, Report, Option<f64>), WorkloadError> {
    let e = redb_durable::Redb::open(dir, cfg.records)?;
    Ok(("redb", drive(&e, cfg, observer)?, None))
}

#[cfg(not(feature = "redb"))]
fn redb_run(
    _: &Path,
    _: &DurableConfig,
    _: &mut dyn Observer,
) -> Result<(&'static str, Report, Option<f64>), WorkloadError> {
    Err(WorkloadError::NotCompiled {
        what: "peer engine redb".into(),
        feature: "redb",
    })
}

#[cfg(feature = "rocksdb")]
fn rocks_run(
    dir: &Path,
    cfg: &DurableConfig,
    observer: &mut dyn Observer,
) -> Result<(&'static str, Report, Option<f64>), WorkloadError> {
    let e = rocks_durable::Rocks::open(dir, cfg.records)?;
    Ok(("rocksdb", drive(&e, cfg, observer)?, None))
}

#[cfg(not(feature = "rocksdb"))]
fn rocks_run(
    _: &Path,
    _: &DurableConfig,
    _: &mut dyn Observer,
) -> Result<(&'static str, Report, Option<f64>), WorkloadError> {
    Err(WorkloadError::NotCompiled {
        what: "peer engine rocksdb".into(),
        feature: "rocksdb",
    })
}

/// redb on a file, every commit `Durability::Immediate` (its default): one
/// writer at a time, each commit fsyncs before it returns.
#[cfg(feature = "redb")]
mod redb_durable {
    use super::{peer_value, Commit, CommitEngine, Outcome, Path, WorkloadError};
    use crate::peers::engine_err;
    use redb::{Database, Durability, TableDefinition};

    const TABLE: TableDefinition<u64, &[u8]> = TableDefinition::new("rows");

    pub struct Redb(Database);

    impl Redb {
        pub fn open(dir: &Path, records: u64) -> Result<Self, WorkloadError> {
            let db = Database::create(dir.join("rows.redb")).map_err(engine_err)?;
            let r = Redb(db);
            r.write(|t| {
                for k in 0..records {
                    t.insert(k, peer_value(k, 0).as_slice())?;
                }
                Ok(())
            })?;
            Ok(r)
        }

        fn write(
            &self,
            f: impl FnOnce(&mut redb::Table<u64, &[u8]>) -> Result<(), redb::StorageError>,
        ) -> Result<Outcome, WorkloadError> {
            let mut w = self.0.begin_write().map_err(engine_err)?;
            w.set_durability(Durability::Immediate)
                .map_err(engine_err)?;
            {
                let mut t = w.open_table(TABLE).map_err(engine_err)?;
                f(&mut t).map_err(engine_err)?;
            }
            w.commit().map_err(engine_err)?;
            Ok(Outcome::Committed)
        }
    }

    // (No pipelined commit: each waits for its fsync.)
    impl CommitEngine for Redb {
        fn insert(&self, k: u64, _: bool) -> Result<Commit, WorkloadError> {
            self.write(|t| t.insert(k, peer_value(k, 0).as_slice()).map(drop))
                .map(Commit::Done)
        }

        fn update(&self, k: u64, n: i64, _: bool) -> Result<Commit, WorkloadError> {
            self.write(|t| t.insert(k, peer_value(k, n).as_slice()).map(drop))
                .map(Commit::Done)
        }
    }
}

/// RocksDB's TransactionDB with its WAL on and `sync = true`: each commit
/// fsyncs the WAL before it returns (RocksDB groups concurrent writers into
/// one WAL write where it can; that is its own group commit).
#[cfg(feature = "rocksdb")]
mod rocks_durable {
    use super::{peer_value, Commit, CommitEngine, Outcome, Path, WorkloadError};
    use crate::peers::{engine_err, key_bytes};
    use rocksdb::{ErrorKind, Options, TransactionDB, TransactionDBOptions, WriteOptions};

    pub struct Rocks(TransactionDB);

    fn sync_writes() -> WriteOptions {
        let mut w = WriteOptions::default();
        w.set_sync(true);
        w
    }

    impl Rocks {
        pub fn open(dir: &Path, records: u64) -> Result<Self, WorkloadError> {
            let mut o = Options::default();
            o.create_if_missing(true);
            let db = TransactionDB::open(&o, &TransactionDBOptions::default(), dir)
                .map_err(engine_err)?;
            let mut load = WriteOptions::default();
            load.set_sync(false);
            for k in 0..records {
                db.put_opt(key_bytes(k), peer_value(k, 0), &load)
                    .map_err(engine_err)?;
            }
            db.flush_wal(true).map_err(engine_err)?;
            Ok(Rocks(db))
        }

        fn put(&self, k: u64, n: i64) -> Result<Outcome, WorkloadError> {
            let t = self.0.transaction_opt(&sync_writes(), &Default::default());
            let r = t
                .put(key_bytes(k), peer_value(k, n))
                .and_then(|()| t.commit());
            match r {
                Ok(()) => Ok(Outcome::Committed),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Busy | ErrorKind::TryAgain | ErrorKind::TimedOut
                    ) =>
                {
                    Ok(Outcome::Aborted("write-write"))
                }
                Err(e) => Err(engine_err(e)),
            }
        }
    }

    // (No pipelined commit: each waits for its fsync.)
    impl CommitEngine for Rocks {
        fn insert(&self, k: u64, _: bool) -> Result<Commit, WorkloadError> {
            self.put(k, 0).map(Commit::Done)
        }

        fn update(&self, k: u64, n: i64, _: bool) -> Result<Commit, WorkloadError> {
            self.put(k, n).map(Commit::Done)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(dir: &Path, op: CommitOp) -> DurableConfig {
        DurableConfig {
            op,
            records: 100,
            threads: 2,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
            dir: dir.to_path_buf(),
            seed: 1,
            pipeline: 1,
        }
    }

    /// Strata's group commit shares fsyncs between the two threads, and a
    /// reopen of what it wrote finds every acknowledged insert.
    #[test]
    fn strata_commits_durably_and_shares_fsyncs() {
        let tmp = tempdir();
        for op in CommitOp::ALL {
            let r = run("strata", &small(&tmp.0, op), &mut crate::Quiet).unwrap();
            assert!(r.run.committed > 10, "{op:?}: {}", r.run.committed);
            let per_fsync = r.txns_per_fsync.expect("strata counts fsyncs");
            assert!(per_fsync >= 1.0, "{per_fsync}");
        }
        // Every engine's directory is gone after its run.
        assert_eq!(std::fs::read_dir(&tmp.0).unwrap().count(), 0);
    }

    /// Pipelined, one fsync covers more commits than the two threads could
    /// have waiting (at most two, closed loop), and the report says so;
    /// the peers report one commit in flight whatever was asked.
    #[test]
    fn strata_pipelined_commits_share_fsyncs_beyond_the_clients() {
        let tmp = tempdir();
        let cfg = DurableConfig {
            pipeline: 32,
            ..small(&tmp.0, CommitOp::Update)
        };
        let r = run("strata", &cfg, &mut crate::Quiet).unwrap();
        assert_eq!(r.pipeline, 32);
        assert!(r.run.committed > 10, "{}", r.run.committed);
        let per_fsync = r.txns_per_fsync.expect("strata counts fsyncs");
        assert!(per_fsync > 2.0, "{per_fsync} commits per fsync");
        #[cfg(feature = "redb")]
        assert_eq!(run("redb", &cfg, &mut crate::Quiet).unwrap().pipeline, 1);
    }

    #[cfg(feature = "redb")]
    #[test]
    fn redb_commits_durably() {
        let tmp = tempdir();
        for op in CommitOp::ALL {
            let r = run("redb", &small(&tmp.0, op), &mut crate::Quiet).unwrap();
            assert!(r.run.committed > 0, "{op:?}");
            assert_eq!(r.txns_per_fsync, None);
        }
    }

    #[test]
    fn bad_settings_are_refused_with_the_flag() {
        let tmp = tempdir();
        let ok = small(&tmp.0, CommitOp::Insert);
        for (cfg, flag) in [
            (
                DurableConfig {
                    threads: 0,
                    ..ok.clone()
                },
                "--threads",
            ),
            (
                DurableConfig {
                    dir: tmp.0.join("missing"),
                    ..ok.clone()
                },
                "--dir",
            ),
            (
                DurableConfig {
                    records: 0,
                    ..ok.clone()
                },
                "--records",
            ),
            (
                DurableConfig {
                    pipeline: 0,
                    ..ok.clone()
                },
                "--pipeline",
            ),
        ] {
            match run("strata", &cfg, &mut crate::Quiet) {
                Err(WorkloadError::Config(m)) => assert!(m.contains(flag), "{m}"),
                other => panic!("{flag}: {other:?}"),
            }
        }
        match run("leveldb", &ok, &mut crate::Quiet) {
            Err(WorkloadError::Config(m)) => assert!(m.contains("leveldb"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// A directory removed when the test ends.
    struct TempDir(PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tempdir() -> TempDir {
        let d = std::env::temp_dir().join(format!(
            "strata-durable-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}
