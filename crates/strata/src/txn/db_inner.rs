//! The state every transaction of one database shares: options, the
//! protocols' shared state (clock, TID table, horizon, SSI registry, which
//! `DbInner` derefs to), the catalog of tables and indexes, the collector
//! and the log.
//!
//! ```text
//!  Database ──Arc──> DbInner ──Deref──> cc::Shared { clock, tids, horizon, ssi }
//!  Transaction ──Arc──┘   ├─ tables, names, indexes (catalog)
//!                         ├─ gc (the collector `Options::gc` names)
//!                         ├─ log (empty in memory and during replay)
//!                         └─ read_only (set by a read-only open)
//! ```
//!
//! It lives with the transactions, below `db`, because a transaction holds
//! it; `db` builds it (`Database::open`) and owns the catalog operations.
//! Invariant: a table's place in `tables` is never taken by another table
//! (ids are not reused); a dropped table stays there, marked, until every
//! transaction open at its drop has ended, so the table pointers in
//! transactions' read and write sets stay valid; then an empty tombstone
//! takes its place (`gc::dropped`).

use crate::cc::Shared;
use crate::gc::Gc;
use crate::options::{Options, Protocol};
use crate::table::TableInner;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

pub(crate) struct DbInner {
    /// Unique per database, so a table handle from another one is refused.
    pub id: u64,
    pub opts: Options,
    pub protocol: Protocol,
    /// `Options::memory_limit` is set: writes look at the gauge
    /// (`gc::Common::memory`, a line of its own) only then.
    pub memory_limited: bool,
    /// The clock, TID table, horizon and SSI registry (see `cc::Shared`).
    pub shared: Shared,
    /// Tables by id. A dropped table stays here (marked) while
    /// transactions open at its drop may hold pointers into it; then an
    /// empty tombstone replaces it (`gc::dropped`).
    pub tables: RwLock<Vec<Arc<TableInner>>>,
    pub names: RwLock<HashMap<String, u32>>,
    /// The garbage collector `Options::gc` names (see `gc`).
    pub gc: Gc,
    /// The write-ahead log; empty for an in-memory database (and while
    /// recovery replays, so replay logs nothing).
    pub log: OnceLock<crate::log::Log>,
    /// Set once a read-only open (`Database::open_read_only`) has replayed
    /// the directory: from then on every write and DDL is
    /// `Error::ReadOnly`. Empty while replay runs, which writes through
    /// the normal paths.
    pub read_only: OnceLock<ReadOnlyOpen>,
    /// Secondary indexes by name.
    pub indexes: crate::index::secondary::IndexCatalog,
    /// The alters whose copy runs outside the catalog lock, and what they
    /// hold meanwhile (see `txn::alters`).
    pub alters: super::alters::Alters,
    /// Memory spaces versions are allocated from (`Options::memory_spaces`);
    /// every table holds a clone.
    pub spaces: Option<Arc<crate::storage::space::SpaceSet>>,
    /// Where MV-PBT indexes spill frozen partitions
    /// (`Options::mvpbt_spill_dir`), this database's own subdirectory.
    pub mvpbt_spill: Option<Arc<crate::index::mvpbt_spill::SpillDir>>,
    /// Per-component transaction times (`Options::time_breakdown`); `None`
    /// when off, which every timing point tests first.
    pub breakdown: Option<Arc<crate::breakdown::Breakdown>>,
    /// How retries wait (`Options::backoff`, `txn::contention`).
    pub contention: super::contention::Regulator,
    /// `WriteInstall::AtCommit`: each TID slot's buffered writes (see
    /// `txn::deferred`); `None` under Eager.
    pub deferred: Option<super::deferred::Buffers>,
}

/// What a read-only open found, kept for `Database::recovery_report` (a
/// read-only database has no log to keep it).
pub(crate) struct ReadOnlyOpen {
    /// What `Error::ReadOnly` says.
    pub reason: String,
    pub report: crate::log::RecoveryReport,
}

impl DbInner {
    /// The catalog lock (`names`, write), once no running alter holds
    /// `name` (waiting for one that does, without the lock: see
    /// `txn::alters`).
    pub fn names_free_of(
        &self,
        name: &str,
    ) -> parking_lot::RwLockWriteGuard<'_, HashMap<String, u32>> {
        loop {
            let names = self.names.write();
            if !self.alters.holds_name(name) {
                return names;
            }
            drop(names);
            self.alters.wait_for_name(name);
        }
    }

    /// `Err(Error::ReadOnly)` if the database was opened read-only.
    #[inline]
    pub fn check_writable(&self) -> crate::error::Result<()> {
        match self.read_only.get() {
            None => Ok(()),
            Some(r) => Err(crate::error::Error::ReadOnly {
                reason: r.reason.clone(),
            }),
        }
    }
}

impl std::ops::Deref for DbInner {
    type Target = Shared;

    #[inline]
    fn deref(&self) -> &Shared {
        &self.shared
    }
}
