//! skipdb: an in-memory MVCC key-value store (serializable snapshot
//! isolation, after FoundationDB and Badger), used as is.

use skipdb::serializable::SerializableDb;

use super::{aborted, apply_update, initial_row, missing_row, read_value};
use crate::ycsb::{Begin, Op, YcsbConfig, YcsbEngine};
use crate::{Outcome, WorkloadError};

pub struct SkipDb {
    db: SerializableDb<u64, Vec<u8>>,
}

impl SkipDb {
    pub fn new() -> Self {
        SkipDb {
            db: SerializableDb::new(),
        }
    }
}

/// skipdb does not re-export its error types; a lost conflict is the
/// `Transaction(Conflict)` variant.
fn is_conflict(e: &impl std::fmt::Debug) -> bool {
    format!("{e:?}").contains("Conflict")
}

impl YcsbEngine for SkipDb {
    fn name(&self) -> &'static str {
        "skipdb"
    }

    fn load(&self, cfg: &YcsbConfig, lo: u64, hi: u64) -> Result<(), WorkloadError> {
        let mut t = self.db.serializable_write();
        for k in lo..hi {
            t.insert(k, initial_row(cfg, k))
                .map_err(super::engine_err)?;
        }
        t.commit()
            .map_err(|e| WorkloadError::Engine(format!("{e:?}")))
    }

    fn execute(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        begin: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        if begin == Begin::ReadOnly {
            let t = self.db.read();
            for op in ops {
                let r = t
                    .get(&op.key)
                    .ok_or_else(|| missing_row("skipdb", op.key))?;
                *sink = sink.wrapping_add(read_value(cfg, op, &r.value()[..]));
            }
            return Ok(Outcome::Committed);
        }
        let mut t = self.db.serializable_write();
        for op in ops {
            let cur = match t.get(&op.key) {
                Ok(Some(r)) => r,
                Ok(None) => return Err(missing_row("skipdb", op.key)),
                Err(e) if is_conflict(&e) => return aborted(),
                Err(e) => return Err(super::engine_err(e)),
            };
            match op.update {
                None => *sink = sink.wrapping_add(read_value(cfg, op, &cur.value()[..])),
                Some(v) => {
                    let mut new: Vec<u8> = cur.value().to_vec();
                    drop(cur);
                    apply_update(cfg, op, v, &mut new);
                    if let Err(e) = t.insert(op.key, new) {
                        return if is_conflict(&e) {
                            aborted()
                        } else {
                            Err(super::engine_err(e))
                        };
                    }
                }
            }
        }
        match t.commit() {
            Ok(()) => Ok(Outcome::Committed),
            Err(e) if is_conflict(&e) => aborted(),
            Err(e) => Err(WorkloadError::Engine(format!("{e:?}"))),
        }
    }
}
