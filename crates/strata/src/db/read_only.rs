//! The read-only open: `Database::open_read_only` loads a database
//! directory into memory for reading (`strata inspect`, `strata export`,
//! a look at a backup) and leaves the directory exactly as it found it.
//!
//! ```text
//!  flock(dir, SHARED)        refused (Error::Locked) while a writable open
//!                            holds it; read-only opens run side by side
//!  recovery::replay_dir      MANIFEST, checkpoint, log: the same checks and
//!                            the same replay as a writable open, into memory
//!  unlock                    the database is in memory from here on
//!  read_only := set          begin() gives snapshots; every write and DDL
//!                            is Error::ReadOnly
//!
//!  not done (what a writable open does next): cut the torn tail, create
//!  the first segment, remove stale checkpoints and partial segments,
//!  attach the log, start the flusher and the checkpointer
//! ```
//!
//! Invariant: **a read-only open writes nothing to the directory**, open
//! or refused, then or later: no file is created, written, truncated,
//! renamed or removed, so no name, size, content or mtime changes
//! (`tests/read_only.rs` hashes them around every open). It shares the
//! reading half of recovery (`recovery::replay_dir`, which only reads),
//! so a directory a writable open refuses is refused here with the same
//! typed error (`Error::Corrupt`, `Error::UnsupportedFormat`, `Error::Io`),
//! and one it accepts gives the same rows. A torn tail is reported in the
//! `RecoveryReport` and left in the file.
//!
//! Why the shared lock, held only while reading: a writable database
//! changes its files as it runs (a checkpoint writes a new MANIFEST, then
//! removes the segments and the checkpoint it replaces), so a reader
//! beside it could find a MANIFEST whose checkpoint or log is gone and
//! report damage that is not there. The writer's exclusive lock keeps the
//! reader out instead (`Error::Locked`: inspect a live database through a
//! backup, `Database::backup`), and the reader's shared lock keeps a
//! writer out while it reads. Once the files are read the database lives
//! in memory alone, so the lock is let go: a read-only database open for
//! a long time does not keep a writer from opening the directory (what it
//! shows is then the directory as it was when it was opened).

use super::recovery::{self, Lock};
use super::Database;
use crate::error::{Error, Result};
use crate::log::segment::list_segments;
use crate::options::{Durability, Options};
use crate::txn::ReadOnlyOpen;
use std::io;
use std::path::Path;
use std::time::Instant;

impl Database {
    /// Opens the database in `Durability::Wal { dir, .. }` of `opts` for
    /// reading only, writing nothing to `dir` (see the `read_only`
    /// module): recovery's checks and replay into memory, without cutting
    /// a torn tail, removing stale files, attaching the log or starting a
    /// flusher or checkpointer. The `sync` policy is not used.
    ///
    /// The database refuses every write with [`Error::ReadOnly`]: inserts,
    /// updates and deletes (a transaction from [`Database::begin`] is a
    /// snapshot, as from [`Database::begin_read_only`]), table and index
    /// DDL, and [`Database::checkpoint`]. Reads, [`Database::stats`] and
    /// [`Database::backup`] (into another directory) work;
    /// [`Database::recovery_report`] says what was read.
    ///
    /// Errors: `Error::Locked` while a writable open holds `dir`;
    /// `Error::Io` (kind `NotFound`) for a directory that does not exist
    /// or holds no database (no MANIFEST, checkpoint or log segment);
    /// otherwise what a writable open of `dir` would return
    /// (`Error::Corrupt` for damage, `Error::UnsupportedFormat`).
    ///
    /// ```
    /// # use strata::*;
    /// # let dir = std::env::temp_dir().join(format!("strata-doc-ro-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let wal = Options::default().durability(Durability::Wal {
    ///     dir: dir.clone(),
    ///     sync: SyncPolicy::GroupCommit,
    /// });
    /// let db = Database::open(wal.clone())?;
    /// let t = db.create_table(Schema::new("kv").column("k", Type::Int).primary_key(&["k"]))?;
    /// db.run(|x| x.insert(&t, row![1]))?;
    /// drop(db);
    ///
    /// let ro = Database::open_read_only(wal)?;
    /// let t = ro.table("kv")?;
    /// assert_eq!(ro.begin_read_only()?.count(&t, ..)?, 1);
    /// let refused = ro.run(|x| x.insert(&t, row![2]));
    /// assert!(matches!(refused, Err(Error::ReadOnly { .. })));
    /// # drop(ro);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open_read_only(opts: Options) -> Result<Database> {
        let Durability::Wal { dir, .. } = &opts.durability else {
            return Err(Error::InvalidConfig(
                "open_read_only reads a database directory: give it one with \
                 Options::durability(Durability::Wal { dir, .. })"
                    .into(),
            ));
        };
        let dir = dir.clone();
        let t0 = Instant::now();
        let db = Database::build(opts)?;
        let lock = recovery::lock_dir(&dir, Lock::Shared)?;
        refuse_if_no_database(&dir)?;
        let mut report = recovery::replay_dir(&db, &dir)?.report;
        drop(lock);
        report.duration = t0.elapsed();
        crate::trace::recovered(&report);
        let opened = ReadOnlyOpen {
            reason: format!(
                "the database was opened read-only (Database::open_read_only) from {}",
                dir.display()
            ),
            report,
        };
        if db.inner.read_only.set(opened).is_err() {
            return Err(Error::Misuse("opened read-only twice".into()));
        }
        Ok(db)
    }
}

impl Database {
    /// Whether `dir` holds a database's files (a MANIFEST, a checkpoint or
    /// a log segment), as [`Database::open_read_only`] requires; `false`
    /// for a directory that does not exist. Reads the listing only (not
    /// whether the files are sound: opening says that). A writable open
    /// makes a database of any directory, so a tool that must not (an
    /// import into a mistyped path) asks this first.
    pub fn holds_database(dir: impl AsRef<Path>) -> Result<bool> {
        let dir = dir.as_ref();
        let segments = match list_segments(dir) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(format!("cannot list {}", dir.display()), e)),
        };
        Ok(!segments.is_empty()
            || dir.join("MANIFEST").exists()
            || recovery::has_checkpoint_file(dir))
    }
}

/// A writable open makes a database of any directory; a read-only one
/// cannot, so a directory with none of a database's files is refused
/// rather than shown as an empty database (a mistyped path).
fn refuse_if_no_database(dir: &Path) -> Result<()> {
    if !Database::holds_database(dir)? {
        return Err(Error::io(
            format!("opening {} read-only", dir.display()),
            io::Error::new(
                io::ErrorKind::NotFound,
                "no Strata database there (no MANIFEST, checkpoint or log segment)",
            ),
        ));
    }
    Ok(())
}
