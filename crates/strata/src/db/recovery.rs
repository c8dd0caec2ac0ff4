//! Recovery: `Database::open` on a directory that holds a database.
//!
//! ```text
//!  lock the directory itself (flock on its fd; held => Error::Locked)
//!  ── validate, read only ────────────────────────────────────────────
//!  MANIFEST? ──yes──> load ckpt-B.dat (length, file CRC, block CRCs)
//!     │               catalog first, then rows
//!     no: the log must start at LSN 0
//!  segments from the one holding R (= B, or lower under per-operation
//!  logging): replay records with LSN >= R in order
//!     commit record  -> one transaction: put = insert or overwrite,
//!                       update = set columns if present, delete = delete
//!                       if present
//!     catalog record -> create / drop table (ids must line up); below B
//!                       passed over (the checkpoint's catalog has it)
//!     skip record    -> nothing (an aborted transaction's reserved range)
//!     operation rec. -> kept aside by LSN (per-operation logging)
//!     chained commit -> its operation records, followed back from the
//!                       last one it names (to R), applied as one
//!                       transaction; records no commit names (aborted or
//!                       unfinished transactions) are discarded at the end
//!  damaged last record past the durable-end mark, nothing valid after
//!     it -> torn tail (reported)
//!  anything else damaged, a gap, a sealed last segment, a log ending
//!     below its durable-end mark -> Error::Corrupt
//!  the log must reach the checkpoint's end LSN, else Error::Corrupt
//!  ── only now change the directory ──────────────────────────────────
//!  cut the torn tail (or create the first segment), remove stale
//!  checkpoints and partial segments
//!  clock := max(clock, largest recovered cts) + 1 (MVTO), or, with LSN
//!  commit stamps, clock := log end + K, K >= 0 the least that keeps it at
//!  or above both; start the flusher
//! ```
//!
//! **A failed open changes nothing on disk**: every check runs before the
//! first write, rename or removal, so a refused directory can be inspected,
//! repaired (a file put back) and opened again. The lock is on the
//! directory, not on a file in it: deleting a file cannot defeat it, and
//! opening creates nothing.
//!
//! The part above the line is `replay_dir`, which only reads; the
//! read-only open (`db::read_only`) runs it alone under a shared lock and
//! never takes the part below, so it changes nothing on disk ever.
//!
//! Indexes are rebuilt as a side effect: rows are re-inserted through the
//! normal write path. Replay runs before the log is attached, so it writes
//! nothing to the log.

use super::{Database, DbInner};
use crate::error::{Error, Result};
use crate::log::checkpoint::{self, remove_stale_checkpoints};
use crate::log::record::{corrupt, decode_payload, CatalogRecord, Payload, RedoOp};
use crate::log::segment::{list_segments, remove_partial_segments, scan, ScanEnd, SegmentWriter};
use crate::log::{LogSegment, RecoveryReport};
use crate::table::Table;
use crate::value::{Key, Value};
use std::collections::HashMap;
use std::fs::{self, File};
use std::path::Path;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Recovers `dir` into the empty database `db` and attaches the log.
pub(crate) fn open(db: &Database, dir: &Path) -> Result<()> {
    let t0 = Instant::now();
    let ioe = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", dir.display()), e);
    fs::create_dir_all(dir).map_err(|e| ioe("cannot create", e))?;
    let lock = lock_dir(dir, Lock::Exclusive)?;
    let Replayed {
        mut report,
        manifest,
        begin,
        end,
        max_cts,
    } = replay_dir(db, dir)?;
    // Only now change the directory: every check above passed.
    let tuning = db.inner.opts.log_tuning.clone();
    let writer = SegmentWriter::resume(
        dir,
        end.last_start,
        end.end,
        tuning.segment_bytes,
        tuning.max_log_bytes,
    )
    .map_err(|e| ioe("cannot open the log in", e))?;
    remove_stale_checkpoints(dir, manifest.as_ref().map_or("", |m| m.file.as_str()));
    remove_partial_segments(dir);
    let inner = &db.inner;
    // LSN commit stamps (see `log`): the clock becomes the log's counter,
    // LSN + K. K keeps it at or above every timestamp in use: the stamps
    // replay gave the recovered versions (the clock now) and the largest
    // one logged (a log written under MVTO or by an older Strata counted
    // timestamps apart from LSNs). So a new snapshot sees every recovered
    // version and new commits stamp above them.
    let stamps = crate::log::lsn_stamps(&inner.opts).then(|| {
        let k = inner
            .clock
            .load(SeqCst)
            .max(max_cts)
            .saturating_sub(end.end);
        (Arc::clone(&inner.clock), k)
    });
    if stamps.is_none() {
        inner.clock.fetch_max(max_cts + 1, SeqCst);
    }
    report.stamp_offset = stamps.as_ref().map(|s| s.1);
    report.duration = t0.elapsed();
    let log = crate::log::start(
        &inner.opts,
        dir.to_path_buf(),
        lock,
        writer,
        report,
        begin,
        stamps,
    )?;
    let every = log.checkpoint_every();
    if inner.log.set(log).is_err() {
        return Err(Error::Misuse("the log was started twice".into()));
    }
    if let Some(every) = every {
        spawn_checkpointer(Arc::downgrade(inner), every)?;
    }
    Ok(())
}

/// Which `flock` an open takes on the directory.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Lock {
    /// A writable open: one at a time, and no reader meanwhile.
    Exclusive,
    /// A read-only open, while it reads the files (`db::read_only`): any
    /// number at once, none while a writable open holds the directory.
    Shared,
}

/// Locks the directory itself. `flock` on its own descriptor: a lock file
/// could be deleted while held, letting a second process in (each then
/// writes the log). A held lock is `Error::Locked`.
pub(super) fn lock_dir(dir: &Path, how: Lock) -> Result<File> {
    let ioe = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", dir.display()), e);
    let lock = File::open(dir).map_err(|e| ioe("cannot open", e))?;
    // A database of this process that was just dropped may still be
    // finishing (a background checkpoint or GC pass held the last
    // reference), so a held lock is retried briefly before giving up.
    let deadline = Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let tried = match how {
            Lock::Exclusive => lock.try_lock(),
            Lock::Shared => lock.try_lock_shared(),
        };
        match tried {
            Ok(()) => return Ok(lock),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    path: dir.to_path_buf(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(ioe("cannot lock", e)),
        }
    }
}

/// What the reading half of recovery found (`replay_dir`).
pub(super) struct Replayed {
    /// Filled but for `stamp_offset` and `duration`.
    pub report: RecoveryReport,
    pub manifest: Option<checkpoint::Manifest>,
    /// The checkpoint's begin LSN (0 without one).
    pub begin: u64,
    pub end: ScanEnd,
    /// The largest commit timestamp read.
    pub max_cts: u64,
}

/// Validates `dir` and replays it into the empty database `db`: the
/// checkpoint, then the log. Reads only: it writes, renames and removes
/// nothing (a torn tail is reported, not cut), so both the writable open
/// and the read-only one start here, and a refused directory is left as
/// it was.
pub(super) fn replay_dir(db: &Database, dir: &Path) -> Result<Replayed> {
    let ioe = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", dir.display()), e);
    let mut report = RecoveryReport::default();
    let manifest = checkpoint::read_manifest(dir)?;
    let mut max_cts = 0;
    let (begin, replay_from) = match &manifest {
        Some(m) => {
            let s = checkpoint::load(
                dir,
                m,
                |c| {
                    apply_catalog(db, c, "checkpoint").map_err(|e| match e {
                        e @ Error::Corrupt(_) => e,
                        e => corrupt(format!("checkpoint {}: catalog: {e}", m.file)),
                    })
                },
                |table, rows| {
                    load_rows(db, table, rows).map_err(|e| match e {
                        e @ Error::Corrupt(_) => e,
                        e => corrupt(format!(
                            "checkpoint {}: loading rows of table id {table}: {e}",
                            m.file
                        )),
                    })
                },
            )?;
            report.checkpoint = Some(m.file.clone());
            report.checkpoint_rows = s.rows;
            report.checkpoint_lsn = m.begin_lsn;
            report.checkpoint_bytes = m.len;
            max_cts = m.ts;
            (m.begin_lsn, m.replay_from)
        }
        None => (0, 0),
    };
    let all = list_segments(dir).map_err(|e| ioe("cannot list", e))?;
    let segs = match all.iter().rposition(|s| s.0 <= replay_from) {
        Some(i) => &all[i..],
        None if all.is_empty() && manifest.is_none() => &all[..],
        None => {
            return Err(corrupt(format!(
                "the log segment holding LSN {replay_from} (where replay must start{}) is missing; \
                 the first segment present is {}",
                if manifest.is_some() {
                    ", after the checkpoint"
                } else if has_checkpoint_file(dir) {
                    ": there is no MANIFEST, although checkpoint files are present \
                     (was MANIFEST removed?)"
                } else {
                    ": there is no checkpoint"
                },
                all.first()
                    .map(|s| s.1.display().to_string())
                    .unwrap_or_else(|| "none".into())
            )))
        }
    };
    let mut txns = 0;
    let mut ddl = 0;
    let mut skips = 0;
    let mut ops = Operations::default();
    let end = scan(segs, replay_from, |rec| {
        let p = decode_payload(rec.payload)
            .map_err(|e| corrupt(format!("log record at LSN {}: {e}", rec.lsn)))?;
        max_cts = max_cts.max(rec.cts);
        let at = |e: Error| corrupt(format!("replaying the log record at LSN {}: {e}", rec.lsn));
        match p {
            Payload::Commit(ops) => {
                txns += 1;
                replay(db, ops).map_err(at)
            }
            // Below the checkpoint's begin LSN (replay from below it under
            // per-operation logging): its catalog has the change.
            Payload::Catalog(_) if rec.lsn < begin => Ok(()),
            Payload::Catalog(c) => {
                ddl += 1;
                apply_catalog(db, c, "log").map_err(at)
            }
            // An aborted transaction's reserved range: nothing happened.
            Payload::Skip => {
                skips += 1;
                Ok(())
            }
            Payload::Op { prev, op } => {
                ops.read += 1;
                ops.pending.insert(rec.lsn, (prev, op));
                Ok(())
            }
            Payload::CommitOps { last_op, ops: n } => {
                txns += 1;
                let chain = ops.chain(last_op, n, replay_from, rec.lsn)?;
                replay(db, chain).map_err(at)
            }
        }
    })?;
    if let Some(m) = &manifest {
        if end.end < m.end_lsn {
            return Err(corrupt(format!(
                "checkpoint {} reflects the log up to LSN {} but the log ends at LSN {} \
                 (a log segment is missing or was truncated)",
                m.file, m.end_lsn, end.end
            )));
        }
    }
    report.log_segments = segs
        .iter()
        .map(|(start, path)| LogSegment {
            start_lsn: *start,
            path: path.clone(),
            bytes: fs::metadata(path).map_or(0, |m| m.len()),
        })
        .collect();
    report.skip_records = skips;
    report.operation_records = ops.read;
    report.operation_records_discarded = ops.pending.len() as u64;
    report.replay_from_lsn = replay_from;
    report.log_end_lsn = end.end;
    report.transactions_replayed = txns;
    report.catalog_records_replayed = ddl;
    report.log_bytes_read = end.bytes;
    report.torn_tail = end.torn.clone();
    report.max_commit_ts = max_cts;
    Ok(Replayed {
        report,
        manifest,
        begin,
        end,
        max_cts,
    })
}

/// Background checkpoints: one whenever `every` bytes of log have been
/// written since the last. Holds only a weak reference between checks.
fn spawn_checkpointer(db: Weak<DbInner>, every: u64) -> Result<()> {
    std::thread::Builder::new()
        .name("strata-checkpointer".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(50));
            let Some(db) = db.upgrade() else { return };
            let Some(log) = db.log.get() else { return };
            if log.checkpoint_due(every) == Some(true) {
                // A failed checkpoint leaves the previous one and the log in
                // place; the next attempt retries. Only we hold the
                // database once its last handle is gone: then the scan
                // gives up rather than keep the directory locked.
                let _ = log.checkpoint(&*db, || Arc::strong_count(&db) <= 1);
            }
        })
        .map(drop)
        .map_err(|e| Error::io("cannot start the checkpointer", e))
}

/// Per-operation logging: the operation records read and not yet claimed
/// by a chained commit, by LSN.
#[derive(Default)]
struct Operations {
    pending: HashMap<u64, (Option<u64>, RedoOp)>,
    read: u64,
}

impl Operations {
    /// The writes of the transaction whose chained commit at `commit_lsn`
    /// names `last` and `n` operation records, oldest first, taken out of
    /// `pending`. The chain ends at the transaction's first record or at
    /// `replay_from`: records below it belong to a transaction the
    /// checkpoint holds (see "Log granularity" in the `log` module), whose
    /// later records are replayed here as every record after the
    /// checkpoint's begin is. A record at or above `replay_from` that is
    /// missing, or a chain longer than `n`, is corruption.
    fn chain(
        &mut self,
        last: u64,
        n: u32,
        replay_from: u64,
        commit_lsn: u64,
    ) -> Result<Vec<RedoOp>> {
        let mut out = Vec::new();
        let mut at = Some(last);
        while let Some(lsn) = at.filter(|&l| l >= replay_from) {
            let Some((prev, op)) = self.pending.remove(&lsn) else {
                return Err(corrupt(format!(
                    "the commit record at LSN {commit_lsn} names an operation record at LSN \
                     {lsn}, which is not in the log"
                )));
            };
            if out.len() >= n as usize || prev.is_some_and(|p| p >= lsn) {
                return Err(corrupt(format!(
                    "the commit record at LSN {commit_lsn} names more than {n} operation \
                     records, or a chain that does not go back (at LSN {lsn})"
                )));
            }
            out.push(op);
            at = prev;
        }
        if at.is_none() && out.len() != n as usize {
            return Err(corrupt(format!(
                "the commit record at LSN {commit_lsn} names {n} operation records, \
                 its chain holds {}",
                out.len()
            )));
        }
        out.reverse();
        Ok(out)
    }
}

pub(super) fn has_checkpoint_file(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("ckpt-") && n.ends_with(".dat"))
        })
    })
}

fn table_by_id(db: &Database, id: u32) -> Result<Option<Table>> {
    let tables = db.inner.tables.read();
    let t = tables.get(id as usize).ok_or_else(|| {
        corrupt(format!(
            "a record names table id {id}, which does not exist"
        ))
    })?;
    Ok((!t.dropped.load(SeqCst)).then(|| Table {
        inner: Arc::clone(t),
    }))
}

fn apply_catalog(db: &Database, c: CatalogRecord, from: &str) -> Result<()> {
    match c {
        CatalogRecord::CreateTable { id, schema } => {
            let t = db.create_table(schema)?;
            if t.inner.id != id {
                return Err(corrupt(format!(
                    "the {from} creates table {} with id {id}, but it got id {}",
                    t.name(),
                    t.inner.id
                )));
            }
        }
        CatalogRecord::DropTable { id } => {
            let t = table_by_id(db, id)?
                .ok_or_else(|| corrupt(format!("the {from} drops table id {id} twice")))?;
            db.drop_table(t.name())?;
        }
        CatalogRecord::CreateIndex {
            table,
            name,
            columns,
            unique,
            kind,
        } => {
            let t = table_by_id(db, table)?.ok_or_else(|| {
                corrupt(format!(
                    "the {from} creates index {name} on dropped table id {table}"
                ))
            })?;
            let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
            let unique = if unique {
                crate::Unique::Yes
            } else {
                crate::Unique::No
            };
            // Its record is in the log; replay runs before the log is
            // attached, so `create_index` marks it defined as in memory,
            // and checkpoints from now on carry it.
            db.create_index_as(&name, &t, &cols, unique, kind)?;
        }
        CatalogRecord::AlterTable {
            table,
            id,
            schema,
            sources,
        } => {
            db.replay_alter(table, id, schema, sources)?;
        }
        CatalogRecord::DropIndex { name } => {
            if db.index(&name).is_err() {
                return Err(corrupt(format!(
                    "the {from} drops index {name}, which does not exist"
                )));
            }
            db.drop_index(&name)?;
        }
    }
    Ok(())
}

fn load_rows(db: &Database, table: u32, rows: Vec<Vec<Value>>) -> Result<()> {
    let t = table_by_id(db, table)?.ok_or_else(|| {
        corrupt(format!(
            "the checkpoint holds rows of dropped table id {table}"
        ))
    })?;
    let mut txn = db.begin()?;
    for r in rows {
        txn.insert(&t, r)?;
    }
    txn.commit()
}

/// Applies one committed transaction's redo records in one transaction.
fn replay(db: &Database, ops: Vec<RedoOp>) -> Result<()> {
    let mut txn = db.begin()?;
    for op in ops {
        match op {
            RedoOp::Put { table, row } => {
                let Some(t) = table_by_id(db, table)? else {
                    continue; // written before its table was dropped
                };
                match txn.insert(&t, row.clone()) {
                    Err(Error::DuplicateKey { .. }) => {
                        let s = t.schema();
                        let key = s.key_of(&row);
                        let changes: Vec<(usize, Value)> = row
                            .into_iter()
                            .enumerate()
                            .filter(|(i, _)| !s.primary_key.contains(i))
                            .collect();
                        txn.update(&t, &key, &changes)?;
                    }
                    r => r?,
                }
            }
            RedoOp::Update { table, key, cols } => {
                let Some(t) = table_by_id(db, table)? else {
                    continue;
                };
                // Absent: deleted by a record replayed later, from a
                // checkpoint that already reflects the delete.
                match txn.update(&t, &Key(key), &cols) {
                    Err(Error::NotFound { .. }) => {}
                    r => r?,
                }
            }
            RedoOp::Delete { table, key } => {
                let Some(t) = table_by_id(db, table)? else {
                    continue;
                };
                match txn.delete(&t, &Key(key)) {
                    Err(Error::NotFound { .. }) => {}
                    r => r?,
                }
            }
        }
    }
    txn.commit()
}
