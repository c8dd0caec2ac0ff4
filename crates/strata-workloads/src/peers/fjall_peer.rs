//! fjall: an LSM-tree with optimistic (serializable) transactions. Commits
//! do not persist the journal (`durability(None)`); the database lives in a
//! temporary directory removed afterwards.

use fjall::{KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace, Readable};

use super::{aborted, apply_update, engine_err, initial_row, key_bytes, missing_row, read_value};
use crate::ycsb::{Begin, Op, YcsbConfig, YcsbEngine};
use crate::{Outcome, WorkloadError};

pub struct Fjall {
    db: OptimisticTxDatabase,
    ks: OptimisticTxKeyspace,
    // Dropped after the database (fields drop in order).
    _dir: tempfile::TempDir,
}

impl Fjall {
    pub fn new() -> Result<Self, WorkloadError> {
        let dir = tempfile::tempdir().map_err(engine_err)?;
        let db = OptimisticTxDatabase::builder(dir.path())
            .open()
            .map_err(engine_err)?;
        let ks = db
            .keyspace("usertable", KeyspaceCreateOptions::default)
            .map_err(engine_err)?;
        Ok(Fjall { db, ks, _dir: dir })
    }
}

impl YcsbEngine for Fjall {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn load(&self, cfg: &YcsbConfig, lo: u64, hi: u64) -> Result<(), WorkloadError> {
        let mut w = self.db.write_tx().map_err(engine_err)?.durability(None);
        for k in lo..hi {
            w.insert(&self.ks, key_bytes(k), initial_row(cfg, k));
        }
        match w.commit().map_err(engine_err)? {
            Ok(()) => Ok(()),
            Err(c) => Err(WorkloadError::Engine(format!("fjall load conflict: {c:?}"))),
        }
    }

    fn execute(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        begin: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        if begin == Begin::ReadOnly {
            let r = self.db.read_tx();
            for op in ops {
                let v = r
                    .get(&self.ks, key_bytes(op.key))
                    .map_err(engine_err)?
                    .ok_or_else(|| missing_row("fjall", op.key))?;
                *sink = sink.wrapping_add(read_value(cfg, op, &v));
            }
            return Ok(Outcome::Committed);
        }
        let mut w = self.db.write_tx().map_err(engine_err)?.durability(None);
        for op in ops {
            let cur = w
                .get(&self.ks, key_bytes(op.key))
                .map_err(engine_err)?
                .ok_or_else(|| missing_row("fjall", op.key))?;
            match op.update {
                None => *sink = sink.wrapping_add(read_value(cfg, op, &cur)),
                Some(v) => {
                    let mut new = cur.to_vec();
                    apply_update(cfg, op, v, &mut new);
                    w.insert(&self.ks, key_bytes(op.key), new);
                }
            }
        }
        match w.commit().map_err(engine_err)? {
            Ok(()) => Ok(Outcome::Committed),
            Err(_conflict) => aborted(),
        }
    }
}
