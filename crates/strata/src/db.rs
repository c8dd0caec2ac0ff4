//! The database: options, catalog, clock and transaction table.

use crate::cc::{predicate, ssi};
use crate::error::{Error, Result};
use crate::gc::vacuum::{self, Partition};
use crate::gc::{GcQueue, Limbo};
use crate::log::record::CatalogRecord;
use crate::log::{LogStats, RecoveryReport};
use crate::options::{Durability, GcPolicy, MemorySpaces, Options, Protocol};
use crate::stats::{Counters, Stats};
use crate::storage::version::{Version, HEADER_BYTES};
use crate::table::{Coop, Table, TableInner};
use crate::txn::tid::TidTable;
use crate::txn::Transaction;
use crate::value::Schema;
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub(crate) struct DbInner {
    /// Unique per database, so a table handle from another one is refused.
    pub id: u64,
    pub opts: Options,
    pub protocol: Protocol,
    /// Test-only: MVOCC and MV2PL skip re-validating predicate reads at
    /// commit (see [`Database::skip_phantom_validation_for_testing`]).
    /// Read once per commit, written only by tests, so it shares the
    /// read-mostly line without cost.
    pub skip_phantom_validation: AtomicBool,
    /// The global timestamp counter: snapshots read it, commits bump it.
    pub clock: CachePadded<AtomicU64>,
    pub tids: TidTable,
    /// Tables by id. Dropped tables stay here (marked) so that transactions
    /// still holding pointers into them stay valid; they are freed with the
    /// database.
    pub tables: RwLock<Vec<Arc<TableInner>>>,
    pub names: RwLock<HashMap<String, u32>>,
    pub gc: GcQueue,
    /// Last garbage-collection horizon computed (a safe lower bound for new
    /// MVTO read-only snapshots while they register).
    pub horizon: AtomicU64,
    /// GC's counters, written by every pass: on their own cache lines, so
    /// they do not invalidate the read-mostly fields around them (sharing a
    /// line with them cost 20% of a 16-thread update mix).
    pub counters: CachePadded<Counters>,
    /// SSI: SIREAD marks and writer states.
    pub ssi: ssi::Registry,
    /// The write-ahead log; empty for an in-memory database (and while
    /// recovery replays, so replay logs nothing).
    pub log: OnceLock<crate::log::Log>,
    /// Secondary indexes by name.
    pub indexes: crate::index::secondary::IndexCatalog,
    /// Cooperative cleaning's shared horizon (GcPolicy::Cooperative only).
    pub coop: Option<Arc<Coop>>,
    /// Tuple-level GC: one lock per GC-thread partition of the blocks, so
    /// no two passes prune the same row.
    pub vacuum_parts: Vec<Mutex<()>>,
    /// Memory spaces versions are allocated from (`Options::memory_spaces`);
    /// every table holds a clone.
    pub spaces: Option<Arc<crate::storage::space::SpaceSet>>,
}

/// An in-memory MVCC database. Cheap to clone; all clones share one engine.
#[derive(Clone)]
pub struct Database {
    pub(crate) inner: Arc<DbInner>,
}

impl Database {
    /// Opens an empty in-memory database, refusing invalid options.
    pub fn open(opts: Options) -> Result<Database> {
        opts.validate()?;
        let gc = GcQueue::default();
        let coop = (opts.gc == GcPolicy::Cooperative).then(|| {
            Arc::new(Coop {
                horizon: AtomicU64::new(0),
                reclaimed: AtomicU64::new(0),
                passes: Arc::clone(&gc.tuple_passes),
            })
        });
        let vacuum_parts = (0..opts.gc_threads.max(1))
            .map(|_| Mutex::new(()))
            .collect();
        let spaces = match opts.memory_spaces {
            MemorySpaces::System => None,
            MemorySpaces::Spaces { count, increment } => Some(Arc::new(
                crate::storage::space::SpaceSet::new(count, increment),
            )),
        };
        let db = Database {
            inner: Arc::new(DbInner {
                id: NEXT_DB_ID.fetch_add(1, SeqCst),
                protocol: opts.protocol,
                skip_phantom_validation: AtomicBool::new(false),
                tids: TidTable::new(opts.max_open_transactions),
                opts,
                clock: CachePadded::new(AtomicU64::new(1)),
                tables: RwLock::new(Vec::new()),
                names: RwLock::new(HashMap::new()),
                gc,
                horizon: AtomicU64::new(0),
                counters: CachePadded::new(Counters::default()),
                ssi: ssi::Registry::new(),
                log: OnceLock::new(),
                indexes: Default::default(),
                coop,
                vacuum_parts,
                spaces,
            }),
        };
        match (db.inner.opts.gc, db.inner.opts.gc_interval) {
            (GcPolicy::TransactionLevel | GcPolicy::Cooperative, Some(every)) => {
                spawn_gc_thread(Arc::downgrade(&db.inner), every, None)?;
            }
            (GcPolicy::Vacuum, Some(every)) => {
                for i in 0..db.inner.vacuum_parts.len() {
                    spawn_gc_thread(Arc::downgrade(&db.inner), every, Some(i))?;
                }
            }
            _ => {}
        }
        if let Durability::Wal { dir, .. } = &db.inner.opts.durability {
            crate::log::recovery::open(&db, &dir.clone())?;
        }
        Ok(db)
    }

    /// What recovery found when this database was opened from a directory
    /// (`None` for an in-memory database).
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        self.inner.log.get().map(|l| l.report().clone())
    }

    /// Why the database refuses writes, if it does: a log write or fsync
    /// failed (a full disk). Reads keep working.
    pub fn read_only_reason(&self) -> Option<String> {
        self.inner.log.get().and_then(|l| l.read_only_reason())
    }

    /// Log counters (`None` for an in-memory database).
    pub fn log_stats(&self) -> Option<LogStats> {
        self.inner.log.get().map(|l| l.stats())
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
        match self.inner.log.get() {
            Some(l) => l.checkpoint(&self.inner, false).map(|s| s.rows),
            None => Err(Error::InvalidConfig(
                "checkpoint needs Durability::Wal; this database is in memory".into(),
            )),
        }
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// **Breaks serializability; for tests only.** From now on MVOCC and
    /// MV2PL commit without re-validating range scans and reads of absent
    /// keys (`cc::predicate::validate_scans`), so phantoms get through. The
    /// history checker's tests use it to show that the predicate workload
    /// catches a protocol with its phantom check missing.
    #[doc(hidden)]
    pub fn skip_phantom_validation_for_testing(&self) {
        self.inner
            .skip_phantom_validation
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Creates a table; fails on a duplicate name or an invalid schema.
    pub fn create_table(&self, schema: Schema) -> Result<Table> {
        let schema = schema.validate()?;
        let mut names = self.inner.names.write();
        if names.contains_key(&schema.name) {
            return Err(Error::Schema(format!(
                "table {} already exists",
                schema.name
            )));
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
        let t = Arc::new(
            TableInner::new(id, self.inner.id, schema)
                .with_storage(self.inner.opts.version_storage, self.inner.opts.non_inline)
                .with_coop(self.inner.coop.clone())
                .with_spaces(self.inner.spaces.clone()),
        );
        tables.push(Arc::clone(&t));
        names.insert(name, id);
        drop((tables, names));
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(Table { inner: t })
    }

    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Result<Table> {
        let names = self.inner.names.read();
        let id = *names
            .get(name)
            .ok_or_else(|| Error::Schema(format!("no table named {name}")))?;
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
    /// `Error::Schema`; its memory is released when the database is dropped.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let mut names = self.inner.names.write();
        let id = *names
            .get(name)
            .ok_or_else(|| Error::Schema(format!("no table named {name}")))?;
        let logged = match self.inner.log.get() {
            Some(log) => Some((log, log.catalog(&CatalogRecord::DropTable { id })?)),
            None => None,
        };
        names.remove(name);
        self.inner.tables.read()[id as usize]
            .dropped
            .store(true, SeqCst);
        self.inner.indexes.forget_table(id);
        drop(names);
        if let Some((log, lsn)) = logged {
            log.wait_durable(lsn)?;
        }
        Ok(())
    }

    /// Begins a read-write transaction (serializable unless the protocol is SI).
    #[inline]
    pub fn begin(&self) -> Result<Transaction> {
        Transaction::begin(Arc::clone(&self.inner), false)
    }

    /// Begins a read-only transaction: it reads a consistent snapshot, does
    /// no concurrency-control bookkeeping and never aborts.
    #[inline]
    pub fn begin_read_only(&self) -> Result<Transaction> {
        Transaction::begin(Arc::clone(&self.inner), true)
    }

    /// Runs `f` in a transaction and commits it, retrying on conflicts with
    /// randomised exponential backoff (up to `Options::max_retries` times).
    /// Errors other than conflicts are returned at once (the transaction is
    /// rolled back).
    pub fn run<T>(&self, mut f: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        let mut attempt = 0u32;
        loop {
            let mut txn = self.begin()?;
            let r = f(&mut txn).and_then(|v| txn.commit().map(|()| v));
            match r {
                Err(e) if e.is_retryable() && attempt < self.inner.opts.max_retries => {
                    attempt += 1;
                    backoff(attempt);
                }
                r => return r,
            }
        }
    }

    /// Runs one garbage-collection pass now (it also runs by itself every
    /// `Options::gc_every_commits` commits). Returns versions freed.
    pub fn collect_garbage(&self) -> u64 {
        self.inner.collect_garbage(true).unwrap_or(0)
    }

    /// Counters and a walk over every chain for memory figures. The walk is
    /// O(rows); call it between runs, not in a hot loop.
    pub fn stats(&self) -> Stats {
        let mut st = Stats::empty();
        self.inner.counters.fill(&mut st);
        self.inner.tids.fill_counts(&mut st);
        st.open_transactions = self.inner.tids.open_count() as u64;
        let guard = crossbeam_epoch::pin();
        for t in self.inner.tables.read().iter() {
            if t.dropped.load(SeqCst) {
                continue;
            }
            st.indirection_bytes += t.rows.capacity_used() * 8;
            st.index_bytes += (t.index.len() * t.index.approx_entry_bytes()) as u64;
            let (entries, bytes) = crate::index::secondary::stats(t);
            st.secondary_index_entries += entries;
            st.secondary_index_bytes += bytes;
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
            });
        }
        drop(guard);
        if let Some(c) = &self.inner.coop {
            st.versions_reclaimed += c.reclaimed.load(SeqCst);
        }
        if let Some(sp) = &self.inner.spaces {
            st.memory_spaces = sp.stats();
        }
        st
    }
}

/// A GC thread: a pass every `every`, until the database is gone. It holds
/// only a weak reference, so it never keeps a database alive. `part`: the
/// vacuum partition this thread owns (GcPolicy::Vacuum), else a whole pass
/// (transaction-level epochs; COOP's dusty-corner pass).
fn spawn_gc_thread(
    db: std::sync::Weak<DbInner>,
    every: Duration,
    part: Option<usize>,
) -> Result<()> {
    std::thread::Builder::new()
        .name("strata-gc".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            match db.upgrade() {
                Some(db) => match part {
                    Some(i) => {
                        db.vacuum(Some(i), true);
                    }
                    None => {
                        db.collect_garbage(false);
                    }
                },
                None => return,
            }
        })
        .map(drop)
        .map_err(|e| Error::Io(format!("cannot start the GC thread: {e}")))
}

/// Waits before retry number `attempt` (1, 2, ...) of a transaction lost
/// to a conflict: a random time below 2^attempt microseconds (capped at
/// about 1 ms), yielding the CPU for the shortest waits. [`Database::run`]
/// uses it; callers with their own retry loop can too.
pub fn backoff(attempt: u32) {
    // Randomised so that two transactions that keep colliding drift apart.
    let cap_us = 1u64 << attempt.min(10);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(7);
    let us = seed % cap_us;
    if us < 2 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(us));
    }
}

static NEXT_DB_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static COMMITS_SINCE_GC: Cell<u32> = const { Cell::new(0) };
}

impl DbInner {
    /// The garbage-collection horizon: no open transaction can see a version
    /// that a committed version at or below this timestamp overwrote.
    pub fn compute_horizon(&self) -> u64 {
        let g = self.clock.load(SeqCst);
        fence(SeqCst);
        let mut h = g.min(self.tids.min_begin(false));
        if self.protocol == Protocol::Mvto {
            // An MVTO writer with timestamp t may still commit versions at t,
            // so snapshots (and the horizon) must stay below it.
            h = h.min(self.tids.min_begin(true).saturating_sub(1));
        }
        h
    }

    /// One GC pass; with `wait`, waits for a pass already running instead of
    /// skipping (the explicit `Database::collect_garbage` waits).
    pub fn collect_garbage(&self, wait: bool) -> Option<u64> {
        match self.opts.gc {
            GcPolicy::None => Some(0),
            GcPolicy::TransactionLevel => self.collect_transaction_level(wait),
            // Every partition (waiting for, or skipping, busy ones); COOP
            // has one partition and always scans it fully.
            GcPolicy::Vacuum | GcPolicy::Cooperative => Some(self.vacuum(None, wait)),
        }
    }

    /// Whether GC may unlink the row whose newest version, a tombstone, is
    /// visible at the horizon.
    fn may_remove(&self) -> impl Fn(&Version, u64) -> bool {
        let protocol = self.protocol;
        move |tomb: &Version, horizon: u64| match protocol {
            // Readers left their timestamp on the tombstone: it guards the
            // key against older inserters until they are all gone.
            Protocol::Mvto => tomb.word_a.load(SeqCst) <= horizon,
            // Read-locked tombstones stay until the lock is released.
            Protocol::Mv2pl => tomb.word_a.load(SeqCst) == 0,
            _ => true,
        }
    }

    /// Computes the horizon and publishes it (MVTO read-only snapshots and
    /// cooperating workers read the published value).
    fn refresh_horizon(&self) -> u64 {
        let h = self.compute_horizon();
        self.horizon.store(h, SeqCst);
        if let Some(c) = &self.coop {
            c.horizon.fetch_max(h, SeqCst);
        }
        h
    }

    /// Tuple-level GC pass (VAC, or COOP's full pass): partition `part` or
    /// all of them. Returns versions freed.
    pub fn vacuum(&self, part: Option<usize>, wait: bool) -> u64 {
        let h = self.refresh_horizon();
        let may_remove = self.may_remove();
        let tables: Vec<Arc<TableInner>> = self.tables.read().clone();
        let count = self.vacuum_parts.len();
        let full = self.opts.gc == GcPolicy::Cooperative;
        let parts = match part {
            Some(i) => i..i + 1,
            None => 0..count,
        };
        let mut freed = 0;
        let mut scanned = 0;
        let mut skipped = 0;
        let _passes = if wait {
            self.gc.tuple_passes.read()
        } else {
            match self.gc.tuple_passes.try_read() {
                Some(l) => l,
                None => return 0,
            }
        };
        for i in parts {
            let _lock = if wait {
                self.vacuum_parts[i].lock()
            } else {
                match self.vacuum_parts[i].try_lock() {
                    Some(l) => l,
                    None => continue,
                }
            };
            let p = Partition {
                index: i as u64,
                count: count as u64,
                full,
            };
            let seq = self.gc.next_seq();
            for t in &tables {
                if t.dropped.load(SeqCst) {
                    continue;
                }
                let mut unlinked = Vec::new();
                let r = vacuum::vacuum_table(t, p, h, &may_remove, &mut unlinked);
                freed += r.freed;
                scanned += r.blocks_scanned;
                skipped += r.blocks_skipped;
                let limbo = unlinked
                    .into_iter()
                    .map(|(tuple, head)| Limbo {
                        unlinked_at: 0,
                        seq,
                        head,
                        table: t.id,
                        tuple,
                    })
                    .collect();
                let guard = crossbeam_epoch::pin();
                freed += self.gc.retire_unlinked(
                    limbo,
                    seq,
                    h,
                    &|| self.clock.load(SeqCst),
                    &|id| tables.get(id as usize).cloned(),
                    &guard,
                );
            }
        }
        drop(_passes);
        self.prune_protocol_state(h);
        // Secondary-index entries whose rows were locked during the cut:
        // retried as transaction-level GC does.
        self.retry_stale_entries(&tables, h, wait);
        self.counters.gc_passes.fetch_add(1, SeqCst);
        self.counters.versions_reclaimed.fetch_add(freed, SeqCst);
        self.counters.blocks_scanned.fetch_add(scanned, SeqCst);
        self.counters.blocks_skipped.fetch_add(skipped, SeqCst);
        freed
    }

    /// Scan records and SSI marks below the horizon.
    /// Retries the secondary-index entries GC could not remove because
    /// their rows were locked. They lock rows like a GC pass does, so they
    /// run exclusively with every other pass (waiting for one with `wait`,
    /// else skipped while one runs).
    fn retry_stale_entries(&self, tables: &[Arc<TableInner>], h: u64, wait: bool) {
        let prune = matches!(self.protocol, Protocol::SiSsn | Protocol::SiSsi);
        let secondary = || {
            for t in tables {
                crate::index::secondary::after_gc_pass(t, h, prune);
            }
        };
        if wait {
            self.gc.paused(secondary);
        } else {
            self.gc.try_exclusive(secondary);
        }
    }

    fn prune_protocol_state(&self, h: u64) {
        let tables = self.tables.read();
        match self.protocol {
            Protocol::SiSsn => tables.iter().for_each(|t| predicate::prune(t, h)),
            Protocol::SiSsi => {
                tables.iter().for_each(|t| predicate::prune(t, h));
                self.ssi.prune(h);
            }
            _ => {}
        }
    }

    fn collect_transaction_level(&self, wait: bool) -> Option<u64> {
        let h = self.refresh_horizon();
        let tables = self.tables.read();
        let may_remove = self.may_remove();
        let freed = self.gc.collect(
            h,
            || self.clock.load(SeqCst),
            |id| tables.get(id as usize).cloned(),
            &may_remove,
            wait,
        )?;
        match self.protocol {
            Protocol::SiSsn => tables.iter().for_each(|t| predicate::prune(t, h)),
            Protocol::SiSsi => {
                tables.iter().for_each(|t| predicate::prune(t, h));
                self.ssi.prune(h);
            }
            _ => {}
        }
        self.retry_stale_entries(&tables, h, wait);
        drop(tables);
        self.counters.gc_passes.fetch_add(1, SeqCst);
        self.counters.versions_reclaimed.fetch_add(freed, SeqCst);
        Some(freed)
    }

    /// The transaction-level GC queue, when that is the policy that reads
    /// it (tuple-level GC finds its garbage itself).
    pub fn queue(&self) -> Option<&GcQueue> {
        matches!(self.opts.gc, GcPolicy::TransactionLevel | GcPolicy::None).then_some(&self.gc)
    }

    /// Called after each read-write commit; runs GC every few commits.
    pub fn after_commit(&self) {
        let due = COMMITS_SINCE_GC.with(|c| {
            let n = c.get() + 1;
            if n >= self.opts.gc_every_commits {
                c.set(0);
                true
            } else {
                c.set(n);
                false
            }
        });
        if due {
            match (self.opts.gc, self.opts.gc_interval) {
                // Tuple-level GC runs in its own threads; committers only
                // keep the horizon (COOP's) and the protocols' state fresh.
                (GcPolicy::Cooperative, _) | (GcPolicy::Vacuum, Some(_)) => {
                    let h = self.refresh_horizon();
                    self.prune_protocol_state(h);
                }
                _ => {
                    self.collect_garbage(false);
                }
            }
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("options", &self.inner.opts)
            .finish()
    }
}
