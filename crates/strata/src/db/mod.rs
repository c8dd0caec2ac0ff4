//! The database: options, catalog, clock and transaction table.

mod alter;
pub use alter::Alter;
mod backup;
pub use crate::txn::contention::backoff;
pub use backup::BackupReport;
mod read_only;
mod recovery;
mod secondary_ddl;

use crate::cc::{with_cc, Cc};
use crate::error::{Error, Result};
use crate::gc::{self, Gc, Snapshots};
use crate::log::record::CatalogRecord;
use crate::log::{CommitTicket, LogStats, RecoveryReport};
use crate::options::{Durability, MemorySpaces, Options};
use crate::stats::Stats;
use crate::storage::meter::Gauged;
use crate::storage::version::{Version, HEADER_BYTES};
use crate::table::{Table, TableInner};
use crate::tid::TidTable;
use crate::txn::{DbInner, Transaction};
use crate::value::Schema;
use parking_lot::{RwLock, RwLockReadGuard};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// An in-memory MVCC database. Cheap to clone; all clones share one engine.
#[derive(Clone)]
pub struct Database {
    pub(crate) inner: Arc<DbInner>,
}

impl Database {
    /// Opens a database, refusing invalid options: an empty in-memory one,
    /// or with `Durability::Wal { dir, .. }` the database in `dir`
    /// (recovered; created if the directory holds none).
    pub fn open(opts: Options) -> Result<Database> {
        let db = Database::build(opts)?;
        if let Durability::Wal { dir, .. } = &db.inner.opts.durability {
            recovery::open(&db, &dir.clone())?;
            if let Some(r) = db.recovery_report() {
                crate::trace::recovered(&r);
            }
        }
        Ok(db)
    }

    /// An empty in-memory database with these options, its collector
    /// started (the log, if any, is attached by recovery).
    fn build(opts: Options) -> Result<Database> {
        opts.validate()?;
        let gc = Gc::new(&opts);
        let spaces = match opts.memory_spaces {
            MemorySpaces::System => None,
            MemorySpaces::Spaces { count, increment } => Some(Arc::new(
                crate::storage::space::SpaceSet::new(count, increment),
            )),
        };
        let mvpbt_spill = match &opts.mvpbt_spill_dir {
            Some(d) => Some(crate::index::mvpbt_spill::SpillDir::open(d)?),
            None => None,
        };
        let breakdown = opts
            .time_breakdown
            .then(|| Arc::new(crate::breakdown::Breakdown::new(opts.max_open_transactions)));
        let backoff_kind = opts.backoff;
        let deferred = (opts.write_install == crate::options::WriteInstall::AtCommit)
            .then(|| crate::txn::Buffers::new(opts.max_open_transactions));
        let db = Database {
            inner: Arc::new(DbInner {
                id: NEXT_DB_ID.fetch_add(1, SeqCst),
                protocol: opts.protocol,
                memory_limited: opts.memory_limit.is_some(),
                shared: crate::cc::Shared {
                    ssn_early_exclusion: opts.ssn_early_exclusion,
                    ssn_blind_writes: opts.ssn_blind_writes,
                    mvto_locked_read: opts.mvto_locked_read,
                    ..crate::cc::Shared::new(opts.max_open_transactions)
                },
                opts,
                tables: RwLock::new(Vec::new()),
                names: RwLock::new(HashMap::new()),
                gc,
                log: OnceLock::new(),
                read_only: OnceLock::new(),
                indexes: Default::default(),
                alters: Default::default(),
                spaces,
                mvpbt_spill,
                breakdown,
                contention: crate::txn::contention::Regulator::new(backoff_kind),
                deferred,
            }),
        };
        db.inner
            .gc
            .start(&Arc::downgrade(&db.inner), db.inner.opts.gc_interval)?;
        Ok(db)
    }

    /// What recovery found when this database was opened from a directory
    /// (`None` for an in-memory database).
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        match self.inner.read_only.get() {
            Some(r) => Some(r.report.clone()),
            None => self.inner.log.get().map(|l| l.report().clone()),
        }
    }

    /// Why the database refuses writes, if it does: it was opened
    /// read-only ([`Database::open_read_only`]), or a log write or fsync
    /// failed (a full disk). Reads keep working.
    pub fn read_only_reason(&self) -> Option<String> {
        match self.inner.read_only.get() {
            Some(r) => Some(r.reason.clone()),
            None => self.inner.log.get().and_then(|l| l.read_only_reason()),
        }
    }

    /// Log counters (`None` for an in-memory database).
    pub fn log_stats(&self) -> Option<LogStats> {
        self.inner.log.get().map(|l| l.stats())
    }

    /// Time spent in transactions so far, by engine component, with
    /// `Options::time_breakdown` on (`None` when off). Take it twice and
    /// subtract (`TimeBreakdown::since`) for a window.
    pub fn time_breakdown(&self) -> Option<crate::TimeBreakdown> {
        self.inner.breakdown.as_ref().map(|b| b.sums())
    }

    /// Waits until every commit so far is on stable storage (useful with
    /// `SyncPolicy::Async`). A no-op for an in-memory database.
    pub fn sync_log(&self) -> Result<()> {
        match self.inner.log.get() {
            Some(l) => l.sync_all(),
            None => Ok(()),
        }
    }

    /// Takes a checkpoint now, without stopping transactions, and removes
    /// the log segments it covers. Returns the rows written.
    pub fn checkpoint(&self) -> Result<u64> {
        self.inner.check_writable()?;
        match self.inner.log.get() {
            Some(l) => l.checkpoint(&*self.inner, || false).map(|s| s.rows),
            None => Err(Error::InvalidConfig(
                "checkpoint needs Durability::Wal; this database is in memory".into(),
            )),
        }
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// **Breaks serializability; for tests only.** From now on MVOCC, MV2PL
    /// and OCC commit without re-validating range scans and reads of absent
    /// keys (`cc::predicate::validate_scans`), so phantoms get through. The
    /// history checker's tests use it to show that the predicate workload
    /// catches a protocol with its phantom check missing.
    #[doc(hidden)]
    #[cfg(feature = "lab")]
    pub fn skip_phantom_validation_for_testing(&self) {
        self.inner
            .skip_phantom_validation
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Creates a table; fails on a duplicate name or an invalid schema.
    pub fn create_table(&self, schema: Schema) -> Result<Table> {
        self.inner.check_writable()?;
        let schema = schema.validate()?;
        let mut names = self.inner.names_free_of(&schema.name);
        if names.contains_key(&schema.name) {
            return Err(Error::TableExists {
                table: schema.name.clone(),
            });
        }
        let mut tables = self.inner.tables.write();
        let id =
            u32::try_from(tables.len()).map_err(|_| Error::Schema("too many tables".into()))?;
        // Logged under the catalog lock (checkpoints read the catalog and
        // the log position under it).
        let logged = match self.inner.log.get() {
            Some(log) => Some((
                log,
                log.catalog(&CatalogRecord::CreateTable {
                    id,
                    schema: schema.clone(),
                })?,
            )),
            None => None,
        };
        let name = schema.name.clone();
        let t = self.new_table_inner(id, schema);
        tables.push(Arc::clone(&t));
        names.insert(name, id);
        drop((tables, names));
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(Table { inner: t })
    }

    /// A table's state, with this database's storage choices, not yet in
    /// the catalog.
    fn new_table_inner(&self, id: u32, schema: Schema) -> Arc<TableInner> {
        Arc::new(
            TableInner::new(id, self.inner.id, schema)
                .with_storage(self.inner.opts.version_storage, self.inner.opts.non_inline)
                .with_index_pointers(self.inner.opts.index_pointers)
                .with_siro(&self.inner.opts.siro)
                .with_coop(self.inner.gc.chain_walk_hook())
                .with_spaces(self.inner.spaces.clone())
                .with_gauge(Gauged::of(self.inner.opts.memory_limit)),
        )
    }

    /// Opens the table `schema` names, creating it if it does not exist:
    /// what a program that reopens its database calls at start. A table of
    /// that name with another schema is [`Error::SchemaMismatch`], which
    /// says the first difference (a column's name, type or nullability,
    /// their number, the primary key, the point-lookup structure); nothing
    /// is changed then.
    ///
    /// ```
    /// # use strata::{Database, Error, Options, Schema, Type};
    /// let db = Database::open(Options::default())?;
    /// let kv = || Schema::new("kv").column("k", Type::Int).column("v", Type::Text).primary_key(&["k"]);
    /// let t = db.open_table(kv())?;                        // created
    /// let again = db.open_table(kv())?;                    // the same table
    /// assert_eq!(t.name(), again.name());
    /// let other = Schema::new("kv").column("k", Type::Int).column("v", Type::Int).primary_key(&["k"]);
    /// assert!(matches!(db.open_table(other), Err(Error::SchemaMismatch { .. })));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn open_table(&self, schema: Schema) -> Result<Table> {
        let schema = schema.validate()?;
        loop {
            if let Ok(t) = self.table(&schema.name) {
                return match t.schema().difference(&schema) {
                    None => Ok(t),
                    Some(difference) => Err(Error::SchemaMismatch {
                        table: schema.name.clone(),
                        difference,
                    }),
                };
            }
            match self.create_table(schema.clone()) {
                // Another thread created it between our look and our create
                // (`create_table`'s own error for a taken name: matching the
                // older `Schema` error here let that race fail the open).
                Err(Error::TableExists { .. }) => continue,
                r => return r,
            }
        }
    }

    /// Looks a table up by name.
    ///
    /// A table being altered ([`Database::alter_table`]), under its name
    /// or the one it is taking, is the altered table: the lookup waits
    /// for the alter's copy. Other tables are looked up meanwhile.
    pub fn table(&self, name: &str) -> Result<Table> {
        let names = loop {
            let names = self.inner.names.read();
            if !self.inner.alters.holds_name(name) {
                break names;
            }
            drop(names);
            self.inner.alters.wait_for_name(name);
        };
        let id = *names.get(name).ok_or_else(|| Error::NoSuchTable {
            table: name.to_string(),
        })?;
        Ok(Table {
            inner: Arc::clone(&self.inner.tables.read()[id as usize]),
        })
    }

    /// Names of all tables.
    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.names.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// Drops a table. Later operations through any handle to it fail with
    /// `Error::TableDropped`, and so does the commit of a transaction that
    /// wrote to it before the drop and had not committed when the drop began
    /// (it is rolled back); commits already deciding are waited for, so
    /// every commit is ordered before the drop (in memory and in the log) or
    /// refused.
    ///
    /// Its memory (rows, versions, indexes, MV-PBT's spilled partitions) is freed
    /// while the database runs: at once if no transaction is open, else by
    /// the first garbage collection after the last transaction open at
    /// the drop has ended (under every `GcPolicy`, `None` included, with
    /// [`Database::collect_garbage`]), or when the last [`Table`] or
    /// [`crate::Index`] handle to it is dropped, if one outlives that.
    /// `Stats::dropped_tables_waiting` counts the tables not freed yet.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.inner.check_writable()?;
        let mut names = self.inner.names_free_of(name);
        let id = *names.get(name).ok_or_else(|| Error::NoSuchTable {
            table: name.to_string(),
        })?;
        let t = Arc::clone(&self.inner.tables.read()[id as usize]);
        // Refuse commits that wrote to it from now on, then wait out those
        // past their check (see `Transaction::commit`), so that their log
        // records come before ours. Checkpoints, which read the flag, wait
        // for the catalog lock we hold.
        t.dropped.store(true, SeqCst);
        if !crate::sync::broken(crate::sync::Break::DropDoesNotWait) {
            self.inner.tids.wait_for_deciding();
        }
        crate::sync::logged(crate::sync::Logged::DropTable);
        let logged = match self.inner.log.get() {
            Some(log) => match log.catalog(&CatalogRecord::DropTable { id }) {
                Ok(lsn) => Some((log, lsn)),
                Err(e) => {
                    // The log has failed: the table stays (writes refused
                    // meanwhile were rolled back; the log takes no commit
                    // now anyway).
                    t.dropped.store(false, SeqCst);
                    return Err(e);
                }
            },
            None => None,
        };
        names.remove(name);
        self.inner.indexes.forget_table(id);
        drop((names, t));
        // The slots are scanned after `dropped` was set (SeqCst both): a
        // transaction not among them checks the flag before any access.
        self.inner.gc.retire_table(id, &self.inner.tids);
        let durable = match logged {
            Some((log, lsn)) => log.wait_durable(lsn),
            None => Ok(()),
        };
        self.inner.gc.reclaim_dropped(&*self.inner);
        durable
    }

    /// Begins a read-write transaction (serializable unless the protocol is SI).
    /// On a database opened read-only ([`Database::open_read_only`]) it is
    /// a snapshot, as from [`Database::begin_read_only`], whose writes fail
    /// with [`Error::ReadOnly`].
    #[inline]
    pub fn begin(&self) -> Result<Transaction> {
        if self.inner.read_only.get().is_some() {
            return self.begin_read_only();
        }
        // (A constant `false`: `begin` folds the read-only branches away;
        // passing the flag cost every read-write begin about 90
        // instructions, measured with callgrind.)
        Transaction::begin(Arc::clone(&self.inner), false)
    }

    /// Begins a read-only transaction: it reads a consistent snapshot, does
    /// no concurrency-control bookkeeping and never aborts.
    #[inline]
    pub fn begin_read_only(&self) -> Result<Transaction> {
        Transaction::begin(Arc::clone(&self.inner), true)
    }

    /// A read-only snapshot that threads share (`Send + Sync`, reads by
    /// `&self`): see [`crate::Snapshot`]. It holds a transaction slot
    /// (`Options::max_open_transactions`) until dropped.
    pub fn snapshot(&self) -> Result<crate::Snapshot> {
        self.begin_read_only().map(crate::Snapshot::new)
    }

    /// Runs `f` in a transaction and commits it, retrying on conflicts with
    /// randomised exponential backoff (up to `Options::max_retries` times).
    /// Errors other than conflicts are returned at once (the transaction is
    /// rolled back).
    pub fn run<T>(&self, mut f: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        self.retrying(|| {
            let mut txn = self.begin()?;
            f(&mut txn).and_then(|v| txn.commit().map(|()| v))
        })
    }

    /// [`Database::run`] for a closure that returns the application's own
    /// error type: any `E` a Strata error converts into (`?` on Strata's
    /// calls works inside `f`). A conflict that one of the transaction's
    /// operations met (it rolled the transaction back; see
    /// [`Transaction::is_conflicted`]) or that its commit met runs `f`
    /// again, with backoff, up to `Options::max_retries` times, whatever
    /// `f` made of the error; any other error, the application's or
    /// Strata's, rolls the transaction back and is returned at once.
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, row, key};
    /// #[derive(Debug)]
    /// enum AppError {
    ///     Db(strata::Error),
    ///     InsufficientFunds,
    /// }
    /// impl From<strata::Error> for AppError {
    ///     fn from(e: strata::Error) -> Self {
    ///         AppError::Db(e)
    ///     }
    /// }
    /// let db = Database::open(Options::default()).unwrap();
    /// let t = db
    ///     .create_table(Schema::new("acct").column("id", Type::Int).column("bal", Type::Int).primary_key(&["id"]))
    ///     .unwrap();
    /// db.run(|x| x.insert(&t, row![1i64, 5i64])).unwrap();
    /// let r: Result<(), AppError> = db.try_run(|x| {
    ///     let bal = x.get(&t, &key![1i64])?.expect("account 1")[1].as_int().unwrap();
    ///     if bal < 10 {
    ///         return Err(AppError::InsufficientFunds);
    ///     }
    ///     x.update(&t, &key![1i64], &[("bal", (bal - 10).into())])?;
    ///     Ok(())
    /// });
    /// assert!(matches!(r, Err(AppError::InsufficientFunds)));
    /// ```
    pub fn try_run<T, E: From<Error>>(
        &self,
        mut f: impl FnMut(&mut Transaction) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut attempt = 0u32;
        loop {
            let mut txn = self.begin()?;
            let retry = match f(&mut txn) {
                Ok(v) => match txn.commit() {
                    Ok(()) => return Ok(v),
                    Err(e) if e.is_retryable() => Err(E::from(e)),
                    Err(e) => return Err(e.into()),
                },
                Err(e) if txn.is_conflicted() => Err(e),
                Err(e) => return Err(e),
            };
            if attempt >= self.inner.opts.max_retries {
                return retry;
            }
            attempt += 1;
            self.backoff_after_conflict(attempt);
        }
    }

    /// Waits before retry number `attempt` (1, 2, ...) of a transaction
    /// lost to a conflict, as `Options::backoff` says: what
    /// [`Database::run`] does between attempts, for callers with their own
    /// retry loop (the benchmarks' workers).
    pub fn backoff_after_conflict(&self, attempt: u32) {
        let tids = &self.inner.tids;
        self.inner.contention.wait(attempt, || tids.commits());
    }

    /// The bound of a regulated retry's wait now (`Backoff::Regulated`;
    /// Cicada's hill-climbed `max_backoff`).
    pub fn max_backoff(&self) -> Duration {
        self.inner.contention.max_backoff()
    }

    /// Runs `f` in a read-only transaction (a snapshot that never aborts;
    /// see [`Database::begin_read_only`]) and ends it, returning what `f`
    /// returns. `E` as for [`Database::try_run`].
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, row, key};
    /// # let db = Database::open(Options::default())?;
    /// # let t = db.create_table(Schema::new("kv").column("k", Type::Int).primary_key(&["k"]))?;
    /// # db.run(|x| x.insert(&t, row![1i64]))?;
    /// let n = db.run_read_only(|x| x.scan(&t, ..).map(|rows| rows.len()))?;
    /// assert_eq!(n, 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn run_read_only<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&mut Transaction) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let mut txn = self.begin_read_only()?;
        let v = f(&mut txn)?;
        txn.commit()?;
        Ok(v)
    }

    /// [`Database::run`] with a pipelined commit
    /// ([`Transaction::commit_pipelined`]): retries `f` as `run` does, and
    /// returns its value with the commit's ticket, without waiting for the
    /// log. Acknowledge the result once the ticket's `wait` returns.
    pub fn run_pipelined<T>(
        &self,
        mut f: impl FnMut(&mut Transaction) -> Result<T>,
    ) -> Result<(T, CommitTicket)> {
        self.retrying(|| {
            let mut txn = self.begin()?;
            f(&mut txn).and_then(|v| txn.commit_pipelined().map(|t| (v, t)))
        })
    }

    /// Runs one attempt after another while they fail with a retryable
    /// error, backing off, up to `Options::max_retries` retries.
    fn retrying<T>(&self, mut attempt_once: impl FnMut() -> Result<T>) -> Result<T> {
        let mut attempt = 0u32;
        loop {
            match attempt_once() {
                Err(e) if e.is_retryable() && attempt < self.inner.opts.max_retries => {
                    attempt += 1;
                    self.backoff_after_conflict(attempt);
                }
                r => return r,
            }
        }
    }

    /// Runs `f` with this thread pinned once, so that the transactions it
    /// runs skip their own per-operation pins.
    ///
    /// Every operation reaches shared memory under an epoch pin
    /// (`crossbeam-epoch`), and an outermost pin is a locked instruction: a
    /// ten-operation transaction pins a dozen times, about 5% of a short
    /// in-memory transaction's time. Inside `pinned` the pins nest (a
    /// counter), as in engines that announce their epoch once per
    /// transaction (Silo, ERMIA).
    ///
    /// Keep `f` short and free of waits (no I/O, no locks held by other
    /// threads, no user input): while any thread is pinned, memory that any
    /// thread retires (garbage-collected versions) waits to be freed. The
    /// collectors themselves still run; only the release of the memory they
    /// unlink is held back. A transaction that stays open between calls
    /// should not be wrapped as a whole.
    ///
    /// ```
    /// # use strata::{Database, Options, Schema, Type, row, key};
    /// let db = Database::open(Options::default())?;
    /// let t = db.create_table(Schema::new("t").column("k", Type::Int).primary_key(&["k"]))?;
    /// db.pinned(|| {
    ///     let mut txn = db.begin()?;
    ///     txn.insert(&t, row![1i64])?;
    ///     txn.commit()
    /// })?;
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[inline]
    pub fn pinned<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = crossbeam_epoch::pin();
        f()
    }

    /// The counters of [`Database::stats`] (commits, aborts, GC's work,
    /// bytes the version store allocated and GC freed, index writes),
    /// without its walk over every table and chain: the fields the walk
    /// fills (rows, chains, bytes held, index sizes, memory spaces) stay
    /// 0. O(threads), for sampling while a run goes on (a no-GC run's
    /// chains grow by millions of versions, and one walk took seconds).
    pub fn counters(&self) -> Stats {
        let mut st = Stats::empty();
        self.inner.gc.fill_stats(&mut st);
        self.inner.tids.fill_counts(&mut st);
        st.open_transactions = self.inner.tids.open_count() as u64;
        let memory = &self.inner.gc.common.memory;
        st.memory_limit = memory.limit();
        st.memory_in_use = memory.in_use();
        st
    }

    /// Runs one garbage-collection pass now (it also runs by itself every
    /// `Options::gc_every_commits` commits). Returns versions freed.
    pub fn collect_garbage(&self) -> u64 {
        self.inner.gc.collect(&*self.inner, true).unwrap_or(0)
    }

    /// Counters and a walk over every chain for memory figures. The walk is
    /// O(rows + versions): with GC off, millions of versions take seconds,
    /// so sample during a run with [`Database::counters`] instead.
    pub fn stats(&self) -> Stats {
        let mut st = self.counters();
        st.siread_marks = self.inner.ssi.marks() as u64;
        let guard = crossbeam_epoch::pin();
        for t in self.inner.tables.read().iter() {
            if t.dropped.load(SeqCst) {
                continue;
            }
            st.indirection_bytes += t.rows.capacity_used() * 8;
            st.index_bytes += (t.index.len() * t.index.approx_entry_bytes()) as u64;
            let (entries, bytes) = crate::index::secondary::stats(t);
            for i in t.secondary.load(&guard) {
                st.scan_records += i.scan_log.len() as u64;
                if let Some(p) = &i.mvpbt {
                    st.mvpbt.add(&p.stats());
                }
            }
            st.scan_records += t.scan_log.len() as u64;
            st.secondary_index_entries += entries;
            st.secondary_index_bytes += bytes;
            st.gc_index_steps += t.secondary.gc_steps();
            if let Some(siro) = t.siro.as_deref() {
                st.siro.add(siro);
            }
            t.rows.for_each_head(|_, head| {
                st.rows += 1;
                // Pinned: chain versions are freed only after being unlinked
                // and an epoch passing.
                let (main, store, len) = crate::storage::row_footprint(head);
                st.main_table_bytes += main;
                st.version_store_bytes += store;
                st.version_bytes += main + store;
                st.header_bytes += len * HEADER_BYTES as u64;
                st.live_versions += len;
                st.longest_chain = st.longest_chain.max(len);
                *st.chain_lengths.entry(len).or_insert(0) += 1;
            });
        }
        drop(guard);
        if let Some(sp) = &self.inner.spaces {
            st.memory_spaces = sp.stats();
        }
        st
    }
}

static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

impl DbInner {
    /// Called after each read-write commit; runs GC every few commits.
    #[inline]
    pub fn after_commit(&self) {
        self.gc.after_commit(self);
    }
}

/// What the collector needs from the database: the snapshots, the tables,
/// the clock, and the protocol's say on GC (its `Cc` hooks).
impl gc::Engine for DbInner {
    fn collector(&self) -> &Gc {
        &self.gc
    }

    fn snapshots(&self) -> Snapshots {
        let s = self.tids.snapshots(|| self.clock.load(SeqCst));
        // The protocol may hold the horizon lower (MVTO: below every
        // running writer's timestamp).
        // (Asked with no horizon of its own, so the bound also holds for
        // snapshots not listed: `Snapshots::floor`.)
        let h = with_cc!(self.protocol, P => P::bound_horizon(self, u64::MAX));
        s.bounded(h)
    }

    fn publish_horizon(&self, horizon: u64) {
        self.horizon.store(horizon, SeqCst);
    }

    fn clock(&self) -> u64 {
        self.clock.load(SeqCst)
    }

    fn clock_steps(&self, commits: u64) -> u64 {
        commits.saturating_mul(crate::cc::CLOCK_STEP)
    }

    fn tables(&self) -> RwLockReadGuard<'_, Vec<Arc<TableInner>>> {
        self.tables.read()
    }

    fn tids(&self) -> &crate::tid::TidTable {
        &self.shared.tids
    }

    fn tombstone(&self, id: u32) -> Option<Arc<TableInner>> {
        let mut tables = self.tables.write();
        let t = tables.get_mut(id as usize).filter(|t| !t.tombstone)?;
        debug_assert!(t.dropped.load(SeqCst), "only a dropped table is reclaimed");
        let stand_in = Arc::new(t.tombstone_of());
        Some(std::mem::replace(t, stand_in))
    }

    fn may_remove(&self) -> fn(&Version, u64) -> bool {
        with_cc!(self.protocol, P => P::may_remove)
    }

    fn prune_protocol_state(&self, tables: &[Arc<TableInner>], h: u64, every_shard: bool) {
        with_cc!(self.protocol, P => P::prune(self, tables, h, every_shard));
    }

    fn index_gc_prunes_scans(&self) -> Option<u64> {
        with_cc!(self.protocol, P => P::SCAN_RECORDS).then(|| self.quiescence.quiesced())
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("options", &self.inner.opts)
            .finish()
    }
}

impl crate::log::checkpoint::Source for DbInner {
    fn catalog(&self, reserved: &dyn Fn() -> u64) -> crate::log::checkpoint::Catalog {
        // Not in the middle of an alter (see `txn::alters`).
        let _names = loop {
            let names = self.names.read();
            if !self.alters.any() {
                break names;
            }
            drop(names);
            self.alters.wait_for_all();
        };
        let tables = self.tables.read();
        crate::log::checkpoint::Catalog {
            begin: reserved(),
            tables: tables.iter().map(Arc::clone).collect(),
            dropped: tables.iter().map(|t| t.dropped.load(SeqCst)).collect(),
            indexes: self.indexes.durable_definitions(),
        }
    }

    fn register_snapshot(&self) -> Result<(u64, u64)> {
        let tid = self
            .tids
            .acquire(self.clock.load(SeqCst), false)
            .ok_or(Error::TooManyTransactions(self.tids.capacity()))?;
        std::sync::atomic::fence(SeqCst);
        let ts = self.clock.load(SeqCst);
        self.tids.set_snapshot(tid, ts);
        Ok((tid, ts))
    }

    fn tids(&self) -> &TidTable {
        &self.tids
    }
}

impl crate::index::secondary::IndexCatalog {
    /// `CreateIndex` records of the live, logged indexes, by name (a
    /// checkpoint writes them; the caller holds the catalog lock).
    pub fn durable_definitions(&self) -> Vec<CatalogRecord> {
        let names = self.by_name.read();
        let mut out: Vec<(&String, CatalogRecord)> = names
            .iter()
            .filter(|(_, (idx, t))| idx.defined.load(SeqCst) && !t.dropped.load(SeqCst))
            .map(|(n, (idx, t))| {
                (
                    n,
                    CatalogRecord::CreateIndex {
                        table: t.id,
                        name: n.clone(),
                        columns: idx.column_names.clone(),
                        unique: idx.unique,
                        kind: idx.kind,
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out.into_iter().map(|(_, c)| c).collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::{key, row, Database, Options, Schema, Type};

    /// `pinned` holds one pin over its closure (so inner pins nest) and
    /// none after it; what the closure does works as outside.
    #[test]
    fn pinned_holds_one_pin_over_its_closure() {
        let db = Database::open(Options::default()).unwrap();
        let t = db
            .create_table(Schema::new("t").column("k", Type::Int).primary_key(&["k"]))
            .unwrap();
        assert!(!crossbeam_epoch::is_pinned());
        let got = db.pinned(|| {
            assert!(crossbeam_epoch::is_pinned());
            let mut txn = db.begin().unwrap();
            txn.insert(&t, row![1i64]).unwrap();
            txn.commit().unwrap();
            assert!(crossbeam_epoch::is_pinned());
            db.begin().unwrap().get(&t, &key![1i64]).unwrap()
        });
        assert_eq!(got, Some(row![1i64]));
        assert!(!crossbeam_epoch::is_pinned());
    }
}
