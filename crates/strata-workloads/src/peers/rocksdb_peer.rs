//! RocksDB's OptimisticTransactionDB and TransactionDB (feature `rocksdb`,
//! off by default: it needs clang/libclang and about 20 minutes to build on
//! two cores). The WAL is disabled and nothing is synced, to compare with
//! in-memory Strata; the database lives in a temporary directory.

use rocksdb::{
    ErrorKind, OptimisticTransactionDB, Options, TransactionDB, TransactionDBOptions, WriteOptions,
};

use super::{aborted, apply_update, engine_err, initial_row, key_bytes, missing_row, read_value};
use crate::ycsb::{Begin, Op, YcsbConfig, YcsbEngine};
use crate::{Outcome, WorkloadError};

enum Db {
    Optimistic(OptimisticTransactionDB),
    Pessimistic(TransactionDB),
}

pub struct Rocks {
    db: Db,
    _dir: tempfile::TempDir,
}

fn options() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o
}

fn write_options() -> WriteOptions {
    let mut w = WriteOptions::default();
    w.disable_wal(true);
    w.set_sync(false);
    w
}

fn is_conflict(e: &rocksdb::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Busy | ErrorKind::TryAgain | ErrorKind::TimedOut
    )
}

impl Rocks {
    pub fn optimistic() -> Result<Self, WorkloadError> {
        let dir = tempfile::tempdir().map_err(engine_err)?;
        let db = OptimisticTransactionDB::open(&options(), dir.path()).map_err(engine_err)?;
        Ok(Rocks {
            db: Db::Optimistic(db),
            _dir: dir,
        })
    }

    pub fn pessimistic() -> Result<Self, WorkloadError> {
        let dir = tempfile::tempdir().map_err(engine_err)?;
        let db = TransactionDB::open(&options(), &TransactionDBOptions::default(), dir.path())
            .map_err(engine_err)?;
        Ok(Rocks {
            db: Db::Pessimistic(db),
            _dir: dir,
        })
    }
}

/// The body shared by both kinds of transaction (they are different types
/// with the same methods).
macro_rules! run_txn {
    ($txn:expr, $cfg:expr, $ops:expr, $sink:expr) => {{
        let txn = $txn;
        for op in $ops {
            let cur = match txn.get_for_update(key_bytes(op.key), true) {
                Ok(Some(v)) => v,
                Ok(None) => return Err(missing_row("rocksdb", op.key)),
                Err(e) if is_conflict(&e) => return aborted(),
                Err(e) => return Err(engine_err(e)),
            };
            match op.update {
                None => *$sink = $sink.wrapping_add(read_value($cfg, op, &cur)),
                Some(v) => {
                    let mut new = cur;
                    apply_update($cfg, op, v, &mut new);
                    match txn.put(key_bytes(op.key), new) {
                        Ok(()) => {}
                        Err(e) if is_conflict(&e) => return aborted(),
                        Err(e) => return Err(engine_err(e)),
                    }
                }
            }
        }
        match txn.commit() {
            Ok(()) => Ok(Outcome::Committed),
            Err(e) if is_conflict(&e) => aborted(),
            Err(e) => Err(engine_err(e)),
        }
    }};
}

impl YcsbEngine for Rocks {
    fn name(&self) -> &'static str {
        match self.db {
            Db::Optimistic(_) => "rocksdb-optimistic",
            Db::Pessimistic(_) => "rocksdb",
        }
    }

    fn load(&self, cfg: &YcsbConfig, lo: u64, hi: u64) -> Result<(), WorkloadError> {
        let wo = write_options();
        for k in lo..hi {
            let r = match &self.db {
                Db::Optimistic(db) => db.put_opt(key_bytes(k), initial_row(cfg, k), &wo),
                Db::Pessimistic(db) => db.put_opt(key_bytes(k), initial_row(cfg, k), &wo),
            };
            r.map_err(engine_err)?;
        }
        Ok(())
    }

    fn execute(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        begin: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        if begin == Begin::ReadOnly {
            // A snapshot read: no locks, no validation.
            macro_rules! snap_reads {
                ($db:expr) => {{
                    let snap = $db.snapshot();
                    for op in ops {
                        let v = snap
                            .get(key_bytes(op.key))
                            .map_err(engine_err)?
                            .ok_or_else(|| missing_row("rocksdb", op.key))?;
                        *sink = sink.wrapping_add(read_value(cfg, op, &v));
                    }
                }};
            }
            match &self.db {
                Db::Optimistic(db) => snap_reads!(db),
                Db::Pessimistic(db) => snap_reads!(db),
            }
            return Ok(Outcome::Committed);
        }
        let wo = write_options();
        match &self.db {
            Db::Optimistic(db) => {
                run_txn!(db.transaction_opt(&wo, &Default::default()), cfg, ops, sink)
            }
            Db::Pessimistic(db) => {
                // Lock waits with deadlock detection: without it two threads
                // that lock hot keys in opposite orders each wait out the
                // 1 s lock timeout (a 50% mix at theta 0.9 committed nothing).
                let mut to = rocksdb::TransactionOptions::default();
                to.set_deadlock_detect(true);
                run_txn!(db.transaction_opt(&wo, &to), cfg, ops, sink)
            }
        }
    }
}
