//! Online backup: `Database::backup(dir)` writes a directory that opens as
//! a database, while writers go on.
//!
//! ```text
//!  dir.partial/  ── checkpoint of a snapshot taken now (ckpt-B.dat, MANIFEST)
//!                ── the log from where its replay starts (R <= B) to the
//!                   end E the checkpoint saw, copied as one segment
//!  rename dir.partial -> dir            (only a complete backup has the name)
//!  Database::open(Wal { dir }) = recovery: the checkpoint, then R..E
//! ```
//!
//! The backup is the database as of E: the checkpoint's snapshot plus the
//! log prefix up to E replayed over it, as recovery after a crash at E
//! would find it (whole transactions, in commit order). An in-memory
//! database has no log: its backup is the snapshot alone, with an empty
//! segment, and opens as a durable database.
//!
//! Invariant: a directory named `dir` is a complete backup. It is written
//! under `dir.partial` and renamed only once every file is fsynced; a
//! backup that fails leaves no `dir`, and a damaged one fails to open with
//! `Error::Corrupt`, as a damaged database does.

use super::Database;
use crate::error::{Error, Result};
use crate::log::checkpoint;
use crate::log::segment::{sync_dir, SegmentWriter};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// What [`Database::backup`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupReport {
    /// Rows in the backup's checkpoint.
    pub rows: u64,
    /// Log bytes copied after the checkpoint (0 for an in-memory database).
    pub log_bytes: u64,
}

impl Database {
    /// Writes an online backup of the database into `dir`, which must not
    /// exist or be empty; writers and readers go on meanwhile. The backup
    /// opens as a database (`Options::durability(Durability::Wal { dir, ..
    /// })`) holding every commit up to a point during the call, whole
    /// transactions in commit order (see the `backup` module). It works on
    /// an in-memory database too.
    ///
    /// ```
    /// # use strata::*;
    /// # let dir = std::env::temp_dir().join(format!("strata-doc-backup-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let db = Database::open(Options::default())?;
    /// let t = db.open_table(Schema::new("kv").column("k", Type::Int).primary_key(&["k"]))?;
    /// db.run(|txn| txn.insert(&t, row![1]))?;
    /// db.backup(&dir)?;
    /// let copy = Database::open(Options::default().durability(Durability::Wal {
    ///     dir: dir.clone(),
    ///     sync: SyncPolicy::GroupCommit,
    /// }))?;
    /// assert!(copy.begin_read_only()?.get(&copy.table("kv")?, &key![1])?.is_some());
    /// # drop(copy);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn backup(&self, dir: impl AsRef<Path>) -> Result<BackupReport> {
        let dir = dir.as_ref();
        let refuse = |why: &str| {
            Error::io(
                format!("backup into {}", dir.display()),
                io::Error::new(io::ErrorKind::AlreadyExists, why.to_string()),
            )
        };
        match fs::read_dir(dir).map(|mut entries| entries.next().is_some()) {
            Ok(true) => return Err(refuse("the directory is not empty")),
            Ok(false) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(refuse("it is not a directory"))
            }
            Err(e) => return Err(Error::io(format!("backup into {}", dir.display()), e)),
        }
        let stage = staging(dir);
        let at = |what: &str, e: io::Error| Error::io(format!("{what} {}", stage.display()), e);
        match fs::remove_dir_all(&stage) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at("removing", e)),
            _ => {}
        }
        fs::create_dir_all(&stage).map_err(|e| at("creating", e))?;
        let written = self.write_backup(&stage);
        let report = match written {
            Ok(r) => r,
            Err(e) => {
                let _ = fs::remove_dir_all(&stage);
                return Err(e);
            }
        };
        if dir.exists() {
            // Empty (checked above): rename replaces an empty directory.
            fs::remove_dir(dir).map_err(|e| at("replacing the empty", e))?;
        }
        fs::rename(&stage, dir).map_err(|e| at("renaming", e))?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent).map_err(|e| at("syncing the parent of", e))?;
        }
        Ok(report)
    }

    /// The checkpoint and log of a backup, into the empty `stage`.
    fn write_backup(&self, stage: &Path) -> Result<BackupReport> {
        let inner = &*self.inner;
        if let Some(log) = inner.log.get() {
            let (rows, log_bytes) = log.backup(inner, stage)?;
            return Ok(BackupReport { rows, log_bytes });
        }
        // In memory: no log positions; the snapshot alone, and an empty
        // log for recovery to continue.
        let s = checkpoint::take(inner, stage, || 0, None, |_| Ok(()), || false)?;
        SegmentWriter::resume(stage, 0, 0, u64::MAX, None)
            .and_then(|mut w| w.close())
            .map_err(|e| Error::io(format!("writing the log of {}", stage.display()), e))?;
        Ok(BackupReport {
            rows: s.rows,
            log_bytes: 0,
        })
    }
}

/// `dir.partial`, beside `dir`.
fn staging(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    dir.with_file_name(name)
}
