//! redb: a copy-on-write B-tree, one writer at a time, MVCC readers. Run on
//! its in-memory backend with `Durability::None` so no commit touches disk.

use redb::backends::InMemoryBackend;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use super::{apply_update, engine_err, initial_row, missing_row, read_value};
use crate::ycsb::{Begin, Op, YcsbConfig, YcsbEngine};
use crate::{Outcome, WorkloadError};

const TABLE: TableDefinition<u64, &[u8]> = TableDefinition::new("usertable");

pub struct Redb {
    db: Database,
}

impl Redb {
    pub fn new() -> Result<Self, WorkloadError> {
        let db = Database::builder()
            .create_with_backend(InMemoryBackend::new())
            .map_err(engine_err)?;
        Ok(Redb { db })
    }

    fn write(&self) -> Result<redb::WriteTransaction, WorkloadError> {
        let mut w = self.db.begin_write().map_err(engine_err)?;
        w.set_durability(Durability::None).map_err(engine_err)?;
        Ok(w)
    }
}

impl YcsbEngine for Redb {
    fn name(&self) -> &'static str {
        "redb"
    }

    fn load(&self, cfg: &YcsbConfig, lo: u64, hi: u64) -> Result<(), WorkloadError> {
        let w = self.write()?;
        {
            let mut t = w.open_table(TABLE).map_err(engine_err)?;
            for k in lo..hi {
                t.insert(k, initial_row(cfg, k).as_slice())
                    .map_err(engine_err)?;
            }
        }
        w.commit().map_err(engine_err)
    }

    fn execute(
        &self,
        cfg: &YcsbConfig,
        ops: &[Op],
        begin: Begin,
        sink: &mut u64,
    ) -> Result<Outcome, WorkloadError> {
        let read_only = begin == Begin::ReadOnly || ops.iter().all(|o| o.update.is_none());
        if read_only {
            let r = self.db.begin_read().map_err(engine_err)?;
            let t = r.open_table(TABLE).map_err(engine_err)?;
            for op in ops {
                let v = t
                    .get(op.key)
                    .map_err(engine_err)?
                    .ok_or_else(|| missing_row("redb", op.key))?;
                *sink = sink.wrapping_add(read_value(cfg, op, v.value()));
            }
            return Ok(Outcome::Committed);
        }
        // One writer at a time: begin_write waits for the previous one, so
        // redb never aborts for a conflict.
        let w = self.write()?;
        {
            let mut t = w.open_table(TABLE).map_err(engine_err)?;
            for op in ops {
                let mut cur = t
                    .get(op.key)
                    .map_err(engine_err)?
                    .ok_or_else(|| missing_row("redb", op.key))?
                    .value()
                    .to_vec();
                match op.update {
                    None => *sink = sink.wrapping_add(read_value(cfg, op, &cur)),
                    Some(v) => {
                        apply_update(cfg, op, v, &mut cur);
                        t.insert(op.key, cur.as_slice()).map_err(engine_err)?;
                    }
                }
            }
        }
        w.commit().map_err(engine_err)?;
        Ok(Outcome::Committed)
    }
}
