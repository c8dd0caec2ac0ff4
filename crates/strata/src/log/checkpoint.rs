//! Checkpoints: a snapshot of every table written in the background, and
//! the manifest that names the newest complete one.
//!
//! ```text
//!   1. under the catalog lock: B = log.reserved, copy the table list
//!   2. register snapshot T = clock (GC keeps what T sees)
//!   3. write ckpt-B.tmp: [meta B,T][catalog...][rows...][end n]  (CRC/block)
//!   4. E = log.reserved; wait until the log is durable up to E
//!   5. fsync, rename to ckpt-B.dat, then MANIFEST.tmp -> MANIFEST (fsync dir)
//!   6. delete older checkpoints and log segments that end at or before B
//! ```
//!
//! Recovery loads the checkpoint and replays the log from B (under
//! per-operation logging from a lower LSN, with the catalog records below B
//! passed over: see "Log granularity" in the `log` module). That is right
//! although the scan is not a transaction-consistent cut of the log:
//!
//! * Every record below B belongs to a transaction that reserved its log
//!   space before step 1, so it had drawn its commit timestamp (<= T) and
//!   was at least PRECOMMIT; a snapshot reader at T waits for such a
//!   transaction, so its writes are in the checkpoint. (With LSN commit
//!   stamps it reserved before validating: if it then aborted, its range is
//!   a skip record and there is nothing to have.)
//! * Every version the scan saw is committed, so its record is below E and
//!   durable before the manifest names the checkpoint (step 4).
//! * Redo records are after-images (whole rows, or the new values of the
//!   changed columns) applied in log order, and per key the log order is
//!   the version order (see the `log` module). Replaying a key's records
//!   from B over the checkpoint ends in the state after its last record,
//!   whatever prefix of them the scan had already seen: a column keeps the
//!   checkpoint's value only if no record from B on writes it (a put or a
//!   delete replaces the whole row), and then the checkpoint's value is
//!   that column's final one. An update whose row is absent is skipped: a
//!   later record (the delete the checkpoint already reflects) follows it.

use super::record::{corrupt, put_catalog, put_values, CResult, CatalogRecord, Reader};
use super::segment::{list_segments, sync_dir};
use crate::error::{Error, Result};
use crate::storage;
use crate::storage::visibility::Mode;
use crate::table::TableInner;
use crate::tid::TidTable;
use crate::value::Value;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use std::sync::Arc;

const MANIFEST_MAGIC: u64 = u64::from_le_bytes(*b"STRLMANI");
const BLOCK_META: u8 = 1;
const BLOCK_CATALOG: u8 = 2;
const BLOCK_ROWS: u8 = 3;
const BLOCK_END: u8 = 4;
const BLOCK_TARGET: usize = 64 << 10;

/// What MANIFEST says about the newest complete checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub file: String,
    /// The checkpoint's begin LSN B: its catalog is the catalog at B, and
    /// every commit record below B is in its rows.
    pub begin_lsn: u64,
    /// Where replay starts: `begin_lsn`, or below it under per-operation
    /// logging (the operation records of transactions open at B; see
    /// "Log granularity" in the `log` module). Stored after the file name
    /// only when lower (older manifests, and every per-transaction one,
    /// read as before).
    pub replay_from: u64,
    /// The log must reach at least this LSN (the checkpoint saw commits up
    /// to here).
    pub end_lsn: u64,
    /// Snapshot timestamp of the scan.
    pub ts: u64,
    pub len: u64,
    pub crc: u32,
}

pub fn checkpoint_name(begin: u64) -> String {
    format!("ckpt-{begin:020}.dat")
}

fn io(what: &str, e: io::Error) -> Error {
    Error::io(what, e)
}

pub fn read_manifest(dir: &Path) -> CResult<Option<Manifest>> {
    let path = dir.join("MANIFEST");
    let data = match fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("reading MANIFEST", e)),
    };
    let bad = |why: &str| corrupt(format!("{}: {why}", path.display()));
    if data.len() < 4 {
        return Err(bad("too short"));
    }
    let (body, crc) = data.split_at(data.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
        return Err(bad("fails its CRC"));
    }
    let mut r = Reader::new(body);
    let parse = |r: &mut Reader<'_>| -> std::result::Result<Manifest, String> {
        if r.u64()? != MANIFEST_MAGIC {
            return Err("bad magic".into());
        }
        let begin_lsn = r.u64()?;
        let mut m = Manifest {
            begin_lsn,
            replay_from: begin_lsn,
            end_lsn: r.u64()?,
            ts: r.u64()?,
            len: r.u64()?,
            crc: r.u32()?,
            file: r.str()?,
        };
        if r.pos < body.len() {
            m.replay_from = r.u64()?;
            if m.replay_from > m.begin_lsn {
                return Err(format!(
                    "replay starts at LSN {}, after the checkpoint's begin LSN {}",
                    m.replay_from, m.begin_lsn
                ));
            }
        }
        Ok(m)
    };
    parse(&mut r).map(Some).map_err(|e| bad(&e))
}

fn write_manifest(dir: &Path, m: &Manifest) -> io::Result<()> {
    let mut b = Vec::new();
    b.extend_from_slice(&MANIFEST_MAGIC.to_le_bytes());
    for v in [m.begin_lsn, m.end_lsn, m.ts, m.len] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&m.crc.to_le_bytes());
    b.extend_from_slice(&(m.file.len() as u32).to_le_bytes());
    b.extend_from_slice(m.file.as_bytes());
    if m.replay_from < m.begin_lsn {
        b.extend_from_slice(&m.replay_from.to_le_bytes());
    }
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    let tmp = dir.join("MANIFEST.tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(&b)?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join("MANIFEST"))?;
    sync_dir(dir)
}

/// Writes blocks `[len u32][crc u32][kind u8 + payload]`, keeping a CRC of
/// the whole file for the manifest.
struct BlockWriter {
    out: BufWriter<File>,
    len: u64,
    crc: u32,
}

impl BlockWriter {
    fn block(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut head = [0u8; 8];
        head[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        head[4..8].copy_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        for part in [&head[..], payload] {
            self.out.write_all(part)?;
            self.crc = crc32c::crc32c_append(self.crc, part);
            self.len += part.len() as u64;
        }
        Ok(())
    }
}

/// Counts of a checkpoint written or loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    pub begin_lsn: u64,
    /// Where replay from this checkpoint starts (at or below `begin_lsn`).
    pub replay_from: u64,
    pub ts: u64,
    pub rows: u64,
    pub bytes: u64,
}

/// What a checkpoint reads of the database (implemented by the database,
/// `db`): the log knows the file formats, not the catalog.
pub(crate) trait Source {
    /// Under the catalog lock, which orders the checkpoint with
    /// create/drop table and index (they log their records holding it):
    /// `begin = reserved()` and the catalog.
    fn catalog(&self, reserved: &dyn Fn() -> u64) -> Catalog;
    /// Registers a snapshot as `Transaction::begin` does, before reading it
    /// (GC keeps what it sees): (slot id, snapshot timestamp).
    fn register_snapshot(&self) -> Result<(u64, u64)>;
    /// The TID table the snapshot is registered in.
    fn tids(&self) -> &TidTable;
}

/// The catalog at the checkpoint's begin LSN.
pub(crate) struct Catalog {
    pub begin: u64,
    /// Every table ever created (dropped ones with `dropped` set: the
    /// checkpoint records the drop, so table ids stay dense).
    pub tables: Vec<Arc<TableInner>>,
    pub dropped: Vec<bool>,
    /// `CreateIndex` records of the live, logged indexes, by name.
    pub indexes: Vec<CatalogRecord>,
}

/// Takes a checkpoint of `db` into `dir` (steps 1-6 of the module doc).
/// `ops_floor`: under per-operation logging, the floor read before step 1
/// (`Log::operations_floor`); replay then starts at the lower of it and B,
/// and only segments below that are removed.
/// `wait_durable(lsn)` must return once the log is on disk up to `lsn`;
/// `abandon()` turning true stops the scan (the database is closing).
pub fn take(
    db: &impl Source,
    dir: &Path,
    reserved: impl Fn() -> u64,
    ops_floor: Option<u64>,
    wait_durable: impl Fn(u64) -> Result<()>,
    abandon: impl Fn() -> bool,
) -> Result<CheckpointStats> {
    // 1. The catalog lock orders us with create_table/drop_table, which log
    //    their record while holding it.
    //    create_index/drop_index log theirs under it too.
    let Catalog {
        begin,
        tables,
        dropped,
        indexes,
    } = db.catalog(&reserved);
    let replay_from = ops_floor.map_or(begin, |f| f.min(begin));
    // 2. Register the snapshot before reading it, as Transaction::begin does.
    let (tid, ts) = db.register_snapshot()?;
    let name = checkpoint_name(begin);
    let tmp = dir.join(format!("{name}.tmp"));
    let written = (|| -> Result<(u64, u32, u64)> {
        let f = File::create(&tmp).map_err(|e| io("creating a checkpoint", e))?;
        let mut w = BlockWriter {
            out: BufWriter::with_capacity(1 << 20, f),
            len: 0,
            crc: 0,
        };
        let werr = |e| io("writing a checkpoint", e);
        let mut b = vec![BLOCK_META];
        b.extend_from_slice(&begin.to_le_bytes());
        b.extend_from_slice(&ts.to_le_bytes());
        w.block(&b).map_err(werr)?;
        for (t, &gone) in tables.iter().zip(&dropped) {
            let mut b = vec![BLOCK_CATALOG];
            put_catalog(
                &mut b,
                &CatalogRecord::CreateTable {
                    id: t.id,
                    schema: t.schema.clone(),
                },
            );
            w.block(&b).map_err(werr)?;
            if gone {
                let mut b = vec![BLOCK_CATALOG];
                put_catalog(&mut b, &CatalogRecord::DropTable { id: t.id });
                w.block(&b).map_err(werr)?;
            }
        }
        // Index definitions before the rows: loading the rows fills them.
        for c in &indexes {
            let mut b = vec![BLOCK_CATALOG];
            put_catalog(&mut b, c);
            w.block(&b).map_err(werr)?;
        }
        let mut rows = 0u64;
        for (t, &gone) in tables.iter().zip(&dropped) {
            if gone {
                continue;
            }
            let mut b = Vec::with_capacity(BLOCK_TARGET + 1024);
            let mut n = 0u32;
            let start = |b: &mut Vec<u8>| {
                b.clear();
                b.push(BLOCK_ROWS);
                b.extend_from_slice(&t.id.to_le_bytes());
                b.extend_from_slice(&0u32.to_le_bytes());
            };
            start(&mut b);
            let mut err = None;
            let mut guard = crossbeam_epoch::pin();
            t.rows.for_each_head(|tuple, _| {
                if err.is_some() {
                    return;
                }
                // Snapshot mode never fails (only timestamp order does).
                let v = storage::visible(t, tuple, ts, 0, db.tids(), Mode::Snapshot)
                    .unwrap_or(std::ptr::null_mut());
                // SAFETY: pinned, and `v` is visible to the snapshot we
                // registered, so GC keeps it.
                if let Some(r) = unsafe { v.as_ref() }.filter(|r| !r.is_tombstone()) {
                    storage::with_values(r, |vals| put_values(&mut b, vals));
                    n += 1;
                    rows += 1;
                }
                if b.len() >= BLOCK_TARGET {
                    if abandon() {
                        err = Some(io::Error::other("abandoned: the database was closed"));
                        return;
                    }
                    b[5..9].copy_from_slice(&n.to_le_bytes());
                    if let Err(e) = w.block(&b) {
                        err = Some(e);
                    }
                    start(&mut b);
                    n = 0;
                    guard.repin();
                }
            });
            drop(guard);
            if let Some(e) = err {
                return Err(werr(e));
            }
            if n > 0 {
                b[5..9].copy_from_slice(&n.to_le_bytes());
                w.block(&b).map_err(werr)?;
            }
        }
        let mut b = vec![BLOCK_END];
        b.extend_from_slice(&rows.to_le_bytes());
        w.block(&b).map_err(werr)?;
        let f = w.out.into_inner().map_err(|e| werr(e.into_error()))?;
        f.sync_all().map_err(werr)?;
        Ok((w.len, w.crc, rows))
    })();
    db.tids().release(tid);
    let (len, crc, rows) = match written {
        Ok(x) => x,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    };
    // 4. Everything the scan saw must be durable before the manifest may
    //    name the checkpoint.
    let end = reserved();
    wait_durable(end)?;
    // 5.
    fs::rename(&tmp, dir.join(&name)).map_err(|e| io("renaming a checkpoint", e))?;
    let m = Manifest {
        file: name.clone(),
        begin_lsn: begin,
        replay_from,
        end_lsn: end,
        ts,
        len,
        crc,
    };
    write_manifest(dir, &m).map_err(|e| io("writing MANIFEST", e))?;
    // 6. Old checkpoints and covered log segments.
    remove_stale_checkpoints(dir, &name);
    if let Ok(segs) = list_segments(dir) {
        for w in segs.windows(2) {
            if w[1].0 <= replay_from {
                let _ = fs::remove_file(&w[0].1);
            }
        }
    }
    let _ = sync_dir(dir);
    Ok(CheckpointStats {
        begin_lsn: begin,
        replay_from,
        ts,
        rows,
        bytes: len,
    })
}

/// Removes checkpoint files other than `keep` (older ones and partial ones
/// a crash left behind).
pub fn remove_stale_checkpoints(dir: &Path, keep: &str) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name();
            let Some(n) = n.to_str() else { continue };
            if n.starts_with("ckpt-") && n != keep {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// Loads the checkpoint `m` names, checking its length, its file CRC and
/// every block's CRC.
pub fn load(
    dir: &Path,
    m: &Manifest,
    mut on_catalog: impl FnMut(CatalogRecord) -> Result<()>,
    mut on_rows: impl FnMut(u32, Vec<Vec<Value>>) -> Result<()>,
) -> Result<CheckpointStats> {
    let path = dir.join(&m.file);
    let data = match fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(corrupt(format!(
                "MANIFEST names checkpoint {} but the file is missing",
                path.display()
            )))
        }
        Err(e) => return Err(io("reading a checkpoint", e)),
    };
    let bad = |at: usize, why: String| {
        corrupt(format!(
            "checkpoint {} at offset {at}: {why}",
            path.display()
        ))
    };
    if data.len() as u64 != m.len {
        return Err(bad(
            data.len().min(m.len as usize),
            format!(
                "the file is {} bytes but MANIFEST says {}",
                data.len(),
                m.len
            ),
        ));
    }
    if crc32c::crc32c(&data) != m.crc {
        // Find the damaged block for the message.
        let mut pos = 0;
        while pos + 8 <= data.len() {
            let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
            let crc = u32::from_le_bytes(data[pos + 4..pos + 8].try_into().unwrap());
            if pos + 8 + len > data.len() || crc32c::crc32c(&data[pos + 8..pos + 8 + len]) != crc {
                break;
            }
            pos += 8 + len;
        }
        return Err(bad(pos, "the file fails its CRC (damaged block)".into()));
    }
    let mut stats = CheckpointStats {
        bytes: m.len,
        ..Default::default()
    };
    let mut pos = 0;
    let mut ended = false;
    while pos < data.len() {
        let at = pos;
        if pos + 8 > data.len() {
            return Err(bad(at, "partial block".into()));
        }
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        if pos + 8 + len > data.len() || len == 0 {
            return Err(bad(at, "partial block".into()));
        }
        let block = &data[pos + 8..pos + 8 + len];
        pos += 8 + len;
        let mut r = Reader::new(&block[1..]);
        let step = (|| -> std::result::Result<Option<Result<()>>, String> {
            Ok(match block[0] {
                BLOCK_META => {
                    stats.begin_lsn = r.u64()?;
                    stats.ts = r.u64()?;
                    if stats.begin_lsn != m.begin_lsn || stats.ts != m.ts {
                        return Err(format!(
                            "checkpoint is for LSN {} / ts {}, MANIFEST says LSN {} / ts {}",
                            stats.begin_lsn, stats.ts, m.begin_lsn, m.ts
                        ));
                    }
                    None
                }
                BLOCK_CATALOG => Some(on_catalog(r.catalog()?)),
                BLOCK_ROWS => {
                    let table = r.u32()?;
                    let n = r.u32()?;
                    // `n` comes from the file: clamp it by the bytes left
                    // (a row is at least its 4-byte value count).
                    let mut rows = Vec::with_capacity(r.capacity_for(n as usize, 4));
                    for _ in 0..n {
                        rows.push(r.values()?);
                    }
                    stats.rows += n as u64;
                    Some(on_rows(table, rows))
                }
                BLOCK_END => {
                    let n = r.u64()?;
                    if n != stats.rows {
                        return Err(format!(
                            "end block counts {n} rows, blocks held {}",
                            stats.rows
                        ));
                    }
                    ended = true;
                    None
                }
                k => return Err(format!("unknown block kind {k}")),
            })
        })();
        match step {
            Ok(Some(r)) => r?,
            Ok(None) => {}
            Err(why) => return Err(bad(at, why)),
        }
    }
    if !ended {
        return Err(bad(data.len(), "no end block".into()));
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manifest keeps a replay start below the begin LSN (per-operation
    /// logging) and reads one without it, as every older manifest is, as
    /// starting at the begin LSN; one after it is refused.
    #[test]
    fn manifest_round_trips_with_and_without_a_lower_replay_start() {
        let dir = std::env::temp_dir().join(format!("strata-manifest-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut m = Manifest {
            file: checkpoint_name(4096),
            begin_lsn: 4096,
            replay_from: 1024,
            end_lsn: 5000,
            ts: 5001,
            len: 77,
            crc: 9,
        };
        write_manifest(&dir, &m).unwrap();
        assert_eq!(read_manifest(&dir).unwrap(), Some(m.clone()));
        let lower = fs::read(dir.join("MANIFEST")).unwrap().len();
        m.replay_from = m.begin_lsn;
        write_manifest(&dir, &m).unwrap();
        assert_eq!(read_manifest(&dir).unwrap(), Some(m.clone()));
        assert_eq!(
            fs::read(dir.join("MANIFEST")).unwrap().len(),
            lower - 8,
            "no field when replay starts at the begin LSN (the older format)"
        );
        // A start after the begin LSN, CRC and all: corrupt.
        let mut b = fs::read(dir.join("MANIFEST")).unwrap();
        b.truncate(b.len() - 4);
        b.extend_from_slice(&9999u64.to_le_bytes());
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        fs::write(dir.join("MANIFEST"), &b).unwrap();
        assert!(
            matches!(read_manifest(&dir), Err(Error::Corrupt(m)) if m.contains("replay starts"))
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
